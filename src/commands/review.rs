//! `track review-datasheets`: a reviewer model scores generated datasheets against the
//! official ones (P1-P16 and overall) and the scores go to the database and the CSV files.
//! Also runs review experiment files (`kind: review`) for `track run`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{CacheArgs, Context, SensorArgs, runtime, shown};
use crate::llm::{CacheMode, SamplingParams};
use crate::prompt::Template;
use crate::review::criteria::Criteria;
use crate::review::experiment::ReviewExperiment;
use crate::review::prompts::{GENERATION_PROMPT, REVIEW_PROMPT};
use crate::review::{
    CallSettings, GeneratePlan, Paths, ReviewPlan, SensorFilter, generate, review,
};

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
    /// Reviews in flight at once [default: 8, or `concurrency:` in config.yaml].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    #[command(flatten)]
    cache: CacheArgs,
}

pub fn run(context: &Context, args: ReviewArgs) -> anyhow::Result<ExitCode> {
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
    };
    execute(context, &experiment, args.concurrency, args.cache.mode())
}

/// Runs a review experiment: generation by each of its generators first (if any), then a
/// review by each reviewer.
pub(super) fn execute(
    context: &Context,
    experiment: &ReviewExperiment,
    concurrency: Option<usize>,
    mode: CacheMode,
) -> anyhow::Result<ExitCode> {
    let config = context.load_config()?;
    let filter = SensorFilter {
        brand: experiment.brand.clone(),
        sensor: experiment.sensor.clone(),
    };
    let sensors = filter.select(&experiment.sensors)?;
    let criteria = match &experiment.criteria {
        Some(path) => Criteria::load(path)?,
        None => Criteria::builtin(),
    };
    let template = Template::load(
        experiment.prompt.as_deref(),
        REVIEW_PROMPT,
        &["official_datasheet", "generated_datasheet"],
    )?;
    let generation_template = Template::load(
        experiment.generation_prompt.as_deref(),
        GENERATION_PROMPT,
        &["brand", "sensor"],
    )?;
    let paths = Paths {
        sensors: experiment.sensors.clone(),
        datasheets: experiment.datasheets.clone(),
        results: experiment.results.clone(),
        reviews: experiment.out.clone(),
    };
    let concurrency = concurrency.unwrap_or(config.settings.concurrency);
    let (store, executor) = context.executor(&config, concurrency, mode)?;
    let runtime = runtime()?;
    for generator in &experiment.generators {
        let plan = GeneratePlan {
            model: generator.trim().to_owned(),
            sensors: sensors.clone(),
            paths: paths.clone(),
            template: generation_template.clone(),
        };
        let settings = CallSettings {
            params: SamplingParams {
                max_tokens: Some(experiment.max_tokens),
                ..SamplingParams::default()
            },
            show_progress: !context.quiet,
        };
        let totals = runtime.block_on(generate(
            &store,
            &executor,
            &config.catalog,
            &plan,
            &settings,
        ))?;
        context.note(format!(
            "run {} ({generator}): {} datasheets written ({} from the cache), {} errors",
            totals.run_id,
            totals.done,
            totals.cache_hits,
            totals.errors.len()
        ));
        for error in &totals.errors {
            eprintln!("track: {error}");
        }
    }
    let settings = CallSettings {
        // A judge should be as repeatable as the provider allows.
        params: SamplingParams {
            temperature: Some(0.0),
            max_tokens: Some(experiment.max_tokens),
            ..SamplingParams::default()
        },
        show_progress: !context.quiet,
    };
    let mut reviewed = 0;
    for reviewer in &experiment.reviewers {
        let plan = ReviewPlan {
            reviewer: reviewer.trim().to_owned(),
            generator: experiment.generator.clone(),
            sensors: sensors.clone(),
            paths: paths.clone(),
            template: template.clone(),
            criteria: criteria.clone(),
        };
        let totals =
            runtime.block_on(review(&store, &executor, &config.catalog, &plan, &settings))?;
        for path in &totals.files {
            println!("{}", shown(path));
        }
        let [ok, partial, failed, skipped] = totals.parsed;
        context.note(format!(
            "run {} ({reviewer}): {} reviews: {ok} complete, {partial} with N/A scores, {failed} unparsable, \
             {skipped} without an official datasheet; {} errors; {} from the cache; cost ${:.6}, paid ${:.6}",
            totals.run_id,
            totals.done,
            totals.errors.len(),
            totals.cache_hits,
            totals.cost_usd,
            totals.paid_usd
        ));
        for error in &totals.errors {
            eprintln!("track: {error}");
        }
        reviewed += totals.done;
    }
    if reviewed == 0 {
        anyhow::bail!("no review could be made");
    }
    Ok(ExitCode::SUCCESS)
}
