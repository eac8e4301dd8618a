//! The pairwise section of `track report`: a win-matrix heatmap (how often the row's candidate
//! beat the column's, ties as half) and a dot plot of Bradley–Terry strengths with their
//! bootstrap intervals, each with its numbers, drawn with `crate::report`'s primitives; and,
//! when the candidates are models, what each answered to the first items (escaped).

use polars::prelude::DataFrame;

use super::stats::{Strength, Verdicts, ranks};
use super::summary::{candidate_summary_with, judge_summary, pair_summary};
use crate::report::charts::{DotChart, DotRow, Heatmap, Mark, Titles, dot_chart, figure, heatmap};
use crate::report::html::{TableOptions, escape, frame_table, maybe_number, truncate};
use crate::report::{ReportError, Section};
use crate::store::Store;

/// The items whose candidates' answers the section shows (the others are in `track export
/// csv --kind pairwise`'s `answer_a` and `answer_b`).
const ANSWERED_ITEMS: usize = 50;
/// The characters of each answer shown.
const ANSWER_CHARS: usize = 4000;

/// The pairwise section of some runs.
pub struct PairwiseSection {
    verdicts: Verdicts,
    strengths: Vec<Strength>,
    candidates: DataFrame,
    pairs: DataFrame,
    judges: DataFrame,
    /// The candidates' answers of the first [`ANSWERED_ITEMS`] items, and how many items the
    /// candidates answered in all.
    answers: Vec<ItemAnswers>,
    answered_items: usize,
}

/// The candidates' answers to one item of a run (candidate models only).
#[derive(Debug, Clone, PartialEq)]
struct ItemAnswers {
    run_id: i64,
    item: String,
    /// Each candidate and its answer (cut to [`ANSWER_CHARS`]), or why it has none.
    answers: Vec<(String, Result<String, String>)>,
}

/// The candidates' answers of `runs`, item by item, the first [`ANSWERED_ITEMS`] items read;
/// and how many items there are in all.
fn load_answers(store: &Store, runs: &[i64]) -> Result<(Vec<ItemAnswers>, usize), ReportError> {
    let rows = store.pairwise_answers(runs)?;
    let mut items: Vec<(i64, &str)> = rows.iter().map(|r| (r.run_id, r.item.as_str())).collect();
    items.sort_unstable();
    items.dedup();
    let total = items.len();
    let mut out = Vec::new();
    for &(run_id, item) in items.iter().take(ANSWERED_ITEMS) {
        let mut answers = Vec::new();
        for r in rows.iter().filter(|r| r.run_id == run_id && r.item == item) {
            let answer = match (&r.error, r.call_id) {
                (Some(error), _) => Err(error.clone()),
                (None, Some(call)) => match store.answer_text(call)? {
                    Some(text) => Ok(truncate(&text, ANSWER_CHARS)),
                    None => Err("no answer stored".to_owned()),
                },
                (None, None) => Err("no answer stored".to_owned()),
            };
            answers.push((r.candidate.clone(), answer));
        }
        out.push(ItemAnswers {
            run_id,
            item: item.to_owned(),
            answers,
        });
    }
    Ok((out, total))
}

/// The candidates' answers as one collapsible block per item, every text escaped.
fn answers_html(answers: &[ItemAnswers], total: usize) -> String {
    if answers.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h3 id=\"pairwise-answers\">Candidates' answers</h3><p class=\"note\">{}</p>",
        escape(&if total > answers.len() {
            format!(
                "The first {} of {total} items; every answer is in `track export csv --kind \
                 pairwise` (answer_a, answer_b).",
                answers.len()
            )
        } else {
            "What each candidate answered, item by item.".to_owned()
        })
    );
    for item in answers {
        let rows: String = item
            .answers
            .iter()
            .map(|(candidate, answer)| match answer {
                Ok(text) => format!(
                    "<dt>{}</dt><dd><pre>{}</pre></dd>",
                    escape(candidate),
                    escape(text)
                ),
                Err(why) => format!(
                    "<dt>{}</dt><dd>(no answer: {})</dd>",
                    escape(candidate),
                    escape(why)
                ),
            })
            .collect();
        out.push_str(&format!(
            "<details class=\"answers\"><summary>{item} · run {run}</summary><dl>{rows}</dl>\
             </details>",
            item = escape(&item.item),
            run = item.run_id,
        ));
    }
    out
}

impl PairwiseSection {
    /// Reads the verdicts of `runs` and summarises them.
    pub(crate) fn load(store: &Store, runs: &[i64]) -> Result<Self, ReportError> {
        let verdicts = Verdicts::from_rows(&store.pairwise_verdicts(runs)?);
        let strengths = verdicts.strengths();
        let (answers, answered_items) = load_answers(store, runs)?;
        Ok(Self {
            answers,
            answered_items,
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

impl PairwiseSection {
    /// The note under the strength chart: that it draws every candidate, or, when the
    /// strengths have no maximum (they exist for all or for none), which candidates never won
    /// or never lost.
    fn strength_note(&self) -> String {
        let why = "a tie counts as half a win to each side";
        if self.strengths.iter().all(|s| s.value.is_some()) {
            return format!("Every candidate is drawn ({why}).");
        }
        let records = self.verdicts.candidate_records();
        let one_sided: Vec<&str> = records
            .iter()
            .zip(&self.verdicts.candidates)
            .filter(|(r, _)| r.wins + r.ties == 0 || r.losses + r.ties == 0)
            .map(|(_, name)| name.as_str())
            .collect();
        if one_sided.is_empty() {
            format!(
                "No candidate is drawn: some candidates never won or never lost against the \
                 rest ({why}), so no strength is finite."
            )
        } else {
            format!(
                "No candidate is drawn: {} never won or never lost ({why}), so no strength is \
                 finite.",
                one_sided.join(", ")
            )
        }
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
            &self.strength_note(),
            &table(&self.candidates, "pairwise-candidates", "Per candidate"),
        ));
        out.push_str(&table(&self.judges, "pairwise-judges", "Per judge"));
        out.push_str(&answers_html(&self.answers, self.answered_items));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Shown, VerdictRow, Winner};

    /// Both orders of `a` against `b` on `item`, the judge's `winner` of each (`A` is `a`).
    fn both_orders(a: &str, b: &str, item: &str, winner: [Winner; 2]) -> Vec<VerdictRow> {
        [Shown::Ab, Shown::Ba]
            .into_iter()
            .zip(winner)
            .map(|(shown, winner)| VerdictRow::for_test("j", item, (a, b), shown, winner))
            .collect()
    }

    fn section(rows: &[VerdictRow]) -> PairwiseSection {
        let verdicts = Verdicts::from_rows(rows);
        let strengths = verdicts.strengths();
        PairwiseSection {
            answers: Vec::new(),
            answered_items: 0,
            candidates: candidate_summary_with(&verdicts, &strengths).unwrap(),
            pairs: pair_summary(&verdicts).unwrap(),
            judges: judge_summary(&verdicts).unwrap(),
            verdicts,
            strengths,
        }
    }

    #[test]
    fn answers_are_escaped_and_a_missing_one_says_why() {
        let answers = [ItemAnswers {
            run_id: 3,
            item: "p<1>".into(),
            answers: vec![
                (
                    "x".into(),
                    Ok("<script>alert(1)</script> & <img onerror=x>".into()),
                ),
                ("y".into(), Err("HTTP 500".into())),
            ],
        }];
        let html = answers_html(&answers, 1);
        assert!(
            !html.contains("<script>") && !html.contains("<img"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img onerror=x&gt;"),
            "{html}"
        );
        assert!(html.contains("p&lt;1&gt; · run 3"), "{html}");
        assert!(html.contains("(no answer: HTTP 500)"), "{html}");
        assert!(answers_html(&answers, 80).contains("The first 1 of 80 items"));
        assert_eq!(answers_html(&[], 0), "");
    }

    #[test]
    fn all_ties_read_as_half_won_and_every_candidate_drawn() {
        use Winner::Tie;
        let mut rows = Vec::new();
        for item in ["p1", "p2"] {
            rows.extend(both_orders("x", "y", item, [Tie, Tie]));
            rows.extend(both_orders("x", "z", item, [Tie, Tie]));
            rows.extend(both_orders("y", "z", item, [Tie, Tie]));
        }
        let s = section(&rows);
        let rates: Vec<Option<f64>> = s
            .candidates
            .column("win_rate")
            .unwrap()
            .f64()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(rates, [Some(0.5); 3], "the heatmap's 50 %, not 0");
        assert!(s.strengths.iter().all(|st| st.value == Some(0.0)));
        let note = s.strength_note();
        assert!(note.starts_with("Every candidate is drawn"), "{note}");
    }

    #[test]
    fn the_note_names_the_candidates_that_leave_no_strength_finite() {
        use Winner::{A, B, Tie};
        let mut rows = Vec::new();
        // x and y split their games; z loses every one: no finite strength.
        rows.extend(both_orders("x", "y", "p1", [A, A]));
        rows.extend(both_orders("x", "y", "p2", [B, B]));
        rows.extend(both_orders("x", "y", "p3", [Tie, Tie]));
        rows.extend(both_orders("x", "z", "p1", [A, A]));
        rows.extend(both_orders("y", "z", "p1", [A, A]));
        let s = section(&rows);
        let note = s.strength_note();
        assert!(
            note.starts_with("No candidate is drawn: z never won or never lost"),
            "{note}"
        );
    }
}
