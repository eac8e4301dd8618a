//! `track runs`: the runs recorded in the database, and the errors of one.

use std::process::ExitCode;

use polars::prelude::*;

use super::Context;
use crate::experiment::observed_status;
use crate::output::{Columns, Format, print_frame};
use crate::store::{RunErrorRow, RunInfo};

/// List runs: id, kind, file (or the command line of a run without one), models, started,
/// status (a run whose process is gone shows as `abandoned`; one stopped by its budget as
/// `budget`), calls, cache hits, errors, cost, what it paid and its budget (`--budget`,
/// `budget:`; empty when none); with --wide or in CSV/JSON, the command line too. `--errors
/// ID` lists what run ID counts as errors, each with its item and why.
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// List the errors this run counts: the calls that got no answer (failed, no key, not
    /// cached offline), then the answers that could not be used (an unparsable review, a
    /// judge's garbage verdict).
    #[arg(long, value_name = "RUN")]
    errors: Option<i64>,
    /// Only the newest N runs.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A table with every column under its full header [default: the main columns].
    #[arg(long)]
    wide: bool,
}

pub fn run(context: &Context, args: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    if let Some(run_id) = args.errors {
        let df = errors_frame(&crate::kinds::run_errors(&store, run_id)?)?;
        print_frame(&df, args.format, Columns::wide_if(args.wide))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut runs = store.list_runs()?;
    if let Some(limit) = args.limit {
        runs.truncate(limit);
    }
    let mut df = runs_frame(context, &runs)?;
    if args.format == Format::Table && !args.wide {
        // Compact tables leave what was paid to --wide, but a run's budget is read against
        // what it paid: here it stays, beside the budget.
        df.rename("paid_usd", "run_paid_usd".into())?;
    }
    print_frame(&df, args.format, Columns::wide_if(args.wide))?;
    Ok(ExitCode::SUCCESS)
}

/// The errors of a run, one row each (`track runs --errors ID`).
fn errors_frame(errors: &[RunErrorRow]) -> PolarsResult<DataFrame> {
    let column = |name: &str, values: Vec<String>| Column::new(name.into(), values);
    DataFrame::new_infer_height(vec![
        column("stage", errors.iter().map(|e| e.stage.clone()).collect()),
        column(
            "model",
            errors.iter().map(|e| e.model_ref.clone()).collect(),
        ),
        column("item", errors.iter().map(|e| e.item.clone()).collect()),
        Column::new(
            "attempts".into(),
            errors.iter().map(|e| e.attempts).collect::<Vec<_>>(),
        ),
        column("error", errors.iter().map(|e| e.error.clone()).collect()),
    ])
}

/// The runs, one row each, with the status observed now (a run whose process is gone is
/// `abandoned`).
fn runs_frame(context: &Context, runs: &[RunInfo]) -> PolarsResult<DataFrame> {
    let status: Vec<&str> = runs
        .iter()
        .map(|r| observed_status(&context.db, r.id, r.status).as_str())
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new("id".into(), runs.iter().map(|r| r.id).collect::<Vec<_>>()),
        Column::new(
            "kind".into(),
            runs.iter().map(|r| r.kind.clone()).collect::<Vec<_>>(),
        ),
        // A run of a command without an experiment file is named by its command line.
        Column::new(
            "file".into(),
            runs.iter()
                .map(|r| r.file.clone().or_else(|| r.command.clone()))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "models".into(),
            runs.iter().map(|r| r.models.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "started".into(),
            runs.iter()
                .map(|r| r.started_at.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new("status".into(), status),
        Column::new(
            "calls".into(),
            runs.iter().map(|r| r.tally.calls).collect::<Vec<_>>(),
        ),
        Column::new(
            "cache_hits".into(),
            runs.iter().map(|r| r.tally.cache_hits).collect::<Vec<_>>(),
        ),
        Column::new(
            "errors".into(),
            runs.iter().map(|r| r.tally.errors).collect::<Vec<_>>(),
        ),
        Column::new(
            "cost_usd".into(),
            runs.iter().map(|r| r.tally.cost_usd).collect::<Vec<_>>(),
        ),
        Column::new(
            "paid_usd".into(),
            runs.iter().map(|r| r.tally.paid_usd).collect::<Vec<_>>(),
        ),
        Column::new(
            "budget_usd".into(),
            runs.iter().map(|r| r.budget_usd).collect::<Vec<_>>(),
        ),
        Column::new(
            "command".into(),
            runs.iter().map(|r| r.command.clone()).collect::<Vec<_>>(),
        ),
    ])
}
