//! `track diff` of two pairwise runs, on what they share: the head-to-head verdicts of the
//! pairs of candidates both runs judged, matched item by item (same item, judge and repeat).
//! Per pair, the verdicts that moved toward one candidate or the other are tested with
//! McNemar's test (a sign test of the moves). Which candidates changed between the runs is read
//! from their answers (the request each sent, which holds its model, system prompt and
//! parameters, and the answer's hash): a pair whose verdicts moved significantly is a
//! regression when the candidate that lost ground changed, or when neither did (the judge
//! drifted); when only the candidate that gained ground changed, it is that candidate's
//! improvement, never a regression. Bradley–Terry strengths are normalised to a
//! mean of 0 over a run's candidates, so they are compared only when both runs have the same
//! candidates, and then as each pair's gap (the strength of A over B), anchored on a candidate
//! both runs share: swapping one candidate moves no untouched pair.

use polars::prelude::*;

use std::collections::BTreeMap;

use super::columns as c;
use super::stats::{Strength, Verdicts};
use crate::analysis::diff::{
    DiffCounts, DiffError, KindDiff, Layout, Pairing, SIGNIFICANCE, difference, either, pair_by_key,
};
use crate::analysis::stats::McNemar;
use crate::output::count;
use crate::store::{AnswerPrints, Store, Winner};

/// The change of a verdict both runs gave.
const TOWARD_A: &str = crate::output::columns::TOWARD_A.name;
const TOWARD_B: &str = crate::output::columns::TOWARD_B.name;
const INVALID: &str = "invalid";
const UNCHANGED: &str = crate::analysis::diff::UNCHANGED;

/// Columns of the pair summary.
const SHARED: &str = "shared";
const BASE_SCORE: &str = "base_score";
const NEW_SCORE: &str = "new_score";
const DELTA_SCORE: &str = "delta_score";
const P_VALUE: &str = "p_value";
const LOST_GROUND: &str = "lost_ground";
const GAINED_GROUND: &str = crate::output::columns::GAINED_GROUND.name;
const CHANGED: &str = crate::output::columns::CHANGED_CANDIDATES.name;
const BASE_GAP: &str = crate::output::columns::BASE_STRENGTH_GAP.name;
const NEW_GAP: &str = crate::output::columns::NEW_STRENGTH_GAP.name;
const REPEAT: &str = "repeat";

/// How a pairwise diff reads.
pub static LAYOUT: Layout = Layout {
    keys: &[c::CANDIDATE_A, c::CANDIDATE_B, c::ITEM, c::JUDGE, REPEAT],
    change_columns: &[
        c::CANDIDATE_A,
        c::CANDIDATE_B,
        c::ITEM,
        c::JUDGE,
        c::CHANGE,
        c::BASE_WINNER,
        c::NEW_WINNER,
    ],
    change_order: &[TOWARD_B, TOWARD_A, INVALID],
    item_noun: "verdict",
    summary_title: "Per pair",
    changes,
    significant: "a pair of candidates whose verdicts on the items both runs judged moved toward \
                  one of them with McNemar's p < 0.05, against a candidate that changed between \
                  the runs (its model, system prompt, parameters or answers) or between two \
                  that did not (the judge drifted); a move toward the only one that changed is \
                  its improvement (`gained_ground`), not a regression; strengths are compared \
                  only when both runs have the same candidates, never for significance",
};

/// The headline's changes: `3 moved toward candidate B, 1 toward candidate A, 0 invalid`.
fn changes(c: &DiffCounts) -> String {
    format!(
        "{} toward candidate B, {} toward candidate A, {}",
        count(c.regressions, "verdict"),
        c.fixes,
        count(c.new_errors, "new invalid verdict")
    )
}

/// Compares runs `base` and `new`, read from the store.
pub(crate) fn compare(store: &Store, base_run: i64, new_run: i64) -> Result<KindDiff, DiffError> {
    let base = Verdicts::from_rows(&store.pairwise_verdicts(&[base_run])?);
    let new = Verdicts::from_rows(&store.pairwise_verdicts(&[new_run])?);
    let changed = Changed::between(
        &store.pairwise_answer_prints(base_run)?,
        &store.pairwise_answer_prints(new_run)?,
    );
    Ok(diff(
        (&base, &base.strengths()),
        (&new, &new.strengths()),
        &changed,
    )?)
}

/// A candidate of a pair, with how it changed between the runs.
type Side<'a> = (&'a str, Option<Change>);

/// How a candidate changed between two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// It sent other requests for the same items: another model, system prompt or parameters.
    Requests,
    /// The same requests got other answers.
    Answers,
    /// Its answers were not recorded in both runs (datasheets): taken as changed.
    Unknown,
}

impl Change {
    fn words(self) -> &'static str {
        match self {
            Self::Requests => "its requests differ (model, system prompt or parameters)",
            Self::Answers => "its answers differ",
            Self::Unknown => "its answers are not recorded in both runs",
        }
    }
}

/// Which candidates changed between the base and the new run: those whose answers to the
/// items both runs asked them differ, in their request or their answer. A candidate whose
/// answers either run did not record is taken as changed (what a diff assumed before).
#[derive(Debug, Clone, Default)]
pub(crate) struct Changed {
    /// Candidates by name: how they changed, `None` when they did not.
    known: BTreeMap<String, Option<Change>>,
}

impl Changed {
    /// From each run's prints: (candidate, item) → (request key, answer hash) of its answer.
    pub(crate) fn between(base: &AnswerPrints, new: &AnswerPrints) -> Self {
        let mut known: BTreeMap<String, Option<Change>> = BTreeMap::new();
        for ((candidate, item), (key, answer)) in base {
            let Some((new_key, new_answer)) = new.get(&(candidate.clone(), item.clone())) else {
                continue;
            };
            let change = if key != new_key {
                Some(Change::Requests)
            } else if answer != new_answer {
                Some(Change::Answers)
            } else {
                None
            };
            let entry = known.entry(candidate.clone()).or_insert(None);
            // Other requests say more than other answers.
            if change == Some(Change::Requests) || entry.is_none() {
                *entry = change.or(*entry);
            }
        }
        Self { known }
    }

    /// How `candidate` changed; `None` when it did not.
    fn of(&self, candidate: &str) -> Option<Change> {
        match self.known.get(candidate) {
            Some(change) => *change,
            None => Some(Change::Unknown),
        }
    }
}

/// One pair's verdict on one item by one judge, its pair in name order (`a` before `b`):
/// candidate A's score, 1 a win, 0.5 a tie (or orders that disagreed), 0 a loss; `None` when
/// a verdict could not be read.
#[derive(Debug, Clone)]
struct Verdict {
    a: String,
    b: String,
    item: String,
    judge: String,
    repeat: u32,
    score: Option<f64>,
    /// The judge's calls (its answers): `a` shown first, then `b` shown first.
    calls: [Option<i64>; 2],
}

impl Verdict {
    fn key(&self) -> (String, String, String, String, u32) {
        (
            self.a.clone(),
            self.b.clone(),
            self.item.clone(),
            self.judge.clone(),
            self.repeat,
        )
    }
}

/// The verdicts of `v`, each pair in name order.
fn verdicts(v: &Verdicts) -> Vec<Verdict> {
    v.judged
        .iter()
        .map(|j| {
            let (a, b) = (&v.candidates[j.a], &v.candidates[j.b]);
            let score = j.result.counted().map(|w| match w {
                Winner::A => 1.0,
                Winner::B => 0.0,
                Winner::Tie | Winner::Invalid => 0.5,
            });
            let flip = a > b;
            Verdict {
                a: if flip { b.clone() } else { a.clone() },
                b: if flip { a.clone() } else { b.clone() },
                item: j.item.clone(),
                judge: j.judge.clone(),
                repeat: j.repeat,
                score: score.map(|s| if flip { 1.0 - s } else { s }),
                calls: if flip {
                    [j.calls[1], j.calls[0]]
                } else {
                    j.calls
                },
            }
        })
        .collect()
}

/// How a verdict both runs gave changed.
fn change_of(base: Option<f64>, new: Option<f64>) -> &'static str {
    match (base, new) {
        (Some(_), None) => INVALID,
        (Some(b), Some(n)) if n > b => TOWARD_A,
        (Some(b), Some(n)) if n < b => TOWARD_B,
        _ => UNCHANGED,
    }
}

/// A winner as a column reads it: the candidate's name, `tie`, or null when unreadable.
fn winner_name(v: &Verdict) -> Option<String> {
    v.score.map(|s| {
        if s > 0.5 {
            v.a.clone()
        } else if s < 0.5 {
            v.b.clone()
        } else {
            "tie".to_owned()
        }
    })
}

/// One pair of candidates of either run, summed over the verdicts both runs gave.
#[derive(Debug, Default)]
struct PairTally {
    a: String,
    b: String,
    /// Verdicts with a score in both runs, and A's scores summed in each.
    shared: u64,
    base_score: f64,
    new_score: f64,
    toward_a: u64,
    toward_b: u64,
    /// The pair's strength gap (A's over B's) in each run, when both runs have the same
    /// candidates.
    gaps: (Option<f64>, Option<f64>),
    /// How each of A and B changed between the runs (`None`: it did not).
    changes: (Option<Change>, Option<Change>),
}

impl PairTally {
    fn mcnemar(&self) -> McNemar {
        McNemar::new(self.toward_b, self.toward_a)
    }

    fn p_value(&self) -> Option<f64> {
        (self.shared > 0)
            .then(|| self.mcnemar().p_value())
            .flatten()
    }

    /// The candidates whose verdicts moved against and toward them with p < 0.05, each with
    /// how it changed between the runs: (loser, winner).
    fn moved(&self) -> Option<(Side<'_>, Side<'_>)> {
        self.p_value().filter(|&p| p < SIGNIFICANCE)?;
        let a = (self.a.as_str(), self.changes.0);
        let b = (self.b.as_str(), self.changes.1);
        match self.toward_a.cmp(&self.toward_b) {
            std::cmp::Ordering::Less => Some((a, b)),
            std::cmp::Ordering::Greater => Some((b, a)),
            std::cmp::Ordering::Equal => None,
        }
    }

    /// The candidate whose verdicts moved against it with p < 0.05, when that is a regression:
    /// it changed, or neither did (the judge drifted).
    fn lost_ground(&self) -> Option<&str> {
        let ((loser, lost), (_, won)) = self.moved()?;
        (lost.is_some() || won.is_none()).then_some(loser)
    }

    /// The candidate whose verdicts moved toward it with p < 0.05 when it alone changed: its
    /// improvement, not a regression of the other.
    fn gained_ground(&self) -> Option<&str> {
        let ((_, lost), (winner, won)) = self.moved()?;
        (lost.is_none() && won.is_some()).then_some(winner)
    }

    /// The candidates of the pair that changed between the runs: `my-model`, `a, b`.
    fn changed(&self) -> Option<String> {
        let names: Vec<&str> = [(&self.a, self.changes.0), (&self.b, self.changes.1)]
            .into_iter()
            .filter(|(_, c)| c.is_some())
            .map(|(n, _)| n.as_str())
            .collect();
        (!names.is_empty()).then(|| names.join(", "))
    }

    /// Why a significant move reads as it does: who changed and how.
    fn cause(&self) -> String {
        let says = |name: &str, change: Option<Change>| match change {
            Some(change) => format!("{name} changed: {}", change.words()),
            None => format!("{name} did not change"),
        };
        if self.changes.0.is_none() && self.changes.1.is_none() {
            return "neither candidate changed between the runs: the judge drifted".to_owned();
        }
        format!(
            "{}; {}",
            says(&self.a, self.changes.0),
            says(&self.b, self.changes.1)
        )
    }

    /// Counts a verdict both runs gave (`b` in the base run, `n` in the new one); its change.
    fn add(&mut self, b: &Verdict, n: &Verdict, counts: &mut DiffCounts) -> &'static str {
        counts.shared += 1;
        if let (Some(bs), Some(ns)) = (b.score, n.score) {
            self.shared += 1;
            self.base_score += bs;
            self.new_score += ns;
        }
        let change = change_of(b.score, n.score);
        match change {
            TOWARD_A => {
                self.toward_a += 1;
                counts.fixes += 1;
            }
            TOWARD_B => {
                self.toward_b += 1;
                counts.regressions += 1;
            }
            INVALID => counts.new_errors += 1,
            _ => {}
        }
        change
    }

    fn score(&self, sum: f64) -> Option<f64> {
        (self.shared > 0).then(|| sum / self.shared as f64)
    }

    /// The sentence of a significant regression.
    fn describe(&self) -> Option<String> {
        let loser = self.lost_ground()?;
        let winner = if loser == self.a { &self.b } else { &self.a };
        Some(format!(
            "{loser} lost ground to {winner}: {} ({})",
            self.figures(winner, loser),
            self.cause()
        ))
    }

    /// The sentence of a significant improvement.
    fn describe_improvement(&self) -> Option<String> {
        let winner = self.gained_ground()?;
        let loser = if winner == self.a { &self.b } else { &self.a };
        Some(format!(
            "{winner} gained ground on {loser}: {} ({})",
            self.figures(winner, loser),
            self.cause()
        ))
    }

    /// `of 6 verdicts both runs gave, 6 moved toward W and 0 toward L, McNemar p = 0.0312`.
    fn figures(&self, winner: &str, loser: &str) -> String {
        format!(
            "of {} verdicts both runs gave, {} moved toward {winner} and {} toward {loser}, \
             McNemar p = {:.4}",
            self.shared,
            self.toward_b.max(self.toward_a),
            self.toward_b.min(self.toward_a),
            self.p_value().unwrap_or(1.0)
        )
    }
}

/// Each pair's strength gap in a run, when the strengths exist: `θ_a − θ_b`, which the mean-0
/// normalisation does not move.
fn gap(v: &Verdicts, s: &[Strength], a: &str, b: &str) -> Option<f64> {
    let at = |name: &str| v.candidates.iter().position(|n| n == name);
    Some(s[at(a)?].value? - s[at(b)?].value?)
}

/// The diff of two runs' verdicts (each with its strengths), `changed` saying which
/// candidates changed between them.
pub(crate) fn diff(
    (base, base_s): (&Verdicts, &[Strength]),
    (new, new_s): (&Verdicts, &[Strength]),
    changed: &Changed,
) -> PolarsResult<KindDiff> {
    let paired = pair_by_key(verdicts(base), verdicts(new), Verdict::key);
    let mut counts = DiffCounts::default();
    let mut tallies: Vec<PairTally> = Vec::new();
    let mut changes: Vec<Option<&'static str>> = Vec::with_capacity(paired.len());
    let same_candidates = {
        let mut b = base.candidates.clone();
        let mut n = new.candidates.clone();
        b.sort();
        n.sort();
        b == n
    };
    for pairing in &paired {
        let first = either(pairing);
        let position = match tallies
            .iter()
            .position(|t| t.a == first.a && t.b == first.b)
        {
            Some(position) => position,
            None => {
                // Strength gaps compare only when both runs have the same candidates.
                let gaps = same_candidates.then(|| {
                    (
                        gap(base, base_s, &first.a, &first.b),
                        gap(new, new_s, &first.a, &first.b),
                    )
                });
                tallies.push(PairTally {
                    a: first.a.clone(),
                    b: first.b.clone(),
                    gaps: gaps.unwrap_or((None, None)),
                    changes: (changed.of(&first.a), changed.of(&first.b)),
                    ..PairTally::default()
                });
                tallies.len() - 1
            }
        };
        let tally = &mut tallies[position];
        let change = match pairing {
            Pairing::Both(b, n) => Some(tally.add(b, n, &mut counts)),
            Pairing::OnlyBase(_) => {
                counts.only_in_base += 1;
                None
            }
            Pairing::OnlyNew(_) => {
                counts.only_in_new += 1;
                None
            }
        };
        changes.push(change);
    }
    let significant: Vec<String> = tallies.iter().filter_map(PairTally::describe).collect();
    counts.significant_regressions = significant.len() as u64;
    Ok(KindDiff {
        counts,
        summary: summary_frame(&tallies)?,
        items: items_frame(&paired, &changes)?,
        significant,
        improvements: tallies
            .iter()
            .filter_map(PairTally::describe_improvement)
            .collect(),
    })
}

/// One row per pair of either run, in the order pairs first appear.
fn summary_frame(tallies: &[PairTally]) -> PolarsResult<DataFrame> {
    let floats = |f: &dyn Fn(&PairTally) -> Option<f64>| -> Vec<Option<f64>> {
        tallies.iter().map(f).collect()
    };
    let base_score = floats(&|t| t.score(t.base_score));
    let new_score = floats(&|t| t.score(t.new_score));
    let delta: Vec<Option<f64>> = base_score
        .iter()
        .zip(&new_score)
        .map(|(b, n)| difference(*b, *n))
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            c::CANDIDATE_A.into(),
            tallies.iter().map(|t| t.a.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            c::CANDIDATE_B.into(),
            tallies.iter().map(|t| t.b.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            SHARED.into(),
            tallies.iter().map(|t| t.shared).collect::<Vec<_>>(),
        ),
        Column::new(BASE_SCORE.into(), base_score),
        Column::new(NEW_SCORE.into(), new_score),
        Column::new(DELTA_SCORE.into(), delta),
        Column::new(
            TOWARD_A.into(),
            tallies.iter().map(|t| t.toward_a).collect::<Vec<_>>(),
        ),
        Column::new(
            TOWARD_B.into(),
            tallies.iter().map(|t| t.toward_b).collect::<Vec<_>>(),
        ),
        Column::new(P_VALUE.into(), floats(&PairTally::p_value)),
        Column::new(
            c::SIGNIFICANT_REGRESSION.into(),
            tallies
                .iter()
                .map(|t| t.lost_ground().is_some())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            LOST_GROUND.into(),
            tallies.iter().map(|t| t.lost_ground()).collect::<Vec<_>>(),
        ),
        Column::new(
            GAINED_GROUND.into(),
            tallies
                .iter()
                .map(|t| t.gained_ground())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            CHANGED.into(),
            tallies.iter().map(PairTally::changed).collect::<Vec<_>>(),
        ),
        Column::new(BASE_GAP.into(), floats(&|t| t.gaps.0)),
        Column::new(NEW_GAP.into(), floats(&|t| t.gaps.1)),
    ])
}

/// The item frame: one row per verdict of either run.
fn items_frame(
    paired: &[Pairing<Verdict>],
    changes: &[Option<&'static str>],
) -> PolarsResult<DataFrame> {
    let text = |f: fn(&Verdict) -> String| -> Vec<String> {
        paired.iter().map(|p| f(either(p))).collect()
    };
    let side = |pick_new: bool| -> Vec<Option<String>> {
        paired
            .iter()
            .map(|p| match (p, pick_new) {
                (Pairing::Both(b, _) | Pairing::OnlyBase(b), false) => winner_name(b),
                (Pairing::Both(_, n) | Pairing::OnlyNew(n), true) => winner_name(n),
                _ => None,
            })
            .collect()
    };
    // The judge's call in one order (0: `a` shown first), of one run.
    let call = |pick_new: bool, order: usize| -> Vec<Option<i64>> {
        paired
            .iter()
            .map(|p| match (p, pick_new) {
                (Pairing::Both(b, _) | Pairing::OnlyBase(b), false) => b.calls[order],
                (Pairing::Both(_, n) | Pairing::OnlyNew(n), true) => n.calls[order],
                _ => None,
            })
            .collect()
    };
    let only_in: Vec<Option<&str>> = paired
        .iter()
        .map(|p| match p {
            Pairing::OnlyBase(_) => Some("base"),
            Pairing::OnlyNew(_) => Some("new"),
            Pairing::Both(..) => None,
        })
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(c::CANDIDATE_A.into(), text(|v| v.a.clone())),
        Column::new(c::CANDIDATE_B.into(), text(|v| v.b.clone())),
        Column::new(c::ITEM.into(), text(|v| v.item.clone())),
        Column::new(c::JUDGE.into(), text(|v| v.judge.clone())),
        Column::new(
            REPEAT.into(),
            paired.iter().map(|p| either(p).repeat).collect::<Vec<_>>(),
        ),
        Column::new(c::CHANGE.into(), changes.to_vec()),
        Column::new(c::ONLY_IN.into(), only_in),
        Column::new(c::BASE_WINNER.into(), side(false)),
        Column::new(c::NEW_WINNER.into(), side(true)),
        Column::new(c::BASE_AB_CALL_ID.into(), call(false, 0)),
        Column::new(c::BASE_BA_CALL_ID.into(), call(false, 1)),
        Column::new(c::NEW_AB_CALL_ID.into(), call(true, 0)),
        Column::new(c::NEW_BA_CALL_ID.into(), call(true, 1)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Shown, VerdictRow};

    /// Both orders of `a` against `b` on `item`, agreeing on `winner` (`A` is `a`).
    fn agreed(a: &str, b: &str, item: &str, winner: Winner) -> Vec<VerdictRow> {
        [Shown::Ab, Shown::Ba]
            .into_iter()
            .map(|shown| VerdictRow::for_test("j", item, (a, b), shown, winner))
            .collect()
    }

    /// Eight items: `x` and `y` split them, each beats `z` on six and ties two; the new run
    /// swaps `z` for `w`, which beats both on six and ties two: the untouched pair x–y is
    /// judged alike.
    fn runs(swap: bool) -> Verdicts {
        let mut rows = Vec::new();
        let third = if swap { "w" } else { "z" };
        for i in 0..8 {
            let item = format!("p{i}");
            let x_wins = if i % 2 == 0 { Winner::A } else { Winner::B };
            rows.extend(agreed("x", "y", &item, x_wins));
            let against = match (swap, i) {
                (_, 0 | 1) => Winner::Tie,
                (true, _) => Winner::B,
                (false, _) => Winner::A,
            };
            rows.extend(agreed("x", third, &item, against));
            rows.extend(agreed("y", third, &item, against));
        }
        Verdicts::from_rows(&rows)
    }

    #[test]
    fn swapping_one_candidate_flags_no_untouched_pair() {
        let (base, new) = (runs(false), runs(true));
        let d = diff(
            (&base, &base.strengths()),
            (&new, &new.strengths()),
            &Changed::default(),
        )
        .unwrap();
        // Under the old rule, x and y's strengths fell (the mean-0 normalisation moved with
        // w's strength) and they were flagged weaker.
        let b = base.strengths();
        let n = new.strengths();
        assert!(
            n[0].value.unwrap() < b[0].low.unwrap(),
            "the old false alarm"
        );
        assert_eq!(d.counts.significant_regressions, 0, "{:?}", d.significant);
        assert_eq!(d.counts.shared, 8, "the x–y verdicts only");
        assert_eq!((d.counts.regressions, d.counts.fixes), (0, 0));
        assert_eq!(d.counts.only_in_base + d.counts.only_in_new, 32);
        let s = &d.summary;
        assert_eq!(s.height(), 5, "x–y, x–z, y–z, w–x, w–y");
        let gaps = s.column(BASE_GAP).unwrap().f64().unwrap();
        assert_eq!(
            gaps.null_count(),
            5,
            "different candidates: no strength compared"
        );
    }

    #[test]
    fn verdicts_that_moved_against_a_candidate_are_its_regression() {
        // z now beats x on every item (it lost six, tied two): 8 moves toward z.
        let (base, new) = z_beats_x();
        let d = diff(
            (&base, &base.strengths()),
            (&new, &new.strengths()),
            &Changed::default(),
        )
        .unwrap();
        assert_eq!(d.counts.significant_regressions, 1, "{:?}", d.significant);
        assert!(
            d.significant[0].starts_with(
                "x lost ground to z: of 8 verdicts both runs gave, 8 \
                                          moved toward z and 0 toward x, McNemar p = 0.0078 \
                                          (x changed: its answers are not recorded"
            ),
            "{:?}",
            d.significant
        );
        let s = &d.summary;
        let lost: Vec<Option<&str>> = s
            .column(LOST_GROUND)
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(lost, [None, Some("x"), None]);
        // The same candidates: each pair's strength gap in both runs, whatever the mean.
        let gaps = s.column(NEW_GAP).unwrap().f64().unwrap();
        assert_eq!(gaps.null_count(), 0);
        let scores: Vec<Option<f64>> = s.column(NEW_SCORE).unwrap().f64().unwrap().iter().collect();
        assert_eq!(scores, [Some(0.5), Some(0.0), Some(0.875)]);
    }

    /// The runs of `verdicts_that_moved_against_a_candidate_are_its_regression`: z now beats
    /// x on every item.
    fn z_beats_x() -> (Verdicts, Verdicts) {
        let mut rows = Vec::new();
        for i in 0..8 {
            let item = format!("p{i}");
            let x_wins = if i % 2 == 0 { Winner::A } else { Winner::B };
            rows.extend(agreed("x", "y", &item, x_wins));
            let y_vs_z = if i < 2 { Winner::Tie } else { Winner::A };
            rows.extend(agreed("x", "z", &item, Winner::B));
            rows.extend(agreed("y", "z", &item, y_vs_z));
        }
        (runs(false), Verdicts::from_rows(&rows))
    }

    /// Prints of candidates `names` on items p0..p7: each the same in both runs but `changed`,
    /// whose request (or, with `answers_only`, answer) differs.
    fn prints(
        names: &[&str],
        changed: Option<&str>,
        answers_only: bool,
    ) -> (AnswerPrints, AnswerPrints) {
        let mut base = BTreeMap::new();
        let mut new = BTreeMap::new();
        for name in names {
            for i in 0..8 {
                let key = ((*name).to_owned(), format!("p{i}"));
                let print = (Some(format!("req-{name}")), Some(format!("ans-{name}")));
                base.insert(key.clone(), print.clone());
                let moved = match (Some(*name) == changed, answers_only) {
                    (false, _) => print,
                    (true, false) => (Some("other".into()), print.1),
                    (true, true) => (print.0, Some("other".into())),
                };
                new.insert(key, moved);
            }
        }
        (base, new)
    }

    #[test]
    fn a_move_toward_the_only_candidate_that_changed_is_its_improvement() {
        let (base, new) = z_beats_x();
        let strengths = (base.strengths(), new.strengths());
        let compare =
            |changed: &Changed| diff((&base, &strengths.0), (&new, &strengths.1), changed).unwrap();
        // z changed (another model): it gained ground; no regression.
        let (b, n) = prints(&["x", "y", "z"], Some("z"), false);
        let d = compare(&Changed::between(&b, &n));
        assert_eq!(d.counts.significant_regressions, 0, "{:?}", d.significant);
        assert_eq!(d.improvements.len(), 1, "{:?}", d.improvements);
        assert!(
            d.improvements[0].starts_with("z gained ground on x: of 8 verdicts both runs gave")
                && d.improvements[0].contains(
                    "x did not change; z changed: its requests differ (model, system prompt or \
                     parameters)"
                ),
            "{:?}",
            d.improvements
        );
        let gained: Vec<Option<&str>> = d
            .summary
            .column(GAINED_GROUND)
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(gained, [None, Some("z"), None]);
        // x changed (its answers): x lost ground, a regression.
        let (b, n) = prints(&["x", "y", "z"], Some("x"), true);
        let d = compare(&Changed::between(&b, &n));
        assert_eq!(d.counts.significant_regressions, 1);
        assert!(
            d.significant[0].contains("(x changed: its answers differ; z did not change)"),
            "{:?}",
            d.significant
        );
        assert!(d.improvements.is_empty());
        // Nothing changed: the judge drifted, a regression.
        let (b, n) = prints(&["x", "y", "z"], None, false);
        let d = compare(&Changed::between(&b, &n));
        assert_eq!(d.counts.significant_regressions, 1);
        assert!(
            d.significant[0]
                .ends_with("(neither candidate changed between the runs: the judge drifted)"),
            "{:?}",
            d.significant
        );
    }
}
