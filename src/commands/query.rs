//! `track query`: summaries computed with polars from the database, for any run.

use std::process::ExitCode;

use super::Context;
use crate::analysis::{model_summary, prompt_summary, results_frame};
use crate::output::{Format, print_frame};
use crate::store::RunSelector;

/// What to group benchmark results by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// Per model: total time, cost, paid, tokens, energy and % success.
    Model,
    /// Per prompt: % success per model and overall, average tokens, cost, time and energy.
    Prompt,
}

/// Summaries of recorded results, e.g. `track query --by model --run all --format csv`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// What to group by.
    #[arg(long, value_enum)]
    by: GroupBy,
    /// Which runs: a run id, `latest` or `all`.
    #[arg(long, default_value = "latest")]
    run: RunSelector,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

pub fn run(context: &Context, args: QueryArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let run_ids = store.select_runs("bench", args.run)?;
    let results = results_frame(store.bench_columns(&run_ids, false)?)?;
    let summary = match args.by {
        GroupBy::Model => model_summary(&results)?,
        GroupBy::Prompt => prompt_summary(&results)?,
    };
    print_frame(&summary, args.format)?;
    Ok(ExitCode::SUCCESS)
}
