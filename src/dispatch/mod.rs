//! Dispatch: a stage's calls in, their outcomes out, for live and batch calls alike. It
//! serves the cache, refuses what `--offline` or a missing key forbids, routes the rest live
//! or to a batch, sends each distinct key once (the others get a hit of its answer), and
//! stores every call it makes; the budget, the pacer, the retry policy and the claims that
//! keep runs sharing a database from paying twice are its own.
//!
//! It speaks to providers through [`crate::llm`] (the wire) and to the database through
//! [`crate::store`]; it knows nothing of experiments: the runtime
//! ([`crate::experiment`]) hands it a stage's calls and records the outcomes.

pub mod batch;
pub mod budget;
mod fanout;
pub mod live;
pub mod pacer;
mod recorder;
mod retry;
mod stage;

pub use batch::{BatchCall, Batcher, Liveness, PollPolicy, Round, Submitted};
pub use budget::{Budget, batch_max_cost, max_cost};
pub use live::{AppCall, CacheMode, CallJob, CallOutcome, Claims, Executor};
pub use stage::{
    DispatchOptions, Dispatcher, Notes, OFFLINE_MISS, Recorder, Route, StageCall, StageCalls,
    Waiting,
};
