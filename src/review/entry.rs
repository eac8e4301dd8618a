//! The entries of reviews and of datasheet generation in the registry (`commands/registry.rs`):
//! what `track run`, `query`, `export`, `diff` and `report` do for them. Glue only: the work is
//! in the folder's other files. Generation has no file form, query, export, diff or section of
//! its own: its datasheets are what reviews review.

use polars::prelude::DataFrame;

use super::columns as cols;
use super::html::ReviewSection;
use super::summary::{ReviewFrames, agreement, criterion_summary, review_summary};
use crate::kinds::{
    AnswerErrors, DiffRuns, ExportCsv, Grouping, Kind, LoadSection, Loader, QueryFlag, QueryOption,
    QueryOptions,
};
use crate::output::count;
use crate::report::{ReportError, ReportPart};
use crate::store::{ParseStatus, RunSelector, Store};

/// Reviews, as the registry knows them.
#[derive(Debug)]
pub struct ReviewKind;

/// The registry's entry of reviews.
pub static KIND: ReviewKind = ReviewKind;

impl Kind for ReviewKind {
    fn loader(&self) -> Option<Loader> {
        Some(super::from_file)
    }

    /// Every review run: reviews of one datasheet by several runs are read together.
    fn default_runs(&self) -> RunSelector {
        RunSelector::All
    }

    fn groupings(&self) -> &'static [Grouping] {
        &GROUPINGS
    }

    fn query_options(&self) -> &'static [QueryOption] {
        &[REVIEWER]
    }

    fn export_csv(&self) -> Option<ExportCsv> {
        Some(ExportCsv {
            write: super::export::write_csv,
            files: "the specification's \
                    <out>/<ReviewerProvider>_<ReviewerModel>/<Brand>_<Sensor>.csv, and \
                    <out>/review_answers.csv (each review with the reviewer's whole answer)",
            default_out: "results/reviews",
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
        "review"
    }

    fn answer_errors(&self) -> Option<AnswerErrors> {
        Some(super::experiment::answer_errors)
    }
}

/// Datasheet generation, as the registry knows it.
#[derive(Debug)]
pub struct GenerateKind;

/// The registry's entry of datasheet generation.
pub static GENERATE: GenerateKind = GenerateKind;

impl Kind for GenerateKind {
    fn loader(&self) -> Option<Loader> {
        None
    }

    fn default_runs(&self) -> RunSelector {
        RunSelector::Latest
    }

    fn groupings(&self) -> &'static [Grouping] {
        &[]
    }

    fn query_options(&self) -> &'static [QueryOption] {
        &[]
    }

    fn export_csv(&self) -> Option<ExportCsv> {
        None
    }

    fn diff(&self) -> Option<DiffRuns> {
        None
    }

    fn section(&self) -> Option<LoadSection> {
        None
    }

    fn report_noun(&self) -> &'static str {
        "generation"
    }

    fn answer_errors(&self) -> Option<AnswerErrors> {
        // A datasheet is any text: nothing in an answer is an error.
        None
    }
}

/// `track query --by reviewer|generator|sensor|criterion`.
static GROUPINGS: [Grouping; 4] = [
    Grouping {
        name: "reviewer",
        help: "Reviews, per reviewer: counts, N/A, parse failures, mean scores, cost",
        flags: &[],
        summary: by_reviewer,
    },
    Grouping {
        name: "generator",
        help: "Reviews, per reviewer and generator model",
        flags: &[],
        summary: by_generator,
    },
    Grouping {
        name: "sensor",
        help: "Reviews, per reviewer and sensor",
        flags: &[],
        summary: by_sensor,
    },
    Grouping {
        name: "criterion",
        help: "Reviews, per criterion (P1-P16, overall) and reviewer; with --agreement, \
               agreement between reviewers",
        flags: &[AGREEMENT],
        summary: by_criterion,
    },
];

/// `track query --reviewer MODEL`: the reviews of one reviewer only, with any grouping.
const REVIEWER: QueryOption = QueryOption {
    name: "reviewer",
    value_name: "MODEL",
    help: "Reviews: only this reviewer (`<provider>:<name>`)",
};

/// `track query --by criterion --agreement`: the agreement between reviewers instead of the
/// scores.
const AGREEMENT: QueryFlag = QueryFlag {
    name: "agreement",
    help: "agreement between reviewers per criterion (quadratic-weighted Cohen's kappa for two, \
           ordinal Krippendorff's alpha for any number)",
};

fn by_reviewer(store: &Store, runs: &[i64], q: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(review_summary(&frames(store, runs, q)?, cols::REVIEWER)?)
}

fn by_generator(store: &Store, runs: &[i64], q: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(review_summary(&frames(store, runs, q)?, cols::GENERATOR)?)
}

fn by_sensor(store: &Store, runs: &[i64], q: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    Ok(review_summary(&frames(store, runs, q)?, cols::SENSOR)?)
}

fn by_criterion(store: &Store, runs: &[i64], q: &QueryOptions<'_>) -> anyhow::Result<DataFrame> {
    let frames = frames(store, runs, q)?;
    Ok(if q.has(AGREEMENT) {
        agreement(&frames)?
    } else {
        criterion_summary(&frames)?
    })
}

/// The reviews of `runs` (only `--reviewer`'s, when given), after a note on stderr when none
/// has a score.
fn frames(store: &Store, runs: &[i64], q: &QueryOptions<'_>) -> anyhow::Result<ReviewFrames> {
    let (reviews, scores) = store.review_columns(runs)?;
    let frames = ReviewFrames::new(reviews, scores)?;
    let frames = match q.value(REVIEWER) {
        Some(reviewer) => {
            let config = (q.config)()?;
            let reference = config.catalog.model(reviewer)?.reference();
            frames.for_reviewer(&reference)?
        }
        None => frames,
    };
    note_unscored(&frames)?;
    Ok(frames)
}

/// When no review of the selection has a score, says why instead of leaving an empty table to
/// puzzle over: how many reviews, unparsable, failed calls, without an official datasheet.
fn note_unscored(frames: &ReviewFrames) -> anyhow::Result<()> {
    let statuses = frames.reviews.column(cols::PARSE_STATUS)?.str()?.clone();
    let mut counts = std::collections::BTreeMap::<ParseStatus, u64>::new();
    for status in statuses.iter().flatten() {
        *counts.entry(status.parse()?).or_default() += 1;
    }
    let n = |s: ParseStatus| counts.get(&s).copied().unwrap_or(0);
    if counts.keys().any(|s| s.is_scored()) {
        return Ok(());
    }
    crate::output::note(format_args!(
        "track: note: no review has a score to summarise: {} in the selected runs, {} unparsable, \
         {}, {} without an official datasheet",
        count(statuses.len() as u64, "review"),
        n(ParseStatus::Failed),
        count(n(ParseStatus::Error), "failed call"),
        n(ParseStatus::Skipped),
    ));
    Ok(())
}

/// The review section.
fn section(store: &Store, runs: &[i64]) -> Result<ReportPart, ReportError> {
    Ok(ReportPart {
        section: Box::new(ReviewSection::load(store, runs)?),
        energy: None,
    })
}
