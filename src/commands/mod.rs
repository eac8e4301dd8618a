//! The command line: global options, one file per subcommand, and dispatch.
//!
//! Each subcommand file holds its clap struct (whose doc comments are its `--help`) and a
//! `run` that turns arguments into options, calls the library and prints what it returns.

mod batches;
mod completions;
mod diff;
mod experiment;
mod export;
mod export_parquet;
mod gate;
mod generate;
mod man;
mod merge;
mod models;
mod query;
mod rate;
mod reference;
mod registry;
mod relevance;
mod report;
mod review;
mod run;
mod runs;
mod view;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::dispatch::CacheMode;
use crate::experiment::observed_status;
use crate::store::{RunStatus, Store};

/// track: run LLM benchmarks and experiments, cache every call, summarise the results.
#[derive(Debug, Parser)]
#[command(
    name = "track",
    version = env!("TRACK_VERSION"),
    about,
    long_about = None,
    arg_required_else_help = true,
    after_help = crate::exit::help()
)]
pub struct Cli {
    /// The SQLite database holding calls, runs and results [default: the nearest track.db in
    /// this folder or its parents, as git finds its repository; else ./track.db].
    #[arg(long, env = "TRACK_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Model catalog and settings [default: ./config.yaml when it exists].
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Print only results: no progress bar, no notes.
    #[arg(short, long)]
    pub quiet: bool,
    /// Log more (-v: debug, -vv: trace) to stderr.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses the command line. The options of the top level (`--db`, `--config`, `-q`, `-v`)
    /// work after any subcommand too, but only the top level's `--help` lists them: each
    /// subcommand's help lists its own options and points there.
    pub fn parse_with_global_options_on_top() -> Self {
        use clap::FromArgMatches as _;
        let matches = Self::command_with_global_options().get_matches();
        let mut cli = Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        let mut level = &matches;
        while let Some((_, sub)) = level.subcommand() {
            // A path typed on the command line wins over one from the environment (TRACK_DB).
            let typed = |id: &str| {
                (sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
                    .then(|| sub.get_one::<PathBuf>(id).cloned())
                    .flatten()
            };
            cli.db = typed("db").or(cli.db.take());
            cli.config = typed("config").or(cli.config.take());
            cli.quiet |= sub.get_flag("quiet");
            cli.verbose = cli.verbose.saturating_add(sub.get_count("verbose"));
            level = sub;
        }
        cli
    }

    /// The command line as [`Cli::parse_with_global_options_on_top`] parses it: the top-level
    /// options hidden in every subcommand. Completions, man pages and the reference are made
    /// from it.
    pub fn command_with_global_options() -> clap::Command {
        use clap::CommandFactory as _;
        let command = Self::command();
        let top: Vec<clap::Arg> = command
            .get_arguments()
            .filter(|a| GLOBAL_OPTIONS.contains(&a.get_id().as_str()))
            .cloned()
            .collect();
        with_hidden_options(command, &top)
    }
}

/// The ids of the top-level options that also work after a subcommand.
const GLOBAL_OPTIONS: [&str; 4] = ["db", "config", "quiet", "verbose"];

/// `command` whose subcommands (at every depth) accept the options `top`, hidden from their
/// help, which points to the top level's.
fn with_hidden_options(mut command: clap::Command, top: &[clap::Arg]) -> clap::Command {
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        command = command.mut_subcommand(name, |mut sub| {
            for arg in top {
                sub = sub.arg(arg.clone().hide(true));
            }
            with_hidden_options(sub, top).after_help(
                "Options of every command (--db, --config, -q, -v) and exit statuses: \
                     track --help",
            )
        });
    }
    command
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    Run(run::RunArgs),
    GenerateDatasheets(generate::GenerateArgs),
    ReviewDatasheets(review::ReviewArgs),
    Relevance(relevance::RelevanceArgs),
    Runs(runs::RunsArgs),
    Batches(batches::BatchesArgs),
    Query(query::QueryArgs),
    Diff(diff::DiffArgs),
    Export(export::ExportArgs),
    Merge(merge::MergeArgs),
    Rate(rate::RateArgs),
    Report(report::ReportArgs),
    Models(models::ModelsArgs),
    View(view::ViewArgs),
    Completions(completions::CompletionsArgs),
    Man(man::ManArgs),
}

/// What every command may need: where the database and config are, and how loud to be.
#[derive(Debug, Clone)]
pub struct Context {
    pub db: PathBuf,
    pub config: Option<PathBuf>,
    pub quiet: bool,
}

impl Context {
    /// Opens (creating and migrating) the database.
    pub(crate) fn open_store(&self) -> anyhow::Result<Store> {
        let new = !self.db.exists();
        let store = Store::open(&self.db).with_context(|| {
            format!("opening the database {} to write in it", self.db.display())
        })?;
        if new {
            // Said even with --quiet: a new database has an empty cache, so calls are paid
            // again; a user in the wrong folder needs to know.
            let shown = std::path::absolute(&self.db).unwrap_or_else(|_| self.db.clone());
            crate::output::tell(format_args!(
                "track: created a new database at {}",
                shown.display()
            ));
        }
        Ok(store)
    }

    /// Opens the database only if it exists (for commands that only read).
    pub(crate) fn open_existing_store(&self) -> anyhow::Result<Store> {
        if !self.db.exists() {
            anyhow::bail!(
                "no database at {}: run a benchmark first (`track run FILE.yaml`) or pass --db",
                self.db.display()
            );
        }
        // A database that cannot be written (a read-only folder or file, a shared archive) is
        // still read: queries and exports write nothing into it.
        self.open_store().or_else(|writable| {
            Store::open_read_only(&self.db)
                .inspect(|_| tracing::info!("{} opened read-only: {writable:#}", self.db.display()))
                .with_context(|| format!("opening the database {}", self.db.display()))
        })
    }

    /// Loads the model catalog and settings.
    pub(crate) fn load_config(&self) -> anyhow::Result<Config> {
        Ok(Config::load(self.config.as_deref())?)
    }

    /// A note for the user on stderr, unless quiet.
    pub(crate) fn note(&self, message: impl AsRef<str>) {
        if !self.quiet {
            crate::output::tell(format_args!("{}", message.as_ref()));
        }
    }
}

/// Runs the parsed command line.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    crate::output::set_quiet(cli.quiet);
    let context = Context {
        db: cli.db.unwrap_or_else(find_database),
        config: cli.config,
        quiet: cli.quiet,
    };
    match cli.command {
        Command::Run(args) => run::run(&context, args),
        Command::GenerateDatasheets(args) => generate::run(&context, args),
        Command::ReviewDatasheets(args) => review::run(&context, args),
        Command::Relevance(args) => relevance::run(&context, args),
        Command::Runs(args) => runs::run(&context, args),
        Command::Batches(args) => batches::run(&context, args),
        Command::Query(args) => query::run(&context, args),
        Command::Diff(args) => diff::run(&context, args),
        Command::Export(args) => export::run(&context, args),
        Command::Merge(args) => merge::run(&context, args),
        Command::Rate(args) => rate::run(&context, args),
        Command::Report(args) => report::run(&context, args),
        Command::Models(args) => models::run(&context, args),
        Command::View(args) => view::run(&context, args),
        Command::Completions(args) => completions::run(&args),
        Command::Man(args) => man::run(&args),
    }
}

/// The nearest `track.db` in the working folder or its parents; `./track.db` when there is
/// none (created on first use, with a note). Running from a subfolder then reuses the cache
/// instead of paying again.
fn find_database() -> PathBuf {
    let here = PathBuf::from(DEFAULT_DB);
    if here.exists() {
        return here;
    }
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            cwd.ancestors()
                .skip(1)
                .map(|dir| dir.join(DEFAULT_DB))
                .find(|p| p.is_file())
        })
        .unwrap_or(here)
}

/// The database's file name when none is given.
const DEFAULT_DB: &str = "track.db";

/// Which sensors a datasheet command works on.
#[derive(Debug, Clone, clap::Args)]
pub struct SensorArgs {
    /// Only this sensor (as in the list's `Sensor` column).
    #[arg(long)]
    pub sensor: Option<String>,
    /// Only sensors of this brand.
    #[arg(long)]
    pub brand: Option<String>,
    /// The sensors list (CSV with `Brand` and `Sensor` columns).
    #[arg(long, default_value = "data/sensors.csv", value_name = "PATH")]
    pub sensors: PathBuf,
}

/// How a command uses the call cache.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct CacheArgs {
    /// Call every model afresh, ignoring (but updating) the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Never call a provider: fail what is not cached (a run that costs nothing).
    #[arg(long, conflicts_with = "no_cache")]
    pub offline: bool,
    /// Fetch `hf://` data files again, for a branch or tag that may have moved since they
    /// were kept (an address pinned to a commit is read from the database still).
    #[arg(long, conflicts_with = "offline")]
    pub refresh_data: bool,
}

impl CacheArgs {
    /// The executor's cache mode.
    pub(crate) fn mode(self) -> CacheMode {
        if self.offline {
            CacheMode::Offline
        } else if self.no_cache {
            CacheMode::Refresh
        } else {
            CacheMode::Use
        }
    }
}

/// The status of the runs a query or export covers: their one status (or `mixed`), and each
/// run's. Each run that is not `completed` gets a warning on stderr: its figures cover only
/// what it recorded.
pub(crate) fn selection_status(
    context: &Context,
    store: &Store,
    run_ids: &[i64],
) -> anyhow::Result<(&'static str, HashMap<i64, &'static str>)> {
    let mut statuses = BTreeSet::new();
    let mut per_run = HashMap::new();
    for run in store.runs_by_id(run_ids)? {
        let mut status = observed_status(&context.db, run.id, run.status);
        if let Some((k, n)) = run.shard
            && status == RunStatus::Completed
        {
            // One shard of a plan covers part of it: its figures are not the plan's.
            crate::output::tell(format_args!(
                "track: warning: run {} is shard {k}/{n} of its plan: these figures cover only \
                 that shard; `track merge OUT.db SHARD.db…` joins the {n} shards' databases \
                 into one run of the whole plan",
                run.id
            ));
            status = RunStatus::Partial;
            statuses.insert(status.as_str());
            per_run.insert(run.id, status.as_str());
            continue;
        }
        statuses.insert(status.as_str());
        per_run.insert(run.id, status.as_str());
        if status != RunStatus::Completed {
            // `is interrupted`, `is abandoned`; a run its budget stopped `is stopped by its budget`.
            let state = match status {
                RunStatus::Budget => "stopped by its budget (`budget`)".to_owned(),
                RunStatus::Waiting => {
                    "waiting for its batches (`waiting`; the same command collects them)".to_owned()
                }
                RunStatus::Partial => "merged from some of its shards only (`partial`)".to_owned(),
                other => other.to_string(),
            };
            match run.merged_shards {
                // Merged from shards recorded before their plan's size was (V19): only the
                // shards' own parts are known.
                Some(n) if run.plan_calls.is_none() => crate::output::tell(format_args!(
                    "track: warning: run {} is {state}: it recorded {} of the {} calls its merged \
                     shards planned, of a plan of {n} shards whose size was not recorded, and \
                     these figures cover only those",
                    run.id, run.tally.calls, run.tally.planned_calls
                )),
                _ => crate::output::tell(format_args!(
                    "track: warning: run {} is {state}: it recorded {} of the {} calls it planned, \
                     and these figures cover only those",
                    run.id, run.tally.calls, run.tally.planned_calls
                )),
            }
        }
    }
    let selection = match statuses.len() {
        1 => statuses.first().copied().unwrap_or("completed"),
        _ => "mixed",
    };
    Ok((selection, per_run))
}

/// The command line as typed, after `track` and without the options that change only what
/// is printed (`-q`, `-v`), each argument quoted for a POSIX shell when it needs it: what
/// `track runs` shows of a run started without an experiment file.
pub(crate) fn command_line() -> String {
    let printing_only = |arg: &str| {
        arg == "--quiet"
            || arg == "--verbose"
            || (arg.len() > 1
                && arg.starts_with('-')
                && arg[1..].chars().all(|c| c == 'q' || c == 'v'))
    };
    std::env::args_os()
        .skip(1)
        .filter(|arg| !printing_only(&arg.to_string_lossy()))
        .map(|arg| {
            let arg = arg.to_string_lossy().into_owned();
            let plain = !arg.is_empty()
                && arg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c));
            if plain {
                arg
            } else {
                format!("'{}'", arg.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The display form of a path for messages.
pub(crate) fn shown(path: &Path) -> String {
    path.display().to_string()
}
