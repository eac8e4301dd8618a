//! `track query`: summaries computed with polars from the database, for any run.

use std::process::ExitCode;

use polars::prelude::Column;

use super::{Context, selection_status};
use crate::bench::summary::{Measures, model_summary, prompt_summary};
use crate::experiment::ExperimentKind;
use crate::output::count;
use crate::output::{Columns, Format, print_frame};
use crate::relevance::summary::variant_summary;
use crate::review::summary::{ReviewFrames, agreement, criterion_summary, review_summary};
use crate::store::{RunSelector, Store};

/// What to group results by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// Benchmarks, per model: total time, cost, paid, tokens, energy and % success.
    Model,
    /// Benchmarks, per prompt: % success per model and overall, average tokens, cost, time, energy.
    Prompt,
    /// Reviews, per reviewer: counts, N/A, parse failures, mean scores, cost.
    Reviewer,
    /// Reviews, per reviewer and generator model.
    Generator,
    /// Reviews, per reviewer and sensor.
    Sensor,
    /// Reviews, per criterion (P1-P16, overall) and reviewer; with --agreement, agreement
    /// between reviewers.
    Criterion,
    /// Relevance, per variant (WITH, WITHOUT) and class: precision, recall, F1, counts,
    /// coverage and invalid answers; with --per-predicate, per predicate type too.
    Variant,
}

/// Summaries of recorded results, e.g. `track query --by model --run all --format csv` or
/// `track query --by criterion --agreement`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// What to group by.
    #[arg(long, value_enum)]
    by: GroupBy,
    /// Which runs: a run id, `latest` or `all` [default: latest benchmark; all reviews].
    #[arg(long)]
    run: Option<RunSelector>,
    /// Reviews: only this reviewer (`<provider>:<name>`).
    #[arg(long, value_name = "MODEL")]
    reviewer: Option<String>,
    /// With --by criterion: agreement between reviewers per criterion (quadratic-weighted
    /// Cohen's kappa for two, ordinal Krippendorff's alpha for any number).
    #[arg(long)]
    agreement: bool,
    /// With --by variant: one block per predicate type (its name: clear, on, at, in…).
    #[arg(long)]
    per_predicate: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A table with every column under its full header [default: the main columns].
    #[arg(long)]
    wide: bool,
}

pub fn run(context: &Context, args: QueryArgs) -> anyhow::Result<ExitCode> {
    if args.agreement && args.by != GroupBy::Criterion {
        anyhow::bail!("--agreement goes with --by criterion");
    }
    if args.per_predicate && args.by != GroupBy::Variant {
        anyhow::bail!("--per-predicate goes with --by variant");
    }
    let store = context.open_existing_store()?;
    let kind = match args.by {
        GroupBy::Model | GroupBy::Prompt => ExperimentKind::Bench,
        GroupBy::Variant => ExperimentKind::Relevance,
        _ => ExperimentKind::Review,
    };
    let default = match kind {
        ExperimentKind::Review => RunSelector::All,
        _ => RunSelector::Latest,
    };
    let run_ids = store.select_runs(kind.as_str(), args.run.unwrap_or(default))?;
    let (status, _) = selection_status(context, &store, &run_ids)?;
    let summary = match args.by {
        GroupBy::Model | GroupBy::Prompt => {
            let measures = Measures::load(&store, &run_ids)?;
            if args.by == GroupBy::Model {
                model_summary(&measures)?
            } else {
                prompt_summary(&measures)?
            }
        }
        GroupBy::Variant => variant_summary(&store.predictions(&run_ids)?, args.per_predicate)?,
        by => {
            let frames = review_frames(context, &store, &run_ids, args.reviewer.as_deref())?;
            note_unscored(&frames)?;
            match by {
                GroupBy::Reviewer => review_summary(&frames, "reviewer")?,
                GroupBy::Generator => review_summary(&frames, "generator")?,
                GroupBy::Sensor => review_summary(&frames, "sensor")?,
                _ if args.agreement => agreement(&frames)?,
                _ => criterion_summary(&frames)?,
            }
        }
    };
    let rows = summary.height();
    let mut summary = summary;
    summary.with_column(Column::new("status".into(), vec![status; rows]))?;
    print_frame(&summary, args.format, Columns::wide_if(args.wide))?;
    Ok(ExitCode::SUCCESS)
}

fn review_frames(
    context: &Context,
    store: &Store,
    run_ids: &[i64],
    reviewer: Option<&str>,
) -> anyhow::Result<ReviewFrames> {
    let (reviews, scores) = store.review_columns(run_ids)?;
    let frames = ReviewFrames::new(reviews, scores)?;
    Ok(match reviewer {
        Some(reviewer) => {
            let config = context.load_config()?;
            let reference = config.catalog.resolve(reviewer)?.reference();
            frames.for_reviewer(&reference)?
        }
        None => frames,
    })
}

/// When no review of the selection has a score, says why instead of leaving an empty table to
/// puzzle over: how many reviews, unparsable, failed calls, without an official datasheet.
fn note_unscored(frames: &ReviewFrames) -> anyhow::Result<()> {
    let statuses = frames.reviews.column("parse_status")?.str()?.clone();
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for status in statuses.iter().flatten() {
        *counts.entry(status).or_default() += 1;
    }
    let scored =
        counts.get("ok").copied().unwrap_or(0) + counts.get("partial").copied().unwrap_or(0);
    if scored > 0 {
        return Ok(());
    }
    let n = |s: &str| counts.get(s).copied().unwrap_or(0);
    eprintln!(
        "track: note: no review has a score to summarise: {} in the selected runs, {} unparsable, \
         {}, {} without an official datasheet",
        count(statuses.len() as u64, "review"),
        n("failed"),
        count(n("error"), "failed call"),
        n("skipped"),
    );
    Ok(())
}
