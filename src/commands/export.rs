//! `track export csv`: the CSV files of a kind's runs, as its registry entry writes them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::LazyLock;

use super::{Context, selection_status};
use crate::experiment::ExperimentKind;
use crate::kinds::{self, ExportOptions, ExportRuns};
use crate::store::RunSelector;

/// Export recorded results.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    format: ExportFormat,
}

#[derive(Debug, clap::Subcommand)]
enum ExportFormat {
    /// Benchmarks: bench_results.csv, bench_by_model.csv and bench_by_prompt.csv.
    /// Reviews (--kind review): <out>/<ReviewerProvider>_<ReviewerModel>/<Brand>_<Sensor>.csv.
    /// Relevance (--kind relevance): comparison_summary.csv, comparison_by_predicate.csv,
    /// comparison_statistics.csv and relevance_predictions.csv.
    Csv(CsvArgs),
}

/// Which experiment kind to export: one whose registry entry has a CSV export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ExportKind(ExperimentKind);

/// The kinds `--kind` offers, in the order of [`ExperimentKind::ALL`].
static EXPORT_KINDS: LazyLock<Vec<ExportKind>> = LazyLock::new(|| {
    ExperimentKind::ALL
        .iter()
        .filter(|&&k| kinds::kind(k).export_csv().is_some())
        .map(|&k| ExportKind(k))
        .collect()
});

impl clap::ValueEnum for ExportKind {
    fn value_variants<'a>() -> &'a [Self] {
        &EXPORT_KINDS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.as_str()))
    }
}

#[derive(Debug, clap::Args)]
struct CsvArgs {
    /// Which experiment kind.
    #[arg(long, value_enum, default_value_t = ExportKind(ExperimentKind::Bench))]
    kind: ExportKind,
    /// Which runs: a run id, `latest` or `all` [default: latest benchmark; all reviews].
    #[arg(long)]
    run: Option<RunSelector>,
    /// Folder to write into [default: exports/ for benchmarks, results/reviews/ for reviews,
    /// results/relevance/ for relevance].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Reviews made with your own criteria file: the same file, for the CSV columns.
    #[arg(long, value_name = "FILE")]
    criteria: Option<PathBuf>,
}

pub fn run(context: &Context, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let ExportFormat::Csv(args) = args.format;
    let kind = kinds::kind(args.kind.0);
    let Some(export) = kind.export_csv() else {
        anyhow::bail!("{} runs have no CSV export", args.kind.0);
    };
    let store = context.open_existing_store()?;
    let ids = store.select_runs(
        args.kind.0.as_str(),
        args.run.unwrap_or(kind.default_runs()),
    )?;
    let (status, run_status) = selection_status(context, &store, &ids)?;
    let runs = ExportRuns {
        ids: &ids,
        status,
        run_status: &run_status,
    };
    let options = ExportOptions {
        out: args.out,
        criteria: args.criteria,
        quiet: context.quiet,
    };
    export(&store, &runs, &options)?;
    Ok(ExitCode::SUCCESS)
}
