//! What a pairwise run prints when it ends, from its stored verdicts: the candidates by rank,
//! the pairs and the judges. It computes nothing itself: the frames are `summary`'s.

use std::io::Write;

use super::PairwiseError;
use super::stats::Verdicts;
use super::summary::{candidate_summary, judge_summary, pair_summary};
use crate::experiment::ReportOptions;
use crate::output::render;
use crate::store::Store;

/// Prints the tables of run `run_id`.
pub fn print(
    store: &Store,
    run_id: i64,
    options: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), PairwiseError> {
    let verdicts = Verdicts::from_rows(&store.pairwise_verdicts(&[run_id])?);
    if verdicts.judged.is_empty() {
        writeln!(out, "no pair was judged in both orders")?;
        return Ok(());
    }
    writeln!(
        out,
        "Candidates (Bradley–Terry strength, natural log, mean 0)\n{}",
        render(&candidate_summary(&verdicts)?, options.columns)
    )?;
    writeln!(
        out,
        "Pairs\n{}",
        render(&pair_summary(&verdicts)?, options.columns)
    )?;
    writeln!(
        out,
        "Judges\n{}",
        render(&judge_summary(&verdicts)?, options.columns)
    )?;
    Ok(())
}
