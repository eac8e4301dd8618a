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

/// Every kind's `--by` values, kind by kind: what `--help` lists.
static GROUPINGS: LazyLock<Vec<GroupBy>> = LazyLock::new(|| {
    kinds::groupings()
        .map(|(kind, grouping)| GroupBy { kind, grouping })
        .collect()
});

impl clap::ValueEnum for GroupBy {
    fn value_variants<'a>() -> &'a [Self] {
        &GROUPINGS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.grouping.name);
        Some(value.help(self.grouping.help))
    }
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
    let kind = args.by.kind;
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
