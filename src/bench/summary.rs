//! Benchmark frames and summaries with polars, from the store's columns: per evaluation, per
//! model, per prompt, latency. Nothing here reads SQL or prints: `track query`, the export, the
//! console and the report section all read these frames.

use super::columns as c;
use std::collections::HashMap;

use polars::prelude::*;

use crate::analysis::stats::{Z_95, wilson_interval};
use crate::store::{BenchColumns, Labels, MeasureRow, NO_TEMPLATE, Store};
#[cfg(test)]
use crate::store::{BenchResultRow, Outcome};

/// The tables of a benchmark report.
#[derive(Debug, Clone)]
pub struct BenchFrames {
    pub results: DataFrame,
    pub by_model: DataFrame,
    pub by_prompt: DataFrame,
    /// Per template and model ([`template_summary`]), when the results come from several
    /// templates.
    pub by_template: Option<DataFrame>,
}

impl BenchFrames {
    /// Builds them from loaded columns (loaded with detail).
    pub(crate) fn from_columns(cols: BenchColumns) -> PolarsResult<Self> {
        let measures = Measures::from_columns(&cols)?;
        Self::of_measures(&measures, results_frame(cols)?)
    }

    /// The summaries of `run_ids` read as numbers ([`Measures::load`], as `track query` does),
    /// without the results' frame (left empty): a run's report without its detail table. A
    /// cached run of 400,000 results read their names back too, 0.9 s of its 1.4 s of report.
    pub(crate) fn summaries(store: &Store, run_ids: &[i64]) -> Result<Self, super::BenchError> {
        let measures = Measures::load(store, run_ids)?;
        Ok(Self::of_measures(&measures, DataFrame::empty())?)
    }

    fn of_measures(measures: &Measures, results: DataFrame) -> PolarsResult<Self> {
        Ok(Self {
            by_model: model_summary(measures)?,
            by_prompt: prompt_summary(measures)?,
            by_template: measures
                .labels
                .several_templates()
                .then(|| template_summary(measures))
                .transpose()?,
            results,
        })
    }
}

/// The template x model table of a [`template_summary`]: a row per template, a column per
/// model (in the summary's order), each cell the pass rate with its Wilson 95 % interval,
/// `75.0 % (30.1–95.4)`; `–` where the pair has no passed or failed result.
pub(crate) fn template_matrix(by_template: &DataFrame) -> PolarsResult<DataFrame> {
    let texts = |name: &str| -> PolarsResult<Vec<Option<String>>> {
        Ok(by_template
            .column(name)?
            .str()?
            .iter()
            .map(|v| v.map(str::to_owned))
            .collect())
    };
    let floats = |name: &str| -> PolarsResult<Vec<Option<f64>>> {
        Ok(by_template.column(name)?.f64()?.iter().collect())
    };
    let (templates, models) = (texts(c::TEMPLATE)?, texts(c::MODEL)?);
    let (pct, low, high) = (
        floats(c::SUCCESS_PCT)?,
        floats(c::SUCCESS_LOW_PCT)?,
        floats(c::SUCCESS_HIGH_PCT)?,
    );
    let mut row_names: Vec<Option<String>> = Vec::new();
    let mut column_names: Vec<String> = Vec::new();
    for (template, model) in templates.iter().zip(&models) {
        if !row_names.contains(template) {
            row_names.push(template.clone());
        }
        let model = model.clone().unwrap_or_default();
        if !column_names.contains(&model) {
            column_names.push(model);
        }
    }
    let mut cells = vec![vec!["–".to_owned(); row_names.len()]; column_names.len()];
    for i in 0..templates.len() {
        let row = row_names.iter().position(|t| *t == templates[i]);
        let model = models[i].clone().unwrap_or_default();
        let column = column_names.iter().position(|m| *m == model);
        if let (Some(row), Some(column), Some(pct)) = (row, column, pct[i]) {
            cells[column][row] = match (low[i], high[i]) {
                (Some(low), Some(high)) => format!("{pct:.1} % ({low:.1}–{high:.1})"),
                _ => format!("{pct:.1} %"),
            };
        }
    }
    let mut columns = vec![Column::new(c::TEMPLATE.into(), row_names)];
    for (name, cells) in column_names.iter().zip(cells) {
        columns.push(Column::new(name.as_str().into(), cells));
    }
    DataFrame::new_infer_height(columns)
}

/// One row per evaluation. Detail columns are present only when they were loaded.
pub(crate) fn results_frame(cols: BenchColumns) -> PolarsResult<DataFrame> {
    let with_detail = cols.method.len() == cols.len();
    let status: Vec<&str> = cols.outcome.iter().map(|o| o.as_str()).collect();
    let passed: Vec<Option<bool>> = cols.outcome.iter().map(|o| o.passed()).collect();
    // Columns built by hand may lack templates and scores: none.
    let (template, score) = if cols.template.len() == cols.len() {
        (cols.template, cols.score)
    } else {
        (vec![None; cols.len()], vec![None; cols.len()])
    };
    let mut columns = vec![
        Column::new(c::RUN_ID.into(), cols.run_id),
        Column::new(c::MODEL.into(), cols.model_ref),
        Column::new(c::TEMPLATE.into(), template),
        Column::new(c::PROMPT.into(), cols.prompt_name),
        Column::new(c::REPEAT.into(), cols.repeat_index),
        Column::new(c::STATUS.into(), status),
        Column::new(c::PASSED.into(), passed),
        Column::new(c::SCORE.into(), score),
        Column::new(c::LATENCY_MS.into(), cols.latency_ms),
        Column::new(c::INPUT_TOKENS.into(), cols.input_tokens),
        Column::new(c::OUTPUT_TOKENS.into(), cols.output_tokens),
        Column::new(c::COST_USD.into(), cols.cost_usd),
        Column::new(c::PAID_USD.into(), cols.paid_usd),
        Column::new(c::ENERGY_WH.into(), cols.energy_wh),
        Column::new(c::ENERGY_WH_MIN.into(), cols.energy_wh_min),
        Column::new(c::ENERGY_WH_MAX.into(), cols.energy_wh_max),
        Column::new(c::CACHE_HIT.into(), cols.cache_hit),
    ];
    if with_detail {
        columns.extend([
            Column::new(c::PROVIDER.into(), cols.provider),
            Column::new(c::MODEL_ID.into(), cols.model_id),
            Column::new(c::METHOD.into(), cols.method),
            Column::new(c::TOKENS_ESTIMATED.into(), cols.tokens_estimated),
            Column::new(c::ENERGY_METHOD.into(), cols.energy_method),
            Column::new(c::JUDGE_SCORE.into(), cols.judge_score),
            Column::new(c::JUDGE_COST_USD.into(), cols.judge_cost_usd),
            Column::new(c::DETAIL.into(), cols.detail),
        ]);
    }
    DataFrame::new_infer_height(columns)
}

/// The numbers of benchmark results with models, prompts and templates as `u32` keys into
/// `labels`: what the summaries read. Built straight from the database without per-row strings.
#[derive(Debug, Clone)]
pub struct Measures {
    /// Slices of the rows; no (model, template, prompt) triple spans two slices.
    pub parts: Vec<DataFrame>,
    pub labels: Labels,
}

/// Column builders for [`Measures`].
struct MeasureBuilders {
    model: Vec<u32>,
    prompt: Vec<u32>,
    /// `None` when no run has templates: a million results without them hold no column of
    /// [`NO_TEMPLATE`]s (4 MB, and more in the frames made of it).
    template: Option<Vec<u32>>,
    passed: BooleanChunkedBuilder,
    cache_hit: Vec<bool>,
    floats: [PrimitiveChunkedBuilder<Float64Type>; 6],
    tokens: [PrimitiveChunkedBuilder<Int64Type>; 2],
}

const FLOAT_COLUMNS: [&str; 6] = [
    c::LATENCY_MS,
    c::COST_USD,
    c::PAID_USD,
    c::ENERGY_WH,
    c::ENERGY_WH_MIN,
    c::ENERGY_WH_MAX,
];

impl MeasureBuilders {
    fn new(capacity: usize, with_templates: bool) -> Self {
        Self {
            model: Vec::with_capacity(capacity),
            prompt: Vec::with_capacity(capacity),
            template: with_templates.then(|| Vec::with_capacity(capacity)),
            passed: BooleanChunkedBuilder::new(c::PASSED.into(), capacity),
            cache_hit: Vec::with_capacity(capacity),
            floats: FLOAT_COLUMNS.map(|n| PrimitiveChunkedBuilder::new(n.into(), capacity)),
            tokens: [c::INPUT_TOKENS, c::OUTPUT_TOKENS]
                .map(|n| PrimitiveChunkedBuilder::new(n.into(), capacity)),
        }
    }

    fn push(&mut self, r: &MeasureRow) {
        self.model.push(r.model);
        self.prompt.push(r.prompt);
        if let Some(template) = &mut self.template {
            template.push(r.template);
        }
        self.passed.append_option(r.outcome.passed());
        self.cache_hit.push(r.cache_hit);
        let floats = [
            r.latency_ms,
            r.cost_usd,
            r.paid_usd,
            r.energy_wh,
            r.energy_wh_min,
            r.energy_wh_max,
        ];
        for (builder, value) in self.floats.iter_mut().zip(floats) {
            builder.append_option(value);
        }
        self.tokens[0].append_option(r.input_tokens);
        self.tokens[1].append_option(r.output_tokens);
    }

    fn finish(self) -> PolarsResult<DataFrame> {
        let [latency, cost, paid, energy, energy_min, energy_max] = self.floats;
        let [input, output] = self.tokens;
        let height = self.model.len();
        DataFrame::new_infer_height(vec![
            Column::new(c::MODEL.into(), self.model),
            Column::new(c::PROMPT.into(), self.prompt),
            match self.template {
                Some(template) => Column::new(c::TEMPLATE.into(), template),
                None => Column::new_scalar(
                    c::TEMPLATE.into(),
                    Scalar::new(DataType::UInt32, NO_TEMPLATE.into()),
                    height,
                ),
            },
            self.passed.finish().into_column(),
            Column::new(c::CACHE_HIT.into(), self.cache_hit),
            latency.finish().into_column(),
            input.finish().into_column(),
            output.finish().into_column(),
            cost.finish().into_column(),
            paid.finish().into_column(),
            energy.finish().into_column(),
            energy_min.finish().into_column(),
            energy_max.finish().into_column(),
        ])
    }
}

impl Measures {
    /// Reads the measures of `run_ids` from the store, in as many slices as there are cores.
    pub(crate) fn load(store: &Store, run_ids: &[i64]) -> Result<Self, super::BenchError> {
        let with_templates = store.bench_has_templates(run_ids)?;
        let (labels, parts) = store.scan_bench_measures(
            run_ids,
            scan_threads(),
            |rows| MeasureBuilders::new(rows, with_templates),
            |b, row| b.push(row),
        )?;
        let parts = parts
            .into_iter()
            .map(MeasureBuilders::finish)
            .collect::<PolarsResult<Vec<_>>>()?;
        Ok(Self { parts, labels })
    }

    /// The measures of loaded columns (the detail path), keyed the same way.
    pub(crate) fn from_columns<'c>(cols: &'c BenchColumns) -> PolarsResult<Self> {
        let mut labels = Labels::default();
        let mut keys: [HashMap<String, u32>; 3] = Default::default();
        // Each kind's last name and key: rows come model by model and template by template,
        // so most rows name the model and template of the row before.
        let mut last: [Option<(&str, u32)>; 3] = [None; 3];
        let mut key = |kind: usize, name: &'c str, labels: &mut Labels| -> u32 {
            if let Some((same, k)) = last[kind]
                && same == name
            {
                return k;
            }
            let names = match kind {
                0 => &mut labels.models,
                1 => &mut labels.prompts,
                _ => &mut labels.templates,
            };
            let k = match keys[kind].get(name) {
                Some(&k) => k,
                None => *keys[kind].entry(name.to_owned()).or_insert_with(|| {
                    names.push(name.to_owned());
                    (names.len() - 1) as u32
                }),
            };
            last[kind] = Some((name, k));
            k
        };
        let with_templates = cols.template.iter().any(Option::is_some);
        let mut builders = MeasureBuilders::new(cols.len(), with_templates);
        for i in 0..cols.len() {
            let template = match cols.template.get(i).and_then(Option::as_deref) {
                Some(name) => key(2, name, &mut labels),
                None => {
                    labels.untemplated = true;
                    NO_TEMPLATE
                }
            };
            let row = MeasureRow {
                model: key(0, &cols.model_ref[i], &mut labels),
                prompt: key(1, &cols.prompt_name[i], &mut labels),
                template,
                outcome: cols.outcome[i],
                cache_hit: cols.cache_hit[i],
                latency_ms: cols.latency_ms[i],
                input_tokens: cols.input_tokens[i].map(|n| n as i64),
                output_tokens: cols.output_tokens[i].map(|n| n as i64),
                cost_usd: cols.cost_usd[i],
                paid_usd: cols.paid_usd[i],
                energy_wh: cols.energy_wh[i],
                energy_wh_min: cols.energy_wh_min[i],
                energy_wh_max: cols.energy_wh_max[i],
            };
            builders.push(&row);
        }
        Ok(Self {
            parts: vec![builders.finish()?],
            labels,
        })
    }
}

/// The threads of a scan of the store: one per core, 8 at most.
fn scan_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
}

/// Replaces the `u32` keys of `column` with their names.
fn named(mut df: DataFrame, column: &str, names: &[String]) -> PolarsResult<DataFrame> {
    let keys = df.column(column)?.u32()?.clone();
    let labels: Vec<Option<&str>> = keys
        .iter()
        .map(|k| k.and_then(|k| names.get(k as usize)).map(String::as_str))
        .collect();
    df.with_column(Column::new(column.into(), labels))?;
    Ok(df)
}

/// Inserts columns `low` and `high`, the Wilson 95 % interval of the share `passed` of
/// `decided` (in percent), right after column `after`.
fn insert_wilson(
    df: &mut DataFrame,
    after: &str,
    (low_name, high_name): (&str, &str),
    passed: &str,
    decided: &str,
) -> PolarsResult<()> {
    let passed = df.column(passed)?.cast(&DataType::UInt64)?;
    let decided = df.column(decided)?.cast(&DataType::UInt64)?;
    let (low, high): (Vec<Option<f64>>, Vec<Option<f64>>) = passed
        .u64()?
        .iter()
        .zip(decided.u64()?.iter())
        .map(|(k, n)| {
            let interval = wilson_interval(k.unwrap_or(0), n.unwrap_or(0), Z_95);
            (
                interval.map(|(l, _)| l * 100.0),
                interval.map(|(_, h)| h * 100.0),
            )
        })
        .unzip();
    let at = df.get_column_index(after).map_or(df.width(), |i| i + 1);
    df.insert_column(at, Column::new(high_name.into(), high))?;
    df.insert_column(at, Column::new(low_name.into(), low))?;
    Ok(())
}

/// Whether a result has an answer but no energy estimate: its model had no parameter count.
/// (An error has neither: no call, no energy, and nothing unknown.)
fn energy_unknown() -> Expr {
    col(c::OUTPUT_TOKENS)
        .is_not_null()
        .and(col(c::ENERGY_WH).is_null())
}

/// Whether a result has an answer but no cost: its model had no price. As energy, its cost
/// is unknown, and so is any sum or mean over it.
fn cost_unknown() -> Expr {
    col(c::OUTPUT_TOKENS)
        .is_not_null()
        .and(col(c::COST_USD).is_null())
}

/// Whether a result has an answer but no paid amount: a fresh answer of unknown cost (a cached
/// one paid nothing).
fn paid_unknown() -> Expr {
    col(c::OUTPUT_TOKENS)
        .is_not_null()
        .and(col(c::PAID_USD).is_null())
}

/// `value`, or null when any result of the group has unknown energy: a sum or mean that left
/// those results out would look complete and be too low. (The same for cost.)
fn unless_unknown(unknown: Expr, value: Expr) -> Expr {
    when(unknown)
        .then(lit(NULL).cast(DataType::Float64))
        .otherwise(value)
}

/// Share of passed among passed and failed (errors excluded), in percent; null when none.
fn success_pct() -> Expr {
    col(c::PASSED).cast(DataType::Float64).mean() * lit(100.0)
}

/// Per model, in the order models were run: counts, % success, total time, cost, paid,
/// tokens and energy (null, unknown, for a model with an answer of unknown energy). Each slice
/// is summed on its own, then the sums are summed: the rows are never copied into one frame.
/// Results of every template are pooled.
pub(crate) fn model_summary(measures: &Measures) -> PolarsResult<DataFrame> {
    summary_by(measures, &[c::MODEL])
}

/// Per template and model (`track query --by template`), templates in label order then models
/// in the order they were run: the columns of [`model_summary`] for each pair. A benchmark
/// without templates has one row per model, its template null.
pub(crate) fn template_summary(measures: &Measures) -> PolarsResult<DataFrame> {
    summary_by(measures, &[c::TEMPLATE, c::MODEL])
}

/// [`model_summary`] grouped by the key columns `keys` (of [`c::MODEL`] and [`c::TEMPLATE`]).
fn summary_by(measures: &Measures, keys: &[&str]) -> PolarsResult<DataFrame> {
    let partials: Vec<LazyFrame> = measures
        .parts
        .iter()
        .map(|part| model_slice_sums(part, keys))
        .collect();
    if partials.is_empty() {
        return Ok(DataFrame::empty());
    }
    let mut df = model_totals(partials, keys)?;
    df.with_column(Column::new(
        c::DECIDED.into(),
        (df.column(c::PASSED)?.as_materialized_series()
            + df.column(c::FAILED)?.as_materialized_series())?,
    ))?;
    insert_wilson(
        &mut df,
        c::SUCCESS_PCT,
        (c::SUCCESS_LOW_PCT, c::SUCCESS_HIGH_PCT),
        c::PASSED,
        c::DECIDED,
    )?;
    let mut df = df.drop(c::DECIDED)?;
    for key in keys {
        let names = if *key == c::TEMPLATE {
            &measures.labels.templates
        } else {
            &measures.labels.models
        };
        df = named(df, key, names)?;
    }
    Ok(df)
}

/// The measures summed per model, each into the summary column it becomes.
const MODEL_SUMS: [(&str, &str); 8] = [
    (c::LATENCY_MS, c::LATENCY_MS),
    (c::COST_USD, c::TOTAL_COST_USD),
    (c::PAID_USD, c::PAID_USD),
    (c::INPUT_TOKENS, c::INPUT_TOKENS),
    (c::OUTPUT_TOKENS, c::OUTPUT_TOKENS),
    (c::ENERGY_WH, c::ENERGY_WH),
    (c::ENERGY_WH_MIN, c::ENERGY_WH_MIN),
    (c::ENERGY_WH_MAX, c::ENERGY_WH_MAX),
];

/// The counts the per-model summary sums over the slices.
const MODEL_COUNTS: [&str; 8] = [
    c::RESULTS,
    c::PASSED,
    c::FAILED,
    c::ERRORS,
    c::CACHE_HITS,
    c::ENERGY_UNKNOWN,
    c::COST_UNKNOWN,
    c::PAID_UNKNOWN,
];

/// Step 1 of [`model_summary`]: one slice's counts and sums per model (per `keys`).
fn model_slice_sums(part: &DataFrame, keys: &[&str]) -> LazyFrame {
    let count = |e: Expr, name: &str| e.sum().cast(DataType::UInt64).alias(name);
    let mut aggs = vec![
        len().cast(DataType::UInt64).alias(c::RESULTS),
        count(col(c::PASSED), c::PASSED),
        count(col(c::PASSED).not(), c::FAILED),
        count(col(c::PASSED).is_null(), c::ERRORS),
        count(col(c::CACHE_HIT), c::CACHE_HITS),
        count(energy_unknown(), c::ENERGY_UNKNOWN),
        count(cost_unknown(), c::COST_UNKNOWN),
        count(paid_unknown(), c::PAID_UNKNOWN),
    ];
    aggs.extend(
        MODEL_SUMS
            .iter()
            .map(|(from, to)| col(*from).sum().alias(*to)),
    );
    let keys: Vec<Expr> = keys.iter().map(|k| col(*k)).collect();
    part.clone().lazy().group_by(keys).agg(aggs)
}

/// Step 2 of [`model_summary`]: the slices' sums summed per model (per `keys`), and the
/// summary's columns computed from them, in key order.
fn model_totals(partials: Vec<LazyFrame>, keys: &[&str]) -> PolarsResult<DataFrame> {
    let mut totals: Vec<Expr> = MODEL_COUNTS.iter().map(|name| col(*name).sum()).collect();
    totals.extend(MODEL_SUMS.iter().map(|(_, to)| col(*to).sum()));
    let decided = (col(c::PASSED) + col(c::FAILED)).cast(DataType::Float64);
    // A model with results of unknown energy has an unknown total, not a partial one.
    let energy =
        |name: &str| unless_unknown(col(c::ENERGY_UNKNOWN).gt(lit(0)), col(name)).alias(name);
    let mut columns: Vec<Expr> = keys.iter().map(|k| col(*k)).collect();
    columns.extend([
        col(c::RESULTS),
        col(c::PASSED),
        col(c::FAILED),
        col(c::ERRORS),
        when(decided.clone().gt(lit(0.0)))
            .then(col(c::PASSED).cast(DataType::Float64) * lit(100.0) / decided)
            .otherwise(lit(NULL))
            .alias(c::SUCCESS_PCT),
        (col(c::LATENCY_MS) / lit(1000.0)).alias(c::TOTAL_TIME_S),
        // The same for cost, and what was paid, with answers of a model without a price.
        unless_unknown(col(c::COST_UNKNOWN).gt(lit(0)), col(c::TOTAL_COST_USD))
            .alias(c::TOTAL_COST_USD),
        unless_unknown(col(c::PAID_UNKNOWN).gt(lit(0)), col(c::PAID_USD)).alias(c::PAID_USD),
        col(c::INPUT_TOKENS).cast(DataType::UInt64),
        col(c::OUTPUT_TOKENS).cast(DataType::UInt64),
        energy(c::ENERGY_WH),
        energy(c::ENERGY_WH_MIN),
        energy(c::ENERGY_WH_MAX),
        col(c::CACHE_HITS),
    ]);
    concat(partials, UnionArgs::default())?
        .group_by(keys.iter().map(|k| col(*k)).collect::<Vec<_>>())
        .agg(totals)
        .sort(keys.to_vec(), SortMultipleOptions::default())
        .select(columns)
        .collect()
}

/// Per prompt, in file order: % success for each model and across all models, then averages
/// of input and output tokens, cost, time and energy (null, unknown, when any model's answer
/// to the prompt has unknown energy).
pub(crate) fn prompt_summary(measures: &Measures) -> PolarsResult<DataFrame> {
    let lazy = concat(
        measures
            .parts
            .iter()
            .map(|p| p.clone().lazy())
            .collect::<Vec<_>>(),
        UnionArgs::default(),
    )?;
    let summary = prompt_range_summary(lazy, &measures.labels)?;
    prompt_summary_of_ranges(vec![summary], &measures.labels)
}

/// Results a range of prompts of [`prompt_summary_of_runs`] holds, about (fewer when a prompt
/// has more): the rows of a range, in memory at once, are about 80 bytes each.
const ROWS_PER_PROMPT_RANGE: usize = 1 << 16;

/// [`prompt_summary`] of the results of `run_ids`, read from the store a range of prompts at
/// a time, one range per core at once: each range is summed as a whole summary is (a prompt's
/// results are all in one range, in the same order), and its rows are dropped as soon as it
/// is. The million results of 50,000 prompts x 20 models are never all in memory together, nor
/// are the million (model, prompt) groups of the per-model columns (all at once, a heap of 280
/// MB at its peak, 154 MB of it the hash tables of that group-by). A prompt's results come in run, model and repeat order
/// whatever the number of cores; [`Measures::load`] gives those of several runs slice by
/// slice, so a mean over several runs can differ from [`prompt_summary`]'s in its last bit (of
/// the 17 digits of a double; CSV and JSON print 15).
pub(crate) fn prompt_summary_of_runs(store: &Store, run_ids: &[i64]) -> anyhow::Result<DataFrame> {
    prompt_summary_in_ranges(store, run_ids, ROWS_PER_PROMPT_RANGE)
}

/// [`prompt_summary_of_runs`] in ranges of about `rows_per_range` results.
fn prompt_summary_in_ranges(
    store: &Store,
    run_ids: &[i64],
    rows_per_range: usize,
) -> anyhow::Result<DataFrame> {
    let with_templates = store.bench_has_templates(run_ids)?;
    let (labels, ranges) = store.scan_bench_measures_by_prompt(
        run_ids,
        (scan_threads(), rows_per_range),
        |rows| MeasureBuilders::new(rows, with_templates),
        |b, row| b.push(row),
        |b, labels| prompt_range_summary(b.finish()?.lazy(), labels),
    )?;
    let ranges = ranges.into_iter().collect::<PolarsResult<Vec<_>>>()?;
    Ok(prompt_summary_of_ranges(ranges, &labels)?)
}

/// The per-prompt summary of the rows of `lazy` (whole prompts), prompts still as keys, before
/// the columns computed over whole frames: steps 1 and 2.
fn prompt_range_summary(lazy: LazyFrame, labels: &Labels) -> PolarsResult<DataFrame> {
    let summary = prompt_averages(lazy.clone());
    join_model_success(summary, lazy, labels)?.collect()
}

/// The summaries of ranges of prompts (in prompt order) stacked, then what is computed over
/// the whole: the Wilson interval, the columns in order (step 3), the prompts by name.
fn prompt_summary_of_ranges(ranges: Vec<DataFrame>, labels: &Labels) -> PolarsResult<DataFrame> {
    let mut ranges = ranges.into_iter();
    let mut summary = ranges.next().unwrap_or_default();
    for range in ranges {
        summary.vstack_mut_owned(range)?;
    }
    insert_wilson(
        &mut summary,
        c::SUCCESS_PCT_ALL,
        (c::SUCCESS_ALL_LOW_PCT, c::SUCCESS_ALL_HIGH_PCT),
        c::PASSED_ALL,
        c::DECIDED_ALL,
    )?;
    let model_columns = success_columns(labels)
        .into_iter()
        .map(|s| s.name)
        .collect();
    let order = prompt_column_order(model_columns);
    named(summary.select(order)?, c::PROMPT, &labels.prompts)
}

/// Step 1 of [`prompt_summary`]: per prompt, success across models and the averages.
fn prompt_averages(lazy: LazyFrame) -> LazyFrame {
    lazy.group_by([col(c::PROMPT)])
        .agg([
            len().cast(DataType::UInt64).alias(c::RESULTS),
            success_pct().alias(c::SUCCESS_PCT_ALL),
            col(c::PASSED).sum().alias(c::PASSED_ALL),
            col(c::PASSED).is_not_null().sum().alias(c::DECIDED_ALL),
            col(c::INPUT_TOKENS)
                .cast(DataType::Float64)
                .mean()
                .alias(c::AVG_INPUT_TOKENS),
            col(c::OUTPUT_TOKENS)
                .cast(DataType::Float64)
                .mean()
                .alias(c::AVG_OUTPUT_TOKENS),
            unless_unknown(cost_unknown().any(true), col(c::COST_USD).mean())
                .alias(c::AVG_COST_USD),
            (col(c::LATENCY_MS).mean() / lit(1000.0)).alias(c::AVG_TIME_S),
            // Across models: unknown when any model's is, rather than the mean of the others.
            unless_unknown(energy_unknown().any(true), col(c::ENERGY_WH).mean())
                .alias(c::AVG_ENERGY_WH),
        ])
        .sort([c::PROMPT], SortMultipleOptions::default())
}

/// A column of the per-prompt summary holding one model's success on each prompt: with all
/// templates pooled, or, when the results come from several templates, with one template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuccessColumn {
    /// The column's name ([`c::success_pct_of`], [`c::success_pct_of_pair`]).
    pub name: String,
    pub model: String,
    /// Its template when the results come from several (`None` among them: a run without
    /// templates); `None` too when templates are pooled (see `template_key`).
    pub template: Option<String>,
    model_key: u32,
    /// `None`: every template pooled.
    template_key: Option<u32>,
}

/// The per-model success columns of the per-prompt summary of results labelled `labels`, in
/// model order: one per model, or, when the results come from several templates, one per
/// model and template (templates in label order), so that two wordings of a case are never
/// pooled.
pub(crate) fn success_columns(labels: &Labels) -> Vec<SuccessColumn> {
    let mut columns = Vec::new();
    for (model_key, model) in labels.models.iter().enumerate() {
        let model_key = model_key as u32;
        if !labels.several_templates() {
            columns.push(SuccessColumn {
                name: c::success_pct_of(model),
                model: model.clone(),
                template: None,
                model_key,
                template_key: None,
            });
            continue;
        }
        for template_key in labels.template_keys() {
            let template = labels.template(template_key);
            columns.push(SuccessColumn {
                name: c::success_pct_of_pair(model, template),
                model: model.clone(),
                template: template.map(str::to_owned),
                model_key,
                template_key: Some(template_key),
            });
        }
    }
    columns
}

/// Step 2 of [`prompt_summary`]: a column of each model's success on the prompt (per template
/// when there are several: [`success_columns`]), joined to `summary` in model order.
fn join_model_success(
    mut summary: LazyFrame,
    lazy: LazyFrame,
    labels: &Labels,
) -> PolarsResult<LazyFrame> {
    let mut keys = vec![col(c::MODEL), col(c::PROMPT)];
    if labels.several_templates() {
        keys.push(col(c::TEMPLATE));
    }
    let per_pair = lazy
        .group_by(keys)
        .agg([success_pct().alias(c::PCT)])
        .collect()?;
    for column in success_columns(labels) {
        let mut of_column = col(c::MODEL).eq(lit(column.model_key));
        if let Some(template) = column.template_key {
            of_column = of_column.and(col(c::TEMPLATE).eq(lit(template)));
        }
        let for_model = per_pair
            .clone()
            .lazy()
            .filter(of_column)
            .select([col(c::PROMPT), col(c::PCT).alias(column.name.as_str())]);
        let mut args = JoinArgs::new(JoinType::Left);
        args.maintain_order = MaintainOrderJoin::Left;
        summary = summary.join(for_model, [col(c::PROMPT)], [col(c::PROMPT)], args);
    }
    Ok(summary)
}

/// Step 3 of [`prompt_summary`]: its columns in order, the per-model ones right after the
/// prompt, as the specification lists them.
fn prompt_column_order(model_columns: Vec<String>) -> Vec<String> {
    let mut order: Vec<String> = vec![c::PROMPT.into()];
    order.extend(model_columns);
    order.extend(
        [
            c::RESULTS,
            c::SUCCESS_PCT_ALL,
            c::SUCCESS_ALL_LOW_PCT,
            c::SUCCESS_ALL_HIGH_PCT,
            c::AVG_INPUT_TOKENS,
            c::AVG_OUTPUT_TOKENS,
            c::AVG_COST_USD,
            c::AVG_TIME_S,
            c::AVG_ENERGY_WH,
        ]
        .map(str::to_owned),
    );
    order
}

/// Per model (in the order of [`model_summary`]): how long answers took, in seconds, over the
/// results that have a time: how many, the minimum, quartiles, maximum and mean. What a box
/// plot of latencies draws.
pub(crate) fn latency_summary(measures: &Measures) -> PolarsResult<DataFrame> {
    if measures.parts.is_empty() {
        return Ok(DataFrame::empty());
    }
    let lazy = concat(
        measures
            .parts
            .iter()
            .map(|p| p.clone().lazy())
            .collect::<Vec<_>>(),
        UnionArgs::default(),
    )?;
    let seconds = || col(c::LATENCY_MS) / lit(1000.0);
    let quantile = |q: f64, name: &str| {
        seconds()
            .quantile(lit(q), QuantileMethod::Linear)
            .alias(name)
    };
    let df = lazy
        .filter(col(c::LATENCY_MS).is_not_null())
        .group_by([col(c::MODEL)])
        .agg([
            len().cast(DataType::UInt64).alias(c::TIMED),
            seconds().min().alias(c::MIN_TIME_S),
            quantile(0.25, "q1_time_s"),
            quantile(0.5, c::MEDIAN_TIME_S),
            quantile(0.75, "q3_time_s"),
            seconds().max().alias(c::MAX_TIME_S),
            seconds().mean().alias(c::MEAN_TIME_S),
        ])
        .sort([c::MODEL], SortMultipleOptions::default())
        .collect()?;
    named(df, c::MODEL, &measures.labels.models)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> BenchColumns {
        // Two models x two prompts; model b errors on p2.
        let mut c = BenchColumns::default();
        let rows = [
            ("a", "p1", Some(true), 1000.0, 10, 5, 0.01, 1.0, true),
            ("a", "p2", Some(false), 3000.0, 20, 15, 0.03, 3.0, false),
            ("b", "p1", Some(true), 2000.0, 10, 7, 0.02, 2.0, false),
            ("b", "p2", None, 0.0, 0, 0, 0.0, 0.0, false),
        ];
        for (i, (m, p, passed, ms, tin, tout, cost, wh, hit)) in rows.into_iter().enumerate() {
            c.run_id.push(1);
            c.model_index.push(u32::from(m == "b"));
            c.prompt_index.push(i as u32 % 2);
            c.repeat_index.push(0);
            c.model_ref.push(m.into());
            c.prompt_name.push(p.into());
            c.outcome
                .push(passed.map_or(Outcome::Error, Outcome::of_test));
            c.cache_hit.push(hit);
            let ok = passed.is_some();
            c.latency_ms.push(ok.then_some(ms));
            c.input_tokens.push(ok.then_some(tin));
            c.output_tokens.push(ok.then_some(tout));
            c.cost_usd.push(ok.then_some(cost));
            c.paid_usd.push(ok.then_some(if hit { 0.0 } else { cost }));
            c.energy_wh.push(ok.then_some(wh));
            c.energy_wh_min.push(ok.then_some(wh));
            c.energy_wh_max.push(ok.then_some(wh));
        }
        c
    }

    fn f64_at(df: &DataFrame, name: &str, row: usize) -> Option<f64> {
        df.column(name).unwrap().f64().unwrap().get(row)
    }

    /// Rows whose model and prompt change back and forth make the summaries of the same rows
    /// in order: a name is never taken for the name of the row before.
    #[test]
    fn interleaved_rows_make_the_same_summaries() {
        let sorted = columns();
        let mut mixed = BenchColumns::default();
        for i in [0, 2, 3, 1] {
            mixed.run_id.push(sorted.run_id[i]);
            mixed.model_index.push(sorted.model_index[i]);
            mixed.prompt_index.push(sorted.prompt_index[i]);
            mixed.repeat_index.push(sorted.repeat_index[i]);
            mixed.model_ref.push(sorted.model_ref[i].clone());
            mixed.prompt_name.push(sorted.prompt_name[i].clone());
            mixed.outcome.push(sorted.outcome[i]);
            mixed.cache_hit.push(sorted.cache_hit[i]);
            mixed.latency_ms.push(sorted.latency_ms[i]);
            mixed.input_tokens.push(sorted.input_tokens[i]);
            mixed.output_tokens.push(sorted.output_tokens[i]);
            mixed.cost_usd.push(sorted.cost_usd[i]);
            mixed.paid_usd.push(sorted.paid_usd[i]);
            mixed.energy_wh.push(sorted.energy_wh[i]);
            mixed.energy_wh_min.push(sorted.energy_wh_min[i]);
            mixed.energy_wh_max.push(sorted.energy_wh_max[i]);
        }
        let (sorted, mixed) = (
            Measures::from_columns(&sorted).unwrap(),
            Measures::from_columns(&mixed).unwrap(),
        );
        assert_eq!(
            model_summary(&sorted).unwrap(),
            model_summary(&mixed).unwrap()
        );
        let by_prompt = prompt_summary(&mixed).unwrap();
        assert_eq!(prompt_summary(&sorted).unwrap(), by_prompt);
        assert_eq!(f64_at(&by_prompt, "success_pct[b]", 1), None);
    }

    #[test]
    fn per_model_totals() {
        let m = model_summary(&Measures::from_columns(&columns()).unwrap()).unwrap();
        assert_eq!(m.height(), 2);
        assert_eq!(m.column("model").unwrap().str().unwrap().get(0), Some("a"));
        assert_eq!(f64_at(&m, "success_pct", 0), Some(50.0));
        assert_eq!(
            f64_at(&m, "success_pct", 1),
            Some(100.0),
            "errors are not failures"
        );
        assert_eq!(f64_at(&m, "total_time_s", 0), Some(4.0));
        assert!((f64_at(&m, "total_cost_usd", 0).unwrap() - 0.04).abs() < 1e-12);
        assert!((f64_at(&m, "paid_usd", 0).unwrap() - 0.03).abs() < 1e-12);
        assert_eq!(m.column("errors").unwrap().u64().unwrap().get(1), Some(1));
        assert_eq!(
            m.column("output_tokens").unwrap().u64().unwrap().get(0),
            Some(20)
        );
    }

    #[test]
    fn per_prompt_with_a_column_per_model() {
        let p = prompt_summary(&Measures::from_columns(&columns()).unwrap()).unwrap();
        let names: Vec<String> = p.get_column_names().iter().map(|n| n.to_string()).collect();
        assert_eq!(
            &names[..4],
            ["case", "success_pct[a]", "success_pct[b]", "results"]
        );
        assert_eq!(f64_at(&p, "success_pct[a]", 0), Some(100.0));
        assert_eq!(
            f64_at(&p, "success_pct[b]", 1),
            None,
            "only an error: no rate"
        );
        assert_eq!(f64_at(&p, "success_pct_all", 0), Some(100.0));
        assert_eq!(f64_at(&p, "success_pct_all", 1), Some(0.0));
        assert_eq!(f64_at(&p, "avg_output_tokens", 0), Some(6.0));
        assert_eq!(f64_at(&p, "avg_time_s", 0), Some(1.5));
    }

    /// `columns()` plus model c, without a parameter count: answers on p1 and an error on p2.
    fn columns_with_unknown_energy() -> BenchColumns {
        let mut c = columns();
        for (p, passed) in [("p1", Some(true)), ("p2", None)] {
            let ok = passed.is_some();
            c.run_id.push(1);
            c.model_index.push(2);
            c.prompt_index.push(u32::from(p == "p2"));
            c.repeat_index.push(0);
            c.model_ref.push("c".into());
            c.prompt_name.push(p.into());
            c.outcome
                .push(passed.map_or(Outcome::Error, Outcome::of_test));
            c.cache_hit.push(false);
            c.latency_ms.push(ok.then_some(500.0));
            c.input_tokens.push(ok.then_some(10));
            c.output_tokens.push(ok.then_some(4));
            c.cost_usd.push(ok.then_some(0.0));
            c.paid_usd.push(ok.then_some(0.0));
            c.energy_wh.push(None);
            c.energy_wh_min.push(None);
            c.energy_wh_max.push(None);
        }
        c
    }

    #[test]
    fn unknown_energy_stays_unknown_in_the_summaries() {
        let measures = Measures::from_columns(&columns_with_unknown_energy()).unwrap();
        let m = model_summary(&measures).unwrap();
        assert_eq!(m.column("model").unwrap().str().unwrap().get(2), Some("c"));
        for column in ["energy_wh", "energy_wh_min", "energy_wh_max"] {
            assert_eq!(f64_at(&m, column, 2), None, "c: {column} is unknown, not 0");
            assert_eq!(f64_at(&m, column, 0), Some(4.0), "a keeps its energy");
        }
        // b's only error has no energy and no answer: nothing is unknown.
        assert_eq!(f64_at(&m, "energy_wh", 1), Some(2.0));
        assert_eq!(
            f64_at(&m, "total_time_s", 2),
            Some(0.5),
            "the rest is known"
        );

        let p = prompt_summary(&measures).unwrap();
        assert_eq!(
            f64_at(&p, "avg_energy_wh", 0),
            None,
            "p1: c answered with unknown energy, so the mean over models is unknown"
        );
        assert_eq!(
            f64_at(&p, "avg_energy_wh", 1),
            Some(3.0),
            "p2: c only errored, the mean over the answers is known"
        );
        // Without model c the same means are known.
        let known = prompt_summary(&Measures::from_columns(&columns()).unwrap()).unwrap();
        assert_eq!(f64_at(&known, "avg_energy_wh", 0), Some(1.5));
    }

    #[test]
    fn unknown_cost_stays_unknown_in_the_summaries() {
        // Model c answered p1 without a price: its cost is unknown, fresh (paid unknown).
        let mut columns = columns_with_unknown_energy();
        let answered = columns.model_ref.len() - 2;
        columns.cost_usd[answered] = None;
        columns.paid_usd[answered] = None;
        let measures = Measures::from_columns(&columns).unwrap();
        let m = model_summary(&measures).unwrap();
        for column in ["total_cost_usd", "paid_usd"] {
            assert_eq!(f64_at(&m, column, 2), None, "c: {column} is unknown, not 0");
            assert!(f64_at(&m, column, 0).is_some(), "a keeps its {column}");
        }
        let p = prompt_summary(&measures).unwrap();
        assert_eq!(
            f64_at(&p, "avg_cost_usd", 0),
            None,
            "p1: c's cost is unknown"
        );
        assert!(
            f64_at(&p, "avg_cost_usd", 1).is_some(),
            "p2: c only errored"
        );

        // A cached answer of unknown cost paid nothing: what was paid is known.
        columns.paid_usd[answered] = Some(0.0);
        let m = model_summary(&Measures::from_columns(&columns).unwrap()).unwrap();
        assert_eq!(f64_at(&m, "total_cost_usd", 2), None);
        assert_eq!(f64_at(&m, "paid_usd", 2), Some(0.0));
    }

    /// A result of `run` for the test's file database: `model` answering `prompt`.
    fn result(
        run: i64,
        (model, prompt): (u32, u32),
        names: (&str, &str),
        i: u32,
    ) -> BenchResultRow {
        let outcome = match i % 5 {
            0 => Outcome::Error,
            1 | 3 => Outcome::Passed,
            _ => Outcome::Failed,
        };
        let answered = outcome != Outcome::Error;
        let value = |scale: f64| answered.then(|| f64::from(i % 13) * scale + 0.1);
        BenchResultRow {
            run_id: run,
            model_index: model,
            prompt_index: prompt,
            repeat_index: i % 2,
            model_ref: names.0.into(),
            provider: "openai".into(),
            model_id: names.0.into(),
            prompt_name: names.1.into(),
            method: "exact".into(),
            call_id: None,
            cache_hit: i.is_multiple_of(3),
            outcome,
            detail: None,
            latency_ms: value(37.3),
            input_tokens: answered.then_some(u64::from(i % 7)),
            output_tokens: answered.then_some(u64::from(i % 11)),
            tokens_estimated: false,
            cost_usd: value(0.000_13),
            paid_usd: value(0.000_07),
            // A model of unknown energy: m2.
            energy_wh: value(0.011).filter(|_| names.0 != "m2"),
            energy_wh_min: value(0.005).filter(|_| names.0 != "m2"),
            energy_wh_max: value(0.017).filter(|_| names.0 != "m2"),
            energy_method: None,
            judge_call_id: None,
            judge_score: None,
            judge_cost_usd: None,
            expected: None,
            template_index: 0,
            template_name: None,
            score: None,
            checks: Vec::new(),
        }
    }

    /// A run's report without its detail reads numbers only; its summaries are those of the
    /// columns read back whole, which the detail table needs: same rows, names and order.
    #[test]
    fn the_summaries_read_as_numbers_are_those_of_the_columns_read_whole() {
        let (_dir, mut store, run) = bench_run_in_a_file();
        let mut rows = Vec::new();
        // Models named out of their order, one of unknown energy, errors, repeats.
        for (m, model) in ["m2", "a0", "m1"].iter().enumerate() {
            for (p, prompt) in ["q9", "q1", "q5", "q0"].iter().enumerate() {
                for repeat in 0..2 {
                    let i = (m * 8 + p * 2 + repeat) as u32;
                    let mut row = result(run, (m as u32, p as u32), (model, prompt), i);
                    row.repeat_index = repeat as u32;
                    rows.push(row);
                }
            }
        }
        store.insert_bench_results(&rows).unwrap();
        let (_tdir, templated, templated_run) = templated_run();
        let csv = |df: &DataFrame| {
            let mut out = Vec::new();
            crate::output::write_csv(df, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        for (store, run) in [(&store, run), (&templated, templated_run)] {
            let whole = BenchFrames::from_columns(store.bench_columns(&[run], true).unwrap());
            let whole = whole.unwrap();
            let numbers = BenchFrames::summaries(store, &[run]).unwrap();
            assert_eq!(csv(&numbers.by_model), csv(&whole.by_model));
            assert_eq!(csv(&numbers.by_prompt), csv(&whole.by_prompt));
            assert_eq!(
                numbers.by_template.as_ref().map(csv),
                whole.by_template.as_ref().map(csv)
            );
            assert!(whole.by_model.height() >= 2 && whole.by_prompt.height() >= 3);
        }
        assert!(
            BenchFrames::summaries(&templated, &[templated_run])
                .unwrap()
                .by_template
                .is_some()
        );
    }

    #[test]
    fn per_prompt_in_ranges_as_all_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("t.db")).unwrap();
        // Two runs, two repeats: the second numbers its prompts in reverse, drops p0, adds p9
        // and a model.
        let mut i = 0;
        let mut runs = Vec::new();
        for (models, prompts) in [
            (
                vec!["m0", "m1", "m2"],
                vec!["p0", "p1", "p2", "p3", "p4", "p5"],
            ),
            (
                vec!["m1", "m3", "m0"],
                vec!["p9", "p5", "p4", "p3", "p2", "p1"],
            ),
        ] {
            let run = store
                .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
                .unwrap();
            let mut rows = Vec::new();
            for (m, model) in models.iter().enumerate() {
                for (p, prompt) in prompts.iter().enumerate() {
                    for _ in 0..2 {
                        i += 1;
                        let at = (m as u32, p as u32);
                        let mut row = result(run, at, (model, prompt), i);
                        row.repeat_index = (i + 1) % 2;
                        rows.push(row);
                    }
                }
            }
            store.insert_bench_results(&rows).unwrap();
            runs.push(run);
        }
        for selection in [&runs[..1], &runs[1..2], &runs[2..], &runs[..], &[]] {
            let whole = prompt_summary(&Measures::load(&store, selection).unwrap()).unwrap();
            for rows_per_range in [1, 5, 12, 1 << 16] {
                let ranged = prompt_summary_in_ranges(&store, selection, rows_per_range).unwrap();
                let csv = |df: &DataFrame| {
                    let mut out = Vec::new();
                    crate::output::write_csv(df, &mut out).unwrap();
                    String::from_utf8(out).unwrap()
                };
                assert!(
                    ranged.equals_missing(&whole),
                    "{rows_per_range} rows a range:\n{}\n{}",
                    csv(&ranged),
                    csv(&whole)
                );
            }
        }
    }

    /// A new benchmark run in a new file database (kept as long as the directory).
    fn bench_run_in_a_file() -> (tempfile::TempDir, Store, i64) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let run = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        (dir, store, run)
    }

    /// A run of 2 models x 2 templates (`terse`, `steps`) x 3 cases, one repeat, in a file
    /// database: `steps` fails case p0 on both models, everything else passes.
    fn templated_run() -> (tempfile::TempDir, Store, i64) {
        let (dir, mut store, run) = bench_run_in_a_file();
        let mut rows = Vec::new();
        for (m, model) in ["m0", "m1"].iter().enumerate() {
            for (t, template) in ["terse", "steps"].iter().enumerate() {
                for (p, prompt) in ["p0", "p1", "p2"].iter().enumerate() {
                    let mut row = result(run, (m as u32, p as u32), (model, prompt), 1);
                    row.repeat_index = 0;
                    row.template_index = t as u32;
                    row.template_name = Some((*template).into());
                    row.outcome = Outcome::of_test(!(t == 1 && p == 0));
                    rows.push(row);
                }
            }
        }
        store.insert_bench_results(&rows).unwrap();
        (dir, store, run)
    }

    fn texts(df: &DataFrame, name: &str) -> Vec<Option<String>> {
        let column = df.column(name).unwrap().str().unwrap().clone();
        column.iter().map(|v| v.map(str::to_owned)).collect()
    }

    #[test]
    fn per_template_and_model_keeps_templates_apart() {
        let (_dir, store, run) = templated_run();
        let loaded = Measures::load(&store, &[run]).unwrap();
        let detail = Measures::from_columns(&store.bench_columns(&[run], true).unwrap()).unwrap();
        for measures in [&loaded, &detail] {
            let t = template_summary(measures).unwrap();
            assert_eq!(
                texts(&t, "template"),
                ["terse", "terse", "steps", "steps"].map(|s| Some(s.to_owned()))
            );
            assert_eq!(
                texts(&t, "model"),
                ["m0", "m1", "m0", "m1"].map(|s| Some(s.to_owned()))
            );
            assert_eq!(f64_at(&t, "success_pct", 0), Some(100.0));
            let steps = f64_at(&t, "success_pct", 2).unwrap();
            assert!((steps - 200.0 / 3.0).abs() < 1e-9, "{steps}");
            let (low, high) = (
                f64_at(&t, "success_low_pct", 2).unwrap(),
                f64_at(&t, "success_high_pct", 2).unwrap(),
            );
            assert!(low < steps && steps < high, "{low} {steps} {high}");
            assert_eq!(t.column("results").unwrap().u64().unwrap().get(3), Some(3));
            // Per model, both templates are pooled: 5 of 6.
            let m = model_summary(measures).unwrap();
            assert_eq!(m.height(), 2);
            let pooled = f64_at(&m, "success_pct", 0).unwrap();
            assert!((pooled - 500.0 / 6.0).abs() < 1e-9);
            // Per prompt, a column per model and template: p0 passed with terse, failed with
            // steps (pooled, it would read 50 %).
            let p = prompt_summary(measures).unwrap();
            let names: Vec<String> = p.get_column_names().iter().map(|n| n.to_string()).collect();
            assert_eq!(
                &names[..5],
                [
                    "case",
                    "success_pct[m0|terse]",
                    "success_pct[m0|steps]",
                    "success_pct[m1|terse]",
                    "success_pct[m1|steps]"
                ]
            );
            assert_eq!(f64_at(&p, "success_pct[m0|terse]", 0), Some(100.0));
            assert_eq!(f64_at(&p, "success_pct[m1|steps]", 0), Some(0.0));
            assert_eq!(f64_at(&p, "success_pct_all", 0), Some(50.0));
        }
        // Read a range of prompts at a time, the same per-prompt summary.
        let whole = prompt_summary(&loaded).unwrap();
        for rows_per_range in [1, 5, 1 << 16] {
            let ranged = prompt_summary_in_ranges(&store, &[run], rows_per_range).unwrap();
            assert!(ranged.equals_missing(&whole), "{rows_per_range}");
        }
    }

    #[test]
    fn the_template_matrix_has_a_cell_per_template_and_model_with_its_interval() {
        let (_dir, store, run) = templated_run();
        let frames = BenchFrames::from_columns(store.bench_columns(&[run], true).unwrap()).unwrap();
        let matrix = template_matrix(frames.by_template.as_ref().unwrap()).unwrap();
        let names: Vec<String> = matrix
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(names, ["template", "m0", "m1"]);
        assert_eq!(
            texts(&matrix, "template"),
            [Some("terse".into()), Some("steps".into())]
        );
        let cell = |model: &str, row: usize| texts(&matrix, model)[row].clone().unwrap();
        assert!(cell("m0", 0).starts_with("100.0 % ("), "{}", cell("m0", 0));
        assert!(cell("m1", 1).starts_with("66.7 % ("), "{}", cell("m1", 1));
        // One template: no such table.
        let plain = BenchFrames::from_columns(columns()).unwrap();
        assert!(plain.by_template.is_none());
    }

    #[test]
    fn per_template_without_templates_is_per_model_with_a_null_template() {
        let measures = Measures::from_columns(&columns()).unwrap();
        let t = template_summary(&measures).unwrap();
        assert_eq!(texts(&t, "template"), [None, None]);
        assert_eq!(texts(&t, "model"), [Some("a".into()), Some("b".into())]);
        let m = model_summary(&measures).unwrap();
        assert!(t.drop("template").unwrap().equals_missing(&m), "{t}\n{m}");
    }

    #[test]
    fn latencies_per_model_skip_results_without_a_time() {
        let l = latency_summary(&Measures::from_columns(&columns()).unwrap()).unwrap();
        assert_eq!(l.height(), 2);
        assert_eq!(l.column("model").unwrap().str().unwrap().get(1), Some("b"));
        assert_eq!(l.column("timed").unwrap().u64().unwrap().get(1), Some(1));
        assert_eq!(f64_at(&l, "min_time_s", 0), Some(1.0));
        assert_eq!(f64_at(&l, "median_time_s", 0), Some(2.0));
        assert_eq!(f64_at(&l, "q3_time_s", 0), Some(2.5));
        assert_eq!(f64_at(&l, "max_time_s", 1), Some(2.0));
        let empty = Measures {
            parts: Vec::new(),
            labels: Labels::default(),
        };
        assert_eq!(latency_summary(&empty).unwrap().height(), 0);
    }
}
