//! `track export csv`: the CSV files of a kind's runs, as its registry entry writes them;
//! `track export parquet`: every table of some runs, as Parquet datasets (`export_parquet`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::LazyLock;

use anyhow::Context as _;

use super::export_parquet::{self, Selection};
use super::{Context, selection_status};
use crate::experiment::{ExperimentKind, Interruption};
use crate::kinds::{self, ExportCsv, ExportOptions, ExportRuns};
use crate::store::RunSelector;

/// Export recorded results.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    format: ExportFormat,
}

#[derive(Debug, clap::Subcommand)]
enum ExportFormat {
    // Its help names each kind's files, from the registry.
    #[command(about = csv_about())]
    Csv(CsvArgs),
    /// Every table of the selected runs as Parquet, for DuckDB, polars or Spark: one dataset a
    /// table (each kind's results, the calls they reference, the runs), hive-partitioned by
    /// kind and run, zstd-compressed, with DIR/manifest.json counting the rows
    Parquet(ParquetArgs),
}

/// Any kind of run, for `track export parquet --kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AnyKind(ExperimentKind);

/// Every kind, in the order of [`ExperimentKind::ALL`].
static ANY_KINDS: LazyLock<Vec<AnyKind>> =
    LazyLock::new(|| ExperimentKind::ALL.iter().map(|&k| AnyKind(k)).collect());

impl clap::ValueEnum for AnyKind {
    fn value_variants<'a>() -> &'a [Self] {
        &ANY_KINDS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.as_str()))
    }
}

#[derive(Debug, clap::Args)]
struct ParquetArgs {
    /// Only the runs of this kind [default: every kind]
    #[arg(long, value_enum)]
    kind: Option<AnyKind>,
    /// Which runs: a run id, `latest` (of each kind) or `all` [default: all]
    #[arg(long)]
    run: Option<RunSelector>,
    /// Folder to write into (created when needed); an earlier export there is added to, the
    /// partitions written again replaced
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// The kinds `--kind` offers, with their export: in the order of [`ExperimentKind::ALL`].
fn exports() -> impl Iterator<Item = (ExperimentKind, ExportCsv)> {
    ExperimentKind::ALL
        .iter()
        .filter_map(|&k| kinds::kind(k).export_csv().map(|export| (k, export)))
}

/// `track export csv`'s line of help: each kind's files, `bench (the default): bench_results.csv,
/// …; review: …`.
fn csv_about() -> String {
    let files: Vec<String> = exports()
        .map(|(k, export)| {
            let default = if k == DEFAULT_KIND {
                " (the default)"
            } else {
                ""
            };
            format!("{}{default}: {}", k.as_str(), export.files)
        })
        .collect();
    format!(
        "The CSV files of a kind's runs, by --kind: {}",
        files.join("; ")
    )
}

/// `--out`'s help: each kind's folder, `[default: exports/ for benchmarks, …]`.
fn out_help() -> String {
    let folders: Vec<String> = exports()
        .map(|(k, export)| {
            let noun = kinds::kind(k).report_noun();
            format!("{}/ for {noun}s", export.default_out)
        })
        .collect();
    format!("Folder to write into [default: {}]", folders.join(", "))
}

/// The kind exported without `--kind`.
const DEFAULT_KIND: ExperimentKind = ExperimentKind::Bench;

/// Which experiment kind to export: one whose registry entry has a CSV export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ExportKind(ExperimentKind);

/// The kinds `--kind` offers, in the order of [`ExperimentKind::ALL`].
static EXPORT_KINDS: LazyLock<Vec<ExportKind>> =
    LazyLock::new(|| exports().map(|(k, _)| ExportKind(k)).collect());

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
    #[arg(long, value_enum, default_value_t = ExportKind(DEFAULT_KIND))]
    kind: ExportKind,
    // Its help names each kind's default, from the registry.
    #[arg(long, help = run_help())]
    run: Option<RunSelector>,
    // Its help names each kind's default folder, from the registry.
    #[arg(long, value_name = "DIR", help = out_help())]
    out: Option<PathBuf>,
    /// Reviews made with your own criteria file: the same file, for the CSV columns.
    #[arg(long, value_name = "FILE")]
    criteria: Option<PathBuf>,
}

/// `--run`'s help: `Which runs: …` with each kind's default selection.
fn run_help() -> String {
    format!(
        "Which runs: a run id, `latest` or `all` [default: {}]",
        kinds::default_runs_help(|k| k.export_csv().is_some())
    )
}

pub fn run(context: &Context, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let args = match args.format {
        ExportFormat::Csv(args) => args,
        ExportFormat::Parquet(args) => return parquet(context, args),
    };
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
        out: args
            .out
            .unwrap_or_else(|| PathBuf::from(export.default_out)),
        criteria: args.criteria,
        quiet: context.quiet,
    };
    (export.write)(&store, &runs, &options)?;
    Ok(ExitCode::SUCCESS)
}

/// `track export parquet`.
fn parquet(context: &Context, args: ParquetArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let selection = Selection {
        kind: args.kind.map(|k| k.0),
        runs: args.run.unwrap_or(RunSelector::All),
    };
    let ids = export_parquet::select_runs(&store, &context.db, selection)?;
    let interruption = Interruption::listen().context("cannot listen for Ctrl-C")?;
    match export_parquet::export(&store, &ids, &args.out, &interruption) {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => match e.downcast_ref::<export_parquet::Interrupted>() {
            Some(export_parquet::Interrupted(signal)) => {
                crate::output::tell(format_args!(
                    "track: {e}: the files it finished are whole, the one it was writing is \
                     removed, and {} is as it was; the same command finishes the export",
                    args.out.join(export_parquet::MANIFEST).display()
                ));
                Ok(ExitCode::from(signal.exit_code()))
            }
            None => Err(e),
        },
    }
}
