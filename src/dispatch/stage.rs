//! The dispatcher: a stage's calls in, their outcomes out, for live and batch calls alike.
//! It serves what the cache holds, refuses what `--offline` or a missing key forbids, routes
//! the rest live or to a batch (`--batch`, and keys already waiting in one), sends them, and
//! hands each outcome to the caller's recorder as it is known.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::ProgressBar;

use super::batch::{BatchCall, Batcher, Round, Submitted};
use super::live::{CacheMode, CallJob, CallOutcome, Executor};
use crate::llm::ProviderKind;
use crate::llm::batch::BatchApi;
use crate::store::{Store, StoreError, StoredCall, lock};

/// The error of a call that `--offline` refused.
pub const OFFLINE_MISS: &str = "not in the cache, and --offline forbids calls";

/// A stage's calls, as the dispatcher sees them.
pub struct StageCalls<'a> {
    /// The stage's name, for logs: `answers`, `judges`.
    pub name: &'static str,
    pub calls: Vec<StageCall<'a>>,
}

/// One call of a stage: what to send, through which route, in which group.
pub struct StageCall<'a> {
    pub job: &'a CallJob,
    /// Index into the dispatcher's routes (the experiment's targets).
    pub target: usize,
    /// Calls of a lower group are sent before those of a higher one.
    pub group: u32,
}

/// What the dispatcher knows of a model it sends to.
#[derive(Debug, Clone)]
pub struct Route {
    /// `provider:alias`, for messages.
    pub reference: String,
    /// Why its calls cannot be sent (no key), if so.
    pub blocked: Option<String>,
    /// The batch API its calls go through in batch mode, if any.
    pub batch: Option<BatchApi>,
    /// The wire format its provider speaks.
    pub kind: ProviderKind,
}

/// The batches a run left waiting for their results.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// How many batches.
    pub batches: usize,
    /// What the last poll said of them (`openai gpt-4o-mini in_progress 40/120 · …`).
    pub note: Option<String>,
}

/// Takes a batch of outcomes, by index into the stage, as they are known.
pub type Recorder<'r, E> = dyn FnMut(Vec<(usize, CallOutcome)>) -> Result<(), E> + Send + 'r;

/// Known outcomes recorded at once: enough that a slice's rows are written in bulk.
const KNOWN_SLICE: usize = 32_768;

/// An outcome known without sending: a cached answer, or a call refused (by `--offline`, or
/// for a missing key).
enum Known<'c> {
    Hit(&'c StoredCall),
    Refused(String),
}

/// Hands `known` outcomes to `record` a slice at a time: a cached run of hundreds of thousands
/// of calls then holds one slice's outcomes and graded rows at once, not all of them, and each
/// hit's answer is copied out of the cache only when its slice is recorded.
fn record_known<E>(
    known: Vec<(usize, Known<'_>)>,
    slice: usize,
    record: &mut Recorder<'_, E>,
) -> Result<(), E> {
    let mut known = known.into_iter().peekable();
    while known.peek().is_some() {
        let slice = known
            .by_ref()
            .take(slice)
            .map(|(i, outcome)| {
                let outcome = match outcome {
                    Known::Hit(call) => CallOutcome::Hit(Box::new(call.clone())),
                    Known::Refused(error) => CallOutcome::Failed {
                        call_id: None,
                        error,
                        attempts: 0,
                    },
                };
                (i, outcome)
            })
            .collect();
        record(slice)?;
    }
    Ok(())
}

/// Sends a run's calls: the live sender and the batch follower, and how to choose.
pub struct Dispatcher {
    store: Arc<Mutex<Store>>,
    executor: Arc<Executor>,
    batcher: Batcher,
    routes: Vec<Route>,
    /// Whether uncached calls of batch-capable models go to batches (`--batch`, `batch:`).
    batch: bool,
    /// Whether to leave batches waiting once submitted (`--detach`).
    detach: bool,
    /// Set by a signal, or when recording failed: start nothing more.
    stop: Arc<AtomicBool>,
    progress: ProgressBar,
    notes: Notes,
    /// Models said once to run live for want of a batch API.
    live_noted: HashSet<usize>,
    /// Whether tool loops were said once to run live.
    tools_noted: bool,
    /// Calls `--offline` refused.
    offline_misses: u64,
}

/// Takes a note for the user (`track: fake:m has no batch API: …`): the dispatcher prints
/// nothing itself, its runtime says where notes go (stderr, above the progress bar).
pub type Notes = Arc<dyn Fn(&str) + Send + Sync>;

/// How the dispatcher is to behave for a run.
pub struct DispatchOptions {
    pub batch: bool,
    pub detach: bool,
    pub stop: Arc<AtomicBool>,
    pub progress: ProgressBar,
    /// Where its notes for the user go, given while the progress bar is suspended.
    pub notes: Notes,
}

impl Dispatcher {
    /// A dispatcher reading the cache from `store`, sending live with `executor` and batches
    /// with `batcher`, to `routes`.
    pub fn new(
        store: Arc<Mutex<Store>>,
        (executor, batcher): (Arc<Executor>, Batcher),
        routes: Vec<Route>,
        options: DispatchOptions,
    ) -> Self {
        Self {
            store,
            executor,
            batcher,
            routes,
            batch: options.batch,
            detach: options.detach,
            stop: options.stop,
            progress: options.progress,
            notes: options.notes,
            live_noted: HashSet::new(),
            tools_noted: false,
            offline_misses: 0,
        }
    }

    /// The live sender (the cache look-ups, the budget and the pacer are its).
    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }

    /// Whether to start nothing more: a stop came, or the budget was reached.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.executor.budget().is_some_and(|b| b.reached())
    }

    /// How many calls `--offline` refused.
    pub fn offline_misses(&self) -> u64 {
        self.offline_misses
    }

    /// Serves, refuses and sends the calls of one stage, handing every outcome to `record`
    /// as it is known (cache hits at once, live answers as they land, a batch's results as it
    /// is collected); returns the batches the stage is left waiting for (`--detach`, a
    /// signal), if any.
    pub async fn dispatch<E: From<StoreError>>(
        &mut self,
        stage: &StageCalls<'_>,
        cached: &HashMap<String, StoredCall>,
        record: &mut Recorder<'_, E>,
    ) -> Result<Option<Waiting>, E> {
        let (known, to_send) = self.triage(stage, cached);
        record_known(known, KNOWN_SLICE, record)?;
        let (batched, live) = self.split_batched(stage, to_send)?;
        let mut round = Round::default();
        self.place(stage, &mut round, false, batched, live, record)
            .await?;
        let waiting = match round.is_done() {
            true => None,
            false => self.follow(stage, round, record).await?,
        };
        tracing::debug!(stage = stage.name, "stage dispatched");
        Ok(waiting)
    }

    /// Submits `batched` into `round` (first, with `resubmit`, the keys it must submit again
    /// or held back for the budget) and sends `live` and what the batcher could not batch;
    /// keys a batch took meanwhile (the executor's claim found them waiting in one) are
    /// followed in the round.
    async fn place<E: From<StoreError>>(
        &mut self,
        stage: &StageCalls<'_>,
        round: &mut Round,
        resubmit: bool,
        mut batched: Vec<BatchCall>,
        mut live: Vec<usize>,
        record: &mut Recorder<'_, E>,
    ) -> Result<(), E> {
        let budget = self.executor.budget().cloned();
        let stop = self.stop.clone();
        let mut resubmit = resubmit;
        loop {
            let mut placed = Submitted::default();
            if resubmit {
                resubmit = false;
                placed = self.batcher.resubmit(round, budget.as_ref(), &stop).await?;
            }
            if !batched.is_empty() {
                tracing::debug!(
                    stage = stage.name,
                    batched = batched.len(),
                    "submitting batches"
                );
                let calls = std::mem::take(&mut batched);
                let more = self
                    .batcher
                    .submit(round, calls, budget.as_ref(), &stop)
                    .await?;
                placed.live.extend(more.live);
                placed.settled.extend(more.settled);
            }
            record(placed.settled)?;
            live.extend(placed.live);
            tracing::debug!(stage = stage.name, to_send = live.len(), "sending");
            let taken = self.send(stage, std::mem::take(&mut live), record).await?;
            if taken.is_empty() {
                return Ok(());
            }
            let (calls, unbatchable) = self.batch_calls(stage, taken);
            record(unbatchable)?;
            batched = calls;
        }
    }

    /// The calls at `indices`, which wait in a batch another run submitted since this run
    /// planned, to follow in that batch; a call whose model has no batch API (it cannot
    /// happen short of a config changed meanwhile) fails, for the next run.
    fn batch_calls(
        &self,
        stage: &StageCalls<'_>,
        indices: Vec<usize>,
    ) -> (Vec<BatchCall>, Vec<(usize, CallOutcome)>) {
        let mut calls = Vec::new();
        let mut failed = Vec::new();
        for index in indices {
            let call = &stage.calls[index];
            let target = &self.routes[call.target];
            match target.batch.or_else(|| BatchApi::of(target.kind)) {
                Some(api) => {
                    let mut job = call.job.clone();
                    job.price = job.price.map(crate::cost::Price::batch);
                    calls.push(BatchCall { index, job, api });
                }
                None => failed.push((
                    index,
                    CallOutcome::Failed {
                        call_id: None,
                        error: "waits in a batch another run submitted; run again to collect it"
                            .to_owned(),
                        attempts: 0,
                    },
                )),
            }
        }
        (calls, failed)
    }

    /// Splits calls to send into those that go to a batch (keys already waiting in one, and,
    /// with `--batch`, the calls of models whose provider has a batch API, at the batch
    /// price) and those sent live; says once of each model that has no batch API that it
    /// runs live.
    fn split_batched(
        &mut self,
        stage: &StageCalls<'_>,
        to_send: Vec<usize>,
    ) -> Result<(Vec<BatchCall>, Vec<usize>), StoreError> {
        let waiting = lock(&self.store).pending_in_batches(
            to_send
                .iter()
                .map(|&i| stage.calls[i].job.canonical.key.as_str()),
        )?;
        let mut batched = Vec::new();
        let mut live = Vec::new();
        for i in to_send {
            let call = &stage.calls[i];
            let target = &self.routes[call.target];
            let api = match (
                target.batch,
                waiting.contains_key(call.job.canonical.key.as_str()),
            ) {
                (Some(api), true) => Some(api),
                (Some(api), false) if self.batch => Some(api),
                // Waits in a batch a config change has since turned off: still followed.
                (None, true) => BatchApi::of(target.kind),
                _ => None,
            };
            // A tool loop's next call depends on this answer: it cannot wait in a batch.
            let api = match api {
                Some(_) if call.job.request.tools.is_some() => {
                    if !self.tools_noted {
                        self.tools_noted = true;
                        let note = "track: tool loops cannot be batched: their calls run live, \
                                    at the standard price";
                        self.progress.suspend(|| (self.notes)(note));
                    }
                    None
                }
                api => api,
            };
            match api {
                Some(api) => {
                    let mut job = call.job.clone();
                    job.price = job.price.map(crate::cost::Price::batch);
                    batched.push(BatchCall { index: i, job, api });
                }
                None => {
                    if self.batch
                        && call.job.request.tools.is_none()
                        && self.live_noted.insert(call.target)
                    {
                        let note = format!(
                            "track: {} has no batch API: its calls run live, at the standard \
                             price",
                            target.reference
                        );
                        self.progress.suspend(|| (self.notes)(&note));
                    }
                    live.push(i);
                }
            }
        }
        Ok((batched, live))
    }

    /// Waits for a stage's batches, polling with backoff and recording each batch's outcomes
    /// as it is collected. With `--detach`, or once a signal came, it stops waiting: the run
    /// is left `waiting`, and the same command collects.
    async fn follow<E: From<StoreError>>(
        &mut self,
        stage: &StageCalls<'_>,
        mut round: Round,
        record: &mut Recorder<'_, E>,
    ) -> Result<Option<Waiting>, E> {
        loop {
            let outcomes = self.batcher.poll(&mut round).await?;
            let room_freed = !outcomes.is_empty();
            record(outcomes)?;
            if round.has_resubmits(room_freed) {
                // Another run's batch left them unfinished (this run is the next one), or the
                // budget held them back while this run's batches held its room.
                if self.stopping() {
                    let left = self.batcher.leave_resubmits(&mut round);
                    record(left)?;
                } else {
                    self.place(stage, &mut round, true, Vec::new(), Vec::new(), record)
                        .await?;
                }
            }
            if let Some(note) = round.note() {
                self.progress.set_message(note);
            }
            if round.is_done() {
                return Ok(None);
            }
            if self.detach || self.stop.load(Ordering::SeqCst) {
                return Ok(Some(Waiting {
                    batches: round.waiting(),
                    note: round.note(),
                }));
            }
            // Interruptible: a signal is seen within a tick.
            let until = std::time::Instant::now() + self.batcher.next_due(&round);
            while std::time::Instant::now() < until && !self.stop.load(Ordering::SeqCst) {
                let left = until.saturating_duration_since(std::time::Instant::now());
                tokio::time::sleep(left.min(Duration::from_millis(100))).await;
            }
        }
    }

    /// Splits a stage's calls into outcomes known now (cached; refused by `--offline` or for a
    /// missing key) and calls to send.
    fn triage<'c>(
        &mut self,
        stage: &StageCalls<'_>,
        cached: &'c HashMap<String, StoredCall>,
    ) -> (Vec<(usize, Known<'c>)>, Vec<usize>) {
        let mut known = Vec::new();
        let mut to_send = Vec::new();
        let offline = self.executor.mode() == CacheMode::Offline;
        for (i, call) in stage.calls.iter().enumerate() {
            if let Some(hit) = cached.get(call.job.canonical.key.as_str()) {
                known.push((i, Known::Hit(hit)));
                continue;
            }
            let refused = if offline {
                self.offline_misses += 1;
                Some(OFFLINE_MISS.to_owned())
            } else {
                self.routes[call.target].blocked.clone()
            };
            match refused {
                Some(error) => known.push((i, Known::Refused(error))),
                None => to_send.push(i),
            }
        }
        (known, to_send)
    }

    /// Sends `to_send` (indices into the stage) group by group, recording each outcome as it
    /// arrives. Stops starting calls when a signal came, the budget was reached or recording
    /// failed. Returns the indices not sent because their keys wait in a batch a run
    /// submitted since this one planned: to follow there.
    async fn send<E: From<StoreError>>(
        &mut self,
        stage: &StageCalls<'_>,
        mut to_send: Vec<usize>,
        record: &mut Recorder<'_, E>,
    ) -> Result<Vec<usize>, E> {
        let mut taken = Vec::new();
        to_send.sort_by_key(|&i| stage.calls[i].group);
        let executor = self.executor.clone();
        let stop = self.stop.clone();
        for group in to_send.chunk_by(|&a, &b| stage.calls[a].group == stage.calls[b].group) {
            if self.stopping() {
                break;
            }
            // Cloned as the executor takes them: the first is sent before the others are.
            let jobs = group.iter().map(|&i| stage.calls[i].job.clone());
            let mut failure = None;
            executor
                .execute(jobs, &stop, |batch| {
                    if failure.is_some() {
                        return;
                    }
                    let outcomes = batch.into_iter().map(|(j, o)| (group[j], o)).collect();
                    if let Err(e) = record(outcomes) {
                        stop.store(true, Ordering::SeqCst);
                        failure = Some(e);
                    }
                })
                .await;
            if let Some(e) = failure {
                return Err(e);
            }
            let batched = executor.take_batched();
            taken.extend(
                group
                    .iter()
                    .filter(|&&i| batched.contains(stage.calls[i].job.canonical.key.as_str())),
            );
        }
        Ok(taken)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::config::RetryPolicy;
    use crate::cost::Price;
    use crate::dispatch::{Budget, PollPolicy, max_cost};
    use crate::llm::{ChatRequest, Endpoint, LlmClient, Message, SamplingParams};
    use crate::store::{NewCall, Writer};

    /// A provider speaking OpenAI's chat completions on 127.0.0.1 that answers `4` to every
    /// request, billing `prompt_tokens` of input, and counts the requests it got.
    async fn provider(prompt_tokens: u64) -> (String, Arc<AtomicUsize>) {
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move || {
                let counted = counted.clone();
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    axum::Json(serde_json::json!({
                        "choices": [{"message": {"role": "assistant", "content": "4"},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1}
                    }))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{address}/v1"), requests)
    }

    fn job(base_url: &str, question: &str) -> CallJob {
        let endpoint = Arc::new(Endpoint {
            provider: "fake".into(),
            kind: ProviderKind::OpenaiCompatible,
            base_url: base_url.into(),
            api_key: None,
            basic_auth: None,
        });
        let request = ChatRequest {
            tools: None,
            model: "m".into(),
            system: None,
            messages: vec![Message::user(question)].into(),
            params: SamplingParams {
                max_tokens: Some(10),
                ..SamplingParams::default()
            }
            .into(),
            schema: None,
        };
        let price = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 1.0,
        };
        CallJob::new(endpoint, request, 1, price)
    }

    fn route(blocked: Option<&str>) -> Route {
        Route {
            reference: "fake:m".into(),
            blocked: blocked.map(str::to_owned),
            batch: None,
            kind: ProviderKind::OpenaiCompatible,
        }
    }

    /// A dispatcher over an in-memory store, sending live with `mode` and `budget`.
    fn dispatcher(
        store: &Arc<Mutex<Store>>,
        mode: CacheMode,
        routes: Vec<Route>,
        budget: Option<f64>,
    ) -> Dispatcher {
        let options = DispatchOptions {
            batch: false,
            detach: false,
            stop: Arc::new(AtomicBool::new(false)),
            progress: ProgressBar::hidden(),
            notes: Arc::new(|note: &str| panic!("no note expected: {note}")),
        };
        dispatcher_with(store, mode, routes, budget, options)
    }

    /// A dispatcher over an in-memory store, sending with `mode`, `budget` and `options`.
    fn dispatcher_with(
        store: &Arc<Mutex<Store>>,
        mode: CacheMode,
        routes: Vec<Route>,
        budget: Option<f64>,
        options: DispatchOptions,
    ) -> Dispatcher {
        let client = LlmClient::new(Duration::from_secs(5)).unwrap();
        let writer = Writer::start(store.clone()).unwrap();
        let retry = RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        };
        let mut executor = Executor::new(
            client.clone(),
            (store.clone(), writer.clone()),
            retry,
            1,
            mode,
        );
        if let Some(usd) = budget {
            executor.set_budget(Arc::new(Budget::new(usd)));
        }
        let run_id = lock(store)
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let batcher = Batcher::new(client, writer, run_id, retry, PollPolicy::default());
        Dispatcher::new(
            store.clone(),
            (Arc::new(executor), batcher),
            routes,
            options,
        )
    }

    /// Dispatches `jobs` (all to route 0 but those listed in `to`), returning the outcomes by
    /// index.
    async fn dispatch(
        dispatcher: &mut Dispatcher,
        jobs: &[CallJob],
        to: &[(usize, usize)],
    ) -> Vec<(usize, CallOutcome)> {
        let stage = StageCalls {
            name: "answers",
            calls: jobs
                .iter()
                .enumerate()
                .map(|(i, job)| StageCall {
                    job,
                    target: to.iter().find(|(j, _)| *j == i).map_or(0, |(_, t)| *t),
                    group: 0,
                })
                .collect(),
        };
        let keys: Vec<&str> = jobs.iter().map(|j| j.canonical.key.as_str()).collect();
        let cached = dispatcher.executor().lookup(keys).unwrap();
        let mut outcomes = Vec::new();
        let mut record = |batch: Vec<(usize, CallOutcome)>| -> Result<(), StoreError> {
            outcomes.extend(batch);
            Ok(())
        };
        let waiting = dispatcher
            .dispatch(&stage, &cached, &mut record)
            .await
            .unwrap();
        assert!(waiting.is_none());
        outcomes.sort_by_key(|(i, _)| *i);
        outcomes
    }

    fn stored_calls(store: &Arc<Mutex<Store>>) -> i64 {
        lock(store)
            .conn()
            .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_key_is_sent_once_stored_once_and_its_twins_get_a_hit_of_its_answer() {
        let (base_url, requests) = provider(10).await;
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let mut dispatcher = dispatcher(&store, CacheMode::Use, vec![route(None)], None);
        let same = job(&base_url, "2 + 2?");
        let jobs = [same.clone(), job(&base_url, "3 + 1?"), same];
        let outcomes = dispatch(&mut dispatcher, &jobs, &[]).await;
        assert_eq!(requests.load(Ordering::SeqCst), 2, "one request per key");
        assert_eq!(stored_calls(&store), 2, "each answer stored once");
        assert!(matches!(outcomes[0], (0, CallOutcome::Fresh(_))));
        assert!(matches!(outcomes[1], (1, CallOutcome::Fresh(_))));
        assert!(matches!(outcomes[2], (2, CallOutcome::Hit(_))));
        assert_eq!(
            outcomes[2].1.call(),
            outcomes[0].1.call(),
            "the same answer"
        );
        // Dispatched again, every call is served from the cache: nothing is sent.
        let again = dispatch(&mut dispatcher, &jobs, &[]).await;
        assert_eq!(requests.load(Ordering::SeqCst), 2);
        assert!(again.iter().all(|(_, o)| matches!(o, CallOutcome::Hit(_))));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_model_without_a_batch_api_runs_live_with_one_note_through_the_runtime() {
        let (base_url, requests) = provider(10).await;
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let notes = Arc::new(Mutex::new(Vec::<String>::new()));
        let options = DispatchOptions {
            batch: true,
            detach: false,
            stop: Arc::new(AtomicBool::new(false)),
            progress: ProgressBar::hidden(),
            notes: {
                let notes = notes.clone();
                Arc::new(move |note: &str| notes.lock().unwrap().push(note.to_owned()))
            },
        };
        let mut dispatcher =
            dispatcher_with(&store, CacheMode::Use, vec![route(None)], None, options);
        let jobs = [job(&base_url, "2 + 2?"), job(&base_url, "3 + 1?")];
        let outcomes = dispatch(&mut dispatcher, &jobs, &[]).await;
        assert_eq!(requests.load(Ordering::SeqCst), 2, "both sent live");
        assert!(
            outcomes
                .iter()
                .all(|(_, o)| matches!(o, CallOutcome::Fresh(_)))
        );
        assert_eq!(
            *notes.lock().unwrap(),
            ["track: fake:m has no batch API: its calls run live, at the standard price"],
            "said once for the model, to the runtime's notes"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn offline_serves_the_cache_refuses_the_rest_and_a_blocked_model_sends_nothing() {
        let (base_url, requests) = provider(10).await;
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let cached = job(&base_url, "2 + 2?");
        lock(&store)
            .insert_call(&NewCall::answered(&cached.canonical.key, "4"))
            .unwrap();
        let jobs = [cached, job(&base_url, "3 + 1?")];
        let mut offline = dispatcher(&store, CacheMode::Offline, vec![route(None)], None);
        let outcomes = dispatch(&mut offline, &jobs, &[]).await;
        assert!(matches!(outcomes[0].1, CallOutcome::Hit(_)));
        assert_eq!(
            outcomes[1].1,
            CallOutcome::Failed {
                call_id: None,
                error: OFFLINE_MISS.into(),
                attempts: 0
            }
        );
        assert_eq!(offline.offline_misses(), 1);
        let routes = vec![route(None), route(Some("no key: set FAKE_API_KEY"))];
        let mut blocked = dispatcher(&store, CacheMode::Use, routes, None);
        let outcomes = dispatch(&mut blocked, &jobs, &[(1, 1)]).await;
        assert!(matches!(outcomes[0].1, CallOutcome::Hit(_)));
        assert!(
            matches!(&outcomes[1].1, CallOutcome::Failed { error, attempts: 0, .. }
                if error.contains("FAKE_API_KEY"))
        );
        assert_eq!(requests.load(Ordering::SeqCst), 0, "nothing was sent");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_budget_stops_the_sending_once_the_next_worst_case_does_not_fit() {
        // Each answer bills 10,000 input tokens: far beyond what its worst case reserved.
        let (base_url, requests) = provider(10_000).await;
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let jobs: Vec<CallJob> = (0..4)
            .map(|i| job(&base_url, &format!("{i} + 1?")))
            .collect();
        let worst = max_cost(&jobs[0]);
        let mut dispatcher =
            dispatcher(&store, CacheMode::Use, vec![route(None)], Some(2.0 * worst));
        let outcomes = dispatch(&mut dispatcher, &jobs, &[]).await;
        assert_eq!(
            requests.load(Ordering::SeqCst),
            1,
            "the second no longer fits"
        );
        assert_eq!(outcomes.len(), 1, "calls not sent are not reported");
        assert!(dispatcher.stopping(), "the budget is reached");
        let budget = dispatcher.executor().budget().unwrap();
        assert!(budget.reached());
        assert!((budget.spent_usd() - 10_001.0 / 1e6).abs() < 1e-12);
    }

    #[test]
    fn known_outcomes_are_recorded_in_slices_in_their_order() {
        let answer = super::super::fanout::tests::answer();
        let known: Vec<(usize, Known<'_>)> = (0..7)
            .map(|i| match i % 3 {
                2 => (i, Known::Refused(format!("refused {i}"))),
                _ => (i, Known::Hit(&answer)),
            })
            .collect();
        let mut slices: Vec<Vec<(usize, bool)>> = Vec::new();
        let mut record = |outcomes: Vec<(usize, CallOutcome)>| -> Result<(), StoreError> {
            slices.push(
                outcomes
                    .iter()
                    .map(|(i, o)| (*i, o.call().is_some_and(|c| c.text == "4")))
                    .collect(),
            );
            Ok(())
        };
        record_known(known, 3, &mut record).unwrap();
        let hit = |i: usize| (i, i % 3 != 2);
        assert_eq!(
            slices,
            vec![
                vec![hit(0), hit(1), hit(2)],
                vec![hit(3), hit(4), hit(5)],
                vec![hit(6)]
            ]
        );
        // Nothing known: nothing recorded, not even an empty slice.
        let mut calls = 0;
        record_known::<StoreError>(Vec::new(), 3, &mut |_| {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, 0);
    }
}
