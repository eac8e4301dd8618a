//! `track export csv --kind pairwise`: `pairwise_verdicts.csv` (one row per verdict, the
//! winner as a candidate's name, `tie` or `invalid`, with the judge's and the candidates' whole
//! answers) and `pairwise_summary.csv` (per
//! candidate: wins, ties, losses, win rate, strength, rank), computed from stored verdicts.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context as _;

use super::columns as c;
use super::stats::Verdicts;
use super::summary::candidate_summary;
use crate::kinds::{ExportOptions, ExportRuns};
use crate::rating::{ANSWER, HUMAN_COLUMNS, human_fields};
use crate::store::{Store, VerdictRow, Winner};

/// Writes the pairwise CSV files of `runs` into `options.out`; each path on stdout.
pub(crate) fn write_csv(
    store: &Store,
    runs: &ExportRuns<'_>,
    options: &ExportOptions,
) -> anyhow::Result<()> {
    let rows = store.pairwise_verdicts(runs.ids)?;
    let out = &options.out;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let verdicts = out.join("pairwise_verdicts.csv");
    write_verdicts(store, &verdicts, &rows)
        .with_context(|| format!("writing {}", verdicts.display()))?;
    crate::output::say(verdicts.display());
    let summary = out.join("pairwise_summary.csv");
    let frame = candidate_summary(&Verdicts::from_rows(&rows))?;
    crate::output::write_csv_file(&frame, &summary)
        .with_context(|| format!("writing {}", summary.display()))?;
    crate::output::say(summary.display());
    Ok(())
}

/// The winner of `r` as exported: a candidate's name, `tie` or `invalid`.
pub(crate) fn winner_name(r: &VerdictRow) -> &str {
    match r.winner {
        Winner::A => &r.candidate_a,
        Winner::B => &r.candidate_b,
        Winner::Tie | Winner::Invalid => r.winner.as_str(),
    }
}

/// The columns of `pairwise_verdicts.csv`.
const VERDICTS_HEADER: [&str; 17] = [
    c::RUN_ID,
    c::JUDGE,
    c::ITEM,
    c::CANDIDATE_A,
    c::CANDIDATE_B,
    c::REPEAT,
    c::ORDER,
    c::WINNER,
    c::JUSTIFICATION,
    c::CALL_ID,
    HUMAN_COLUMNS[0],
    HUMAN_COLUMNS[1],
    HUMAN_COLUMNS[2],
    HUMAN_COLUMNS[3],
    ANSWER,
    c::ANSWER_A,
    c::ANSWER_B,
];

/// `pairwise_verdicts.csv`: each verdict with the judge's whole answer (`answer`) and, when the
/// candidates are models, theirs (`answer_a`, `answer_b`), read a row at a time.
fn write_verdicts(store: &Store, path: &Path, rows: &[VerdictRow]) -> anyhow::Result<()> {
    let run_ids: Vec<i64> = {
        let mut ids: Vec<i64> = rows.iter().map(|r| r.run_id).collect();
        ids.dedup();
        ids
    };
    // The call of each candidate's answer: ids only, the texts read row by row.
    let answered: HashMap<(i64, String, String), i64> = store
        .pairwise_answers(&run_ids)?
        .into_iter()
        .filter(|a| a.error.is_none())
        .filter_map(|a| Some(((a.run_id, a.candidate, a.item), a.call_id?)))
        .collect();
    let answer_of = |run: i64, candidate: &str, item: &str| -> anyhow::Result<String> {
        Ok(
            match answered.get(&(run, candidate.to_owned(), item.to_owned())) {
                Some(&call) => store.answer_text(call)?.unwrap_or_default(),
                None => String::new(),
            },
        )
    };
    let ratings = store.current_ratings_by_key(
        &run_ids,
        "pairwise_verdicts",
        &[
            "run_id",
            "judge",
            "item",
            "candidate_a",
            "candidate_b",
            "repeat_index",
            "shown_order",
        ],
    )?;
    let mut writer = csv::Writer::from_path(path)?;
    writer.write_record(VERDICTS_HEADER)?;
    for r in rows {
        let key = [
            r.run_id.to_string(),
            r.judge.clone(),
            r.item.clone(),
            r.candidate_a.clone(),
            r.candidate_b.clone(),
            r.repeat_index.to_string(),
            r.shown.as_str().to_owned(),
        ];
        let [verdict, score, comment, rater] = human_fields(ratings.get(&key[..]));
        writer.write_record([
            r.run_id.to_string(),
            r.judge.clone(),
            r.item.clone(),
            r.candidate_a.clone(),
            r.candidate_b.clone(),
            r.repeat_index.to_string(),
            r.shown.as_str().to_owned(),
            winner_name(r).to_owned(),
            r.justification.clone().unwrap_or_default(),
            r.call_id.map(|id| id.to_string()).unwrap_or_default(),
            verdict,
            score,
            comment,
            rater,
            match r.call_id {
                Some(call) => store.answer_text(call)?.unwrap_or_default(),
                None => String::new(),
            },
            answer_of(r.run_id, &r.candidate_a, &r.item)?,
            answer_of(r.run_id, &r.candidate_b, &r.item)?,
        ])?;
    }
    writer.flush()?;
    Ok(())
}
