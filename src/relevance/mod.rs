//! Relevance experiments: a vision model scores blocks-world predicates of images with and
//! without an "uncertain" option; precision, recall and F1 on the certain predictions, and the
//! WITH - WITHOUT deltas. (In progress: predicates, answer parsing and metrics are
//! here; the dataset, prompts, runs and commands come next.)

pub mod metrics;
pub mod parse;
pub mod predicates;
pub mod report;
pub mod run;
pub mod stats;
pub mod synth;
