//! Relevance experiments: a vision model scores blocks-world predicates of images with and
//! without an "uncertain" option; precision, recall and F1 on the certain predictions, and the
//! WITH - WITHOUT deltas, with McNemar's test and bootstrap intervals.

pub mod metrics;
pub mod parse;
pub mod predicates;
pub mod report;
pub mod run;
pub mod stats;
pub mod synth;
