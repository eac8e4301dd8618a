//! What a datasheet run prints on the console when it ends, from the database: the datasheets
//! it wrote and the CSV files its reviews went to (stdout), and per reviewer how the answers
//! could be read (stderr).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use super::spec_csv::{csv_path, csv_row};
use super::{Paths, ReviewError};
use crate::experiment::{ReportOptions, RunSummary};
use crate::output::count;
use crate::store::{ParseStatus, Store};

/// Prints the files of the run `summary` describes, and a line per reviewer on stderr.
pub fn print(
    store: &Store,
    summary: &RunSummary,
    paths: &Paths,
    options: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReviewError> {
    for path in store.generated_paths(summary.run_id)? {
        writeln!(out, "{path}").map_err(ReviewError::Output)?;
    }
    let reviews = store.review_rows(&[summary.run_id])?;
    let files: BTreeSet<_> = reviews
        .iter()
        .filter(|r| r.parse_status != ParseStatus::Error)
        .map(|r| csv_path(&paths.reviews, &csv_row(r)))
        .collect();
    for path in files {
        writeln!(out, "{}", path.display()).map_err(ReviewError::Output)?;
    }
    // Per reviewer: ok, partial, failed, skipped, error.
    let mut counts: BTreeMap<&str, [usize; 5]> = BTreeMap::new();
    for review in &reviews {
        let slot = match review.parse_status {
            ParseStatus::Ok => 0,
            ParseStatus::Partial => 1,
            ParseStatus::Failed => 2,
            ParseStatus::Skipped => 3,
            ParseStatus::Error => 4,
        };
        counts.entry(&review.reviewer_ref).or_default()[slot] += 1;
    }
    for (reviewer, [ok, partial, failed, skipped, errors]) in counts {
        // The parse-failure rate of the answers received.
        let answered = ok + partial + failed;
        let rate = if answered > 0 {
            format!(
                " ({:.0} % of answers)",
                failed as f64 * 100.0 / answered as f64
            )
        } else {
            String::new()
        };
        options.note(format!(
            "{reviewer}: {}: {ok} complete, {partial} with N/A scores, {failed} unparsable{rate}, \
             {skipped} without an official datasheet; {}",
            count((ok + partial + failed + skipped) as u64, "review"),
            count(errors as u64, "failed call")
        ));
    }
    Ok(())
}
