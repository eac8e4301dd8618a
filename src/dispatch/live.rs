//! The executor: sends calls that are not in the cache, with bounded concurrency and retries,
//! and stores each one the moment its answer (or final error) arrives.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Budget;
use super::budget::{Overrun, Reservation};
use super::fanout::Fanout;
use super::pacer::{ConfiguredLimits, Cost, NotSent, Pacer, Permit, Scope};
use super::recorder::{CallRecorder, Timing};
use super::retry::Retries;
use crate::cases::Values;
use crate::config::{RetryPolicy, TargetConfig};
use crate::cost::Price;
use crate::llm::{CanonicalRequest, ChatRequest, ChatResponse, Endpoint, LlmClient, ProviderError};
use crate::store::{Claim, Store, StoreError, StoredCall, Writer, lock};
use crate::targets::{App, AppRequest};

/// How the cache is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Serve stored answers; call for the rest.
    Use,
    /// Call for everything and store the fresh answers (`--no-cache`).
    Refresh,
    /// Serve stored answers; never call (`--offline`): a miss is an error.
    Offline,
}

/// One call to make: where, what, its canonical form, and the price to cost it with.
#[derive(Debug, Clone)]
pub struct CallJob {
    pub endpoint: Arc<Endpoint>,
    pub request: ChatRequest,
    pub canonical: CanonicalRequest,
    /// USD per million input and output tokens; `None`: unknown (a model without a price),
    /// so is its cost.
    pub price: Option<Price>,
    /// The sample this is (each repeat is its own cache entry).
    pub repeat: u32,
    /// When the server refuses the request's schema (HTTP 400 or 422), ask again without it,
    /// and ask that model without one for the rest of the run (`structured: auto`).
    pub plain_fallback: bool,
    /// The application this call goes to instead of a model API, and the case's values it is
    /// sent ([`crate::targets`]).
    pub app: Option<Box<AppCall>>,
}

/// A call to a target: the target, what config.yaml sets of it, and the case's values its
/// request is made of.
#[derive(Debug, Clone)]
pub struct AppCall {
    pub app: Arc<App>,
    pub config: Arc<TargetConfig>,
    pub values: Option<Arc<Values>>,
}

impl AppCall {
    /// The request of `job`'s call to this target.
    fn request<'a>(&'a self, job: &'a CallJob) -> AppRequest<'a> {
        AppRequest {
            chat: &job.request,
            values: self.values.as_deref(),
        }
    }
}

impl CallJob {
    /// The call of `request` to `endpoint`, for sample `repeat`, priced with `price` (`None`:
    /// unknown).
    pub fn new(
        endpoint: Arc<Endpoint>,
        request: ChatRequest,
        repeat: u32,
        price: impl Into<Option<Price>>,
    ) -> Self {
        let price = price.into();
        let canonical =
            CanonicalRequest::new(&endpoint.provider, &endpoint.base_url, &request, repeat);
        Self {
            endpoint,
            request,
            canonical,
            price,
            repeat,
            plain_fallback: false,
            app: None,
        }
    }

    /// The call of `request`, with a case's `values`, to the target `app` at `endpoint`, for
    /// sample `repeat`, priced with `price` when the target reports no cost.
    pub fn to_app(
        endpoint: Arc<Endpoint>,
        app: AppCall,
        request: ChatRequest,
        repeat: u32,
        price: impl Into<Option<Price>>,
    ) -> Self {
        let price = price.into();
        let sent = AppRequest {
            chat: &request,
            values: app.values.as_deref(),
        };
        let canonical = CanonicalRequest::of_json(&app.app.canonical_json(&endpoint, sent, repeat));
        Self {
            endpoint,
            request,
            canonical,
            price,
            repeat,
            plain_fallback: false,
            app: Some(Box::new(app)),
        }
    }

    /// What an answer of `input_tokens` and `output_tokens` to it costs, in USD; `None` when
    /// its price is unknown.
    pub fn cost_usd(&self, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        self.price
            .map(|price| price.cost_usd(input_tokens, output_tokens))
    }

    /// What `answer` cost: what the provider reported (a target reporting its cost), else its
    /// tokens at the job's price; `None` when neither is known.
    pub fn answer_cost(&self, answer: &ChatResponse) -> Option<f64> {
        answer
            .cost_usd
            .or_else(|| self.cost_usd(answer.usage.input_tokens, answer.usage.output_tokens))
    }

    /// The same call without a schema: free text, read by the tolerant parsers.
    pub fn without_schema(&self) -> Self {
        let mut request = self.request.clone();
        request.schema = None;
        match &self.app {
            Some(app) => Self::to_app(
                self.endpoint.clone(),
                AppCall::clone(app),
                request,
                self.repeat,
                self.price,
            ),
            None => Self::new(self.endpoint.clone(), request, self.repeat, self.price),
        }
    }

    /// The canonical JSON of the call, stored with it under its key.
    pub fn canonical_json(&self) -> String {
        match &self.app {
            Some(app) => app
                .app
                .canonical_json(&self.endpoint, app.request(self), self.repeat),
            None => CanonicalRequest::json(
                &self.endpoint.provider,
                &self.endpoint.base_url,
                &self.request,
                self.repeat,
            ),
        }
    }

    /// The model as the executor remembers schema refusals: provider and model id.
    fn model_key(&self) -> (String, String) {
        (
            self.endpoint.provider.clone(),
            self.request.model.to_string(),
        )
    }
}

/// What became of a call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// Served from the cache: nothing paid. (Boxed: a plan holds an outcome, mostly none,
    /// for each of its calls.)
    Hit(Box<StoredCall>),
    /// Sent, answered and stored.
    Fresh(Box<StoredCall>),
    /// Not answered; the error is stored when a request was sent (`call_id`).
    Failed {
        call_id: Option<i64>,
        error: String,
        attempts: u32,
    },
}

impl CallOutcome {
    /// The stored call, for hits and fresh answers.
    pub fn call(&self) -> Option<&StoredCall> {
        match self {
            Self::Hit(c) | Self::Fresh(c) => Some(c),
            Self::Failed { .. } => None,
        }
    }
}

/// Sends calls and records them. Shares the store with its caller.
pub struct Executor {
    client: LlmClient,
    store: Arc<Mutex<Store>>,
    /// Claims and stored calls go through its writer thread, off the async workers.
    recorder: CallRecorder,
    retry: RetryPolicy,
    concurrency: usize,
    mode: CacheMode,
    /// With `--no-cache`, answers stored at or after this time (RFC 3339) are served all the
    /// same: those of the unfinished run this one resumes ([`Executor::serve_answers_since`]).
    fresh_since: Option<String>,
    claims: Option<Claims>,
    /// Models (provider, model id) that refused a schema in this run.
    schema_refused: Mutex<HashSet<(String, String)>>,
    /// The run's spending cap, if it has one (`--budget`).
    budget: Option<Arc<Budget>>,
    /// Paces calls to the providers' rate limits.
    pacer: Pacer,
    /// One permit per request that may be out at once (`--concurrency`).
    slots: tokio::sync::Semaphore,
    /// Work for the time the first request's answer is awaited ([`Executor::on_first_request`]).
    first_request: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Keys not sent because a batch took them since the run planned (the claim found them
    /// waiting in one): the run follows that batch ([`Executor::take_batched`]).
    batched: Mutex<HashSet<String>>,
}

/// Who claims calls before sending them, for processes that share a database.
pub struct Claims {
    /// This run's name in claims.
    pub owner: String,
    /// How long a claim holds: longer than a call with all its retries can take.
    pub lease: Duration,
    /// Whether the owner of another claim is still at work (a dead one's claims are taken).
    pub is_alive: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

/// How often a run waiting for another run's answer looks again.
const CLAIM_POLL: Duration = Duration::from_millis(100);

/// What claiming a key came to.
enum Claimed {
    /// Send it (and release the claim, if one was taken); `failed_attempts`: the attempts of
    /// its last stored failure, when the claim looked them up (`None`: not looked up).
    Send {
        claimed: bool,
        failed_attempts: Option<Option<u32>>,
    },
    /// Another run stored the answer meanwhile.
    Answered(StoredCall),
    /// It waits in a batch (another run's, submitted since this run planned): not sent.
    Batched,
    /// A stop came while waiting for another run.
    Stopped,
}

impl Executor {
    /// An executor over `store` (read for the cache) and `writer` (claims and stored calls)
    /// using `client`.
    pub fn new(
        client: LlmClient,
        (store, writer): (Arc<Mutex<Store>>, Writer),
        retry: RetryPolicy,
        concurrency: usize,
        mode: CacheMode,
    ) -> Self {
        Self {
            client,
            store,
            recorder: CallRecorder::new(writer),
            retry,
            concurrency: concurrency.max(1),
            mode,
            fresh_since: None,
            claims: None,
            schema_refused: Mutex::default(),
            budget: None,
            pacer: Pacer::new(None, ConfiguredLimits::default(), retry.max_delay),
            slots: tokio::sync::Semaphore::new(concurrency.max(1)),
            first_request: Mutex::default(),
            batched: Mutex::default(),
        }
    }

    /// Paces calls with `pacer` (its buckets in the database, its limits from config.yaml).
    pub fn set_pacer(&mut self, pacer: Pacer) {
        self.pacer = pacer;
    }

    /// What the pacer waits for, for the progress line.
    pub fn pacing_note(&self) -> Option<String> {
        self.pacer.note()
    }

    /// Runs `work` once the first request is out: its answer takes a round trip (a probe's:
    /// the only request out), time the process has little else to do in.
    pub fn on_first_request(&mut self, work: impl FnOnce() + Send + 'static) {
        *self
            .first_request
            .get_mut()
            .unwrap_or_else(|p| p.into_inner()) = Some(Box::new(work));
    }

    /// Caps what this executor's calls may be billed: each call's worst case is reserved
    /// before it is sent and settled when it lands.
    pub fn set_budget(&mut self, budget: Arc<Budget>) {
        self.budget = Some(budget);
    }

    /// The run's spending cap, if it has one.
    pub fn budget(&self) -> Option<&Arc<Budget>> {
        self.budget.as_ref()
    }

    /// Claims each call before sending it, so that runs sharing the database pay for each
    /// distinct call once (`--no-cache` runs send regardless).
    pub fn set_claims(&mut self, claims: Claims) {
        self.claims = Some(claims);
    }

    /// The keys [`Executor::execute`] did not send because they wait in a batch (one taken
    /// since the run planned), gone from the set once taken: the run follows their batch.
    pub fn take_batched(&self) -> HashSet<String> {
        std::mem::take(&mut *self.batched.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The cache mode in force.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// With `--no-cache`, serves the answers stored at or after `since` (RFC 3339) all the
    /// same: a run that resumes an unfinished one asks again only what it did not answer.
    pub fn serve_answers_since(&mut self, since: String) {
        self.fresh_since = Some(since);
    }

    /// The cached answers for `keys` (with `--no-cache`, only those stored since
    /// [`Executor::serve_answers_since`], none without it).
    pub fn lookup<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<HashMap<String, StoredCall>, StoreError> {
        match (self.mode, self.fresh_since.as_deref()) {
            (CacheMode::Refresh, None) => Ok(HashMap::new()),
            (CacheMode::Refresh, since) => lock(&self.store).cached_calls_since(keys, since),
            _ => lock(&self.store).cached_calls(keys),
        }
    }

    /// Runs `jobs` (cache misses) up to the concurrency limit and reports outcomes to
    /// `on_done` with the jobs' indices as soon as they are stored, all those ready at once in
    /// one batch (so the caller records them in one transaction). Jobs with the same key are
    /// sent once: the first index gets the fresh answer, the others a cache hit of it.
    ///
    /// Each call is a task of its own, so calls go on while the caller records a batch; at
    /// most `concurrency` requests are out at once, while other calls claim their keys or
    /// store their answers.
    /// Once `stop` is set (or the budget is reached) no call is started and none is retried;
    /// calls in flight land and are reported, calls that were waiting to be retried are not
    /// reported at all. A call whose key waits in a batch is neither sent nor reported: it is
    /// in [`Executor::take_batched`].
    pub async fn execute(
        self: &Arc<Self>,
        jobs: impl IntoIterator<Item = CallJob>,
        stop: &Arc<AtomicBool>,
        mut on_done: impl FnMut(Vec<(usize, CallOutcome)>),
    ) {
        let spawn = |running: &mut tokio::task::JoinSet<_>, job: CallJob| {
            let (executor, stop) = (self.clone(), stop.clone());
            running.spawn(async move {
                let outcome = executor.run_one(&job, &stop).await;
                (job.canonical.key, outcome)
            });
        };
        let mut jobs = jobs.into_iter();
        let mut by_key = Fanout::default();
        let mut running = tokio::task::JoinSet::new();
        // The first call starts before the others are even listed: until its model's limits
        // are known it is the one request out (the pacer), and the others claim their keys
        // while it is. Its scope is looked up in the store first, so that its own lookup does
        // not wait behind their claims.
        if let Some(first) = jobs.next() {
            by_key.add(&first.canonical.key, 0);
            if !self.stopping(stop) {
                let scope = self.pacer.scope(&first.endpoint, &first.request.model);
                self.pacer.prepare(&scope).await;
                spawn(&mut running, first);
            }
        }
        let mut unique = Vec::new();
        for (index, job) in (1..).zip(jobs) {
            if by_key.add(&job.canonical.key, index) {
                unique.push(job);
            }
        }
        let mut pending = unique.into_iter();
        loop {
            // Twice the concurrency in tasks: those beyond it claim their keys and look up
            // earlier failures while the others' requests are out; only requests take a slot.
            while running.len() < 2 * self.concurrency && !self.stopping(stop) {
                let Some(job) = pending.next() else {
                    break;
                };
                spawn(&mut running, job);
            }
            let Some(first) = running.join_next().await else {
                break;
            };
            let mut ready = vec![first];
            while let Some(next) = running.try_join_next() {
                ready.push(next);
            }
            let mut batch = Vec::with_capacity(ready.len());
            for joined in ready {
                let (key, outcome) = match joined {
                    Ok((key, Some(outcome))) => (key, outcome),
                    // Not sent: a stop, or the budget.
                    Ok((_, None)) => continue,
                    Err(e) => {
                        tracing::warn!("a call's task failed: {e}");
                        continue;
                    }
                };
                batch.extend(by_key.spread(&key, outcome));
            }
            if !batch.is_empty() {
                on_done(batch);
            }
        }
    }

    /// How `job`'s failures are tried again: its target's policy, else the run's.
    fn retry_policy(&self, job: &CallJob) -> RetryPolicy {
        match &job.app {
            Some(app) => app.config.retry_policy(self.retry),
            None => self.retry,
        }
    }

    /// Whether to start no more calls: a stop came, or the budget was reached.
    fn stopping(&self, stop: &AtomicBool) -> bool {
        stop.load(Ordering::SeqCst) || self.budget.as_ref().is_some_and(|b| b.reached())
    }

    /// Sends one job (or, when its model refuses schemas, the job without its schema) with
    /// retries and stores its outcome, unless another run sharing the database has the answer
    /// or is getting it; `None` when `stop` came first (nothing is stored: the next run tries
    /// again).
    async fn run_one(&self, job: &CallJob, stop: &Arc<AtomicBool>) -> Option<CallOutcome> {
        let fallback = job.plain_fallback && job.request.schema.is_some();
        // Refused in this run, or this very request refused in an earlier one.
        if fallback {
            let refused_here = self
                .schema_refused
                .lock()
                .is_ok_and(|set| set.contains(&job.model_key()));
            let refused_before = || async {
                let key = job.canonical.key.to_string();
                self.recorder
                    .writer()
                    .run(move |s| s.last_failure_status(&key))
                    .await
                    .ok()
                    .flatten()
                    .is_some_and(|(status, error)| refuses_schema(Some(status), &error))
            };
            if refused_here || refused_before().await {
                return self.run_plain(job, stop).await;
            }
        }
        let (outcome, status) = self.run_keyed(job, stop).await?;
        let refusal = match &outcome {
            CallOutcome::Failed { error, .. } => refuses_schema(status, error),
            _ => false,
        };
        if fallback && refusal {
            self.note_schema_refused(job, status);
            return self.run_plain(job, stop).await;
        }
        Some(outcome)
    }

    /// Remembers that `job`'s model refused the answer's schema, so that its other calls go
    /// without one; says so once.
    fn note_schema_refused(&self, job: &CallJob, status: Option<u16>) {
        let first = self
            .schema_refused
            .lock()
            .is_ok_and(|mut set| set.insert(job.model_key()));
        if first {
            tracing::info!(
                "{} {} refused the answer's schema (HTTP {}); asking it without one for the \
                 rest of this run",
                job.endpoint.provider,
                job.request.model,
                status.unwrap_or_default()
            );
        }
    }

    /// `job` without its schema: served from the cache when it is there, else sent.
    async fn run_plain(&self, job: &CallJob, stop: &Arc<AtomicBool>) -> Option<CallOutcome> {
        let plain = job.without_schema();
        let key = plain.canonical.key.to_string();
        let since = self.fresh_since.clone();
        let cached = match (self.mode, since) {
            (CacheMode::Refresh, None) => None,
            (mode, since) => self
                .recorder
                .writer()
                .run(move |s| {
                    let since = since.filter(|_| mode == CacheMode::Refresh);
                    Ok(s.cached_calls_since([key.as_str()], since.as_deref())?
                        .into_values()
                        .next())
                })
                .await
                .ok()
                .flatten(),
        };
        if let Some(call) = cached {
            return Some(CallOutcome::Hit(Box::new(call)));
        }
        Box::pin(self.run_keyed(&plain, stop))
            .await
            .map(|(outcome, _)| outcome)
    }

    /// [`Self::run_one`] for exactly `job`, with the HTTP status of a failure.
    async fn run_keyed(
        &self,
        job: &CallJob,
        stop: &Arc<AtomicBool>,
    ) -> Option<(CallOutcome, Option<u16>)> {
        if self.mode == CacheMode::Offline {
            return Some((
                CallOutcome::Failed {
                    call_id: None,
                    error: "not in the cache, and --offline forbids calls".into(),
                    attempts: 0,
                },
                None,
            ));
        }
        let (claimed, failed_attempts) = match self.claim(job, stop).await {
            Claimed::Answered(call) => return Some((CallOutcome::Hit(Box::new(call)), None)),
            Claimed::Stopped => return None,
            Claimed::Batched => {
                self.batched
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(job.canonical.key.to_string());
                return None;
            }
            Claimed::Send {
                claimed,
                failed_attempts,
            } => (claimed, failed_attempts),
        };
        let outcome = self.send_and_store(job, stop, failed_attempts).await;
        // Storing the outcome ended the claim; only an outcome not stored leaves it to release.
        let stored = matches!(
            outcome.as_ref().map(|(o, _)| o),
            Some(
                CallOutcome::Fresh(_)
                    | CallOutcome::Failed {
                        call_id: Some(_),
                        ..
                    }
            )
        );
        if let (true, false, Some(claims)) = (claimed, stored, &self.claims) {
            let (key, owner) = (job.canonical.key.to_string(), claims.owner.clone());
            if let Err(e) = self
                .recorder
                .writer()
                .run(move |s| s.release_claim(&key, &owner))
                .await
            {
                tracing::warn!("could not release a claim: {e}");
            }
        }
        outcome
    }

    /// Claims `job`'s key, waiting while another live run sends it.
    async fn claim(&self, job: &CallJob, stop: &AtomicBool) -> Claimed {
        let Some(claims) = self.claims.as_ref().filter(|_| self.mode == CacheMode::Use) else {
            return Claimed::Send {
                claimed: false,
                failed_attempts: None,
            };
        };
        let key = &job.canonical.key;
        let mut take_over = false;
        loop {
            let (key, owner, lease) = (*key, claims.owner.clone(), claims.lease);
            // A claim won also looks up the key's last failure: one trip to the writer.
            let claim = self
                .recorder
                .writer()
                .run(move |s| {
                    let claim = s.claim(&key, &owner, lease, take_over)?;
                    let failed = match claim {
                        Claim::Mine => s.last_failure_attempts(&key)?,
                        _ => None,
                    };
                    Ok((claim, failed))
                })
                .await;
            match claim {
                Ok((Claim::Answered(call), _)) => return Claimed::Answered(call),
                Ok((Claim::Batched(_), _)) => return Claimed::Batched,
                Ok((Claim::Mine, failed)) => {
                    return Claimed::Send {
                        claimed: true,
                        failed_attempts: Some(failed),
                    };
                }
                Ok((Claim::Busy(holder), _)) if !(claims.is_alive)(&holder) => take_over = true,
                Ok((Claim::Busy(_), _)) if stop.load(Ordering::SeqCst) => return Claimed::Stopped,
                Ok((Claim::Busy(_), _)) => tokio::time::sleep(CLAIM_POLL).await,
                Err(e) => {
                    // Without claims the call may be paid twice, never lost.
                    tracing::warn!("could not claim a call, sending it anyway: {e}");
                    return Claimed::Send {
                        claimed: false,
                        failed_attempts: None,
                    };
                }
            }
        }
    }

    /// Sends one job with retries and stores its outcome, with the HTTP status of a failure;
    /// `None` when it was not sent because a stop came or the budget cannot hold it (nothing
    /// is stored: the next run sends it).
    ///
    /// Each attempt reserves the call's worst case from the budget, waits for the pacer, and
    /// tells the pacer what the answer said of the limits. A rate-limit refusal is waited out
    /// by the pacer, not by the backoff, and has an allowance of its own. `failed_attempts`:
    /// the key's last stored failure if the claim looked it up, else it is looked up here.
    async fn send_and_store(
        &self,
        job: &CallJob,
        stop: &Arc<AtomicBool>,
        failed_attempts: Option<Option<u32>>,
    ) -> Option<(CallOutcome, Option<u16>)> {
        // A call whose every attempt failed in an earlier run is tried once: the same key
        // failing the same way should not burn the whole backoff budget on every re-run.
        let failed_attempts = match failed_attempts {
            Some(looked_up) => looked_up,
            None => {
                let key = job.canonical.key.to_string();
                self.recorder
                    .writer()
                    .run(move |s| s.last_failure_attempts(&key))
                    .await
                    .ok()
                    .flatten()
            }
        };
        let policy = self.retry_policy(job);
        // (A policy of one attempt has nothing to spare: it is no news that it was used up.)
        let failed_before = policy.max_attempts > 1
            && failed_attempts.is_some_and(|attempts| attempts >= policy.max_attempts);
        let max_attempts = if failed_before {
            1
        } else {
            policy.max_attempts
        };
        let sent = match self.send(job, stop, max_attempts).await? {
            Sent::Finished(sent) => sent,
            Sent::SchemaRefusedHere => {
                let outcome = CallOutcome::Failed {
                    call_id: None,
                    error: SCHEMA_REFUSED_IN_THIS_RUN.to_owned(),
                    attempts: 0,
                };
                return Some((outcome, Some(400)));
            }
        };
        let status = match &sent.result {
            Err(Failure::Sent(e)) => e.http_status(),
            _ => None,
        };
        let outcome = self.store_outcome(job, sent, status, failed_before).await;
        Some((outcome, status))
    }

    /// Sends `job` until it is answered, fails for good or meets a refusal no wait mends;
    /// `None` when a stop came or the budget cannot hold it.
    async fn send(&self, job: &CallJob, stop: &Arc<AtomicBool>, max_attempts: u32) -> Option<Sent> {
        let scope = self.pacer.scope(&job.endpoint, &job.request.model);
        let mut retries = Retries::new(self.retry_policy(job));
        let mut tries = Tries::default();
        let result = loop {
            if tries.attempts > 0 && stop.load(Ordering::SeqCst) {
                tracing::debug!(attempt = tries.attempts, "stopping: no retry");
                return None;
            }
            let (result, latency_ms) = match self.attempt(job, &scope, stop, tries.attempts).await?
            {
                Attempt::Answered(result, latency_ms) => (result, latency_ms),
                Attempt::SchemaRefusedHere => return Some(Sent::SchemaRefusedHere),
                Attempt::NotSent(why) => break Err(Failure::NotSent(why)),
            };
            tries.attempts += 1;
            tries.last_latency_ms = latency_ms;
            let error = match result {
                Ok(answer) => break Ok(answer),
                Err(e) if !e.is_retryable() => break Err(Failure::Sent(e)),
                Err(e) => e,
            };
            let rate_limited = error.http_status() == Some(429);
            if rate_limited {
                tries.refusals += 1;
            }
            if tries.give_up(&error, max_attempts) {
                break Err(Failure::Sent(error));
            }
            // The pacer holds the scope after a rate-limit refusal; other errors back off.
            if !rate_limited {
                let wait = retries.wait(&error);
                tracing::debug!(attempt = tries.attempts, ?wait, %error, "retrying");
                tokio::time::sleep(wait).await;
            } else {
                tracing::debug!(attempt = tries.attempts, %error, "refused: paced retry");
            }
        };
        Some(Sent::Finished(Finished { result, tries }))
    }

    /// One attempt at `job`: a slot, the budget's reservation of its worst case and the
    /// pacer's permit, then the request; what the answer says of the limits goes to the pacer,
    /// and the reservation is settled. `None` when a stop came or the budget cannot hold it.
    async fn attempt(
        &self,
        job: &CallJob,
        scope: &Arc<Scope>,
        stop: &Arc<AtomicBool>,
        attempts: u32,
    ) -> Option<Attempt> {
        // A slot for the request: claims and stores wait outside.
        let slot = self.slots.acquire().await.ok()?;
        if stop.load(Ordering::SeqCst) {
            return None;
        }
        if attempts == 0 && self.schema_refused_meanwhile(job) {
            return Some(Attempt::SchemaRefusedHere);
        }
        let (reservation, mut permit) = match self.admit(job, scope, stop).await? {
            Ok(admitted) => admitted,
            Err(not_sent) => return Some(not_sent),
        };
        let started = Instant::now();
        let result = match &job.app {
            None => self.request(job, &mut permit).await,
            // A command stopped by a signal is killed: its answer is not known, nothing is
            // stored, and the next run asks again.
            Some(app) => {
                let sent = app
                    .app
                    .send(&self.client, &job.endpoint, app.request(job), stop);
                match sent.await {
                    Some(result) => result,
                    None => {
                        if let Some(reservation) = reservation {
                            reservation.release();
                        }
                        return None;
                    }
                }
            }
        };
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.pacer.observe(permit, &result).await;
        // Before the slot goes to a call of the same model, which then goes without.
        if let Err(e) = &result
            && job.plain_fallback
            && job.request.schema.is_some()
            && refuses_schema(e.http_status(), &e.to_string())
        {
            self.note_schema_refused(job, e.http_status());
        }
        drop(slot);
        if let Some(reservation) = reservation {
            settle(reservation, job, &result);
        }
        Some(Attempt::Answered(result, latency_ms))
    }

    /// Whether `job`'s model refused a schema while it waited: it then goes without one.
    fn schema_refused_meanwhile(&self, job: &CallJob) -> bool {
        job.plain_fallback
            && job.request.schema.is_some()
            && self
                .schema_refused
                .lock()
                .is_ok_and(|set| set.contains(&job.model_key()))
    }

    /// The budget's reservation of `job`'s worst case, then the pacer's permit for it; the
    /// reservation is released when no permit comes: `None` on a stop or a budget that
    /// cannot hold it, `Err` with the attempt that was not sent when the scope is exhausted.
    async fn admit(
        &self,
        job: &CallJob,
        scope: &Arc<Scope>,
        stop: &AtomicBool,
    ) -> Option<Result<(Option<Reservation>, Permit), Attempt>> {
        let reservation = match &self.budget {
            Some(_) if let Some(why) = super::budget::unbounded(job) => {
                return Some(Err(Attempt::NotSent(why)));
            }
            Some(budget) => Some(budget.reserve(super::max_cost(job)).await?),
            None => None,
        };
        match self
            .pacer
            .acquire(scope, Cost::of(&job.request), stop)
            .await
        {
            // The budget reached while it waited for the pacer (a bill beyond its bound):
            // not sent.
            Ok(_) if self.budget.as_ref().is_some_and(|b| b.reached()) => {
                if let Some(r) = reservation {
                    r.release();
                }
                None
            }
            Ok(permit) => Some(Ok((reservation, permit))),
            Err(not_sent) => {
                if let Some(r) = reservation {
                    r.release();
                }
                match not_sent {
                    NotSent::Stopped => None,
                    NotSent::Exhausted(why) => Some(Err(Attempt::NotSent(why))),
                }
            }
        }
    }

    /// Sends `job`'s request under `permit`. A scope's first call streams its answer: its head
    /// teaches the limits, and the calls waiting for them go then, not a generation later. So
    /// does a run's first call to an output-token limit: its head tells whether `max_tokens`
    /// was reserved.
    async fn request(
        &self,
        job: &CallJob,
        permit: &mut Permit,
    ) -> Result<ChatResponse, ProviderError> {
        let (head, head_seen) = match permit.wants_head() {
            true => {
                let (sender, receiver) = tokio::sync::oneshot::channel();
                (Some(sender), Some(receiver))
            }
            false => (None, None),
        };
        let mut request = std::pin::pin!(crate::llm::chat(
            &self.client,
            &job.endpoint,
            &job.request,
            head
        ));
        let first = self
            .first_request
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let mut finished = None;
        if let Some(work) = first {
            // Once the request has been polled (connected and written, or under way).
            tokio::select! {
                biased;
                result = &mut request => finished = Some(result),
                () = tokio::task::yield_now() => {}
            }
            work();
        }
        if let (None, Some(head_seen)) = (&finished, head_seen) {
            tokio::select! {
                biased;
                result = &mut request => finished = Some(result),
                limits = head_seen => {
                    // No head (the request failed first): its result teaches what it can.
                    if let Ok(limits) = limits {
                        self.pacer.observe_head(permit, limits).await;
                    }
                }
            }
        }
        match finished {
            Some(result) => result,
            None => request.await,
        }
    }

    /// Stores what sending `job` came to: its answer, or its failure (a scope's refusal met
    /// before anything was sent is not stored: nothing was asked).
    async fn store_outcome(
        &self,
        job: &CallJob,
        sent: Finished,
        status: Option<u16>,
        failed_before: bool,
    ) -> CallOutcome {
        let Finished { result, tries } = sent;
        let attempts = tries.attempts;
        let timing = Timing {
            latency_ms: tries.last_latency_ms,
            attempts,
        };
        let message = match result {
            Ok(response) => return self.store_answer(job, response, timing).await,
            Err(Failure::NotSent(why)) if attempts == 0 => {
                return CallOutcome::Failed {
                    call_id: None,
                    error: format!("{why} (not sent)"),
                    attempts: 0,
                };
            }
            Err(Failure::NotSent(why)) => format!("{why} (not sent again)"),
            Err(Failure::Sent(error)) => failure_message(&error, attempts, failed_before),
        };
        let call_id = self
            .recorder
            .failure(job, &message, status, timing)
            .await
            .inspect_err(|e| tracing::warn!("could not store a failed call: {e}"))
            .ok();
        CallOutcome::Failed {
            call_id,
            error: message,
            attempts,
        }
    }

    /// Stores an answer; the stored call, or a failure when it could not be stored.
    async fn store_answer(
        &self,
        job: &CallJob,
        response: ChatResponse,
        timing: Timing,
    ) -> CallOutcome {
        match self.recorder.answer(job, response, timing).await {
            Ok(call) => CallOutcome::Fresh(Box::new(call)),
            Err(e) => CallOutcome::Failed {
                call_id: None,
                error: format!("the answer arrived but could not be stored: {e}"),
                attempts: timing.attempts,
            },
        }
    }
}

/// Why a call got no answer.
enum Failure {
    /// Its last attempt failed with this error.
    Sent(ProviderError),
    /// Its scope met a refusal no wait mends (what happened and the fix).
    NotSent(String),
}

/// What sending a call came to.
enum Sent {
    /// Its last attempt's result, and the tries made.
    Finished(Finished),
    /// Its model refused the answer's schema while it waited: not sent (it is asked again
    /// without its schema).
    SchemaRefusedHere,
}

/// A call's last result and the tries it took.
struct Finished {
    result: Result<ChatResponse, Failure>,
    tries: Tries,
}

/// The attempts made at a call, the rate-limit refusals among them, and the latency of the
/// last (retries and waits excluded).
#[derive(Debug, Default)]
struct Tries {
    attempts: u32,
    refusals: u32,
    last_latency_ms: f64,
}

impl Tries {
    /// Whether `error`, just met, ends the call's tries.
    fn give_up(&self, error: &ProviderError, max_attempts: u32) -> bool {
        let failures = self.attempts - self.refusals;
        match error {
            // A server that refuses connections is usually not running: one more try covers a
            // restart, more would only make the user wait.
            ProviderError::Connect { .. } => self.attempts >= CONNECT_ATTEMPTS.min(max_attempts),
            _ if error.http_status() == Some(429) => {
                self.refusals >= max_attempts * RATE_LIMIT_ALLOWANCE
            }
            _ => failures >= max_attempts,
        }
    }
}

/// What one attempt came to.
enum Attempt {
    /// The request was sent: its result and latency in ms.
    Answered(Result<ChatResponse, ProviderError>, f64),
    /// Its model refused the answer's schema while it waited.
    SchemaRefusedHere,
    /// Its scope met a refusal no wait mends (what happened and the fix).
    NotSent(String),
}

/// Settles `reservation` to what the answer cost, gives it back when the request was refused
/// before anything was generated, and keeps it as spent when the answer was cut off or could
/// not be read (it may have been billed).
fn settle(reservation: Reservation, job: &CallJob, result: &Result<ChatResponse, ProviderError>) {
    match result {
        // A target billing more than its `max_cost_usd:` stops the run: its bound is what
        // every reservation of its calls relies on.
        Ok(answer) if let Some(overrun) = overrun(job, answer) => {
            reservation.settle_overrun(overrun.reported_usd, overrun);
        }
        // A budget refuses a model without a price before any call; were one sent, it would
        // count as all the budget.
        Ok(answer) => reservation.settle(job.answer_cost(answer).unwrap_or(f64::INFINITY)),
        Err(
            ProviderError::Http { .. }
            | ProviderError::Exhausted { .. }
            | ProviderError::Connect { .. }
            | ProviderError::Request { .. }
            | ProviderError::MissingKey { .. },
        ) => reservation.release(),
        Err(_) => drop(reservation),
    }
}

/// What `answer` overran, when it is a target's and reported more than its `max_cost_usd:`.
fn overrun(job: &CallJob, answer: &ChatResponse) -> Option<Overrun> {
    let app = job.app.as_ref()?;
    let max_cost_usd = app.config.max_cost_usd?;
    let reported_usd = job.answer_cost(answer)?;
    // The tolerance is for a bound written with more digits than a double holds.
    (reported_usd > max_cost_usd * (1.0 + 1e-9)).then(|| Overrun {
        target: app.app.provider.clone(),
        max_cost_usd,
        reported_usd,
    })
}

/// The outcome of a call whose model refused the answer's schema while it waited to be sent
/// (never stored: the call is asked again without its schema).
const SCHEMA_REFUSED_IN_THIS_RUN: &str =
    "its model refused the answer's schema earlier in this run";

/// Attempts at most when the server cannot be reached at all.
const CONNECT_ATTEMPTS: u32 = 2;

/// Rate-limit refusals a call may meet, per attempt it is allowed: the pacer waits them out,
/// so they are many only when others share the key.
const RATE_LIMIT_ALLOWANCE: u32 = 4;

/// A failed call's error, with how many attempts were made and why they stopped: a user
/// deciding whether to run again needs both.
fn failure_message(error: &ProviderError, attempts: u32, failed_before: bool) -> String {
    let tries = if attempts == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{attempts} attempts")
    };
    match error.why_final() {
        Some(why) => format!("{error} ({tries}; not retried: {why})"),
        None if failed_before => format!(
            "{error} ({tries}: every attempt of an earlier run failed too, so it was tried \
             once; try again later)"
        ),
        None => format!("{error} ({tries}; gave up after the last)"),
    }
}

/// Whether a failed call's status and message say the server refused the request's schema
/// (not, say, a prompt too long for its context, which a request without one fails alike).
fn refuses_schema(status: Option<u16>, error: &str) -> bool {
    let error = error.to_ascii_lowercase();
    matches!(status, Some(400 | 422))
        && [
            "schema",
            "response_format",
            "tool",
            "format",
            "grammar",
            "structured",
        ]
        .iter()
        .any(|word| error.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refused_schema_is_a_refusal() {
        for refusal in [
            "openai answered HTTP 400: Invalid schema for response_format 'v': …",
            "anthropic answered HTTP 400: tools.0.custom.input_schema: Field required",
            "local answered HTTP 400: JSON schema conversion failed",
            "ollama answered HTTP 400: invalid format: 42",
        ] {
            assert!(refuses_schema(Some(400), refusal), "{refusal}");
        }
        assert!(!refuses_schema(
            Some(400),
            "local answered HTTP 400: request (9686 tokens) exceeds the available context size \
             (8192 tokens), try increasing it (1 attempt; not retried: this HTTP status does not \
             change on retry)"
        ));
        assert!(!refuses_schema(
            Some(500),
            "response_format broke the server"
        ));
        assert!(!refuses_schema(None, "schema"));
    }
}
