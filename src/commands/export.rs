//! `track export csv`: per-evaluation results and both summaries as CSV files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::{Context, shown};
use crate::analysis::BenchFrames;
use crate::output::write_csv_file;
use crate::store::RunSelector;

/// Export recorded results.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    format: ExportFormat,
}

#[derive(Debug, clap::Subcommand)]
enum ExportFormat {
    /// Write bench_results.csv, bench_by_model.csv and bench_by_prompt.csv.
    Csv(CsvArgs),
}

#[derive(Debug, clap::Args)]
struct CsvArgs {
    /// Which runs: a run id, `latest` or `all`.
    #[arg(long, default_value = "latest")]
    run: RunSelector,
    /// Folder to write into (created if needed).
    #[arg(long, default_value = "exports", value_name = "DIR")]
    out: PathBuf,
}

pub fn run(context: &Context, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let ExportFormat::Csv(args) = args.format;
    let store = context.open_existing_store()?;
    let run_ids = store.select_runs("bench", args.run)?;
    let frames = BenchFrames::from_columns(store.bench_columns(&run_ids, true)?)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating the export folder {}", shown(&args.out)))?;
    for (name, df) in [
        ("bench_results.csv", &frames.results),
        ("bench_by_model.csv", &frames.by_model),
        ("bench_by_prompt.csv", &frames.by_prompt),
    ] {
        let path = args.out.join(name);
        write_csv_file(df, &path).with_context(|| format!("writing {}", shown(&path)))?;
        println!("{}", shown(&path));
    }
    Ok(ExitCode::SUCCESS)
}
