//! `track review-datasheets`: a reviewer model scores generated datasheets against the
//! official ones (P1-P16 and overall) and the scores go to the database and the CSV files.

use std::path::PathBuf;
use std::process::ExitCode;

use super::experiment::{ExperimentArgs, TableArgs, run_experiment};
use super::{Context, SensorArgs};
use crate::review::DatasheetExperiment;
use crate::review::file::ReviewExperiment;

/// Have reviewer models score generated datasheets against the official ones (P1–P16).
///
/// Have one or more reviewer models score every generated datasheet against its official
/// datasheet, e.g. `track review-datasheets --reviewer google:gemini-1.5-pro --sensor BME280`.
/// Scores land in the database and in `results/reviews/<provider>_<model>/<Brand>_<Sensor>.csv`.
#[derive(Debug, clap::Args)]
pub struct ReviewArgs {
    /// The reviewer model(s), comma-separated (`<provider>:<name>`).
    #[arg(long, value_name = "MODEL", value_delimiter = ',', required = true)]
    reviewer: Vec<String>,
    /// Only datasheets written by this model (`<provider>:<name>`).
    #[arg(long, value_name = "MODEL")]
    generator: Option<String>,
    #[command(flatten)]
    select: SensorArgs,
    /// Folder of official datasheets `<Brand>_<Sensor>.md`.
    #[arg(long, default_value = "datasheet", value_name = "DIR")]
    datasheets: PathBuf,
    /// Folder of generated datasheets `<Brand>/<Sensor>/*.md`.
    #[arg(long, default_value = "results", value_name = "DIR")]
    results: PathBuf,
    /// Folder of the review CSV files.
    #[arg(long, default_value = "results/reviews", value_name = "DIR")]
    out: PathBuf,
    /// Your own review prompt, with {official_datasheet} and {generated_datasheet}
    /// [default: prompts/review_criteria_prompt.txt, built in].
    #[arg(long, value_name = "FILE")]
    prompt: Option<PathBuf>,
    /// Your own criteria (YAML like prompts/review_criteria.yaml) [default: P1-P16].
    #[arg(long, value_name = "FILE")]
    criteria: Option<PathBuf>,
    /// Most tokens a review may use.
    #[arg(long, default_value_t = 4096)]
    max_tokens: u32,
    #[command(flatten)]
    run: ExperimentArgs,
}

pub(crate) fn run(context: &Context, args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let config = args.run.load_config(context)?;
    let experiment = ReviewExperiment {
        kind: None,
        description: None,
        reviewers: args.reviewer,
        generators: Vec::new(),
        generator: args.generator,
        brand: args.select.brand,
        sensor: args.select.sensor,
        sensors: args.select.sensors,
        datasheets: args.datasheets,
        results: args.results,
        out: args.out,
        prompt: args.prompt,
        criteria: args.criteria,
        generation_prompt: None,
        max_tokens: args.max_tokens,
        generation_max_tokens: None,
        repeat: None,
        budget: None,
        batch: false,
    };
    let plan = experiment.plan(None, &args.run.overrides(context))?;
    let experiment = DatasheetExperiment::new(plan, &config.catalog)?;
    run_experiment(
        context,
        &config,
        Box::new(experiment),
        &args.run,
        (TableArgs::default(), &crate::gate::Gate::default()),
    )
}
