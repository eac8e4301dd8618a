//! Pairwise runs rated by people (`track query --by human`): per judge, how its verdicts agree
//! with people's. A person rates the candidates' answers pass or fail (`track rate RUN UID`
//! with an answer's uid, from `pairwise_answers`); where they passed one candidate's answer to
//! an item and failed the other's, they prefer the first, and a judge's verdict on that pair
//! (its two orders combined, an inconsistent pair a tie) agrees when it names the same winner.
//! Cohen's κ is computed on the winner (the first candidate, the second, or a tie), over the
//! pairs both decided. A verdict a person rated itself (pass: the judge is right; fail: it is
//! wrong) is counted beside. The statistics are `crate::analysis`'s.

use std::collections::HashMap;

use polars::prelude::*;

use super::columns as c;
use super::stats::{Combined, Verdicts};
use crate::analysis::stats::cohen_kappa;
use crate::store::{Store, Verdict as HumanVerdict, Winner};

/// The key of a candidate's answer to an item in a run: run, candidate, item.
pub type AnswerKey = (i64, String, String);

/// The columns of a stored verdict that name it (and its rating).
const VERDICT_KEY: [&str; 7] = [
    "run_id",
    "judge",
    "item",
    "candidate_a",
    "candidate_b",
    "repeat_index",
    "shown_order",
];

/// What one judge's row adds up.
#[derive(Debug, Default)]
struct JudgeAgreement {
    /// Per pair both decided: (the person's winner, the judge's), 0 the first candidate, 1
    /// the second, 2 a tie.
    pairs: Vec<(i64, i64)>,
    verdicts_rated: u64,
    verdicts_confirmed: u64,
}

/// The row of `name` in `judges`, added last when new.
fn of_judge<'a>(
    judges: &'a mut Vec<(String, JudgeAgreement)>,
    name: &str,
) -> &'a mut JudgeAgreement {
    let at = match judges.iter().position(|(n, _)| n == name) {
        Some(i) => i,
        None => {
            judges.push((name.to_owned(), JudgeAgreement::default()));
            judges.len() - 1
        }
    };
    &mut judges[at].1
}

/// `track query --by human` of pairwise runs: [`agreement_frame`] of their verdicts and
/// current ratings.
pub(crate) fn agreement_of_runs(store: &Store, runs: &[i64]) -> anyhow::Result<DataFrame> {
    let rows = store.pairwise_verdicts(runs)?;
    let verdicts = Verdicts::from_rows(&rows);
    let answers: HashMap<AnswerKey, bool> = store
        .current_ratings_by_key(runs, "pairwise_answers", &["run_id", "candidate", "item"])?
        .into_iter()
        .filter_map(|(key, rating)| {
            let passed = rating.verdict?.passed();
            let [run, candidate, item] = <[String; 3]>::try_from(key).ok()?;
            Some(((run.parse().ok()?, candidate, item), passed))
        })
        .collect();
    let verdict_ratings = store.current_ratings_by_key(runs, "pairwise_verdicts", &VERDICT_KEY)?;
    let rated_verdicts: Vec<(String, bool)> = rows
        .iter()
        .filter_map(|r| {
            let key = [
                r.run_id.to_string(),
                r.judge.clone(),
                r.item.clone(),
                r.candidate_a.clone(),
                r.candidate_b.clone(),
                r.repeat_index.to_string(),
                r.shown.as_str().to_owned(),
            ];
            let verdict = verdict_ratings.get(&key[..])?.verdict?;
            Some((r.judge.clone(), verdict == HumanVerdict::Pass))
        })
        .collect();
    Ok(agreement_frame(&verdicts, &answers, &rated_verdicts)?)
}

/// Per judge of `verdicts` (in the order first seen): the pairs a person decided by passing
/// one candidate's answer and failing the other's (`answers`: pass or fail by answer),
/// how many the judge's verdict agrees with, that share, Cohen's κ; and its verdicts a
/// person rated (`verdicts_rated`: judge, rated pass) and of those the confirmed.
pub(crate) fn agreement_frame(
    verdicts: &Verdicts,
    answers: &HashMap<AnswerKey, bool>,
    verdicts_rated: &[(String, bool)],
) -> PolarsResult<DataFrame> {
    let mut judges: Vec<(String, JudgeAgreement)> = verdicts
        .judges
        .iter()
        .map(|j| (j.judge.clone(), JudgeAgreement::default()))
        .collect();
    for judged in &verdicts.judged {
        let (a, b) = (
            &verdicts.candidates[judged.a],
            &verdicts.candidates[judged.b],
        );
        let rated = |candidate: &str| {
            answers
                .get(&(judged.run_id, candidate.to_owned(), judged.item.clone()))
                .copied()
        };
        let person = match (rated(a), rated(b)) {
            (Some(true), Some(false)) => 0,
            (Some(false), Some(true)) => 1,
            // No preference: both passed, both failed, or one not rated.
            _ => continue,
        };
        let judge = match judged.result {
            Combined::Invalid => continue,
            other => match other.counted() {
                Some(Winner::A) => 0,
                Some(Winner::B) => 1,
                _ => 2,
            },
        };
        of_judge(&mut judges, &judged.judge)
            .pairs
            .push((person, judge));
    }
    for (judge, confirmed) in verdicts_rated {
        let of = of_judge(&mut judges, judge);
        of.verdicts_rated += 1;
        of.verdicts_confirmed += u64::from(*confirmed);
    }
    let rated: Vec<u64> = judges.iter().map(|(_, j)| j.pairs.len() as u64).collect();
    let agree: Vec<u64> = judges
        .iter()
        .map(|(_, j)| j.pairs.iter().filter(|(p, q)| p == q).count() as u64)
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            c::JUDGE.into(),
            judges.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(c::RATED.into(), rated.clone()),
        Column::new(c::AGREE.into(), agree.clone()),
        Column::new(
            c::AGREE_PCT.into(),
            rated
                .iter()
                .zip(&agree)
                .map(|(&n, &a)| (n > 0).then(|| a as f64 * 100.0 / n as f64))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            c::KAPPA.into(),
            judges
                .iter()
                .map(|(_, j)| cohen_kappa(&j.pairs, 0, 2))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            c::VERDICTS_RATED.into(),
            judges
                .iter()
                .map(|(_, j)| j.verdicts_rated)
                .collect::<Vec<_>>(),
        ),
        Column::new(
            c::VERDICTS_CONFIRMED.into(),
            judges
                .iter()
                .map(|(_, j)| j.verdicts_confirmed)
                .collect::<Vec<_>>(),
        ),
    ])
}
