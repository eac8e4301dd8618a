//! What a benchmark run prints on the console when it ends, from the database: per-model and
//! per-prompt summaries, and the detail table (unless turned off). Long tables are cut with the
//! command that gives all. It computes nothing itself: the frames are `summary`'s.

use super::columns as c;
use std::io::Write;

use polars::prelude::*;

use super::BenchError;
use super::summary::BenchFrames;
use crate::experiment::{ReportOptions, RunSummary};
use crate::output::{Columns, count, render};
use crate::store::Store;

/// Rows a run's report shows of a table before pointing to the full one.
const REPORT_ROWS: usize = 200;

/// Prints the tables of the run `summary` describes.
pub fn print(
    store: &Store,
    summary: &RunSummary,
    options: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), BenchError> {
    let run_id = summary.run_id;
    // The text columns only the detail table shows are read only for it.
    let frames = BenchFrames::from_columns(store.bench_columns(&[run_id], options.detail)?)?;
    // Summaries first: on a terminal they are what a reader wants on screen; the detail of a
    // long run would scroll them away.
    writeln!(
        out,
        "Per model\n{}",
        render(&frames.by_model, options.columns)
    )?;
    writeln!(out, "{}", crate::output::fit_line(&latency_note(summary)))?;
    print_limited(
        out,
        "Per prompt",
        &frames.by_prompt,
        "track query --by prompt --format csv --run",
        (run_id, options.columns),
    )?;
    if options.detail {
        let detail = detail_table(&frames)?;
        print_limited(
            out,
            "Results",
            &detail,
            "track export csv",
            (run_id, options.columns),
        )?;
    }
    Ok(())
}

/// The line under the per-model table: its latency sum is not the time the run took (calls
/// overlap, and a cached answer keeps the latency of the run that paid for it), which it gives.
fn latency_note(summary: &RunSummary) -> String {
    let counts = &summary.tally.counts;
    let cached = if counts.cache_hits > 0 {
        format!(
            ", each cached answer's when it was called ({} of {} cached)",
            counts.cache_hits,
            count(counts.calls, "answer")
        )
    } else {
        String::new()
    };
    format!(
        "latency sum: the answers' latencies added up{cached}; calls overlap: this run took \
         {:.2} s",
        summary.elapsed.as_secs_f64()
    )
}

/// The per-evaluation table: the repeat column only when there are repeats, the estimated
/// tokens column only when some are.
fn detail_table(frames: &BenchFrames) -> PolarsResult<DataFrame> {
    let results = &frames.results;
    let detail = results
        .clone()
        .lazy()
        .select([
            col(c::MODEL),
            col(c::PROMPT),
            col(c::REPEAT),
            col(c::STATUS).alias(c::RESULT),
            (col(c::LATENCY_MS) / lit(1000.0)).alias(c::TIME_S),
            col(c::INPUT_TOKENS).alias(c::TOKENS_IN),
            col(c::OUTPUT_TOKENS).alias(c::TOKENS_OUT),
            col(c::COST_USD),
            col(c::ENERGY_WH),
            col(c::CACHE_HIT).alias(c::CACHED),
        ])
        .collect()?;
    let any_estimated = results
        .column(c::TOKENS_ESTIMATED)?
        .as_materialized_series()
        .bool()?
        .any();
    let detail = if any_estimated {
        detail.hstack(&[results.column(c::TOKENS_ESTIMATED)?.clone()])?
    } else {
        detail
    };
    let repeats = results
        .column(c::REPEAT)?
        .as_materialized_series()
        .max::<u32>()?;
    if results.height() > 0 && repeats == Some(0) {
        detail.drop(c::REPEAT)
    } else {
        Ok(detail)
    }
}

/// Prints `df` under `title`, cut to its first [`REPORT_ROWS`] rows with a note naming the
/// command that gives all of them: a table of 50,000 prompts helps nobody on a terminal.
fn print_limited(
    out: &mut dyn Write,
    title: &str,
    df: &DataFrame,
    full: &str,
    (run_id, columns): (i64, Columns),
) -> std::io::Result<()> {
    if df.height() <= REPORT_ROWS {
        return writeln!(out, "{title}\n{}", render(df, columns));
    }
    writeln!(
        out,
        "{title} (first {REPORT_ROWS} of {} rows)\n{}",
        df.height(),
        render(&df.head(Some(REPORT_ROWS)), columns)
    )?;
    let full = if full.ends_with("--run") {
        format!("{full} {run_id}")
    } else {
        format!("{full} --run {run_id}")
    };
    writeln!(out, "all {} rows: {full}", df.height())
}
