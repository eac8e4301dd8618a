//! What a benchmark run prints on the console when it ends, from the database. The point
//! comes last, where a terminal leaves it in view: the per-result table (`--detail` only), the
//! per-case table (when short, or with `--detail`), the first failures with the start of each
//! answer and why it failed, then the per-model summary and the template x model table (when
//! the run has several templates). `--no-detail` prints the summaries only. Long tables are
//! cut with the command that gives all. It computes nothing itself: the frames are
//! `summary`'s.

use super::columns as c;
use std::io::Write;

use polars::prelude::*;

use super::BenchError;
use super::summary::BenchFrames;
use crate::experiment::{Detail, ReportOptions, RunSummary};
use crate::output::{Columns, count, render};
use crate::store::{FailureRow, Store};

/// Rows a run's report shows of a table before pointing to the full one.
const REPORT_ROWS: usize = 200;

/// The most cases whose table a run prints without `--detail`: a longer one would push the
/// summaries off a terminal.
const SHORT_CASE_ROWS: usize = 12;

/// Failures a run lists at its end, each with its answer's start and its reason.
const LISTED_FAILURES: usize = 5;

/// Prints the tables of the run `summary` describes.
pub(crate) fn print(
    store: &Store,
    summary: &RunSummary,
    options: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), BenchError> {
    let run_id = summary.run_id;
    // The rows' own columns are read only for the detail table; the summaries need numbers.
    let frames = match options.detail {
        Detail::All => BenchFrames::from_columns(store.bench_columns(&[run_id], true)?)?,
        Detail::Usual | Detail::Summaries => BenchFrames::summaries(store, &[run_id])?,
    };
    if options.detail == Detail::All {
        let detail = detail_table(&frames)?;
        print_limited(
            out,
            "Results",
            &detail,
            "track query --by result --run",
            (run_id, options.columns),
        )?;
    }
    if options.detail != Detail::Summaries {
        print_cases(out, &frames, options, run_id)?;
        print_failures(out, store, run_id, &frames)?;
    }
    // The summaries last: on a terminal they are what stays in view.
    writeln!(
        out,
        "Per model\n{}",
        render(&frames.by_model, options.columns)
    )?;
    writeln!(out, "{}", crate::output::fit_line(&latency_note(summary)))?;
    if let Some(by_template) = &frames.by_template {
        writeln!(
            out,
            "Per template and model (% success, 95 % interval; track query --by template)\n{}",
            render(
                &super::summary::template_matrix(by_template)?,
                options.columns
            )
        )?;
    }
    Ok(())
}

/// The per-case table: whole with `--detail` (up to [`REPORT_ROWS`]), else when it has at
/// most [`SHORT_CASE_ROWS`] rows; a longer one is named with the command that prints it.
fn print_cases(
    out: &mut dyn Write,
    frames: &BenchFrames,
    options: &ReportOptions,
    run_id: i64,
) -> Result<(), BenchError> {
    let by_case = &frames.by_prompt;
    let cases = by_case.height();
    if options.detail == Detail::All || cases <= SHORT_CASE_ROWS {
        print_limited(
            out,
            "Per case",
            by_case,
            "track query --by case --format csv --run",
            (run_id, options.columns),
        )?;
    } else {
        writeln!(
            out,
            "{}",
            crate::output::fit_line(&format!(
                "Per case: {}, not shown: track query --by case --run {run_id} (or --detail)",
                count(cases as u64, "case")
            ))
        )?;
    }
    Ok(())
}

/// The first [`LISTED_FAILURES`] results that did not pass, two lines each: whose they are
/// and why (the failing check's reason, or the error), then the start of the answer.
fn print_failures(
    out: &mut dyn Write,
    store: &Store,
    run_id: i64,
    frames: &BenchFrames,
) -> Result<(), BenchError> {
    let failures = store.bench_failures(
        &[run_id],
        LISTED_FAILURES,
        crate::output::ANSWER_START_BYTES,
    )?;
    if failures.is_empty() {
        return Ok(());
    }
    let total = not_passed(&frames.by_model)?;
    let heading = if (failures.len() as u64) < total {
        format!(
            "Failures: the first {} of {total} (each result: track query --by result --run \
             {run_id})",
            failures.len()
        )
    } else {
        format!("Failures: {}", failures.len())
    };
    writeln!(out, "{}", crate::output::fit_line(&heading))?;
    let width = crate::output::terminal_width().unwrap_or(120);
    for failure in &failures {
        for line in failure_lines(failure, width) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// The results of the per-model summary that did not pass: failed plus errors.
fn not_passed(by_model: &DataFrame) -> PolarsResult<u64> {
    let sum = |name: &str| -> PolarsResult<u64> {
        Ok(by_model
            .column(name)?
            .as_materialized_series()
            .cast(&DataType::UInt64)?
            .u64()?
            .sum()
            .unwrap_or(0))
    };
    Ok(sum(c::FAILED)? + sum(c::ERRORS)?)
}

/// One failure as three lines no wider than `width`: `failed model · template · case`, then
/// `why: …` (the failing check's reason, or the error) and `answer: …` (its start), each cut
/// to the width.
fn failure_lines(failure: &FailureRow, width: usize) -> [String; 3] {
    let status = failure.status.as_str();
    let mut whose = vec![failure.model_ref.as_str()];
    if let Some(template) = &failure.template {
        whose.push(template);
    }
    whose.push(&failure.prompt_name);
    let repeat = if failure.repeat_index > 0 {
        format!(" (repeat {})", failure.repeat_index)
    } else {
        String::new()
    };
    let head = format!("  {status} {}{repeat}", whose.join(" · "));
    let room = |label: &str| width.saturating_sub(label.chars().count()).max(20);
    let (why, answer) = ("    why: ", "    answer: ");
    let reason = crate::output::reason_line(failure.detail.as_deref(), room(why));
    let said = failure.answer.as_deref().map_or_else(
        || "(no answer)".to_owned(),
        |a| crate::output::answer_start(a, room(answer)),
    );
    [head, format!("{why}{reason}"), format!("{answer}{said}")]
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
            col(c::TEMPLATE),
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
    // The template column only when the results come from several templates.
    let detail = if frames.by_template.is_none() {
        detail.drop(c::TEMPLATE)?
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
/// command that gives all of them: a table of 50,000 cases helps nobody on a terminal.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{ExperimentKind, ReportOptions};
    use crate::store::{BenchResultRow, Outcome, RunStatus};

    fn result(run: i64, template: u32, prompt: u32, passed: bool) -> BenchResultRow {
        BenchResultRow {
            run_id: run,
            model_index: 0,
            prompt_index: prompt,
            repeat_index: 0,
            model_ref: "openai:m".into(),
            provider: "openai".into(),
            model_id: "m".into(),
            prompt_name: format!("q{prompt}"),
            method: "exact".into(),
            call_id: None,
            cache_hit: false,
            outcome: Outcome::of_test(passed),
            detail: None,
            latency_ms: Some(100.0),
            input_tokens: Some(10),
            output_tokens: Some(5),
            tokens_estimated: false,
            cost_usd: Some(0.001),
            paid_usd: Some(0.001),
            energy_wh: None,
            energy_wh_min: None,
            energy_wh_max: None,
            energy_method: None,
            judge_call_id: None,
            judge_score: None,
            judge_cost_usd: None,
            expected: Some("4".into()),
            template_index: template,
            template_name: Some(["terse", "steps"][template as usize].into()),
            score: None,
            checks: Vec::new(),
        }
    }

    fn printed(store: &Store, run: i64) -> String {
        let summary = RunSummary {
            run_id: run,
            kind: ExperimentKind::Bench,
            status: RunStatus::Completed,
            signal: None,
            tally: Default::default(),
            elapsed: std::time::Duration::from_secs(1),
            budget: None,
            waiting: None,
        };
        let options = ReportOptions {
            detail: Detail::All,
            quiet: true,
            columns: Columns::Wide,
        };
        let mut out = Vec::new();
        print(store, &summary, &options, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_run_of_several_templates_prints_their_table_and_the_template_of_each_result() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        store
            .insert_bench_results(&[
                result(run, 0, 0, true),
                result(run, 0, 1, true),
                result(run, 1, 0, false),
                result(run, 1, 1, true),
            ])
            .unwrap();
        let out = printed(&store, run);
        let table = out
            .split("Per template and model")
            .nth(1)
            .unwrap_or_else(|| panic!("{out}"));
        // The summaries last: nothing follows the template table.
        assert!(
            !table.contains("Per case") && !table.contains("Failures"),
            "{out}"
        );
        let terse = table.lines().find(|l| l.contains("terse")).unwrap();
        let steps = table.lines().find(|l| l.contains("steps")).unwrap();
        assert!(terse.contains("100.0 % (34.2–100.0)"), "{table}");
        assert!(steps.contains("50.0 % (9.5–90.5)"), "{table}");
        // The detail table names each result's template.
        // (Its first part: at 80 columns the table is printed in parts, each with the keys.)
        let results = out.split("Results").nth(1).unwrap();
        let results = results.split("(part 2 of").next().unwrap();
        let results = results.split("Per case").next().unwrap();
        assert_eq!(results.matches("steps").count(), 2, "{results}");

        // One template: neither.
        let one = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let mut plain = result(one, 0, 0, true);
        plain.template_name = None;
        store.insert_bench_results(&[plain]).unwrap();
        let out = printed(&store, one);
        assert!(!out.contains("Per template and model"), "{out}");
        assert!(!out.contains("template"), "{out}");
    }
}
