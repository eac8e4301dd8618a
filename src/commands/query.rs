//! `track query`: summaries computed with polars from the database, for any run; each `--by`
//! value and its summary come from a kind's registry entry.

use std::process::ExitCode;
use std::sync::LazyLock;

use polars::prelude::Column;

use super::{Context, selection_status};
use crate::experiment::ExperimentKind;
use crate::kinds::{self, Grouping, QueryFlag, QueryOptions};
use crate::output::{Columns, Format, print_frame};
use crate::store::RunSelector;

/// What to group results by: a `--by` value of one kind's registry entry.
#[derive(Debug, Clone, Copy)]
pub struct GroupBy {
    kind: ExperimentKind,
    grouping: &'static Grouping,
}

/// Every kind's `--by` values, kind by kind, a name several kinds share (`human`) once, as its
/// first kind's: what `--help` lists (the run chosen then says whose it is, see [`resolve`]).
static GROUPINGS: LazyLock<Vec<GroupBy>> = LazyLock::new(|| {
    let mut seen = Vec::new();
    kinds::groupings()
        .filter(|(_, grouping)| {
            let new = !seen.contains(&grouping.name);
            seen.push(grouping.name);
            new
        })
        .map(|(kind, grouping)| GroupBy { kind, grouping })
        .collect()
});

/// The kinds' groupings named `name`.
fn named(name: &str) -> Vec<GroupBy> {
    kinds::groupings()
        .filter(|(_, g)| g.name == name)
        .map(|(kind, grouping)| GroupBy { kind, grouping })
        .collect()
}

impl clap::ValueEnum for GroupBy {
    fn value_variants<'a>() -> &'a [Self] {
        &GROUPINGS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.grouping.name);
        let helps: Vec<&str> = named(self.grouping.name)
            .iter()
            .map(|g| g.grouping.help)
            .collect();
        Some(value.help(helps.join(". ")))
    }
}

/// The grouping `by` names for the runs `run` selects: `by` itself, unless several kinds
/// have a grouping of its name (`human`): then the kind of the run `--run` names, or, for
/// `latest`, `all` or no `--run`, of the newest run among those kinds.
fn resolve(
    store: &crate::store::Store,
    by: GroupBy,
    run: Option<RunSelector>,
) -> anyhow::Result<GroupBy> {
    let candidates = named(by.grouping.name);
    if candidates.len() < 2 {
        return Ok(by);
    }
    if let Some(RunSelector::Id(id)) = run {
        let kind = store.runs_by_id(&[id])?.into_iter().next().map(|r| r.kind);
        return Ok(candidates
            .into_iter()
            .find(|g| Some(g.kind.as_str()) == kind.map(|k| k.as_str()))
            .unwrap_or(by));
    }
    let mut newest: Option<(i64, GroupBy)> = None;
    for candidate in candidates {
        let of_kind = crate::store::RunFilter {
            kind: Some(candidate.kind.as_str().to_owned()),
            ..Default::default()
        };
        let (latest, _) = store.view_runs(&of_kind, 1, 0)?;
        if let Some(id) = latest.first().map(|r| r.id)
            && newest.is_none_or(|(seen, _)| id > seen)
        {
            newest = Some((id, candidate));
        }
    }
    Ok(newest.map_or(by, |(_, g)| g))
}

/// Summaries of recorded results, e.g. `track query --by model --run all --format csv` or
/// `track query --by criterion --agreement`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// What to group by.
    #[arg(long, value_enum)]
    by: GroupBy,
    // Its help names each kind's default, from the registry.
    #[arg(long, help = run_help())]
    run: Option<RunSelector>,
    /// Reviews: only this reviewer (`<provider>:<name>`).
    #[arg(long, value_name = "MODEL")]
    reviewer: Option<String>,
    // The help of the flags names the --by values they go with, from the registry.
    #[arg(long, help = flag_help(
        QueryFlag::Agreement,
        "agreement between reviewers per criterion (quadratic-weighted Cohen's kappa for two, \
         ordinal Krippendorff's alpha for any number)",
    ))]
    agreement: bool,
    #[arg(long, help = flag_help(
        QueryFlag::PerPredicate,
        "one block per predicate type (its name: clear, on, at, in…)",
    ))]
    per_predicate: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A table with every column under its full header [default: the main columns].
    #[arg(long)]
    wide: bool,
}

/// `--run`'s help: `Which runs: …` with each kind's default selection.
fn run_help() -> String {
    format!(
        "Which runs: a run id, `latest` or `all` [default: {}]",
        kinds::default_rule_help()
    )
}

/// The help of `flag`: `With --by criterion: <what>`.
fn flag_help(flag: QueryFlag, what: &str) -> String {
    format!("With {}: {what}", kinds::flag_homes(flag))
}

pub(crate) fn run(context: &Context, args: QueryArgs) -> anyhow::Result<ExitCode> {
    let by = args.by.grouping;
    for (flag, given) in [
        (QueryFlag::Agreement, args.agreement),
        (QueryFlag::PerPredicate, args.per_predicate),
    ] {
        if given && !by.flags.contains(&flag) {
            anyhow::bail!("{} goes with {}", flag.as_str(), kinds::flag_homes(flag));
        }
    }
    let store = context.open_existing_store()?;
    let resolved = resolve(&store, args.by, args.run)?;
    let (kind, by) = (resolved.kind, resolved.grouping);
    let default = kinds::kind(kind).default_runs();
    let run_ids = store.select_runs(kind, args.run.unwrap_or(default))?;
    let (status, _) = selection_status(context, &store, &run_ids)?;
    let options = QueryOptions {
        reviewer: args.reviewer.as_deref(),
        agreement: args.agreement,
        per_predicate: args.per_predicate,
        config: &|| context.load_config(),
    };
    let summary = (by.summary)(&store, &run_ids, &options)?;
    let rows = summary.height();
    let mut summary = summary;
    summary.with_column(Column::new("status".into(), vec![status; rows]))?;
    print_frame(&summary, args.format, Columns::wide_if(args.wide))?;
    Ok(ExitCode::SUCCESS)
}
