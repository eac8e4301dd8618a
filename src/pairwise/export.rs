//! `track export csv --kind pairwise`: `pairwise_verdicts.csv` (one row per verdict, the
//! winner as a candidate's name, `tie` or `invalid`) and `pairwise_summary.csv` (per
//! candidate: wins, ties, losses, win rate, strength, rank), computed from stored verdicts.

use std::path::Path;

use anyhow::Context as _;

use super::columns as c;
use super::stats::Verdicts;
use super::summary::candidate_summary;
use crate::kinds::{ExportOptions, ExportRuns};
use crate::store::{Store, VerdictRow, Winner};

/// Writes the pairwise CSV files of `runs` into `options.out`; each path on stdout.
pub fn write_csv(
    store: &Store,
    runs: &ExportRuns<'_>,
    options: &ExportOptions,
) -> anyhow::Result<()> {
    let rows = store.pairwise_verdicts(runs.ids)?;
    let out = &options.out;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let verdicts = out.join("pairwise_verdicts.csv");
    write_verdicts(&verdicts, &rows).with_context(|| format!("writing {}", verdicts.display()))?;
    crate::output::say(verdicts.display());
    let summary = out.join("pairwise_summary.csv");
    let frame = candidate_summary(&Verdicts::from_rows(&rows))?;
    crate::output::write_csv_file(&frame, &summary)
        .with_context(|| format!("writing {}", summary.display()))?;
    crate::output::say(summary.display());
    Ok(())
}

/// The winner of `r` as exported: a candidate's name, `tie` or `invalid`.
pub fn winner_name(r: &VerdictRow) -> &str {
    match r.winner {
        Winner::A => &r.candidate_a,
        Winner::B => &r.candidate_b,
        Winner::Tie | Winner::Invalid => r.winner.as_str(),
    }
}

fn write_verdicts(path: &Path, rows: &[VerdictRow]) -> anyhow::Result<()> {
    let mut writer = csv::Writer::from_path(path)?;
    writer.write_record([
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
    ])?;
    for r in rows {
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
        ])?;
    }
    writer.flush()?;
    Ok(())
}
