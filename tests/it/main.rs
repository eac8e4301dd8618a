//! End-to-end tests: the real `track` binary against a mock provider on 127.0.0.1 and a temp
//! database. One test binary so it links once.

// clippy::too_many_lines holds the library's functions to 80 lines (Cargo.toml); an end-to-end
// test is one scenario, read top to bottom.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test is one scenario, read top to bottom"
)]

mod support;
mod terminal;

mod answers;
mod batch_cli;
mod batch_client;
mod batch_mock_selftest;
mod batch_run;
mod batch_shared;
mod bench_inputs;
mod bench_run;
mod bench_templates;
mod book;
mod budget;
mod cases;
mod ci;
mod ci_gate;
mod conversations;
mod cost_unknown;
mod diff;
mod docs;
mod energy_unknown;
mod golden;
mod hardening;
mod layers;
mod local_model;
mod mock_selftest;
mod pacing;
mod pairwise;
mod parquet;
mod programs;
mod ratings;
mod recipes;
mod relevance;
mod report;
mod review;
mod runtime;
mod shards;
mod structured;
mod targets;
mod tools;
mod view;
