//! `track query`: summaries computed with polars from the database, for any run; each `--by`
//! value and its summary come from a kind's registry entry.

use std::process::ExitCode;
use std::sync::LazyLock;

use polars::prelude::{Column, DataFrame, DataType};

use super::gate::GateArgs;
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
    // The kinds' own options (`--reviewer`) and flags (`--agreement`), declared in their
    // registry entries.
    #[command(flatten)]
    kinds: KindOptions,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A table with every column under its full header [default: the main columns].
    #[arg(long)]
    wide: bool,
    // --fail-under, --fail-on-errors: the bar of the selected runs, as for `track run`.
    #[command(flatten)]
    gate: GateArgs,
}

/// `--run`'s help: `Which runs: …` with each kind's default selection.
fn run_help() -> String {
    format!(
        "Which runs: a run id, `latest` or `all` [default: {}]",
        registry::default_rule_help()
    )
}

/// The kinds' options and flags of `track query` given on the command line, by name. They are
/// written from the registry's entries: each [`QueryOption`](crate::kinds::QueryOption) with
/// its value and help, then each [`QueryFlag`](crate::kinds::QueryFlag) with a help that names
/// the `--by` values it goes with: `With --by criterion: <its help>`.
#[derive(Debug, Clone, Default)]
struct KindOptions {
    values: Vec<(&'static str, String)>,
    flags: Vec<&'static str>,
}

impl clap::FromArgMatches for KindOptions {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let values = registry::query_options()
            .into_iter()
            .filter_map(|option| {
                let value = matches.get_one::<String>(option.name)?;
                Some((option.name, value.clone()))
            })
            .collect();
        let flags = registry::query_flags()
            .into_iter()
            .filter(|flag| matches.get_flag(flag.name))
            .map(|flag| flag.name)
            .collect();
        Ok(Self { values, flags })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for KindOptions {
    fn augment_args(command: clap::Command) -> clap::Command {
        let command = registry::query_options()
            .into_iter()
            .fold(command, |command, option| {
                command.arg(
                    clap::Arg::new(option.name)
                        .long(option.name)
                        .value_name(option.value_name)
                        .action(clap::ArgAction::Set)
                        .help(option.help),
                )
            });
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
    for &flag in &args.kinds.flags {
        if !by.flags.iter().any(|f| f.name == flag) {
            anyhow::bail!("--{flag} goes with {}", registry::flag_homes(flag));
        }
    }
    let store = context.open_existing_store()?;
    let resolved = resolve(&store, args.by, args.run)?;
    let (kind, by) = (resolved.kind, resolved.grouping);
    let gate = args.gate.gate();
    super::gate::check_applies(kind, &gate)?;
    let default = registry::kind(kind).default_runs();
    let run_ids = store.select_runs(kind, args.run.unwrap_or(default))?;
    let (status, _) = selection_status(context, &store, &run_ids)?;
    let options = QueryOptions {
        flags: &args.kinds.flags,
        values: &args.kinds.values,
        config: &|| context.load_config(),
    };
    let summary = (by.summary)(&store, &run_ids, &options)?;
    let rows = summary.height();
    let mut summary = summary;
    summary.with_column(Column::new("status".into(), vec![status; rows]))?;
    print_frame(&summary, args.format, Columns::wide_if(args.wide))?;
    // The bar applies to the rows asked for: each template and model pair of `--by template`.
    let rows = (kind == ExperimentKind::Bench && by.name == "template")
        .then(|| pair_outcomes(&summary))
        .transpose()?;
    Ok(ExitCode::from(super::gate::judge_rows(
        &store,
        (kind, &run_ids),
        &gate,
        rows,
    )?))
}

/// The outcomes of each row of a benchmark summary of template and model pairs, each named
/// `model · template` (`model` alone for results without a template).
fn pair_outcomes(summary: &DataFrame) -> anyhow::Result<Vec<crate::store::ModelOutcomes>> {
    use crate::bench::columns as c;
    let text = |name: &str| -> anyhow::Result<Vec<Option<String>>> {
        Ok(summary
            .column(name)?
            .as_materialized_series()
            .cast(&DataType::String)?
            .str()?
            .iter()
            .map(|v| v.map(str::to_owned))
            .collect())
    };
    let number = |name: &str| -> anyhow::Result<Vec<u64>> {
        Ok(summary
            .column(name)?
            .as_materialized_series()
            .cast(&DataType::UInt64)?
            .u64()?
            .iter()
            .map(|v| v.unwrap_or(0))
            .collect())
    };
    let (models, templates) = (text(c::MODEL)?, text(c::TEMPLATE)?);
    let (passed, failed, errors) = (number(c::PASSED)?, number(c::FAILED)?, number(c::ERRORS)?);
    Ok((0..summary.height())
        .map(|i| {
            let model = models[i].clone().unwrap_or_default();
            crate::store::ModelOutcomes {
                model: match &templates[i] {
                    Some(template) => format!("{model} · {template}"),
                    None => model,
                },
                passed: passed[i],
                failed: failed[i],
                errors: errors[i],
            }
        })
        .collect())
}
