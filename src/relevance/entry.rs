//! Relevance experiments' entry in the registry (`commands/registry.rs`): what `track run`,
//! `query`, `export`, `diff` and `report` do for them. Glue only: the work is in the folder's other
//! files.

use polars::prelude::DataFrame;

use super::html::RelevanceSection;
use super::summary::variant_summary;
use crate::kinds::{
    AnswerErrors, DiffRuns, ExportCsv, Grouping, Kind, LoadSection, Loader, QueryFlag, QueryOption,
    QueryOptions,
};
use crate::report::{ReportError, ReportPart};
use crate::store::{RunSelector, Store};

/// Relevance experiments, as the registry knows them.
#[derive(Debug)]
pub struct RelevanceKind;

/// The registry's entry of relevance experiments.
pub static KIND: RelevanceKind = RelevanceKind;

impl Kind for RelevanceKind {
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
            files: "comparison_summary.csv, comparison_by_predicate.csv, \
                    comparison_statistics.csv and relevance_predictions.csv",
            default_out: "results/relevance",
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
        "relevance run"
    }

    fn answer_errors(&self) -> Option<AnswerErrors> {
        // An invalid answer is a prediction counted apart (`invalid`), not an error.
        None
    }
}

/// `track query --by variant`.
static GROUPINGS: [Grouping; 1] = [Grouping {
    name: "variant",
    help: "Relevance, per variant (WITH, WITHOUT) and class: precision, recall, F1, counts, \
           coverage and invalid answers; with --per-predicate, per predicate type too",
    flags: &[PER_PREDICATE],
    summary: by_variant,
}];

/// `track query --by variant --per-predicate`: one block per predicate type.
const PER_PREDICATE: QueryFlag = QueryFlag {
    name: "per-predicate",
    help: "one block per predicate type (its name: clear, on, at, in…)",
};

fn by_variant(store: &Store, runs: &[i64], q: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(variant_summary(
        &store.predictions(runs)?,
        q.has(PER_PREDICATE),
    )?)
}

/// The relevance section.
fn section(store: &Store, runs: &[i64]) -> Result<ReportPart, ReportError> {
    Ok(ReportPart {
        section: Box::new(RelevanceSection::load(store, runs)?),
        energy: None,
    })
}
