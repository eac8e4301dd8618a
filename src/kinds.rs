//! What a kind of experiment supplies to the commands: the trait [`Kind`] that each kind's
//! `entry.rs` implements, and the types its methods hand over. A leaf below the kinds: it
//! imports the layers they share (the runtime, `analysis`, `report`, `store`, `output`) and no
//! kind. The match that names the kinds, the registry, is `commands/registry.rs`, and only the
//! commands reach a kind through it.
//!
//! A capability a kind lacks is a method that returns `None` (a kind without an experiment
//! file, without a diff), and the commands then say so as they always have.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use polars::prelude::DataFrame;

use crate::analysis::diff::{DiffError, KindDiff, Layout};
use crate::config::Config;
use crate::experiment::{Experiment, ExperimentError, Overrides};
use crate::report::{ReportError, ReportPart};
use crate::store::{RunErrorRow, RunSelector, Store, StoreError};

/// What one kind of experiment supplies to the commands, besides its runs (which go through
/// the runtime as an [`Experiment`]). Each method answers for one command; an `Option` that
/// is `None` is a capability the kind lacks.
pub trait Kind: Sync {
    /// How `track run FILE` loads its experiment files; `None` for a kind without a file form
    /// (only its command starts it).
    fn loader(&self) -> Option<Loader>;

    /// The runs `track query`, `track export csv` and `track report` take without `--run`.
    fn default_runs(&self) -> RunSelector;

    /// Its `--by` values of `track query`, in the order `--help` lists them, each with the
    /// summary it prints; empty for a kind with nothing to query.
    fn groupings(&self) -> &'static [Grouping];

    /// Its options of `track query` that take a value and go with any of its groupings
    /// (`--reviewer MODEL`), in the order `--help` lists them; empty for a kind without any.
    fn query_options(&self) -> &'static [QueryOption];

    /// What `track export csv --kind <its name>` writes; `None`: the kind is not offered there.
    fn export_csv(&self) -> Option<ExportCsv>;

    /// How two of its runs are compared (`track diff`, `track report --run BASE,NEW`); `None`:
    /// its runs cannot be compared.
    fn diff(&self) -> Option<DiffRuns>;

    /// Its section of `track report`; `None`: its runs appear in the report's header only
    /// when named by id, and `latest`, `all` and the default selection leave them out.
    fn section(&self) -> Option<LoadSection>;

    /// The word for its runs in the report's header, counted: `2 benchmarks, 1 relevance run`.
    fn report_noun(&self) -> &'static str;

    /// The errors it finds in answers (`track runs --errors`), that its runs count among their
    /// errors beside the calls that got no answer; `None`: it finds none.
    fn answer_errors(&self) -> Option<AnswerErrors>;
}

/// Loads an experiment file of one kind: its path (for messages), its text, the config and
/// the command line's overrides.
pub type Loader =
    fn(&Path, &str, &Config, &Overrides) -> Result<Box<dyn Experiment>, ExperimentError>;

/// What `track export csv --kind <its name>` writes for a kind, and where.
#[derive(Debug, Clone, Copy)]
pub struct ExportCsv {
    /// Writes the kind's CSV files of some runs into [`ExportOptions::out`]: each file's path
    /// on stdout as it is written, notes on stderr.
    pub write: fn(&Store, &ExportRuns<'_>, &ExportOptions) -> anyhow::Result<()>,
    /// The files it writes, for `--help`: `bench_results.csv, bench_by_model.csv and
    /// bench_by_prompt.csv`.
    pub files: &'static str,
    /// The folder it writes into without `--out`: `exports`.
    pub default_out: &'static str,
}

/// How two runs of a kind are compared (`track diff`, a report's comparison).
#[derive(Debug, Clone, Copy)]
pub struct DiffRuns {
    /// Compares two runs, read from the store: the base run, then the new one.
    pub compare: fn(&Store, i64, i64) -> Result<KindDiff, DiffError>,
    /// How its frames read, and its part of `track diff --help`.
    pub layout: &'static Layout,
}

/// The errors a kind found in the answers of a run, each as `track runs --errors` lists it: the
/// stage and model of the call, the item, its attempts and why its answer could not be used.
pub type AnswerErrors = fn(&Store, i64) -> Result<Vec<RunErrorRow>, StoreError>;

/// Summarises some runs of a kind (oldest first) for `track report`.
pub type LoadSection = fn(&Store, &[i64]) -> Result<ReportPart, ReportError>;

/// The summary a `--by` value prints, of the runs selected (oldest first).
pub type Summary = fn(&Store, &[i64], &QueryOptions<'_>) -> anyhow::Result<DataFrame>;

/// A `--by` value of `track query`: its name, its line of `--help` (as clap would show a doc
/// comment: no final period), the options that go with it only, and its summary.
#[derive(Debug)]
pub struct Grouping {
    /// As typed after `--by`: `model`.
    pub name: &'static str,
    /// Its line in `track query --help`.
    pub help: &'static str,
    /// The options of `track query` that make sense with this grouping only.
    pub flags: &'static [QueryFlag],
    /// What it prints.
    pub summary: Summary,
}

/// An option of `track query` that a kind declares for some of its groupings (`--agreement`):
/// data, so that `track query` writes its command line from the kinds' entries, and no shared
/// struct has a field for one kind's flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryFlag {
    /// As typed after `--`: `agreement`.
    pub name: &'static str,
    /// What it does, for `--help`, which puts the `--by` values it goes with before it.
    pub help: &'static str,
}

/// An option of `track query` with a value that a kind declares for all its groupings
/// (`--reviewer MODEL`): data, as its [`QueryFlag`]s are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryOption {
    /// As typed after `--`: `reviewer`.
    pub name: &'static str,
    /// What its value is, in `--help`: `MODEL`.
    pub value_name: &'static str,
    /// Its line in `track query --help`, as written.
    pub help: &'static str,
}

/// The options of `track query` a summary may read.
pub struct QueryOptions<'a> {
    /// The names of the [`QueryFlag`]s given, each one of the chosen grouping's.
    pub flags: &'a [&'static str],
    /// The [`QueryOption`]s given, by name, with their values.
    pub values: &'a [(&'static str, String)],
    /// Loads the config (its catalog resolves a model a value names), only when a summary
    /// needs it.
    pub config: &'a dyn Fn() -> anyhow::Result<Config>,
}

impl QueryOptions<'_> {
    /// Whether `flag` was given.
    pub(crate) fn has(&self, flag: QueryFlag) -> bool {
        self.flags.contains(&flag.name)
    }

    /// The value of `option`, when it was given.
    pub(crate) fn value(&self, option: QueryOption) -> Option<&str> {
        self.values
            .iter()
            .find(|(name, _)| *name == option.name)
            .map(|(_, value)| value.as_str())
    }
}

/// The runs `track export csv` exports, with their status as observed now.
#[derive(Debug, Clone, Copy)]
pub struct ExportRuns<'a> {
    /// Oldest first.
    pub ids: &'a [i64],
    /// The runs' one status, or `mixed`.
    pub status: &'a str,
    /// Each run's status.
    pub run_status: &'a HashMap<i64, &'static str>,
}

/// The options of `track export csv` an export may read.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// The folder to write into: `--out`, else the kind's [`ExportCsv::default_out`].
    pub out: PathBuf,
    /// `--criteria`: the criteria file the reviews were made with.
    pub criteria: Option<PathBuf>,
    /// `--quiet`: no notes on stderr.
    pub quiet: bool,
}

impl ExportOptions {
    /// A note for the user on stderr, unless quiet.
    pub(crate) fn note(&self, message: impl AsRef<str>) {
        if !self.quiet {
            crate::output::tell(format_args!("{}", message.as_ref()));
        }
    }
}
