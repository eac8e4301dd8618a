//! `track export csv`: benchmark results and summaries, or the review CSV files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use polars::prelude::Column;

use super::{Context, selection_status, shown};
use crate::bench::summary::BenchFrames;
use crate::experiment::ExperimentKind;
use crate::output::write_csv_file;
use crate::review::criteria::Criteria;
use crate::review::spec_csv::{self, csv_row};
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

/// Which experiment kind to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Kind {
    Bench,
    Review,
    Relevance,
}

#[derive(Debug, clap::Args)]
struct CsvArgs {
    /// Which experiment kind.
    #[arg(long, value_enum, default_value_t = Kind::Bench)]
    kind: Kind,
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
    match args.kind {
        Kind::Bench => export_bench(context, &args),
        Kind::Review => export_reviews(context, &args),
        Kind::Relevance => export_relevance(context, &args),
    }
}

fn export_bench(context: &Context, args: &CsvArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let run_ids = store.select_runs(
        ExperimentKind::Bench.as_str(),
        args.run.unwrap_or(RunSelector::Latest),
    )?;
    let (status, run_status) = selection_status(context, &store, &run_ids)?;
    let mut frames = BenchFrames::from_columns(store.bench_columns(&run_ids, true)?)?;
    let per_row: Vec<&str> = frames
        .results
        .column("run_id")?
        .as_materialized_series()
        .i64()?
        .iter()
        .map(|id| id.and_then(|id| run_status.get(&id).copied()).unwrap_or(""))
        .collect();
    frames
        .results
        .with_column(Column::new("run_status".into(), per_row))?;
    for df in [&mut frames.by_model, &mut frames.by_prompt] {
        let rows = df.height();
        df.with_column(Column::new("status".into(), vec![status; rows]))?;
    }
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
    let run_ids = store.select_runs(
        ExperimentKind::Review.as_str(),
        args.run.unwrap_or(RunSelector::All),
    )?;
    // The specification's CSV has a fixed header: the status goes to stderr only.
    selection_status(context, &store, &run_ids)?;
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

/// Writes the relevance CSV files of the selected runs, computed from stored predictions.
fn export_relevance(context: &Context, args: &CsvArgs) -> anyhow::Result<ExitCode> {
    use crate::relevance::export::{write_statistics_csv, write_summary_csv};
    use crate::relevance::stats::measure_rows;
    let store = context.open_existing_store()?;
    let run_ids = store.select_runs(
        ExperimentKind::Relevance.as_str(),
        args.run.unwrap_or(RunSelector::Latest),
    )?;
    let (_, run_status) = selection_status(context, &store, &run_ids)?;
    let rows = store.predictions(&run_ids)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results/relevance"));
    let (with, without, _) = measure_rows(&rows);
    let mut paths = vec![
        write_summary_csv(&out, &with, &without)
            .with_context(|| format!("writing into {}", shown(&out)))?,
    ];
    paths.extend(
        write_statistics_csv(&out, &rows)
            .with_context(|| format!("writing into {}", shown(&out)))?,
    );
    let predictions = out.join("relevance_predictions.csv");
    let mut writer = csv::Writer::from_path(&predictions)
        .with_context(|| format!("writing {}", shown(&predictions)))?;
    writer.write_record([
        "run_id",
        "model",
        "image",
        "image_sha256",
        "predicate",
        "predicate_type",
        "variant",
        "trial",
        "score",
        "invalid_reason",
        "truth",
        "call_id",
        "cache_hit",
        "prompt_sha256",
        "run_status",
    ])?;
    for r in &rows {
        writer.write_record([
            r.run_id.to_string(),
            r.model_ref.clone(),
            r.image.clone(),
            r.image_sha256.clone(),
            r.predicate.clone(),
            r.predicate_kind.clone(),
            crate::relevance::Variant::from_stored(&r.variant)
                .spec_name()
                .to_owned(),
            r.trial.to_string(),
            r.score.map(|s| s.to_string()).unwrap_or_default(),
            r.invalid_reason.clone().unwrap_or_default(),
            u8::from(r.truth).to_string(),
            r.call_id.map(|c| c.to_string()).unwrap_or_default(),
            u8::from(r.cache_hit).to_string(),
            r.prompt_sha256.clone().unwrap_or_default(),
            run_status.get(&r.run_id).copied().unwrap_or("").to_owned(),
        ])?;
    }
    writer.flush()?;
    paths.push(predictions);
    for path in &paths {
        println!("{}", shown(path));
    }
    Ok(ExitCode::SUCCESS)
}
