//! What a pairwise run prints when it ends, from its stored verdicts: the candidates by rank,
//! the pairs and the judges. It computes nothing itself: the frames are `summary`'s.

use std::io::Write;

use super::PairwiseError;
use super::columns as c;
use super::stats::Verdicts;
use super::summary::{candidate_summary_with, judge_summary, pair_summary};
use crate::analysis::stats::BOOTSTRAP;
use crate::experiment::ReportOptions;
use crate::output::{Columns, render};
use crate::store::Store;

/// Prints the tables of run `run_id`.
pub(crate) fn print(
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
    let strengths = verdicts.strengths();
    writeln!(
        out,
        "Candidates (Bradley–Terry strength, natural log, mean 0)\n{}",
        render(
            &candidate_summary_with(&verdicts, &strengths)?,
            options.columns
        )
    )?;
    if let Some(dropped) = strengths.iter().map(|s| s.dropped).max().filter(|&d| d > 0) {
        options.note(format!(
            "strength intervals: {dropped} of {} resamples of the items had no maximum (a \
             candidate that never won or never lost in them) and were dropped",
            BOOTSTRAP.resamples
        ));
    }
    let mut pairs = pair_summary(&verdicts)?;
    if options.columns == Columns::Compact {
        // Long candidate names leave no room: the judges' table has the inconsistency, and
        // `--wide` or `track query --by pair` every count.
        pairs = pairs.drop_many([c::INCONSISTENT, c::INVALID]);
    }
    writeln!(out, "Pairs\n{}", render(&pairs, options.columns))?;
    writeln!(
        out,
        "Judges\n{}",
        render(&judge_summary(&verdicts)?, options.columns)
    )?;
    Ok(())
}
