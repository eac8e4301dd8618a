//! The pairwise section of `track report`: a win-matrix heatmap (how often the row's candidate
//! beat the column's, ties as half) and a dot plot of Bradley–Terry strengths with their
//! bootstrap intervals, each with its numbers, drawn with `crate::report`'s primitives.

use polars::prelude::DataFrame;

use super::stats::{Strength, Verdicts, ranks};
use super::summary::{candidate_summary_with, judge_summary, pair_summary};
use crate::report::charts::{DotChart, DotRow, Heatmap, Mark, Titles, dot_chart, figure, heatmap};
use crate::report::html::{TableOptions, frame_table, maybe_number};
use crate::report::{ReportError, Section};
use crate::store::Store;

/// The pairwise section of some runs.
pub struct PairwiseSection {
    verdicts: Verdicts,
    strengths: Vec<Strength>,
    candidates: DataFrame,
    pairs: DataFrame,
    judges: DataFrame,
}

impl PairwiseSection {
    /// Reads the verdicts of `runs` and summarises them.
    pub fn load(store: &Store, runs: &[i64]) -> Result<Self, ReportError> {
        let verdicts = Verdicts::from_rows(&store.pairwise_verdicts(runs)?);
        let strengths = verdicts.strengths();
        Ok(Self {
            candidates: candidate_summary_with(&verdicts, &strengths)?,
            pairs: pair_summary(&verdicts)?,
            judges: judge_summary(&verdicts)?,
            verdicts,
            strengths,
        })
    }

    /// The candidates by rank.
    fn order(&self) -> Vec<usize> {
        let rank = ranks(&self.strengths);
        let mut order: Vec<usize> = (0..self.verdicts.candidates.len()).collect();
        order.sort_by_key(|&i| rank[i]);
        order
    }

    /// The win matrix: the row's score against the column (wins plus half the ties, over
    /// comparisons), in percent.
    fn win_matrix(&self, order: &[usize]) -> String {
        let k = self.verdicts.candidates.len();
        let mut score = vec![vec![(0.0, 0.0); k]; k];
        for (&(a, b), r) in &self.verdicts.pair_records() {
            let n = r.total() as f64;
            score[a][b] = (r.wins as f64 + r.ties as f64 / 2.0, n);
            score[b][a] = (r.losses as f64 + r.ties as f64 / 2.0, n);
        }
        let names: Vec<String> = order
            .iter()
            .map(|&i| self.verdicts.candidates[i].clone())
            .collect();
        let cells = order
            .iter()
            .map(|&r| {
                order
                    .iter()
                    .map(|&c| {
                        let (s, n) = score[r][c];
                        (n > 0.0).then(|| 100.0 * s / n)
                    })
                    .collect()
            })
            .collect();
        heatmap(&Heatmap {
            titles: Titles {
                id: "pairwise-win-matrix",
                title: "Win matrix",
                x: "against",
                y: "candidate",
            },
            columns: names.clone(),
            rows: names,
            cells,
            domain: (0.0, 100.0),
            value_column: "success_pct",
        })
    }

    /// The strengths with their intervals.
    fn strength_plot(&self, order: &[usize]) -> String {
        let rows: Vec<DotRow> = order
            .iter()
            .map(|&i| {
                let s = self.strengths[i];
                DotRow {
                    label: self.verdicts.candidates[i].clone(),
                    marks: vec![s.value.map(|value| Mark {
                        value,
                        low: s.low,
                        high: s.high,
                        tip: format!(
                            "{}: {} [{}, {}]",
                            self.verdicts.candidates[i],
                            maybe_number("strength", s.value),
                            maybe_number("strength", s.low),
                            maybe_number("strength", s.high)
                        ),
                    })],
                }
            })
            .collect();
        let extent = self
            .strengths
            .iter()
            .flat_map(|s| [s.value, s.low, s.high])
            .flatten()
            .fold(1.0f64, |m, v| m.max(v.abs()));
        dot_chart(&DotChart {
            titles: Titles {
                id: "pairwise-strengths",
                title: "Bradley–Terry strengths",
                x: "strength (natural log, mean 0)",
                y: "candidate",
            },
            series: vec!["strength".into()],
            rows,
            domain: (-extent * 1.1, extent * 1.1),
            reference: Some(0.0),
        })
    }
}

impl Section for PairwiseSection {
    fn anchor(&self) -> &'static str {
        "pairwise"
    }

    fn heading(&self) -> String {
        "Pairwise comparisons".into()
    }

    fn body(&self) -> Result<String, ReportError> {
        let order = self.order();
        let table = |df: &DataFrame, id: &str, caption: &str| {
            frame_table(
                df,
                TableOptions {
                    id,
                    caption,
                    max_rows: 500,
                },
            )
        };
        let mut out = figure(
            "pairwise-win-matrix-figure",
            "How often each candidate (row) beat each other (column), ties as half, in percent",
            &self.win_matrix(&order),
            "Each pair is judged in both orders; orders that disagree count as a tie.",
            &table(&self.pairs, "pairwise-pairs", "Per pair"),
        );
        out.push_str(&figure(
            "pairwise-strengths-figure",
            "Bradley–Terry strengths, with 95 % bootstrap intervals (items resampled)",
            &self.strength_plot(&order),
            "A candidate that never won or never lost has no finite strength and is not drawn.",
            &table(&self.candidates, "pairwise-candidates", "Per candidate"),
        ));
        out.push_str(&table(&self.judges, "pairwise-judges", "Per judge"));
        Ok(out)
    }
}
