//! `track review-datasheets`: a reviewer model scores generated datasheets against the
//! official ones (P1-P16 and overall) and the scores go to the database and the CSV files.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{CacheArgs, Context, runtime, shown};
use crate::llm::SamplingParams;
use crate::review::criteria::Criteria;
use crate::review::prompt::{REVIEW_PROMPT, Template};
use crate::review::{CallSettings, Paths, ReviewPlan, SensorFilter, review};

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
    /// Only this sensor.
    #[arg(long)]
    sensor: Option<String>,
    /// Only sensors of this brand.
    #[arg(long)]
    brand: Option<String>,
    /// The sensors list (CSV with `Brand` and `Sensor` columns).
    #[arg(long, default_value = "data/sensors.csv", value_name = "PATH")]
    sensors: PathBuf,
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
    let config = context.load_config()?;
    let filter = SensorFilter {
        brand: args.brand,
        sensor: args.sensor,
    };
    let sensors = filter.select(&args.sensors)?;
    let criteria = match &args.criteria {
        Some(path) => Criteria::load(path)?,
        None => Criteria::builtin(),
    };
    let template = Template::load(
        args.prompt.as_deref(),
        REVIEW_PROMPT,
        &["official_datasheet", "generated_datasheet"],
    )?;
    let paths = Paths {
        sensors: args.sensors,
        datasheets: args.datasheets,
        results: args.results,
        reviews: args.out,
    };
    let settings = CallSettings {
        // A judge should be as repeatable as the provider allows.
        params: SamplingParams {
            temperature: Some(0.0),
            max_tokens: Some(args.max_tokens),
            ..SamplingParams::default()
        },
        show_progress: !context.quiet,
    };
    let concurrency = args.concurrency.unwrap_or(config.settings.concurrency);
    let (store, executor) = context.executor(&config, concurrency, args.cache.mode())?;
    let runtime = runtime()?;
    let mut reviewed = 0;
    for reviewer in &args.reviewer {
        let plan = ReviewPlan {
            reviewer: reviewer.trim().to_owned(),
            generator: args.generator.clone(),
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
