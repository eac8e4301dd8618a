//! Benchmarks: every prompt against every model (model-major), each answer tested.
//!
//! The spec becomes stages of calls for the experiment runtime; each outcome becomes a result
//! row pointing at its call. No HTTP and no SQL here. Everything else that is the benchmarks'
//! own is in this folder too: their summaries (`summary`), diff, report section (`html`),
//! console output, CSV export, and their entry in the registry (`entry`) that the commands
//! reach it all through.

pub mod cases;
pub mod columns;
pub mod console;
pub mod conversation;
pub mod diff;
pub mod entry;
pub mod experiment;
pub mod export;
pub mod html;
pub mod human;
pub mod item;
pub mod judge;
pub mod junit;
pub mod spec;
pub mod summary;
pub mod tools;

pub use crate::store::Outcome;
pub use entry::KIND;
pub use experiment::{BenchExperiment, from_file};
pub use spec::{BenchSpec, PromptTest, SpecError};

use crate::config::ConfigError;
use crate::store::StoreError;

/// What stops a benchmark from running or being reported.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{path}{}: {source}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Model {
        path: String,
        line: Option<u64>,
        #[source]
        source: Box<ConfigError>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the judge prompt: {0}")]
    Judge(String),
    #[error("computing the summaries: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
