//! Benchmarks rated by people: the agreement between their pass/fail and each automatic
//! verdict (the result's outcome, and each check method), and the results with both side by
//! side (`track query --by human`, `--by result`, and the report). Computed from rows read
//! through the store; the statistics are `crate::analysis::agreement`'s.

use polars::prelude::*;

use super::columns as c;
use super::summary::results_frame;
use crate::analysis::agreement::{Agreement, agreement};
use crate::rating::human_columns;
use crate::store::{RatedBenchResult, Store};

/// The automatic verdict that is a result's outcome (all its checks), in the `check` column.
pub const OUTCOME: &str = "outcome";
/// The agreement frame's columns.
pub const CHECK: &str = "check";
pub const RATED: &str = "rated";
pub const AGREE: &str = "agree";
pub const AGREE_PCT: &str = "agree_pct";
pub const KAPPA: &str = "kappa";
/// The uid of a result (`track rate RUN UID`).
pub const UID: &str = "uid";

/// The agreement of people with each automatic verdict: a row for the results' outcome, then
/// one per check method (the results with one check, and each check of those with several),
/// in the order first seen. Only ratings with a verdict count; an error (no answer to judge)
/// is no verdict.
pub(crate) fn agreement_frame(rated: &[RatedBenchResult]) -> PolarsResult<DataFrame> {
    let mut sources: Vec<(String, Vec<(bool, bool)>)> = vec![(OUTCOME.to_owned(), Vec::new())];
    let mut add = |name: &str, pair: (bool, bool)| match sources.iter_mut().find(|(n, _)| n == name)
    {
        Some((_, pairs)) => pairs.push(pair),
        None => sources.push((name.to_owned(), vec![pair])),
    };
    for r in rated {
        let Some(person) = r.rating.verdict.map(|v| v.passed()) else {
            continue;
        };
        if let Some(passed) = r.status.passed() {
            add(OUTCOME, (person, passed));
        }
        if r.checks.is_empty() {
            if let Some(passed) = r.status.passed() {
                add(&r.method, (person, passed));
            }
        } else {
            for check in &r.checks {
                if let Some(passed) = check.outcome.passed() {
                    add(&check.method, (person, passed));
                }
            }
        }
    }
    let rows: Vec<(String, Agreement)> = sources
        .into_iter()
        .map(|(name, pairs)| (name, agreement(&pairs)))
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            CHECK.into(),
            rows.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            RATED.into(),
            rows.iter().map(|(_, a)| a.rated).collect::<Vec<_>>(),
        ),
        Column::new(
            AGREE.into(),
            rows.iter().map(|(_, a)| a.agree).collect::<Vec<_>>(),
        ),
        Column::new(
            AGREE_PCT.into(),
            rows.iter()
                .map(|(_, a)| a.share.map(|s| s * 100.0))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            KAPPA.into(),
            rows.iter().map(|(_, a)| a.kappa).collect::<Vec<_>>(),
        ),
    ])
}

/// `track query --by human`: [`agreement_frame`] of the runs' rated results.
pub(crate) fn agreement_of_runs(store: &Store, runs: &[i64]) -> anyhow::Result<DataFrame> {
    Ok(agreement_frame(&store.rated_bench_results(runs)?)?)
}

/// `track query --by result`: one row per result of the runs, with its outcome (`result`), its current
/// human rating and its uid (what `track rate` takes).
pub(crate) fn results_with_ratings(store: &Store, runs: &[i64]) -> anyhow::Result<DataFrame> {
    let mut columns = store.bench_columns(runs, true)?;
    let uids = std::mem::take(&mut columns.uid);
    let call_ids = std::mem::take(&mut columns.call_id);
    let ratings = store.current_ratings(runs)?;
    let results = results_frame(columns)?;
    let mut out = results.select([
        c::RUN_ID,
        c::MODEL,
        c::TEMPLATE,
        c::PROMPT,
        c::REPEAT,
        c::STATUS,
        c::SCORE,
        c::METHOD,
        c::DETAIL,
    ])?;
    // `status` is the runs' status in `track query`'s outputs: the outcome is `result`, as
    // in a run's detail table; `detail` is why it did not pass.
    out.rename(c::STATUS, c::RESULT.into())?;
    out.rename(c::DETAIL, c::REASON.into())?;
    // What the model answered, its start on one line (the whole: `track view`, the report).
    let starts = if call_ids.len() == out.height() {
        store.answer_starts(&call_ids, crate::output::ANSWER_START_BYTES)?
    } else {
        vec![None; out.height()]
    };
    let starts: Vec<Option<String>> = starts
        .into_iter()
        .map(|a| a.map(|a| crate::output::answer_start(&a, crate::output::ANSWER_START_CHARS)))
        .collect();
    out.insert_column(
        out.get_column_index(c::REASON).unwrap_or(out.width()),
        Column::new(c::ANSWER_START.into(), starts),
    )?;
    for column in human_columns(uids.iter().map(Option::as_deref), &ratings) {
        out.with_column(column)?;
    }
    out.with_column(Column::new(UID.into(), uids))?;
    Ok(out)
}

/// The rated results of `rated` as rows: model, prompt, repeat, the outcome, the person's
/// verdict, score and comment, and who; for the report.
pub(crate) fn rated_frame(rated: &[RatedBenchResult]) -> PolarsResult<DataFrame> {
    let text = |f: &dyn Fn(&RatedBenchResult) -> Option<String>| -> Vec<Option<String>> {
        rated.iter().map(f).collect()
    };
    DataFrame::new_infer_height(vec![
        Column::new(c::MODEL.into(), text(&|r| Some(r.model_ref.clone()))),
        Column::new(c::PROMPT.into(), text(&|r| Some(r.prompt_name.clone()))),
        Column::new(
            c::REPEAT.into(),
            rated.iter().map(|r| r.repeat_index).collect::<Vec<_>>(),
        ),
        Column::new(
            c::STATUS.into(),
            text(&|r| Some(r.status.as_str().to_owned())),
        ),
        Column::new(
            crate::rating::HUMAN_VERDICT.into(),
            text(&|r| r.rating.verdict.map(|v| v.as_str().to_owned())),
        ),
        Column::new(
            crate::rating::HUMAN_SCORE.into(),
            rated
                .iter()
                .map(|r| r.rating.score.map(u32::from))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            crate::rating::HUMAN_COMMENT.into(),
            text(&|r| r.rating.comment.clone()),
        ),
        Column::new(
            crate::rating::RATER.into(),
            text(&|r| Some(r.rating.rater.clone())),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CheckRow, Outcome, Rating, Verdict};

    fn rated(verdict: Verdict, status: Outcome, checks: &[(&str, Outcome)]) -> RatedBenchResult {
        RatedBenchResult {
            rating: Rating {
                id: 1,
                run_id: 1,
                result_uid: "u".into(),
                kind: Some("bench_results".into()),
                verdict: Some(verdict),
                score: None,
                comment: None,
                rater: "ann".into(),
                created_at: "t".into(),
            },
            model_ref: "m".into(),
            prompt_name: "p".into(),
            repeat_index: 0,
            status,
            method: if checks.is_empty() {
                "judge".into()
            } else {
                "checks".into()
            },
            checks: checks
                .iter()
                .map(|&(method, outcome)| CheckRow {
                    method: method.into(),
                    expected: None,
                    outcome,
                    score: None,
                    weight: 1.0,
                    reason: None,
                })
                .collect(),
        }
    }

    #[test]
    fn each_check_and_the_outcome_get_their_agreement() {
        use Outcome::{Error, Failed, Passed};
        use Verdict::{Fail, Pass};
        let rows = [
            rated(Pass, Passed, &[]),
            rated(Fail, Passed, &[]),
            rated(Fail, Failed, &[]),
            rated(Pass, Failed, &[("contains", Passed), ("judge", Failed)]),
            // An error is no verdict: left out of the outcome's, not of its checks'.
            rated(Fail, Error, &[("contains", Failed), ("judge", Error)]),
        ];
        let df = agreement_frame(&rows).unwrap();
        let checks: Vec<Option<&str>> = df.column(CHECK).unwrap().str().unwrap().iter().collect();
        assert_eq!(checks, [Some("outcome"), Some("judge"), Some("contains")]);
        let rated: Vec<Option<u64>> = df.column(RATED).unwrap().u64().unwrap().iter().collect();
        // outcome: 4 (the error left out); judge: 3 single + 1 check; contains: 2.
        assert_eq!(rated, [Some(4), Some(4), Some(2)]);
        let agree: Vec<Option<u64>> = df.column(AGREE).unwrap().u64().unwrap().iter().collect();
        // outcome: P/P, F/P, F/F, P/F: 2. judge: P/P, F/P, F/F, P/F: 2. contains: P/P, F/F: 2.
        assert_eq!(agree, [Some(2), Some(2), Some(2)]);
        let kappa: Vec<Option<f64>> = df.column(KAPPA).unwrap().f64().unwrap().iter().collect();
        // Two of four agree and each says pass half the time: p_o = p_e = 0.5, κ = 0.
        assert_eq!(kappa[0], Some(0.0));
        assert_eq!(kappa[2], Some(1.0));
    }
}
