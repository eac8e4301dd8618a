//! `track diff` of two pairwise runs, on what they share: the head-to-head verdicts of the
//! pairs of candidates both runs judged, matched item by item (same item, judge and repeat).
//! Per pair, the verdicts that moved toward one candidate or the other are tested with
//! McNemar's test (a sign test of the moves); a pair whose verdicts moved significantly is a
//! regression of the candidate that lost ground. Bradley–Terry strengths are normalised to a
//! mean of 0 over a run's candidates, so they are compared only when both runs have the same
//! candidates, and then as each pair's gap (the strength of A over B), anchored on a candidate
//! both runs share: swapping one candidate moves no untouched pair.

use polars::prelude::*;

use super::columns as c;
use super::stats::{Strength, Verdicts};
use crate::analysis::diff::{
    DiffCounts, DiffError, KindDiff, Layout, Pairing, SIGNIFICANCE, difference, either, pair_by_key,
};
use crate::analysis::stats::McNemar;
use crate::output::count;
use crate::store::{Store, Winner};

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
                  one of them with McNemar's p < 0.05 (a regression of the other); strengths \
                  are compared only when both runs have the same candidates, never for \
                  significance",
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
pub(crate) fn compare(store: &Store, base: i64, new: i64) -> Result<KindDiff, DiffError> {
    let base = Verdicts::from_rows(&store.pairwise_verdicts(&[base])?);
    let new = Verdicts::from_rows(&store.pairwise_verdicts(&[new])?);
    Ok(diff(&base, &base.strengths(), &new, &new.strengths())?)
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

    /// The candidate whose verdicts moved against it with p < 0.05.
    fn lost_ground(&self) -> Option<&str> {
        self.p_value().filter(|&p| p < SIGNIFICANCE)?;
        match self.toward_a.cmp(&self.toward_b) {
            std::cmp::Ordering::Less => Some(&self.a),
            std::cmp::Ordering::Greater => Some(&self.b),
            std::cmp::Ordering::Equal => None,
        }
    }

    fn score(&self, sum: f64) -> Option<f64> {
        (self.shared > 0).then(|| sum / self.shared as f64)
    }

    fn describe(&self) -> Option<String> {
        let loser = self.lost_ground()?;
        let winner = if loser == self.a { &self.b } else { &self.a };
        Some(format!(
            "{loser} lost ground to {winner}: of {} verdicts both runs gave, {} moved toward \
             {winner} and {} toward {loser}, McNemar p = {:.4}",
            self.shared,
            self.toward_b.max(self.toward_a),
            self.toward_b.min(self.toward_a),
            self.p_value().unwrap_or(1.0)
        ))
    }
}

/// Each pair's strength gap in a run, when the strengths exist: `θ_a − θ_b`, which the mean-0
/// normalisation does not move.
fn gap(v: &Verdicts, s: &[Strength], a: &str, b: &str) -> Option<f64> {
    let at = |name: &str| v.candidates.iter().position(|n| n == name);
    Some(s[at(a)?].value? - s[at(b)?].value?)
}

/// The diff of two runs' verdicts.
pub(crate) fn diff(
    base: &Verdicts,
    base_s: &[Strength],
    new: &Verdicts,
    new_s: &[Strength],
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
                let gaps = if same_candidates {
                    (
                        gap(base, base_s, &first.a, &first.b),
                        gap(new, new_s, &first.a, &first.b),
                    )
                } else {
                    (None, None)
                };
                tallies.push(PairTally {
                    a: first.a.clone(),
                    b: first.b.clone(),
                    gaps,
                    ..PairTally::default()
                });
                tallies.len() - 1
            }
        };
        let tally = &mut tallies[position];
        let change = match pairing {
            Pairing::Both(b, n) => {
                counts.shared += 1;
                if let (Some(bs), Some(ns)) = (b.score, n.score) {
                    tally.shared += 1;
                    tally.base_score += bs;
                    tally.new_score += ns;
                }
                let change = change_of(b.score, n.score);
                match change {
                    TOWARD_A => {
                        tally.toward_a += 1;
                        counts.fixes += 1;
                    }
                    TOWARD_B => {
                        tally.toward_b += 1;
                        counts.regressions += 1;
                    }
                    INVALID => counts.new_errors += 1,
                    _ => {}
                }
                Some(change)
            }
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
        let d = diff(&base, &base.strengths(), &new, &new.strengths()).unwrap();
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
        let base = runs(false);
        // z now beats x on every item (it lost six, tied two): 8 moves toward z.
        let mut rows = Vec::new();
        for i in 0..8 {
            let item = format!("p{i}");
            let x_wins = if i % 2 == 0 { Winner::A } else { Winner::B };
            rows.extend(agreed("x", "y", &item, x_wins));
            let y_vs_z = if i < 2 { Winner::Tie } else { Winner::A };
            rows.extend(agreed("x", "z", &item, Winner::B));
            rows.extend(agreed("y", "z", &item, y_vs_z));
        }
        let new = Verdicts::from_rows(&rows);
        let d = diff(&base, &base.strengths(), &new, &new.strengths()).unwrap();
        assert_eq!(d.counts.significant_regressions, 1, "{:?}", d.significant);
        assert!(
            d.significant[0].starts_with(
                "x lost ground to z: of 8 verdicts both runs gave, 8 \
                                          moved toward z and 0 toward x, McNemar p = 0.0078"
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
}
