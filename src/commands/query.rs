//! `track query`: summaries computed with polars from the database, for any run; each `--by`
//! value and its summary come from a kind's registry entry.

use std::process::ExitCode;
use std::sync::LazyLock;

use polars::prelude::Column;

use super::registry;
use super::{Context, selection_status};
use crate::experiment::ExperimentKind;
use crate::kinds::{Grouping, QueryOptions};
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
    registry::groupings()
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
    registry::groupings()
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
    // The kinds' own flags (`--agreement`), declared in their registry entries.
    #[command(flatten)]
    flags: KindFlags,
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
        registry::default_rule_help()
    )
}

/// The kinds' flags of `track query` given on the command line, by name (`agreement`). Their
/// options are written from the registry's [`QueryFlag`](crate::kinds::QueryFlag)s, each
/// with a help that names the `--by` values it goes with: `With --by criterion: <its help>`.
#[derive(Debug, Clone, Default)]
struct KindFlags {
    given: Vec<&'static str>,
}

impl clap::FromArgMatches for KindFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let given = registry::query_flags()
            .into_iter()
            .filter(|flag| matches.get_flag(flag.name))
            .map(|flag| flag.name)
            .collect();
        Ok(Self { given })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for KindFlags {
    fn augment_args(command: clap::Command) -> clap::Command {
        registry::query_flags()
            .into_iter()
            .fold(command, |command, flag| {
                command.arg(
                    clap::Arg::new(flag.name)
                        .long(flag.name)
                        .action(clap::ArgAction::SetTrue)
                        .help(format!(
                            "With {}: {}",
                            registry::flag_homes(flag.name),
                            flag.help
                        )),
                )
            })
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

pub(crate) fn run(context: &Context, args: QueryArgs) -> anyhow::Result<ExitCode> {
    let by = args.by.grouping;
    for &flag in &args.flags.given {
        if !by.flags.iter().any(|f| f.name == flag) {
            anyhow::bail!("--{flag} goes with {}", registry::flag_homes(flag));
        }
    }
    let store = context.open_existing_store()?;
    let resolved = resolve(&store, args.by, args.run)?;
    let (kind, by) = (resolved.kind, resolved.grouping);
    let default = registry::kind(kind).default_runs();
    let run_ids = store.select_runs(kind, args.run.unwrap_or(default))?;
    let (status, _) = selection_status(context, &store, &run_ids)?;
    let options = QueryOptions {
        reviewer: args.reviewer.as_deref(),
        flags: &args.flags.given,
        config: &|| context.load_config(),
    };
    let summary = (by.summary)(&store, &run_ids, &options)?;
    let rows = summary.height();
    let mut summary = summary;
    summary.with_column(Column::new("status".into(), vec![status; rows]))?;
    print_frame(&summary, args.format, Columns::wide_if(args.wide))?;
    Ok(ExitCode::SUCCESS)
}
