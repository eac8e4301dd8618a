//! Pairwise comparisons' entry in the registry (`commands/registry.rs`): what `track run`, `query`,
//! `export`, `diff` and `report` do for them. Glue only: the work is in the folder's other files.

use polars::prelude::DataFrame;

use super::html::PairwiseSection;
use super::stats::Verdicts;
use super::summary::{candidate_summary, judge_summary, pair_summary};
use crate::kinds::{
    AnswerErrors, DiffRuns, ExportCsv, Grouping, Kind, LoadSection, Loader, QueryOption,
    QueryOptions,
};
use crate::report::{ReportError, ReportPart};
use crate::store::{RunSelector, Store};

/// Pairwise comparisons, as the registry knows them.
#[derive(Debug)]
pub struct PairwiseKind;

/// The registry's entry of pairwise comparisons.
pub static KIND: PairwiseKind = PairwiseKind;

impl Kind for PairwiseKind {
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
            files: "pairwise_verdicts.csv and pairwise_summary.csv",
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
        "pairwise run"
    }

    fn answer_errors(&self) -> Option<AnswerErrors> {
        // An unreadable verdict is `invalid`, counted apart, not an error.
        None
    }
}

/// `track query --by candidate|pair|judge|human`.
static GROUPINGS: [Grouping; 4] = [
    Grouping {
        name: "candidate",
        help: "Pairwise, per candidate: wins, ties, losses, win rate (a tie as half a win) with its \
               Wilson interval, Bradley–Terry strength with its bootstrap interval, rank",
        flags: &[],
        summary: by_candidate,
    },
    Grouping {
        name: "pair",
        help: "Pairwise, per pair of candidates: wins of each, ties, inconsistent and invalid \
               pairs",
        flags: &[],
        summary: by_pair,
    },
    Grouping {
        name: "judge",
        help: "Pairwise, per judge: verdicts, invalid ones, pairs, inconsistency across orders \
               and kappa with the other judges",
        flags: &[],
        summary: by_judge,
    },
    Grouping {
        name: "human",
        help: "Pairwise runs rated by people (`track rate` on the candidates' answers): per \
               judge, the pairs a person decided (one answer passed, the other failed), how \
               many the judge's verdict agrees with, that share and Cohen's kappa; and the \
               judge's verdicts people rated themselves, and of those the ones rated pass",
        flags: &[],
        summary: by_human,
    },
];

fn verdicts(store: &Store, runs: &[i64]) -> anyhow::Result<Verdicts> {
    Ok(Verdicts::from_rows(&store.pairwise_verdicts(runs)?))
}

fn by_candidate(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(candidate_summary(&verdicts(store, runs)?)?)
}

fn by_pair(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(pair_summary(&verdicts(store, runs)?)?)
}

fn by_judge(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(judge_summary(&verdicts(store, runs)?)?)
}

fn by_human(store: &Store, runs: &[i64], _: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    super::human::agreement_of_runs(store, runs)
}

/// The pairwise section.
fn section(store: &Store, runs: &[i64]) -> Result<ReportPart, ReportError> {
    Ok(ReportPart {
        section: Box::new(PairwiseSection::load(store, runs)?),
        energy: None,
    })
}
