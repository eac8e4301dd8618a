//! The runtime every experiment kind goes through, written once: the run row and how it ends
//! (completed, interrupted, budget, waiting, failed; abandoned when its process is gone),
//! signals, the plan and its dry-run bound, `--offline`, batch mode, the missing-key policy,
//! the budget, progress, the cost/paid tally, the error summary and the exit code.
//!
//! An experiment kind supplies only its stages of calls ([`Experiment::stage`]) and how an
//! answer becomes its rows ([`Experiment::record`]). It never speaks HTTP, never decides
//! whether a call is sent, and never writes SQL by hand.

mod lifecycle;
mod options;
mod plan;
mod runtime;
mod shard;
mod signals;
mod summary;
mod tally;
mod target;

use std::any::Any;
use std::io::Write;
use std::sync::Arc;

pub use crate::dispatch::PollPolicy;
pub use crate::dispatch::Waiting;
pub use crate::kind::{ExperimentKind, UnknownKind};
pub(crate) use lifecycle::observed_status;
pub(crate) use options::batch_flag;
pub use options::{FileBudget, MAX_REPEAT, Override, Overrides, RunOptions, ShardPace};
pub(crate) use plan::check_size;
pub use plan::{MAX_PLANNED_CALLS, Plan, PlanLine};
pub use runtime::{RunEnd, execute};
pub use shard::{AUTO_SOURCES, MAX_SHARDS, Shard, ShardError};
pub use signals::{Interruption, Signal};
pub use summary::RunSummary;
pub use tally::{ErrorGroup, Tally};
pub use target::Target;

use crate::config::ConfigError;
use crate::dispatch::{CallJob, CallOutcome};
use crate::store::{Store, StoreError};

/// What stops an experiment from being planned, run or reported.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An option that makes no sense for this kind of experiment.
    #[error("{option} does not apply to {kind} experiments: {why}")]
    Unsupported {
        kind: ExperimentKind,
        option: &'static str,
        why: &'static str,
    },
    /// More samples per call than track accepts (a typo such as `repeat: 4294967295`).
    #[error(
        "`repeat: {repeat}` is more than the {limit} samples of each call track accepts; lower it"
    )]
    TooManyRepeats { repeat: u32, limit: u32 },
    /// The plan is larger than track accepts (a typo such as `repeat: 4294967295`).
    #[error("the plan has {calls} calls, more than the {limit} track accepts in one run; {fix}")]
    TooLarge {
        calls: u64,
        limit: u64,
        fix: &'static str,
    },
    /// Options that cannot go together, with the fix (`--batch` with `--offline`).
    #[error("{0}")]
    Conflict(&'static str),
    /// A budget over calls whose cost is unknown (a model without a price), naming the
    /// prices to set.
    #[error("{0}")]
    BudgetWithoutPrice(String),
    /// A kind's own error (its spec, its files, its report).
    #[error(transparent)]
    Kind(Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

impl ExperimentError {
    /// Wraps a kind's own error.
    pub(crate) fn kind(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Kind(Box::new(error))
    }
}

/// What a run's report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// How much beyond the summaries a benchmark prints.
    pub detail: Detail,
    /// No notes on stderr (`--quiet`).
    pub quiet: bool,
    /// Which columns its tables show (`--wide`: all).
    pub columns: crate::output::Columns,
}

/// How much a benchmark run prints beyond its summaries, which come last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// The summaries only (`--no-detail`).
    Summaries,
    /// The summaries, the first failures with their answers and reasons, and the per-case
    /// table when it is short (a long one is named, not printed).
    #[default]
    Usual,
    /// All of it, and the per-result table (`--detail`).
    All,
}

impl ReportOptions {
    /// A note for the user on stderr, unless quiet.
    pub(crate) fn note(&self, message: impl AsRef<str>) {
        if !self.quiet {
            crate::output::tell(format_args!("{}", message.as_ref()));
        }
    }
}

/// What the run row records about an experiment besides its kind.
#[derive(Debug, Clone, Default)]
pub struct RunHeader {
    /// The experiment file, or the list file a command works on.
    pub file: Option<String>,
    /// sha256 of the experiment file's text.
    pub spec_sha256: Option<String>,
    /// The options in force, as JSON.
    pub options: serde_json::Value,
}

/// One call an experiment wants made.
#[derive(Debug, Clone)]
pub struct PlannedCall {
    /// Index into [`Experiment::targets`].
    pub target: usize,
    pub job: CallJob,
    /// The kind's own index of what the call is for (an evaluation, a sensor, an image).
    pub item: usize,
    /// Calls of a lower group are sent before those of a higher one (benchmarks: one group per
    /// model, so models run in order and the prompts of one model concurrently).
    pub group: u32,
    /// Whether the next stage needs this call's answer (the runtime keeps it for it).
    pub follow_up: bool,
    /// The outcome of the call this one follows from (a judge's answer to judge).
    pub after: Option<Box<CallOutcome>>,
}

/// A call a later stage will make whose request cannot be known yet (it depends on an answer
/// not in the cache): counted in the plan with a bound of its size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendingCall {
    pub target: usize,
    /// Most input tokens it can have.
    pub input_tokens: u64,
    /// Most output tokens it can have.
    pub output_tokens: u64,
}

/// The calls of one stage of an experiment.
#[derive(Debug, Clone, Default)]
pub struct Stage {
    /// A short name for messages: `answers`, `judges`, `generation`, `reviews`.
    pub name: &'static str,
    pub calls: Vec<PlannedCall>,
    /// Calls of this stage that cannot be planned exactly (only in a dry run or plan).
    pub pending: Vec<PendingCall>,
    /// What the kind needs to read this stage's outcomes (the datasheets a reviews stage
    /// reviews); `PlannedCall::item` indexes into it.
    pub data: Option<StageData>,
}

/// A kind's own data attached to a stage.
#[derive(Clone)]
pub struct StageData(pub Arc<dyn Any + Send + Sync>);

impl StageData {
    /// Wraps a kind's data.
    pub(crate) fn new(data: impl Any + Send + Sync) -> Self {
        Self(Arc::new(data))
    }

    /// The data, if it is a `T`.
    pub(crate) fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl std::fmt::Debug for StageData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StageData(..)")
    }
}

/// The answers of the previous stage, indexed like its calls: `Some` for calls marked
/// `follow_up` whose outcome is known (a failure included), `None` otherwise (in a plan: not
/// in the cache yet). A plan gives none (an empty slice) for a stage without any call marked
/// `follow_up`.
pub type Answers = [Option<CallOutcome>];

/// What one experiment kind supplies to the runtime.
pub trait Experiment: Send {
    /// Which kind of experiment this is.
    fn kind(&self) -> ExperimentKind;

    /// The file, hash and options recorded with the run.
    fn header(&self) -> RunHeader;

    /// The models this experiment calls, in report order.
    fn targets(&self) -> &[Target];

    /// Stage `index` (0, 1, ...), given the previous stage and its answers; `None` after the
    /// last. Must not change anything: a plan calls it with cached answers only.
    fn stage(
        &self,
        index: usize,
        previous: Option<(&Stage, &Answers)>,
    ) -> Result<Option<Stage>, ExperimentError>;

    /// Stores what a stage records without any call (a review with no official datasheet),
    /// when the stage starts: only what belongs to `shard` ([`Shard::keeps`] of the items'
    /// [`Experiment::shard_key`]). Returns problems for the error summary.
    fn begin(
        &mut self,
        _store: &mut Store,
        _run_id: i64,
        _stage: &Stage,
        _shard: Shard,
    ) -> Result<Vec<String>, ExperimentError> {
        Ok(Vec::new())
    }

    /// Turns outcomes of `stage`'s calls (by index) into stored rows: a batch of cached and
    /// refused calls at once, then each fresh outcome as it arrives. Returns problems found
    /// in answers (a judge that answered garbage); failed calls are the runtime's to count.
    fn record(
        &mut self,
        store: &mut Store,
        run_id: i64,
        stage: &Stage,
        outcomes: &[(usize, &CallOutcome)],
    ) -> Result<Vec<String>, ExperimentError>;

    /// The most a run may spend, in USD, as the experiment file says (`budget:`); `--budget`
    /// wins over it. `None`: no cap.
    fn budget_usd(&self) -> Option<f64> {
        None
    }

    /// Whether the experiment file asks for batch APIs (`batch: true`): the run then sends
    /// as `--batch` does (`RunOptions::batch || Experiment::batch`).
    fn batch(&self) -> bool {
        false
    }

    /// The bar the experiment file sets its runs (`fail_under:`, `fail_on_errors:`); the
    /// command line's flags go over it. None by default.
    fn gate(&self) -> crate::gate::Gate {
        crate::gate::Gate::default()
    }

    /// Hands the experiment the run's stop flag, set at the first signal (Ctrl-C): work of
    /// its own that takes long (a benchmark's script checks) stops there too.
    fn watch_stop(&mut self, _stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {}

    /// What reading the experiment's data said (`loaded 2,000 cases from data/math.jsonl
    /// (columns: …)`), for a dry run's plan; said on stderr when the file is loaded too.
    fn loaded(&self) -> Option<String> {
        None
    }

    /// What call `index` of `stage` is for, in messages: `openai:gpt-4o on p1`.
    fn label(&self, stage: &Stage, index: usize) -> String;

    /// The item call `index` of `stage` belongs to, as `--shard` splits a plan: every call
    /// whose rows a statistic pairs has the same key (a benchmark test and its judge, an
    /// image's WITH and WITHOUT trials, a datasheet's generation and its reviews, a pairwise
    /// item's orders and candidates' answers), the same in every process running the plan.
    fn shard_key(&self, stage: &Stage, index: usize) -> String;

    /// Prints the report of a finished run (tables, files written) to `out`.
    fn report(
        &self,
        store: &Store,
        summary: &RunSummary,
        options: &ReportOptions,
        out: &mut dyn Write,
    ) -> Result<(), ExperimentError>;
}
#[cfg(test)]
mod size_tests {
    /// A plan holds a planned call for each call of a stage at once: 400,000 for 100,000 cases,
    /// 2 templates and 2 models, most of a dry run's memory (issue 29: under 300 MB). Shared
    /// sampling parameters and a boxed application call took it from 280 bytes to 216.
    #[test]
    fn a_planned_call_stays_small() {
        let size = std::mem::size_of::<super::PlannedCall>();
        assert!(size <= 216, "a planned call takes {size} bytes");
    }
}
