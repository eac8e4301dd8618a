//! The benchmark section of `track report`: success per model with Wilson intervals, cost against success,
//! the model × prompt pass matrix, how prompts spread by success, latency, tokens, energy,
//! the per-model and per-prompt tables of `track query`, and the failures with their answers.

use std::collections::HashMap;
use std::fmt::Write as _;

use polars::prelude::*;

use super::summary::{Measures, latency_summary, model_summary, prompt_summary};
use crate::report::charts::{
    Bar, BarChart, BoxRow, DotChart, DotRow, Heatmap, Mark, Point, Scatter, Titles, bar_chart,
    box_plot, dot_chart, figure, heatmap, scatter,
};
use crate::report::columns::{counts, floats, sum, texts, total};
use crate::report::html::{
    TableOptions, counted, escape, frame_table, maybe_number, number, thousands, truncate,
};
use crate::report::{Energy, ReportError, Section};
use crate::store::{FailureRow, Store};

/// Prompts the pass matrix and the per-prompt table show at most: a file of 50,000 prompts
/// gets its hardest ones, and a note naming the command that prints all.
pub const MATRIX_PROMPTS: usize = 40;
/// Failures listed at most.
pub const LISTED_FAILURES: usize = 200;
/// Bytes of each failed answer shown.
const ANSWER_BYTES: usize = 2000;

/// The benchmark results of some runs, summarised.
pub struct BenchSection {
    runs: Vec<i64>,
    by_model: DataFrame,
    by_prompt: DataFrame,
    latency: DataFrame,
    failures: Vec<FailureRow>,
    /// Expected outputs by prompt name, from benchmark files that are still as they ran.
    expected: HashMap<String, String>,
}

impl BenchSection {
    /// Summarises the benchmark results of `runs` as `track query --by model|prompt` does.
    pub fn load(store: &Store, runs: &[i64]) -> Result<Self, ReportError> {
        let measures = Measures::load(store, runs).map_err(ReportError::Measures)?;
        let failures = store.bench_failures(runs, LISTED_FAILURES, ANSWER_BYTES)?;
        let expected = if failures.is_empty() {
            HashMap::new()
        } else {
            expected_outputs(store, runs)
        };
        Ok(Self {
            runs: runs.to_vec(),
            by_model: model_summary(&measures)?,
            by_prompt: prompt_summary(&measures)?,
            latency: latency_summary(&measures)?,
            failures,
            expected,
        })
    }

    /// The energy of all results, with its range; `None` when none was estimated, or when a
    /// model's is unknown (no parameter count): a total without it would look complete.
    pub fn energy(&self) -> Option<Energy> {
        if !self.energy_unknown().is_empty() {
            return None;
        }
        Some(Energy {
            wh: sum(&self.by_model, "energy_wh")?,
            min_wh: sum(&self.by_model, "energy_wh_min"),
            max_wh: sum(&self.by_model, "energy_wh_max"),
        })
    }

    /// The models whose energy is unknown: they answered without a parameter count.
    fn energy_unknown(&self) -> Vec<String> {
        let wh = floats(&self.by_model, "energy_wh");
        texts(&self.by_model, "model")
            .into_iter()
            .zip(wh)
            .filter_map(|(model, wh)| wh.is_none().then_some(model))
            .collect()
    }

    fn run_list(&self) -> String {
        let ids: Vec<String> = self.runs.iter().map(i64::to_string).collect();
        ids.join(",")
    }

    /// `9 results of 3 models on 3 prompts: 7 passed, 1 failed, 1 error.`
    fn overview(&self) -> String {
        let (results, passed, failed, errors) = (
            total(&self.by_model, "results"),
            total(&self.by_model, "passed"),
            total(&self.by_model, "failed"),
            total(&self.by_model, "errors"),
        );
        format!(
            "<p>{} results of {} on {}: {} passed, {} failed, {}. Success counts passed among \
             passed and failed; errors (no answer to test) are apart. The same numbers as \
             <code>track query --by model --run {}</code>.</p>",
            thousands(results),
            counted(self.by_model.height() as u64, "model"),
            counted(self.by_prompt.height() as u64, "prompt"),
            thousands(passed),
            thousands(failed),
            counted(errors, "error"),
            escape(&self.run_list())
        )
    }

    /// Success per model, dots with their Wilson 95 % intervals, and the per-model table.
    fn success_figure(&self) -> String {
        let models = texts(&self.by_model, "model");
        let (pct, low, high) = (
            floats(&self.by_model, "success_pct"),
            floats(&self.by_model, "success_low_pct"),
            floats(&self.by_model, "success_high_pct"),
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
                        number("success_pct", value),
                        maybe_number("success_low_pct", low[i]),
                        maybe_number("success_high_pct", high[i])
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
        figure("bench-success", "Success per model", &chart, "", &table)
    }

    /// Cost against success: the cheapest model that is good enough is on the frontier.
    fn cost_figure(&self) -> String {
        let models = texts(&self.by_model, "model");
        let cost = floats(&self.by_model, "total_cost_usd");
        let (pct, low, high) = (
            floats(&self.by_model, "success_pct"),
            floats(&self.by_model, "success_low_pct"),
            floats(&self.by_model, "success_high_pct"),
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
                        number("total_cost_usd", x),
                        number("success_pct", y)
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
        figure("bench-cost", "Cost against success", &chart, note, "")
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
            .sort(["success_pct_all"], options)?
            .head(Some(MATRIX_PROMPTS)))
    }

    /// The pass matrix: per prompt and model, the share of repeats that passed.
    fn matrix_figure(&self) -> Result<String, ReportError> {
        let shown = self.shown_prompts()?;
        let models = texts(&self.by_model, "model");
        let per_model: Vec<Vec<Option<f64>>> = models
            .iter()
            .map(|m| floats(&shown, &format!("success_pct[{m}]")))
            .collect();
        let prompts = texts(&shown, "prompt");
        let cells = (0..prompts.len())
            .map(|p| per_model.iter().map(|column| column[p]).collect())
            .collect();
        let chart = heatmap(&Heatmap {
            titles: Titles {
                id: "bench-matrix-chart",
                title: "Pass matrix: % of repeats passed, per prompt and model",
                x: "model",
                y: "prompt",
            },
            columns: models,
            rows: prompts,
            cells,
            domain: (0.0, 100.0),
            value_column: "success_pct",
        });
        let note = if shown.height() < self.by_prompt.height() {
            format!(
                "The {MATRIX_PROMPTS} prompts with the lowest success across models, of {}. \
                 Every prompt: track query --by prompt --format csv --run {}",
                thousands(self.by_prompt.height() as u64),
                self.run_list()
            )
        } else {
            "Each cell: the share of the prompt's repeats on that model that passed (errors \
             apart); – where every result was an error."
                .to_owned()
        };
        let table = frame_table(
            &shown,
            TableOptions {
                id: "bench-prompts",
                caption: "Per prompt (as track query --by prompt)",
                max_rows: MATRIX_PROMPTS,
            },
        );
        Ok(figure("bench-matrix", "Pass matrix", &chart, &note, &table))
    }

    /// How all prompts spread by their success across models, in tenths.
    fn spread_figure(&self) -> String {
        let mut bins = [0u64; 11];
        for pct in floats(&self.by_prompt, "success_pct_all") {
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
                    format!("{}: {} prompts", label(b), thousands(bins[b])),
                )],
            })
            .collect();
        let chart = bar_chart(&BarChart {
            titles: Titles {
                id: "bench-spread-chart",
                title: "Prompts by their success across models",
                x: "prompts",
                y: "success across models",
            },
            series: vec![],
            bars,
        });
        let note = format!(
            "All {} prompts, by success_pct_all; each bar's count is in its tooltip.",
            thousands(self.by_prompt.height() as u64)
        );
        figure(
            "bench-spread",
            "How prompts spread by success",
            &chart,
            &note,
            "",
        )
    }

    /// Latency per model as box plots, and their quartiles as a table.
    fn latency_figure(&self) -> String {
        let models = texts(&self.latency, "model");
        let column = |name: &str| floats(&self.latency, name);
        let (min, q1, median, q3, max) = (
            column("min_time_s"),
            column("q1_time_s"),
            column("median_time_s"),
            column("q3_time_s"),
            column("max_time_s"),
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
                    number("median_time_s", row.median),
                    number("q1_time_s", row.q1),
                    number("q3_time_s", row.q3),
                    number("min_time_s", row.min),
                    number("max_time_s", row.max)
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
        figure(
            "bench-latency-figure",
            "Latency",
            &box_plot(titles, &rows),
            note,
            &table,
        )
    }

    /// Input and output tokens per model, stacked.
    fn tokens_figure(&self) -> String {
        let models = texts(&self.by_model, "model");
        let (input, output) = (
            counts(&self.by_model, "input_tokens"),
            counts(&self.by_model, "output_tokens"),
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
        figure("bench-tokens", "Tokens", &chart, note, "")
    }

    /// Energy per model, with the range of its estimate.
    fn energy_figure(&self) -> String {
        let models = texts(&self.by_model, "model");
        let (wh, low, high) = (
            floats(&self.by_model, "energy_wh"),
            floats(&self.by_model, "energy_wh_min"),
            floats(&self.by_model, "energy_wh_max"),
        );
        let unknown = self.energy_unknown();
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
            return format!(
                "<p class=\"note\">No energy was estimated for these results.{}</p>",
                escape(&unknown_note)
            );
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
                        number("energy_wh", value),
                        maybe_number("energy_wh_min", low[i]),
                        maybe_number("energy_wh_max", high[i])
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
        figure("bench-energy", "Energy", &chart, &note, "")
    }

    /// The results that did not pass, bounded, with expected and actual answers.
    fn failures_list(&self) -> String {
        let (failed, errors) = (
            total(&self.by_model, "failed"),
            total(&self.by_model, "errors"),
        );
        let mut out = String::from("<h3 id=\"bench-failures\">Failures and errors</h3>");
        if failed + errors == 0 {
            out.push_str("<p>Every result passed.</p>");
            return out;
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
        for failure in &self.failures {
            out.push_str(&self.failure_item(failure));
        }
        out
    }

    /// One failure as a collapsible block.
    fn failure_item(&self, f: &FailureRow) -> String {
        let expected = self.expected.get(&f.prompt_name).map_or_else(
            || {
                "(the benchmark file is not at hand as it ran; the reason below quotes it)"
                    .to_owned()
            },
            |e| truncate(e, 2000),
        );
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
        format!(
            "<details class=\"failure\"><summary><span class=\"status-{status}\">{status}</span> \
             {model} · {prompt} · repeat {repeat}</summary><dl><dt>Method</dt><dd>{method}</dd>\
             <dt>Expected</dt><dd><pre>{expected}</pre></dd><dt>Answer</dt><dd><pre>{answer}</pre></dd>\
             <dt>Why</dt><dd>{why}</dd><dt>Run</dt><dd>{run}</dd></dl></details>",
            status = escape(&f.status),
            model = escape(&f.model_ref),
            prompt = escape(&f.prompt_name),
            repeat = f.repeat_index,
            method = escape(&f.method),
            expected = escape(&expected),
            answer = escape(&answer),
            why = escape(f.detail.as_deref().unwrap_or("–")),
            run = f.run_id,
        )
    }
}

/// The expected output of each prompt, from the runs' benchmark files when they still hold
/// what ran (same sha256); a file moved, edited or unreadable gives nothing.
fn expected_outputs(store: &Store, runs: &[i64]) -> HashMap<String, String> {
    let mut expected = HashMap::new();
    for &run in runs {
        let Ok((Some(file), Some(sha))) = store.run_spec(run) else {
            continue;
        };
        let path = std::path::Path::new(&file);
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if crate::hash::sha256_hex(text.as_bytes()) != sha {
            continue;
        }
        if let Ok(spec) = crate::bench::spec::BenchSpec::parse(path, &text) {
            for prompt in spec.prompts {
                expected.entry(prompt.name).or_insert(prompt.expected);
            }
        }
    }
    expected
}

impl Section for BenchSection {
    fn anchor(&self) -> &'static str {
        "bench"
    }

    fn heading(&self) -> String {
        let noun = if self.runs.len() == 1 { "run" } else { "runs" };
        format!("Benchmark ({noun} {})", self.run_list().replace(',', ", "))
    }

    fn body(&self) -> String {
        if self.by_model.height() == 0 {
            return "<p>These runs recorded no results yet.</p>".to_owned();
        }
        let matrix = self.matrix_figure().unwrap_or_else(|e| {
            format!(
                "<p class=\"note\">No pass matrix: {}</p>",
                escape(&e.to_string())
            )
        });
        [
            self.overview(),
            self.success_figure(),
            self.cost_figure(),
            matrix,
            self.spread_figure(),
            self.latency_figure(),
            self.tokens_figure(),
            self.energy_figure(),
            self.failures_list(),
        ]
        .concat()
    }
}
