//! Benchmarks' entry in the registry (`crate::kinds`): what `track run`, `query`, `export`,
//! `diff` and `report` do for them. Glue only: the work is in the folder's other files.

use polars::prelude::DataFrame;

use super::html::BenchSection;
use super::summary::{Measures, model_summary, prompt_summary_of_runs};
use crate::kinds::{
    AnswerErrors, DiffRuns, ExportCsv, Grouping, Kind, LoadSection, Loader, QueryOptions,
};
use crate::report::{ReportError, ReportPart};
use crate::store::{RunSelector, Store};

/// Benchmarks, as the registry knows them.
#[derive(Debug)]
pub struct BenchKind;

/// The registry's entry of benchmarks.
pub static KIND: BenchKind = BenchKind;

impl Kind for BenchKind {
    fn loader(&self) -> Option<Loader> {
        Some(super::from_file)
    }

    fn default_runs(&self) -> RunSelector {
        RunSelector::Latest
    }

    fn groupings(&self) -> &'static [Grouping] {
        &GROUPINGS
    }

    fn export_csv(&self) -> Option<ExportCsv> {
        Some(ExportCsv {
            write: super::export::write_csv,
            files: "bench_results.csv, bench_by_model.csv and bench_by_prompt.csv",
            default_out: "exports",
        })
    }

    fn diff(&self) -> Option<DiffRuns> {
        Some(DiffRuns {
            compare: super::diff::compare,
            layout: &super::diff::LAYOUT,
        })
    }

    fn section(&self) -> Option<LoadSection> {
        Some(section)
    }

    fn report_noun(&self) -> &'static str {
        "benchmark"
    }

    fn answer_errors(&self) -> Option<AnswerErrors> {
        Some(super::experiment::answer_errors)
    }
}

/// `track query --by model|prompt`.
static GROUPINGS: [Grouping; 2] = [
    Grouping {
        name: "model",
        help: "Benchmarks, per model: total time, cost, paid, tokens, energy and % success",
        flags: &[],
        summary: by_model,
    },
    Grouping {
        name: "prompt",
        help: "Benchmarks, per prompt: % success per model and overall, average tokens, cost, \
               time, energy",
        flags: &[],
        summary: by_prompt,
    },
];

fn by_model(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(model_summary(&Measures::load(store, runs)?)?)
}

fn by_prompt(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    prompt_summary_of_runs(store, runs)
}

/// The benchmark section, and the energy of its results for the header.
fn section(store: &Store, runs: &[i64]) -> Result<ReportPart, ReportError> {
    let section = BenchSection::load(store, runs)?;
    Ok(ReportPart {
        energy: section.energy()?,
        section: Box::new(section),
    })
}
