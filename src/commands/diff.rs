//! `track diff`: two runs of the same kind compared on the items they share.

use std::io::Write;
use std::process::ExitCode;
use std::str::FromStr;

use polars::prelude::{DataFrame, PolarsResult};

use super::registry;
use super::{Context, selection_status};
use crate::analysis::diff::{
    ANSWER_CHARS_SHOWN, Layout, MIN_BOOTSTRAP_UNITS, RunDiff, UNCHANGED, with_answers,
};
use crate::experiment::ExperimentKind;
use crate::output::{Columns, Format, fit_line, print_frame, render};
use crate::store::{RunSelector, Store};

/// Rows of the changed items and of the unpaired items a table shows before pointing to
/// `--items`.
const TABLE_ROWS: usize = 20;
/// Significant regressions a table names before pointing to the summary's column.
const NAMED_REGRESSIONS: usize = 5;

/// Compare two runs of the same kind on the items they share, e.g. `track diff 3 5`, or two
/// templates of one benchmark run, e.g. `track diff 3 --templates terse steps`.
///
/// (The rest of `--help` is `long_about()`: each kind's part comes from its registry entry.)
#[derive(Debug, clap::Args)]
#[command(long_about = long_about())]
pub struct DiffArgs {
    /// The run compared against (a run id); with --templates, the run whose templates are
    /// compared.
    #[arg(value_name = "BASE")]
    base: i64,
    /// The run compared with it: a run id, or `latest` (the newest run of BASE's kind).
    /// Required unless --templates is given.
    #[arg(
        value_name = "NEW",
        required_unless_present = "templates",
        conflicts_with = "templates"
    )]
    new: Option<NewRun>,
    /// Compare two prompt templates of the benchmark run BASE instead of two runs: the second
    /// template's evaluations against the first's, paired by (model, prompt, repeat), with
    /// McNemar's test per model, e.g. `--templates terse steps`.
    #[arg(long, num_args = 2, value_names = ["BASE_TEMPLATE", "NEW_TEMPLATE"])]
    templates: Option<Vec<String>>,
    /// Print every item of both runs (one row each) instead of the summary.
    #[arg(long)]
    items: bool,
    /// Exit with status 3 (below the bar, as `track run --fail-under`) when a regression is
    /// significant (as defined above); without it the status is 0 whatever the diff.
    #[arg(long)]
    fail_on_regression: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A table with every column under its full header [default: the main columns].
    #[arg(long)]
    wide: bool,
}

/// The NEW run: an id, or the newest run of the base run's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NewRun {
    Id(i64),
    Latest,
}

impl FromStr for NewRun {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.parse::<RunSelector>() {
            Ok(RunSelector::Id(id)) => Ok(Self::Id(id)),
            Ok(RunSelector::Latest) => Ok(Self::Latest),
            _ => Err(format!("`{s}` is not a run: use a run id or `latest`")),
        }
    }
}

/// The kinds whose runs can be compared, with the layout of their diff, in the order of
/// [`ExperimentKind::ALL`].
fn comparable() -> Vec<(ExperimentKind, &'static Layout)> {
    ExperimentKind::ALL
        .iter()
        .filter_map(|&k| registry::kind(k).diff().map(|d| (k, d.layout)))
        .collect()
}

/// `track diff --help` after its first line: how items pair, what a significant regression is,
/// the outputs and the exit status, each kind's part written from its diff's [`Layout`].
fn long_about() -> String {
    let kinds = comparable();
    let per_kind = |separator: &str, part: &dyn Fn(&Layout) -> String| {
        let parts: Vec<String> = kinds
            .iter()
            .map(|(k, layout)| format!("{}: {}", k.noun(), part(layout)))
            .collect();
        parts.join(separator)
    };
    let keys: Vec<String> = kinds
        .iter()
        .map(|(k, l)| format!("{} by ({})", k.noun(), l.keys.join(", ")))
        .collect();
    let keys = keys.join("; ");
    let significant = per_kind(";\n\n- ", &|l| l.significant.to_owned());
    let summaries = per_kind("; ", &|l| l.summary_title.to_lowercase());
    let changes = per_kind("; ", &|l| {
        let mut labels = l.change_order.to_vec();
        labels.push(UNCHANGED);
        labels.join(", ")
    });
    format!(
        "Compare two runs of the same kind on the items they share, e.g. `track diff 3 5`.\n\n\
         Items are paired by key: {keys}. Items found in one run only are counted and listed \
         apart (`only_in` = base or new), never dropped.\n\n\
         Two prompt templates of one benchmark run compare the same way (`track diff 3 \
         --templates terse steps`): the evaluations of the second template against the first's, \
         paired by (model, prompt, repeat), the template column empty.\n\n\
         A regression is significant (what --fail-on-regression checks):\n\n\
         - {significant}.\n\n\
         With fewer than {MIN_BOOTSTRAP_UNITS} paired units (the items a bootstrap resamples) no \
         interval is computed and nothing is significant.\n\n\
         Output (--format):\n\n\
         - table (the default): a headline with the counts, the significant regressions, the \
         summary ({summaries}), the changed items (the first {TABLE_ROWS}, most serious first) \
         and the items found in one run only;\n\n\
         - csv, json: the summary alone, with stable snake_case columns and \
         `significant_regression`: what a CI job reads next to the exit status;\n\n\
         - with --items, any format: one row per item of either run instead, with its key \
         columns, `change` ({changes}; empty, or null in JSON, when unpaired), `only_in` (base, \
         new, or empty when paired) and both runs' values with their difference; where items \
         are answers, the calls (`base_call_id`, `new_call_id`) and both runs' answers \
         (`base_answer`, `new_answer`: whole in CSV and JSON, the first line of each cut to \
         {ANSWER_CHARS_SHOWN} characters in a table): a benchmark's or relevance model's, a \
         reviewer's, and a pairwise judge's in each order (`base_ab_answer`, \
         `base_ba_answer`, `new_ab_answer`, `new_ba_answer`).\n\n\
         Exit status: 0, or {below} (below the bar, as `track run --fail-under`) with \
         --fail-on-regression and a significant regression; {bad} when the runs cannot be \
         compared (a missing run, runs of different kinds, no database), as diff(1)'s \
         trouble, so a CI job can tell a regression from trouble.",
        below = crate::exit::BELOW_BAR,
        bad = crate::exit::BAD_INPUT,
    )
}

pub(crate) fn run(context: &Context, args: DiffArgs) -> anyhow::Result<ExitCode> {
    compare(context, args).or_else(|error| {
        if crate::output::is_closed_pipe(&error) {
            return Ok(ExitCode::SUCCESS);
        }
        crate::output::tell(format_args!("track: {error:#}"));
        Ok(ExitCode::from(crate::exit::BAD_INPUT))
    })
}

fn compare(context: &Context, mut args: DiffArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    // A shard merged into its plan's run is that run.
    args.base = store.merged_run_of(args.base)?;
    let diff = match (&args.templates, args.new) {
        (Some(templates), _) => compare_templates(context, &store, args.base, templates)?,
        (None, Some(new)) => {
            let new_run = store.merged_run_of(resolve(&store, args.base, new)?)?;
            if new_run == args.base {
                context.note(format!(
                    "track: note: run {new_run} is compared with itself: nothing can have changed"
                ));
            }
            registry::diff(&store, args.base, new_run)?
        }
        (None, None) => anyhow::bail!("give the NEW run to compare with, or --templates"),
    };
    selection_status(context, &store, &[diff.base_run, diff.new_run])?;
    if args.items {
        // Each run's answer to each item: whole in CSV and JSON, its first line cut on a
        // terminal, where a table of long answers would not fit.
        let shown = args.format.for_people().then_some(ANSWER_CHARS_SHOWN);
        let items = with_answers::<anyhow::Error>(diff.items.clone(), shown, |call| {
            Ok(store.answer_text(call)?)
        })?;
        print_frame(&items, args.format, Columns::wide_if(args.wide))?;
    } else if args.format == Format::Table {
        print_table(&diff, Columns::wide_if(args.wide))?;
    } else if args.format == Format::Markdown {
        print_markdown(&diff, Columns::wide_if(args.wide))?;
    } else {
        print_frame(&diff.summary, args.format, Columns::wide_if(args.wide))?;
    }
    if args.fail_on_regression && diff.has_significant_regression() {
        // The table and Markdown already name them on stdout; CSV and JSON leave them to
        // stderr.
        if !args.format.for_people() || args.items {
            for regression in &diff.significant {
                crate::output::tell(format_args!("track: significant regression: {regression}"));
            }
        }
        crate::output::tell(format_args!(
            "track: exit status {}: {} (--fail-on-regression)",
            crate::exit::BELOW_BAR,
            crate::output::count(
                diff.counts.significant_regressions,
                "significant regression"
            )
        ));
        return Ok(ExitCode::from(crate::exit::BELOW_BAR));
    }
    Ok(ExitCode::SUCCESS)
}

/// Two templates of benchmark run `run` compared (`--templates BASE NEW`).
fn compare_templates(
    context: &Context,
    store: &Store,
    run: i64,
    templates: &[String],
) -> anyhow::Result<RunDiff> {
    let [base, new] = templates else {
        anyhow::bail!("--templates takes two template names: --templates BASE NEW");
    };
    let kind = RunDiff::kind_of(store, run, run)?;
    if kind != ExperimentKind::Bench {
        anyhow::bail!(
            "run {run} is a {kind} run: --templates compares the templates of a benchmark run"
        );
    }
    if base == new {
        context.note(format!(
            "track: note: template {base} is compared with itself: nothing can have changed"
        ));
    }
    let compared = crate::bench::diff::compare_templates(store, run, (base, new))?;
    Ok(RunDiff::of_templates(
        run,
        (base, new),
        &crate::bench::diff::LAYOUT,
        compared,
    ))
}

/// The id of the NEW run.
fn resolve(store: &Store, base: i64, new: NewRun) -> anyhow::Result<i64> {
    match new {
        NewRun::Id(id) => Ok(id),
        NewRun::Latest => {
            let run = store.existing_run(base)?;
            Ok(store
                .select_runs(run.kind, RunSelector::Latest)?
                .last()
                .copied()
                .unwrap_or(base))
        }
    }
}

/// The terminal report: headline, significant regressions, summary, changes, unpaired items.
fn print_table(diff: &RunDiff, columns: Columns) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "{}", fit_line(&diff.headline()))?;
    if diff.significant.is_empty() {
        writeln!(out, "no significant regression")?;
    }
    for regression in diff.significant.iter().take(NAMED_REGRESSIONS) {
        writeln!(
            out,
            "{}",
            fit_line(&format!("significant regression: {regression}"))
        )?;
    }
    for improvement in &diff.improvements {
        writeln!(
            out,
            "{}",
            fit_line(&format!("significant improvement: {improvement}"))
        )?;
    }
    if diff.significant.len() > NAMED_REGRESSIONS {
        writeln!(
            out,
            "and {} more: see `significant regression` below",
            diff.significant.len() - NAMED_REGRESSIONS
        )?;
    }
    let title = diff.layout.summary_title;
    writeln!(out, "\n{title}\n{}", render(&diff.summary, columns))?;
    let all = format!("track diff {} --items --format csv", diff.command_args());
    let changes = without_zero_repeats(diff.changes()?)?;
    if changes.height() > 0 {
        print_capped(&mut out, "Changed items", &changes, (&all, columns))?;
    }
    let unpaired = without_zero_repeats(diff.unpaired()?)?;
    if unpaired.height() > 0 {
        print_capped(&mut out, "Only in one run", &unpaired, (&all, columns))?;
    }
    Ok(())
}

/// The report in Markdown (`--format markdown`), for a pull-request comment or a step
/// summary: the headline, every significant regression, the summary with its significant
/// regressions first, the changed items (the first [`TABLE_ROWS`], most serious first) and the
/// items found in one run only.
fn print_markdown(diff: &RunDiff, columns: Columns) -> anyhow::Result<()> {
    use crate::output::{markdown_cell, write_markdown};
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    writeln!(
        out,
        "### track diff {}\n",
        markdown_cell(&diff.command_args())
    )?;
    writeln!(out, "{}\n", markdown_cell(&diff.headline()))?;
    if diff.significant.is_empty() {
        writeln!(out, "No significant regression.\n")?;
    } else {
        writeln!(
            out,
            "**{}:**\n",
            crate::output::count(diff.significant.len() as u64, "significant regression")
        )?;
        for regression in &diff.significant {
            writeln!(out, "- {}", markdown_cell(regression))?;
        }
        writeln!(out)?;
    }
    if !diff.improvements.is_empty() {
        writeln!(
            out,
            "**{} (not regressions):**\n",
            crate::output::count(diff.improvements.len() as u64, "significant improvement")
        )?;
        for improvement in &diff.improvements {
            writeln!(out, "- {}", markdown_cell(improvement))?;
        }
        writeln!(out)?;
    }
    writeln!(out, "#### {}\n", diff.layout.summary_title)?;
    write_markdown(&regressions_first(&diff.summary)?, columns, &mut out)?;
    let all = format!("track diff {} --items --format csv", diff.command_args());
    for (title, df) in [
        ("Changed items", without_zero_repeats(diff.changes()?)?),
        ("Only in one run", without_zero_repeats(diff.unpaired()?)?),
    ] {
        if df.height() == 0 {
            continue;
        }
        if df.height() <= TABLE_ROWS {
            writeln!(out, "#### {title}\n")?;
            write_markdown(&df, columns, &mut out)?;
        } else {
            writeln!(
                out,
                "#### {title} (first {TABLE_ROWS} of {})\n",
                df.height()
            )?;
            write_markdown(&df.head(Some(TABLE_ROWS)), columns, &mut out)?;
            writeln!(out, "All {} rows: `{all}`\n", df.height())?;
        }
    }
    out.flush()?;
    Ok(())
}

/// The summary with its significant regressions first, the rest in their order.
fn regressions_first(summary: &DataFrame) -> PolarsResult<DataFrame> {
    let Ok(flags) = summary
        .column(SIGNIFICANT_REGRESSION)
        .and_then(|c| c.bool().cloned())
    else {
        return Ok(summary.clone());
    };
    let flagged = |want: bool| {
        flags
            .iter()
            .enumerate()
            .filter(move |(_, f)| f.unwrap_or(false) == want)
            .map(|(i, _)| i as polars::prelude::IdxSize)
    };
    let order: Vec<polars::prelude::IdxSize> = flagged(true).chain(flagged(false)).collect();
    summary.take(&polars::prelude::IdxCa::from_vec("order".into(), order))
}

/// The summary's column that flags a significant regression.
const SIGNIFICANT_REGRESSION: &str = "significant_regression";

/// `df` without its `repeat` or `trial` column when every row has 0 (runs without repeats):
/// one column less to read.
fn without_zero_repeats(df: DataFrame) -> PolarsResult<DataFrame> {
    for name in ["repeat", "trial"] {
        if let Ok(column) = df.column(name)
            && column.as_materialized_series().max::<u32>()? == Some(0)
        {
            return df.drop(name);
        }
    }
    Ok(df)
}

/// Prints `df` under `title`, cut to [`TABLE_ROWS`] rows with the command that lists all.
fn print_capped(
    out: &mut impl Write,
    title: &str,
    df: &DataFrame,
    (all, columns): (&str, Columns),
) -> std::io::Result<()> {
    if df.height() <= TABLE_ROWS {
        return writeln!(out, "\n{title}\n{}", render(df, columns));
    }
    writeln!(
        out,
        "\n{title} (first {TABLE_ROWS} of {} rows)\n{}\nall {} rows: {all}",
        df.height(),
        render(&df.head(Some(TABLE_ROWS)), columns),
        df.height(),
    )
}
