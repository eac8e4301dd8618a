//! `track relevance`: relevance experiments on blocks-world images: `synth` makes a dataset,
//! `compare` runs both prompt variants and compares their certain answers.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::{CacheArgs, Context, runtime, shown};
use crate::llm::SamplingParams;
use crate::prompt::Template;
use crate::relevance::report::{
    console_block, statistics_block, write_statistics_csv, write_summary_csv,
};
use crate::relevance::run::{
    ComparePlan, RelevanceExperiment, WITH_PROMPT, WITHOUT_PROMPT, compare, load_ground_truth,
};
use crate::relevance::synth::synthesize;

/// Relevance experiments: a vision model scores predicates of images with and without an
/// "uncertain" option.
#[derive(Debug, clap::Args)]
pub struct RelevanceArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Render random blocks-world states as PNG with their exact ground truth, e.g.
    /// `track relevance synth --blocks red,blue,green,cyan --states 40 --out data/blocks/`.
    Synth(SynthArgs),
    /// Score every image's predicates with and without an "uncertain" option and compare the
    /// certain answers, e.g. `track relevance compare --model openai:gpt-4o --images
    /// 'data/blocks/state_*.png' --ground-truth data/blocks/ground_truth.json`.
    Compare(CompareArgs),
}

#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// The vision model (`<provider>:<name>`).
    #[arg(long, value_name = "MODEL")]
    model: String,
    /// The images: a glob pattern (quote it) or a file.
    #[arg(long, value_name = "PATTERN")]
    images: String,
    /// Ground truth JSON: image stem -> predicate -> 0/1.
    #[arg(long, value_name = "PATH")]
    ground_truth: PathBuf,
    /// Ask about every predicate over these block colours (comma-separated) instead of those
    /// the ground truth lists; unlisted predicates count as false (the closed world).
    #[arg(long, value_delimiter = ',')]
    blocks: Option<Vec<String>>,
    /// Sampling temperature.
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    /// Trials per image and variant, each a distinct cache entry.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Most tokens an answer may use.
    #[arg(long, default_value_t = 1024)]
    max_tokens: u32,
    /// Folder for comparison_summary.csv.
    #[arg(long, default_value = "results/relevance", value_name = "DIR")]
    out: PathBuf,
    /// Calls in flight at once [default: 8, or `concurrency:` in config.yaml].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    #[command(flatten)]
    cache: CacheArgs,
}

#[derive(Debug, clap::Args)]
struct SynthArgs {
    /// Block colours, one block each (red, blue, green, cyan, yellow, magenta, orange, purple,
    /// brown, black).
    #[arg(long, value_delimiter = ',', required = true)]
    blocks: Vec<String>,
    /// How many states (images).
    #[arg(long, default_value_t = 40)]
    states: usize,
    /// Folder for `state_NNNN.png` and `ground_truth.json`.
    #[arg(long, default_value = "data/blocks", value_name = "DIR")]
    out: PathBuf,
    /// Random seed: the same seed gives the same images.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(context: &Context, args: RelevanceArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Compare(args) => compare_command(context, args),
        Action::Synth(args) => {
            let blocks: Vec<String> = args
                .blocks
                .iter()
                .map(|b| b.trim().to_ascii_lowercase())
                .collect();
            let written = synthesize(&blocks, args.states, args.seed, &args.out)
                .map_err(anyhow::Error::msg)?;
            context.note(format!(
                "{} images and their ground truth in {}",
                written.len().saturating_sub(1),
                shown(&args.out)
            ));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn compare_command(context: &Context, args: CompareArgs) -> anyhow::Result<ExitCode> {
    let experiment = RelevanceExperiment {
        kind: None,
        description: None,
        model: args.model,
        images: args.images,
        ground_truth: args.ground_truth,
        temperature: args.temperature,
        repeat: args.repeat,
        max_tokens: args.max_tokens,
        out: args.out,
        blocks: args.blocks,
    };
    execute(context, &experiment, args.concurrency, args.cache.mode())
}

/// Runs a relevance comparison and writes its outputs.
pub(super) fn execute(
    context: &Context,
    args: &RelevanceExperiment,
    concurrency: Option<usize>,
    mode: crate::llm::CacheMode,
) -> anyhow::Result<ExitCode> {
    let config = context.load_config()?;
    let truth = load_ground_truth(&args.ground_truth).map_err(anyhow::Error::msg)?;
    let mut images: Vec<PathBuf> = glob::glob(&args.images)
        .map_err(|e| anyhow::anyhow!("--images `{}` is not a valid pattern: {e}", args.images))?
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    images.sort();
    if images.is_empty() {
        anyhow::bail!("no image matches --images `{}`", args.images);
    }
    let plan = ComparePlan {
        model: args.model.clone(),
        images,
        truth,
        blocks: args
            .blocks
            .as_ref()
            .map(|b| b.iter().map(|c| c.trim().to_ascii_lowercase()).collect()),
        repeat: args.repeat.max(1),
        params: SamplingParams {
            temperature: Some(args.temperature),
            max_tokens: Some(args.max_tokens),
            ..SamplingParams::default()
        },
        with_prompt: Template::load(None, WITH_PROMPT, &["predicates"])?,
        without_prompt: Template::load(None, WITHOUT_PROMPT, &["predicates"])?,
    };
    let concurrency = concurrency.unwrap_or(config.settings.concurrency);
    let (store, executor) = context.executor(&config, concurrency, mode)?;
    let report = runtime()?
        .block_on(compare(
            &store,
            &executor,
            &config.catalog,
            &plan,
            !context.quiet,
        ))
        .map_err(anyhow::Error::msg)?;
    print!("{}", console_block(&report.with, &report.without));
    print!("{}", statistics_block(&report.rows));
    let mut paths = vec![
        write_summary_csv(&args.out, &report.with, &report.without)
            .with_context(|| format!("writing comparison_summary.csv in {}", shown(&args.out)))?,
    ];
    paths.extend(
        write_statistics_csv(&args.out, &report.rows)
            .with_context(|| format!("writing the statistics CSV files in {}", shown(&args.out)))?,
    );
    for path in &paths {
        println!("{}", shown(path));
    }
    context.note(format!(
        "run {}: {} calls ({} from the cache), invalid predictions WITH {} / WITHOUT {}; cost ${:.6}, paid ${:.6}",
        report.run_id, report.calls, report.cache_hits, report.invalid[0], report.invalid[1], report.cost_usd, report.paid_usd
    ));
    for error in &report.errors {
        eprintln!("track: {error}");
    }
    if report.errors.len() == report.calls {
        anyhow::bail!("no call succeeded");
    }
    Ok(ExitCode::SUCCESS)
}
