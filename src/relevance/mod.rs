//! Relevance experiments: a vision model scores blocks-world predicates of images with and
//! without an "uncertain" option; precision, recall and F1 on the certain predictions, and the
//! WITH - WITHOUT deltas, with McNemar's test and bootstrap intervals.
//!
//! Everything that is the kind's own is in this folder: the experiment (`experiment`), its
//! answers (`parse`), metrics and statistics, summaries (`summary`), diff, report section
//! (`html`), console output, CSV files (`export`), and its entry in the registry (`entry`).
//! Its two prompt variants are stored with its rows, so they live with its tables
//! (`crate::store::Variant`), as the store must not import from a kind.

pub mod columns;
pub mod console;
pub mod diff;
pub mod entry;
pub mod experiment;
pub mod export;
pub mod html;
pub mod logistics;
pub mod metrics;
pub mod parse;
pub mod predicates;
pub mod stats;
pub mod summary;
pub mod synth;

use std::path::PathBuf;

pub use entry::KIND;
pub use experiment::{CompareExperiment, RelevanceExperiment, from_file};

use crate::prompt::PromptError;
use crate::store::StoreError;

/// What stops a relevance experiment from being planned, run or reported.
#[derive(Debug, thiserror::Error)]
pub enum RelevanceError {
    /// The experiment file does not parse: `file:line:col: message`.
    #[error("{0}")]
    File(String),
    #[error("cannot read {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    GroundTruth { path: PathBuf, message: String },
    #[error("--images `{pattern}` is not a valid pattern: {message}")]
    Pattern { pattern: String, message: String },
    #[error(
        "{0} reads no images, and a relevance experiment shows it one per call; choose a vision model (e.g. openai:gpt-4o), or add `vision: true` to it under `models:` in config.yaml if it does"
    )]
    NoVision(String),
    #[error("no image matches --images `{0}`")]
    NoImages(String),
    #[error("{path} has no ground truth (no `{stem}` in the ground-truth file)")]
    NoTruth { path: PathBuf, stem: String },
    #[error(
        "{path} is not a PNG, JPEG, GIF or WebP image (by its first bytes); convert it or leave it out of the images"
    )]
    NotAnImage { path: PathBuf },
    #[error("writing the results into {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown block colour `{name}`; known: {known}")]
    Colour { name: String, known: String },
    #[error("give each block a different colour, e.g. --blocks red,blue,green")]
    Colours,
    #[error(
        "{asked} states were asked for, but {blocks} blocks have only {exist} distinct states: \
         ask for fewer, or add blocks (--blocks)"
    )]
    TooManyStates {
        asked: usize,
        blocks: usize,
        exist: u64,
    },
    #[error(
        "{asked} states were asked for, but the logistics world has only {exist} distinct states"
    )]
    TooManyLogisticsStates { asked: usize, exist: u64 },
    /// What to ask cannot be used.
    #[error("{0}")]
    Predicates(String),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Output(#[from] std::io::Error),
}
