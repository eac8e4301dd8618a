//! `track merge OUT IN…`: joins databases, the shards of a plan into one run. Glue only: the
//! checks and the copying are the store's (`store::merge`).

use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use crate::store::{MergeReport, merge};

/// Merge track databases (the shards of a plan, or a teammate's) into one.
///
/// Merge track databases into OUT: the shards of a plan (`--shard k/N`, each in its own
/// database) into one run whose statistics come from all their rows, or any databases (a
/// teammate's) into one, sharing their call caches. Every input is checked first: a missing,
/// repeated or unfinished shard, or shards of different plans, are refused and OUT is left
/// untouched. Merging is idempotent and the order of the inputs does not matter; OUT is
/// created if it does not exist and replaced in one step, so a merge stopped halfway leaves
/// it as it was.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The database to merge into (created if missing; an existing one keeps its contents).
    #[arg(value_name = "OUT")]
    out: PathBuf,
    /// The databases to merge (each shard's, or any track database).
    #[arg(value_name = "DB", required = true)]
    inputs: Vec<PathBuf>,
    /// Merge a plan whose shards are not all there, or not all finished; the merged run is
    /// marked `partial` and its figures cover only what was merged.
    #[arg(long)]
    allow_partial: bool,
}

/// Runs `track merge`.
pub(crate) fn run(context: &Context, args: MergeArgs) -> anyhow::Result<ExitCode> {
    let report = merge(&args.out, &args.inputs, args.allow_partial)?;
    print(context, &args, &report);
    Ok(ExitCode::SUCCESS)
}

/// What was merged, one line per input and one for the plan.
fn print(context: &Context, args: &MergeArgs, report: &MergeReport) {
    if context.quiet {
        return;
    }
    for input in &report.inputs {
        crate::output::say(format_args!(
            "{}: {} runs, {} calls, {} rows added",
            input.path.display(),
            input.runs,
            input.calls,
            input.rows
        ));
    }
    if let Some(plan) = &report.plan {
        let shards: Vec<String> = plan.present.iter().map(|k| k.to_string()).collect();
        crate::output::say(format_args!(
            "plan {} ({}): shards {} of {} are run {} ({}), uid {}",
            &plan.plan_sha256[..12.min(plan.plan_sha256.len())],
            plan.kind.as_str(),
            shards.join(", "),
            plan.shards,
            plan.run_id,
            plan.status,
            plan.run_uid
        ));
    }
    crate::output::say(format_args!("merged into {}", args.out.display()));
}
