//! Benchmarks' entry in the registry (`commands/registry.rs`): what `track run`, `query`, `export`,
//! `diff` and `report` do for them. Glue only: the work is in the folder's other files.

use polars::prelude::DataFrame;

use super::html::BenchSection;
use super::summary::{Measures, model_summary, prompt_summary_of_runs, template_summary};
use crate::kinds::{
    AnswerErrors, DiffRuns, ExportCsv, Grouping, Kind, LoadSection, Loader, QueryOption,
    QueryOptions,
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

    fn query_options(&self) -> &'static [QueryOption] {
        &[]
    }

    fn export_csv(&self) -> Option<ExportCsv> {
        Some(ExportCsv {
            write: super::export::write_csv,
            files: "bench_results.csv, bench_by_model.csv, bench_by_prompt.csv and, for \
                    results with several checks, bench_checks.csv; with tool loops, tool_calls.csv",
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

/// `track query --by model|template|prompt|case|result|human`.
static GROUPINGS: [Grouping; 6] = [
    Grouping {
        name: "model",
        help: "Benchmarks, per model (all templates pooled): total time, cost, paid, tokens, \
               energy and % success",
        flags: &[],
        summary: by_model,
    },
    Grouping {
        name: "template",
        help: "Benchmarks, per prompt template and model (one row per pair, as the per-model \
               summary): % success with its interval, time, cost, tokens, energy",
        flags: &[],
        summary: by_template,
    },
    Grouping {
        name: "prompt",
        help: "Benchmarks, per case: the same as --by case (kept for scripts written before \
               cases were called case)",
        flags: &[],
        summary: by_prompt,
    },
    Grouping {
        name: "case",
        help: "Benchmarks, per case: % success per model (per model and template when there \
               are several) and overall, average tokens, cost, time, energy",
        flags: &[],
        summary: by_case,
    },
    Grouping {
        name: "result",
        help: "Benchmarks, per result: its model, template, case, repeat, outcome, method, \
               the start of its answer and why it did not pass (answer_start, reason), \
               the current human rating beside it (human_verdict, human_score, human_comment, \
               rater) and its uid, which `track rate` takes",
        flags: &[],
        summary: by_result,
    },
    Grouping {
        name: "human",
        help: "Benchmarks rated by people (`track rate`, `track view`): per automatic verdict \
               (the results' outcome, and each check method or judge), the rated results, how \
               many the person and it agree on, that share and Cohen's kappa",
        flags: &[],
        summary: by_human,
    },
];

fn by_model(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(model_summary(&Measures::load(store, runs)?)?)
}

fn by_template(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(template_summary(&Measures::load(store, runs)?)?)
}

fn by_prompt(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    prompt_summary_of_runs(store, runs)
}

fn by_case(store: &Store, runs: &[i64], options: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    by_prompt(store, runs, options)
}

fn by_result(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    super::human::results_with_ratings(store, runs)
}

fn by_human(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    super::human::agreement_of_runs(store, runs)
}

/// The benchmark section, and the energy of its results for the header.
fn section(store: &Store, runs: &[i64]) -> Result<ReportPart, ReportError> {
    let section = BenchSection::load(store, runs)?;
    Ok(ReportPart {
        energy: section.energy()?,
        section: Box::new(section),
    })
}
