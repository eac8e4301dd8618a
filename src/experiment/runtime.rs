//! The run loop, the same for every kind: plan, start the run row, then stage by stage serve
//! cached answers, refuse what cannot be sent (`--offline`, a missing key) as failed calls,
//! send the rest group by group with bounded concurrency, and hand every outcome to the kind
//! to record, keeping the run's tally current. A signal stops the sending; what is in flight
//! lands and is recorded; the run ends `interrupted`. A budget (`--budget`, `budget:`) stops
//! it the same way once a call's worst case does not fit what is left: the run ends `budget`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::ProgressBar;

use super::lifecycle::{RunGuard, observed_status};
use super::plan::{self, FirstStage};
use super::shard::{self, Shard};
use super::signals::Signals;
use super::summary::{BudgetUse, RunSummary};
use super::{Experiment, ExperimentError, Plan, RunHeader, RunOptions, Signal, Stage, Tally};
use crate::config::Settings;
use crate::dispatch::pacer::{ConfiguredLimits, Pacer};
use crate::dispatch::{
    Batcher, Budget, CacheMode, CallOutcome, Claims, DispatchOptions, Dispatcher, Executor,
    Liveness, PollPolicy, Route, StageCall, StageCalls, Waiting,
};
use crate::llm::LlmClient;
use crate::store::{RunErrorRow, RunStatus, Store, StoredCall, Writer, lock};

/// How often the progress line looks at what the pacer waits for.
const PACING_TICK: Duration = Duration::from_millis(200);

/// What [`execute`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// A dry run: the plan, nothing sent or recorded.
    Planned(Plan),
    /// A run, with its plan.
    Ran(Box<RunSummary>, Plan),
}

/// Plans `experiment` and, unless `options.dry_run`, runs it: the one way every kind runs.
/// `db` is the database's path (for the run's lock), `None` for a database in memory.
pub fn execute(
    experiment: &mut dyn Experiment,
    store: Arc<Mutex<Store>>,
    db: Option<&Path>,
    settings: &Settings,
    options: &RunOptions,
) -> Result<RunEnd, ExperimentError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ExperimentError::Runtime)?;
    let client = LlmClient::new(settings.timeout).map_err(ExperimentError::kind)?;
    let batch_client = client.clone();
    // Claims, stored calls and the pacer's buckets go through the run's one connection (calls
    // and claims by a thread of their own, in batches). A second connection in this process
    // would contend with the first for SQLite's write lock: in a 2,000-call run that was about
    // 230 busy waits of a millisecond each, and every page re-read after the other's writes.
    let writer = Writer::start(store.clone()).map_err(ExperimentError::Runtime)?;
    // Buckets in the database are shared with other runs on it; otherwise kept in memory.
    let shared_buckets = (db.is_some() && !options.dry_run).then(|| store.clone());
    let mut executor = Executor::new(
        client,
        (store.clone(), writer.clone()),
        settings.retry,
        options.concurrency,
        options.cache,
    );
    let (mut plan, mut first) = plan::plan(experiment, &executor, options.shard)?;
    if options.cache == CacheMode::Refresh
        && let Some(again) =
            resume_refresh(experiment, &store, db, &mut executor, (&plan, options))?
    {
        (plan, first) = again;
    }
    tracing::debug!(calls = plan.calls(), to_call = plan.to_call(), "planned");
    let unpriced = plan.unpriced(experiment.targets());
    refuse_budget_without_price(&unpriced, options, experiment.budget_usd())?;
    if options.show_progress {
        // A dry run says it too: a model id with a typo is best caught before the run.
        tell_unlisted(experiment.targets());
    }
    if options.dry_run {
        return Ok(RunEnd::Planned(plan));
    }
    if options.show_progress {
        for sentence in &unpriced {
            crate::output::tell(format_args!("track: note: cost unknown: {sentence}"));
        }
    }
    executor
        .set_pacer(pacer(experiment, shared_buckets, settings).with_share(options.pace_share()));
    // The report's polars is readied while the first answer is awaited.
    executor.on_first_request(crate::output::prepare_in_background);
    let lease = (settings.timeout + settings.retry.max_delay) * settings.retry.max_attempts
        + Duration::from_secs(60);
    let batcher = |run_id| {
        Batcher::new(
            batch_client,
            writer,
            run_id,
            settings.retry,
            PollPolicy::from_env(),
        )
    };
    let summary = runtime.block_on(run(
        experiment,
        &store,
        db,
        (executor, lease, batcher),
        options,
        &plan,
        first,
    ));
    // Its connections close on its own threads while the caller reports: a run of 64 calls
    // at once left 64 of them.
    runtime.shutdown_background();
    Ok(RunEnd::Ran(Box::new(summary?), plan))
}

/// Notes each model the catalog does not list (its id sent as written), once, with the
/// nearest catalog names when it looks like a typo (`did you mean `local:smollm2`?`).
fn tell_unlisted(targets: &[super::Target]) {
    let mut told: Vec<&str> = Vec::new();
    for note in targets.iter().filter_map(|t| t.unlisted.as_deref()) {
        if !told.contains(&note) {
            told.push(note);
            crate::output::tell(format_args!("track: note: {note}"));
        }
    }
}

/// Refuses a budget (`--budget`, else the file's `budget:`) over calls to send of models
/// without a price (`unpriced`, [`Plan::unpriced`]): it could not bound them. Before any call,
/// dry run included.
fn refuse_budget_without_price(
    unpriced: &[String],
    options: &RunOptions,
    file_budget: Option<f64>,
) -> Result<(), ExperimentError> {
    if unpriced.is_empty() || options.budget(file_budget).is_none() {
        return Ok(());
    }
    let setting = if options.budget_usd.is_some() {
        "--budget"
    } else {
        "the file's `budget:`"
    };
    Err(ExperimentError::BudgetWithoutPrice(format!(
        "{setting} cannot bound what calls to a model without a price cost: {}; or run \
         without a budget",
        unpriced.join("; ")
    )))
}

/// `--no-cache` once more after an interrupted run asks again only what that run did not
/// answer: what it paid for is served. Returns the plan walked again with those answers, when
/// there is such a run.
fn resume_refresh(
    experiment: &mut dyn Experiment,
    store: &Arc<Mutex<Store>>,
    db: Option<&Path>,
    executor: &mut Executor,
    (plan, options): (&Plan, &RunOptions),
) -> Result<Option<(Plan, Option<FirstStage>)>, ExperimentError> {
    let shard = plan
        .shard
        .is_part()
        .then_some((plan.shard.index, plan.shard.count));
    let Some(resumed) = super::lifecycle::resumed_run(&lock(store), db, &plan.sha256, shard)?
    else {
        return Ok(None);
    };
    executor.serve_answers_since(resumed.since.clone());
    let (plan, first) = plan::plan(experiment, executor, options.shard)?;
    if options.show_progress {
        crate::output::tell(format_args!(
            "track: --no-cache resumes run {} ({}): {} stored since it began {} \
             served, not asked again",
            resumed.run_id,
            resumed.status,
            crate::output::count(plan.cached(), "answer"),
            if plan.cached() == 1 { "is" } else { "are" },
        ));
    }
    Ok(Some((plan, first)))
}

/// The run's pacer: its buckets in the database through `buckets` (shared with other runs on
/// it), else in memory; its limits from config.yaml per model.
fn pacer(
    experiment: &dyn Experiment,
    buckets: Option<Arc<Mutex<Store>>>,
    settings: &Settings,
) -> Pacer {
    let configured: ConfiguredLimits = experiment
        .targets()
        .iter()
        .filter(|t| !t.rate_limit.is_empty())
        .map(|t| {
            (
                (t.endpoint.provider.clone(), t.spec.model.clone()),
                t.rate_limit,
            )
        })
        .collect();
    Pacer::new(buckets, configured, settings.retry.max_delay)
}

async fn run(
    experiment: &mut dyn Experiment,
    store: &Arc<Mutex<Store>>,
    db: Option<&Path>,
    (executor, lease, batcher): (Executor, Duration, impl FnOnce(i64) -> Batcher),
    options: &RunOptions,
    plan: &Plan,
    first: Option<FirstStage>,
) -> Result<RunSummary, ExperimentError> {
    let kind = experiment.kind();
    let started = std::time::Instant::now();
    // The command line's budget wins over the file's.
    let budget_usd = options.budget(experiment.budget_usd());
    let guard = start_run(experiment, store, db, options, plan, budget_usd)?;
    let run_id = guard.run_id;
    let (executor, batcher) = senders(run_id, db, (executor, lease, batcher), budget_usd);
    // The bar counts the calls to send: its rate, and so its ETA, is that of paid calls, not
    // of answers served from the cache in a moment.
    let progress = crate::output::progress_bar(plan.to_call() as usize, options.show_progress);
    let signals = Signals::default();
    let listener = listen(&signals, &progress, store, run_id, guard.lock_path());
    experiment.watch_stop(signals.stop_flag().clone());
    let dispatch = DispatchOptions {
        batch: options.batch_on(experiment.batch()),
        detach: options.detach,
        stop: signals.stop_flag().clone(),
        progress: progress.clone(),
        notes: Arc::new(|note: &str| crate::output::note(note)),
    };
    let mut run = Run::new(
        experiment,
        store,
        run_id,
        plan,
        (&executor, batcher, dispatch),
    )?;
    let result = match first {
        Some(first) => run.paced_stages(first).await,
        None => Ok(()),
    };
    let mut tally = run.book.tally;
    tally.offline_misses = run.dispatcher.offline_misses();
    let waiting = run.waiting;
    progress.finish_and_clear();
    if let Ok(handle) = listener {
        handle.abort();
    }
    let signal = signals.received();
    let budget = executor.budget().map(|b| BudgetUse::of(b, plan.shard));
    // What exits 1 without a signal or a budget (nothing could run, `--offline` misses)
    // does not end `completed` either ([`RunSummary::exit_code`]).
    let fell_short = (tally.counts.calls > 0 && tally.answered == 0) || tally.offline_misses > 0;
    let status = end_status(
        (result.is_ok(), fell_short),
        signal,
        budget.as_ref(),
        waiting.is_some(),
    );
    let finished = guard.finish(&lock(store), status);
    tracing::debug!(?status, "run ended");
    if result.is_ok() {
        end_runs_waiting_for_nothing(store, run_id);
    }
    result?;
    finished?;
    Ok(RunSummary {
        run_id,
        kind,
        status,
        signal,
        tally,
        elapsed: started.elapsed(),
        budget,
        waiting,
    })
}

/// Starts the run row of `experiment` (its header, targets, command and lock), then records
/// its plan (hash, shard, calls of the whole plan) and its budget.
fn start_run(
    experiment: &dyn Experiment,
    store: &Arc<Mutex<Store>>,
    db: Option<&Path>,
    options: &RunOptions,
    plan: &Plan,
    budget_usd: Option<f64>,
) -> Result<RunGuard, ExperimentError> {
    let header = run_header(experiment, budget_usd, options.batch_on(experiment.batch()));
    let shard = plan.shard.is_part().then_some(plan.shard);
    // Looked up before this run's row exists: the newest unfinished run of the plan, which
    // this one finishes.
    let resumed = super::lifecycle::resumed_run(
        &lock(store),
        db,
        &plan.sha256,
        shard.map(|s| (s.index, s.count)),
    )?;
    let guard = RunGuard::start(
        &lock(store),
        db,
        experiment.kind(),
        (&header, experiment.targets(), options.command.as_deref()),
    )?;
    let run_id = guard.run_id;
    lock(store).set_run_plan(run_id, &plan.sha256, shard.map(|s| (s.index, s.count)))?;
    if let Some(resumed) = resumed {
        lock(store).set_run_resumes(run_id, resumed.run_id)?;
    }
    lock(store).set_run_plan_calls(run_id, plan.whole_calls)?;
    if let Some(usd) = budget_usd {
        lock(store).set_run_budget(run_id, Some(usd))?;
    }
    Ok(guard)
}

/// Run `run_id`'s senders: the executor, held to `budget_usd`, and its batcher; both claim
/// each call before sending it when the database is a file others may share.
fn senders(
    run_id: i64,
    db: Option<&Path>,
    (mut executor, lease, batcher): (Executor, Duration, impl FnOnce(i64) -> Batcher),
    budget_usd: Option<f64>,
) -> (Arc<Executor>, Batcher) {
    if let Some(usd) = budget_usd {
        executor.set_budget(Arc::new(Budget::new(usd)));
    }
    let mut batcher = batcher(run_id);
    if let Some(db) = db {
        claim_calls(run_id, db, lease, (&mut executor, &mut batcher));
    }
    (Arc::new(executor), batcher)
}

/// Has run `run_id`'s senders claim each call before sending it, so that runs sharing the
/// database `db` pay for each distinct call once; a claim holds for `lease`.
fn claim_calls(
    run_id: i64,
    db: &Path,
    lease: Duration,
    (executor, batcher): (&mut Executor, &mut Batcher),
) {
    let alive = liveness(db);
    executor.set_claims(Claims {
        owner: run_id.to_string(),
        lease,
        is_alive: Box::new({
            let alive = alive.clone();
            move |owner| alive(owner)
        }),
    });
    batcher.set_liveness(lease, alive);
}

/// The run's dispatcher: `executor` and `batcher` sending to the experiment's targets.
fn dispatcher(
    experiment: &dyn Experiment,
    store: &Arc<Mutex<Store>>,
    senders: (Arc<Executor>, Batcher),
    options: DispatchOptions,
) -> Dispatcher {
    let routes = experiment
        .targets()
        .iter()
        .map(|t| Route {
            reference: t.reference.clone(),
            blocked: t.blocked.clone(),
            batch: t.batch,
            kind: t.endpoint.kind,
        })
        .collect();
    Dispatcher::new(store.clone(), senders, routes, options)
}

/// The experiment's header, with the run's budget among its options when it has one,
/// `batch: true` when its calls go through batch APIs, and `unpriced`: the models without a
/// price, whose answers' cost is unknown (`track runs` shows the run's cost as unknown).
fn run_header(experiment: &dyn Experiment, budget_usd: Option<f64>, batch: bool) -> RunHeader {
    let mut header = experiment.header();
    let mut unpriced: Vec<&str> = Vec::new();
    for target in experiment.targets() {
        if target.spec.price().is_none() && !unpriced.contains(&target.reference.as_str()) {
            unpriced.push(&target.reference);
        }
    }
    if budget_usd.is_none() && !batch && unpriced.is_empty() {
        return header;
    }
    if !header.options.is_object() {
        header.options = serde_json::json!({});
    }
    if let Some(usd) = budget_usd {
        header.options["budget_usd"] = serde_json::json!(usd);
    }
    if batch {
        header.options["batch"] = serde_json::json!(true);
    }
    if !unpriced.is_empty() {
        header.options[crate::store::UNPRICED_OPTION] = serde_json::json!(unpriced);
    }
    header
}

/// Whether the run a claim or a batch names (its id) is at work on the database at `db`.
/// Runs sharing it pay each distinct call once: a key is claimed by the run sending it, live
/// or in a batch (for a lease); a claim whose run is gone is taken over.
fn liveness(db: &Path) -> Liveness {
    let db = db.to_path_buf();
    Arc::new(move |owner: &str| {
        owner
            .parse::<i64>()
            .is_ok_and(|id| observed_status(&db, id, RunStatus::Running) == RunStatus::Running)
    })
}

/// Ends the `waiting` runs whose batches this run (or another) has all collected or given
/// up: the results are in the run that collected them, and nothing is left to wait for.
fn end_runs_waiting_for_nothing(store: &Arc<Mutex<Store>>, run_id: i64) {
    match lock(store).end_runs_waiting_for_nothing(run_id) {
        Ok(ended) => {
            for id in ended {
                crate::output::tell(format_args!(
                    "track: run {id} waited for batches that are all collected now (their \
                     results are in run {run_id}): it ends `interrupted`"
                ));
            }
        }
        Err(e) => tracing::warn!("could not end the runs waiting for nothing: {e}"),
    }
}

/// How a run ended: failed on an error, waiting for batches (left by `--detach` or a
/// signal), interrupted by a signal, stopped by its budget, failed when it `fell_short`
/// (nothing could run, or `--offline` met calls not in the cache: it exits 1), or completed.
fn end_status(
    (ok, fell_short): (bool, bool),
    signal: Option<Signal>,
    budget: Option<&BudgetUse>,
    waiting: bool,
) -> RunStatus {
    match (ok, signal) {
        (false, _) => RunStatus::Failed,
        (true, _) if waiting => RunStatus::Waiting,
        (true, Some(_)) => RunStatus::Interrupted,
        (true, None) if budget.is_some_and(|b| b.reached) => RunStatus::Budget,
        (true, None) if fell_short => RunStatus::Failed,
        (true, None) => RunStatus::Completed,
    }
}

/// Starts the signal handler: the first signal stops the sending, a second marks the run
/// interrupted and ends the process at once.
fn listen(
    signals: &Signals,
    progress: &ProgressBar,
    store: &Arc<Mutex<Store>>,
    run_id: i64,
    lock_path: Option<std::path::PathBuf>,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let progress = progress.clone();
    let store = store.clone();
    signals
        .listen(
            move |signal| {
                progress.suspend(|| {
                    crate::output::tell(format_args!(
                        "track: {} received: sending no more calls; those in flight land and are \
                         recorded (again to quit at once)",
                        signal.name()
                    ));
                });
            },
            move |signal| {
                if let Err(e) = lock(&store).finish_run(run_id, RunStatus::Interrupted) {
                    crate::output::tell(format_args!(
                        "track: could not mark run {run_id} interrupted: {e}"
                    ));
                }
                if let Some(path) = &lock_path {
                    let _ = std::fs::remove_file(path);
                    if let Some(dir) = path.parent() {
                        let _ = std::fs::remove_dir(dir);
                    }
                }
                crate::output::tell(format_args!(
                    "track: interrupted: run {run_id} is kept as `interrupted` ({}); run the same \
                     command again to finish it from the cache",
                    signal.name()
                ));
                std::process::exit(i32::from(signal.exit_code()));
            },
        )
        .inspect_err(|e| tracing::warn!("cannot listen for signals: {e}"))
}

/// A run in progress: the dispatcher that sends its calls, and the book that records them.
struct Run<'a> {
    dispatcher: Dispatcher,
    book: Book<'a>,
    /// The batches the run leaves waiting, once it stops waiting for them.
    waiting: Option<Waiting>,
}

/// What records a run's outcomes: the kind, the store, the tally and the progress line.
struct Book<'a> {
    experiment: &'a mut dyn Experiment,
    store: &'a Arc<Mutex<Store>>,
    run_id: i64,
    progress: ProgressBar,
    tally: Tally,
    /// The part of the plan this run makes (`--shard`).
    shard: Shard,
}

impl<'a> Run<'a> {
    /// The run of `experiment`'s stages as run `run_id`, its tally started (the calls `plan`
    /// makes) and stored, sending with `executor` and `batcher` as `options` say.
    fn new(
        experiment: &'a mut dyn Experiment,
        store: &'a Arc<Mutex<Store>>,
        run_id: i64,
        plan: &Plan,
        (executor, batcher, options): (&Arc<Executor>, Batcher, DispatchOptions),
    ) -> Result<Self, ExperimentError> {
        let mut tally = Tally::default();
        tally.counts.planned_calls = plan.calls();
        lock(store).update_run_tally(run_id, &tally.counts)?;
        let progress = options.progress.clone();
        let dispatcher = dispatcher(&*experiment, store, (executor.clone(), batcher), options);
        Ok(Self {
            dispatcher,
            book: Book {
                experiment,
                store,
                run_id,
                progress,
                tally,
                shard: plan.shard,
            },
            waiting: None,
        })
    }

    /// [`Run::stages`], while the progress line says what the pacer holds calls for: a paced
    /// run never looks hung.
    async fn paced_stages(&mut self, first: FirstStage) -> Result<(), ExperimentError> {
        let executor = self.dispatcher.executor().clone();
        let progress = self.book.progress.clone();
        let ticker = async {
            loop {
                tokio::time::sleep(PACING_TICK).await;
                if let Some(note) = executor.pacing_note() {
                    progress.set_message(note);
                }
            }
        };
        tokio::select! {
            result = self.stages(first) => result,
            () = ticker => Ok(()),
        }
    }

    /// Runs the first stage and each one after it, until the last or a signal.
    async fn stages(&mut self, first: FirstStage) -> Result<(), ExperimentError> {
        let FirstStage {
            mut stage,
            mut cached,
        } = first;
        for index in 1.. {
            let book = &mut self.book;
            let begun =
                book.experiment
                    .begin(&mut lock(book.store), book.run_id, &stage, book.shard)?;
            book.tally.add_problems(begun);
            let answers = self.run_stage(&stage, &cached).await?;
            if self.dispatcher.stopping() || self.waiting.is_some() {
                return Ok(());
            }
            let book = &mut self.book;
            let Some(next) = book.experiment.stage(index, Some((&stage, &answers)))? else {
                return Ok(());
            };
            let next = shard::keep(&*book.experiment, next, book.shard);
            cached = self
                .dispatcher
                .executor()
                .lookup(next.calls.iter().map(|c| c.job.canonical.key.as_str()))?;
            let misses = next
                .calls
                .iter()
                .filter(|c| !cached.contains_key(c.job.canonical.key.as_str()))
                .count();
            // The plan bounded these calls; now they are known: count those to send.
            book.progress
                .set_length(book.progress.position() + misses as u64);
            let grown = book.tally.counts.calls + next.calls.len() as u64;
            if grown > book.tally.counts.planned_calls {
                // Files that appeared since the plan (a datasheet written meanwhile).
                book.tally.counts.planned_calls = grown;
            }
            stage = next;
        }
        Ok(())
    }

    /// Hands a stage's calls to the dispatcher, recording every outcome; returns the
    /// outcomes of its follow-up calls for the next stage.
    async fn run_stage(
        &mut self,
        stage: &Stage,
        cached: &HashMap<String, StoredCall>,
    ) -> Result<Vec<Option<CallOutcome>>, ExperimentError> {
        let mut answers = vec![None; stage.calls.len()];
        let calls = StageCalls {
            name: stage.name,
            calls: stage
                .calls
                .iter()
                .map(|c| StageCall {
                    job: &c.job,
                    target: c.target,
                    group: c.group,
                })
                .collect(),
        };
        let book = &mut self.book;
        let mut record = |outcomes| book.record(stage, outcomes, &mut answers);
        let waiting = self
            .dispatcher
            .dispatch(&calls, cached, &mut record)
            .await?;
        self.waiting = self.waiting.take().or(waiting);
        Ok(answers)
    }
}

impl Book<'_> {
    /// Hands outcomes to the kind to record, stores the calls that got no answer, and keeps
    /// the tally and progress current.
    fn record(
        &mut self,
        stage: &Stage,
        mut outcomes: Vec<(usize, CallOutcome)>,
        answers: &mut [Option<CallOutcome>],
    ) -> Result<(), ExperimentError> {
        if outcomes.is_empty() {
            return Ok(());
        }
        // An answer bought while its model had no price costs what its price is now, if it
        // has one: adding the price to config.yaml need not buy the answers again.
        for (i, outcome) in &mut outcomes {
            if let CallOutcome::Hit(call) = outcome
                && call.cost_usd.is_none()
            {
                call.cost_usd = stage.calls[*i]
                    .job
                    .cost_usd(call.input_tokens, call.output_tokens);
            }
        }
        let mut errors = Vec::new();
        for (i, outcome) in &outcomes {
            self.tally.add(outcome);
            if let CallOutcome::Failed {
                call_id,
                error,
                attempts,
            } = outcome
            {
                let call = &stage.calls[*i];
                let item = self.experiment.label(stage, *i);
                let model_ref = self.experiment.targets()[call.target].reference.clone();
                self.tally.note_error(&model_ref, &item, error);
                errors.push(RunErrorRow {
                    stage: stage.name.to_owned(),
                    model_ref,
                    item,
                    error: error.clone(),
                    call_id: *call_id,
                    attempts: *attempts,
                });
            }
        }
        let refs: Vec<(usize, &CallOutcome)> = outcomes.iter().map(|(i, o)| (*i, o)).collect();
        let mut store = lock(self.store);
        let problems = self
            .experiment
            .record(&mut store, self.run_id, stage, &refs)?;
        store.insert_run_errors(self.run_id, &errors)?;
        self.tally.add_problems(problems);
        store.update_run_tally(self.run_id, &self.tally.counts)?;
        drop(store);
        let sent = outcomes
            .iter()
            .filter(|(_, o)| match o {
                CallOutcome::Fresh(_) => true,
                CallOutcome::Failed { attempts, .. } => *attempts > 0,
                CallOutcome::Hit(_) => false,
            })
            .count();
        self.progress.inc(sent as u64);
        self.progress.set_message(self.tally.progress_message());
        for (i, outcome) in outcomes {
            if stage.calls[i].follow_up {
                answers[i] = Some(outcome);
            }
        }
        Ok(())
    }
}
