//! `track generate-datasheets`: a model writes a datasheet for each sensor.

use std::path::PathBuf;
use std::process::ExitCode;

use super::experiment::{ExperimentArgs, TableArgs, run_experiment};
use super::{Context, SensorArgs};
use crate::review::DatasheetExperiment;
use crate::review::file::ReviewExperiment;

/// Have a model write a datasheet for each sensor of a list.
///
/// Have a model write a datasheet for each sensor of the list, saved as
/// `results/<Brand>/<Sensor>/<provider>_<model>_<YYYYMMDD_HHMMSS>.md`, e.g.
/// `track generate-datasheets --model openai:gpt-4o --sensor BME280`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// The model that writes (`<provider>:<name>`; `track models` lists them).
    #[arg(long, value_name = "MODEL")]
    model: String,
    #[command(flatten)]
    select: SensorArgs,
    /// Where generated datasheets go.
    #[arg(long, default_value = "results", value_name = "DIR")]
    results: PathBuf,
    /// Your own generation prompt, with {brand} and {sensor} [default: the built-in one,
    /// prompts/datasheet_generation_prompt.txt].
    #[arg(long, value_name = "FILE")]
    prompt: Option<PathBuf>,
    /// Sampling temperature [default: the provider's].
    #[arg(long)]
    temperature: Option<f64>,
    /// Most tokens a datasheet may use.
    #[arg(long, default_value_t = 4096)]
    max_tokens: u32,
    #[command(flatten)]
    run: ExperimentArgs,
}

pub(crate) fn run(context: &Context, args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let config = args.run.load_config(context)?;
    let experiment = ReviewExperiment {
        kind: None,
        description: None,
        reviewers: Vec::new(),
        generators: vec![args.model],
        generator: None,
        brand: args.select.brand,
        sensor: args.select.sensor,
        sensors: args.select.sensors,
        datasheets: PathBuf::from("datasheet"),
        results: args.results,
        out: PathBuf::from("results/reviews"),
        prompt: None,
        criteria: None,
        generation_prompt: args.prompt,
        max_tokens: args.max_tokens,
        generation_max_tokens: None,
        repeat: None,
        budget: None,
        batch: false,
    };
    let mut plan = experiment.plan(None, &args.run.overrides(context))?;
    plan.generation.params.temperature = args.temperature;
    let experiment = DatasheetExperiment::new(plan, &config.catalog)?;
    run_experiment(
        context,
        &config,
        Box::new(experiment),
        &args.run,
        (TableArgs::default(), &crate::gate::Gate::default()),
    )
}
