//! `track export csv`: benchmark results and summaries, or the review CSV files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::{Context, shown};
use crate::analysis::BenchFrames;
use crate::output::write_csv_file;
use crate::review::criteria::Criteria;
use crate::review::{csv_row, spec_csv};
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
    Csv(CsvArgs),
}

/// Which experiment kind to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Kind {
    Bench,
    Review,
}

#[derive(Debug, clap::Args)]
struct CsvArgs {
    /// Which experiment kind.
    #[arg(long, value_enum, default_value_t = Kind::Bench)]
    kind: Kind,
    /// Which runs: a run id, `latest` or `all` [default: latest benchmark; all reviews].
    #[arg(long)]
    run: Option<RunSelector>,
    /// Folder to write into [default: exports/ for benchmarks, results/reviews/ for reviews].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Reviews made with your own criteria file: the same file, for the CSV columns.
    #[arg(long, value_name = "FILE")]
    criteria: Option<PathBuf>,
}

pub fn run(context: &Context, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let ExportFormat::Csv(args) = args.format;
    match args.kind {
        Kind::Bench => export_bench(context, &args),
        Kind::Review => export_reviews(context, &args),
    }
}

fn export_bench(context: &Context, args: &CsvArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let run_ids = store.select_runs("bench", args.run.unwrap_or(RunSelector::Latest))?;
    let frames = BenchFrames::from_columns(store.bench_columns(&run_ids, true)?)?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("exports"));
    std::fs::create_dir_all(&out)
        .with_context(|| format!("creating the export folder {}", shown(&out)))?;
    for (name, df) in [
        ("bench_results.csv", &frames.results),
        ("bench_by_model.csv", &frames.by_model),
        ("bench_by_prompt.csv", &frames.by_prompt),
    ] {
        let path = out.join(name);
        write_csv_file(df, &path).with_context(|| format!("writing {}", shown(&path)))?;
        println!("{}", shown(&path));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes every stored review (failed calls aside) to the specification's CSV files; rows
/// already in a file are not written again.
fn export_reviews(context: &Context, args: &CsvArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let run_ids = store.select_runs("review", args.run.unwrap_or(RunSelector::All))?;
    let criteria = match &args.criteria {
        Some(path) => Criteria::load(path)?,
        None => Criteria::builtin(),
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results/reviews"));
    let mut files = std::collections::BTreeSet::new();
    let (mut written, mut skipped) = (0, 0);
    for review in store.review_rows(&run_ids)? {
        if review.parse_status == "error" {
            continue;
        }
        if review.criteria_sha256 != criteria.sha256 {
            skipped += 1;
            continue;
        }
        let (path, new) = spec_csv::append(&out, &criteria, &csv_row(&review))?;
        written += usize::from(new);
        files.insert(path);
    }
    for path in &files {
        println!("{}", shown(path));
    }
    context.note(format!("{written} new rows written"));
    if skipped > 0 {
        context.note(format!(
            "{skipped} reviews were made with other criteria; export them with --criteria FILE"
        ));
    }
    Ok(ExitCode::SUCCESS)
}
