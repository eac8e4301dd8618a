//! Pairwise comparisons: judges see one task and two candidates' texts (model answers, or
//! generated datasheets) in both orders and say which is better; wins, ties and losses, win
//! rates with Wilson intervals, Bradley–Terry strengths with bootstrap intervals, a ranking,
//! each judge's inconsistency across orders and the judges' agreement.
//!
//! Everything that is the kind's own is in this folder: its file (`spec`), the experiment,
//! the verdict (`verdict`), statistics, summaries, diff, report section (`html`), console
//! output, CSV files (`export`) and its entry in the registry (`entry`). Its rows and their
//! enums are the store's (`crate::store::VerdictRow`), as the store imports nothing from a kind.

pub mod columns;
pub mod console;
pub mod diff;
pub mod entry;
pub mod experiment;
pub mod export;
pub mod html;
pub mod human;
pub mod spec;
pub mod stats;
pub mod summary;
pub mod verdict;

use std::path::PathBuf;

pub use entry::KIND;
pub use experiment::{PairwiseExperiment, from_file};
pub use spec::PairwiseSpec;

use crate::prompt::PromptError;
use crate::store::StoreError;

/// What stops a pairwise comparison from being planned, run or reported.
#[derive(Debug, thiserror::Error)]
pub enum PairwiseError {
    /// The experiment file is not YAML of a pairwise comparison: `file:line:col: message`.
    #[error("{0}")]
    File(String),
    /// The file parses but cannot be used: what is wrong (at `line`, when known) and the fix.
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: Option<u64>,
        message: String,
    },
    #[error("the judge prompt: {0}")]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("computing the summaries: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
