//! `track relevance`: relevance experiments on blocks-world images. `synth` makes a dataset;
//! the comparison itself comes next.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{Context, shown};
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
