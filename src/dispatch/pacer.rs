//! The pacer: sends a call only when its estimated cost fits the provider's rate limits, so
//! that `--concurrency` is a ceiling, not a rate.
//!
//! Per scope (provider, base URL, key fingerprint, model) it keeps continuously refilling
//! buckets of requests and tokens (Anthropic: requests, input and output tokens). They are
//! seeded and corrected from every answer's headers (429s included) and from `rate_limit:` in
//! config.yaml, and live in the store, so runs sharing a database and a key share the pace.
//! A call's tokens are estimated by characters; a refusal that counted a call above its
//! estimate ("Requested 260") raises the estimate of the scope's calls by that much.
//! Until a scope's first answer has told its limits, one call is in flight. A refusal that no
//! wait mends (a spent quota) ends the scope's calls at once.
//!
//! The pacer knows limits and costs; it never sends a call and never writes SQL.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::config::RateLimit;
use crate::llm::ratelimit::{Dimension, RateLimits, Reading};
use crate::llm::{ChatRequest, ChatResponse, Endpoint, Part, ProviderError, Refused};
use crate::store::{BucketRow, PacingRow, Store, lock};

/// The share of a limit the pacer aims at: a little under it, so that jitter between track's
/// clock and the provider's does not cost refusals.
const SAFETY: f64 = 0.97;
/// The burst the pacer allows, in seconds of a limit: providers may enforce a minute's limit
/// over a second ("60 RPM may be enforced as 1 request a second"); half of it leaves room for
/// requests that reach the provider closer together than they left.
const BURST_SECS: f64 = 0.5;
/// The longest single sleep: a waiting call looks at stops and exhausted scopes this often.
const NAP: Duration = Duration::from_millis(250);
/// Tokens an image is paced at (OpenAI's high-detail 1024 x 1024 image: 765).
const IMAGE_TOKENS: u64 = 765;
/// Tokens of a message's framing, besides its text, in Anthropic's input tokens.
const MESSAGE_TOKENS: u64 = 4;
/// How long a note on a wait stays on the progress line after it.
const NOTE_LINGER: Duration = Duration::from_secs(1);
/// How often `-v` logs waits of one scope for one cause: once a call would be 40 lines for 40
/// calls each waiting a moment for the one before.
const LOG_EVERY: Duration = Duration::from_secs(10);
/// How far a rounded count may be from the true one: Anthropic rounds token counts to the
/// nearest thousand.
const ROUNDING: f64 = 500.0;
/// The most a refusal may raise the token estimate by: no tokenizer makes more than a token a
/// byte, and the estimate counts 4 characters a token.
const MAX_TOKEN_SCALE: f64 = 4.0;

/// What a call takes from each bucket, estimated before it is sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    pub requests: f64,
    /// OpenAI's charge at admission: the prompt estimate plus `max_tokens`.
    pub tokens: f64,
    /// Anthropic's input tokens.
    pub input_tokens: f64,
    /// Anthropic's output tokens, held at `max_tokens` until the answer says how many.
    pub output_tokens: f64,
}

impl Cost {
    /// The estimated cost of `request`: ~4 characters a token, images at [`IMAGE_TOKENS`].
    ///
    /// OpenAI's charge at admission (`tokens`) is "the estimated number of tokens based on the
    /// character count" plus `max_tokens`: the text, not a message's framing, which its
    /// tokenizer adds to the bill but its rate limiter does not. Counting 4 tokens a message
    /// there paced a call of 206 tokens as 210, 2 % of the limit left unused. Anthropic's input
    /// tokens are those the model reads, framing included: a few tokens a message there.
    pub fn of(request: &ChatRequest) -> Self {
        let text = request
            .system
            .as_deref()
            .map_or(0, crate::llm::estimate_tokens)
            + request
                .messages
                .iter()
                .flat_map(|m| &m.parts)
                .map(|p| match p {
                    Part::Text(text) => crate::llm::estimate_tokens(text),
                    Part::Image(_) => IMAGE_TOKENS,
                })
                .sum::<u64>()
            + request.tools_bound().div_ceil(4);
        let framing = MESSAGE_TOKENS * request.messages.len() as u64;
        let max_tokens = request.params.max_tokens;
        Self {
            requests: 1.0,
            tokens: (text + u64::from(max_tokens.unwrap_or(0))) as f64,
            input_tokens: (text + framing) as f64,
            output_tokens: f64::from(
                max_tokens.unwrap_or(crate::llm::anthropic::DEFAULT_MAX_TOKENS),
            ),
        }
    }

    fn get(&self, dimension: Dimension) -> f64 {
        match dimension {
            Dimension::Requests => self.requests,
            Dimension::Tokens => self.tokens,
            Dimension::InputTokens => self.input_tokens,
            Dimension::OutputTokens => self.output_tokens,
        }
    }
}

/// Why a call was not sent.
#[derive(Debug, Clone, PartialEq)]
pub enum NotSent {
    /// A stop came while it waited.
    Stopped,
    /// Its scope met a refusal no wait mends: what happened and the fix.
    Exhausted(String),
}

/// Limits set in config.yaml (a model's over its provider's), by (provider, model id).
pub type ConfiguredLimits = HashMap<(String, String), RateLimit>;

/// Where the buckets live: in the database (shared with other processes) or, for a database
/// in memory, here.
enum Buckets {
    Shared(Arc<Mutex<Store>>),
    Local(Mutex<HashMap<String, PacingRow>>),
}

/// The pacer of one run.
pub struct Pacer {
    buckets: Arc<Buckets>,
    configured: ConfiguredLimits,
    scopes: Mutex<HashMap<String, Arc<Scope>>>,
    /// The longest wait a refusal may ask for (the retry policy's `max_delay`).
    max_wait: Duration,
    /// The latest wait, for the progress line.
    note: Mutex<Option<Note>>,
    /// The part of every limit this run may use: 1, or 1/N for a shard of N that shares its
    /// key with the others (`--shard`).
    share: f64,
}

impl Scope {
    /// What a call of `cost` takes of the buckets: its tokens times what refusals have shown
    /// the estimate to fall short by ([`ScopeState::token_scale`]); of the output bucket
    /// `max_tokens`, or, where only the tokens generated count, what answers have used on
    /// average.
    fn charged(&self, cost: Cost) -> Cost {
        let state = lock_state(self);
        let (sum, answers) = state.output_used;
        let output_tokens = match state.output {
            OutputCounting::Generated if answers > 0 => {
                (sum / f64::from(answers)).ceil().min(cost.output_tokens)
            }
            _ => cost.output_tokens,
        };
        Cost {
            tokens: (cost.tokens * state.token_scale.max(1.0)).ceil(),
            output_tokens,
            ..cost
        }
    }

    /// Raises the token estimate of this scope's calls when a refusal says the provider
    /// counted a call estimated at `estimated` tokens as more ("Requested 260" for 210): the
    /// estimate by characters falls short where the provider counts its tokenizer's tokens
    /// and a message's framing. Never lowers it: a refusal counting less tells nothing.
    fn learn_charge(&self, estimated: f64, refused: &Refused) {
        let Some(requested) = refused.requested else {
            return;
        };
        if refused.dimension != Some(Dimension::Tokens) || estimated <= 0.0 {
            return;
        }
        let scale = (requested as f64 / estimated).min(MAX_TOKEN_SCALE);
        let mut state = lock_state(self);
        if scale > state.token_scale.max(1.0) {
            state.token_scale = scale;
            tracing::info!(
                "paced: {}: a call estimated at {estimated:.0} tokens was counted as \
                 {requested}: tokens are paced at {scale:.2} times the estimate",
                self.label
            );
        }
    }

    /// Whether a call of `cost` taken from an output bucket is to stream for its head: the
    /// first of a run, unless a head has told how output is counted already, and only where a
    /// reservation of its size could be told from none.
    fn asks_for_head(&self, cost: &Cost) -> bool {
        if cost.output_tokens <= 2.0 * ROUNDING {
            return false;
        }
        let mut state = lock_state(self);
        let ask = state.output == OutputCounting::Reserved && !state.head_asked;
        state.head_asked |= ask;
        ask
    }
}

/// The latest wait, for the progress line.
struct Note {
    /// The scope and the limit: `openai:gpt-4o 600 RPM`.
    what: String,
    /// When the wait ends, as computed.
    until: Instant,
    /// Whether it is a wait for output reservations to come back, which ends when an answer
    /// does, not at `until`.
    for_reservations: bool,
}

/// One scope: a key's limits for one model at one endpoint.
pub struct Scope {
    /// Its stored name: provider | base URL | key fingerprint | model.
    id: String,
    /// `provider:model`, for messages.
    label: String,
    /// Its limits from config.yaml, times the pacer's share.
    configured: RateLimit,
    /// The part of the limits its headers tell that this run may use.
    share: f64,
    /// Calls wait their turn here, first come first served.
    turnstile: tokio::sync::Mutex<()>,
    state: Mutex<ScopeState>,
    answered: tokio::sync::Notify,
    /// Told when an answer settles its call (an output reservation given back, limits
    /// learned): the call waiting its turn looks again then, not at the end of a wait it
    /// computed before.
    settled: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct ScopeState {
    probe: Probe,
    /// Whether any limit is known (configured, stored, or told by a header).
    limited: bool,
    /// Held after a refusal, for scopes without known limits.
    held_until: Option<Instant>,
    /// Why nothing more is sent.
    exhausted: Option<String>,
    /// Whether the store was asked for limits an earlier run learned ([`Pacer::prepare`]).
    looked_up: bool,
    /// Output tokens reserved by this process's calls in flight: given back when they end.
    reserved_output: f64,
    /// The cause of the last wait logged (`None`: held after a refusal), and when.
    last_logged: Option<(Option<Dimension>, Instant)>,
    /// Whether the provider reserves `max_tokens` of output at admission, as far as a head
    /// has told.
    output: OutputCounting,
    /// Whether a call of this run was asked to stream its answer for a head that tells it.
    head_asked: bool,
    /// Output tokens the answers of this run used, and how many answers: what a call is
    /// expected to use, once the provider is known to count only what is generated.
    output_used: (f64, u32),
    /// What refusals have shown the token estimate to fall short by: the largest of the
    /// provider's count of a call over its estimate (0 until a refusal tells one: read as 1).
    token_scale: f64,
}

/// How a provider counts output tokens against its limit. Anthropic's documentation said in
/// 2025 that `max_tokens` is reserved at admission and adjusted at the end, and in 2026 that
/// only the tokens generated count: the head of a streamed answer, sent at admission, tells
/// which (its remaining output tokens have the request's `max_tokens` taken out, or not).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum OutputCounting {
    /// Not told (or told in a way that does not decide): `max_tokens` is reserved, which is
    /// safe under both readings, and given back when the answer ends.
    #[default]
    Reserved,
    /// A head told more left than a reservation would leave: a call takes what answers have
    /// used on average, settled to what it used when it ends; calls are paced on the tokens
    /// really generated, not on `max_tokens`.
    Generated,
}

/// What `head` tells of how the provider counts output tokens, for a call that would have
/// reserved `reserved` (its `max_tokens`): [`OutputCounting::Generated`] only when the
/// remaining count it tells is more than a reservation could have left of a full bucket
/// (rounding allowed for); `None` when it does not decide.
fn output_counting(head: &RateLimits, reserved: f64) -> Option<OutputCounting> {
    let reading = head
        .readings
        .iter()
        .find(|r| r.dimension == Dimension::OutputTokens)?;
    let remaining = reading.remaining?;
    let slack = if reading.rounded { ROUNDING } else { 0.0 };
    (remaining - slack > reading.limit - reserved).then_some(OutputCounting::Generated)
}

/// Whether the scope's limits have been asked for yet.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Probe {
    /// Nobody asked yet.
    #[default]
    Ahead,
    /// The first call is in flight: the others wait for what its answer tells.
    InFlight,
    /// Known (possibly: no limits).
    Done,
}

/// Leave to send one call, to be given back to [`Pacer::observe`] with its result.
pub struct Permit {
    scope: Arc<Scope>,
    /// Where the scope's buckets live, to give back a reservation if the call never ends.
    buckets: Arc<Buckets>,
    cost: Cost,
    /// Whether this call is the scope's first (its answer teaches the limits).
    probe: bool,
    /// Whether its answer's head is wanted (a first call's, or one telling how output tokens
    /// are counted).
    head: bool,
    /// Whether `cost` was taken from the buckets (its output reservation is to be settled).
    taken: bool,
    /// Whether [`Pacer::observe`] settled it.
    settled: bool,
    /// The call's tokens as estimated ([`Cost::of`]), before [`Scope::charged`] scaled them.
    estimated_tokens: f64,
}

impl Permit {
    /// Whether this call is its scope's first, whose answer teaches the limits.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// Whether the head of this call's answer is wanted before its body ([`Pacer::observe_head`]):
    /// its scope's first call's, or the one a run asks to learn how output tokens are
    /// counted. Such a call streams its answer.
    pub fn wants_head(&self) -> bool {
        self.probe || self.head
    }

    /// Counts this call's output reservation as in flight (for the wait's note).
    fn reserve(&mut self) {
        self.taken = true;
        lock_state(&self.scope).reserved_output += self.cost.output_tokens;
    }

    /// Counts this call's output reservation as no longer in flight.
    fn unreserve(&self) {
        let mut state = lock_state(&self.scope);
        state.reserved_output = (state.reserved_output - self.cost.output_tokens).max(0.0);
    }

    /// Gives back the whole output reservation of a call that never settled, off the async
    /// workers when there are some.
    fn give_back_unsettled(&self) {
        self.unreserve();
        let (buckets, scope, held) = (
            self.buckets.clone(),
            self.scope.id.clone(),
            self.cost.output_tokens,
        );
        let give_back = move || {
            let settle = |row: &mut PacingRow| settle_output(row, held, 0.0, unix_now());
            match &*buckets {
                Buckets::Local(rows) => {
                    let mut rows = rows.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(row) = rows.get_mut(&scope) {
                        settle(row);
                    }
                }
                Buckets::Shared(store) => {
                    if let Err(e) = lock(store).update_pacing(&scope, settle) {
                        tracing::warn!("the pacer could not give back a reservation: {e}");
                    }
                }
            }
        };
        // The database is written off the async workers; buckets in memory at once.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if matches!(*self.buckets, Buckets::Shared(_)) => {
                drop(runtime.spawn_blocking(give_back));
            }
            _ => give_back(),
        }
        self.scope.settled.notify_one();
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        // A call dropped in flight (a stop, a timeout) ends at the provider too: what it
        // reserved for its output goes back, or the next run would start in that debt.
        if self.taken && !self.settled {
            self.give_back_unsettled();
        }
        // A first call that never got an answer (stopped, unreachable) teaches nothing: the
        // others go on without waiting for it.
        if self.probe {
            let mut state = lock_state(&self.scope);
            if state.probe == Probe::InFlight {
                state.probe = Probe::Done;
            }
            drop(state);
            self.scope.answered.notify_waiters();
        }
    }
}

fn lock_state(scope: &Scope) -> std::sync::MutexGuard<'_, ScopeState> {
    scope.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Unix seconds now.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A key's fingerprint: enough to tell keys apart, never enough to use one.
fn fingerprint(endpoint: &Endpoint) -> String {
    endpoint.key_fingerprint()
}

impl Pacer {
    /// A pacer keeping its buckets in `store` when `shared` (a database file other processes
    /// may share), else in memory; `max_wait` caps a refusal's wait.
    pub fn new(
        store: Option<Arc<Mutex<Store>>>,
        configured: ConfiguredLimits,
        max_wait: Duration,
    ) -> Self {
        let buckets = match store {
            Some(store) => Buckets::Shared(store),
            None => Buckets::Local(Mutex::default()),
        };
        Self {
            buckets: Arc::new(buckets),
            configured,
            scopes: Mutex::default(),
            max_wait,
            note: Mutex::default(),
            share: 1.0,
        }
    }

    /// Paces at `share` of every limit (configured or told by headers): a shard of N that
    /// shares its key with the other shards uses 1/N of it.
    pub fn with_share(mut self, share: f64) -> Self {
        if share.is_finite() && share > 0.0 {
            self.share = share.min(1.0);
        }
        self
    }

    /// The scope of calls of `model` at `endpoint` with its key.
    pub fn scope(&self, endpoint: &Endpoint, model: &str) -> Arc<Scope> {
        let id = format!(
            "{}|{}|{}|{model}",
            endpoint.provider,
            endpoint.base_url,
            fingerprint(endpoint)
        );
        let mut scopes = self.scopes.lock().unwrap_or_else(|p| p.into_inner());
        scopes
            .entry(id.clone())
            .or_insert_with(|| {
                let configured = self
                    .configured
                    .get(&(endpoint.provider.clone(), model.to_owned()))
                    .copied()
                    .unwrap_or_default()
                    .scaled(self.share);
                Arc::new(Scope {
                    id,
                    label: format!("{}:{model}", endpoint.provider),
                    configured,
                    share: self.share,
                    turnstile: tokio::sync::Mutex::new(()),
                    state: Mutex::new(ScopeState {
                        limited: !configured.is_empty(),
                        // The user's application has no rate-limit headers to teach: its calls
                        // go at the run's concurrency (and its `rate_limit:`) from the first.
                        probe: if endpoint.kind.is_target() {
                            Probe::Done
                        } else {
                            Probe::Ahead
                        },
                        ..ScopeState::default()
                    }),
                    answered: tokio::sync::Notify::new(),
                    settled: tokio::sync::Notify::new(),
                })
            })
            .clone()
    }

    /// What the pacer is waiting for, for the progress line: `paced: openai:gpt-4o 600 RPM,
    /// next in 0.4 s`.
    pub fn note(&self) -> Option<String> {
        let note = self.note.lock().unwrap_or_else(|p| p.into_inner());
        let note = note.as_ref()?;
        let now = Instant::now();
        if now > note.until + NOTE_LINGER {
            return None;
        }
        let what = &note.what;
        if note.for_reservations {
            return Some(format!(
                "paced: {what}, waiting for reserved output tokens to come back"
            ));
        }
        let left = note.until.saturating_duration_since(now).as_secs_f64();
        Some(format!("paced: {what}, next in {left:.1} s"))
    }

    /// Leave to send a call of `cost` in `scope`, its output reservation counted in flight
    /// when `taken` from the buckets.
    fn permit(
        &self,
        scope: &Arc<Scope>,
        cost: Cost,
        probe: bool,
        taken: bool,
        head: bool,
    ) -> Permit {
        let mut permit = Permit {
            scope: scope.clone(),
            buckets: self.buckets.clone(),
            cost,
            probe,
            head,
            taken: false,
            settled: false,
            estimated_tokens: cost.tokens,
        };
        if taken {
            permit.reserve();
        }
        permit
    }

    /// Waits until a call of `cost` fits `scope`'s limits and takes it from its buckets.
    pub async fn acquire(
        &self,
        scope: &Arc<Scope>,
        cost: Cost,
        stop: &AtomicBool,
    ) -> Result<Permit, NotSent> {
        let estimated_tokens = cost.tokens;
        let permit = |cost, probe, taken, head| {
            let mut permit = self.permit(scope, cost, probe, taken, head);
            permit.estimated_tokens = estimated_tokens;
            permit
        };
        let _turn = scope.turnstile.lock().await;
        if self.await_first_answer(scope, stop).await? {
            // Its head tells how output is counted too.
            lock_state(scope).head_asked = true;
            return Ok(permit(cost, true, false, false));
        }
        // A wait is logged once, not at every look.
        let mut logged = false;
        loop {
            let (limited, held_until) = {
                let state = lock_state(scope);
                if let Some(why) = &state.exhausted {
                    return Err(NotSent::Exhausted(why.clone()));
                }
                (state.limited, state.held_until)
            };
            if stop.load(Ordering::SeqCst) {
                return Err(NotSent::Stopped);
            }
            let cost = scope.charged(cost);
            let wait = if limited {
                let configured = scope.configured;
                let now = unix_now();
                let taken = self
                    .update(&scope.id, move |row| {
                        let output = row
                            .buckets
                            .iter()
                            .any(|b| b.dimension == Dimension::OutputTokens.as_str());
                        (take(row, &configured, &cost, now), output)
                    })
                    .await;
                match taken {
                    Some((Ok(()), output)) => {
                        let head = output && scope.asks_for_head(&cost);
                        return Ok(permit(cost, false, true, head));
                    }
                    Some((Err(wait), _)) => wait,
                    // The buckets cannot be read: sent unpaced (a refusal is retried).
                    None => return Ok(permit(cost, false, false, false)),
                }
            } else {
                match held_until.map(|t| t.saturating_duration_since(Instant::now())) {
                    Some(left) if !left.is_zero() => Wait {
                        wait: left,
                        because: None,
                    },
                    _ => return Ok(permit(cost, false, false, false)),
                }
            };
            self.waiting(scope, &wait, !std::mem::replace(&mut logged, true));
            // An answer settling its call (giving back its output reservation) may let this
            // one go at once: it is looked at again then.
            tokio::select! {
                () = tokio::time::sleep(wait.wait.min(NAP)) => {}
                () = scope.settled.notified() => {}
            }
        }
    }

    /// Looks up the limits an earlier run learned for `scope` before its first call is made,
    /// so that the call need not: in a run starting 128 calls at once, the first call's lookup
    /// waited for the store behind the others' claims, and the whole run behind it.
    pub async fn prepare(&self, scope: &Arc<Scope>) {
        {
            let state = lock_state(scope);
            if state.probe != Probe::Ahead || state.limited || state.looked_up {
                return;
            }
        }
        let known = self
            .update(&scope.id, |row| !row.buckets.is_empty())
            .await
            .unwrap_or(false);
        let mut state = lock_state(scope);
        state.looked_up = true;
        state.limited |= known;
    }

    /// Until the first answer has told `scope`'s limits, one call is in flight: waits while
    /// another call is that one; `true` when this call is to be it (limits unknown, none
    /// learned by an earlier run), `false` once the limits are known or none were told.
    async fn await_first_answer(
        &self,
        scope: &Arc<Scope>,
        stop: &AtomicBool,
    ) -> Result<bool, NotSent> {
        // Until the first answer has told the limits, one call is in flight.
        loop {
            let answered = scope.answered.notified();
            let probe = {
                let state = lock_state(scope);
                if let Some(why) = &state.exhausted {
                    return Err(NotSent::Exhausted(why.clone()));
                }
                (state.probe, state.limited, state.looked_up)
            };
            match probe {
                (Probe::Done, _, _) => return Ok(false),
                (Probe::Ahead, limited, looked_up) => {
                    // An earlier run may have learned them (looked up already, or now).
                    let known = limited
                        || (!looked_up
                            && self
                                .update(&scope.id, |row| !row.buckets.is_empty())
                                .await
                                .unwrap_or(false));
                    let mut state = lock_state(scope);
                    state.limited = known;
                    if known {
                        state.probe = Probe::Done;
                        return Ok(false);
                    }
                    state.probe = Probe::InFlight;
                    return Ok(true);
                }
                (Probe::InFlight, _, _) => {}
            }
            if stop.load(Ordering::SeqCst) {
                return Err(NotSent::Stopped);
            }
            tokio::select! {
                () = answered => {}
                () = tokio::time::sleep(NAP) => {}
            }
        }
    }

    /// Records a wait for the progress line, and in the log (`-v`) when `log`.
    fn waiting(&self, scope: &Scope, wait: &Wait, log: bool) {
        let what = match wait.because {
            Some((dimension, limit)) => format!("{} {limit:.0} {}", scope.label, dimension.unit()),
            None => format!("{} held after a refusal", scope.label),
        };
        let cause = wait.because.map(|(dimension, _)| dimension);
        let now = Instant::now();
        let (reserved, log) = {
            let mut state = lock_state(scope);
            // A cause logged a moment ago is not logged again for every call after it.
            let log = log
                && state
                    .last_logged
                    .is_none_or(|(last, at)| last != cause || now >= at + LOG_EVERY);
            if log {
                state.last_logged = Some((cause, now));
            }
            (state.reserved_output, log)
        };
        // The bucket is in debt for reservations that come back when their answers end, most
        // of them unused: the wait is until then, at most as long as computed.
        let for_reservations = cause == Some(Dimension::OutputTokens) && reserved > 0.0;
        if log {
            let secs = wait.wait.as_secs_f64();
            if for_reservations {
                tracing::info!(
                    "paced: {what}: waiting for answers in flight to give back the {reserved:.0} \
                     output tokens reserved for them, at most {secs:.3} s"
                );
            } else {
                tracing::info!("paced: {what}: waiting {secs:.3} s");
            }
        }
        let mut note = self.note.lock().unwrap_or_else(|p| p.into_inner());
        *note = Some(Note {
            what,
            until: if for_reservations {
                now
            } else {
                now + wait.wait
            },
            for_reservations,
        });
    }

    /// Learns the limits from the head of a streamed answer to a scope's first call, before its
    /// body: the calls waiting for them go as soon as the head is in, not a whole generation
    /// later. The answer itself still goes to [`Pacer::observe`], which then counts the call
    /// as an ordinary one (its cost is in the buckets made here).
    pub async fn observe_head(&self, permit: &mut Permit, limits: Option<RateLimits>) {
        let scope = permit.scope.clone();
        // How output tokens are counted, told by the head of a call that reserved them.
        if let Some(counting) = limits
            .as_ref()
            .and_then(|head| output_counting(head, permit.cost.output_tokens))
        {
            let mut state = lock_state(&scope);
            if state.output != counting {
                tracing::debug!(scope = %scope.label, ?counting, "output tokens counted");
                state.output = counting;
            }
        }
        permit.head = false;
        if !permit.probe {
            return;
        }
        let learned = limits.is_some();
        if learned {
            let lesson = Lesson {
                configured: scope.configured,
                share: scope.share,
                limits,
                refused: None,
                output_held: None,
                probe_cost: Some(permit.cost),
            };
            let now = unix_now();
            // The probe's cost is now in the buckets: its output reservation is settled when
            // its answer ends, as any call's.
            if self
                .update(&scope.id, move |row| lesson.apply(row, now))
                .await
                .unwrap_or(false)
            {
                permit.reserve();
            }
        }
        permit.probe = false;
        {
            let mut state = lock_state(&scope);
            state.limited |= learned;
            if state.probe == Probe::InFlight {
                state.probe = Probe::Done;
                tracing::debug!(scope = %scope.label, limited = state.limited, "first answer's head");
            }
        }
        scope.answered.notify_waiters();
    }

    /// Learns from the answer (or refusal) to a call sent with `permit`: the limits its
    /// headers tell, the output tokens it really used, the wait a refusal asks for, and a
    /// refusal no wait mends.
    pub async fn observe(&self, mut permit: Permit, result: &Result<ChatResponse, ProviderError>) {
        let scope = permit.scope.clone();
        let mut lesson = Lesson {
            configured: scope.configured,
            share: scope.share,
            limits: None,
            refused: None,
            // Given back in full unless the answer says what it used. A first call's is taken
            // and given back in the same lesson, when its limits make the bucket.
            output_held: (permit.taken || permit.probe).then_some((permit.cost.output_tokens, 0.0)),
            probe_cost: permit.probe.then_some(permit.cost),
        };
        match result {
            Ok(answer) => {
                lesson.limits = answer.limits.clone();
                if let Some((_, used)) = &mut lesson.output_held {
                    *used = answer.usage.output_tokens as f64;
                }
                let mut state = lock_state(&scope);
                state.output_used.0 += answer.usage.output_tokens as f64;
                state.output_used.1 += 1;
            }
            Err(ProviderError::Exhausted {
                provider, cause, ..
            }) => {
                let why = format!("{}: {}", scope.label, cause.explain(provider));
                lock_state(&scope).exhausted.get_or_insert(why);
            }
            Err(ProviderError::Http {
                status,
                retry_after,
                limits,
                ..
            }) => {
                let refused = limits.as_deref().cloned().unwrap_or_default();
                lesson.limits = refused.limits.clone();
                if *status == 429 {
                    scope.learn_charge(permit.estimated_tokens, &refused);
                    let wait = refusal_wait(*retry_after, &refused, &permit.cost, self.max_wait);
                    lesson.refused = Some((refused, wait));
                    // A scope without known limits is held here, for the wait asked or a
                    // second.
                    let mut state = lock_state(&scope);
                    if !state.limited && lesson.limits.is_none() {
                        let until = Instant::now() + wait.unwrap_or(Duration::from_secs(1));
                        state.held_until = Some(state.held_until.map_or(until, |t| t.max(until)));
                    }
                }
            }
            // Nothing was generated: what was held for the output goes back.
            Err(_) => {}
        }
        let learned = lesson.limits.is_some();
        let write = learned || lesson.refused.is_some() || lesson.output_held.is_some();
        if write && (learned || lock_state(&scope).limited) {
            let now = unix_now();
            self.update(&scope.id, move |row| lesson.apply(row, now))
                .await;
        }
        if permit.taken {
            permit.unreserve();
        }
        permit.settled = true;
        scope.settled.notify_one();
        {
            let mut state = lock_state(&scope);
            state.limited |= learned;
            if state.probe == Probe::InFlight {
                state.probe = Probe::Done;
                tracing::debug!(scope = %scope.label, limited = state.limited, "first answer");
            }
        }
        scope.answered.notify_waiters();
        drop(permit);
    }

    /// Runs `change` on `scope`'s stored state: in the database off the async workers, or
    /// in memory. `None` when the database fails (logged: the caller paces nothing, and a
    /// call may be refused and retried, never lost).
    async fn update<R: Send + 'static>(
        &self,
        scope: &str,
        change: impl FnOnce(&mut PacingRow) -> R + Send + 'static,
    ) -> Option<R> {
        match &*self.buckets {
            Buckets::Local(rows) => {
                let mut rows = rows.lock().unwrap_or_else(|p| p.into_inner());
                Some(change(rows.entry(scope.to_owned()).or_default()))
            }
            Buckets::Shared(_) => {
                let buckets = self.buckets.clone();
                let scope = scope.to_owned();
                let result = tokio::task::spawn_blocking(move || match &*buckets {
                    Buckets::Shared(store) => lock(store).update_pacing(&scope, change),
                    Buckets::Local(_) => unreachable!("shared buckets"),
                })
                .await;
                match result {
                    Ok(Ok(r)) => Some(r),
                    Ok(Err(e)) => {
                        tracing::warn!("the pacer could not read or write its buckets: {e}");
                        None
                    }
                    Err(e) => {
                        tracing::warn!("the pacer's database task failed: {e}");
                        None
                    }
                }
            }
        }
    }
}

/// How long to wait before a call fits, and the limit that binds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Wait {
    wait: Duration,
    because: Option<(Dimension, f64)>,
}

/// A bucket's rate (per second) and capacity, for a limit per minute.
fn shape(limit_per_min: f64) -> (f64, f64) {
    let rate = limit_per_min * SAFETY / 60.0;
    (rate, (rate * BURST_SECS).max(1.0))
}

/// Refills `bucket` up to `now`.
fn refill(bucket: &mut BucketRow, now: f64) {
    let (rate, capacity) = shape(bucket.limit_per_min);
    let elapsed = (now - bucket.updated_at).max(0.0);
    bucket.level = (bucket.level + elapsed * rate).min(capacity);
    bucket.updated_at = now;
}

/// Takes `cost` from the buckets of `row` if it fits all of them; else how long until it
/// does. Buckets `configured` but not stored yet are added, full.
fn take(row: &mut PacingRow, configured: &RateLimit, cost: &Cost, now: f64) -> Result<(), Wait> {
    for dimension in Dimension::ALL {
        if let Some(limit) = configured.get(dimension)
            && !row
                .buckets
                .iter()
                .any(|b| b.dimension == dimension.as_str())
        {
            row.buckets.push(BucketRow {
                dimension: dimension.as_str().to_owned(),
                limit_per_min: limit,
                level: shape(limit).1,
                updated_at: now,
            });
        }
    }
    if row.blocked_until > now {
        return Err(Wait {
            wait: Duration::from_secs_f64(row.blocked_until - now),
            because: None,
        });
    }
    let mut longest = Wait::default();
    for bucket in &mut row.buckets {
        let Some(dimension) = Dimension::parse(&bucket.dimension) else {
            continue;
        };
        refill(bucket, now);
        let need = cost.get(dimension);
        if need <= 0.0 {
            continue;
        }
        let (rate, capacity) = shape(bucket.limit_per_min);
        // A call larger than the bucket goes when it is full, and leaves it in debt.
        let enough = need.min(capacity);
        if bucket.level < enough {
            let wait = Duration::from_secs_f64(((enough - bucket.level) / rate).max(0.0));
            if wait >= longest.wait {
                longest = Wait {
                    wait,
                    because: Some((dimension, bucket.limit_per_min)),
                };
            }
        }
    }
    if longest.because.is_some() {
        return Err(longest);
    }
    for bucket in &mut row.buckets {
        if let Some(dimension) = Dimension::parse(&bucket.dimension) {
            bucket.level -= cost.get(dimension);
        }
    }
    Ok(())
}

/// How long a refusal asks to wait: `retry-after-ms` or `retry-after`, else the message's
/// "try again in", else the reset of the bucket it ran out of, for this call's cost; capped
/// at `max_wait`. `None` when it says nothing.
fn refusal_wait(
    retry_after: Option<Duration>,
    refused: &Refused,
    cost: &Cost,
    max_wait: Duration,
) -> Option<Duration> {
    let from_reset = || {
        let limits = refused.limits.as_ref()?;
        limits
            .readings
            .iter()
            .filter(|r| refused.dimension.is_none_or(|d| d == r.dimension))
            .filter_map(|r| {
                let (reset, remaining) = (r.reset?, r.remaining?);
                let need = cost.get(r.dimension);
                if remaining >= need {
                    return None;
                }
                // The bucket refills linearly: `reset` brings back `limit - remaining`.
                let missing = (r.limit - remaining).max(1.0);
                Some(reset.mul_f64(((need - remaining) / missing).clamp(0.0, 1.0)))
            })
            .max()
    };
    retry_after
        .or(refused.try_again_in)
        .or_else(from_reset)
        .map(|wait| wait.min(max_wait))
}

/// What one answer teaches a scope's buckets.
struct Lesson {
    configured: RateLimit,
    /// The part of the limits headers tell that the run may use.
    share: f64,
    limits: Option<RateLimits>,
    /// A rate-limit refusal and the wait it asked for.
    refused: Option<(Refused, Option<Duration>)>,
    /// Output tokens held at admission, and those the answer used.
    output_held: Option<(f64, f64)>,
    /// The cost of a scope's first call, sent before any bucket existed.
    probe_cost: Option<Cost>,
}

impl Lesson {
    /// Applies the lesson to a scope's buckets at `now`; `true` when the first call's output
    /// reservation was taken here (to be given back when its answer ends).
    fn apply(self, row: &mut PacingRow, now: f64) -> bool {
        for bucket in &mut row.buckets {
            refill(bucket, now);
        }
        let mut probe_output_taken = false;
        for reading in self.limits.iter().flat_map(|l| &l.readings) {
            let spent = self.learn(row, reading, now);
            probe_output_taken |= reading.dimension == Dimension::OutputTokens && spent > 0.0;
        }
        // The output reserved at admission is settled to what the answer used: a first call's
        // only when it was taken above (its limits made or met the bucket).
        if let Some((held, used)) = self.output_held
            && (self.probe_cost.is_none() || probe_output_taken)
        {
            settle_output(row, held, used, now);
        }
        if let Some((refused, wait)) = self.refused {
            let named = refused.dimension.map(Dimension::as_str);
            let empty: Vec<&str> = refused
                .limits
                .iter()
                .flat_map(|l| &l.readings)
                .filter(|r| r.remaining.is_some_and(|left| left < 1.0))
                .map(|r| r.dimension.as_str())
                .collect();
            for bucket in &mut row.buckets {
                let ran_out = match named {
                    Some(name) => bucket.dimension == name,
                    None => empty.is_empty() || empty.contains(&bucket.dimension.as_str()),
                };
                if ran_out {
                    bucket.level = bucket.level.min(0.0);
                }
            }
            if let Some(wait) = wait {
                row.blocked_until = row.blocked_until.max(now + wait.as_secs_f64());
            }
        }
        probe_output_taken
    }

    /// Makes or corrects `row`'s bucket of what `reading` tells; the first call's cost taken
    /// from it (0 for another call's answer).
    fn learn(&self, row: &mut PacingRow, reading: &Reading, now: f64) -> f64 {
        let told = reading.limit * self.share;
        let limit = self
            .configured
            .get(reading.dimension)
            .map_or(told, |set| set.min(told));
        // What the provider says is left, of which a shard may use its share. It is
        // net of the answered call's own charge: both providers take a request's cost
        // at admission, before the headers of its answer are written (OpenAI's guide
        // shows 59 of 60 requests left on a first answer; Anthropic reserves
        // `max_tokens` of output when the request begins). A rounded count may be
        // `ROUNDING` short of the truth, so it lowers the ledger only when it is
        // below it by more than that.
        let allowance = reading.remaining.map(|r| {
            let slack = if reading.rounded { ROUNDING } else { 0.0 };
            (r + slack) * self.share
        });
        let (_, capacity) = shape(limit);
        let name = reading.dimension.as_str();
        let spent = self.probe_cost.map_or(0.0, |c| c.get(reading.dimension));
        match row.buckets.iter_mut().find(|b| b.dimension == name) {
            Some(bucket) => {
                // Another process taught it first: this scope's first call is not
                // counted in it yet.
                bucket.level -= spent;
                bucket.limit_per_min = limit;
                bucket.level = bucket.level.min(capacity);
                if let Some(allowance) = allowance {
                    bucket.level = bucket.level.min(allowance);
                }
            }
            None => {
                // A new bucket: full, less the call that taught it, by track's own
                // ledger (the provider's remaining may be in a minute's units, hiding
                // a second's burst); at most what the provider says is left, which
                // has that call taken already.
                let ledger = capacity - spent;
                row.buckets.push(BucketRow {
                    dimension: name.to_owned(),
                    limit_per_min: limit,
                    level: allowance.map_or(ledger, |a| a.min(ledger)),
                    updated_at: now,
                });
            }
        }
        spent
    }
}

/// Gives back to `row`'s output bucket the part of a reservation of `held` tokens an answer
/// did not use (`used`): usable at once, as the provider gives it back when the answer ends.
///
/// The `used` tokens count as spent now, when they were generated: the bucket is left at most
/// `used` short of full. Without that, a reservation larger than the bucket (which goes only
/// when the bucket is full) would be refilled from when track sent it, while the provider
/// refills it from when it admitted it, later: the next call would reach the provider before
/// its bucket was full again, by the time the request took to arrive.
fn settle_output(row: &mut PacingRow, held: f64, used: f64, now: f64) {
    if let Some(bucket) = row
        .buckets
        .iter_mut()
        .find(|b| b.dimension == Dimension::OutputTokens.as_str())
    {
        refill(bucket, now);
        let (_, capacity) = shape(bucket.limit_per_min);
        bucket.level = (bucket.level + held - used).min(capacity - used);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ratelimit::Reading;

    fn cost(requests: f64, tokens: f64) -> Cost {
        Cost {
            requests,
            tokens,
            input_tokens: 0.0,
            output_tokens: 0.0,
        }
    }

    fn limits(readings: &[(Dimension, f64, f64)]) -> RateLimits {
        RateLimits {
            readings: readings
                .iter()
                .map(|&(dimension, limit, remaining)| Reading {
                    dimension,
                    limit,
                    remaining: Some(remaining),
                    reset: None,
                    rounded: false,
                })
                .collect(),
        }
    }

    fn lesson(limits: Option<RateLimits>) -> Lesson {
        Lesson {
            configured: RateLimit::default(),
            share: 1.0,
            limits,
            refused: None,
            output_held: None,
            probe_cost: Some(cost(1.0, 0.0)),
        }
    }

    #[test]
    fn a_configured_limit_paces_at_its_rate_after_half_a_second_of_burst() {
        let configured = RateLimit {
            rpm: Some(600.0),
            ..RateLimit::default()
        };
        let mut row = PacingRow::default();
        let one = cost(1.0, 0.0);
        let mut sent = 0;
        while take(&mut row, &configured, &one, 0.0).is_ok() {
            sent += 1;
        }
        assert_eq!(sent, 4, "half a second's burst at 97 %: 4.85 requests");
        let wait = take(&mut row, &configured, &one, 0.0).unwrap_err();
        assert_eq!(wait.because, Some((Dimension::Requests, 600.0)));
        // 0.15 of a request missing at 9.7 a second.
        assert!(
            (wait.wait.as_secs_f64() - 0.15 / 9.7).abs() < 1e-6,
            "{wait:?}"
        );
        // Over 10 s, 97 requests more.
        let mut t = 0.0;
        let mut later = 0;
        while t < 10.0 {
            match take(&mut row, &configured, &one, t) {
                Ok(()) => later += 1,
                Err(w) => t += w.wait.as_secs_f64().max(1e-4),
            }
        }
        assert!((96..=98).contains(&later), "{later}");
    }

    #[test]
    fn headers_teach_a_bucket_less_the_call_that_taught_it() {
        let mut row = PacingRow::default();
        lesson(Some(limits(&[(Dimension::Requests, 600.0, 540.0)]))).apply(&mut row, 0.0);
        let b = &row.buckets[0];
        assert_eq!((b.dimension.as_str(), b.limit_per_min), ("requests", 600.0));
        assert!((b.level - 3.85).abs() < 1e-9, "{}", b.level);
        // A later answer saying less is left than the bucket holds lowers it.
        lesson(Some(limits(&[(Dimension::Requests, 600.0, 2.0)]))).apply(&mut row, 0.0);
        assert_eq!(row.buckets[0].level, 2.0);
        // A configured limit tighter than the header's wins.
        let mut tight = lesson(Some(limits(&[(Dimension::Requests, 600.0, 600.0)])));
        tight.configured.rpm = Some(60.0);
        let mut row = PacingRow::default();
        tight.apply(&mut row, 0.0);
        assert_eq!(row.buckets[0].limit_per_min, 60.0);
    }

    #[test]
    fn a_shard_paces_at_its_share_of_what_headers_and_config_say() {
        let mut row = PacingRow::default();
        let mut shard = lesson(Some(limits(&[(Dimension::Requests, 600.0, 400.0)])));
        shard.share = 0.25;
        shard.apply(&mut row, 0.0);
        let b = &row.buckets[0];
        assert_eq!(b.limit_per_min, 150.0, "a quarter of the key's 600 RPM");
        assert!(
            b.level <= 100.0,
            "a quarter of what is left at most: {}",
            b.level
        );
        let configured = RateLimit {
            rpm: Some(600.0),
            tpm: None,
            itpm: Some(80.0),
            otpm: None,
        };
        assert_eq!(
            configured.scaled(0.5),
            RateLimit {
                rpm: Some(300.0),
                tpm: None,
                itpm: Some(40.0),
                otpm: None
            }
        );
    }

    #[test]
    fn a_large_call_waits_for_a_full_bucket_and_leaves_it_in_debt() {
        let configured = RateLimit {
            tpm: Some(6_000.0),
            ..RateLimit::default()
        };
        let mut row = PacingRow::default();
        // Capacity 48.5 tokens (half a second at 97 a second); a call of 500 goes when full.
        assert!(take(&mut row, &configured, &cost(1.0, 500.0), 0.0).is_ok());
        let wait = take(&mut row, &configured, &cost(1.0, 500.0), 0.0).unwrap_err();
        // 451.5 of debt + 48.5 to fill, at 97 a second.
        assert!(
            (wait.wait.as_secs_f64() - 500.0 / 97.0).abs() < 1e-6,
            "{wait:?}"
        );
    }

    #[test]
    fn a_refusal_empties_its_bucket_and_holds_the_scope() {
        let mut row = PacingRow::default();
        lesson(Some(limits(&[
            (Dimension::Requests, 600.0, 500.0),
            (Dimension::Tokens, 30_000.0, 20_000.0),
        ])))
        .apply(&mut row, 0.0);
        let refused = Refused {
            limits: None,
            dimension: Some(Dimension::Tokens),
            try_again_in: Some(Duration::from_millis(1800)),
            requested: None,
        };
        let wait = refusal_wait(None, &refused, &cost(1.0, 900.0), Duration::from_secs(60));
        assert_eq!(wait, Some(Duration::from_millis(1800)));
        let mut refusal = lesson(None);
        refusal.refused = Some((refused, wait));
        refusal.apply(&mut row, 10.0);
        assert_eq!(row.blocked_until, 11.8);
        let tokens = row
            .buckets
            .iter()
            .find(|b| b.dimension == "tokens")
            .unwrap();
        assert_eq!(tokens.level, 0.0);
        let requests = row
            .buckets
            .iter()
            .find(|b| b.dimension == "requests")
            .unwrap();
        assert!(requests.level > 0.0, "the other bucket is untouched");
        let held = take(&mut row, &RateLimit::default(), &cost(1.0, 1.0), 11.0).unwrap_err();
        assert!((held.wait.as_secs_f64() - 0.8).abs() < 1e-6, "{held:?}");
    }

    #[test]
    fn a_refusal_without_a_wait_asked_waits_for_its_cost_to_refill() {
        let refused = Refused {
            limits: Some(RateLimits {
                readings: vec![Reading {
                    dimension: Dimension::Requests,
                    limit: 600.0,
                    remaining: Some(0.0),
                    reset: Some(Duration::from_secs(60)),
                    rounded: false,
                }],
            }),
            dimension: None,
            try_again_in: None,
            requested: None,
        };
        // The whole minute refills in 60 s: one request in 0.1 s.
        let wait = refusal_wait(None, &refused, &cost(1.0, 0.0), Duration::from_secs(60));
        assert_eq!(wait, Some(Duration::from_millis(100)));
        // retry-after wins, capped.
        let wait = refusal_wait(
            Some(Duration::from_secs(3600)),
            &refused,
            &cost(1.0, 0.0),
            Duration::from_secs(60),
        );
        assert_eq!(wait, Some(Duration::from_secs(60)));
    }

    #[test]
    fn output_tokens_held_at_admission_are_settled_to_those_used() {
        let mut row = PacingRow::default();
        lesson(Some(limits(&[(
            Dimension::OutputTokens,
            60_000.0,
            60_000.0,
        )])))
        .apply(&mut row, 0.0);
        let configured = RateLimit::default();
        let call = Cost {
            requests: 1.0,
            tokens: 0.0,
            input_tokens: 0.0,
            output_tokens: 500.0,
        };
        take(&mut row, &configured, &call, 0.0).unwrap();
        let before = row.buckets[0].level;
        let mut settled = lesson(None);
        settled.probe_cost = None;
        settled.output_held = Some((500.0, 20.0));
        settled.apply(&mut row, 0.0);
        assert!((row.buckets[0].level - (before + 480.0)).abs() < 1e-9);
    }

    #[test]
    fn a_heads_remaining_already_counts_the_call_it_answers() {
        // 60,000 TPM: a bucket of 485 tokens. The first call cost 100 and the head says 200
        // are left, with those 100 taken already: 200, not 100.
        let mut row = PacingRow::default();
        let mut head = lesson(Some(limits(&[(Dimension::Tokens, 60_000.0, 200.0)])));
        head.probe_cost = Some(cost(1.0, 100.0));
        head.apply(&mut row, 0.0);
        assert!(
            (row.buckets[0].level - 200.0).abs() < 1e-9,
            "{:?}",
            row.buckets
        );
        // Plenty left: track's own ledger, full less the call.
        let mut row = PacingRow::default();
        let mut head = lesson(Some(limits(&[(Dimension::Tokens, 60_000.0, 50_000.0)])));
        head.probe_cost = Some(cost(1.0, 100.0));
        head.apply(&mut row, 0.0);
        assert!(
            (row.buckets[0].level - 385.0).abs() < 1e-9,
            "{:?}",
            row.buckets
        );
    }

    #[test]
    fn a_rounded_count_lowers_the_ledger_only_beyond_its_rounding() {
        let rounded = |remaining: f64| RateLimits {
            readings: vec![Reading {
                dimension: Dimension::InputTokens,
                limit: 240_000.0,
                remaining: Some(remaining),
                reset: None,
                rounded: true,
            }],
        };
        // 240,000 ITPM: a bucket of 1,940 tokens, full.
        let configured = RateLimit {
            itpm: Some(240_000.0),
            ..RateLimit::default()
        };
        let mut row = PacingRow::default();
        take(&mut row, &configured, &cost(0.0, 0.0), 0.0).unwrap();
        let full = row.buckets[0].level;
        assert!((full - 1_940.0).abs() < 1e-9);
        // "2000" may be 1,500: no lower than the ledger's 1,940 by more than the rounding.
        let mut told = lesson(Some(rounded(2_000.0)));
        told.probe_cost = None;
        told.apply(&mut row, 0.0);
        assert_eq!(row.buckets[0].level, full);
        // "1000" is at most 1,500: the ledger comes down to that.
        let mut told = lesson(Some(rounded(1_000.0)));
        told.probe_cost = None;
        told.apply(&mut row, 0.0);
        assert_eq!(row.buckets[0].level, 1_500.0);
    }

    /// An Anthropic-style call of `max_tokens` output tokens.
    fn output_call(max_tokens: f64) -> Cost {
        Cost {
            requests: 1.0,
            tokens: 0.0,
            input_tokens: 10.0,
            output_tokens: max_tokens,
        }
    }

    fn answer(output_tokens: u64) -> Result<ChatResponse, ProviderError> {
        Ok(ChatResponse {
            text: "ok".into(),
            usage: crate::llm::Usage {
                input_tokens: 10,
                output_tokens,
                estimated: false,
            },
            finish_reason: None,
            limits: None,
            cost_usd: None,
        })
    }

    fn anthropic() -> Endpoint {
        Endpoint {
            provider: "anthropic".into(),
            kind: crate::llm::ProviderKind::Anthropic,
            base_url: "http://127.0.0.1:9".into(),
            api_key: None,
            basic_auth: None,
        }
    }

    /// `anthropic:claude` limited to 8,000 output tokens a minute in config.yaml.
    fn claude_at_8000_otpm() -> ConfiguredLimits {
        ConfiguredLimits::from([(
            ("anthropic".to_owned(), "claude".to_owned()),
            RateLimit {
                otpm: Some(8_000.0),
                ..RateLimit::default()
            },
        )])
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_call_goes_when_an_answer_gives_back_its_reservation() {
        // 8,000 OTPM: a bucket of 64.7 tokens; a call reserving 4,096 leaves it 31.7 s in
        // debt, of which all but what the answer used comes back when it ends.
        let configured = claude_at_8000_otpm();
        let pacer = Arc::new(Pacer::new(None, configured, Duration::from_secs(60)));
        let scope = pacer.scope(&anthropic(), "claude");
        let stop = Arc::new(AtomicBool::new(false));
        let first = pacer
            .acquire(&scope, output_call(4096.0), &stop)
            .await
            .unwrap();
        let started = tokio::time::Instant::now();
        let second = tokio::spawn({
            let (pacer, scope, stop) = (pacer.clone(), scope.clone(), stop.clone());
            async move {
                let permit = pacer.acquire(&scope, output_call(4096.0), &stop).await;
                (permit.map(|p| p.taken), tokio::time::Instant::now())
            }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            !second.is_finished(),
            "the second call waits for the first's reservation"
        );
        pacer.observe(first, &answer(0)).await;
        let (taken, went) = second.await.unwrap();
        assert_eq!(taken, Ok(true));
        let waited = went - started;
        assert!(
            waited < Duration::from_millis(20),
            "went {waited:?} after the first, not when its reservation came back"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_models_first_call_goes_alone_and_a_targets_do_not() {
        let stop = AtomicBool::new(false);
        let pacer = Pacer::new(None, ConfiguredLimits::default(), Duration::from_secs(60));
        let model = pacer.scope(&anthropic(), "claude");
        let first = pacer.acquire(&model, output_call(10.0), &stop).await;
        assert!(
            first.unwrap().is_probe(),
            "the first call teaches the limits"
        );
        for kind in [
            crate::llm::ProviderKind::Http,
            crate::llm::ProviderKind::Exec,
        ] {
            let target = Endpoint {
                provider: "my-app".into(),
                kind,
                ..anthropic()
            };
            let scope = pacer.scope(&target, "default");
            let first = pacer
                .acquire(&scope, output_call(10.0), &stop)
                .await
                .unwrap();
            assert!(!first.is_probe(), "{kind:?}");
            // The second goes while the first is out, not after it.
            let second = tokio::time::timeout(
                Duration::from_millis(1),
                pacer.acquire(&scope, output_call(10.0), &stop),
            );
            assert!(second.await.is_ok_and(|p| p.is_ok()), "{kind:?}");
            drop(first);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_dropped_in_flight_gives_back_its_reservation() {
        let configured = claude_at_8000_otpm();
        let pacer = Pacer::new(None, configured, Duration::from_secs(60));
        let scope = pacer.scope(&anthropic(), "claude");
        let stop = AtomicBool::new(false);
        let first = pacer
            .acquire(&scope, output_call(4096.0), &stop)
            .await
            .unwrap();
        assert!(lock_state(&scope).reserved_output == 4096.0);
        // Stopped mid-answer: never observed.
        drop(first);
        assert_eq!(lock_state(&scope).reserved_output, 0.0);
        let level = pacer
            .update(&scope.id, |row| row.buckets[0].level)
            .await
            .unwrap();
        assert!(level > 60.0, "the reservation came back: {level}");
    }

    #[test]
    fn a_head_tells_whether_output_tokens_are_reserved_at_admission() {
        let head = |remaining: f64| RateLimits {
            readings: vec![Reading {
                dimension: Dimension::OutputTokens,
                limit: 8_000.0,
                remaining: Some(remaining),
                reset: None,
                rounded: true,
            }],
        };
        // With 4,096 reserved from a full bucket, at most 3,904 ("4000") would be left.
        assert_eq!(
            output_counting(&head(8_000.0), 4_096.0),
            Some(OutputCounting::Generated)
        );
        assert_eq!(
            output_counting(&head(5_000.0), 4_096.0),
            Some(OutputCounting::Generated)
        );
        assert_eq!(output_counting(&head(4_000.0), 4_096.0), None);
        assert_eq!(output_counting(&head(0.0), 4_096.0), None);
        // A reservation within the rounding cannot be told from none.
        assert_eq!(output_counting(&head(8_000.0), 500.0), None);
        // A head without output tokens (OpenAI) tells nothing.
        assert_eq!(
            output_counting(&limits(&[(Dimension::Requests, 60.0, 59.0)]), 4_096.0),
            None
        );
    }

    #[test]
    fn openais_charge_counts_the_characters_and_anthropics_input_a_messages_framing() {
        // As OpenAI's guide (and the mock) charge: ceil(22 / 4) = 6 tokens of text, plus
        // max_tokens; no framing, which paced the bench's calls 2 % under the limit.
        let request = ChatRequest {
            tools: None,
            model: "gpt-4o".into(),
            system: Some("Be brief.".into()),
            messages: vec![crate::llm::Message::user("benchmark question 12")].into(),
            params: crate::llm::SamplingParams {
                max_tokens: Some(200),
                ..crate::llm::SamplingParams::default()
            }
            .into(),
            schema: None,
        };
        let cost = Cost::of(&request);
        // "Be brief." is 3 tokens by characters, the question 6.
        assert_eq!(cost.tokens, 3.0 + 6.0 + 200.0);
        assert_eq!(cost.input_tokens, 3.0 + 6.0 + MESSAGE_TOKENS as f64);
        assert_eq!((cost.requests, cost.output_tokens), (1.0, 200.0));
    }

    #[test]
    fn short_prompts_are_paced_at_97_percent_of_a_token_limit_charged_by_characters() {
        // The bench's second case on a clock of its own: 126,000 TPM, `max_tokens: 200`,
        // prompts of 20 to 22 characters, charged as OpenAI's guide says (characters / 4 plus
        // max_tokens). Each call goes as soon as its cost fits; steady state from second 1.
        let configured = RateLimit {
            tpm: Some(126_000.0),
            ..RateLimit::default()
        };
        let mut row = PacingRow::default();
        let (mut t, mut n, mut charged) = (0.0, 0_usize, 0.0);
        while t < 61.0 {
            let prompt = format!("benchmark question {}", n % 300);
            let request = ChatRequest {
                tools: None,
                model: "gpt-4o".into(),
                system: None,
                messages: vec![crate::llm::Message::user(prompt.clone())].into(),
                params: crate::llm::SamplingParams {
                    max_tokens: Some(200),
                    ..crate::llm::SamplingParams::default()
                }
                .into(),
                schema: None,
            };
            match take(&mut row, &configured, &Cost::of(&request), t) {
                Ok(()) => {
                    if t >= 1.0 {
                        charged += (prompt.len() as f64 / 4.0).ceil() + 200.0;
                    }
                    n += 1;
                }
                Err(wait) => t += wait.wait.as_secs_f64().max(1e-4),
            }
        }
        let share = charged / 126_000.0;
        // 4 tokens a message counted on top paced these calls at 95.1 %.
        assert!((0.965..=0.975).contains(&share), "{share}");
    }

    /// A 429 naming `dimension`, which counted the call as `requested`.
    fn refusal(dimension: Dimension, requested: u64) -> Result<ChatResponse, ProviderError> {
        Err(ProviderError::Http {
            provider: "openai".into(),
            status: 429,
            retry_after: None,
            message: "Rate limit reached".into(),
            limits: Some(Box::new(Refused {
                limits: None,
                dimension: Some(dimension),
                try_again_in: Some(Duration::from_millis(10)),
                requested: Some(requested),
            })),
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_counting_more_tokens_than_estimated_raises_the_estimate() {
        let configured = ConfiguredLimits::from([(
            ("openai".to_owned(), "gpt-4o".to_owned()),
            RateLimit {
                tpm: Some(60_000.0),
                ..RateLimit::default()
            },
        )]);
        let pacer = Pacer::new(None, configured, Duration::from_secs(60));
        let openai = Endpoint {
            provider: "openai".into(),
            kind: crate::llm::ProviderKind::Openai,
            ..anthropic()
        };
        let scope = pacer.scope(&openai, "gpt-4o");
        let stop = AtomicBool::new(false);
        let call = cost(1.0, 210.0);
        assert_eq!(scope.charged(call).tokens, 210.0);
        // The provider counted the call as 260 tokens (its tokenizer, a message's framing),
        // not the 210 estimated by characters.
        let first = pacer.acquire(&scope, call, &stop).await.unwrap();
        pacer.observe(first, &refusal(Dimension::Tokens, 260)).await;
        assert_eq!(scope.charged(call).tokens, 260.0);
        assert_eq!(scope.charged(cost(1.0, 420.0)).tokens, 520.0);
        // A later call, charged 260, counted as 200, or a refusal of requests: nothing lowers.
        let second = pacer.acquire(&scope, call, &stop).await.unwrap();
        assert_eq!(second.cost.tokens, 260.0);
        pacer
            .observe(second, &refusal(Dimension::Tokens, 200))
            .await;
        let third = pacer.acquire(&scope, call, &stop).await.unwrap();
        pacer.observe(third, &refusal(Dimension::Requests, 1)).await;
        assert_eq!(scope.charged(call).tokens, 260.0);
        // At most a token a byte: 4 times the estimate by characters.
        let fourth = pacer.acquire(&scope, call, &stop).await.unwrap();
        pacer
            .observe(fourth, &refusal(Dimension::Tokens, 5_000))
            .await;
        assert_eq!(scope.charged(call).tokens, 840.0);
    }

    #[test]
    fn rate_limits_in_config_must_be_positive() {
        let bad = RateLimit {
            rpm: Some(0.0),
            ..RateLimit::default()
        };
        assert!(bad.check().unwrap_err().contains("rate_limit: rpm"));
        let model = RateLimit {
            rpm: Some(10.0),
            ..RateLimit::default()
        };
        let provider = RateLimit {
            rpm: Some(100.0),
            tpm: Some(1000.0),
            ..RateLimit::default()
        };
        assert_eq!(
            model.over(provider),
            RateLimit {
                rpm: Some(10.0),
                tpm: Some(1000.0),
                ..RateLimit::default()
            }
        );
    }
}
