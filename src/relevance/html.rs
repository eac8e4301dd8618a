//! The relevance section of `track report`: WITH against WITHOUT on precision, recall and F1 of both classes,
//! the deltas with their paired bootstrap intervals, coverage, McNemar's test in words, the
//! metrics per predicate type, and the calibration of the uncertain answers.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use polars::prelude::*;

use super::columns as cols;
use super::metrics::{Class, ClassMetrics, Metric, VariantMetrics};
use super::stats::{DeltaInterval, bootstrap_deltas, by_kind, mcnemar, measure_rows};
use super::summary::variant_summary;
use crate::analysis::stats::{BOOTSTRAP, McNemar, Z_95, wilson_interval};
use crate::output::{counted, thousands};
use crate::report::charts::{
    DotChart, DotRow, LineChart, Mark, Titles, dot_chart, figure, line_chart,
};
use crate::report::html::{TableOptions, escape, frame_table, maybe_number, number, text_table};
use crate::report::{ReportError, Section};
use crate::store::{Store, Variant};

/// The predictions of some relevance runs, measured.
pub struct RelevanceSection {
    runs: Vec<i64>,
    predictions: usize,
    models: Vec<String>,
    summary: DataFrame,
    per_type: DataFrame,
    with: VariantMetrics,
    without: VariantMetrics,
    invalid: [u64; 2],
    deltas: Vec<DeltaInterval>,
    mcnemar: McNemar,
    by_kind: BTreeMap<String, (VariantMetrics, VariantMetrics)>,
    /// Score 1 read four ways (threshold tuning), as `comparison_thresholds.csv`.
    thresholds: DataFrame,
}

impl RelevanceSection {
    /// Measures the predictions of `runs` as `track query --by variant` and the console
    /// report of `track relevance compare` do.
    pub(crate) fn load(store: &Store, runs: &[i64]) -> Result<Self, ReportError> {
        let rows = store.predictions(runs)?;
        let (with, without, invalid) = measure_rows(&rows);
        let mut models: Vec<String> = rows.iter().map(|r| r.model_ref.clone()).collect();
        models.sort();
        models.dedup();
        Ok(Self {
            runs: runs.to_vec(),
            predictions: rows.len(),
            models,
            summary: variant_summary(&rows, false)?,
            per_type: variant_summary(&rows, true)?,
            with,
            without,
            invalid,
            deltas: bootstrap_deltas(&rows),
            mcnemar: mcnemar(&rows),
            by_kind: by_kind(&rows),
            thresholds: super::summary::threshold_summary(&rows)?,
        })
    }

    fn run_list(&self) -> String {
        let ids: Vec<String> = self.runs.iter().map(i64::to_string).collect();
        ids.join(",")
    }

    fn overview(&self) -> String {
        format!(
            "<p>{} (image × predicate × variant × trial) of {}; invalid answers: WITH {}, \
             WITHOUT {}. The same numbers as <code>track query --by variant --run {}</code>.</p>",
            counted(self.predictions as u64, "prediction"),
            escape(&self.models.join(", ")),
            self.invalid[0],
            self.invalid[1],
            escape(&self.run_list())
        )
    }

    /// Precision, recall and F1 of both classes, WITH against WITHOUT, and the summary table.
    fn metrics_figure(&self) -> String {
        let mut rows = Vec::new();
        for class in Class::ALL {
            let (with, without) = (class.of(&self.with), class.of(&self.without));
            for metric in Metric::ALL {
                let label = format!("{class} {metric}");
                let mark = |variant: Variant, c: &ClassMetrics| {
                    metric.of(c).map(|value| Mark {
                        value,
                        low: None,
                        high: None,
                        tip: format!("{variant} {label}: {}", number(metric.name(), value)),
                    })
                };
                rows.push(DotRow {
                    marks: vec![mark(Variant::With, with), mark(Variant::Without, without)],
                    label,
                });
            }
        }
        let chart = dot_chart(&DotChart {
            titles: Titles {
                id: "relevance-metrics-chart",
                title: "Precision, recall and F1, WITH against WITHOUT the uncertain option",
                x: "value (0–1)",
                y: "class and metric",
            },
            series: vec!["WITH (allows 1)".into(), "WITHOUT (0 or 2)".into()],
            rows,
            domain: (0.0, 1.0),
            reference: None,
        });
        let table = frame_table(
            &self.summary,
            TableOptions {
                id: "relevance-summary",
                caption: "Per variant and class (as track query --by variant)",
                max_rows: usize::MAX,
            },
        );
        figure(
            "relevance-metrics",
            "WITH against WITHOUT",
            &chart,
            "",
            &table,
        )
    }

    /// The six deltas with their bootstrap intervals, around zero.
    fn deltas_figure(&self) -> String {
        let rows: Vec<DotRow> = self
            .deltas
            .iter()
            .map(|d| {
                let label = format!("{} {}", d.class, d.metric);
                let tip = format!(
                    "{label}: {} [{}, {}]",
                    maybe_number("delta", d.delta),
                    maybe_number("delta", d.interval.map(|i| i.low)),
                    maybe_number("delta", d.interval.map(|i| i.high))
                );
                let marks = vec![d.delta.map(|value| Mark {
                    value,
                    low: d.interval.map(|i| i.low),
                    high: d.interval.map(|i| i.high),
                    tip,
                })];
                DotRow { label, marks }
            })
            .collect();
        let reach = self
            .deltas
            .iter()
            .flat_map(|d| {
                [
                    d.delta,
                    d.interval.map(|i| i.low),
                    d.interval.map(|i| i.high),
                ]
            })
            .flatten()
            .fold(0.1_f64, |a, b| a.max(b.abs()));
        let chart = dot_chart(&DotChart {
            titles: Titles {
                id: "relevance-deltas-chart",
                title: "WITH minus WITHOUT, with paired bootstrap 95 % intervals",
                x: "difference (WITH − WITHOUT)",
                y: "class and metric",
            },
            series: vec![],
            rows,
            domain: (-reach * 1.1, reach * 1.1),
            reference: Some(0.0),
        });
        let note = format!(
            "{} resamples of whole images (the same draw for both variants); \
             an interval that does not cross 0 shows a difference beyond chance.",
            BOOTSTRAP.resamples
        );
        figure(
            "relevance-deltas",
            "Deltas",
            &chart,
            &note,
            &self.deltas_table(),
        )
    }

    fn deltas_table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .deltas
            .iter()
            .map(|d| {
                vec![
                    format!("{} {}", d.class, d.metric),
                    maybe_number("delta", d.delta),
                    maybe_number("delta", d.interval.map(|i| i.low)),
                    maybe_number("delta", d.interval.map(|i| i.high)),
                    d.interval
                        .map_or_else(|| "0".to_owned(), |i| i.replicates.to_string()),
                ]
            })
            .collect();
        text_table(
            "relevance-deltas-table",
            "Deltas (WITH − WITHOUT) and their 95 % intervals",
            &["class and metric", "delta", "low", "high", "resamples used"],
            &rows,
        )
    }

    /// Coverage and McNemar's test, in words.
    fn tests_text(&self) -> String {
        let m = &self.mcnemar;
        let mut out = String::from("<h3 id=\"relevance-tests\">Coverage and McNemar's test</h3>");
        let _ = write!(
            out,
            "<p>Coverage (certain answers among answered ones): WITH {} of {} = {}, WITHOUT {} \
             of {} = {}. WITH abstained (answered 1) {} times.</p>",
            thousands(self.with.positive.total_samples),
            thousands(self.with.answered),
            maybe_number(cols::COVERAGE, self.with.coverage),
            thousands(self.without.positive.total_samples),
            thousands(self.without.answered),
            maybe_number(cols::COVERAGE, self.without.coverage),
            thousands(self.with.uncertain)
        );
        let _ = write!(
            out,
            "<p id=\"relevance-mcnemar\">{}</p>",
            escape(&mcnemar_words(m))
        );
        out
    }

    /// Per predicate type: F1 of the positive class, WITH against WITHOUT, and the table.
    fn per_type_figure(&self) -> String {
        let rows = self
            .by_kind
            .iter()
            .map(|(kind, (with, without))| {
                let mark = |variant: &str, m: &VariantMetrics| {
                    m.positive.f1.map(|value| Mark {
                        value,
                        low: None,
                        high: None,
                        tip: format!("{kind} {variant}: positive F1 {}", number(cols::F1, value)),
                    })
                };
                DotRow {
                    label: kind.clone(),
                    marks: vec![mark("WITH", with), mark("WITHOUT", without)],
                }
            })
            .collect();
        let chart = dot_chart(&DotChart {
            titles: Titles {
                id: "relevance-types-chart",
                title: "Positive-class F1 per predicate type",
                x: "F1 (0–1)",
                y: "predicate type",
            },
            series: vec!["WITH".into(), "WITHOUT".into()],
            rows,
            domain: (0.0, 1.0),
            reference: None,
        });
        let table = frame_table(
            &self.per_type,
            TableOptions {
                id: "relevance-types",
                caption: "Per predicate type (as track query --by variant --per-predicate)",
                max_rows: usize::MAX,
            },
        );
        figure(
            "relevance-types-figure",
            "Per predicate type",
            &chart,
            "",
            &table,
        )
    }

    /// Threshold tuning: how each reading of an uncertain answer scores, per variant.
    fn thresholds_table(&self) -> String {
        format!(
            "<h3>Score 1 read four ways</h3><p>Besides leaving the uncertain answers out, they \
             can count as true, as false, or as a probability of 0.5 (scored by the Brier score \
             and the log-loss, clipped to 10⁻⁶); precision, recall and F1 are the positive \
             class's. The same numbers as <code>comparison_thresholds.csv</code>.</p>{}",
            frame_table(
                &self.thresholds,
                TableOptions {
                    id: "relevance-thresholds",
                    caption: "Threshold tuning (as comparison_thresholds.csv)",
                    max_rows: usize::MAX,
                },
            )
        )
    }

    /// Calibration of WITH's answers: the share of true predicates among answers 0, 1 and 2,
    /// per predicate type and overall.
    fn calibration_figure(&self) -> String {
        let mut lines: Vec<(String, [Option<Share>; 3])> = self
            .by_kind
            .iter()
            .map(|(kind, (with, _))| (kind.clone(), shares(with)))
            .collect();
        lines.push(("all types".to_owned(), shares(&self.with)));
        let scores = ["0 (certain false)", "1 (uncertain)", "2 (certain true)"];
        let series = lines
            .iter()
            .map(|(name, shares)| {
                let marks = shares
                    .iter()
                    .zip(scores)
                    .map(|(s, score)| s.map(|s| s.mark(name, score)))
                    .collect();
                (name.clone(), marks)
            })
            .collect();
        let chart = line_chart(&LineChart {
            titles: Titles {
                id: "relevance-calibration-chart",
                title: "Calibration of WITH's answers: share of true predicates per answer",
                x: "answer",
                y: "share true",
            },
            categories: scores.map(str::to_owned).to_vec(),
            series,
            domain: (0.0, 1.0),
        });
        let note = "At 2 the share true is the certain answers' precision; at 0 it is one minus \
                    the negative precision. A calibrated model's uncertain answers sit between.";
        figure(
            "relevance-calibration",
            "Calibration of the uncertain answers",
            &chart,
            note,
            &calibration_table(&lines),
        )
    }
}

/// The share of true predicates among `n` answers, with its Wilson 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Share {
    true_count: u64,
    n: u64,
}

impl Share {
    fn new(true_count: u64, n: u64) -> Option<Self> {
        (n > 0).then_some(Self { true_count, n })
    }

    fn value(self) -> f64 {
        self.true_count as f64 / self.n as f64
    }

    fn mark(self, line: &str, score: &str) -> Mark {
        let interval = wilson_interval(self.true_count, self.n, Z_95);
        Mark {
            value: self.value(),
            low: interval.map(|i| i.0),
            high: interval.map(|i| i.1),
            tip: format!(
                "{line}, answer {score}: {} of {} true = {}",
                self.true_count,
                self.n,
                number("share", self.value())
            ),
        }
    }
}

/// The shares true among answers 0, 1 and 2 of one variant.
fn shares(m: &VariantMetrics) -> [Option<Share>; 3] {
    let p = &m.positive;
    let uncertain_true = m
        .uncertain_true_share
        .map_or(0, |s| (s * m.uncertain as f64).round() as u64);
    [
        Share::new(p.fn_, p.tn + p.fn_),
        Share::new(uncertain_true, m.uncertain),
        Share::new(p.tp, p.tp + p.fp),
    ]
}

fn calibration_table(lines: &[(String, [Option<Share>; 3])]) -> String {
    let cell = |s: &Option<Share>| {
        s.map_or_else(
            || "–".to_owned(),
            |s| {
                format!(
                    "{} ({} of {})",
                    number("share", s.value()),
                    s.true_count,
                    s.n
                )
            },
        )
    };
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|(name, shares)| {
            let mut row = vec![name.clone()];
            row.extend(shares.iter().map(cell));
            row
        })
        .collect();
    text_table(
        "relevance-calibration-table",
        "Share true among WITH's answers",
        &[
            "predicate type",
            "answer 0",
            "answer 1 (uncertain)",
            "answer 2",
        ],
        &rows,
    )
}

/// McNemar's test said in a sentence a reader can act on.
fn mcnemar_words(m: &McNemar) -> String {
    let n = m.b + m.c;
    let which = if n < 25 {
        "exact binomial"
    } else {
        "chi-square"
    };
    let p = m.p_value().unwrap_or(1.0);
    let verdict = if n == 0 {
        "no item separates the variants".to_owned()
    } else if p < 0.05 {
        let better = if m.b > m.c { "WITH" } else { "WITHOUT" };
        format!("a difference at the 5 % level: {better} is right more often")
    } else {
        "no difference at the 5 % level: these items do not show that either variant is right \
         more often"
            .to_owned()
    };
    format!(
        "McNemar's test on the items both variants answered with certainty: WITH alone was \
         right on {}, WITHOUT alone on {}; p = {p:.4} ({which}), {verdict}.",
        m.b, m.c
    )
}

impl Section for RelevanceSection {
    fn anchor(&self) -> &'static str {
        "relevance"
    }

    fn heading(&self) -> String {
        let noun = if self.runs.len() == 1 { "run" } else { "runs" };
        format!("Relevance ({noun} {})", self.run_list().replace(',', ", "))
    }

    fn body(&self) -> Result<String, ReportError> {
        if self.predictions == 0 {
            return Ok("<p>These runs recorded no predictions yet.</p>".to_owned());
        }
        Ok([
            self.overview(),
            self.metrics_figure(),
            self.deltas_figure(),
            self.tests_text(),
            self.per_type_figure(),
            self.calibration_figure(),
            self.thresholds_table(),
        ]
        .concat())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcnemar_reads_as_a_sentence() {
        let significant = mcnemar_words(&McNemar::new(30, 5));
        assert!(
            significant.contains("WITH alone was right on 30, WITHOUT alone on 5"),
            "{significant}"
        );
        assert!(
            significant.contains("chi-square") && significant.contains("WITH is right more often")
        );
        let none = mcnemar_words(&McNemar::new(10, 3));
        assert!(
            none.contains("p = 0.0923 (exact binomial), no difference"),
            "{none}"
        );
        let nothing = mcnemar_words(&McNemar::new(0, 0));
        assert!(
            nothing.contains("p = 1.0000 (exact binomial), no item separates"),
            "{nothing}"
        );
    }

    #[test]
    fn calibration_shares_count_each_answer() {
        use crate::relevance::metrics::Scored;
        let m = VariantMetrics::measure(
            [
                (2, true),
                (2, false),
                (1, true),
                (1, true),
                (1, false),
                (0, true),
                (0, false),
            ]
            .map(|(score, truth)| Scored { score, truth }),
        );
        let [zero, one, two] = shares(&m);
        assert_eq!(zero, Share::new(1, 2));
        assert_eq!(one, Share::new(2, 3));
        assert_eq!(two, Share::new(1, 2));
        let mark = one.unwrap().mark("all", "1");
        assert!(mark.low.unwrap() < 2.0 / 3.0 && mark.high.unwrap() > 2.0 / 3.0);
    }
}
