//! `track runs`: the runs recorded in the database.

use std::process::ExitCode;

use polars::prelude::*;

use super::Context;
use crate::output::{Format, print_frame};

/// List runs: id, kind, file, started, status, calls, cache hits, errors, cost and paid.
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

pub fn run(context: &Context, args: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let runs = store.list_runs()?;
    let df = DataFrame::new_infer_height(vec![
        Column::new("id".into(), runs.iter().map(|r| r.id).collect::<Vec<_>>()),
        Column::new(
            "kind".into(),
            runs.iter().map(|r| r.kind.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "file".into(),
            runs.iter().map(|r| r.file.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "started".into(),
            runs.iter()
                .map(|r| r.started_at.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "status".into(),
            runs.iter().map(|r| r.status.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "calls".into(),
            runs.iter().map(|r| r.results).collect::<Vec<_>>(),
        ),
        Column::new(
            "cache_hits".into(),
            runs.iter().map(|r| r.cache_hits).collect::<Vec<_>>(),
        ),
        Column::new(
            "errors".into(),
            runs.iter().map(|r| r.errors).collect::<Vec<_>>(),
        ),
        Column::new(
            "cost_usd".into(),
            runs.iter().map(|r| r.cost_usd).collect::<Vec<_>>(),
        ),
        Column::new(
            "paid_usd".into(),
            runs.iter().map(|r| r.paid_usd).collect::<Vec<_>>(),
        ),
    ])?;
    print_frame(&df, args.format)?;
    Ok(ExitCode::SUCCESS)
}
