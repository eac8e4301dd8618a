//! Analysis: polars frames built from the store's columns, and the summaries of each
//! experiment kind. Nothing here reads SQL or prints.

pub mod bench;
pub mod diff;
pub mod relevance;
pub mod review;
pub mod stats;

pub use bench::{BenchFrames, Measures, model_summary, prompt_summary, results_frame};
