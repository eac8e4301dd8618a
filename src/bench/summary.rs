//! Benchmark frames and summaries with polars, from the store's columns: per evaluation, per
//! model, per prompt, latency. Nothing here reads SQL or prints: `track query`, the export, the
//! console and the report section all read these frames.

use std::collections::HashMap;

use polars::prelude::*;

use crate::analysis::stats::{Z_95, wilson_interval};
use crate::store::{BenchColumns, Labels, MeasureRow, Store};

/// The three tables of a benchmark report.
#[derive(Debug, Clone)]
pub struct BenchFrames {
    pub results: DataFrame,
    pub by_model: DataFrame,
    pub by_prompt: DataFrame,
}

impl BenchFrames {
    /// Builds all three from loaded columns (loaded with detail).
    pub fn from_columns(cols: BenchColumns) -> PolarsResult<Self> {
        let measures = Measures::from_columns(&cols)?;
        Ok(Self {
            by_model: model_summary(&measures)?,
            by_prompt: prompt_summary(&measures)?,
            results: results_frame(cols)?,
        })
    }
}

/// One row per evaluation. Detail columns are present only when they were loaded.
pub fn results_frame(cols: BenchColumns) -> PolarsResult<DataFrame> {
    let with_detail = cols.method.len() == cols.len();
    let status: Vec<&str> = cols
        .passed
        .iter()
        .map(|p| match p {
            Some(true) => "passed",
            Some(false) => "failed",
            None => "error",
        })
        .collect();
    let mut columns = vec![
        Column::new("run_id".into(), cols.run_id),
        Column::new("model".into(), cols.model_ref),
        Column::new("prompt".into(), cols.prompt_name),
        Column::new("repeat".into(), cols.repeat_index),
        Column::new("status".into(), status),
        Column::new("passed".into(), cols.passed),
        Column::new("latency_ms".into(), cols.latency_ms),
        Column::new("input_tokens".into(), cols.input_tokens),
        Column::new("output_tokens".into(), cols.output_tokens),
        Column::new("cost_usd".into(), cols.cost_usd),
        Column::new("paid_usd".into(), cols.paid_usd),
        Column::new("energy_wh".into(), cols.energy_wh),
        Column::new("energy_wh_min".into(), cols.energy_wh_min),
        Column::new("energy_wh_max".into(), cols.energy_wh_max),
        Column::new("cache_hit".into(), cols.cache_hit),
    ];
    if with_detail {
        columns.extend([
            Column::new("provider".into(), cols.provider),
            Column::new("model_id".into(), cols.model_id),
            Column::new("method".into(), cols.method),
            Column::new("tokens_estimated".into(), cols.tokens_estimated),
            Column::new("energy_method".into(), cols.energy_method),
            Column::new("judge_score".into(), cols.judge_score),
            Column::new("judge_cost_usd".into(), cols.judge_cost_usd),
            Column::new("detail".into(), cols.detail),
        ]);
    }
    DataFrame::new_infer_height(columns)
}

/// The numbers of benchmark results with models and prompts as `u32` keys into `labels`:
/// what the summaries read. Built straight from the database without per-row strings.
#[derive(Debug, Clone)]
pub struct Measures {
    /// Slices of the rows; no (model, prompt) pair spans two slices.
    pub parts: Vec<DataFrame>,
    pub labels: Labels,
}

/// Column builders for [`Measures`].
struct MeasureBuilders {
    model: Vec<u32>,
    prompt: Vec<u32>,
    passed: BooleanChunkedBuilder,
    cache_hit: Vec<bool>,
    floats: [PrimitiveChunkedBuilder<Float64Type>; 7],
    tokens: [PrimitiveChunkedBuilder<Int64Type>; 2],
}

const FLOAT_COLUMNS: [&str; 7] = [
    "latency_ms",
    "cost_usd",
    "paid_usd",
    "energy_wh",
    "energy_wh_min",
    "energy_wh_max",
    "_unused",
];

impl MeasureBuilders {
    fn new(capacity: usize) -> Self {
        Self {
            model: Vec::with_capacity(capacity),
            prompt: Vec::with_capacity(capacity),
            passed: BooleanChunkedBuilder::new("passed".into(), capacity),
            cache_hit: Vec::with_capacity(capacity),
            floats: FLOAT_COLUMNS.map(|n| PrimitiveChunkedBuilder::new(n.into(), capacity)),
            tokens: ["input_tokens", "output_tokens"]
                .map(|n| PrimitiveChunkedBuilder::new(n.into(), capacity)),
        }
    }

    fn push(&mut self, r: &MeasureRow) {
        self.model.push(r.model);
        self.prompt.push(r.prompt);
        self.passed.append_option(r.passed);
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
        let [latency, cost, paid, energy, energy_min, energy_max, _] = self.floats;
        let [input, output] = self.tokens;
        DataFrame::new_infer_height(vec![
            Column::new("model".into(), self.model),
            Column::new("prompt".into(), self.prompt),
            self.passed.finish().into_column(),
            Column::new("cache_hit".into(), self.cache_hit),
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
    pub fn load(store: &Store, run_ids: &[i64]) -> anyhow::Result<Self> {
        let parts = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8);
        let (labels, parts) =
            store
                .scan_bench_measures(run_ids, parts, MeasureBuilders::new, |b, row| b.push(row))?;
        let parts = parts
            .into_iter()
            .map(MeasureBuilders::finish)
            .collect::<PolarsResult<Vec<_>>>()?;
        Ok(Self { parts, labels })
    }

    /// The measures of loaded columns (the detail path), keyed the same way.
    pub fn from_columns(cols: &BenchColumns) -> PolarsResult<Self> {
        let mut labels = Labels::default();
        let mut keys: [HashMap<String, u32>; 2] = Default::default();
        let mut key = |kind: usize, name: &str, labels: &mut Labels| -> u32 {
            let names = if kind == 0 {
                &mut labels.models
            } else {
                &mut labels.prompts
            };
            if let Some(&k) = keys[kind].get(name) {
                return k;
            }
            *keys[kind].entry(name.to_owned()).or_insert_with(|| {
                names.push(name.to_owned());
                (names.len() - 1) as u32
            })
        };
        let mut builders = MeasureBuilders::new(cols.len());
        for i in 0..cols.len() {
            let row = MeasureRow {
                model: key(0, &cols.model_ref[i], &mut labels),
                prompt: key(1, &cols.prompt_name[i], &mut labels),
                passed: cols.passed[i],
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

/// Inserts `<prefix>_low_pct` and `<prefix>_high_pct`, the Wilson 95 % interval of the share
/// `passed` of `decided` (in percent), right after column `after`.
fn insert_wilson(
    df: &mut DataFrame,
    after: &str,
    prefix: &str,
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
    df.insert_column(at, Column::new(format!("{prefix}_high_pct").into(), high))?;
    df.insert_column(at, Column::new(format!("{prefix}_low_pct").into(), low))?;
    Ok(())
}

/// Whether a result has an answer but no energy estimate: its model had no parameter count.
/// (An error has neither: no call, no energy, and nothing unknown.)
fn energy_unknown() -> Expr {
    col("output_tokens")
        .is_not_null()
        .and(col("energy_wh").is_null())
}

/// `value`, or null when any result of the group has unknown energy: a sum or mean that left
/// those results out would look complete and be too low.
fn unless_energy_unknown(unknown: Expr, value: Expr) -> Expr {
    when(unknown)
        .then(lit(NULL).cast(DataType::Float64))
        .otherwise(value)
}

/// Share of passed among passed and failed (errors excluded), in percent; null when none.
fn success_pct() -> Expr {
    col("passed").cast(DataType::Float64).mean() * lit(100.0)
}

/// Per model, in the order models were run: counts, % success, total time, cost, paid,
/// tokens and energy (null, unknown, for a model with an answer of unknown energy). Each slice
/// is summed on its own, then the sums are summed: the rows are never copied into one frame.
pub fn model_summary(measures: &Measures) -> PolarsResult<DataFrame> {
    let sums = [
        ("latency_ms", "latency_ms"),
        ("cost_usd", "total_cost_usd"),
        ("paid_usd", "paid_usd"),
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("energy_wh", "energy_wh"),
        ("energy_wh_min", "energy_wh_min"),
        ("energy_wh_max", "energy_wh_max"),
    ];
    let partials = measures
        .parts
        .iter()
        .map(|part| {
            let mut aggs = vec![
                len().cast(DataType::UInt64).alias("results"),
                col("passed").sum().cast(DataType::UInt64).alias("passed"),
                col("passed")
                    .not()
                    .sum()
                    .cast(DataType::UInt64)
                    .alias("failed"),
                col("passed")
                    .is_null()
                    .sum()
                    .cast(DataType::UInt64)
                    .alias("errors"),
                col("cache_hit")
                    .sum()
                    .cast(DataType::UInt64)
                    .alias("cache_hits"),
            ];
            aggs.push(
                energy_unknown()
                    .sum()
                    .cast(DataType::UInt64)
                    .alias("energy_unknown"),
            );
            aggs.extend(sums.iter().map(|(from, to)| col(*from).sum().alias(*to)));
            part.clone().lazy().group_by([col("model")]).agg(aggs)
        })
        .collect::<Vec<_>>();
    if partials.is_empty() {
        return Ok(DataFrame::empty());
    }
    let mut totals: Vec<Expr> = [
        "results",
        "passed",
        "failed",
        "errors",
        "cache_hits",
        "energy_unknown",
    ]
    .iter()
    .map(|c| col(*c).sum())
    .collect();
    totals.extend(sums.iter().map(|(_, to)| col(*to).sum()));
    let decided = (col("passed") + col("failed")).cast(DataType::Float64);
    let df = concat(partials, UnionArgs::default())?
        .group_by([col("model")])
        .agg(totals)
        .sort(["model"], SortMultipleOptions::default())
        .select([
            col("model"),
            col("results"),
            col("passed"),
            col("failed"),
            col("errors"),
            when(decided.clone().gt(lit(0.0)))
                .then(col("passed").cast(DataType::Float64) * lit(100.0) / decided)
                .otherwise(lit(NULL))
                .alias("success_pct"),
            (col("latency_ms") / lit(1000.0)).alias("total_time_s"),
            col("total_cost_usd"),
            col("paid_usd"),
            col("input_tokens").cast(DataType::UInt64),
            col("output_tokens").cast(DataType::UInt64),
            // A model with results of unknown energy has an unknown total, not a partial one.
            unless_energy_unknown(col("energy_unknown").gt(lit(0)), col("energy_wh"))
                .alias("energy_wh"),
            unless_energy_unknown(col("energy_unknown").gt(lit(0)), col("energy_wh_min"))
                .alias("energy_wh_min"),
            unless_energy_unknown(col("energy_unknown").gt(lit(0)), col("energy_wh_max"))
                .alias("energy_wh_max"),
            col("cache_hits"),
        ])
        .collect()?;
    let mut df = df;
    df.with_column(Column::new(
        "decided".into(),
        (df.column("passed")?.as_materialized_series()
            + df.column("failed")?.as_materialized_series())?,
    ))?;
    insert_wilson(&mut df, "success_pct", "success", "passed", "decided")?;
    let df = df.drop("decided")?;
    named(df, "model", &measures.labels.models)
}

/// Per prompt, in file order: % success for each model and across all models, then averages
/// of input and output tokens, cost, time and energy (null, unknown, when any model's answer
/// to the prompt has unknown energy).
pub fn prompt_summary(measures: &Measures) -> PolarsResult<DataFrame> {
    let lazy = concat(
        measures
            .parts
            .iter()
            .map(|p| p.clone().lazy())
            .collect::<Vec<_>>(),
        UnionArgs::default(),
    )?;
    let mut summary = lazy
        .clone()
        .group_by([col("prompt")])
        .agg([
            len().cast(DataType::UInt64).alias("results"),
            success_pct().alias("success_pct_all"),
            col("passed").sum().alias("passed_all"),
            col("passed").is_not_null().sum().alias("decided_all"),
            col("input_tokens")
                .cast(DataType::Float64)
                .mean()
                .alias("avg_input_tokens"),
            col("output_tokens")
                .cast(DataType::Float64)
                .mean()
                .alias("avg_output_tokens"),
            col("cost_usd").mean().alias("avg_cost_usd"),
            (col("latency_ms").mean() / lit(1000.0)).alias("avg_time_s"),
            // Across models: unknown when any model's is, rather than the mean of the others.
            unless_energy_unknown(energy_unknown().any(true), col("energy_wh").mean())
                .alias("avg_energy_wh"),
        ])
        .sort(["prompt"], SortMultipleOptions::default());
    let per_pair = lazy
        .group_by([col("model"), col("prompt")])
        .agg([success_pct().alias("pct")])
        .collect()?;
    let mut model_columns = Vec::new();
    for (key, model) in measures.labels.models.iter().enumerate() {
        let column = format!("success_pct[{model}]");
        let for_model = per_pair
            .clone()
            .lazy()
            .filter(col("model").eq(lit(key as u32)))
            .select([col("prompt"), col("pct").alias(column.as_str())]);
        let mut args = JoinArgs::new(JoinType::Left);
        args.maintain_order = MaintainOrderJoin::Left;
        summary = summary.join(for_model, [col("prompt")], [col("prompt")], args);
        model_columns.push(column);
    }
    let summary = summary.collect()?;
    // The per-model columns right after the prompt, as the specification lists them.
    let mut order: Vec<String> = vec!["prompt".into()];
    order.extend(model_columns);
    order.extend(
        [
            "results",
            "success_pct_all",
            "avg_input_tokens",
            "avg_output_tokens",
            "avg_cost_usd",
            "avg_time_s",
            "avg_energy_wh",
        ]
        .map(str::to_owned),
    );
    let mut summary = summary;
    insert_wilson(
        &mut summary,
        "success_pct_all",
        "success_all",
        "passed_all",
        "decided_all",
    )?;
    order.insert(
        order
            .iter()
            .position(|c| c == "success_pct_all")
            .map_or(0, |i| i + 1),
        "success_all_low_pct".into(),
    );
    order.insert(
        order
            .iter()
            .position(|c| c == "success_all_low_pct")
            .map_or(0, |i| i + 1),
        "success_all_high_pct".into(),
    );
    named(summary.select(order)?, "prompt", &measures.labels.prompts)
}

/// Per model (in the order of [`model_summary`]): how long answers took, in seconds, over the
/// results that have a time: how many, the minimum, quartiles, maximum and mean. What a box
/// plot of latencies draws.
pub fn latency_summary(measures: &Measures) -> PolarsResult<DataFrame> {
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
    let seconds = || col("latency_ms") / lit(1000.0);
    let quantile = |q: f64, name: &str| {
        seconds()
            .quantile(lit(q), QuantileMethod::Linear)
            .alias(name)
    };
    let df = lazy
        .filter(col("latency_ms").is_not_null())
        .group_by([col("model")])
        .agg([
            len().cast(DataType::UInt64).alias("timed"),
            seconds().min().alias("min_time_s"),
            quantile(0.25, "q1_time_s"),
            quantile(0.5, "median_time_s"),
            quantile(0.75, "q3_time_s"),
            seconds().max().alias("max_time_s"),
            seconds().mean().alias("mean_time_s"),
        ])
        .sort(["model"], SortMultipleOptions::default())
        .collect()?;
    named(df, "model", &measures.labels.models)
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
            c.passed.push(passed);
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
            ["prompt", "success_pct[a]", "success_pct[b]", "results"]
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
            c.passed.push(passed);
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
