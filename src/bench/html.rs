//! The benchmark section of `track report`: success per model with Wilson intervals, success
//! per template and model (when the runs have several templates), cost against success, the
//! model × prompt pass matrix (a column per model and template when there are several), how
//! prompts spread by success, latency, tokens, energy, the per-model and per-prompt tables of
//! `track query`, and the failures with their answers, templates and checks.

use super::columns as c;
use std::fmt::Write as _;

use polars::prelude::*;

use super::human;
use super::summary::{
    Measures, SuccessColumn, latency_summary, model_summary, prompt_summary, success_columns,
    template_matrix, template_summary,
};
use crate::output::{counted, thousands};
use crate::report::charts::{
    Bar, BarChart, BoxRow, DotChart, DotRow, Heatmap, Mark, Point, Scatter, Titles, bar_chart,
    box_plot, dot_chart, figure, heatmap, scatter,
};
use crate::report::columns::{try_counts, try_floats, try_sum, try_texts, try_total};
use crate::report::html::{TableOptions, escape, frame_table, maybe_number, number, truncate};
use crate::report::{Energy, ReportError, Section};
use crate::store::{FailureRow, RatedBenchResult, Store};

/// Prompts the pass matrix and the per-prompt table show at most: a file of 50,000 prompts
/// gets its hardest ones, and a note naming the command that prints all.
pub const MATRIX_PROMPTS: usize = 40;
/// Failures listed at most.
pub const LISTED_FAILURES: usize = 200;
/// Bytes of each failed answer shown.
const ANSWER_BYTES: usize = 2000;

/// The summaries the section draws, as a missing column's error names them.
const BY_MODEL: &str = "benchmark summary by model";
const BY_PROMPT: &str = "benchmark summary by prompt";
const LATENCY: &str = "benchmark latency summary";
const BY_TEMPLATE: &str = "benchmark summary by template and model";

/// The benchmark results of some runs, summarised.
pub struct BenchSection {
    runs: Vec<i64>,
    by_model: DataFrame,
    by_prompt: DataFrame,
    latency: DataFrame,
    /// Per template and model, when the results come from several templates.
    by_template: Option<DataFrame>,
    /// The per-model (and per-template) success columns of `by_prompt`, in order.
    success_columns: Vec<SuccessColumn>,
    /// The first results that did not pass, each with the expected output stored with it.
    failures: Vec<FailureRow>,
    /// The results people rated (`track rate`, `track view`), with what the checks said.
    rated: Vec<RatedBenchResult>,
}

impl BenchSection {
    /// Summarises the benchmark results of `runs` as `track query --by model|prompt` does.
    pub(crate) fn load(store: &Store, runs: &[i64]) -> Result<Self, ReportError> {
        let measures = Measures::load(store, runs).map_err(|e| ReportError::Measures(e.into()))?;
        let failures = store.bench_failures(runs, LISTED_FAILURES, ANSWER_BYTES)?;
        Ok(Self {
            runs: runs.to_vec(),
            by_model: model_summary(&measures)?,
            by_prompt: prompt_summary(&measures)?,
            latency: latency_summary(&measures)?,
            by_template: measures
                .labels
                .several_templates()
                .then(|| template_summary(&measures))
                .transpose()?,
            success_columns: success_columns(&measures.labels),
            failures,
            rated: store.rated_bench_results(runs)?,
        })
    }

    /// People's ratings beside the checks: how far they agree with each automatic verdict
    /// (Cohen's kappa), and the rated results. Nothing when no one rated a result.
    fn human_ratings(&self) -> Result<String, ReportError> {
        if self.rated.is_empty() {
            return Ok(String::new());
        }
        let mut out = String::from("<h3 id=\"bench-human\">Human ratings</h3>");
        let _ = write!(
            out,
            "<p>{} rated by people (<code>track rate</code>, <code>track view</code>). Their \
             pass or fail beside each automatic verdict: the share they agree on and Cohen's \
             kappa (1: always agree, 0: no better than chance; none when both always say the \
             same). <code>track query --by human</code> gives the same numbers.</p>",
            counted(self.rated.len() as u64, "rating")
        );
        out.push_str(&frame_table(
            &human::agreement_frame(&self.rated)?,
            TableOptions {
                id: "bench-agreement",
                caption: "Agreement of people with each automatic verdict",
                max_rows: 500,
            },
        ));
        out.push_str(&frame_table(
            &human::rated_frame(&self.rated)?,
            TableOptions {
                id: "bench-rated",
                caption: "Rated results: the outcome beside the person's verdict",
                max_rows: LISTED_FAILURES,
            },
        ));
        Ok(out)
    }

    /// The energy of all results, with its range; `None` when none was estimated, or when a
    /// model's is unknown (no parameter count): a total without it would look complete.
    pub(crate) fn energy(&self) -> Result<Option<Energy>, ReportError> {
        if !self.energy_unknown()?.is_empty() {
            return Ok(None);
        }
        let Some(wh) = try_sum(&self.by_model, BY_MODEL, c::ENERGY_WH)? else {
            return Ok(None);
        };
        Ok(Some(Energy {
            wh,
            min_wh: try_sum(&self.by_model, BY_MODEL, c::ENERGY_WH_MIN)?,
            max_wh: try_sum(&self.by_model, BY_MODEL, c::ENERGY_WH_MAX)?,
        }))
    }

    /// The models whose energy is unknown: they answered without a parameter count.
    fn energy_unknown(&self) -> Result<Vec<String>, ReportError> {
        let wh = try_floats(&self.by_model, BY_MODEL, c::ENERGY_WH)?;
        Ok(try_texts(&self.by_model, BY_MODEL, c::MODEL)?
            .into_iter()
            .zip(wh)
            .filter_map(|(model, wh)| wh.is_none().then_some(model))
            .collect())
    }

    fn run_list(&self) -> String {
        let ids: Vec<String> = self.runs.iter().map(i64::to_string).collect();
        ids.join(",")
    }

    /// `9 results of 3 models on 3 prompts: 7 passed, 1 failed, 1 error.`
    fn overview(&self) -> Result<String, ReportError> {
        let (results, passed, failed, errors) = (
            try_total(&self.by_model, BY_MODEL, c::RESULTS)?,
            try_total(&self.by_model, BY_MODEL, c::PASSED)?,
            try_total(&self.by_model, BY_MODEL, c::FAILED)?,
            try_total(&self.by_model, BY_MODEL, c::ERRORS)?,
        );
        Ok(format!(
            "<p>{} results of {} on {}: {} passed, {} failed, {}. Success counts passed among \
             passed and failed; errors (no answer to test) are apart. The same numbers as \
             <code>track query --by model --run {}</code>.</p>",
            thousands(results),
            counted(self.by_model.height() as u64, "model"),
            counted(self.by_prompt.height() as u64, "case"),
            thousands(passed),
            thousands(failed),
            counted(errors, "error"),
            escape(&self.run_list())
        ))
    }

    /// Success per model, dots with their Wilson 95 % intervals, and the per-model table.
    fn success_figure(&self) -> Result<String, ReportError> {
        let models = try_texts(&self.by_model, BY_MODEL, c::MODEL)?;
        let (pct, low, high) = (
            try_floats(&self.by_model, BY_MODEL, c::SUCCESS_PCT)?,
            try_floats(&self.by_model, BY_MODEL, c::SUCCESS_LOW_PCT)?,
            try_floats(&self.by_model, BY_MODEL, c::SUCCESS_HIGH_PCT)?,
        );
        let rows = models
            .iter()
            .enumerate()
            .map(|(i, model)| DotRow {
                label: model.clone(),
                marks: vec![pct[i].map(|value| Mark {
                    value,
                    low: low[i],
                    high: high[i],
                    tip: format!(
                        "{model}: {} % success, 95 % interval {}–{} %",
                        number(c::SUCCESS_PCT, value),
                        maybe_number(c::SUCCESS_LOW_PCT, low[i]),
                        maybe_number(c::SUCCESS_HIGH_PCT, high[i])
                    ),
                })],
            })
            .collect();
        let chart = dot_chart(&DotChart {
            titles: Titles {
                id: "bench-success-chart",
                title: "Success per model, with Wilson 95 % intervals",
                x: "success (% of passed + failed)",
                y: "model",
            },
            series: vec![],
            rows,
            domain: (0.0, 100.0),
            reference: None,
        });
        let table = frame_table(
            &self.by_model,
            TableOptions {
                id: "bench-models",
                caption: "Per model (as track query --by model)",
                max_rows: usize::MAX,
            },
        );
        Ok(figure(
            "bench-success",
            "Success per model",
            &chart,
            "",
            &table,
        ))
    }

    /// Success per template and model: a dot per template on each model's row, with its Wilson
    /// interval, and the template × model table; nothing when the runs have one template.
    fn template_figure(&self) -> Result<String, ReportError> {
        let Some(by_template) = &self.by_template else {
            return Ok(String::new());
        };
        let templates = try_texts(by_template, BY_TEMPLATE, c::TEMPLATE)?;
        let models = try_texts(by_template, BY_TEMPLATE, c::MODEL)?;
        let (pct, low, high) = (
            try_floats(by_template, BY_TEMPLATE, c::SUCCESS_PCT)?,
            try_floats(by_template, BY_TEMPLATE, c::SUCCESS_LOW_PCT)?,
            try_floats(by_template, BY_TEMPLATE, c::SUCCESS_HIGH_PCT)?,
        );
        let (series, rows) = template_dots(&templates, &models, [&pct, &low, &high]);
        let chart = dot_chart(&DotChart {
            titles: Titles {
                id: "bench-template-chart",
                title: "Success per template and model, with Wilson 95 % intervals",
                x: "success (% of passed + failed)",
                y: "model",
            },
            series,
            rows,
            domain: (0.0, 100.0),
            reference: None,
        });
        let table = frame_table(
            &template_matrix(by_template)?,
            TableOptions {
                id: "bench-templates",
                caption: "Per template and model: % success (95 % interval); every column: \
                          track query --by template",
                max_rows: usize::MAX,
            },
        );
        let note = format!(
            "Each template ran on every case with every model; two templates are compared case \
             by case with McNemar's test by track diff RUN --templates A B (run {}).",
            self.run_list()
        );
        Ok(figure(
            "bench-templates-figure",
            "Templates × models",
            &chart,
            &note,
            &table,
        ))
    }

    /// Cost against success: the cheapest model that is good enough is on the frontier.
    fn cost_figure(&self) -> Result<String, ReportError> {
        let models = try_texts(&self.by_model, BY_MODEL, c::MODEL)?;
        let cost = try_floats(&self.by_model, BY_MODEL, c::TOTAL_COST_USD)?;
        let (pct, low, high) = (
            try_floats(&self.by_model, BY_MODEL, c::SUCCESS_PCT)?,
            try_floats(&self.by_model, BY_MODEL, c::SUCCESS_LOW_PCT)?,
            try_floats(&self.by_model, BY_MODEL, c::SUCCESS_HIGH_PCT)?,
        );
        let points: Vec<Point> = models
            .iter()
            .enumerate()
            .filter_map(|(i, model)| {
                let (x, y) = (cost[i]?, pct[i]?);
                Some(Point {
                    label: model.clone(),
                    x,
                    y,
                    y_low: low[i],
                    y_high: high[i],
                    tip: format!(
                        "{model}: cost ${}, success {} %",
                        number(c::TOTAL_COST_USD, x),
                        number(c::SUCCESS_PCT, y)
                    ),
                })
            })
            .collect();
        let chart = scatter(&Scatter {
            titles: Titles {
                id: "bench-cost-chart",
                title: "Cost against success per model",
                x: "total cost of the results ($)",
                y: "success (%)",
            },
            points,
            y_domain: (0.0, 100.0),
            frontier: true,
        });
        let note = "The line joins the models that no other model beats on both cost and \
                    success: the cheapest choice at each level of success. Cost is what the \
                    calls cost when made (cache hits included); numbers in the table above.";
        Ok(figure(
            "bench-cost",
            "Cost against success",
            &chart,
            note,
            "",
        ))
    }

    /// The prompts the matrix shows: all in file order when few, else the hardest (prompts
    /// with errors only, which have no rate, come last: the failures list names them).
    fn shown_prompts(&self) -> PolarsResult<DataFrame> {
        if self.by_prompt.height() <= MATRIX_PROMPTS {
            return Ok(self.by_prompt.clone());
        }
        let options = SortMultipleOptions::default()
            .with_nulls_last(true)
            .with_maintain_order(true);
        Ok(self
            .by_prompt
            .sort([c::SUCCESS_PCT_ALL], options)?
            .head(Some(MATRIX_PROMPTS)))
    }

    /// The pass matrix: per prompt and model, the share of repeats that passed; a note
    /// instead when the hardest prompts cannot be picked (a missing column is an error).
    fn matrix_figure(&self) -> Result<String, ReportError> {
        let shown = match self.shown_prompts() {
            Ok(shown) => shown,
            Err(e) => {
                return Ok(format!(
                    "<p class=\"note\">No pass matrix: {}</p>",
                    escape(&ReportError::from(e).to_string())
                ));
            }
        };
        // A column per model, or per model and template when there are several: two wordings
        // of a case are never pooled.
        let per_model = self
            .success_columns
            .iter()
            .map(|column| try_floats(&shown, BY_PROMPT, &column.name))
            .collect::<Result<Vec<_>, _>>()?;
        let models: Vec<String> = self
            .success_columns
            .iter()
            .map(|column| match &column.template {
                Some(template) => format!("{} · {template}", column.model),
                None => column.model.clone(),
            })
            .collect();
        let prompts = try_texts(&shown, BY_PROMPT, c::PROMPT)?;
        let cells = (0..prompts.len())
            .map(|p| per_model.iter().map(|column| column[p]).collect())
            .collect();
        let chart = heatmap(&Heatmap {
            titles: Titles {
                id: "bench-matrix-chart",
                title: "Pass matrix: % of repeats passed, per case and model",
                x: "model",
                y: "case",
            },
            columns: models,
            rows: prompts,
            cells,
            domain: (0.0, 100.0),
            value_column: c::SUCCESS_PCT,
        });
        let note = if shown.height() < self.by_prompt.height() {
            format!(
                "The {MATRIX_PROMPTS} cases with the lowest success across models, of {}. \
                 Every case: track query --by case --format csv --run {}",
                thousands(self.by_prompt.height() as u64),
                self.run_list()
            )
        } else {
            "Each cell: the share of the case's repeats on that model (and template, when there \
             are several) that passed (errors apart); – where every result was an error."
                .to_owned()
        };
        let table = frame_table(
            &shown,
            TableOptions {
                id: "bench-prompts",
                caption: "Per case (as track query --by case)",
                max_rows: MATRIX_PROMPTS,
            },
        );
        Ok(figure("bench-matrix", "Pass matrix", &chart, &note, &table))
    }

    /// How all prompts spread by their success across models, in tenths.
    fn spread_figure(&self) -> Result<String, ReportError> {
        let mut bins = [0u64; 11];
        for pct in try_floats(&self.by_prompt, BY_PROMPT, c::SUCCESS_PCT_ALL)? {
            let bin = pct.map_or(10, |p| ((p / 10.0).floor() as usize).min(9));
            bins[bin] += 1;
        }
        let label = |b: usize| match b {
            10 => "no rate (errors only)".to_owned(),
            9 => "90–100 %".to_owned(),
            b => format!("{}–{} %", b * 10, b * 10 + 10),
        };
        let bars: Vec<Bar> = (0..11)
            .filter(|&b| b < 10 || bins[10] > 0)
            .map(|b| Bar {
                label: label(b),
                parts: vec![(
                    bins[b] as f64,
                    format!("{}: {} cases", label(b), thousands(bins[b])),
                )],
            })
            .collect();
        let chart = bar_chart(&BarChart {
            titles: Titles {
                id: "bench-spread-chart",
                title: "Cases by their success across models",
                x: "cases",
                y: "success across models",
            },
            series: vec![],
            bars,
        });
        let note = format!(
            "All {} cases, by success_pct_all; each bar's count is in its tooltip.",
            thousands(self.by_prompt.height() as u64)
        );
        Ok(figure(
            "bench-spread",
            "How cases spread by success",
            &chart,
            &note,
            "",
        ))
    }

    /// Latency per model as box plots, and their quartiles as a table.
    fn latency_figure(&self) -> Result<String, ReportError> {
        let models = try_texts(&self.latency, LATENCY, c::MODEL)?;
        let column = |name: &str| try_floats(&self.latency, LATENCY, name);
        let (min, q1, median, q3, max) = (
            column(c::MIN_TIME_S)?,
            column(c::Q1_TIME_S)?,
            column(c::MEDIAN_TIME_S)?,
            column(c::Q3_TIME_S)?,
            column(c::MAX_TIME_S)?,
        );
        let rows: Vec<BoxRow> = models
            .iter()
            .enumerate()
            .filter_map(|(i, model)| {
                let row = BoxRow {
                    label: model.clone(),
                    min: min[i]?,
                    q1: q1[i]?,
                    median: median[i]?,
                    q3: q3[i]?,
                    max: max[i]?,
                    tip: String::new(),
                };
                let tip = format!(
                    "{model}: median {} s, quartiles {}–{} s, range {}–{} s",
                    number(c::MEDIAN_TIME_S, row.median),
                    number(c::Q1_TIME_S, row.q1),
                    number(c::Q3_TIME_S, row.q3),
                    number(c::MIN_TIME_S, row.min),
                    number(c::MAX_TIME_S, row.max)
                );
                Some(BoxRow { tip, ..row })
            })
            .collect();
        let titles = Titles {
            id: "bench-latency-chart",
            title: "Answer time per model",
            x: "seconds per answer",
            y: "model",
        };
        let table = frame_table(
            &self.latency,
            TableOptions {
                id: "bench-latency",
                caption: "Answer time per model (s)",
                max_rows: usize::MAX,
            },
        );
        let note = "Boxes span the quartiles, the bar is the median, whiskers reach the \
                    fastest and slowest answers. Cached answers keep the time they first took.";
        Ok(figure(
            "bench-latency-figure",
            "Latency",
            &box_plot(titles, &rows),
            note,
            &table,
        ))
    }

    /// Input and output tokens per model, stacked.
    fn tokens_figure(&self) -> Result<String, ReportError> {
        let models = try_texts(&self.by_model, BY_MODEL, c::MODEL)?;
        let (input, output) = (
            try_counts(&self.by_model, BY_MODEL, c::INPUT_TOKENS)?,
            try_counts(&self.by_model, BY_MODEL, c::OUTPUT_TOKENS)?,
        );
        let bars = models
            .iter()
            .enumerate()
            .map(|(i, model)| Bar {
                label: model.clone(),
                parts: vec![
                    (
                        input[i] as f64,
                        format!("{model}: {} input tokens", thousands(input[i])),
                    ),
                    (
                        output[i] as f64,
                        format!("{model}: {} output tokens", thousands(output[i])),
                    ),
                ],
            })
            .collect();
        let chart = bar_chart(&BarChart {
            titles: Titles {
                id: "bench-tokens-chart",
                title: "Tokens per model",
                x: "tokens",
                y: "model",
            },
            series: vec!["input".into(), "output".into()],
            bars,
        });
        let note = "Totals over the results; the per-model table above has the numbers.";
        Ok(figure("bench-tokens", "Tokens", &chart, note, ""))
    }

    /// Energy per model, with the range of its estimate.
    fn energy_figure(&self) -> Result<String, ReportError> {
        let models = try_texts(&self.by_model, BY_MODEL, c::MODEL)?;
        let (wh, low, high) = (
            try_floats(&self.by_model, BY_MODEL, c::ENERGY_WH)?,
            try_floats(&self.by_model, BY_MODEL, c::ENERGY_WH_MIN)?,
            try_floats(&self.by_model, BY_MODEL, c::ENERGY_WH_MAX)?,
        );
        let unknown = self.energy_unknown()?;
        let unknown_note = if unknown.is_empty() {
            String::new()
        } else {
            format!(
                " Energy is unknown (–) for {}: no parameter count was given (config.yaml \
                 without `parameters:`), so the total is unknown too.",
                unknown
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        if wh.iter().all(Option::is_none) {
            return Ok(format!(
                "<p class=\"note\">No energy was estimated for these results.{}</p>",
                escape(&unknown_note)
            ));
        }
        let max = high
            .iter()
            .chain(&wh)
            .flatten()
            .fold(0.0, |a: f64, b| a.max(*b));
        let rows = models
            .iter()
            .enumerate()
            .map(|(i, model)| DotRow {
                label: model.clone(),
                marks: vec![wh[i].map(|value| Mark {
                    value,
                    low: low[i],
                    high: high[i],
                    tip: format!(
                        "{model}: {} Wh ({}–{})",
                        number(c::ENERGY_WH, value),
                        maybe_number(c::ENERGY_WH_MIN, low[i]),
                        maybe_number(c::ENERGY_WH_MAX, high[i])
                    ),
                })],
            })
            .collect();
        let chart = dot_chart(&DotChart {
            titles: Titles {
                id: "bench-energy-chart",
                title: "Energy per model, with the range of the estimate",
                x: "energy (Wh)",
                y: "model",
            },
            series: vec![],
            rows,
            domain: (0.0, crate::report::svg::headroom(max)),
            reference: None,
        });
        let note = format!(
            "Estimated per call by the run's energy method; the per-model table above has the \
             numbers.{unknown_note}"
        );
        Ok(figure("bench-energy", "Energy", &chart, &note, ""))
    }

    /// The results that did not pass, bounded, with expected and actual answers.
    fn failures_list(&self) -> Result<String, ReportError> {
        let (failed, errors) = (
            try_total(&self.by_model, BY_MODEL, c::FAILED)?,
            try_total(&self.by_model, BY_MODEL, c::ERRORS)?,
        );
        let mut out = String::from("<h3 id=\"bench-failures\">Failures and errors</h3>");
        if failed + errors == 0 {
            out.push_str("<p>Every result passed.</p>");
            return Ok(out);
        }
        let _ = write!(
            out,
            "<p>{} did not pass: {} failed, {}. {} Every result: <code>track export csv \
             --run {}</code>.</p>",
            counted(failed + errors, "result"),
            thousands(failed),
            counted(errors, "error"),
            if self.failures.len() as u64 == failed + errors {
                "All are listed.".to_owned()
            } else {
                format!("The first {} are listed.", self.failures.len())
            },
            escape(&self.run_list())
        );
        out.push_str(&self.predating_note());
        for failure in &self.failures {
            out.push_str(&self.failure_item(failure));
        }
        Ok(out)
    }

    /// The note, once, when some listed failures were recorded before expected outputs were
    /// stored with results: their expected output shows as –.
    fn predating_note(&self) -> String {
        let mut runs: Vec<i64> = self
            .failures
            .iter()
            .filter(|f| f.expected.is_none())
            .map(|f| f.run_id)
            .collect();
        runs.dedup();
        if runs.is_empty() {
            return String::new();
        }
        let runs: Vec<String> = runs.iter().map(i64::to_string).collect();
        format!(
            "<p class=\"note\">{noun} {} {verb} expected outputs stored with the results: \
             their Expected shows –; the Why quotes it where the test failed on it.</p>",
            escape(&runs.join(", ")),
            noun = if runs.len() == 1 { "Run" } else { "Runs" },
            verb = if runs.len() == 1 {
                "predates"
            } else {
                "predate"
            },
        )
    }

    /// One failure as a collapsible block.
    fn failure_item(&self, f: &FailureRow) -> String {
        // A result recorded before expected outputs were stored has none: never the file's
        // (it may have moved or changed since), but – and the note of `failures_list`.
        let expected = f
            .expected
            .as_deref()
            .map_or_else(|| "–".to_owned(), |e| truncate(e, 2000));
        let answer = f.answer.as_deref().map_or_else(
            || "(no answer)".to_owned(),
            |a| {
                let a = a.trim_end_matches('\u{FFFD}');
                if a.len() >= ANSWER_BYTES - 4 {
                    format!("{a}…")
                } else {
                    a.to_owned()
                }
            },
        );
        let template = f
            .template
            .as_deref()
            .map_or_else(String::new, |t| format!(" · {}", escape(t)));
        format!(
            "<details class=\"failure\"><summary><span class=\"status-{status}\">{status}</span> \
             {model}{template} · {prompt} · repeat {repeat}</summary><dl>{template_row}\
             <dt>Method</dt><dd>{method}</dd>{checks}\
             <dt>Expected</dt><dd><pre>{expected}</pre></dd><dt>Answer</dt><dd><pre>{answer}</pre></dd>\
             <dt>Why</dt><dd>{why}</dd>{person}<dt>Run</dt><dd>{run}</dd></dl></details>",
            status = escape(f.status.as_str()),
            model = escape(&f.model_ref),
            template_row = f.template.as_deref().map_or_else(String::new, |t| format!(
                "<dt>Template</dt><dd>{}</dd>",
                escape(t)
            )),
            checks = checks_item(f),
            prompt = escape(&f.prompt_name),
            repeat = f.repeat_index,
            method = escape(&f.method),
            expected = escape(&expected),
            answer = escape(&answer),
            why = escape(f.detail.as_deref().unwrap_or("–")),
            person = f.rating.as_ref().map_or_else(String::new, |r| {
                let said = [
                    r.verdict.map(|v| v.as_str().to_owned()),
                    r.score.map(|s| format!("{s}/5")),
                    r.comment.clone(),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" · ");
                format!(
                    "<dt>Person</dt><dd>{} ({})</dd>",
                    escape(&said),
                    escape(&r.rater)
                )
            }),
            run = f.run_id,
        )
    }
}

/// The checks of a failure with several: `<dt>Checks</dt>` and a list, in the file's order, of
/// each check's status, method, expected value, score, weight and reason; nothing for a result
/// with one check (its method, expected and why are the failure's own).
fn checks_item(f: &FailureRow) -> String {
    if f.checks.is_empty() {
        return String::new();
    }
    let items: String = f
        .checks
        .iter()
        .map(|check| {
            let expected = check.expected.as_deref().map_or_else(String::new, |e| {
                format!(" <code>{}</code>", escape(&truncate(e, 200)))
            });
            let score = check
                .score
                .map_or_else(String::new, |s| format!(", score {s:.2}"));
            let weight = if check.weight == 1.0 {
                String::new()
            } else {
                format!(", weight {}", check.weight)
            };
            let reason = check
                .reason
                .as_deref()
                .map_or_else(String::new, |r| format!(": {}", escape(r)));
            format!(
                "<li><span class=\"status-{status}\">{status}</span> {method}{expected}\
                 {score}{weight}{reason}</li>",
                status = escape(check.outcome.as_str()),
                method = escape(&check.method),
            )
        })
        .collect();
    format!("<dt>Checks</dt><dd><ul class=\"checks\">{items}</ul></dd>")
}

impl Section for BenchSection {
    fn anchor(&self) -> &'static str {
        "bench"
    }

    fn heading(&self) -> String {
        let noun = if self.runs.len() == 1 { "run" } else { "runs" };
        format!("Benchmark ({noun} {})", self.run_list().replace(',', ", "))
    }

    fn body(&self) -> Result<String, ReportError> {
        if self.by_model.height() == 0 {
            return Ok("<p>These runs recorded no results yet.</p>".to_owned());
        }
        Ok([
            self.overview()?,
            self.success_figure()?,
            self.template_figure()?,
            self.cost_figure()?,
            self.matrix_figure()?,
            self.spread_figure()?,
            self.latency_figure()?,
            self.tokens_figure()?,
            self.energy_figure()?,
            self.human_ratings()?,
            self.failures_list()?,
        ]
        .concat())
    }
}

/// The dots of the templates × models chart: a series per template and a row per model, in
/// the summary's order, each mark a success rate with its interval (`[pct, low, high]`).
fn template_dots(
    templates: &[String],
    models: &[String],
    [pct, low, high]: [&[Option<f64>]; 3],
) -> (Vec<String>, Vec<DotRow>) {
    let mut series: Vec<String> = Vec::new();
    let mut rows: Vec<DotRow> = Vec::new();
    for (template, model) in templates.iter().zip(models) {
        if !series.contains(template) {
            series.push(template.clone());
        }
        if !rows.iter().any(|r| r.label == *model) {
            rows.push(DotRow {
                label: model.clone(),
                marks: Vec::new(),
            });
        }
    }
    for row in &mut rows {
        row.marks = vec![None; series.len()];
    }
    for i in 0..templates.len() {
        let (Some(s), Some(r)) = (
            series.iter().position(|t| *t == templates[i]),
            rows.iter().position(|r| r.label == models[i]),
        ) else {
            continue;
        };
        rows[r].marks[s] = pct[i].map(|value| Mark {
            value,
            low: low[i],
            high: high[i],
            tip: format!(
                "{} with {}: {} % success, 95 % interval {}–{} %",
                models[i],
                templates[i],
                number(c::SUCCESS_PCT, value),
                maybe_number(c::SUCCESS_LOW_PCT, low[i]),
                maybe_number(c::SUCCESS_HIGH_PCT, high[i])
            ),
        });
    }
    (series, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BenchResultRow, Outcome};

    fn row(run_id: i64, prompt: u32, outcome: Outcome, expected: Option<&str>) -> BenchResultRow {
        BenchResultRow {
            run_id,
            model_index: 0,
            prompt_index: prompt,
            repeat_index: 0,
            model_ref: "openai:m".into(),
            provider: "openai".into(),
            model_id: "m".into(),
            prompt_name: format!("p{prompt}"),
            method: "exact".into(),
            call_id: None,
            cache_hit: false,
            outcome,
            detail: Some("expected `4`, got `five`".into()),
            latency_ms: Some(100.0),
            input_tokens: Some(10),
            output_tokens: Some(20),
            tokens_estimated: false,
            cost_usd: Some(0.5),
            paid_usd: Some(0.5),
            energy_wh: Some(1.0),
            energy_wh_min: Some(0.5),
            energy_wh_max: Some(1.5),
            energy_method: Some("ecologits-0.9".into()),
            judge_call_id: None,
            judge_score: None,
            judge_cost_usd: None,
            expected: expected.map(str::to_owned),
            template_index: 0,
            template_name: None,
            score: None,
            checks: Vec::new(),
        }
    }

    /// Run 1 recorded before expected outputs were stored (NULL), run 2 after.
    fn store_fixture() -> (Store, [i64; 2]) {
        let mut store = Store::open_in_memory().unwrap();
        let old = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let new = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        store
            .insert_bench_results(&[
                row(old, 0, Outcome::Failed, None),
                row(old, 1, Outcome::Error, None),
                row(old, 2, Outcome::Passed, None),
                row(new, 0, Outcome::Failed, Some("4")),
                row(new, 1, Outcome::Passed, Some("4")),
            ])
            .unwrap();
        (store, [old, new])
    }

    #[test]
    fn failures_show_the_stored_expected_output_and_old_runs_a_note_once() {
        let (store, [old, new]) = store_fixture();
        let body = BenchSection::load(&store, &[old, new])
            .unwrap()
            .body()
            .unwrap();
        assert_eq!(body.matches("<dt>Expected</dt><dd><pre>4</pre>").count(), 1);
        assert_eq!(body.matches("<dt>Expected</dt><dd><pre>–</pre>").count(), 2);
        assert_eq!(body.matches("predates expected outputs").count(), 1);
        assert!(body.contains(&format!("Run {old} predates")));
        let recent = BenchSection::load(&store, &[new]).unwrap().body().unwrap();
        assert!(
            !recent.contains("predate"),
            "no note when every result has one"
        );
    }

    #[test]
    fn several_templates_get_their_section_matrix_columns_and_failed_checks() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let check = |method: &str, outcome, reason: Option<&str>| crate::store::CheckRow {
            method: method.into(),
            expected: Some("4".into()),
            outcome,
            score: None,
            weight: 1.0,
            reason: reason.map(str::to_owned),
        };
        let mut rows = Vec::new();
        for (t, template) in ["terse", "steps"].iter().enumerate() {
            for prompt in 0..2 {
                // steps fails p0 on its second check.
                let failed = t == 1 && prompt == 0;
                let mut r = row(run, prompt, Outcome::of_test(!failed), Some("4"));
                r.template_index = t as u32;
                r.template_name = Some((*template).into());
                r.method = "checks".into();
                r.checks = vec![
                    check("exact", Outcome::Passed, None),
                    if failed {
                        check(
                            "not-contains",
                            Outcome::Failed,
                            Some("the answer says sorry"),
                        )
                    } else {
                        check("not-contains", Outcome::Passed, None)
                    },
                ];
                rows.push(r);
            }
        }
        store.insert_bench_results(&rows).unwrap();
        let body = BenchSection::load(&store, &[run]).unwrap().body().unwrap();
        assert!(body.contains("Templates × models"), "{body}");
        assert!(
            body.contains("openai:m with steps: 50.0 % success"),
            "{body}"
        );
        assert!(
            body.contains("openai:m with terse: 100.0 % success"),
            "{body}"
        );
        // The pass matrix: a column per model and template, p0 failed with steps only.
        assert!(body.contains("openai:m · terse") && body.contains("openai:m · steps"));
        // The failure names its template and its failed check, with why.
        let failure = body.split("<details class=\"failure\">").nth(1).unwrap();
        assert!(failure.contains("openai:m · steps · p0"), "{failure}");
        assert!(
            failure.contains("<dt>Template</dt><dd>steps</dd>"),
            "{failure}"
        );
        assert!(
            failure.contains(
                "<span class=\"status-failed\">failed</span> not-contains <code>4</code>: \
                 the answer says sorry"
            ),
            "{failure}"
        );
        assert!(
            failure.contains("<span class=\"status-passed\">passed</span> exact"),
            "{failure}"
        );
        // One template: no such section.
        let (store, runs) = store_fixture();
        let plain = BenchSection::load(&store, &runs).unwrap().body().unwrap();
        assert!(!plain.contains("Templates × models"));
        assert!(!plain.contains("<dt>Checks</dt>") && !plain.contains("<dt>Template</dt>"));
    }

    #[test]
    fn a_missing_summary_column_is_an_error_naming_it() {
        let (store, runs) = store_fixture();
        let mut section = BenchSection::load(&store, &runs).unwrap();
        section.by_model = section.by_model.drop(c::SUCCESS_LOW_PCT).unwrap();
        let error = section.body().unwrap_err();
        assert!(
            matches!(&error, ReportError::MissingColumn { column, table }
                if column == c::SUCCESS_LOW_PCT && table == BY_MODEL),
            "{error:?}"
        );
        let mut section = BenchSection::load(&store, &runs).unwrap();
        section.by_prompt = section
            .by_prompt
            .drop(&c::success_pct_of("openai:m"))
            .unwrap();
        let error = section.body().unwrap_err().to_string();
        assert!(
            error.contains("success_pct[openai:m]") && error.contains(BY_PROMPT),
            "{error}"
        );
        let mut section = BenchSection::load(&store, &runs).unwrap();
        section.by_model = section.by_model.drop(c::ENERGY_WH).unwrap();
        assert!(section.energy().is_err(), "the header's energy too");
    }
}
