//! `track run FILE.yaml`: run an experiment file of any kind through the runtime.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use super::experiment::{ExperimentArgs, TableArgs, run_experiment};
use super::gate::GateArgs;
use super::registry;
use crate::energy::EnergyMethod;

/// Run an experiment file (a benchmark, a review, a relevance experiment or a pairwise comparison).
///
/// Run an experiment file: a benchmark (every prompt against every model, model by model),
/// e.g. `track run data/benchmark.yaml --concurrency 4`; a review experiment (`kind: review`,
/// e.g. data/review.yaml); a relevance experiment (`kind: relevance`, e.g.
/// data/relevance.yaml); or a pairwise comparison (`kind: pairwise`, e.g. data/pairwise.yaml).
/// `--dry-run` first shows what it would call and cost.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The experiment file (YAML): a benchmark's models and prompts, or a file with
    /// `kind: review`, `kind: relevance` or `kind: pairwise`.
    file: PathBuf,
    #[command(flatten)]
    run: ExperimentArgs,
    /// The models under evaluation instead of the file's (comma-separated references): a
    /// benchmark's `models:`, a review's `generators:`, a relevance experiment's `model:`, a
    /// pairwise comparison's candidate models.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    models: Option<Vec<String>>,
    /// Energy method of benchmarks: ecologits-0.9 or seed-linear [default: ecologits-0.9, or
    /// `energy_method:` in config.yaml].
    #[arg(long, value_name = "METHOD")]
    energy: Option<EnergyMethod>,
    #[command(flatten)]
    tables: TableArgs,
    #[command(flatten)]
    gate: GateArgs,
}

pub(crate) fn run(context: &Context, args: RunArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read the experiment file {}", args.file.display()))?;
    let kind =
        registry::of_file(&text).map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    let Some(load) = registry::kind(kind).loader() else {
        anyhow::bail!(
            "{}: {kind} experiments have no file form; use their command",
            args.file.display()
        );
    };
    let config = args.run.load_config(context)?;
    // The run's HTTP client (its TLS roots) is built meanwhile, on another core.
    crate::llm::LlmClient::build_ahead(config.settings.timeout);
    let mut overrides = args.run.overrides(context);
    overrides.models = args.models;
    overrides.energy = args.energy;
    let started = std::time::Instant::now();
    let experiment = load(&args.file, &text, &config, &overrides)?;
    tracing::debug!(elapsed = ?started.elapsed(), %kind, "experiment file loaded");
    // The flags go over the file's bar; one the kind cannot be measured against is refused
    // before anything is sent.
    let gate = experiment.gate().overridden_by(args.gate.gate());
    super::gate::check_applies(kind, &gate)?;
    run_experiment(
        context,
        &config,
        experiment,
        &args.run,
        (args.tables, &gate),
    )
}
