//! The glue every experiment command shares: the options of a run (`--concurrency`,
//! `--no-cache`, `--offline`, `--dry-run`, `--repeat`, `--budget`, `--batch`, `--detach`),
//! handing the experiment to the runtime, and printing the plan or the report, the tally, the
//! errors and the exit status.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use polars::prelude::*;

use super::{CacheArgs, Context};
use crate::config::Config;
use crate::dispatch::budget::ASSUMED_MAX_OUTPUT_TOKENS;
use crate::experiment::{
    Detail, Experiment, Overrides, Plan, ReportOptions, RunEnd, RunOptions, RunSummary, Shard,
    ShardPace, execute,
};
use crate::gate::Gate;
use crate::llm::Structured;
use crate::llm::batch::BatchApi;
use crate::output::columns;
use crate::output::{Columns, count, fit_line, render};
use crate::store::{Store, lock};

/// The options of every command that runs an experiment.
#[derive(Debug, Clone, clap::Args)]
pub struct ExperimentArgs {
    /// Calls in flight at once [default: 8, or `concurrency:` in config.yaml].
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Print the planned calls, how many are cached and the most they can cost; call
    /// nothing, record nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Samples of each call, each a distinct cache entry [default: the file's `repeat:`, or 1].
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Structured output for judges, reviewers and relevance answers, for every model: auto
    /// (ask for the answer's JSON schema; without it when a server refuses it), on, off
    /// [default: each model's `structured:` in config.yaml, else auto].
    #[arg(long, value_enum, value_name = "MODE")]
    pub structured: Option<Structured>,
    /// The most the run may spend, in US dollars (e.g. 5, 0.25): each call's worst case
    /// (judges, generators and reviewers included) is counted before it is sent, and a call
    /// that does not fit is not sent. The run then stops with the status `budget`; the same
    /// command with a larger --budget finishes it from the cache [default: the file's
    /// `budget:`, else none].
    #[arg(long, value_name = "USD", value_parser = parse_budget_arg, allow_hyphen_values = true)]
    pub budget: Option<f64>,
    /// Send the calls not in the cache through the provider's batch API, at half price, with
    /// results within 24 hours (usually within one); models whose provider has none (Ollama,
    /// most OpenAI-compatible servers) run live in the same run. The run polls until its
    /// batches end; Ctrl-C leaves it `waiting`, and the same command collects it later
    /// [default: the file's `batch:`, else off].
    #[arg(long)]
    pub batch: bool,
    /// With batches: submit them, then exit leaving the run `waiting` instead of polling; run
    /// the same command later to collect what has finished (see `track batches`).
    #[arg(long)]
    pub detach: bool,
    /// Run one part of the plan, for runs spread over machines: k/N (k from 0 to N-1), or
    /// `auto` from a scheduler (JOB_COMPLETION_INDEX and JOB_COMPLETIONS of a Kubernetes
    /// Indexed Job, SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT of a Slurm array). Each
    /// item (a test and its judge, an image's WITH and WITHOUT calls, a sensor's datasheets and
    /// reviews, a pairwise item) goes to one shard; `track merge` joins the shards' databases.
    #[arg(long, value_name = "k/N|auto")]
    pub shard: Option<String>,
    /// How shards share their keys' rate limits: split (each of N paces at 1/N: one key, a
    /// database each) or whole (a key each, or one shared database) [default: split].
    #[arg(long, value_enum, value_name = "HOW", requires = "shard")]
    pub shard_pace: Option<ShardPace>,
}

/// `--budget`'s value parser: [`parse_budget`](crate::dispatch::budget::parse_budget), for clap.
fn parse_budget_arg(text: &str) -> Result<f64, String> {
    crate::dispatch::budget::parse_budget(text)
}

impl ExperimentArgs {
    /// The model catalog and settings, with these options applied (`--structured`).
    pub(crate) fn load_config(&self, context: &Context) -> anyhow::Result<Config> {
        let mut config = context.load_config()?;
        if let Some(mode) = self.structured {
            for model in &mut config.catalog.models {
                model.structured = mode;
            }
        }
        Ok(config)
    }

    /// The runtime's options; a `--shard` that cannot be read is refused.
    pub(crate) fn options(&self, context: &Context, config: &Config) -> anyhow::Result<RunOptions> {
        let shard = match &self.shard {
            Some(text) => Shard::parse(text, |name| std::env::var(name).ok())?,
            None => Shard::WHOLE,
        };
        Ok(RunOptions {
            cache: self.cache.mode(),
            dry_run: self.dry_run,
            concurrency: self
                .concurrency
                .unwrap_or(config.settings.concurrency)
                .max(1),
            show_progress: !context.quiet,
            command: Some(super::command_line()),
            budget_usd: self.budget,
            batch: self.batch,
            detach: self.detach,
            shard,
            shard_pace: self.shard_pace.unwrap_or_default(),
        })
    }

    /// The overrides these options carry (`--repeat`, and `--offline` for reading data
    /// files); commands add their own.
    pub(crate) fn overrides(&self, context: &Context) -> Overrides {
        Overrides {
            repeat: self.repeat,
            cases: crate::cases::LoadOptions {
                db: (!self.dry_run || context.db.exists()).then(|| context.db.clone()),
                offline: self.cache.offline,
                refresh: self.cache.refresh_data,
                // Set by a benchmark whose config has targets.
                keep_values: false,
            },
            dry_run: self.dry_run,
            ..Overrides::default()
        }
    }
}

/// How a run's report shows its tables (benchmarks; other kinds print no tables).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct TableArgs {
    /// A benchmark's summaries only: no failures, no per-case table.
    #[arg(long, conflicts_with = "detail")]
    pub no_detail: bool,
    /// A benchmark's every table: the per-result table and the whole per-case table, then the
    /// first failures and the summaries [default: the per-case table when short, the first
    /// failures with their answers and reasons, then the summaries].
    #[arg(long)]
    pub detail: bool,
    /// Every column under its full header, the tables printed in parts when they are wider
    /// than the terminal [default: the main columns under short headers].
    #[arg(long)]
    pub wide: bool,
}

/// Runs `experiment` with the options of `args` through the runtime and prints what came of
/// it, its tables as `tables` says; a run that ends as it should is then held to `gate` (exit
/// status 3 below it).
pub(crate) fn run_experiment(
    context: &Context,
    config: &Config,
    mut experiment: Box<dyn Experiment>,
    args: &ExperimentArgs,
    (tables, gate): (TableArgs, &Gate),
) -> anyhow::Result<ExitCode> {
    let options = args.options(context, config)?;
    // Before the database is opened or anything is sent.
    options.check_batch(experiment.batch())?;
    let report = ReportOptions {
        detail: match (tables.no_detail, tables.detail) {
            (true, _) => Detail::Summaries,
            (false, true) => Detail::All,
            (false, false) => Detail::Usual,
        },
        quiet: context.quiet,
        columns: Columns::wide_if(tables.wide),
    };
    // A dry run on a database that does not exist yet plans against an empty cache without
    // creating the file.
    let (store, db) = if options.dry_run && !context.db.exists() {
        (Store::open_in_memory()?, None)
    } else {
        (context.open_store()?, Some(context.db.as_path()))
    };
    tracing::debug!("database opened");
    let store = Arc::new(Mutex::new(store));
    let end = execute(
        experiment.as_mut(),
        store.clone(),
        db,
        &config.settings,
        &options,
    )?;
    let (summary, plan) = match end {
        RunEnd::Planned(plan) => {
            print_dry_run(experiment.as_ref(), &options, plan)?;
            return Ok(ExitCode::SUCCESS);
        }
        RunEnd::Ran(summary, plan) => (*summary, plan),
    };
    // Declared after the store, so dropped (joined) before it closes.
    let _checkpoint = db.map(crate::store::checkpoint_in_background);
    // A run left waiting before any answer landed has nothing to show but its note.
    let nothing_yet = summary.waiting.is_some() && summary.tally.counts.calls == 0;
    if summary.signal.is_none() && !nothing_yet {
        let stdout = std::io::stdout();
        let mut out = ClosedPipeIsDone::new(stdout.lock());
        experiment.report(&lock(&store), &summary, &report, &mut out)?;
        tracing::debug!("results printed");
        if out.closed {
            // `track run … | head`: the reader has what it wanted; the run itself is recorded.
            return Ok(ExitCode::from(held_to(&lock(&store), &summary, gate)?));
        }
    }
    // The tally is a diagnostic (stderr): stdout stays the results, e.g. the files written.
    report.note(summary.line());
    print_errors(context, &summary);
    if let Some(why) = summary.failure() {
        crate::output::tell(format_args!("track: {why}"));
    }
    if let Some(note) = summary.waiting_note() {
        crate::output::tell(format_args!("track: {note}"));
    }
    if plan.shard.is_part() {
        // Said even with --quiet: a shard's figures are not the plan's.
        tell_shard(&plan, summary.run_id);
    }
    Ok(ExitCode::from(held_to(&lock(&store), &summary, gate)?))
}

/// The exit status of a run that ended as `summary` says, held to `gate`: its own status when
/// it is not 0 (an interrupted run's 130, a budget's 1); the bar's verdict when the run ended
/// as it should ([`super::gate::judge`]); 0 for a run left waiting for its batches, whose
/// results are not in yet (the command that collects them checks the bar).
fn held_to(store: &Store, summary: &RunSummary, gate: &Gate) -> anyhow::Result<u8> {
    let code = summary.exit_code();
    if code != crate::exit::SUCCESS || !gate.is_set() {
        return Ok(code);
    }
    if summary.status == crate::store::RunStatus::Waiting {
        crate::output::tell(format_args!(
            "track: the bar (--fail-under, --fail-on-errors) is checked once run {} is \
             collected: run the same command again",
            summary.run_id
        ));
        return Ok(code);
    }
    super::gate::judge(store, summary.kind, &[summary.run_id], gate)
}

/// `--dry-run`'s plan on stdout: its calls (as batched when the run would batch them), the
/// data read and the budget's bound.
fn print_dry_run(
    experiment: &dyn Experiment,
    options: &RunOptions,
    plan: Plan,
) -> anyhow::Result<()> {
    let budget = options.budget(experiment.budget_usd());
    let batch = options.batch_on(experiment.batch());
    let plan = if batch {
        plan.batched(experiment.targets())
    } else {
        plan
    };
    let unpriced = plan.unpriced(experiment.targets());
    print_plan(
        &plan,
        (experiment.header().file.as_deref(), experiment.loaded()),
        &unpriced,
        budget,
        batch,
    )?;
    Ok(())
}

/// What a shard's run holds of its plan, and how its shards are joined.
fn tell_shard(plan: &Plan, run_id: i64) {
    let held = if plan.calls() == 0 {
        "holds none of the plan's items (they all went to other shards)".to_owned()
    } else {
        format!("holds {} of the plan's calls", plan.calls())
    };
    crate::output::tell(format_args!(
        "track: run {run_id} is shard {} of plan {}: it {held}; once every shard has \
         finished, `track merge OUT.db SHARD.db…` joins them into one run",
        plan.shard,
        &plan.sha256[..12.min(plan.sha256.len())]
    ));
}

/// A run's errors on stderr, one line per model and cause (the first few causes).
fn print_errors(context: &Context, summary: &RunSummary) {
    let tally = &summary.tally;
    let errors = tally.counts.errors;
    if context.quiet || errors == 0 {
        return;
    }
    let groups = &tally.error_groups;
    let shown = groups.len().min(SHOWN_ERROR_GROUPS);
    let causes = if tally.ungrouped_errors > 0 {
        format!("more than {} causes", groups.len())
    } else {
        crate::output::count(groups.len() as u64, "cause")
    };
    let heading = if shown < groups.len() || tally.ungrouped_errors > 0 {
        format!("{} ({causes}; the first {shown}):", count(errors, "error"))
    } else {
        format!("{} ({causes}):", count(errors, "error"))
    };
    crate::output::tell(format_args!("{heading}"));
    for group in &groups[..shown] {
        crate::output::tell(format_args!("  {group}"));
    }
    if errors > 1 {
        crate::output::tell(format_args!(
            "each error, with its item and why: track runs --errors {}",
            summary.run_id
        ));
    }
}

/// Causes of errors a run's summary lists.
const SHOWN_ERROR_GROUPS: usize = 8;

/// A dry run's plan: per model, calls, cached, to call, the bound of their cost and why
/// some will fail; in batch mode, which models go through a batch API and which run live;
/// with a budget, whether the bound fits it. `unpriced` says which models have calls to send
/// and no price ([`Plan::unpriced`]): their cost is unknown, left out of the bound.
fn print_plan(
    plan: &Plan,
    (file, loaded): (Option<&str>, Option<String>),
    unpriced: &[String],
    budget_usd: Option<f64>,
    batch: bool,
) -> anyhow::Result<()> {
    let lines = &plan.lines;
    let df = DataFrame::new_infer_height(vec![
        Column::new(
            "model".into(),
            lines.iter().map(|l| l.model.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "calls".into(),
            lines.iter().map(|l| l.calls).collect::<Vec<_>>(),
        ),
        Column::new(
            "cached".into(),
            lines.iter().map(|l| l.cached).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::TO_CALL.name.into(),
            lines.iter().map(|l| l.to_call).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::MAX_COST_USD.name.into(),
            lines.iter().map(|l| l.max_cost_usd).collect::<Vec<_>>(),
        ),
        Column::new(
            "note".into(),
            lines.iter().map(|l| l.note.clone()).collect::<Vec<_>>(),
        ),
    ])?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "{}", render(&df, Columns::Compact))?;
    if let Some(loaded) = loaded {
        writeln!(out, "{}", fit_line(&loaded))?;
    }
    let summary = format!(
        "dry run{}: {} planned, {} cached, {} to call, at most ${:.6}{} (inputs at a \
         token a byte, the most any tokenizer makes; each answer at its max_tokens or \
         {ASSUMED_MAX_OUTPUT_TOKENS} when unset{}); nothing was called",
        file.map(|f| format!(" of {f}")).unwrap_or_default(),
        crate::output::count(plan.calls(), "call"),
        plan.cached(),
        plan.to_call(),
        plan.priced_max_cost_usd(),
        if unpriced.is_empty() {
            ""
        } else {
            " plus the unknown cost of the calls of models without a price"
        },
        if batch {
            "; calls through a batch API at its half price"
        } else {
            ""
        },
    );
    writeln!(out, "{}", fit_line(&summary))?;
    for sentence in unpriced {
        writeln!(out, "{}", fit_line(&format!("cost unknown: {sentence}")))?;
    }
    if batch {
        for line in batch_lines(plan) {
            writeln!(out, "{}", fit_line(&line))?;
        }
    }
    if plan.shard.is_part() {
        writeln!(
            out,
            "shard {} of plan {}: only this shard's calls are counted above; the other \
             shards' are theirs",
            plan.shard,
            &plan.sha256[..12.min(plan.sha256.len())]
        )?;
    }
    if let Some(budget) = budget_usd {
        for line in budget_lines(plan, budget) {
            writeln!(out, "{}", fit_line(&line))?;
        }
    }
    Ok(())
}

/// For a plan in batch mode ([`Plan::batched`]), which models' calls to send go through a
/// batch API (bounded at half price) and which run live: one line per API, one per live
/// model; none when nothing is to be sent.
fn batch_lines(plan: &Plan) -> Vec<String> {
    let (batched, live) = plan.batch_routes();
    let mut lines = Vec::new();
    for api in [BatchApi::Openai, BatchApi::Anthropic] {
        let models: Vec<&str> = batched
            .iter()
            .filter(|(_, a)| *a == api)
            .map(|(r, _)| *r)
            .collect();
        if !models.is_empty() {
            lines.push(format!(
                "batch: {} through the {} batch API, bounded at half price (results within 24 \
                 hours)",
                models.join(", "),
                api.as_str()
            ));
        }
    }
    for model in live {
        lines.push(format!("batch: {model} has no batch API: runs live"));
    }
    lines
}

/// What a budget does to a plan: the calls it refuses (to a target without `max_cost_usd:`),
/// each line's in one line; then whether the bound of the others fits it, if any are left.
fn budget_lines(plan: &Plan, budget: f64) -> Vec<String> {
    let (refused, bound) = plan.under_budget();
    let mut lines: Vec<String> = refused
        .iter()
        .map(|line| {
            format!(
                "budget {}: the {} to {} would not be sent: {}",
                crate::output::dollars(budget),
                crate::output::count(line.to_call, "call"),
                line.model,
                line.unbounded.as_deref().unwrap_or_default()
            )
        })
        .collect();
    let others: u64 = plan
        .lines
        .iter()
        .filter(|l| l.unbounded.is_none())
        .map(|l| l.to_call)
        .sum();
    if refused.is_empty() {
        lines.push(budget_fit("the plan's", bound, budget));
    } else if others > 0 {
        lines.push(budget_fit("the other calls'", bound, budget));
    }
    lines
}

/// Whether `whose` cost bound (`the plan's`) fits a budget, in one line.
fn budget_fit(whose: &str, bound_usd: f64, budget_usd: f64) -> String {
    use crate::output::dollars;
    let (budget, bound) = (dollars(budget_usd), dollars(bound_usd));
    if bound_usd <= budget_usd {
        format!("budget {budget}: {whose} bound {bound} fits")
    } else {
        format!(
            "budget {budget}: {whose} bound {bound} does not fit; the run would stop at its \
             budget, having sent only what fits"
        )
    }
}

/// A writer for which a closed pipe (`track run … | head -1`) ends the output quietly: later
/// writes are dropped instead of failing the report.
struct ClosedPipeIsDone<W> {
    inner: W,
    closed: bool,
}

impl<W: std::io::Write> ClosedPipeIsDone<W> {
    fn new(inner: W) -> Self {
        Self {
            inner,
            closed: false,
        }
    }

    fn guard<T>(&mut self, result: std::io::Result<T>, done: T) -> std::io::Result<T> {
        match result {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(done)
            }
            other => other,
        }
    }
}

impl<W: std::io::Write> std::io::Write for ClosedPipeIsDone<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write(buf);
        self.guard(result, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.guard(result, ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dry_run_says_whether_the_bound_fits_the_budget() {
        assert_eq!(
            budget_fit("the plan's", 0.0312, 0.05),
            "budget $0.05: the plan's bound $0.0312 fits"
        );
        assert_eq!(
            budget_fit("the plan's", 0.0312, 0.01),
            "budget $0.01: the plan's bound $0.0312 does not fit; the run would stop at its \
             budget, having sent only what fits"
        );
    }

    #[test]
    fn a_dry_run_in_batch_mode_says_which_models_go_through_which_api() {
        use crate::experiment::PlanLine;
        let line = |model: &str, to_call: u64, batch: Option<BatchApi>| PlanLine {
            model: model.into(),
            calls: to_call,
            cached: 0,
            to_call,
            max_cost_usd: Some(0.0),
            note: None,
            batch,
            unbounded: None,
        };
        let plan = Plan {
            lines: vec![
                line("openai:gpt-4o", 2, Some(BatchApi::Openai)),
                line("ollama:llama3.2", 2, None),
                line("anthropic:haiku 3.5 (judge)", 2, Some(BatchApi::Anthropic)),
                line("openai:gpt-4o-mini", 1, Some(BatchApi::Openai)),
                line("ollama:llava", 0, None),
            ],
            stages: vec!["answers"],
            ..Plan::default()
        };
        assert_eq!(
            batch_lines(&plan),
            [
                "batch: openai:gpt-4o, openai:gpt-4o-mini through the openai batch API, bounded \
                 at half price (results within 24 hours)",
                "batch: anthropic:haiku 3.5 through the anthropic batch API, bounded at half \
                 price (results within 24 hours)",
                "batch: ollama:llama3.2 has no batch API: runs live",
            ]
        );
        assert!(batch_lines(&Plan::default()).is_empty());
    }

    #[test]
    fn a_bad_budget_names_the_option_and_the_fix() {
        #[derive(Debug, clap::Parser)]
        struct Cli {
            #[command(flatten)]
            run: ExperimentArgs,
        }
        use clap::Parser as _;
        let ok = Cli::try_parse_from(["track", "--budget", "$0.5"]).unwrap();
        assert_eq!(ok.run.budget, Some(0.5));
        for bad in ["-1", "0", "abc"] {
            let e = Cli::try_parse_from(["track", "--budget", bad])
                .unwrap_err()
                .to_string();
            let first = e.lines().next().unwrap_or_default();
            assert!(
                first.starts_with(&format!(
                    "error: invalid value '{bad}' for '--budget <USD>': "
                )),
                "{first}"
            );
            assert!(first.contains("US dollars"), "{first}");
        }
    }
}
