//! `track run FILE.yaml`: run a benchmark and print its detail table and summaries.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use polars::prelude::*;
use serde_json::json;

use super::{CacheArgs, Context, runtime, shown};
use crate::analysis::BenchFrames;
use crate::bench::{BenchError, BenchOptions, BenchPlan, BenchSpec, RunTotals};
use crate::energy::EnergyMethod;
use crate::llm::{Executor, LlmClient};
use crate::output::table;
use crate::review::experiment::{ReviewExperiment, experiment_kind};
use crate::store::Store;

/// Run an experiment file: a benchmark (every prompt against every model, model by model),
/// e.g. `track run data/benchmark.yaml --concurrency 4`, a review experiment
/// (`kind: review`, e.g. data/review.yaml) or a relevance experiment (`kind: relevance`, e.g.
/// data/relevance.yaml).
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The benchmark file (YAML: models and prompts).
    file: PathBuf,
    /// Prompts of one model in flight at once [default: 8, or `concurrency:` in config.yaml].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    #[command(flatten)]
    cache: CacheArgs,
    /// Samples per model and prompt, each a distinct cache entry [default: `repeat:` or 1].
    #[arg(long, value_name = "N")]
    repeat: Option<u32>,
    /// Run these models instead of the file's (comma-separated references).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    models: Option<Vec<String>>,
    /// Print the planned calls, how many are cached and the most they can cost; call nothing.
    #[arg(long)]
    dry_run: bool,
    /// Energy method: ecologits-0.9 or seed-linear [default: ecologits-0.9, or `energy_method:`].
    #[arg(long, value_name = "METHOD")]
    energy: Option<EnergyMethod>,
    /// Do not print the per-evaluation table (summaries only).
    #[arg(long)]
    no_detail: bool,
}

pub fn run(context: &Context, args: RunArgs) -> anyhow::Result<ExitCode> {
    // A file whose `kind:` is `review` is a review experiment; anything else a benchmark.
    let text =
        std::fs::read_to_string(&args.file).map_err(|source| crate::bench::SpecError::Read {
            path: args.file.clone(),
            source,
        })?;
    match experiment_kind(&text).as_deref() {
        Some("review") => {
            let experiment = ReviewExperiment::parse(&args.file, &text)?;
            return super::review::execute(
                context,
                &experiment,
                args.concurrency,
                args.cache.mode(),
            );
        }
        Some("relevance") => {
            let experiment = crate::relevance::run::RelevanceExperiment::parse(&args.file, &text)
                .map_err(anyhow::Error::msg)?;
            return super::relevance::execute(
                context,
                &experiment,
                args.concurrency,
                args.cache.mode(),
            );
        }
        Some("bench" | "benchmark") | None => {}
        Some(other) => anyhow::bail!(
            "{}: unknown `kind: {other}`; use bench (the default), review or relevance",
            shown(&args.file)
        ),
    }
    let config = context.load_config()?;
    let started = std::time::Instant::now();
    // The text was read above to find the kind: parse it rather than reading the file again.
    let spec = BenchSpec::parse(&args.file, &text)?;
    tracing::debug!(elapsed = ?started.elapsed(), prompts = spec.prompts.len(), "benchmark file loaded");
    let options = BenchOptions {
        concurrency: args
            .concurrency
            .unwrap_or(config.settings.concurrency)
            .max(1),
        repeat: args.repeat,
        models: args.models.clone(),
        energy_method: args.energy.unwrap_or(config.settings.energy_method),
        show_progress: !context.quiet,
    };
    let plan = BenchPlan::new(spec, &config.catalog, &options)?;
    tracing::debug!(elapsed = ?started.elapsed(), calls = plan.evals.len(), "planned");
    let mode = args.cache.mode();
    let store = if args.dry_run && !context.db.exists() {
        Store::open_in_memory()?
    } else {
        context.open_store()?
    };
    let store = Arc::new(Mutex::new(store));
    let client = LlmClient::new(config.settings.timeout)?;
    let executor = Executor::new(
        client,
        store.clone(),
        config.settings.retry,
        options.concurrency,
        mode,
    );

    if args.dry_run {
        return print_dry_run(&plan, &executor);
    }
    let options_json = json!({
        "concurrency": options.concurrency,
        "cache": format!("{mode:?}").to_lowercase(),
        "repeat": options.repeat,
        "models": options.models,
        "energy_method": options.energy_method.name(),
    })
    .to_string();
    let totals = match runtime()?.block_on(plan.run(&store, &executor, &options, &options_json)) {
        Ok(totals) => totals,
        Err(interrupted @ BenchError::Interrupted { .. }) => {
            eprintln!("track: {interrupted}");
            return Ok(ExitCode::from(130));
        }
        Err(other) => return Err(other.into()),
    };
    let store = crate::store::lock(&store);
    tracing::debug!(elapsed = ?started.elapsed(), "run finished");
    let frames = BenchFrames::from_columns(store.bench_columns(&[totals.run_id], true)?)?;
    tracing::debug!(elapsed = ?started.elapsed(), "summaries computed");
    print_report(context, &frames, &totals, !args.no_detail)?;
    tracing::debug!(elapsed = ?started.elapsed(), "report printed");
    if totals.results > 0 && totals.errors == totals.results {
        anyhow::bail!(
            "nothing could run ({} errors); first: {}",
            totals.errors,
            totals.first_error.as_deref().unwrap_or("unknown")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_dry_run(plan: &BenchPlan, executor: &Executor) -> anyhow::Result<ExitCode> {
    let lines = plan.dry_run(executor)?;
    let df = DataFrame::new_infer_height(vec![
        Column::new(
            "model".into(),
            lines.iter().map(|l| l.model.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "calls".into(),
            lines.iter().map(|l| l.calls as u64).collect::<Vec<_>>(),
        ),
        Column::new(
            "cached".into(),
            lines.iter().map(|l| l.cached as u64).collect::<Vec<_>>(),
        ),
        Column::new(
            "to_call".into(),
            lines.iter().map(|l| l.to_call as u64).collect::<Vec<_>>(),
        ),
        Column::new(
            "max_cost_usd".into(),
            lines.iter().map(|l| l.max_cost_usd).collect::<Vec<_>>(),
        ),
        Column::new(
            "note".into(),
            lines.iter().map(|l| l.blocked.clone()).collect::<Vec<_>>(),
        ),
    ])?;
    println!("{}", table(&df));
    let to_call: usize = lines.iter().map(|l| l.to_call).sum();
    let cached: usize = lines.iter().map(|l| l.cached).sum();
    let max_cost: f64 = lines.iter().map(|l| l.max_cost_usd).sum();
    println!(
        "dry run of {}: {} calls planned, {cached} cached, {to_call} to call, at most ${max_cost:.6} \
         (assuming each answer uses its max_tokens, or {} tokens when unset); nothing was called",
        shown(&plan.spec.path),
        cached + to_call,
        crate::bench::ASSUMED_MAX_OUTPUT_TOKENS,
    );
    Ok(ExitCode::SUCCESS)
}

/// Rows a run's report shows of a table before pointing to the full one.
const REPORT_ROWS: usize = 200;

/// Prints `df` under `title`, cut to its first [`REPORT_ROWS`] rows with a note naming the
/// command that gives all of them: a table of 50,000 prompts helps nobody on a terminal.
fn print_limited(title: &str, df: &DataFrame, full: &str, run_id: i64) {
    if df.height() <= REPORT_ROWS {
        println!("{title}\n{}", table(df));
        return;
    }
    println!(
        "{title} (first {REPORT_ROWS} of {} rows)\n{}",
        df.height(),
        table(&df.head(Some(REPORT_ROWS)))
    );
    let full = if full.ends_with("--run") {
        format!("{full} {run_id}")
    } else {
        format!("{full} --run {run_id}")
    };
    println!("all {} rows: {full}", df.height());
}

fn print_report(
    context: &Context,
    frames: &BenchFrames,
    totals: &RunTotals,
    detail: bool,
) -> anyhow::Result<()> {
    if detail {
        let detail = frames
            .results
            .clone()
            .lazy()
            .select([
                col("model"),
                col("prompt"),
                col("repeat"),
                col("status").alias("result"),
                (col("latency_ms") / lit(1000.0)).alias("time_s"),
                col("input_tokens").alias("tokens_in"),
                col("output_tokens").alias("tokens_out"),
                col("cost_usd"),
                col("energy_wh"),
                col("cache_hit").alias("cached"),
            ])
            .collect()?;
        let any_estimated = frames
            .results
            .column("tokens_estimated")?
            .as_materialized_series()
            .bool()?
            .any();
        let detail = if any_estimated {
            detail.hstack(&[frames.results.column("tokens_estimated")?.clone()])?
        } else {
            detail
        };
        let detail = if totals.results > 0
            && frames
                .results
                .column("repeat")?
                .as_materialized_series()
                .max::<u32>()?
                == Some(0)
        {
            detail.drop("repeat")?
        } else {
            detail
        };
        print_limited("Results", &detail, "track export csv", totals.run_id);
    }
    println!("Per model\n{}", table(&frames.by_model));
    print_limited(
        "Per prompt",
        &frames.by_prompt,
        "track query --by prompt --format csv --run",
        totals.run_id,
    );
    println!(
        "run {}: {} results, {} cache hits, {} errors; cost ${:.6}, paid ${:.6}",
        totals.run_id,
        totals.results,
        totals.cache_hits,
        totals.errors,
        totals.cost_usd,
        totals.paid_usd
    );
    if totals.errors > 0 && !context.quiet {
        let errors = frames
            .results
            .clone()
            .lazy()
            .filter(col("status").eq(lit("error")))
            .select([col("model"), col("prompt"), col("detail")])
            .limit(5)
            .collect()?;
        eprintln!("errors (first {} of {}):", errors.height(), totals.errors);
        eprintln!("{}", table(&errors));
    }
    Ok(())
}
