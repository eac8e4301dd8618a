//! `track relevance`: relevance experiments on blocks-world images: `synth` makes a dataset,
//! `compare` runs both prompt variants and compares their certain answers.

use std::path::PathBuf;
use std::process::ExitCode;

use super::experiment::{ExperimentArgs, TableArgs, run_experiment};
use super::{Context, shown};
use crate::relevance::experiment::{RelevanceExperiment, World, read_predicates};
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
    // Boxed: its options are many times the size of `synth`'s.
    Compare(Box<CompareArgs>),
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
    /// Most tokens an answer may use.
    #[arg(long, default_value_t = 1024)]
    max_tokens: u32,
    /// Folder for comparison_summary.csv.
    #[arg(long, default_value = "results/relevance", value_name = "DIR")]
    out: PathBuf,
    /// The WITH variant's prompt template: `{predicates}` (required) and `{domain}` are
    /// replaced [default: the built-in blocks-world prompt].
    #[arg(long, value_name = "FILE")]
    prompt_with: Option<PathBuf>,
    /// The WITHOUT variant's prompt template [default: the built-in blocks-world prompt].
    #[arg(long, value_name = "FILE")]
    prompt_without: Option<PathBuf>,
    /// What the images show, for the `{domain}` placeholder of the prompts.
    #[arg(long, value_name = "TEXT")]
    domain: Option<String>,
    /// Ask every image about the predicates of this file (one a line, `#` comments) instead of
    /// those its ground truth lists; needs --world.
    #[arg(long, value_name = "FILE", conflicts_with = "blocks")]
    predicates: Option<PathBuf>,
    /// With --predicates: closed (a predicate the ground truth does not list is false) or open
    /// (it is unknown, and not asked).
    #[arg(long, value_enum)]
    world: Option<World>,
    #[command(flatten)]
    run: ExperimentArgs,
}

/// The planning domains `synth` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Domain {
    /// Coloured blocks in stacks on a table (--blocks names them).
    Blocks,
    /// Two trucks at three places and three packages, on the ground or loaded.
    Logistics,
}

#[derive(Debug, clap::Args)]
struct SynthArgs {
    /// The domain drawn.
    #[arg(long, value_enum, default_value_t = Domain::Blocks)]
    domain: Domain,
    /// Block colours, one block each (red, blue, green, cyan, yellow, magenta, orange, purple,
    /// brown, black); required for blocks.
    #[arg(long, value_delimiter = ',', required_if_eq("domain", "blocks"))]
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

pub(crate) fn run(context: &Context, args: RelevanceArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Compare(args) => compare_command(context, *args),
        Action::Synth(args) => {
            let blocks: Vec<String> = args
                .blocks
                .iter()
                .map(|b| b.trim().to_ascii_lowercase())
                .collect();
            let written = match args.domain {
                Domain::Blocks => synthesize(&blocks, args.states, args.seed, &args.out)?,
                Domain::Logistics => {
                    crate::relevance::logistics::synthesize(args.states, args.seed, &args.out)?
                }
            };
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
    let config = args.run.load_config(context)?;
    let experiment = RelevanceExperiment {
        kind: None,
        description: None,
        model: args.model,
        images: args.images,
        ground_truth: args.ground_truth,
        temperature: args.temperature,
        repeat: 1,
        max_tokens: args.max_tokens,
        out: args.out,
        blocks: args.blocks,
        prompt_with: args.prompt_with,
        prompt_without: args.prompt_without,
        domain: args.domain,
        predicates: args
            .predicates
            .as_deref()
            .map(read_predicates)
            .transpose()?,
        world: args.world,
        budget: None,
        batch: false,
    };
    let experiment = experiment.plan(None, &config, &args.run.overrides(context))?;
    run_experiment(
        context,
        &config,
        Box::new(experiment),
        &args.run,
        (TableArgs::default(), &crate::gate::Gate::default()),
    )
}
