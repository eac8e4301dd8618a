//! What a datasheet run prints on the console when it ends, from the database: the datasheets
//! it wrote and the CSV files its reviews went to, then, for a run of reviews, its summaries
//! per reviewer and per reviewer and sensor (the tables of `track query --by reviewer` and
//! `--by sensor`: overall and mean P scores) (stdout), and per reviewer how the answers could
//! be read (stderr). It computes nothing itself: the frames are `summary`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use super::columns as cols;
use super::spec_csv::{csv_path, csv_row};
use super::summary::{ReviewFrames, review_summary};
use super::{Paths, ReviewError};
use crate::experiment::{ReportOptions, RunSummary};
use crate::output::{count, render};
use crate::store::{ParseStatus, Store};

/// Rows of the per-sensor table a run prints before pointing to the full one.
const REPORT_ROWS: usize = 200;

/// Prints the files of the run `summary` describes, and a line per reviewer on stderr.
pub(crate) fn print(
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
    if !reviews.is_empty() {
        print_summaries(store, summary.run_id, options, out)?;
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

/// The summaries of run `run_id`'s reviews: per reviewer, then per reviewer and sensor (the
/// first [`REPORT_ROWS`], with the command that lists all).
fn print_summaries(
    store: &Store,
    run_id: i64,
    options: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReviewError> {
    let (reviews, scores) = store.review_columns(&[run_id])?;
    let frames = ReviewFrames::new(reviews, scores)?;
    let by_reviewer = review_summary(&frames, cols::REVIEWER)?;
    let by_sensor = review_summary(&frames, cols::SENSOR)?;
    let write =
        |out: &mut dyn Write, text: String| writeln!(out, "{text}").map_err(ReviewError::Output);
    write(
        out,
        format!("\nPer reviewer\n{}", render(&by_reviewer, options.columns)),
    )?;
    if by_sensor.height() <= REPORT_ROWS {
        return write(
            out,
            format!(
                "Per reviewer and sensor\n{}",
                render(&by_sensor, options.columns)
            ),
        );
    }
    write(
        out,
        format!(
            "Per reviewer and sensor (first {REPORT_ROWS} of {} rows)\n{}",
            by_sensor.height(),
            render(&by_sensor.head(Some(REPORT_ROWS)), options.columns)
        ),
    )?;
    write(
        out,
        format!(
            "all {} rows: track query --by sensor --format csv --run {run_id}",
            by_sensor.height()
        ),
    )
}
