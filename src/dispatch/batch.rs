//! Batch rounds: a stage's uncached calls sent through a provider's batch API at half price.
//! Every step is stored before anything relies on it (the intent before the upload, the file
//! id before the create, the batch id before the first poll, each poll, each result into the
//! call cache as an ordinary call), so a crash at any point neither submits a call twice nor
//! loses a paid result: a batch whose create may have happened unrecorded is found again by
//! listing ([`batch::recover`]), never created twice.
//!
//! The wire formats are `llm::batch`'s and the rows the store's; this module decides when to
//! submit, recover, poll and collect. The runtime records the outcomes as it records live ones.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::budget::{NoRoom, Reservation};
use super::fanout::Fanout;
use super::recorder::{CallRecorder, Timing};
use super::retry::{Retries, retrying};
use crate::config::RetryPolicy;
use crate::dispatch::{Budget, CallJob, CallOutcome};
use crate::llm::batch::{
    self, BatchApi, BatchCounts, BatchError, BatchInfo, BatchStatus, LineFailure, Lost,
};
use crate::llm::{ChatRequest, Endpoint, LlmClient};
use crate::store::{
    BatchCountsRow, BatchPoll, BatchRow, BatchState, Claim, KeyOutcome, NewBatch, Store,
    StoreError, Writer,
};

/// How often batches are polled: first after `first`, each wait half again as long as the one
/// before, up to `max`. Batch endpoints have rate limits of their own, polls included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollPolicy {
    pub first: Duration,
    pub max: Duration,
}

impl Default for PollPolicy {
    /// 5 s, then up to a minute.
    fn default() -> Self {
        Self {
            first: Duration::from_secs(5),
            max: Duration::from_secs(60),
        }
    }
}

impl PollPolicy {
    /// The policy `TRACK_BATCH_POLL_MS` sets (`FIRST` or `FIRST,MAX`, in milliseconds: for
    /// tests and for servers that answer batches in seconds), else the default.
    pub fn from_env() -> Self {
        let Ok(text) = std::env::var("TRACK_BATCH_POLL_MS") else {
            return Self::default();
        };
        let mut parts = text.split(',').map(|p| p.trim().parse::<u64>());
        match (parts.next(), parts.next()) {
            (Some(Ok(first)), None) if first > 0 => Self {
                first: Duration::from_millis(first),
                max: Duration::from_millis(first).max(Self::default().max),
            },
            (Some(Ok(first)), Some(Ok(max))) if first > 0 && max >= first => Self {
                first: Duration::from_millis(first),
                max: Duration::from_millis(max),
            },
            _ => {
                tracing::warn!(
                    "TRACK_BATCH_POLL_MS=`{text}` is not FIRST or FIRST,MAX in milliseconds; \
                     polling every 5 s to a minute"
                );
                Self::default()
            }
        }
    }

    fn next(&self, wait: Duration) -> Duration {
        wait.mul_f64(1.5).min(self.max).max(self.first)
    }
}

/// A call of a stage to send through a batch API.
#[derive(Debug, Clone)]
pub struct BatchCall {
    /// Its index in the stage.
    pub index: usize,
    /// The call, priced at the batch rate.
    pub job: CallJob,
    /// The batch API its provider speaks.
    pub api: BatchApi,
}

/// The batched calls of one stage and the batches they wait in.
#[derive(Debug, Default)]
pub struct Round {
    /// The stage's indices of each key (the first gets the answer, the others a hit of it).
    indices: Fanout,
    /// Each key's call, priced at the batch rate.
    jobs: HashMap<String, CallJob>,
    /// The batches the stage waits for, by track's id.
    following: BTreeMap<i64, Followed>,
    /// The worst case reserved from the budget for each key this run submitted.
    reserved: HashMap<String, Reservation>,
    /// Each batch's last status and counts, for the progress line.
    seen: BTreeMap<i64, String>,
    /// The batch API of each key's provider.
    apis: HashMap<String, BatchApi>,
    /// Keys another run's batch left unfinished (expired, cancelled, never created): this
    /// run submits them again ([`Batcher::resubmit`]).
    resubmit: Vec<String>,
    /// Keys the budget holds back while the round's batches hold the room they need: they
    /// are submitted once those settle ([`Batcher::resubmit`]).
    deferred: Vec<String>,
}

impl Round {
    /// Whether the stage waits for no batch and has nothing to submit again or later.
    pub fn is_done(&self) -> bool {
        self.following.is_empty() && self.resubmit.is_empty() && self.deferred.is_empty()
    }

    /// Whether keys wait to be submitted again, or (when `room_freed`: a batch settled, or
    /// none is followed) to be submitted once the budget has room ([`Batcher::resubmit`]).
    pub fn has_resubmits(&self, room_freed: bool) -> bool {
        !self.resubmit.is_empty()
            || (!self.deferred.is_empty() && (room_freed || self.following.is_empty()))
    }

    /// Takes `calls` into the round; returns the keys new to it, in the calls' order.
    fn add(&mut self, calls: Vec<BatchCall>) -> Vec<String> {
        let mut new = Vec::new();
        for call in calls {
            let key = call.job.canonical.key.to_string();
            if self.indices.add(&key, call.index) {
                new.push(key.clone());
                self.apis.insert(key.clone(), call.api);
                self.jobs.insert(key, call.job);
            }
        }
        new
    }

    /// How many batches it waits for.
    pub fn waiting(&self) -> usize {
        self.following.len()
    }

    /// What the progress line says of the batches: `batches: openai gpt-4o-mini in_progress
    /// 40/120 · …`.
    pub fn note(&self) -> Option<String> {
        (!self.seen.is_empty()).then(|| {
            let parts: Vec<&str> = self.seen.values().map(String::as_str).collect();
            format!("batches: {}", parts.join(" · "))
        })
    }

    /// The outcome of every index of `key`: the first gets `outcome`, the others a hit of a
    /// fresh answer.
    fn spread(&self, key: &str, outcome: CallOutcome) -> Vec<(usize, CallOutcome)> {
        self.indices.spread(key, outcome)
    }
}

impl Drop for Round {
    /// Calls still reserved wait in batches the run leaves behind (`--detach`, a signal, an
    /// error): their room stays held, as the run cannot know what they will cost.
    fn drop(&mut self) {
        for (_, reservation) in self.reserved.drain() {
            reservation.leave_waiting();
        }
    }
}

/// A batch a round waits for: where to ask, and when.
#[derive(Debug)]
struct Followed {
    /// The endpoint its calls were sent to (with the key to poll it with).
    endpoint: Arc<Endpoint>,
    /// When it is polled next.
    due: Instant,
    /// The wait before that poll (it grows by half at each poll).
    wait: Duration,
}

impl Round {
    /// Waits for batch `id` at `endpoint` too, polling it first after `wait` (unless it is
    /// already followed).
    fn follow(&mut self, id: i64, endpoint: &Arc<Endpoint>, wait: Duration) {
        self.following.entry(id).or_insert_with(|| Followed {
            endpoint: endpoint.clone(),
            due: Instant::now() + wait,
            wait,
        });
    }

    /// The endpoint of `key`'s call.
    fn endpoint(&self, key: &str) -> Option<Arc<Endpoint>> {
        self.jobs.get(key).map(|j| j.endpoint.clone())
    }
}

/// What submitting a stage's batched calls came to (the batches to follow are in the round).
#[derive(Debug, Default)]
pub struct Submitted {
    /// Calls to send live: a request alone over the size limit, and keys another run claims
    /// (the executor waits for that run's answer, as a live run does).
    pub live: Vec<usize>,
    /// Outcomes known now: calls that got no batch, with why (a refused upload or create, no
    /// room in the budget), and keys another run answered meanwhile (cache hits).
    pub settled: Vec<(usize, CallOutcome)>,
}

/// Submits, recovers, polls and collects batches for a run.
pub struct Batcher {
    client: LlmClient,
    /// Every read and write of the store goes through its writer thread.
    recorder: CallRecorder,
    run_id: i64,
    retry: RetryPolicy,
    poll: PollPolicy,
    /// How long the claims on keys it is about to batch hold.
    lease: Duration,
    /// Whether the run named so in claims (its id) is still at work.
    is_alive: Liveness,
}

/// Whether the run a claim or a batch names (its id, as text) is still at work.
pub type Liveness = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How long a batch's claims hold by default: they end when its intent is stored.
const BATCH_CLAIM_LEASE: Duration = Duration::from_secs(600);

/// An error of a batch step, as the runtime reports it.
type StepResult<T> = Result<T, StepError>;

/// Why a batch step stopped.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Batch(#[from] BatchError),
}

impl Batcher {
    /// A batcher for run `run_id`, reading and writing the store through `writer`.
    pub fn new(
        client: LlmClient,
        writer: Writer,
        run_id: i64,
        retry: RetryPolicy,
        poll: PollPolicy,
    ) -> Self {
        let own = run_id.to_string();
        Self {
            client,
            recorder: CallRecorder::new(writer),
            run_id,
            retry,
            poll,
            lease: BATCH_CLAIM_LEASE,
            is_alive: Arc::new(move |owner| owner == own),
        }
    }

    /// Tells whether the other runs sharing the database are alive with `is_alive` (by
    /// default only this run is), and holds claims for `lease`.
    pub fn set_liveness(&mut self, lease: Duration, is_alive: Liveness) {
        self.lease = lease;
        self.is_alive = is_alive;
    }

    /// Runs `work` on the store through the run's writer thread, as every stored call is:
    /// async workers never block on SQLite.
    async fn db<R: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Store) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.recorder.writer().run(work).await
    }

    /// The batches `keys` wait in.
    async fn pending(&self, keys: &[String]) -> Result<HashMap<String, i64>, StoreError> {
        let keys = keys.to_vec();
        self.db(move |s| s.pending_in_batches(keys.iter().map(String::as_str)))
            .await
    }

    /// Batch `id`'s row.
    async fn batch_row(&self, id: i64) -> Result<Option<BatchRow>, StoreError> {
        self.db(move |s| s.batch(id)).await
    }

    /// The keys of batch `id`, with what became of each.
    async fn batch_keys(&self, id: i64) -> Result<Vec<crate::store::BatchKeyRow>, StoreError> {
        self.db(move |s| s.batch_keys(id)).await
    }

    /// Gives batch `id` up with `note`; one another run settled meanwhile is left as it is.
    async fn void(&self, id: i64, note: &str) -> Result<(), StoreError> {
        let note = note.to_owned();
        match self.db(move |s| s.void_batch(id, &note)).await {
            Ok(_) | Err(StoreError::BatchState { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// This run's name in claims.
    fn owner(&self) -> String {
        self.run_id.to_string()
    }

    /// Whether the run of batch `row` is at work (this one, or another process's).
    fn run_alive(&self, row: &BatchRow) -> bool {
        row.run_id
            .is_some_and(|id| id == self.run_id || (self.is_alive)(&id.to_string()))
    }

    /// Takes the stage's batched `calls` into `round`: keys already waiting in a batch (an
    /// earlier run's, or one another run is submitting now) are followed, never submitted
    /// again; a batch a dead run left half-made is found again or given up first; keys
    /// another run claims are sent live (the executor waits for that run's answer); the rest
    /// are claimed, then submitted, one batch per model and API within the provider's
    /// limits, each step stored before the next. With a `budget`, each call's worst case at
    /// the batch price is reserved before it is submitted; a call that does not fit is not
    /// submitted (the budget is then reached).
    pub async fn submit(
        &self,
        round: &mut Round,
        calls: Vec<BatchCall>,
        budget: Option<&Arc<Budget>>,
        stop: &AtomicBool,
    ) -> Result<Submitted, StoreError> {
        let keys = round.add(calls);
        self.place(round, keys, budget, stop).await
    }

    /// Submits again the keys another run's batch left unfinished, and those the budget
    /// held back while the round's batches held its room (see [`Round::has_resubmits`]).
    pub async fn resubmit(
        &self,
        round: &mut Round,
        budget: Option<&Arc<Budget>>,
        stop: &AtomicBool,
    ) -> Result<Submitted, StoreError> {
        let mut keys = std::mem::take(&mut round.resubmit);
        keys.append(&mut round.deferred);
        let submitted = self.place(round, keys, budget, stop).await?;
        if round.following.is_empty() && !round.deferred.is_empty() {
            // Held back with nothing out to settle: the room is not coming back (it cannot
            // happen while reservations are settled); given up rather than waited for.
            let keys = std::mem::take(&mut round.deferred);
            let why = "the budget's room for it was held by calls that never settled";
            let mut submitted = submitted;
            submitted.settled.extend(self.fail(round, &keys, why));
            return Ok(submitted);
        }
        Ok(submitted)
    }

    /// [`Batcher::submit`] for `keys` of the round.
    async fn place(
        &self,
        round: &mut Round,
        keys: Vec<String>,
        budget: Option<&Arc<Budget>>,
        stop: &AtomicBool,
    ) -> Result<Submitted, StoreError> {
        let mut submitted = Submitted::default();
        if keys.is_empty() {
            return Ok(submitted);
        }
        self.settle_half_made(round, &keys).await?;
        let pending = self.follow_pending(&mut submitted, round, &keys).await?;
        let rest: Vec<String> = keys
            .into_iter()
            .filter(|k| !pending.contains_key(k))
            .collect();
        let mine = self.claim(&mut submitted, round, &rest).await?;
        // The rest, grouped by endpoint and API, in the stage's order.
        let mut order: Vec<&String> = mine.iter().collect();
        order.sort_by_key(|k| round.indices.indices(k)[0]);
        let mut groups: Vec<(Arc<Endpoint>, BatchApi, Vec<String>)> = Vec::new();
        for key in order {
            let job = &round.jobs[key];
            if stop.load(Ordering::SeqCst) {
                break;
            }
            if let Some(budget) = budget {
                match budget.try_reserve(super::max_cost(job)) {
                    Ok(reservation) => {
                        round.reserved.insert(key.clone(), reservation);
                    }
                    // Batches out hold the room: submitted once they settle.
                    Err(NoRoom::Later) => {
                        round.deferred.push(key.clone());
                        continue;
                    }
                    Err(NoRoom::Never) => continue,
                }
            }
            let api = round.apis[key];
            match groups
                .iter_mut()
                .find(|(e, a, _)| *a == api && same_endpoint(e, &job.endpoint))
            {
                Some((_, _, keys)) => keys.push(key.clone()),
                None => groups.push((job.endpoint.clone(), api, vec![key.clone()])),
            }
        }
        let submitting = async {
            for (endpoint, api, keys) in groups {
                self.submit_group(&mut submitted, round, &endpoint, api, &keys)
                    .await?;
            }
            Ok::<_, StoreError>(())
        };
        let result = submitting.await;
        // The claims of keys now in an intent ended with it; the others' end here (a key
        // sent live is claimed again by the executor).
        let (keys, owner) = (mine.clone(), self.owner());
        if let Err(e) = self.db(move |s| s.release_claims(&keys, &owner)).await {
            tracing::warn!("could not release the claims of keys not batched: {e}");
        }
        result.map(|()| submitted)
    }

    /// Claims `keys` for this run's batches, in one transaction: answered meanwhile, they are
    /// served; waiting in a batch another run has just stored, that batch is followed;
    /// claimed by another live run, they go live (the executor waits for its answer).
    /// Returns the keys this run holds now, to submit.
    async fn claim(
        &self,
        submitted: &mut Submitted,
        round: &mut Round,
        keys: &[String],
    ) -> Result<Vec<String>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let alive = self.is_alive.clone();
        let (owned, owner, lease) = (keys.to_vec(), self.owner(), self.lease);
        let claims = self
            .db(move |s| s.claim_many(&owned, &owner, lease, &|h| !alive(h)))
            .await?;
        let mut mine = Vec::new();
        for (key, claim) in keys.iter().zip(claims) {
            match claim {
                Claim::Mine => mine.push(key.clone()),
                Claim::Answered(call) => {
                    let served = round.spread(key, CallOutcome::Hit(Box::new(call)));
                    submitted.settled.extend(served);
                }
                Claim::Batched(batch) => {
                    if let Some(endpoint) = round.endpoint(key) {
                        round.follow(batch, &endpoint, self.poll.first);
                    }
                }
                Claim::Busy(holder) => {
                    tracing::debug!(run = %holder, "a key another run sends live: waited for");
                    submitted
                        .live
                        .extend(round.indices.indices(key).iter().copied());
                }
            }
        }
        Ok(mine)
    }

    /// Follows the batches `keys` of the round already wait in (an earlier run's, now
    /// submitted, or one a live run is submitting); returns those keys with their batch.
    /// Keys in a batch a dead run left unconfirmed are failed for now.
    async fn follow_pending(
        &self,
        submitted: &mut Submitted,
        round: &mut Round,
        keys: &[String],
    ) -> Result<HashMap<String, i64>, StoreError> {
        let pending = self.pending(keys).await?;
        let mut unconfirmed = BTreeSet::new();
        for (key, batch) in &pending {
            let followable = self.batch_row(*batch).await?.is_some_and(|row| {
                row.state == BatchState::Submitted || (row.state.is_open() && self.run_alive(&row))
            });
            match round.endpoint(key) {
                Some(endpoint) if followable => round.follow(*batch, &endpoint, Duration::ZERO),
                _ => {
                    unconfirmed.insert(*batch);
                }
            }
        }
        // Left half-made and not found at the provider for want of an answer: neither followed
        // nor submitted again (that could pay twice); a later run looks again.
        for (key, batch) in pending.iter().filter(|(_, b)| unconfirmed.contains(*b)) {
            let why = format!(
                "waits in batch {batch}, which an earlier run left before the provider confirmed \
                 it and which could not be looked for now; run again later"
            );
            submitted
                .settled
                .extend(self.fail(round, [key.as_str()], &why));
        }
        Ok(pending)
    }

    /// Splits one endpoint's keys into payloads and submits each.
    async fn submit_group(
        &self,
        submitted: &mut Submitted,
        round: &mut Round,
        endpoint: &Arc<Endpoint>,
        api: BatchApi,
        keys: &[String],
    ) -> Result<(), StoreError> {
        let items = keys.iter().map(|k| (k.as_str(), &round.jobs[k].request));
        let split = match batch::split(api, endpoint.kind, items, api.limits()) {
            Ok(split) => split,
            Err(e) => {
                // A key the batch APIs refuse: cannot happen for sha256 keys; send live.
                tracing::warn!("cannot batch these calls, sending them live: {e}");
                for key in keys {
                    self.release(round, key, 0.0);
                    submitted
                        .live
                        .extend(round.indices.indices(key).iter().copied());
                }
                return Ok(());
            }
        };
        for key in &split.oversized {
            self.release(round, key, 0.0);
            submitted
                .live
                .extend(round.indices.indices(key).iter().copied());
        }
        for payload in split.payloads {
            let intent = {
                let (run_id, endpoint) = (self.run_id, endpoint.clone());
                let (model, sha256) = (payload.model.clone(), payload.sha256.clone());
                let (bytes, keys) = (payload.bytes.len() as u64, payload.custom_ids.clone());
                self.db(move |s| {
                    s.create_batch(&NewBatch {
                        run_id: Some(run_id),
                        provider: &endpoint.provider,
                        api,
                        base_url: &endpoint.base_url,
                        key_fingerprint: &endpoint.key_fingerprint(),
                        model: &model,
                        payload_sha256: &sha256,
                        payload_bytes: bytes,
                        keys: &keys,
                    })
                })
                .await
            };
            let row = match intent {
                Ok(row) => row,
                Err(StoreError::AlreadyBatched { .. } | StoreError::ClaimedLive { .. }) => {
                    // Another run sharing the database took some of them meanwhile (its claim
                    // on them had expired, or it found this run dead).
                    self.follow_or_defer(submitted, round, &payload.custom_ids)
                        .await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            tracing::debug!(
                batch = row.id,
                requests = payload.request_count(),
                "batch intent stored"
            );
            match self.send_payload(endpoint, &payload, &row).await {
                Ok(()) => round.follow(row.id, endpoint, self.poll.first),
                Err(e) => {
                    let hint = match &e {
                        StepError::Batch(b) if matches!(b.http_status(), Some(404 | 405 | 501)) => {
                            format!(
                                " ({} seems to have no batch API: set `batch: off` for it in \
                                 config.yaml, or run without --batch)",
                                endpoint.provider
                            )
                        }
                        _ => String::new(),
                    };
                    let why = format!("the batch could not be submitted: {e}{hint}");
                    let voided = why.clone();
                    self.db(move |s| s.void_batch(row.id, &voided)).await?;
                    let failed = self.fail(round, &payload.custom_ids, &why);
                    submitted.settled.extend(failed);
                }
            }
        }
        Ok(())
    }

    /// `keys`, some of which another run has just taken: those in a batch are followed; the
    /// others go live, where the executor's claim waits for whoever holds them.
    async fn follow_or_defer(
        &self,
        submitted: &mut Submitted,
        round: &mut Round,
        keys: &[String],
    ) -> Result<(), StoreError> {
        let pending = self.pending(keys).await?;
        for key in keys {
            self.release(round, key, 0.0);
            match pending.get(key) {
                Some(batch) => {
                    if let Some(endpoint) = round.endpoint(key) {
                        round.follow(*batch, &endpoint, self.poll.first);
                    }
                }
                None => submitted
                    .live
                    .extend(round.indices.indices(key).iter().copied()),
            }
        }
        Ok(())
    }

    /// Uploads (OpenAI) and creates the batch of `row`, storing the file id and the batch id
    /// as each arrives. A create whose answer is lost is looked for before it is tried again.
    async fn send_payload(
        &self,
        endpoint: &Endpoint,
        payload: &batch::Payload,
        row: &BatchRow,
    ) -> StepResult<()> {
        let file_id = retrying(self.retry, "the batch upload", || {
            batch::upload(&self.client, endpoint, payload)
        })
        .await?;
        if let Some(file_id) = file_id.clone() {
            let id = row.id;
            self.db(move |s| s.set_batch_file(id, &file_id)).await?;
        }
        let mut retries = Retries::new(self.retry);
        loop {
            let error = match batch::create(
                &self.client,
                endpoint,
                payload,
                file_id.as_deref(),
                &row.tag,
            )
            .await
            {
                Ok(info) => return self.adopt(row.id, &info).await,
                Err(e) => e,
            };
            let Some(wait) = retries.after_failure(&error) else {
                return Err(error.into());
            };
            // The provider may have created it and the answer been lost: look before asking
            // again, so that it is never created twice.
            let lost = Lost {
                tag: &row.tag,
                file_id: file_id.as_deref(),
                request_count: payload.request_count(),
                since: parse_time(&row.created_at),
            };
            if let Some(info) = self.find_lost(endpoint, payload.api, &lost).await? {
                return self.adopt(row.id, &info).await;
            }
            tracing::debug!(?wait, %error, "batch create failed; trying again");
            tokio::time::sleep(wait).await;
        }
    }

    /// Stores that batch `id` is the provider's `info`: its id and what it said.
    async fn adopt(&self, id: i64, info: &BatchInfo) -> StepResult<()> {
        let info_owned = info.clone();
        self.db(move |s| {
            with_poll(&info_owned, |poll| {
                s.set_batch_submitted(id, &info_owned.id, poll)
            })
        })
        .await?;
        tracing::debug!(batch = id, provider_id = %info.id, "batch submitted");
        Ok(())
    }

    /// The batch `lost` describes, when the provider has it and no stored batch claims it.
    async fn find_lost(
        &self,
        endpoint: &Endpoint,
        api: BatchApi,
        lost: &Lost<'_>,
    ) -> StepResult<Option<BatchInfo>> {
        let candidates = retrying(self.retry, "looking for a lost batch", || {
            batch::recover(&self.client, endpoint, api, lost)
        })
        .await?;
        // Oldest first: the intent's batch was created soon after it.
        let found = self
            .db(move |s| {
                for info in candidates.into_iter().rev() {
                    if !s.batch_id_known(&info.id)? {
                        return Ok(Some(info));
                    }
                }
                Ok(None)
            })
            .await?;
        Ok(found)
    }

    /// Batches a dead run left half-made (intent or uploaded) holding `keys` of the round:
    /// adopted when the provider has them, else given up, so their keys are submitted again.
    /// A batch whose run is alive is being submitted by it: left alone, and followed.
    async fn settle_half_made(&self, round: &Round, keys: &[String]) -> Result<(), StoreError> {
        let pending = self.pending(keys).await?;
        let ids: BTreeSet<i64> = pending.values().copied().collect();
        for id in ids {
            let Some(row) = self.batch_row(id).await? else {
                continue;
            };
            if !matches!(row.state, BatchState::Intent | BatchState::Uploaded)
                || self.run_alive(&row)
            {
                continue;
            }
            let endpoint = pending
                .iter()
                .find(|(_, b)| **b == id)
                .and_then(|(k, _)| round.jobs.get(k))
                .map(|j| j.endpoint.clone());
            self.settle_abandoned(&row, endpoint).await?;
        }
        Ok(())
    }

    /// Batch `row`, left half-made by a run that is gone: adopted when the provider has it
    /// (looked for at `endpoint`), else given up; left for later when it cannot be looked for.
    async fn settle_abandoned(
        &self,
        row: &BatchRow,
        endpoint: Option<Arc<Endpoint>>,
    ) -> Result<(), StoreError> {
        let id = row.id;
        let api = row.api;
        // OpenAI creates only from an uploaded file whose id was stored first: an intent
        // was never created. Anthropic's create carries the requests: it may have been.
        let maybe_created = row.state == BatchState::Uploaded || api == BatchApi::Anthropic;
        let found = match (maybe_created, endpoint) {
            (true, Some(endpoint)) => {
                let lost = Lost {
                    tag: &row.tag,
                    file_id: row.file_id.as_deref(),
                    request_count: row.request_count as usize,
                    since: parse_time(&row.created_at),
                };
                match self.find_lost(&endpoint, api, &lost).await {
                    Ok(found) => found,
                    Err(e) => {
                        // Unknown: leave it for a later run rather than risk paying twice.
                        tracing::warn!("could not look for batch {id} at the provider: {e}");
                        return Ok(());
                    }
                }
            }
            _ => None,
        };
        match found {
            Some(info) => {
                if let Err(e) = self.adopt(id, &info).await {
                    tracing::warn!("could not adopt batch {id}: {e}");
                }
            }
            // Settled meanwhile by another run, it is left as it is.
            None => {
                self.void(
                    id,
                    "never created: an earlier run stopped before the provider had it",
                )
                .await?
            }
        }
        Ok(())
    }

    /// Polls the round's batches that are due and collects those that ended: the outcomes
    /// of their calls, for the runtime to record.
    pub async fn poll(&self, round: &mut Round) -> Result<Vec<(usize, CallOutcome)>, StoreError> {
        let now = Instant::now();
        let due: Vec<i64> = round
            .following
            .iter()
            .filter(|(_, followed)| followed.due <= now)
            .map(|(id, _)| *id)
            .collect();
        let mut outcomes = Vec::new();
        for id in due {
            let Some(row) = self.batch_row(id).await? else {
                round.following.remove(&id);
                continue;
            };
            if !row.state.is_open() {
                // Collected or voided meanwhile (another run): its keys are settled.
                round.following.remove(&id);
                round.seen.remove(&id);
                outcomes.extend(self.settled_elsewhere(round, &row).await?);
                continue;
            }
            if row.batch_id.is_none() && !self.run_alive(&row) {
                // Its run died before the provider confirmed it: found again or given up,
                // then followed or settled at the next poll.
                let endpoint = round.following.get(&id).map(|f| f.endpoint.clone());
                self.settle_abandoned(&row, endpoint).await?;
                if let Some(followed) = round.following.get_mut(&id) {
                    followed.due = Instant::now();
                }
                continue;
            }
            match self.poll_one(round, &row).await {
                Ok(Some(collected)) => {
                    round.following.remove(&id);
                    round.seen.remove(&id);
                    outcomes.extend(collected);
                }
                Ok(None) => {}
                Err(StepError::Store(e)) => return Err(e),
                Err(StepError::Batch(e)) if e.is_retryable() => {
                    tracing::warn!("batch {id}: {e}; polled again later");
                }
                Err(StepError::Batch(e)) => {
                    // Not followed in this run; its calls still wait in it, for the next run
                    // to follow once the cause is mended (never submitted again meanwhile).
                    round.following.remove(&id);
                    round.seen.remove(&id);
                    let why = format!(
                        "batch {id} could not be followed: {e}; its calls wait in it, and the \
                         same command follows it again once that is mended"
                    );
                    let keys = self.keys_of(round, id).await?;
                    outcomes.extend(self.fail(round, &keys, &why));
                }
            }
            if let Some(followed) = round.following.get_mut(&id) {
                followed.wait = self.poll.next(followed.wait);
                followed.due = Instant::now() + followed.wait;
            }
        }
        Ok(outcomes)
    }

    /// Fails the keys the round was to submit again (a signal came first, or the budget was
    /// reached): the next run submits them. Those the budget held back are left unsent, as
    /// calls the budget refuses are. Returns the outcomes.
    pub fn leave_resubmits(&self, round: &mut Round) -> Vec<(usize, CallOutcome)> {
        round.deferred.clear();
        let keys = std::mem::take(&mut round.resubmit);
        let why = "its batch ended without running it; the next run submits it again";
        self.fail(round, &keys, why)
    }

    /// How long until the next batch is due (zero when one is).
    pub fn next_due(&self, round: &Round) -> Duration {
        round
            .following
            .values()
            .map(|followed| followed.due)
            .min()
            .map_or(Duration::ZERO, |at| {
                at.saturating_duration_since(Instant::now())
            })
    }

    /// Polls batch `row` once; collects it when it has ended. `None` while it runs.
    async fn poll_one(
        &self,
        round: &mut Round,
        row: &BatchRow,
    ) -> StepResult<Option<Vec<(usize, CallOutcome)>>> {
        let (Some(batch_id), Some(api)) = (row.batch_id.as_deref(), Some(row.api)) else {
            return Ok(None);
        };
        let Some(endpoint) = round.following.get(&row.id).map(|f| f.endpoint.clone()) else {
            return Ok(None);
        };
        let info = retrying(self.retry, "a batch poll", || {
            batch::get(&self.client, &endpoint, api, batch_id)
        })
        .await?;
        let (id, polled) = (row.id, info.clone());
        self.db(move |s| with_poll(&polled, |poll| s.record_batch_poll(id, poll)))
            .await?;
        round.seen.insert(row.id, progress_of(row, &info));
        if !info.status.is_ended() {
            return Ok(None);
        }
        self.collect(round, row, &endpoint, &info).await.map(Some)
    }

    /// Stores every result of an ended batch: answers as ordinary calls at the batch price,
    /// errors as failed calls; requests that never ran (expired, cancelled) are submitted
    /// again by the next run ([`Batcher::unfinished`]). A batch refused as a whole is given
    /// up, with its errors' lines and codes. Another run may collect the same batch at the
    /// same time: what it stored first is served from the cache, never stored twice.
    async fn collect(
        &self,
        round: &mut Round,
        row: &BatchRow,
        endpoint: &Endpoint,
        info: &BatchInfo,
    ) -> StepResult<Vec<(usize, CallOutcome)>> {
        if let BatchStatus::Failed(failures) = &info.status {
            return Ok(self.refused(round, row, endpoint, info, failures).await?);
        }
        let jobs = &round.jobs;
        let request_of = |id: &str| -> Option<&ChatRequest> { jobs.get(id).map(|j| &j.request) };
        let lines = retrying(self.retry, "reading a batch's results", || {
            batch::results(&self.client, endpoint, info, request_of)
        })
        .await?;
        // Keys an earlier collect stored before its run stopped are served from the cache.
        let (pending, stored): (Vec<_>, Vec<_>) = self
            .batch_keys(row.id)
            .await?
            .into_iter()
            .filter(|k| round.jobs.contains_key(&k.cache_key))
            .partition(|k| k.outcome == KeyOutcome::Pending);
        let pending: HashSet<String> = pending.into_iter().map(|k| k.cache_key).collect();
        let stored: Vec<String> = stored.into_iter().map(|k| k.cache_key).collect();
        let mut outcomes = self.stored_outcomes(round, row, &stored).await?;
        let mut unfinished = Vec::new();
        let latency_ms = turnaround_ms(row, info);
        for line in lines {
            if !pending.contains(&line.custom_id) {
                continue;
            }
            let Some(job) = round.jobs.get(&line.custom_id).cloned() else {
                continue;
            };
            let key = line.custom_id;
            let stored = match line.outcome {
                Ok(response) => {
                    let usage = response.usage;
                    let cost = job.price.cost_usd(usage.input_tokens, usage.output_tokens);
                    self.release(round, &key, cost);
                    self.store_answer(row.id, &job, response, latency_ms).await
                }
                Err(failure) if failure.is_unfinished() => {
                    unfinished.push(key.clone());
                    let why = failure.to_string();
                    outcomes.extend(self.unfinished(round, row, &key, &why));
                    continue;
                }
                Err(failure) => {
                    self.release(round, &key, 0.0);
                    self.store_failure(row.id, &job, &failure, latency_ms).await
                }
            };
            match stored {
                Some(outcome) => outcomes.extend(round.spread(&key, outcome)),
                // Another run collecting the same batch stored it first: served from there.
                None => outcomes.extend(self.stored_outcomes(round, row, &[key]).await?),
            }
        }
        outcomes.extend(self.close(round, row, info, &unfinished).await?);
        tracing::debug!(batch = row.id, outcomes = outcomes.len(), "batch collected");
        Ok(outcomes)
    }

    /// Closes a collected batch: `unfinished` keys, and those of this round no line named,
    /// are unfinished ([`Batcher::unfinished`]); the batch is collected unless it holds keys this round does
    /// not know (another experiment's, collected by its run). Returns the outcomes of the
    /// round's keys no line named.
    async fn close(
        &self,
        round: &mut Round,
        row: &BatchRow,
        info: &BatchInfo,
        unfinished: &[String],
    ) -> Result<Vec<(usize, CallOutcome)>, StoreError> {
        let id = row.id;
        let round_keys: HashSet<String> = round.jobs.keys().cloned().collect();
        let unfinished = unfinished.to_vec();
        // In one piece of the writer's: the keys read are those marked.
        let known = self
            .db(move |s| {
                let (known, unknown): (Vec<String>, Vec<String>) = s
                    .batch_keys(id)?
                    .into_iter()
                    .filter(|k| {
                        k.outcome == KeyOutcome::Pending && !unfinished.contains(&k.cache_key)
                    })
                    .map(|k| k.cache_key)
                    .partition(|k| round_keys.contains(k));
                let done: Vec<&str> = unfinished
                    .iter()
                    .chain(&known)
                    .map(String::as_str)
                    .collect();
                s.mark_batch_unfinished(id, &done)?;
                if unknown.is_empty() {
                    match s.finish_batch(id) {
                        // Another run collecting it at the same time closed it first.
                        Ok(_) | Err(StoreError::BatchState { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(known)
            })
            .await?;
        let why = format!("batch {} ended without a result for this request", info.id);
        let mut outcomes = Vec::new();
        for key in &known {
            outcomes.extend(self.unfinished(round, row, key, &why));
        }
        Ok(outcomes)
    }

    /// A batch the provider refused as a whole (OpenAI's validation): given up, with each
    /// error's line and code in its note and in its calls' errors; nothing of it was billed.
    async fn refused(
        &self,
        round: &mut Round,
        row: &BatchRow,
        endpoint: &Endpoint,
        info: &BatchInfo,
        failures: &[batch::BatchFailure],
    ) -> Result<Vec<(usize, CallOutcome)>, StoreError> {
        let listed: Vec<String> = failures.iter().map(ToString::to_string).collect();
        let why = format!(
            "{} refused batch {}: {}",
            endpoint.provider,
            info.id,
            listed.join("; ")
        );
        let keys = self.keys_of(round, row.id).await?;
        // Another run following it may have given it up first.
        self.void(row.id, &why).await?;
        Ok(self.fail(round, &keys, &why))
    }

    /// `keys` of the round end in this run without an answer and without a stored call (not
    /// submitted, not followed, or never run): each gets `why`, and its reservation is given
    /// back. Returns their outcomes.
    fn fail<K: AsRef<str>>(
        &self,
        round: &mut Round,
        keys: impl IntoIterator<Item = K>,
        why: &str,
    ) -> Vec<(usize, CallOutcome)> {
        let mut outcomes = Vec::new();
        for key in keys {
            let key = key.as_ref();
            self.release(round, key, 0.0);
            let failed = CallOutcome::Failed {
                call_id: None,
                error: why.to_owned(),
                attempts: 0,
            };
            outcomes.extend(round.spread(key, failed));
        }
        outcomes
    }

    /// The outcomes of batch `row`'s keys in this round, once another run has settled it.
    async fn settled_elsewhere(
        &self,
        round: &mut Round,
        row: &BatchRow,
    ) -> Result<Vec<(usize, CallOutcome)>, StoreError> {
        let keys = self.batch_keys(row.id).await?;
        let mine: Vec<String> = keys
            .iter()
            .filter(|k| round.jobs.contains_key(&k.cache_key))
            .map(|k| k.cache_key.clone())
            .collect();
        self.stored_outcomes(round, row, &mine).await
    }

    /// The outcomes of `keys` of batch `row`, settled before this collect (by an earlier
    /// collect, or by another run collecting it at the same time): their stored answers
    /// (cache hits: nothing is paid again), their stored errors, or, for requests that never
    /// ran, what [`Batcher::unfinished`] does with them.
    async fn stored_outcomes(
        &self,
        round: &mut Round,
        row: &BatchRow,
        keys: &[String],
    ) -> Result<Vec<(usize, CallOutcome)>, StoreError> {
        let (id, wanted) = (row.id, keys.to_vec());
        let (cached, rows) = self
            .db(move |s| {
                let cached = s.cached_calls(wanted.iter().map(String::as_str))?;
                let rows: HashMap<String, crate::store::BatchKeyRow> = s
                    .batch_keys(id)?
                    .into_iter()
                    .map(|k| (k.cache_key.clone(), k))
                    .collect();
                Ok((cached, rows))
            })
            .await?;
        let mut outcomes = Vec::new();
        for key in keys {
            self.release(round, key, 0.0);
            let outcome = match (cached.get(key), rows.get(key)) {
                (Some(call), _) => CallOutcome::Hit(Box::new(call.clone())),
                (None, Some(k)) if k.outcome == KeyOutcome::Failed => CallOutcome::Failed {
                    call_id: k.call_id,
                    error: format!("batch {} answered it with an error", row.id),
                    attempts: 1,
                },
                _ => {
                    let why = "its batch ended without an answer for it";
                    outcomes.extend(self.unfinished(round, row, key, why));
                    continue;
                }
            };
            outcomes.extend(round.spread(key, outcome));
        }
        Ok(outcomes)
    }

    /// `key` of batch `row` never ran (expired, cancelled, or the batch was never created):
    /// when the batch is another run's, this run is the next one, and submits it again
    /// ([`Batcher::resubmit`]); when it is this run's own, it fails with `why` and the next
    /// run submits it.
    fn unfinished(
        &self,
        round: &mut Round,
        row: &BatchRow,
        key: &str,
        why: &str,
    ) -> Vec<(usize, CallOutcome)> {
        if row.run_id != Some(self.run_id) {
            self.release(round, key, 0.0);
            if !round.resubmit.iter().any(|k| k == key) {
                round.resubmit.push(key.to_owned());
            }
            return Vec::new();
        }
        let why = format!("{why}; the next run submits it again");
        self.fail(round, [key], &why)
    }

    /// The keys of batch `id` this round knows.
    async fn keys_of(&self, round: &Round, id: i64) -> Result<Vec<String>, StoreError> {
        Ok(self
            .batch_keys(id)
            .await?
            .into_iter()
            .filter(|k| k.outcome == KeyOutcome::Pending && round.jobs.contains_key(&k.cache_key))
            .map(|k| k.cache_key)
            .collect())
    }

    /// Settles the budget's reservation of `key` (if this run made one) to `actual_usd`.
    fn release(&self, round: &mut Round, key: &str, actual_usd: f64) {
        if let Some(reservation) = round.reserved.remove(key) {
            reservation.settle(actual_usd);
        }
    }

    /// Stores an answer of batch `batch` as an ordinary call at the batch price; `None` when
    /// another run collecting the same batch stored its result first.
    async fn store_answer(
        &self,
        batch: i64,
        job: &CallJob,
        response: crate::llm::ChatResponse,
        latency_ms: f64,
    ) -> Option<CallOutcome> {
        let timing = Timing {
            latency_ms,
            attempts: 1,
        };
        match self
            .recorder
            .batch_answer(batch, job, response, timing)
            .await
        {
            Ok(stored) => stored.map(|call| CallOutcome::Fresh(Box::new(call))),
            Err(e) => Some(CallOutcome::Failed {
                call_id: None,
                error: format!("the batch's answer arrived but could not be stored: {e}"),
                attempts: 1,
            }),
        }
    }

    /// Stores a request of batch `batch` that the provider answered with an error; `None`
    /// when another run collecting the same batch stored its result first.
    async fn store_failure(
        &self,
        batch: i64,
        job: &CallJob,
        failure: &LineFailure,
        latency_ms: f64,
    ) -> Option<CallOutcome> {
        let why = if failure.is_invalid_request() {
            "not retried: the request itself is at fault"
        } else if failure.is_retryable() {
            "the next run sends it again"
        } else {
            "not retried"
        };
        let error = format!("{failure} ({why})");
        let timing = Timing {
            latency_ms,
            attempts: 1,
        };
        let stored = self
            .recorder
            .batch_failure(batch, job, &error, failure.http_status(), timing)
            .await;
        let call_id = match stored {
            Ok(Some(id)) => Some(id),
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!("could not store a batch's failed request: {e}");
                None
            }
        };
        Some(CallOutcome::Failed {
            call_id,
            error,
            attempts: 1,
        })
    }
}

/// Lends what the store keeps of the provider's answer `info` (status, failures, counts, files, results
/// URL, times as the store writes them) to `f`: for `Store::set_batch_submitted` and
/// `Store::record_batch_poll`.
pub fn with_poll<R>(info: &BatchInfo, f: impl FnOnce(&BatchPoll<'_>) -> R) -> R {
    let failures = info.failures_json();
    let expires_at = info.expires_at.map(batch::stored_time);
    let ended_at = info.ended_at.map(batch::stored_time);
    f(&BatchPoll {
        status: info.status.as_str(),
        failures: failures.as_deref(),
        counts: info.counts.into(),
        output_file_id: info.output_file_id.as_deref(),
        error_file_id: info.error_file_id.as_deref(),
        results_url: info.results_url.as_deref(),
        expires_at: expires_at.as_deref(),
        ended_at: ended_at.as_deref(),
    })
}

/// The store's row of a batch's counts.
impl From<BatchCounts> for BatchCountsRow {
    fn from(c: BatchCounts) -> Self {
        Self {
            total: c.total,
            processing: c.processing,
            succeeded: c.succeeded,
            errored: c.errored,
            cancelled: c.cancelled,
            expired: c.expired,
        }
    }
}

/// A batch's counts as the store keeps them.
impl From<BatchCountsRow> for BatchCounts {
    fn from(c: BatchCountsRow) -> Self {
        Self {
            total: c.total,
            processing: c.processing,
            succeeded: c.succeeded,
            errored: c.errored,
            cancelled: c.cancelled,
            expired: c.expired,
        }
    }
}

/// Whether two endpoints are the same provider at the same place with the same key.
fn same_endpoint(a: &Endpoint, b: &Endpoint) -> bool {
    a.provider == b.provider
        && a.base_url == b.base_url
        && a.key_fingerprint() == b.key_fingerprint()
}

/// A stored RFC 3339 time (now when unreadable: the recovery then looks back from now, less
/// the clock skew it allows).
fn parse_time(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).map_or_else(|_| Utc::now(), |t| t.with_timezone(&Utc))
}

/// How long the batch took to answer, in ms: its calls' latency (the wait a batch costs;
/// energy estimates cap generation time by latency, so a long one changes nothing there).
fn turnaround_ms(row: &BatchRow, info: &BatchInfo) -> f64 {
    let start = info
        .created_at
        .or_else(|| row.submitted_at.as_deref().map(parse_time))
        .unwrap_or_else(Utc::now);
    let end = info.ended_at.unwrap_or_else(Utc::now);
    (end - start).num_milliseconds().max(0) as f64
}

/// The progress line's words for a batch: `openai gpt-4o-mini in_progress 40/120`.
fn progress_of(row: &BatchRow, info: &BatchInfo) -> String {
    let c = &info.counts;
    let total = if c.total > 0 {
        c.total
    } else {
        row.request_count
    };
    format!(
        "{} {} {} {}/{}",
        row.provider,
        row.model,
        info.status,
        c.succeeded + c.errored,
        total
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::llm::batch::{BatchFailure, TOKEN_LIMIT_CODE, failures_from_json, from_rfc3339};

    #[test]
    fn what_a_poll_said_is_stored_and_read_back_the_same() {
        let mut store = crate::store::Store::open_in_memory().unwrap();
        let keys = vec![crate::hash::sha256_hex(b"k1")];
        let row = store
            .create_batch(&crate::store::NewBatch {
                run_id: None,
                provider: "openai",
                api: BatchApi::Openai,
                base_url: "https://api.openai.com/v1",
                key_fingerprint: "no-key",
                model: "gpt-4o",
                payload_sha256: "ab",
                payload_bytes: 2,
                keys: &keys,
            })
            .unwrap();
        let ended = DateTime::from_timestamp(1_711_493_133, 0);
        let info = BatchInfo {
            api: BatchApi::Openai,
            id: "batch_1".into(),
            status: BatchStatus::Failed(vec![BatchFailure {
                code: TOKEN_LIMIT_CODE.into(),
                message: "Enqueued token limit reached".into(),
                param: None,
                line: None,
            }]),
            counts: BatchCounts {
                total: 1,
                processing: 1,
                ..BatchCounts::default()
            },
            created_at: None,
            expires_at: ended,
            ended_at: ended,
            metadata: BTreeMap::new(),
            input_file_id: Some("file-1".into()),
            output_file_id: Some("file-2".into()),
            error_file_id: None,
            results_url: None,
        };
        with_poll(&info, |poll| {
            store.set_batch_submitted(row.id, &info.id, poll)
        })
        .unwrap();
        let back = store.batch(row.id).unwrap().unwrap();
        let status = BatchStatus::from_stored(
            back.status.as_deref().unwrap(),
            failures_from_json(back.failures.as_deref()),
        );
        assert_eq!(status, info.status);
        assert!(status.is_token_limit());
        assert_eq!(BatchCounts::from(back.counts), info.counts);
        assert_eq!(back.output_file_id.as_deref(), Some("file-2"));
        assert_eq!(back.ended_at.as_deref(), Some("2024-03-26T22:45:33.000Z"));
        assert_eq!(
            from_rfc3339(back.ended_at.as_deref()),
            info.ended_at,
            "times read back"
        );
    }
}
