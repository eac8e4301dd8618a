//! track: an experiment tracker for people who evaluate LLMs.
//!
//! One SQLite database holds every call (keyed by the sha256 of its canonical request, so a
//! re-run never pays twice), every result and every run. Experiments turn a spec into calls,
//! the executor serves them from the cache or a provider, and summaries come from polars.

pub mod analysis;
pub mod answer;
pub mod bench;
pub mod cases;
pub mod checks;
pub mod commands;
pub mod config;
pub mod cost;
pub mod dispatch;
pub mod energy;
pub mod exit;
pub mod experiment;
pub mod gate;
pub mod hash;
pub mod kind;
pub mod kinds;
pub mod llm;
pub mod output;
pub mod pairwise;
pub mod process;
pub mod prompt;
pub mod rating;
pub mod relevance;
pub mod report;
pub mod review;
pub mod store;
pub mod targets;
pub mod view;
pub mod yaml;
