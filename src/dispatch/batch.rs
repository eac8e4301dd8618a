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
                self.send_live(submitted, round, keys);
                return Ok(());
            }
        };
        self.send_live(submitted, round, &split.oversized);
        for payload in split.payloads {
            let row = match self.store_intent(endpoint, api, &payload).await {
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
                    let hint = no_batch_api_hint(&e, endpoint);
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

    /// Sends `keys` live instead: their budget released, their calls handed to the executor.
    fn send_live(&self, submitted: &mut Submitted, round: &mut Round, keys: &[String]) {
        for key in keys {
            self.release(round, key, 0.0);
            submitted
                .live
                .extend(round.indices.indices(key).iter().copied());
        }
    }

    /// Stores the intent to submit `payload` (its keys taken for the batch) before it is sent.
    async fn store_intent(
        &self,
        endpoint: &Arc<Endpoint>,
        api: BatchApi,
        payload: &batch::Payload,
    ) -> Result<BatchRow, StoreError> {
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
                    // Unknown without a price: a budget refuses such a model before any call.
                    let cost = job
                        .cost_usd(usage.input_tokens, usage.output_tokens)
                        .unwrap_or(f64::INFINITY);
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

/// What to say of a submission refused as if the provider had no batch API (HTTP 404, 405 or
/// 501); nothing otherwise.
fn no_batch_api_hint(e: &StepError, endpoint: &Endpoint) -> String {
    match e {
        StepError::Batch(b) if matches!(b.http_status(), Some(404 | 405 | 501)) => format!(
            " ({} seems to have no batch API: set `batch: off` for it in config.yaml, or run \
             without --batch)",
            endpoint.provider
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::llm::batch::{BatchFailure, TOKEN_LIMIT_CODE, failures_from_json, from_rfc3339};

    /// A small OpenAI Batch API on 127.0.0.1 (files, batches, their content, the listing) and
    /// its live chat completions, speaking the wire format of providers.md section 2. Each
    /// request is answered `answer to <its question>`, billing 10 input and 2 output tokens.
    /// A batch is `in_progress` at its first poll, then ends as the next of
    /// [`Fake::endings`] says (completed with every answer by default).
    mod fake {
        use std::collections::{HashMap, VecDeque};
        use std::sync::{Arc, Mutex};

        use axum::Json;
        use axum::body::Bytes;
        use axum::extract::{Path, State};
        use axum::http::StatusCode;
        use axum::routing::{get, post};
        use serde_json::{Value, json};

        /// How a batch ends.
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub enum Ending {
            /// `completed`, every request answered in the output file.
            Completed,
            /// `expired` once the first `ran` requests ran: the others are `batch_expired`
            /// lines of the error file.
            Expired { ran: usize },
            /// `failed` at validation (`invalid_request` on line 1): no file, nothing run.
            Failed,
            /// `completed`, but the output file holds only the first `present` requests
            /// (no error file names the others).
            Partial { present: usize },
        }

        #[derive(Default)]
        pub struct Books {
            /// Each file's lines (uploaded inputs, written outputs and errors).
            files: HashMap<String, Vec<String>>,
            /// The custom_ids of each uploaded file, in upload order.
            pub uploads: Vec<Vec<String>>,
            /// Each batch object, oldest first.
            batches: Vec<Value>,
            /// Each batch's ending and the custom_ids it holds, by id.
            plans: HashMap<String, (Ending, Vec<(String, String)>)>,
            /// How the next batches end, in creation order (then `Completed`).
            pub endings: VecDeque<Ending>,
            pub creates: usize,
            pub polls: usize,
            pub result_reads: usize,
            /// Listings asked for (looking for a batch whose create was not recorded).
            pub lists: usize,
            /// Live chat completions asked for.
            pub live: usize,
            next: u64,
        }

        pub type Fake = Arc<Mutex<Books>>;

        fn id(state: &mut Books, prefix: &str) -> String {
            state.next += 1;
            format!("{prefix}{}", state.next)
        }

        fn now() -> i64 {
            chrono::Utc::now().timestamp()
        }

        /// The question of a chat completion body (its last message's text).
        fn question(body: &Value) -> String {
            body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_owned()
        }

        fn completion(question: &str) -> Value {
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": now(),
                "model": "gpt-test",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant",
                                         "content": format!("answer to {question}")}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
            })
        }

        async fn upload(State(fake): State<Fake>, body: Bytes) -> Json<Value> {
            // The JSONL part of the multipart body: its lines that carry a custom_id.
            let text = String::from_utf8_lossy(&body);
            let lines: Vec<String> = text
                .split('\n')
                .map(|l| l.trim_end_matches('\r'))
                .filter(|l| {
                    serde_json::from_str::<Value>(l).is_ok_and(|v| v["custom_id"].is_string())
                })
                .map(str::to_owned)
                .collect();
            let mut state = fake.lock().unwrap();
            let file = id(&mut state, "file-");
            let ids = lines
                .iter()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()["custom_id"].to_string())
                .map(|q| q.trim_matches('"').to_owned())
                .collect();
            state.uploads.push(ids);
            let bytes = lines.iter().map(|l| l.len() + 1).sum::<usize>();
            state.files.insert(file.clone(), lines);
            Json(json!({"id": file, "object": "file", "bytes": bytes, "purpose": "batch"}))
        }

        async fn create(
            State(fake): State<Fake>,
            Json(body): Json<Value>,
        ) -> Result<Json<Value>, StatusCode> {
            let mut state = fake.lock().unwrap();
            let file = body["input_file_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let Some(lines) = state.files.get(&file).cloned() else {
                return Err(StatusCode::NOT_FOUND);
            };
            let requests = lines
                .iter()
                .map(|l| {
                    let line: Value = serde_json::from_str(l).unwrap();
                    let key = line["custom_id"].as_str().unwrap().to_owned();
                    (key, question(&line["body"]))
                })
                .collect::<Vec<_>>();
            state.creates += 1;
            let ending = state.endings.pop_front().unwrap_or(Ending::Completed);
            let batch = id(&mut state, "batch_");
            let object = json!({
                "id": batch, "object": "batch", "endpoint": "/v1/chat/completions",
                "errors": null, "input_file_id": file, "completion_window": "24h",
                "status": "validating", "output_file_id": null, "error_file_id": null,
                "created_at": now(), "expires_at": now() + 86_400, "completed_at": null,
                "failed_at": null, "expired_at": null,
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
                "metadata": body["metadata"].clone(),
            });
            state.plans.insert(batch, (ending, requests));
            state.batches.push(object.clone());
            Ok(Json(object))
        }

        /// Ends batch `index` as planned: its status, counts and files.
        fn end(state: &mut Books, index: usize) {
            let batch = state.batches[index]["id"].as_str().unwrap().to_owned();
            let (ending, requests) = state.plans[&batch].clone();
            let line = |(key, question): &(String, String)| {
                json!({"id": "batch_req", "custom_id": key, "error": null,
                       "response": {"status_code": 200, "request_id": "req",
                                    "body": completion(question)}})
                .to_string()
            };
            let expired = |(key, _): &(String, String)| {
                json!({"id": "batch_req", "custom_id": key, "response": null,
                       "error": {"code": "batch_expired",
                                 "message": "This request could not be executed before the \
                                             completion window expired."}})
                .to_string()
            };
            let total = requests.len();
            let (status, output, errors): (&str, Vec<String>, Vec<String>) = match ending {
                Ending::Completed => ("completed", requests.iter().map(line).collect(), vec![]),
                Ending::Expired { ran } => (
                    "expired",
                    requests[..ran].iter().map(line).collect(),
                    requests[ran..].iter().map(expired).collect(),
                ),
                Ending::Partial { present } => (
                    "completed",
                    requests[..present].iter().map(line).collect(),
                    vec![],
                ),
                Ending::Failed => ("failed", vec![], vec![]),
            };
            let mut file = |lines: Vec<String>| -> Value {
                if lines.is_empty() {
                    return Value::Null;
                }
                let file = id(state, "file-");
                state.files.insert(file.clone(), lines);
                json!(file)
            };
            let completed = output.len();
            let (output, errors) = (file(output), file(errors));
            let object = &mut state.batches[index];
            object["status"] = json!(status);
            object["output_file_id"] = output;
            object["error_file_id"] = errors;
            object["request_counts"] = json!({"total": total, "completed": completed,
                                              "failed": 0});
            let at = match ending {
                Ending::Failed => "failed_at",
                Ending::Expired { .. } => "expired_at",
                _ => "completed_at",
            };
            object[at] = json!(now());
            if ending == Ending::Failed {
                object["request_counts"] = json!({"total": 0, "completed": 0, "failed": 0});
                object["errors"] = json!({"object": "list", "data": [{
                    "code": "invalid_request", "message": "Invalid request on line 1.",
                    "param": null, "line": 1}]});
            }
        }

        async fn poll(
            State(fake): State<Fake>,
            Path(batch): Path<String>,
        ) -> Result<Json<Value>, StatusCode> {
            let mut state = fake.lock().unwrap();
            state.polls += 1;
            let Some(index) = state.batches.iter().position(|b| b["id"] == batch) else {
                return Err(StatusCode::NOT_FOUND);
            };
            match state.batches[index]["status"].as_str() {
                Some("validating") => {
                    state.batches[index]["status"] = json!("in_progress");
                    let total = state.plans[&batch].1.len();
                    state.batches[index]["request_counts"] =
                        json!({"total": total, "completed": 0, "failed": 0});
                }
                Some("in_progress") => end(&mut state, index),
                _ => {}
            }
            Ok(Json(state.batches[index].clone()))
        }

        async fn list(State(fake): State<Fake>) -> Json<Value> {
            let mut state = fake.lock().unwrap();
            state.lists += 1;
            let data: Vec<Value> = state.batches.iter().rev().cloned().collect();
            Json(json!({"object": "list", "data": data, "has_more": false}))
        }

        async fn content(
            State(fake): State<Fake>,
            Path(file): Path<String>,
        ) -> Result<String, StatusCode> {
            let mut state = fake.lock().unwrap();
            state.result_reads += 1;
            let lines = state.files.get(&file).ok_or(StatusCode::NOT_FOUND)?;
            Ok(lines.iter().map(|l| format!("{l}\n")).collect())
        }

        async fn chat(State(fake): State<Fake>, Json(body): Json<Value>) -> Json<Value> {
            fake.lock().unwrap().live += 1;
            Json(completion(&question(&body)))
        }

        /// Starts the fake; its base URL (with `/v1`) and its state.
        pub async fn start() -> (String, Fake) {
            let fake = Fake::default();
            let app = axum::Router::new()
                .route("/v1/files", post(upload))
                .route("/v1/files/{id}/content", get(content))
                .route("/v1/batches", post(create).get(list))
                .route("/v1/batches/{id}", get(poll))
                .route("/v1/chat/completions", post(chat))
                .with_state(fake.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            (format!("http://{address}/v1"), fake)
        }
    }

    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};

    use fake::Ending;
    use indicatif::ProgressBar;

    use crate::cost::Price;
    use crate::dispatch::{
        CacheMode, DispatchOptions, Dispatcher, Executor, Route, StageCall, StageCalls, Waiting,
    };
    use crate::llm::{Message, ProviderKind, SamplingParams};
    use crate::store::lock;

    /// The question `question` to the fake at `base_url`.
    fn job(base_url: &str, question: &str) -> CallJob {
        let endpoint = Arc::new(Endpoint {
            provider: "fake".into(),
            kind: ProviderKind::Openai,
            base_url: base_url.into(),
            api_key: None,
            basic_auth: None,
        });
        let request = ChatRequest {
            tools: None,
            model: "gpt-test".into(),
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
            input_per_mtok: 2.0,
            output_per_mtok: 8.0,
        };
        CallJob::new(endpoint, request, 1, price)
    }

    /// How each run dispatches.
    #[derive(Clone, Copy)]
    struct RunAs {
        /// `--batch`.
        batch: bool,
        /// `--detach`: leaves its batches waiting (as a run killed after the submit does).
        detach: bool,
    }

    const BATCH: RunAs = RunAs {
        batch: true,
        detach: false,
    };
    const DETACH: RunAs = RunAs {
        batch: true,
        detach: true,
    };
    /// Without `--batch`: a key waiting in a batch is still followed there.
    const PLAIN: RunAs = RunAs {
        batch: false,
        detach: false,
    };

    /// A new run (a run row of its own, as a new process has) dispatching `jobs` as one stage
    /// through a new dispatcher over `store`: its outcomes by index, and what it left waiting.
    async fn run(
        store: &Arc<Mutex<Store>>,
        jobs: &[CallJob],
        how: RunAs,
    ) -> (Vec<(usize, CallOutcome)>, Option<Waiting>) {
        let client = LlmClient::new(Duration::from_secs(5)).unwrap();
        let writer = Writer::start(store.clone()).unwrap();
        let retry = RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        };
        let executor = Executor::new(
            client.clone(),
            (store.clone(), writer.clone()),
            retry,
            1,
            CacheMode::Use,
        );
        let run_id = lock(store)
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let poll = PollPolicy {
            first: Duration::from_millis(5),
            max: Duration::from_millis(20),
        };
        let batcher = Batcher::new(client, writer, run_id, retry, poll);
        let route = Route {
            reference: "fake:gpt-test".into(),
            blocked: None,
            batch: Some(BatchApi::Openai),
            kind: ProviderKind::Openai,
        };
        let options = DispatchOptions {
            batch: how.batch,
            detach: how.detach,
            stop: Arc::new(AtomicBool::new(false)),
            progress: ProgressBar::hidden(),
            notes: Arc::new(|note: &str| panic!("no note expected: {note}")),
        };
        let mut dispatcher = Dispatcher::new(
            store.clone(),
            (Arc::new(executor), batcher),
            vec![route],
            options,
        );
        let stage = StageCalls {
            name: "answers",
            calls: jobs
                .iter()
                .map(|job| StageCall {
                    job,
                    target: 0,
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
        let waiting = tokio::time::timeout(
            Duration::from_secs(20),
            dispatcher.dispatch(&stage, &cached, &mut record),
        )
        .await
        .expect("the stage is dispatched within 20 s")
        .unwrap();
        outcomes.sort_by_key(|(i, _)| *i);
        (outcomes, waiting)
    }

    /// Every stored call: its key, its answer's text (none for an error) and its batch.
    fn calls(store: &Arc<Mutex<Store>>) -> Vec<(String, Option<String>, Option<i64>)> {
        let store = lock(store);
        let mut stmt = store
            .conn()
            .prepare(
                "SELECT c.cache_key, b.content, c.batch FROM calls c
                 LEFT JOIN blobs b ON b.sha256 = c.response_sha256 ORDER BY c.id",
            )
            .unwrap();
        stmt.query_map([], |r| {
            let text: Option<Vec<u8>> = r.get(1)?;
            Ok((
                r.get(0)?,
                text.map(|t| String::from_utf8(t).unwrap()),
                r.get(2)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    /// Every stored batch, oldest first: its state, and each key's outcome in payload order.
    fn batches(store: &Arc<Mutex<Store>>) -> Vec<(BatchState, Vec<(String, KeyOutcome)>)> {
        let store = lock(store);
        let ids: Vec<i64> = store
            .conn()
            .prepare("SELECT id FROM batches ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        ids.into_iter()
            .map(|id| {
                let row = store.batch(id).unwrap().unwrap();
                let keys = store
                    .batch_keys(id)
                    .unwrap()
                    .into_iter()
                    .map(|k| (k.cache_key, k.outcome))
                    .collect();
                (row.state, keys)
            })
            .collect()
    }

    fn key(job: &CallJob) -> String {
        job.canonical.key.to_string()
    }

    /// The fresh answer's text of `outcome`, or what it is instead.
    fn fresh(outcome: &CallOutcome) -> &str {
        match outcome {
            CallOutcome::Fresh(call) => &call.text,
            other => panic!("not a fresh answer: {other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_a_run_left_is_followed_by_the_next_run_and_recorded_once() {
        let (base_url, fake) = fake::start().await;
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let twice = job(&base_url, "2 + 2?");
        let jobs = [twice.clone(), job(&base_url, "3 + 1?"), twice];
        // The first run submits, then leaves (as a run killed after the submit does).
        let (outcomes, waiting) = run(&store, &jobs, DETACH).await;
        assert!(outcomes.is_empty(), "nothing answered yet: {outcomes:?}");
        assert_eq!(waiting.map(|w| w.batches), Some(1));
        assert_eq!(
            batches(&store),
            [(
                BatchState::Submitted,
                vec![
                    (key(&jobs[0]), KeyOutcome::Pending),
                    (key(&jobs[1]), KeyOutcome::Pending)
                ]
            )],
            "one batch, each key once, stored as waiting"
        );
        assert!(calls(&store).is_empty());
        // The next run, without --batch, finds the batch, follows it to its end and records it.
        let (outcomes, waiting) = run(&store, &jobs, PLAIN).await;
        assert_eq!(waiting, None);
        assert_eq!(outcomes.len(), 3);
        assert_eq!(fresh(&outcomes[0].1), "answer to 2 + 2?");
        assert_eq!(fresh(&outcomes[1].1), "answer to 3 + 1?");
        assert!(
            matches!(&outcomes[2].1, CallOutcome::Hit(c) if Some(&**c) == outcomes[0].1.call()),
            "the twin gets a hit of the same answer: {:?}",
            outcomes[2].1
        );
        {
            let fake = fake.lock().unwrap();
            assert_eq!(
                (fake.uploads.len(), fake.creates),
                (1, 1),
                "nothing submitted again"
            );
            assert_eq!(fake.live, 0, "no live call for keys waiting in a batch");
            assert!(fake.polls >= 2, "followed to its end: {} polls", fake.polls);
        }
        let batch = lock(&store)
            .conn()
            .query_row("SELECT id FROM batches", [], |r| r.get(0));
        let batch: i64 = batch.unwrap();
        assert_eq!(
            calls(&store),
            [
                (key(&jobs[0]), Some("answer to 2 + 2?".into()), Some(batch)),
                (key(&jobs[1]), Some("answer to 3 + 1?".into()), Some(batch)),
            ],
            "each result stored once, as the batch's"
        );
        assert_eq!(
            batches(&store),
            [(
                BatchState::Collected,
                vec![
                    (key(&jobs[0]), KeyOutcome::Answered),
                    (key(&jobs[1]), KeyOutcome::Answered)
                ]
            )]
        );
        // A third run is served from the cache: nothing asked of the provider, nothing stored.
        let polls = fake.lock().unwrap().polls;
        let (outcomes, _) = run(&store, &jobs, BATCH).await;
        assert!(
            outcomes
                .iter()
                .all(|(_, o)| matches!(o, CallOutcome::Hit(_)))
        );
        let fake = fake.lock().unwrap();
        assert_eq!((fake.creates, fake.polls, fake.live), (1, polls, 0));
        assert_eq!(calls(&store).len(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_run_that_collects_an_earlier_runs_expired_batch_resubmits_only_what_never_ran() {
        let (base_url, fake) = fake::start().await;
        fake.lock().unwrap().endings = [Ending::Expired { ran: 1 }].into();
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let jobs = [job(&base_url, "ran"), job(&base_url, "expired")];
        let (_, waiting) = run(&store, &jobs, DETACH).await;
        assert!(waiting.is_some());
        let (outcomes, waiting) = run(&store, &jobs, PLAIN).await;
        assert_eq!(waiting, None);
        // What ran is kept; what expired is submitted again by this run, at once, alone.
        assert_eq!(fresh(&outcomes[0].1), "answer to ran");
        assert_eq!(fresh(&outcomes[1].1), "answer to expired");
        let fake = fake.lock().unwrap();
        assert_eq!(
            fake.uploads,
            [vec![key(&jobs[0]), key(&jobs[1])], vec![key(&jobs[1])]],
            "the answered key is not paid twice"
        );
        assert_eq!((fake.creates, fake.live), (2, 0));
        let stored = calls(&store);
        assert_eq!(stored.len(), 2, "one call each: {stored:?}");
        assert_eq!(
            batches(&store),
            [
                (
                    BatchState::Collected,
                    vec![
                        (key(&jobs[0]), KeyOutcome::Answered),
                        (key(&jobs[1]), KeyOutcome::Unfinished)
                    ]
                ),
                (
                    BatchState::Collected,
                    vec![(key(&jobs[1]), KeyOutcome::Answered)]
                ),
            ]
        );
        assert_eq!((stored[0].0.clone(), stored[0].2), (key(&jobs[0]), Some(1)));
        assert_eq!((stored[1].0.clone(), stored[1].2), (key(&jobs[1]), Some(2)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_runs_own_expired_batch_keeps_what_ran_and_leaves_the_rest_to_the_next_run() {
        let (base_url, fake) = fake::start().await;
        fake.lock().unwrap().endings = [Ending::Expired { ran: 1 }].into();
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let jobs = [job(&base_url, "ran"), job(&base_url, "expired")];
        let (outcomes, waiting) = run(&store, &jobs, BATCH).await;
        assert_eq!(waiting, None);
        assert_eq!(fresh(&outcomes[0].1), "answer to ran");
        match &outcomes[1].1 {
            CallOutcome::Failed {
                call_id: None,
                error,
                ..
            } => assert!(
                error.contains("expired") && error.ends_with("the next run submits it again"),
                "{error}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            fake.lock().unwrap().creates,
            1,
            "not submitted again in this run"
        );
        assert_eq!(calls(&store).len(), 1, "no call stored for what never ran");
        // The next run is served what ran and submits only what did not.
        let (outcomes, _) = run(&store, &jobs, BATCH).await;
        assert!(matches!(outcomes[0].1, CallOutcome::Hit(_)));
        assert_eq!(fresh(&outcomes[1].1), "answer to expired");
        let fake = fake.lock().unwrap();
        assert_eq!(
            fake.uploads[1],
            [key(&jobs[1])],
            "the answered key is not paid twice"
        );
        assert_eq!((fake.creates, fake.live), (2, 0));
        assert_eq!(calls(&store).len(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_batch_stores_nothing_and_the_next_run_submits_it_again_once() {
        let (base_url, fake) = fake::start().await;
        fake.lock().unwrap().endings = [Ending::Failed].into();
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let jobs = [job(&base_url, "one"), job(&base_url, "two")];
        let (outcomes, waiting) = run(&store, &jobs, BATCH).await;
        assert_eq!(waiting, None);
        assert_eq!(outcomes.len(), 2);
        for (_, outcome) in &outcomes {
            match outcome {
                CallOutcome::Failed {
                    call_id: None,
                    error,
                    attempts: 0,
                } => assert!(
                    error.contains("refused batch") && error.contains("invalid_request"),
                    "the refusal is named with its code: {error}"
                ),
                other => panic!("{other:?}"),
            }
        }
        assert!(calls(&store).is_empty(), "nothing stored, nothing billed");
        assert_eq!(
            batches(&store),
            [(
                BatchState::Void,
                vec![
                    (key(&jobs[0]), KeyOutcome::Unfinished),
                    (key(&jobs[1]), KeyOutcome::Unfinished)
                ]
            )]
        );
        assert_eq!(
            fake.lock().unwrap().result_reads,
            0,
            "a failed batch has no results"
        );
        // The next run submits both again, in one new batch, and records them once.
        let (outcomes, _) = run(&store, &jobs, BATCH).await;
        assert_eq!(fresh(&outcomes[0].1), "answer to one");
        assert_eq!(fresh(&outcomes[1].1), "answer to two");
        let fake = fake.lock().unwrap();
        assert_eq!((fake.creates, fake.live), (2, 0));
        assert_eq!(calls(&store).len(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_partial_output_file_records_what_it_holds_and_the_missing_are_sent_again() {
        let (base_url, fake) = fake::start().await;
        fake.lock().unwrap().endings = [Ending::Partial { present: 1 }].into();
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let jobs = [job(&base_url, "present"), job(&base_url, "missing")];
        let (outcomes, waiting) = run(&store, &jobs, BATCH).await;
        assert_eq!(waiting, None);
        assert_eq!(fresh(&outcomes[0].1), "answer to present");
        match &outcomes[1].1 {
            CallOutcome::Failed {
                call_id: None,
                error,
                ..
            } => assert!(
                error.contains("ended without a result for this request")
                    && error.ends_with("the next run submits it again"),
                "{error}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            batches(&store),
            [(
                BatchState::Collected,
                vec![
                    (key(&jobs[0]), KeyOutcome::Answered),
                    (key(&jobs[1]), KeyOutcome::Unfinished)
                ]
            )]
        );
        assert_eq!(calls(&store).len(), 1);
        // The next run submits only the missing one.
        let (outcomes, _) = run(&store, &jobs, BATCH).await;
        assert!(matches!(outcomes[0].1, CallOutcome::Hit(_)));
        assert_eq!(fresh(&outcomes[1].1), "answer to missing");
        let fake = fake.lock().unwrap();
        assert_eq!(fake.uploads[1], [key(&jobs[1])]);
        assert_eq!((fake.creates, fake.live), (2, 0));
        assert_eq!(calls(&store).len(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_created_but_not_recorded_is_found_by_its_tag_and_never_created_twice() {
        let (base_url, fake) = fake::start().await;
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let jobs = [job(&base_url, "one"), job(&base_url, "two")];
        run(&store, &jobs, DETACH).await;
        // As if the run was killed after the provider created the batch, before its id was
        // stored: the row is left uploaded (its file id kept), with no batch id.
        lock(&store)
            .conn()
            .execute(
                "UPDATE batches SET state = 'uploaded', batch_id = NULL, submitted_at = NULL,
                    status = NULL",
                [],
            )
            .unwrap();
        let (outcomes, waiting) = run(&store, &jobs, PLAIN).await;
        assert_eq!(waiting, None);
        assert_eq!(fresh(&outcomes[0].1), "answer to one");
        assert_eq!(fresh(&outcomes[1].1), "answer to two");
        let fake = fake.lock().unwrap();
        assert!(fake.lists >= 1, "looked for in the listing");
        assert_eq!(
            (fake.uploads.len(), fake.creates, fake.live),
            (1, 1, 0),
            "found, not created again"
        );
        let row = lock(&store).batch(1).unwrap().unwrap();
        assert_eq!(row.batch_id.as_deref(), Some("batch_2"), "adopted");
        assert_eq!(calls(&store).len(), 2);
        assert_eq!(
            batches(&store),
            [(
                BatchState::Collected,
                vec![
                    (key(&jobs[0]), KeyOutcome::Answered),
                    (key(&jobs[1]), KeyOutcome::Answered)
                ]
            )]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_intent_a_dead_run_left_unuploaded_is_given_up_and_its_keys_submitted() {
        let (base_url, fake) = fake::start().await;
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let jobs = [job(&base_url, "one"), job(&base_url, "two")];
        // A run stored the intent and died before its upload was recorded: an OpenAI batch
        // is created only from a stored file id, so this one never was.
        {
            let mut store = lock(&store);
            let dead = store
                .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
                .unwrap();
            let keys: Vec<String> = jobs.iter().map(key).collect();
            store
                .create_batch(&NewBatch {
                    run_id: Some(dead),
                    provider: "fake",
                    api: BatchApi::Openai,
                    base_url: &base_url,
                    key_fingerprint: &jobs[0].endpoint.key_fingerprint(),
                    model: "gpt-test",
                    payload_sha256: "ab",
                    payload_bytes: 2,
                    keys: &keys,
                })
                .unwrap();
        }
        let (outcomes, waiting) = run(&store, &jobs, BATCH).await;
        assert_eq!(waiting, None);
        assert_eq!(fresh(&outcomes[0].1), "answer to one");
        assert_eq!(fresh(&outcomes[1].1), "answer to two");
        let fake = fake.lock().unwrap();
        assert_eq!((fake.creates, fake.live), (1, 0), "submitted once, now");
        let stored = batches(&store);
        assert_eq!(stored.len(), 2);
        assert_eq!(stored[0].0, BatchState::Void, "the intent is given up");
        assert!(
            stored[0]
                .1
                .iter()
                .all(|(_, o)| *o == KeyOutcome::Unfinished)
        );
        assert_eq!(stored[1].0, BatchState::Collected);
        assert_eq!(calls(&store).len(), 2);
    }

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
