//! The pairwise summaries as polars frames, from stored verdicts through `stats`: per
//! candidate (`track query --by candidate`, `pairwise_summary.csv`), per pair and per judge.
//! Undefined numbers are null, never NaN.

use polars::prelude::*;

use super::columns as c;
use super::stats::{Combined, Strength, Verdicts, ranks};

/// Per candidate, by rank: wins, ties, losses, win rate with its Wilson interval, strength
/// with its bootstrap interval, rank.
pub(crate) fn candidate_summary(v: &Verdicts) -> PolarsResult<DataFrame> {
    candidate_summary_with(v, &v.strengths())
}

/// As [`candidate_summary`], with strengths computed by the caller.
pub(crate) fn candidate_summary_with(
    v: &Verdicts,
    strengths: &[Strength],
) -> PolarsResult<DataFrame> {
    let records = v.candidate_records();
    let rank = ranks(strengths);
    let mut order: Vec<usize> = (0..v.candidates.len()).collect();
    order.sort_by_key(|&i| rank[i]);
    let rate = |i: usize, part: usize| records[i].win_rate().map(|(r, lo, hi)| [r, lo, hi][part]);
    DataFrame::new_infer_height(vec![
        Column::new(
            c::CANDIDATE.into(),
            order
                .iter()
                .map(|&i| v.candidates[i].clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            c::WINS.into(),
            order.iter().map(|&i| records[i].wins).collect::<Vec<_>>(),
        ),
        Column::new(
            c::TIES.into(),
            order.iter().map(|&i| records[i].ties).collect::<Vec<_>>(),
        ),
        Column::new(
            c::LOSSES.into(),
            order.iter().map(|&i| records[i].losses).collect::<Vec<_>>(),
        ),
        Column::new(
            c::WIN_RATE.into(),
            order.iter().map(|&i| rate(i, 0)).collect::<Vec<_>>(),
        ),
        Column::new(
            c::WIN_RATE_LOW.into(),
            order.iter().map(|&i| rate(i, 1)).collect::<Vec<_>>(),
        ),
        Column::new(
            c::WIN_RATE_HIGH.into(),
            order.iter().map(|&i| rate(i, 2)).collect::<Vec<_>>(),
        ),
        Column::new(
            c::STRENGTH.into(),
            order
                .iter()
                .map(|&i| strengths[i].value)
                .collect::<Vec<_>>(),
        ),
        Column::new(
            c::STRENGTH_LOW.into(),
            order.iter().map(|&i| strengths[i].low).collect::<Vec<_>>(),
        ),
        Column::new(
            c::STRENGTH_HIGH.into(),
            order.iter().map(|&i| strengths[i].high).collect::<Vec<_>>(),
        ),
        Column::new(
            c::RANK.into(),
            order.iter().map(|&i| rank[i]).collect::<Vec<_>>(),
        ),
    ])
}

/// Per pair of candidates: candidate_a's wins, ties, candidate_b's wins, and the pairs not
/// counted (invalid) or counted as a tie because their orders disagreed (inconsistent).
pub(crate) fn pair_summary(v: &Verdicts) -> PolarsResult<DataFrame> {
    let records = v.pair_records();
    let mut keys: Vec<(usize, usize)> = v.judged.iter().map(|j| (j.a, j.b)).collect();
    keys.sort_unstable();
    keys.dedup();
    let count = |key: (usize, usize), result: Combined| {
        v.judged
            .iter()
            .filter(|j| (j.a, j.b) == key && j.result == result)
            .count() as u64
    };
    let record = |key| records.get(&key).copied().unwrap_or_default();
    DataFrame::new_infer_height(vec![
        Column::new(
            c::CANDIDATE_A.into(),
            keys.iter()
                .map(|k| v.candidates[k.0].clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            c::CANDIDATE_B.into(),
            keys.iter()
                .map(|k| v.candidates[k.1].clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            c::WINS_A.into(),
            keys.iter().map(|&k| record(k).wins).collect::<Vec<_>>(),
        ),
        Column::new(
            c::TIES.into(),
            keys.iter().map(|&k| record(k).ties).collect::<Vec<_>>(),
        ),
        Column::new(
            c::WINS_B.into(),
            keys.iter().map(|&k| record(k).losses).collect::<Vec<_>>(),
        ),
        Column::new(
            c::INCONSISTENT.into(),
            keys.iter()
                .map(|&k| count(k, Combined::Inconsistent))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            c::INVALID.into(),
            keys.iter()
                .map(|&k| count(k, Combined::Invalid))
                .collect::<Vec<_>>(),
        ),
    ])
}

/// Per judge: verdicts, the unreadable ones, pairs judged in both orders, those whose orders
/// disagreed and their share, and κ with the other judges.
pub(crate) fn judge_summary(v: &Verdicts) -> PolarsResult<DataFrame> {
    let j = &v.judges;
    DataFrame::new_infer_height(vec![
        Column::new(
            c::JUDGE.into(),
            j.iter().map(|r| r.judge.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            c::VERDICTS.into(),
            j.iter().map(|r| r.verdicts).collect::<Vec<_>>(),
        ),
        Column::new(
            c::INVALID.into(),
            j.iter().map(|r| r.invalid_verdicts).collect::<Vec<_>>(),
        ),
        Column::new(
            c::PAIRS.into(),
            j.iter().map(|r| r.pairs).collect::<Vec<_>>(),
        ),
        Column::new(
            c::INCONSISTENT.into(),
            j.iter().map(|r| r.inconsistent).collect::<Vec<_>>(),
        ),
        Column::new(
            c::INCONSISTENCY.into(),
            j.iter().map(|r| r.inconsistency()).collect::<Vec<_>>(),
        ),
        Column::new(
            c::KAPPA.into(),
            j.iter().map(|r| r.kappa).collect::<Vec<_>>(),
        ),
    ])
}
