//! The mock provider's batch APIs, on the same server and base URLs as its live formats:
//! OpenAI's files (multipart upload, objects, content) and batches (create, get, list with
//! the metadata echoed, cancel), and Anthropic's message batches (create, get, list, cancel,
//! results at the `results_url` each ended batch gives).
//!
//! Behaviour, on a clock the test controls ([`BatchControl::advance`], or
//! [`BatchControl::set_speed`] mock seconds a real second; real time by default):
//! * Each request of a batch is answered when the batch is created, by the live mock's own
//!   answer logic (rules, structured output, usage) with the body the line carries, so a
//!   batch's answers are what live calls of the same bodies get. Those answers are not logged
//!   as chat requests, not rate limited and not billed when computed.
//! * OpenAI: `validating` for [`BatchTimings::validating`] (then `failed` with `errors.data`
//!   of line and code when the file is bad: a line that is not JSON, a custom_id missing or
//!   repeated, another method, URL or model), `in_progress` for
//!   [`BatchTimings::in_progress`] with the requests done evenly over it in a shuffled order
//!   (`request_counts` move), `finalizing`, then `completed` with an output file (answered
//!   requests) and an error file (the others), each in the order the requests were done.
//!   Anthropic: `in_progress` (every request counted `processing`) until it `ended`; its
//!   results are at `results_url`, on a path of the mock's own: a client that builds the
//!   documented path gets a 404.
//! * A batch whose requests are not all done when its window ([`BatchTimings::window`], 24 h)
//!   closes is `expired` (Anthropic: `ended` with `expired` results): done requests keep
//!   their answers, the rest are `batch_expired` / `expired`. Cancel: `cancelling` /
//!   `canceling` for [`BatchTimings::cancelling`], then `cancelled` / `ended`, done requests
//!   kept, the rest `batch_cancelled` / `canceled`.
//! * A request is billed (half price, in the mock's ledger and in [`BatchControl::bills`])
//!   once it is done with an answer: never when it errored, expired, was cancelled, or its
//!   batch failed. Billing settles whenever the mock is asked anything of batches, and at
//!   every [`BatchControl::advance`] or [`BatchControl::settle`].
//! * Queued tokens ([`BatchControl::set_token_limit`]): OpenAI's `token_limit_exceeded`,
//!   either at create (HTTP 400) or as a `failed` batch. Faults ([`BatchControl::fault`]): a
//!   step answers an error status without doing anything, or does its work and loses its
//!   answer (the connection drops), as a crash or a timeout would have it.
//! * Batches and files belong to the key that made them: another key neither lists nor reads
//!   them.
//! * Requests to the batch endpoints are logged (`MockProvider::requests`), counted in flight
//!   and held by a `Hold` like any other; the requests inside a batch are not. The batch
//!   clock is its own, apart from the rate limiter's manual clock (`MockConfig::manual_clock`).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::{
    Format, LedgerEntry, MockProvider, Outcome, Shared, civil, default_error_message,
    error_response, json_response, lock, openai_token_charge, raw_response, truncated_response,
};

/// The endpoint batches of chat completions name.
const CHAT_ENDPOINT: &str = "/v1/chat/completions";
/// Where the mock serves Anthropic's results (not the documented path: follow, never build).
const RESULTS_PREFIX: &str = "/mock-batch-results/";
const RESULTS_SEGMENT: &str = "mock-batch-results";
/// OpenAI: lines of a file, bytes of an upload. Anthropic: requests, bytes of a create.
const OPENAI_MAX_LINES: usize = 50_000;
const OPENAI_MAX_BYTES: usize = 200_000_000;
const ANTHROPIC_MAX_REQUESTS: usize = 100_000;
const ANTHROPIC_MAX_BYTES: usize = 256_000_000;

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/// How long each phase of a batch lasts, in mock time. A batch keeps the timings in force
/// when it was created.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchTimings {
    /// OpenAI's `validating` (Anthropic has none).
    pub validating: Duration,
    /// `in_progress`: the requests are done evenly over it, in a shuffled order.
    pub in_progress: Duration,
    /// OpenAI's `finalizing` (Anthropic: still `in_progress`).
    pub finalizing: Duration,
    /// `cancelling` / `canceling` after a cancel.
    pub cancelling: Duration,
    /// The completion window from creation: what is not done by then expires.
    pub window: Duration,
}

impl Default for BatchTimings {
    /// 20 s validating, 5 min in progress, 20 s finalizing, 30 s cancelling, a 24 h window.
    fn default() -> Self {
        Self {
            validating: Duration::from_secs(20),
            in_progress: Duration::from_secs(300),
            finalizing: Duration::from_secs(20),
            cancelling: Duration::from_secs(30),
            window: Duration::from_secs(24 * 3600),
        }
    }
}

/// How OpenAI refuses a batch that would queue more tokens than its limit (both are seen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenLimitForm {
    /// HTTP 400 `token_limit_exceeded` at create: no batch.
    AtCreate,
    /// The batch is created, then `failed` with a `token_limit_exceeded` error.
    Failed,
}

/// A step of the batch APIs, for faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchStep {
    /// OpenAI's `POST /v1/files`.
    Upload,
    /// `POST /v1/batches`, `POST /v1/messages/batches`.
    Create,
    /// Getting one batch (a poll).
    Get,
    /// Listing batches.
    List,
    /// Cancelling a batch.
    Cancel,
    /// Reading results: OpenAI's file content, Anthropic's `results_url`.
    Results,
}

/// What a fault does to its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchFault {
    /// Answer this status (with a provider-shaped body) and do nothing.
    Status(u16),
    /// Do the step's work (upload the file, create the batch…), then drop the connection
    /// halfway through the answer.
    LoseAnswer,
}

/// A batch as the mock holds it, for tests.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchView {
    /// The provider's id (`batch_mock…`, `msgbatch_mock…`).
    pub id: String,
    /// `true` for Anthropic's message batches.
    pub anthropic: bool,
    /// The key that made it.
    pub key: String,
    /// The model of its first request.
    pub model: String,
    /// The status the API gives now (`processing_status` for Anthropic).
    pub status: String,
    /// Its requests' custom_ids, in input order.
    pub custom_ids: Vec<String>,
    /// OpenAI: the metadata given at creation.
    pub metadata: Value,
    /// Mock time of its creation.
    pub created: Duration,
}

/// One request of a batch billed by the mock.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchBill {
    pub batch_id: String,
    pub custom_id: String,
    pub key: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Half of `MockConfig::prices`.
    pub usd: f64,
}

/// One request accepted into a batch (it runs, or would have before an expiry or cancel).
#[derive(Debug, Clone, PartialEq)]
pub struct SubmittedLine {
    pub batch_id: String,
    pub custom_id: String,
    pub model: String,
    /// The body it carries (OpenAI's `body`, Anthropic's `params`).
    pub body: Value,
}

impl MockProvider {
    /// The batch APIs' clock, settings, faults and records.
    pub fn batches(&self) -> BatchControl<'_> {
        BatchControl {
            shared: &self.shared,
        }
    }
}

/// Controls and records of the mock's batch APIs.
pub struct BatchControl<'a> {
    shared: &'a Shared,
}

impl BatchControl<'_> {
    /// Moves the mock clock forward by `by`, then settles (bills what got done).
    pub fn advance(&self, by: Duration) {
        self.with(|s| s.clock.advance(by.as_secs_f64()));
        self.settle();
    }

    /// Runs the clock at `factor` mock seconds a real second from now on (1 by default; 0
    /// stops it: only [`BatchControl::advance`] moves it).
    pub fn set_speed(&self, factor: f64) {
        self.with(|s| s.clock.set_speed(factor));
    }

    /// Mock time since the mock started.
    pub fn now(&self) -> Duration {
        Duration::from_secs_f64(self.with(|s| s.clock.now()).max(0.0))
    }

    /// The timings of batches created from now on.
    pub fn set_timings(&self, timings: BatchTimings) {
        self.with(|s| s.timings = timings);
    }

    /// Caps the tokens (OpenAI's admission charge of every request) a key may have queued in
    /// unfinished OpenAI batches of `model`; a batch that would go over is refused as `form`
    /// says.
    pub fn set_token_limit(&self, model: &str, tokens: u64, form: TokenLimitForm) {
        self.with(|s| {
            s.token_limits.retain(|(m, _, _)| m != model);
            s.token_limits.push((model.to_owned(), tokens, form));
        });
    }

    /// The next `times` requests of `step` meet `fault`.
    pub fn fault(&self, step: BatchStep, fault: BatchFault, times: usize) {
        self.with(|s| s.faults.push((step, fault, times)));
    }

    /// Every batch, oldest first.
    pub fn list(&self) -> Vec<BatchView> {
        self.settle();
        self.with(|s| {
            let now = s.clock.now();
            s.batches.iter().map(|b| b.view(now)).collect()
        })
    }

    /// Every request accepted into a batch, batch by batch, in input order.
    pub fn submitted(&self) -> Vec<SubmittedLine> {
        self.with(|s| {
            s.batches
                .iter()
                .filter(|b| b.failures.is_empty())
                .flat_map(|b| {
                    b.lines.iter().map(|l| SubmittedLine {
                        batch_id: b.id.clone(),
                        custom_id: l.custom_id.clone(),
                        model: l.model.clone(),
                        body: l.body.clone(),
                    })
                })
                .collect()
        })
    }

    /// Every request billed so far, in the order billed.
    pub fn bills(&self) -> Vec<BatchBill> {
        self.settle();
        self.with(|s| s.bills.clone())
    }

    /// USD billed for batches so far (also in `MockProvider::billed_usd`, with live calls).
    pub fn billed_usd(&self) -> f64 {
        self.bills().iter().map(|b| b.usd).sum()
    }

    /// Bills the requests done by now and writes the files of batches that ended.
    pub fn settle(&self) {
        settle(self.shared);
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut lock(&self.shared.batches.state))
    }
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

/// The batch APIs' state, in the mock's `Shared`.
#[derive(Default)]
pub struct Batches {
    state: Mutex<State>,
}

struct State {
    clock: Clock,
    timings: BatchTimings,
    token_limits: Vec<(String, u64, TokenLimitForm)>,
    faults: Vec<(BatchStep, BatchFault, usize)>,
    files: Vec<File>,
    batches: Vec<Batch>,
    next_id: u64,
    bills: Vec<BatchBill>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            clock: Clock::default(),
            timings: BatchTimings::default(),
            token_limits: Vec::new(),
            faults: Vec::new(),
            files: Vec::new(),
            batches: Vec::new(),
            next_id: 1,
            bills: Vec::new(),
        }
    }
}

impl State {
    fn next(&mut self) -> u64 {
        let n = self.next_id;
        self.next_id += 1;
        n
    }

    /// Takes one use of the first fault of `step`, if any.
    fn take_fault(&mut self, step: BatchStep) -> Option<BatchFault> {
        let slot = self
            .faults
            .iter_mut()
            .find(|(s, _, left)| *s == step && *left > 0)?;
        slot.2 -= 1;
        Some(slot.1)
    }
}

/// Mock time: seconds since the mock started, at `speed` mock seconds a real second, plus
/// whatever [`BatchControl::advance`] added.
struct Clock {
    anchor_real: Instant,
    anchor_mock: f64,
    speed: f64,
    /// Unix seconds at mock time 0.
    start_unix: f64,
}

impl Default for Clock {
    fn default() -> Self {
        Self {
            anchor_real: Instant::now(),
            anchor_mock: 0.0,
            speed: 1.0,
            start_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        }
    }
}

impl Clock {
    fn now(&self) -> f64 {
        self.anchor_mock + self.anchor_real.elapsed().as_secs_f64() * self.speed
    }

    fn advance(&mut self, by: f64) {
        self.anchor_mock = self.now() + by.max(0.0);
        self.anchor_real = Instant::now();
    }

    fn set_speed(&mut self, factor: f64) {
        self.anchor_mock = self.now();
        self.anchor_real = Instant::now();
        self.speed = factor.max(0.0);
    }

    fn unix(&self, mock: f64) -> f64 {
        self.start_unix + mock
    }
}

struct File {
    id: String,
    key: String,
    purpose: String,
    filename: String,
    bytes: Bytes,
    /// Mock time.
    created: f64,
}

impl File {
    fn json(&self, clock: &Clock) -> Value {
        json!({
            "id": self.id,
            "object": "file",
            "bytes": self.bytes.len(),
            "created_at": clock.unix(self.created) as i64,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "status_details": null,
        })
    }
}

struct Batch {
    anthropic: bool,
    num: u64,
    id: String,
    key: String,
    model: String,
    input_file_id: Option<String>,
    metadata: Value,
    /// Mock time.
    created: f64,
    timings: BatchTimings,
    /// OpenAI's validation errors (`errors.data`): the batch fails.
    failures: Vec<Value>,
    /// In input order.
    lines: Vec<Line>,
    /// Line indices in the order they are done.
    order: Vec<usize>,
    cancel_at: Option<f64>,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    files_made: bool,
}

struct Line {
    custom_id: String,
    model: String,
    body: Value,
    /// The live mock's answer: status and JSON body.
    status: u16,
    answer: Value,
    /// Tokens of a generated answer.
    usage: Option<(u64, u64)>,
    /// OpenAI's admission charge, for queued tokens.
    charge: u64,
    /// Mock time it is done at.
    done_at: f64,
    billed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Validating,
    InProgress,
    Finalizing,
    Completed,
    Failed,
    Expired,
    Cancelling,
    Cancelled,
}

impl Phase {
    fn is_ended(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Expired | Self::Cancelled
        )
    }
}

impl Batch {
    /// When requests start being done.
    fn start(&self) -> f64 {
        match self.anthropic {
            true => self.created,
            false => self.created + self.timings.validating.as_secs_f64(),
        }
    }

    fn processed(&self) -> f64 {
        self.start() + self.timings.in_progress.as_secs_f64()
    }

    fn finalized(&self) -> f64 {
        self.processed() + self.timings.finalizing.as_secs_f64()
    }

    fn expires(&self) -> f64 {
        self.created + self.timings.window.as_secs_f64()
    }

    /// Whether the window closes before the requests are done.
    fn expiring(&self) -> bool {
        self.processed() > self.expires()
    }

    /// No request is done after this.
    fn cutoff(&self) -> f64 {
        let expiry = if self.expiring() {
            self.expires()
        } else {
            f64::INFINITY
        };
        expiry.min(self.cancel_at.unwrap_or(f64::INFINITY))
    }

    /// The phase at `now` and, once ended, when it ended.
    fn phase(&self, now: f64) -> (Phase, Option<f64>) {
        if !self.failures.is_empty() {
            return match now < self.start() {
                true => (Phase::Validating, None),
                false => (Phase::Failed, Some(self.start())),
            };
        }
        if let Some(at) = self.cancel_at.filter(|at| now >= *at) {
            let end = at + self.timings.cancelling.as_secs_f64();
            return match now < end {
                true => (Phase::Cancelling, None),
                false => (Phase::Cancelled, Some(end)),
            };
        }
        if self.expiring() && now >= self.expires() {
            return (Phase::Expired, Some(self.expires()));
        }
        if now < self.start() {
            (Phase::Validating, None)
        } else if now < self.processed() {
            (Phase::InProgress, None)
        } else if now < self.finalized() {
            (Phase::Finalizing, None)
        } else {
            (Phase::Completed, Some(self.finalized()))
        }
    }

    /// Whether line `i` is done at `now`.
    fn done(&self, i: usize, now: f64) -> bool {
        self.failures.is_empty() && self.lines[i].done_at <= now.min(self.cutoff())
    }

    /// The status word of the API.
    fn status(&self, now: f64) -> &'static str {
        let (phase, _) = self.phase(now);
        if self.anthropic {
            return match phase {
                Phase::Cancelling => "canceling",
                p if p.is_ended() => "ended",
                _ => "in_progress",
            };
        }
        match phase {
            Phase::Validating => "validating",
            Phase::InProgress => "in_progress",
            Phase::Finalizing => "finalizing",
            Phase::Completed => "completed",
            Phase::Failed => "failed",
            Phase::Expired => "expired",
            Phase::Cancelling => "cancelling",
            Phase::Cancelled => "cancelled",
        }
    }

    fn view(&self, now: f64) -> BatchView {
        BatchView {
            id: self.id.clone(),
            anthropic: self.anthropic,
            key: self.key.clone(),
            model: self.model.clone(),
            status: self.status(now).to_owned(),
            custom_ids: self.lines.iter().map(|l| l.custom_id.clone()).collect(),
            metadata: self.metadata.clone(),
            created: Duration::from_secs_f64(self.created.max(0.0)),
        }
    }

    /// What became of a line that is not done once the batch ended.
    fn unfinished_word(&self, now: f64) -> Option<&'static str> {
        match (self.phase(now).0, self.anthropic) {
            (Phase::Expired, false) => Some("batch_expired"),
            (Phase::Cancelled, false) => Some("batch_cancelled"),
            (Phase::Expired, true) => Some("expired"),
            (Phase::Cancelled, true) => Some("canceled"),
            _ => None,
        }
    }

    /// OpenAI's Batch object at `now`.
    fn openai_json(&self, clock: &Clock, now: f64) -> Value {
        let (phase, ended) = self.phase(now);
        let unix = |t: f64| Value::from(clock.unix(t) as i64);
        let at = |cond: bool, t: f64| if cond { unix(t) } else { Value::Null };
        let n = self.lines.len() as u64;
        let (mut completed, mut failed) = (0u64, 0u64);
        for (i, line) in self.lines.iter().enumerate() {
            if self.done(i, now) {
                match line.status {
                    200 => completed += 1,
                    _ => failed += 1,
                }
            }
        }
        if matches!(phase, Phase::Expired | Phase::Cancelled) {
            failed = n - completed;
        }
        let total = match phase {
            Phase::Validating | Phase::Failed => 0,
            _ => n,
        };
        let running = !matches!(phase, Phase::Validating | Phase::Failed);
        json!({
            "id": self.id,
            "object": "batch",
            "endpoint": CHAT_ENDPOINT,
            "errors": match phase {
                Phase::Failed => json!({"object": "list", "data": self.failures}),
                _ => Value::Null,
            },
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": self.status(now),
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": unix(self.created),
            "in_progress_at": at(running, self.start()),
            "expires_at": unix(self.expires()),
            "finalizing_at": at(matches!(phase, Phase::Finalizing | Phase::Completed), self.processed()),
            "completed_at": at(phase == Phase::Completed, ended.unwrap_or(now)),
            "failed_at": at(phase == Phase::Failed, ended.unwrap_or(now)),
            "expired_at": at(phase == Phase::Expired, ended.unwrap_or(now)),
            "cancelling_at": self.cancel_at.filter(|t| *t <= now).map_or(Value::Null, unix),
            "cancelled_at": at(phase == Phase::Cancelled, ended.unwrap_or(now)),
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": self.metadata,
        })
    }

    /// Anthropic's Message Batch object at `now`; `origin` is the server's own.
    fn anthropic_json(&self, clock: &Clock, now: f64, origin: &str) -> Value {
        let (phase, ended) = self.phase(now);
        let n = self.lines.len() as u64;
        let counts = if phase.is_ended() {
            let (mut succeeded, mut errored) = (0u64, 0u64);
            for (i, line) in self.lines.iter().enumerate() {
                if self.done(i, now) {
                    match line.status {
                        200 => succeeded += 1,
                        _ => errored += 1,
                    }
                }
            }
            let rest = n - succeeded - errored;
            let (canceled, expired) = match phase {
                Phase::Cancelled => (rest, 0),
                _ => (0, rest),
            };
            json!({"processing": 0, "succeeded": succeeded, "errored": errored,
                   "canceled": canceled, "expired": expired})
        } else {
            // No per-request progress until the whole batch ends.
            json!({"processing": n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
        };
        let time = |t: f64| Value::String(rfc3339(clock.unix(t)));
        json!({
            "id": self.id,
            "type": "message_batch",
            "processing_status": self.status(now),
            "request_counts": counts,
            "ended_at": ended.map_or(Value::Null, time),
            "created_at": time(self.created),
            "expires_at": time(self.expires()),
            "cancel_initiated_at": self.cancel_at.filter(|t| *t <= now).map_or(Value::Null, time),
            "archived_at": null,
            "results_url": match phase.is_ended() {
                true => Value::String(format!("{origin}{RESULTS_PREFIX}{}.jsonl", self.id)),
                false => Value::Null,
            },
        })
    }

    /// The lines of results at `now`, in the order the requests were done, then those that
    /// were not: OpenAI's output file (`errors == false`) or error file; Anthropic's results.
    fn result_lines(&self, now: f64, errors: bool) -> Vec<Value> {
        let mut out = Vec::new();
        let request_id = |i: usize| format!("req_mockbatch{}_{i}", self.num);
        for &i in &self.order {
            if !self.done(i, now) {
                continue;
            }
            let line = &self.lines[i];
            if self.anthropic {
                let result = match line.status {
                    200 => json!({"type": "succeeded", "message": line.answer}),
                    _ => json!({"type": "errored", "error": line.answer}),
                };
                out.push(json!({"custom_id": line.custom_id, "result": result}));
            } else if (line.status == 200) != errors {
                out.push(json!({
                    "id": format!("batch_req_mock{}_{i}", self.num),
                    "custom_id": line.custom_id,
                    "response": {"status_code": line.status, "request_id": request_id(i), "body": line.answer},
                    "error": null,
                }));
            }
        }
        if let Some(word) = self
            .unfinished_word(now)
            .filter(|_| errors || self.anthropic)
        {
            for (i, line) in self.lines.iter().enumerate() {
                if self.done(i, now) {
                    continue;
                }
                if self.anthropic {
                    out.push(json!({"custom_id": line.custom_id, "result": {"type": word}}));
                } else {
                    let message = match word {
                        "batch_expired" => {
                            "This request could not be executed before the completion window expired."
                        }
                        _ => "This request was cancelled.",
                    };
                    out.push(json!({
                        "id": format!("batch_req_mock{}_{i}", self.num),
                        "custom_id": line.custom_id,
                        "response": null,
                        "error": {"code": word, "message": message},
                    }));
                }
            }
        }
        out
    }
}

/// Bills what is done by now and writes the files of OpenAI batches that ended.
fn settle(shared: &Shared) {
    let mut state = lock(&shared.batches.state);
    let now = state.clock.now();
    let mut bills = Vec::new();
    let mut files = Vec::new();
    let mut next = state.next_id;
    for b in &mut state.batches {
        for i in 0..b.lines.len() {
            if b.lines[i].billed || b.lines[i].status != 200 || !b.done(i, now) {
                continue;
            }
            b.lines[i].billed = true;
            let line = &b.lines[i];
            let (input, output) = line.usage.unwrap_or((0, 0));
            let (pin, pout) = shared
                .config
                .prices
                .iter()
                .find(|(m, _, _)| *m == line.model)
                .map_or((0.0, 0.0), |(_, i, o)| (*i, *o));
            bills.push(BatchBill {
                batch_id: b.id.clone(),
                custom_id: line.custom_id.clone(),
                key: b.key.clone(),
                model: line.model.clone(),
                input_tokens: input,
                output_tokens: output,
                usd: (input as f64 * pin + output as f64 * pout) / 1e6 * 0.5,
            });
        }
        let (phase, ended) = b.phase(now);
        if b.anthropic || b.files_made || !phase.is_ended() || phase == Phase::Failed {
            continue;
        }
        b.files_made = true;
        for errors in [false, true] {
            let lines = b.result_lines(now, errors);
            if lines.is_empty() {
                continue;
            }
            let mut bytes = Vec::new();
            for line in lines {
                bytes.extend_from_slice(line.to_string().as_bytes());
                bytes.push(b'\n');
            }
            let id = format!("file-mock{next}");
            next += 1;
            match errors {
                false => b.output_file_id = Some(id.clone()),
                true => b.error_file_id = Some(id.clone()),
            }
            files.push(File {
                filename: format!("{}_{}.jsonl", b.id, if errors { "error" } else { "output" }),
                id,
                key: b.key.clone(),
                purpose: "batch_output".into(),
                bytes: bytes.into(),
                created: ended.unwrap_or(now),
            });
        }
    }
    state.next_id = next;
    state.files.extend(files);
    if bills.is_empty() {
        return;
    }
    let mut ledger = lock(&shared.ledger);
    for bill in &bills {
        ledger.push(LedgerEntry {
            key: bill.key.clone(),
            model: bill.model.clone(),
            input_tokens: bill.input_tokens,
            output_tokens: bill.output_tokens,
            usd: bill.usd,
        });
    }
    drop(ledger);
    state.bills.extend(bills);
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

/// Whether `path` is one of the batch APIs'.
pub(super) fn owns(path: &str) -> bool {
    ["/v1/files", "/v1/batches", "/v1/messages/batches"]
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
        || path.starts_with(RESULTS_PREFIX)
}

/// Answers a request to the batch APIs.
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario (or table), top to bottom"
)]
pub(super) async fn handle(shared: &Shared, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    // Logged and held (`Hold`) as every request is: a test can stop a run mid-create.
    let number = shared.record(&path, &parts.headers, &bytes, parsed.as_ref());
    shared.hold_if_picked(number, parsed.as_ref()).await;
    let format = match path.starts_with("/v1/messages/") || path.starts_with(RESULTS_PREFIX) {
        true => Format::Anthropic,
        false => Format::OpenAi,
    };
    let key = match authenticate(format, &parts.headers) {
        Ok(key) => key,
        Err(refusal) => return *refusal,
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let method = parts.method.clone();
    let step = match (&method, segments.as_slice()) {
        (&Method::POST, ["v1", "files"]) => BatchStep::Upload,
        (&Method::POST, ["v1", "batches"] | ["v1", "messages", "batches"]) => BatchStep::Create,
        (&Method::GET, ["v1", "batches"] | ["v1", "messages", "batches"]) => BatchStep::List,
        (&Method::POST, [.., "cancel"]) => BatchStep::Cancel,
        (&Method::GET, ["v1", "files", _, "content"]) => BatchStep::Results,
        (&Method::GET, [first, _]) if *first == RESULTS_SEGMENT => BatchStep::Results,
        _ => BatchStep::Get,
    };
    let fault = lock(&shared.batches.state).take_fault(step);
    if let Some(BatchFault::Status(code)) = fault {
        return error_response(format, code, None, &default_error_message(code));
    }
    settle(shared);
    let origin = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map_or_else(|| "http://127.0.0.1".to_owned(), |h| format!("http://{h}"));
    let ctx = Ctx {
        shared,
        key: &key,
        headers: &parts.headers,
        origin: &origin,
    };
    let resp = match (format, &method, segments.as_slice()) {
        (Format::OpenAi, &Method::POST, ["v1", "files"]) => ctx.upload(&parts.headers, &bytes),
        (Format::OpenAi, &Method::GET, ["v1", "files", id]) => ctx.file(id, false),
        (Format::OpenAi, &Method::GET, ["v1", "files", id, "content"]) => ctx.file(id, true),
        (Format::OpenAi, &Method::POST, ["v1", "batches"]) => ctx.create_openai(parsed).await,
        (Format::OpenAi, &Method::GET, ["v1", "batches"]) => ctx.list(false, &query),
        (Format::OpenAi, &Method::GET, ["v1", "batches", id]) => ctx.get(false, id),
        (Format::OpenAi, &Method::POST, ["v1", "batches", id, "cancel"]) => ctx.cancel(false, id),
        (Format::Anthropic, &Method::POST, ["v1", "messages", "batches"]) => {
            ctx.create_anthropic(parsed, bytes.len()).await
        }
        (Format::Anthropic, &Method::GET, ["v1", "messages", "batches"]) => ctx.list(true, &query),
        (Format::Anthropic, &Method::GET, ["v1", "messages", "batches", id]) => ctx.get(true, id),
        (Format::Anthropic, &Method::POST, ["v1", "messages", "batches", id, "cancel"]) => {
            ctx.cancel(true, id)
        }
        (Format::Anthropic, &Method::GET, ["v1", "messages", "batches", _, "results"]) => {
            error_response(
                format,
                404,
                None,
                "mock: the results are at the batch's results_url; follow it, never build it",
            )
        }
        (Format::Anthropic, &Method::GET, [first, file]) if *first == RESULTS_SEGMENT => {
            ctx.anthropic_results(file)
        }
        _ => error_response(
            format,
            404,
            None,
            &format!("mock: unknown batch path {method} {path}"),
        ),
    };
    match fault {
        Some(BatchFault::LoseAnswer) => lose(resp).await,
        _ => resp,
    }
}

/// `resp` cut off halfway through its body: the work is done, the answer lost.
async fn lose(resp: Response) -> Response {
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let full = bytes.len();
    truncated_response("application/json", bytes.slice(..full / 2), Some(full))
}

/// The key of a request, or the refusal the API gives one without.
fn authenticate(format: Format, headers: &HeaderMap) -> Result<String, Box<Response>> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    match format {
        Format::Anthropic => {
            let key = text("x-api-key")
                .ok_or_else(|| Box::new(error_response(format, 401, None, "invalid x-api-key")))?;
            if text("anthropic-version").is_none() {
                return Err(Box::new(error_response(
                    format,
                    400,
                    None,
                    "anthropic-version: header is required",
                )));
            }
            Ok(key.to_owned())
        }
        _ => text("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned)
            .ok_or_else(|| {
                Box::new(error_response(
                    format,
                    401,
                    None,
                    "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
                ))
            }),
    }
}

/// What every handler needs of its request.
struct Ctx<'a> {
    shared: &'a Shared,
    key: &'a str,
    headers: &'a HeaderMap,
    origin: &'a str,
}

impl Ctx<'_> {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.shared.batches.state)
    }

    fn upload(&self, headers: &HeaderMap, bytes: &Bytes) -> Response {
        let bad = |message: &str| error_response(Format::OpenAi, 400, None, message);
        let Some(boundary) = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.starts_with("multipart/form-data"))
            .and_then(|v| v.split("boundary=").nth(1))
            .map(|b| b.trim_matches('"').to_owned())
        else {
            return bad("mock: the upload must be multipart/form-data with a boundary");
        };
        let Some(fields) = multipart_fields(bytes, &boundary) else {
            return bad("mock: the multipart body cannot be read");
        };
        let purpose = fields.iter().find(|f| f.name == "purpose");
        let file = fields
            .iter()
            .find(|f| f.name == "file" && f.filename.is_some());
        let (Some(purpose), Some(file)) = (purpose, file) else {
            return bad("Missing required parameter: 'file' and 'purpose' are both required.");
        };
        let purpose = String::from_utf8_lossy(&purpose.content).trim().to_owned();
        if purpose != "batch" {
            return bad(&format!(
                "mock: only purpose 'batch' is emulated, not '{purpose}'"
            ));
        }
        if file.content.len() > OPENAI_MAX_BYTES {
            return bad("File is too large: a batch input file is at most 200 MB.");
        }
        let mut state = self.state();
        let n = state.next();
        let created = state.clock.now();
        let file = File {
            id: format!("file-mock{n}"),
            key: self.key.to_owned(),
            purpose,
            filename: file.filename.clone().unwrap_or_default(),
            bytes: file.content.clone(),
            created,
        };
        let v = file.json(&state.clock);
        state.files.push(file);
        json_response(StatusCode::OK, &v)
    }

    fn file(&self, id: &str, content: bool) -> Response {
        let state = self.state();
        let Some(file) = state.files.iter().find(|f| f.id == id && f.key == self.key) else {
            return error_response(
                Format::OpenAi,
                404,
                None,
                &format!("No such File object: {id}"),
            );
        };
        match content {
            true => raw_response(
                StatusCode::OK,
                "application/octet-stream",
                Body::from(file.bytes.clone()),
            ),
            false => json_response(StatusCode::OK, &file.json(&state.clock)),
        }
    }

    #[allow(
        clippy::too_many_lines,
        reason = "a test reads as one scenario (or table), top to bottom"
    )]
    async fn create_openai(&self, body: Option<Value>) -> Response {
        let bad = |code: u16, message: &str| error_response(Format::OpenAi, code, None, message);
        let Some(body) = body.filter(Value::is_object) else {
            return bad(400, "mock: the body must be a JSON object");
        };
        let Some(file_id) = body.get("input_file_id").and_then(Value::as_str) else {
            return bad(400, "Missing required parameter: 'input_file_id'.");
        };
        if body.get("endpoint").and_then(Value::as_str) != Some(CHAT_ENDPOINT) {
            return bad(
                400,
                "mock: only the endpoint '/v1/chat/completions' is emulated",
            );
        }
        if body.get("completion_window").and_then(Value::as_str) != Some("24h") {
            return bad(
                400,
                "Invalid value for 'completion_window': only '24h' is supported.",
            );
        }
        let metadata = body.get("metadata").cloned().unwrap_or(Value::Null);
        if let Err(message) = check_metadata(&metadata) {
            return bad(400, &message);
        }
        let (bytes, purpose) = {
            let state = self.state();
            match state
                .files
                .iter()
                .find(|f| f.id == file_id && f.key == self.key)
            {
                Some(f) => (f.bytes.clone(), f.purpose.clone()),
                None => return bad(404, &format!("No such File object: {file_id}")),
            }
        };
        if purpose != "batch" {
            return bad(
                400,
                &format!("The file {file_id} has purpose '{purpose}', not 'batch'."),
            );
        }
        let (inputs, mut failures) = read_openai_lines(&bytes);
        let model = inputs.first().map(|l| l.1.clone()).unwrap_or_default();
        if failures.is_empty() {
            let charge: u64 = inputs.iter().map(|l| openai_token_charge(&l.2)).sum();
            let state = self.state();
            if let Some((limit, form)) = state.token_limit_for(self.key, &model) {
                let queued = state.queued_tokens(self.key, &model);
                if queued + charge > limit {
                    let message = format!(
                        "Enqueued token limit reached for {model} in organization org-mock. \
                         Limit: {limit} enqueued tokens. Please try again once some \
                         in_progress batches have been completed."
                    );
                    match form {
                        TokenLimitForm::AtCreate => {
                            return json_response(
                                StatusCode::BAD_REQUEST,
                                &json!({"error": {"message": message, "type": "invalid_request_error",
                                    "param": null, "code": "token_limit_exceeded"}}),
                            );
                        }
                        TokenLimitForm::Failed => failures.push(json!({
                            "code": "token_limit_exceeded", "message": message,
                            "param": null, "line": null,
                        })),
                    }
                }
            }
        }
        let lines = match failures.is_empty() {
            true => self.answer_all(Format::OpenAi, inputs).await,
            false => Vec::new(),
        };
        self.insert(
            false,
            model,
            Some(file_id.to_owned()),
            metadata,
            failures,
            lines,
        )
    }

    async fn create_anthropic(&self, body: Option<Value>, size: usize) -> Response {
        let bad = |message: &str| error_response(Format::Anthropic, 400, None, message);
        if size > ANTHROPIC_MAX_BYTES {
            return error_response(
                Format::Anthropic,
                413,
                None,
                "Request exceeds the maximum allowed number of bytes.",
            );
        }
        let Some(requests) = body
            .as_ref()
            .and_then(|b| b.get("requests"))
            .and_then(Value::as_array)
        else {
            return bad("requests: Field required");
        };
        if requests.is_empty() {
            return bad("requests: List should have at least 1 item after validation, not 0");
        }
        if requests.len() > ANTHROPIC_MAX_REQUESTS {
            return bad(&format!(
                "requests: List should have at most {ANTHROPIC_MAX_REQUESTS} items after validation, not {}",
                requests.len()
            ));
        }
        let mut seen = HashSet::new();
        let mut inputs = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            let id = r
                .get("custom_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let valid = !id.is_empty()
                && id.len() <= 64
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !valid {
                return bad(&format!(
                    "requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                ));
            }
            if !seen.insert(id.to_owned()) {
                return bad(&format!(
                    "requests: custom_id values must be unique within a batch; '{id}' is repeated"
                ));
            }
            let Some(params) = r.get("params").filter(|p| p.is_object()) else {
                return bad(&format!("requests.{i}.params: Field required"));
            };
            // Parameters are validated late: a bad one becomes an `errored` result.
            let model = params
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default();
            inputs.push((id.to_owned(), model.to_owned(), params.clone()));
        }
        let model = inputs[0].1.clone();
        let lines = self.answer_all(Format::Anthropic, inputs).await;
        self.insert(true, model, None, Value::Null, Vec::new(), lines)
    }

    /// Each input answered as the live mock answers its body.
    async fn answer_all(&self, format: Format, inputs: Vec<(String, String, Value)>) -> Vec<Line> {
        let path = match format {
            Format::Anthropic => "/v1/messages",
            _ => CHAT_ENDPOINT,
        };
        let mut lines = Vec::with_capacity(inputs.len());
        for (custom_id, model, body) in inputs {
            let mut request = Request::builder().method(Method::POST).uri(path);
            for (name, value) in self.headers {
                if name != header::CONTENT_LENGTH && name != header::CONTENT_TYPE {
                    request = request.header(name, value);
                }
            }
            let request = request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .expect("mock: a request of a batch line");
            let mut out = Outcome {
                batch: true,
                ..Outcome::default()
            };
            let resp = super::answer(self.shared, request, &mut out).await;
            let status = resp.status().as_u16();
            let read = axum::body::to_bytes(resp.into_body(), usize::MAX).await;
            let (status, answer) = match read.ok().and_then(|b| serde_json::from_slice(&b).ok()) {
                Some(answer) => (status, answer),
                // A scripted truncation or a body that is not JSON: the provider's error.
                None => (
                    500,
                    match format {
                        Format::Anthropic => json!({"type": "error", "error": {"type": "api_error",
                            "message": "mock: the answer was cut off"}}),
                        _ => json!({"error": {"message": "mock: the answer was cut off",
                            "type": "server_error", "param": null, "code": null}}),
                    },
                ),
            };
            lines.push(Line {
                charge: openai_token_charge(&body),
                custom_id,
                model,
                body,
                status,
                usage: out.billed.filter(|_| status == 200),
                answer,
                done_at: 0.0,
                billed: false,
            });
        }
        lines
    }

    /// Stores a new batch and answers its object.
    fn insert(
        &self,
        anthropic: bool,
        model: String,
        input_file_id: Option<String>,
        metadata: Value,
        failures: Vec<Value>,
        mut lines: Vec<Line>,
    ) -> Response {
        let mut state = self.state();
        let num = state.next();
        let id = match anthropic {
            true => format!("msgbatch_mock{num:06}"),
            false => format!("batch_mock{num:06}"),
        };
        let created = state.clock.now();
        let timings = state.timings;
        // Done in a shuffled (but repeatable) order, evenly over the time in progress.
        let mut order: Vec<usize> = (0..lines.len()).collect();
        order.sort_by_key(|&i| fnv(format!("{id}/{}", lines[i].custom_id).as_bytes()));
        let start = created
            + match anthropic {
                true => 0.0,
                false => timings.validating.as_secs_f64(),
            };
        let n = lines.len().max(1) as f64;
        for (rank, &i) in order.iter().enumerate() {
            lines[i].done_at = start + timings.in_progress.as_secs_f64() * (rank + 1) as f64 / n;
        }
        let batch = Batch {
            anthropic,
            num,
            id,
            key: self.key.to_owned(),
            model,
            input_file_id,
            metadata,
            created,
            timings,
            failures,
            lines,
            order,
            cancel_at: None,
            output_file_id: None,
            error_file_id: None,
            files_made: false,
        };
        let v = match anthropic {
            true => batch.anthropic_json(&state.clock, created, self.origin),
            false => batch.openai_json(&state.clock, created),
        };
        state.batches.push(batch);
        json_response(StatusCode::OK, &v)
    }

    fn not_found(&self, anthropic: bool, id: &str) -> Response {
        match anthropic {
            true => error_response(
                Format::Anthropic,
                404,
                None,
                &format!("No message batch found with id '{id}'"),
            ),
            false => error_response(
                Format::OpenAi,
                404,
                None,
                &format!("No batch found with id '{id}'."),
            ),
        }
    }

    fn json_of(&self, state: &State, batch: &Batch) -> Value {
        let now = state.clock.now();
        match batch.anthropic {
            true => batch.anthropic_json(&state.clock, now, self.origin),
            false => batch.openai_json(&state.clock, now),
        }
    }

    fn get(&self, anthropic: bool, id: &str) -> Response {
        let state = self.state();
        match state.find(self.key, anthropic, id) {
            Some(b) => json_response(StatusCode::OK, &self.json_of(&state, b)),
            None => self.not_found(anthropic, id),
        }
    }

    fn cancel(&self, anthropic: bool, id: &str) -> Response {
        let mut state = self.state();
        let now = state.clock.now();
        let Some(i) = state
            .batches
            .iter()
            .position(|b| b.key == self.key && b.anthropic == anthropic && b.id == id)
        else {
            return self.not_found(anthropic, id);
        };
        let (phase, _) = state.batches[i].phase(now);
        if phase.is_ended() {
            let format = if anthropic {
                Format::Anthropic
            } else {
                Format::OpenAi
            };
            return error_response(
                format,
                400,
                None,
                &format!(
                    "Cannot cancel a batch with status '{}'.",
                    state.batches[i].status(now)
                ),
            );
        }
        if state.batches[i].cancel_at.is_none() {
            state.batches[i].cancel_at = Some(now);
        }
        let v = self.json_of(&state, &state.batches[i]);
        json_response(StatusCode::OK, &v)
    }

    fn list(&self, anthropic: bool, query: &str) -> Response {
        let params: HashMap<&str, &str> =
            query.split('&').filter_map(|p| p.split_once('=')).collect();
        let max = if anthropic { 1000 } else { 100 };
        let limit = params
            .get("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .unwrap_or(20)
            .clamp(1, max);
        let state = self.state();
        // Newest first.
        let mine: Vec<&Batch> = state
            .batches
            .iter()
            .rev()
            .filter(|b| b.key == self.key && b.anthropic == anthropic)
            .collect();
        let after = params.get(if anthropic { "after_id" } else { "after" });
        let before = params.get("before_id").filter(|_| anthropic);
        let (from, to) = match (after, before) {
            (Some(a), _) => match mine.iter().position(|b| b.id == *a) {
                Some(p) => (p + 1, (p + 1 + limit).min(mine.len())),
                None => (mine.len(), mine.len()),
            },
            (None, Some(b)) => match mine.iter().position(|x| x.id == *b) {
                Some(p) => (p.saturating_sub(limit), p),
                None => (0, 0),
            },
            (None, None) => (0, limit.min(mine.len())),
        };
        let page: Vec<Value> = mine[from..to]
            .iter()
            .map(|b| self.json_of(&state, b))
            .collect();
        let has_more = match before {
            Some(_) if after.is_none() => from > 0,
            _ => to < mine.len(),
        };
        let first = mine[from..to].first().map(|b| b.id.clone());
        let last = mine[from..to].last().map(|b| b.id.clone());
        let v = match anthropic {
            true => json!({"data": page, "has_more": has_more, "first_id": first, "last_id": last}),
            false => json!({"object": "list", "data": page, "first_id": first,
                            "last_id": last, "has_more": has_more}),
        };
        json_response(StatusCode::OK, &v)
    }

    fn anthropic_results(&self, file: &str) -> Response {
        let id = file.strip_suffix(".jsonl").unwrap_or(file);
        let state = self.state();
        let Some(batch) = state.find(self.key, true, id) else {
            return self.not_found(true, id);
        };
        let now = state.clock.now();
        if !batch.phase(now).0.is_ended() {
            return error_response(
                Format::Anthropic,
                404,
                None,
                &format!("Message batch {id} has not ended: it has no results yet."),
            );
        }
        let mut bytes = Vec::new();
        for line in batch.result_lines(now, true) {
            bytes.extend_from_slice(line.to_string().as_bytes());
            bytes.push(b'\n');
        }
        raw_response(StatusCode::OK, "application/x-jsonl", Body::from(bytes))
    }
}

impl State {
    fn find(&self, key: &str, anthropic: bool, id: &str) -> Option<&Batch> {
        self.batches
            .iter()
            .find(|b| b.key == key && b.anthropic == anthropic && b.id == id)
    }

    fn token_limit_for(&self, _key: &str, model: &str) -> Option<(u64, TokenLimitForm)> {
        self.token_limits
            .iter()
            .find(|(m, _, _)| m == model)
            .map(|(_, limit, form)| (*limit, *form))
    }

    /// Tokens of `key`'s OpenAI batches of `model` not yet ended.
    fn queued_tokens(&self, key: &str, model: &str) -> u64 {
        let now = self.clock.now();
        self.batches
            .iter()
            .filter(|b| !b.anthropic && b.key == key && b.model == model)
            .filter(|b| !b.phase(now).0.is_ended())
            .map(|b| b.lines.iter().map(|l| l.charge).sum::<u64>())
            .sum()
    }
}

/// The lines of an OpenAI input file as (custom_id, model, body), and its validation errors
/// (`errors.data`), each with its line.
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario (or table), top to bottom"
)]
fn read_openai_lines(bytes: &[u8]) -> (Vec<(String, String, Value)>, Vec<Value>) {
    let mut inputs = Vec::new();
    let mut failures = Vec::new();
    let mut seen = HashSet::new();
    let mut model: Option<String> = None;
    let text = String::from_utf8_lossy(bytes);
    let raw: Vec<&str> = text.trim_end_matches(['\n', '\r']).split('\n').collect();
    let mut fail = |code: &str, message: &str, param: Option<&str>, line: usize| {
        failures.push(json!({"code": code, "message": message, "param": param, "line": line}));
    };
    if text.trim().is_empty() {
        return (
            inputs,
            vec![
                json!({"code": "empty_file", "message": "The batch input file is empty.",
                        "param": null, "line": null}),
            ],
        );
    }
    if raw.len() > OPENAI_MAX_LINES {
        return (
            inputs,
            vec![json!({"code": "too_many_requests",
                "message": format!("The batch input file has {} lines; at most {OPENAI_MAX_LINES} are allowed.", raw.len()),
                "param": null, "line": null})],
        );
    }
    for (i, line) in raw.iter().enumerate() {
        let n = i + 1;
        let Ok(v) = serde_json::from_str::<Value>(line.trim_end_matches('\r')) else {
            fail(
                "invalid_json_line",
                "This line is not parseable as valid JSON.",
                None,
                n,
            );
            continue;
        };
        let Some(id) = v
            .get("custom_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            fail(
                "missing_required_parameter",
                "Missing required parameter: 'custom_id'.",
                Some("custom_id"),
                n,
            );
            continue;
        };
        if !seen.insert(id.to_owned()) {
            fail(
                "duplicate_custom_id",
                "The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each individual request in a batch.",
                Some("custom_id"),
                n,
            );
            continue;
        }
        if v.get("method").and_then(Value::as_str) != Some("POST") {
            fail(
                "invalid_method",
                "The method for this request must be 'POST'.",
                Some("method"),
                n,
            );
            continue;
        }
        if v.get("url").and_then(Value::as_str) != Some(CHAT_ENDPOINT) {
            fail(
                "invalid_url",
                "The URL provided for this request does not match the batch endpoint.",
                Some("url"),
                n,
            );
            continue;
        }
        let body = v.get("body").cloned().unwrap_or(Value::Null);
        let Some(m) = body.get("model").and_then(Value::as_str) else {
            fail(
                "missing_required_parameter",
                "Missing required parameter: 'body.model'.",
                Some("body.model"),
                n,
            );
            continue;
        };
        match &model {
            Some(first) if first != m => {
                fail(
                    "mismatched_model",
                    "The provided model does not match the model of the other requests in this batch: a batch holds one model.",
                    Some("body.model"),
                    n,
                );
                continue;
            }
            Some(_) => {}
            None => model = Some(m.to_owned()),
        }
        inputs.push((id.to_owned(), m.to_owned(), body));
    }
    (inputs, failures)
}

/// OpenAI's metadata rules: an object of at most 16 string pairs, keys of at most 64
/// characters, values of at most 512.
fn check_metadata(metadata: &Value) -> Result<(), String> {
    let map = match metadata {
        Value::Null => return Ok(()),
        Value::Object(map) => map,
        _ => return Err("Invalid type for 'metadata': expected an object.".into()),
    };
    if map.len() > 16 {
        return Err("Invalid 'metadata': at most 16 key-value pairs.".into());
    }
    for (k, v) in map {
        let Some(v) = v.as_str() else {
            return Err(format!("Invalid 'metadata.{k}': values must be strings."));
        };
        if k.chars().count() > 64 || v.chars().count() > 512 {
            return Err(format!(
                "Invalid 'metadata.{k}': keys are at most 64 characters, values 512."
            ));
        }
    }
    Ok(())
}

/// One field of a multipart body.
struct Field {
    name: String,
    filename: Option<String>,
    content: Bytes,
}

/// The fields of a `multipart/form-data` body, or `None` when it is not one.
fn multipart_fields(body: &Bytes, boundary: &str) -> Option<Vec<Field>> {
    let delimiter = format!("--{boundary}");
    let d = delimiter.as_bytes();
    let positions: Vec<usize> = (0..body.len().saturating_sub(d.len() - 1))
        .filter(|&i| body[i..].starts_with(d))
        .collect();
    if positions.len() < 2 {
        return None;
    }
    let mut fields = Vec::new();
    for pair in positions.windows(2) {
        let start = pair[0] + d.len();
        let part = &body[start..pair[1]];
        let part = part.strip_prefix(b"\r\n")?;
        let part = part.strip_suffix(b"\r\n")?;
        let split = part.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&part[..split]);
        let content = body.slice_ref(&part[split + 4..]);
        let disposition = head
            .split("\r\n")
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition"))?;
        let param = |name: &str| {
            disposition
                .split(';')
                .map(str::trim)
                .find_map(|p| p.strip_prefix(&format!("{name}=")))
                .map(|v| v.trim_matches('"').to_owned())
        };
        fields.push(Field {
            name: param("name")?,
            filename: param("filename"),
            content,
        });
    }
    Some(fields)
}

/// FNV-1a, for a repeatable shuffle.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
fn rfc3339(unix: f64) -> String {
    let whole = unix.floor();
    let micros = ((unix - whole) * 1e6).round().min(999_999.0) as u64;
    let (y, m, d, hh, mm, ss) = civil(whole as i64);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{micros:06}Z")
}
