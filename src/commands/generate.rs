//! `track generate-datasheets`: a model writes a datasheet for each sensor.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{CacheArgs, Context, SensorArgs, runtime, shown};
use crate::llm::SamplingParams;
use crate::prompt::Template;
use crate::review::prompts::GENERATION_PROMPT;
use crate::review::{CallSettings, GeneratePlan, Paths, SensorFilter, generate};

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
    /// Sensors in flight at once [default: 8, or `concurrency:` in config.yaml].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    #[command(flatten)]
    cache: CacheArgs,
}

pub fn run(context: &Context, args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let config = context.load_config()?;
    let filter = SensorFilter {
        brand: args.select.brand,
        sensor: args.select.sensor,
    };
    let sensors = filter.select(&args.select.sensors)?;
    let template = Template::load(
        args.prompt.as_deref(),
        GENERATION_PROMPT,
        &["brand", "sensor"],
    )?;
    let paths = Paths {
        sensors: args.select.sensors,
        results: args.results,
        ..Paths::default()
    };
    let settings = CallSettings {
        params: SamplingParams {
            temperature: args.temperature,
            max_tokens: Some(args.max_tokens),
            ..SamplingParams::default()
        },
        show_progress: !context.quiet,
    };
    let concurrency = args.concurrency.unwrap_or(config.settings.concurrency);
    let (store, executor) = context.executor(&config, concurrency, args.cache.mode())?;
    let plan = GeneratePlan {
        model: args.model,
        sensors,
        paths,
        template,
    };
    let totals = runtime()?.block_on(generate(
        &store,
        &executor,
        &config.catalog,
        &plan,
        &settings,
    ))?;
    for path in &totals.files {
        println!("{}", shown(path));
    }
    context.note(format!(
        "run {}: {} datasheets ({} from the cache), {} errors; cost ${:.6}, paid ${:.6}",
        totals.run_id,
        totals.done,
        totals.cache_hits,
        totals.errors.len(),
        totals.cost_usd,
        totals.paid_usd
    ));
    for error in &totals.errors {
        eprintln!("track: {error}");
    }
    if totals.done == 0 {
        anyhow::bail!("no datasheet could be generated");
    }
    Ok(ExitCode::SUCCESS)
}
