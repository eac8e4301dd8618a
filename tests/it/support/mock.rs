#![allow(
    dead_code,
    reason = "shared by the tests and the benches, each using a part"
)]
//! A mock LLM provider speaking the real OpenAI chat-completions, Anthropic
//! messages and Ollama chat wire formats, for integration tests and benchmarks.
//!
//! The server listens on `127.0.0.1:<random port>` and runs in a background
//! `std::thread` with its own two-worker tokio runtime, so it can be used from
//! plain `#[test]` functions, from `#[tokio::test]` functions and while the
//! test runs the real binary as a child process. Dropping the
//! [`MockProvider`] shuts the server down.
//!
//! This file is self-contained so that benches can include it with
//! `#[path = "../tests/it/support/mock.rs"] mod mock;`.
//!
//! Deterministic behaviour:
//! * default reply: `mock reply to: <last user text>` (text parts of the last
//!   user message joined with a single space);
//! * input tokens: whitespace-separated words across every message text (and
//!   the system prompt); images do not count;
//! * output tokens: whitespace-separated words in the reply;
//! * Anthropic replies are split into two text blocks (first and second half
//!   of the text, split on a character boundary; joining them with `""`
//!   yields the reply);
//! * Ollama streaming replies are split into (about) three chunks whose
//!   concatenation is the reply, followed by the `done` line.
//! * Structured output is checked as the real APIs check it (OpenAI's
//!   `response_format` json_schema in strict mode, Anthropic's forced tool,
//!   Ollama's `format`): a malformed one gets a 400. Without a matching rule,
//!   the reply then follows the schema: for each property, the largest value
//!   of an integer enum, `mock <name>` for a string. Anthropic answers with a
//!   `tool_use` block whose input is the reply's JSON object.
//! * Rate limits ([`MockLimits`], off by default) are token buckets per (API key, model)
//!   with the providers' headers and 429 bodies; [`Action::QuotaExhausted`] and
//!   [`Action::UsageLimit`] give the 429 / 400 that never succeed.
//! * Every 200 the mock generates is billed in a ledger ([`MockProvider::ledger`]); every
//!   chat request is logged by the limiter ([`MockProvider::admissions`]).
//!   `reset_requests` clears neither.
//! * Barriers instead of clocks: the mock counts the requests in flight (and the most ever
//!   at once, [`MockProvider::max_in_flight`]), and holds the requests a [`Hold`] picks, once
//!   recorded and before answering, until [`MockProvider::release`]. A test waits for what
//!   it needs ([`MockProvider::wait_held`]) rather than for some milliseconds.
//! * Batch APIs (OpenAI files and batches, Anthropic message batches) are in [`batch`].

#[path = "batch.rs"]
pub mod batch;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use axum::serve::ListenerExt;
use serde_json::{Value, json};

/// How long [`MockProvider::wait_held`] waits before failing the test: only a bound on a
/// hang, never a measure of anything.
pub const WAIT_LIMIT: Duration = Duration::from_secs(120);

/// How long a truncated response waits between the partial body and the
/// connection abort, so that headers and the partial body are flushed first.
const TRUNCATE_PAUSE: Duration = Duration::from_millis(30);

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/// Server-wide configuration.
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// Applied to every response (errors included) before answering.
    pub delay: Duration,
    /// When false (benchmarks), only the request count and the paths are
    /// kept; recorded `headers` are empty and `body` is `Value::Null`.
    pub record_bodies: bool,
    /// Stand for a proxy in front of OpenAI that takes HTTP basic authentication too (OpenAI
    /// itself wants `Bearer`).
    pub basic_auth_proxy: bool,
    /// Stand for a server that knows no structured output: a request with a schema gets a 400.
    pub refuse_schemas: bool,
    /// Stand for an OpenAI-compatible server that knows no `stream_options` (Azure's older API
    /// versions): a request with them gets a 400.
    pub refuse_stream_options: bool,
    /// Rate limits for every model (OpenAI and Anthropic formats; Ollama is never limited).
    pub limits: Option<MockLimits>,
    /// Rate limits for one model id (as sent in the body), overriding `limits`.
    pub model_limits: Vec<(String, MockLimits)>,
    /// Prices: (model id, USD per million input tokens, USD per million output tokens).
    /// Models not listed cost nothing.
    pub prices: Vec<(String, f64, f64)>,
    /// The rate limiter's clock stands still until [`MockProvider::advance`] moves it, so
    /// that a test of the buckets never depends on how fast the machine is. Off: real time.
    pub manual_clock: bool,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            record_bodies: true,
            basic_auth_proxy: false,
            refuse_schemas: false,
            refuse_stream_options: false,
            limits: None,
            model_limits: Vec::new(),
            prices: Vec::new(),
            manual_clock: false,
        }
    }
}

/// Rate limits, enforced as continuously refilling token buckets per (API key, model), as
/// OpenAI and Anthropic enforce them. Buckets start full.
///
/// Each bucket holds at most `limit * window / 60 s` and refills at `limit / 60` per second.
/// A request whose charge exceeds a bucket's capacity (but not its per-minute limit) is
/// admitted only when that bucket is full, and leaves it in debt. A charge above the
/// per-minute limit itself never fits: OpenAI's "Request too large" 429 (no retry header),
/// Anthropic's `rate_limit_error` naming the input-token limit.
///
/// Unlike the real providers, refused requests are not charged (real OpenAI counts them
/// against the limit): it keeps the arithmetic of tests simple.
#[derive(Debug, Clone)]
pub struct MockLimits {
    /// Requests per minute (OpenAI and Anthropic formats).
    pub rpm: Option<u64>,
    /// OpenAI-format tokens per minute, charged at admission with [`openai_token_charge`]
    /// and `message_tokens` a message.
    pub tpm: Option<u64>,
    /// Anthropic-format input tokens per minute, charged at admission with the input tokens
    /// the mock reports.
    pub itpm: Option<u64>,
    /// Anthropic-format output tokens per minute, charged after the answer with the output
    /// tokens generated; admission needs a positive level (the 2026 documentation's reading),
    /// or, with `reserve_output`, `max_tokens` reserved at admission (the 2025 reading).
    pub otpm: Option<u64>,
    /// Burst window: each bucket holds at most limit * window / 60 s and refills continuously
    /// at limit / 60 per second ("600 RPM enforced as 10 requests a second" is window = 1 s).
    pub window: Duration,
    /// Send the provider's rate-limit headers on every answer, 429s included. false = a
    /// gateway that enforces limits but says nothing.
    pub headers: bool,
    /// What a retryable 429 carries.
    pub retry_after: RetryAfterHeader,
    /// Anthropic format: OTPM is "estimated based on max_tokens at the beginning of the request
    /// and adjusted at the end" (the 2025 documentation). Admission takes `max_tokens` from the
    /// output bucket (a reservation larger than the bucket needs it full and leaves it in
    /// debt), the head of a streamed answer tells the buckets with it taken, and the unused part
    /// goes back when the answer ends. false: only the tokens generated are charged.
    pub reserve_output: bool,
    /// OpenAI format: tokens a message's framing adds to the token charge, as the official
    /// cookbook's estimator counts them (4 a message); 0, the guide's reading: the characters
    /// and `max_tokens` only.
    pub message_tokens: u64,
}

impl Default for MockLimits {
    /// No limit set, a 60 s window, headers sent, `retry-after` in seconds.
    fn default() -> Self {
        Self {
            rpm: None,
            tpm: None,
            itpm: None,
            otpm: None,
            window: Duration::from_secs(60),
            headers: true,
            retry_after: RetryAfterHeader::Seconds,
            reserve_output: false,
            message_tokens: 0,
        }
    }
}

/// The retry header of a retryable rate-limit 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfterHeader {
    /// No retry header.
    None,
    /// `retry-after`: whole seconds, rounded up.
    Seconds,
    /// `retry-after-ms`: milliseconds, rounded up (OpenAI format; Anthropic format gets
    /// `retry-after` in seconds).
    Millis,
}

/// One answer the mock billed (every 200 it generated, truncated ones included).
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerEntry {
    /// The API key as received (OpenAI bearer token, Anthropic `x-api-key`; empty for Ollama).
    pub key: String,
    /// The model id from the request body.
    pub model: String,
    /// Input tokens as reported (whitespace words of the conversation).
    pub input_tokens: u64,
    /// Output tokens (whitespace words of the reply).
    pub output_tokens: u64,
    /// Cost at `MockConfig::prices`.
    pub usd: f64,
}

/// One chat request as seen by the rate limiter (for benchmarks of pacing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// When it was admitted or refused, since the mock started.
    pub at: Duration,
    /// The API key as received (empty for Ollama or when missing).
    pub key: String,
    /// The model id (empty when the body named none).
    pub model: String,
    /// Status of the answer (200, 429, or another).
    pub status: u16,
    /// 1 when admitted, 0 when refused (or rejected before admission).
    pub requests: u64,
    /// Tokens charged: OpenAI the admission charge, Anthropic input + output (computed even
    /// when no token limit is set); 0 for Ollama and for requests not admitted.
    pub tokens: u64,
}

/// The tokens an OpenAI-format request is charged at admission: the sum over every text part
/// (system and messages) of `ceil(chars / 4)`, plus `max_completion_tokens` (or `max_tokens`,
/// 0 when neither is given), plus 85 per image.
pub fn openai_token_charge(body: &Value) -> u64 {
    let mut total = 0u64;
    let text_charge = |t: &str| (t.chars().count() as u64).div_ceil(4);
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match m.get("content") {
            Some(Value::String(s)) => total += text_charge(s),
            Some(Value::Array(parts)) => {
                for p in parts {
                    if let Some(t) = text_of_part(p) {
                        total += text_charge(t);
                    } else if matches!(
                        p.get("type").and_then(Value::as_str),
                        Some("image_url" | "input_image")
                    ) {
                        total += 85;
                    }
                }
            }
            _ => {}
        }
    }
    let max = body
        .get("max_completion_tokens")
        .and_then(Value::as_u64)
        .or_else(|| body.get("max_tokens").and_then(Value::as_u64))
        .unwrap_or(0);
    total + max
}

/// One request received by the mock.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub path: String,
    /// Header names are lowercase.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body; a body that is not JSON is kept as a
    /// `Value::String`, an empty body as `Value::Null`.
    pub body: Value,
    /// When it arrived, since the mock started.
    pub arrived: Duration,
}

impl RecordedRequest {
    /// First value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Text of the last `user` message (text parts joined with a space).
    pub fn last_user_text(&self) -> String {
        last_user_text(&self.body)
    }

    /// The model named in the body, if any.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// Every image found in the messages, in order: the `image_url.url` of
    /// OpenAI parts, the `source.data` of Anthropic image blocks and the
    /// entries of Ollama `images` arrays.
    pub fn images(&self) -> Vec<String> {
        let mut out = Vec::new();
        let Some(messages) = self.body.get("messages").and_then(Value::as_array) else {
            return out;
        };
        for m in messages {
            if let Some(imgs) = m.get("images").and_then(Value::as_array) {
                out.extend(imgs.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            if let Some(parts) = m.get("content").and_then(Value::as_array) {
                for p in parts {
                    match p.get("type").and_then(Value::as_str) {
                        Some("image_url") => {
                            let url = p.get("image_url").and_then(|u| {
                                u.get("url").and_then(Value::as_str).or_else(|| u.as_str())
                            });
                            if let Some(url) = url {
                                out.push(url.to_owned());
                            }
                        }
                        Some("image") => {
                            if let Some(d) = p.pointer("/source/data").and_then(Value::as_str) {
                                out.push(d.to_owned());
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        out
    }
}

/// What the mock does with a request.
#[derive(Debug, Clone)]
pub enum Action {
    /// Answer with this text.
    Reply(String),
    /// Answer with this status. An empty `body` is replaced by an error body
    /// in the provider's own shape (OpenAI / Anthropic / Ollama); a
    /// non-empty one is sent verbatim as `application/json`.
    Status {
        code: u16,
        retry_after: Option<String>,
        body: String,
    },
    /// Send 200 + headers and part of a valid body, then abort the
    /// connection mid-body. Ollama streaming: one chunk line, then abort
    /// before the `done` line.
    Truncate,
    /// Valid reply without usage / token count fields.
    NoUsage(String),
    /// Wait (on top of `MockConfig::delay`), then reply with the text.
    Delay(Duration, String),
    /// The account's quota or spend limit is used up: a 429 that never succeeds on retry.
    /// OpenAI: `insufficient_quota`; Anthropic: `rate_limit_error` with
    /// `details.error_code == "enforced_spend_limit_reached"`; no retry header. Checked
    /// before the rate limits; never billed, never charged.
    QuotaExhausted,
    /// A usage limit the user set is reached. Anthropic: 400 `invalid_request_error` ("You
    /// have reached your specified API usage limits…"); OpenAI: 429
    /// `organization_spend_limit_exceeded`. Never billed, never charged.
    UsageLimit,
    /// Ask for these tools to be called (name, arguments object), in the wire format of the
    /// request: OpenAI `message.tool_calls` with `finish_reason: "tool_calls"` (streamed as
    /// `delta.tool_calls`), Anthropic `tool_use` blocks with `stop_reason: "tool_use"`.
    ToolCalls(Vec<(String, Value)>),
}

/// A programmable behaviour. Rules are checked in insertion order; the first
/// one that matches (and is not exhausted) applies.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Substring matched against the concatenated text (system prompt and
    /// every message text, joined with `\n`). Empty matches everything.
    pub when_contains: String,
    /// When set, the rule matches only requests for exactly this model id (as sent in the
    /// body), in addition to `when_contains`.
    pub when_model: Option<String>,
    pub action: Action,
    /// Apply to only the first N matching requests, then skip the rule.
    pub times: Option<usize>,
}

impl Rule {
    pub fn new(when: &str, action: Action) -> Self {
        Self {
            when_contains: when.to_owned(),
            when_model: None,
            action,
            times: None,
        }
    }

    /// Apply `action` to every request for exactly `model`.
    pub fn for_model(model: &str, action: Action) -> Self {
        Self::new("", action).model(model)
    }

    /// Restrict the rule to requests for exactly `model`.
    pub fn model(mut self, model: &str) -> Self {
        self.when_model = Some(model.to_owned());
        self
    }

    /// Limit the rule to the first `n` matching requests.
    pub fn times(mut self, n: usize) -> Self {
        self.times = Some(n);
        self
    }

    /// Always reply `text` to matching requests.
    pub fn reply(when: &str, text: &str) -> Self {
        Self::new(when, Action::Reply(text.to_owned()))
    }

    /// Fail the first `times` matching requests with `status` and a
    /// provider-shaped error body.
    pub fn fail(when: &str, status: u16, times: usize) -> Self {
        Self::new(
            when,
            Action::Status {
                code: status,
                retry_after: None,
                body: String::new(),
            },
        )
        .times(times)
    }

    /// Answer the first `times` matching requests with 429 and
    /// `Retry-After: <retry_after>`.
    pub fn rate_limit(when: &str, retry_after: &str, times: usize) -> Self {
        Self::new(
            when,
            Action::Status {
                code: 429,
                retry_after: Some(retry_after.to_owned()),
                body: String::new(),
            },
        )
        .times(times)
    }

    /// Truncate the responses to matching requests (every time).
    pub fn truncate(when: &str) -> Self {
        Self::new(when, Action::Truncate)
    }

    /// Reply `text` without usage / token counts (every time).
    pub fn no_usage(when: &str, text: &str) -> Self {
        Self::new(when, Action::NoUsage(text.to_owned()))
    }

    /// Wait `delay`, then reply `text` (every time).
    pub fn delay(when: &str, delay: Duration, text: &str) -> Self {
        Self::new(when, Action::Delay(delay, text.to_owned()))
    }
}

/// Which requests [`MockProvider::hold`] holds.
#[derive(Debug, Clone)]
pub enum Hold {
    /// The `n`-th request (1-based, numbered as [`MockProvider::request_count`] counts them)
    /// and every later one.
    From(usize),
    /// Every request whose body contains this (as [`MockProvider::requests_containing`]
    /// searches).
    Containing(String),
}

impl Hold {
    fn picks(&self, number: usize, body: Option<&Value>) -> bool {
        match self {
            Hold::From(n) => number >= *n,
            Hold::Containing(needle) => body.is_some_and(|b| body_contains(b, needle)),
        }
    }
}

/// A running mock server. Dropping it shuts the server down.
pub struct MockProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockProvider {
    /// Start with the default configuration.
    pub fn start() -> Self {
        Self::start_with(MockConfig::default())
    }

    pub fn start_with(config: MockConfig) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("mock: bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("mock: set_nonblocking");
        let addr = listener.local_addr().expect("mock: local_addr");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mock-provider")
            .enable_all()
            .build()
            .expect("mock: build tokio runtime");
        let shared = Arc::new(Shared {
            config,
            count: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            requests: Mutex::new(Vec::new()),
            rules: Mutex::new(Vec::new()),
            rule_count: AtomicUsize::new(0),
            started: Instant::now(),
            buckets: Mutex::new(HashMap::new()),
            ledger: Mutex::new(Vec::new()),
            admissions: Mutex::new(Vec::new()),
            batches: batch::Batches::default(),
            manual_time: Mutex::new(Duration::ZERO),
            flight: Mutex::new(Flight::default()),
            flight_changed: Condvar::new(),
            released: tokio::sync::watch::Sender::new(0),
        });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("mock-provider-main".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("mock: tokio listener")
                        .tap_io(|tcp| {
                            let _ = tcp.set_nodelay(true);
                        });
                    let app = Router::new().fallback(handle).with_state(state);
                    let server = async move {
                        let _ = axum::serve(listener, app).await;
                    };
                    tokio::select! {
                        _ = server => {}
                        _ = rx => {}
                    }
                });
                // Drops every connection task (in-flight responses included).
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .expect("mock: spawn server thread");
        Self {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `url() + "/v1"`, as `OPENAI_BASE_URL` is read by the SDKs.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// `url()`, as `ANTHROPIC_BASE_URL`.
    pub fn anthropic_base_url(&self) -> String {
        self.url()
    }

    /// `url()`, as `OLLAMA_HOST`.
    pub fn ollama_host(&self) -> String {
        self.url()
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Append a rule (rules are checked in insertion order).
    pub fn add_rule(&self, rule: Rule) {
        let mut rules = lock(&self.shared.rules);
        rules.push(RuleSlot { rule, used: 0 });
        self.shared.rule_count.store(rules.len(), Ordering::Release);
    }

    /// Remove every rule.
    pub fn clear_rules(&self) {
        let mut rules = lock(&self.shared.rules);
        rules.clear();
        self.shared.rule_count.store(0, Ordering::Release);
    }

    /// Every request received since start / the last reset, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    pub fn last_request(&self) -> Option<RecordedRequest> {
        lock(&self.shared.requests).last().cloned()
    }

    pub fn request_count(&self) -> usize {
        self.shared.count.load(Ordering::Acquire)
    }

    /// How many recorded request bodies contain `needle`, either in their
    /// compact JSON serialisation or in any of their string values (so text
    /// with newlines or quotes can be searched as written).
    pub fn requests_containing(&self, needle: &str) -> usize {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| body_contains(&r.body, needle))
            .count()
    }

    pub fn reset_requests(&self) {
        let mut reqs = lock(&self.shared.requests);
        reqs.clear();
        self.shared.count.store(0, Ordering::Release);
    }

    /// Total USD billed so far (every 200 the mock generated, at `MockConfig::prices`).
    pub fn billed_usd(&self) -> f64 {
        lock(&self.shared.ledger).iter().map(|e| e.usd).sum()
    }

    /// USD billed so far for `model`.
    pub fn billed_usd_for(&self, model: &str) -> f64 {
        lock(&self.shared.ledger)
            .iter()
            .filter(|e| e.model == model)
            .map(|e| e.usd)
            .sum()
    }

    /// Every billed answer, in order.
    pub fn ledger(&self) -> Vec<LedgerEntry> {
        lock(&self.shared.ledger).clone()
    }

    /// Every chat request answered so far, in the order answered.
    pub fn admissions(&self) -> Vec<Admission> {
        lock(&self.shared.admissions).clone()
    }

    /// How many chat requests got a 429 (rate limits, quota, rules: any kind).
    pub fn refused(&self) -> usize {
        lock(&self.shared.admissions)
            .iter()
            .filter(|a| a.status == 429)
            .count()
    }

    /// How many chat requests were admitted (passed validation and the rate limits).
    pub fn admitted(&self) -> usize {
        lock(&self.shared.admissions)
            .iter()
            .filter(|a| a.requests == 1)
            .count()
    }

    /// From now on, hold the requests `which` picks: each is recorded and counts in flight,
    /// but gets no answer until [`Self::release`]. Holds add up.
    pub fn hold(&self, which: Hold) {
        lock(&self.shared.flight).holds.push(which);
    }

    /// Lets every held request go on (to the delay, the rules and the limits, as usual) and
    /// holds no more.
    pub fn release(&self) {
        let mut flight = lock(&self.shared.flight);
        flight.holds.clear();
        flight.generation += 1;
        self.shared.released.send_replace(flight.generation);
    }

    /// Moves the rate limiter's clock `by` (with [`MockConfig::manual_clock`] only).
    pub fn advance(&self, by: Duration) {
        assert!(
            self.shared.config.manual_clock,
            "mock: the clock is the real one"
        );
        *lock(&self.shared.manual_time) += by;
    }

    /// How many requests are held now.
    pub fn held(&self) -> usize {
        lock(&self.shared.flight).held
    }

    /// How many requests the mock is handling now (held ones included).
    pub fn in_flight(&self) -> usize {
        lock(&self.shared.flight).in_flight
    }

    /// The most requests the mock has handled at once since it started.
    pub fn max_in_flight(&self) -> usize {
        lock(&self.shared.flight).max_in_flight
    }

    /// Blocks until at least `n` requests are held; fails the test after [`WAIT_LIMIT`].
    pub fn wait_held(&self, n: usize) {
        let flight = lock(&self.shared.flight);
        let (flight, _) = self
            .shared
            .flight_changed
            .wait_timeout_while(flight, WAIT_LIMIT, |f| f.held < n)
            .unwrap_or_else(|e| e.into_inner());
        assert!(
            flight.held >= n,
            "mock: {} requests held, never {n} ({} received, {} in flight)",
            flight.held,
            self.request_count(),
            flight.in_flight
        );
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------
// Internals
// ---------------------------------------------------------------------------

struct Shared {
    config: MockConfig,
    count: AtomicUsize,
    next_id: AtomicU64,
    requests: Mutex<Vec<RecordedRequest>>,
    rules: Mutex<Vec<RuleSlot>>,
    /// Lets the hot path skip the rules lock when there are none.
    rule_count: AtomicUsize,
    started: Instant,
    /// Rate-limit buckets per (API key, model).
    buckets: Mutex<HashMap<(String, String), Buckets>>,
    ledger: Mutex<Vec<LedgerEntry>>,
    admissions: Mutex<Vec<Admission>>,
    batches: batch::Batches,
    /// Time since `started` on the manual clock (`MockConfig::manual_clock`).
    manual_time: Mutex<Duration>,
    /// Requests in flight and held, and what holds them.
    flight: Mutex<Flight>,
    /// Notified whenever `flight` counts change.
    flight_changed: Condvar,
    /// The generation of the last release: a held request waits for a newer one.
    released: tokio::sync::watch::Sender<u64>,
}

#[derive(Default)]
struct Flight {
    in_flight: usize,
    max_in_flight: usize,
    held: usize,
    holds: Vec<Hold>,
    generation: u64,
}

/// One request in flight, from its arrival to its answer (or its connection's end).
struct Flying(Arc<Shared>);

impl Flying {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.flight_count(|f| {
            f.in_flight += 1;
            f.max_in_flight = f.max_in_flight.max(f.in_flight);
        });
        Self(Arc::clone(shared))
    }
}

impl Drop for Flying {
    fn drop(&mut self) {
        self.0.flight_count(|f| f.in_flight -= 1);
    }
}

/// One request held, until released (or its connection's end).
struct Held<'a>(&'a Shared);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.flight_count(|f| f.held -= 1);
    }
}

struct RuleSlot {
    rule: Rule,
    used: usize,
}

impl Shared {
    /// Now, on the rate limiter's clock.
    fn now(&self) -> Instant {
        if self.config.manual_clock {
            self.started + *lock(&self.manual_time)
        } else {
            Instant::now()
        }
    }

    /// Changes the flight counts and wakes whoever waits on them.
    fn flight_count(&self, change: impl FnOnce(&mut Flight)) {
        change(&mut lock(&self.flight));
        self.flight_changed.notify_all();
    }

    /// Waits for a release when a hold picks request `number`.
    async fn hold_if_picked(&self, number: usize, body: Option<&Value>) {
        let generation = {
            let mut flight = lock(&self.flight);
            if !flight.holds.iter().any(|h| h.picks(number, body)) {
                return;
            }
            flight.held += 1;
            flight.generation
        };
        self.flight_changed.notify_all();
        let _held = Held(self);
        let mut released = self.released.subscribe();
        let _ = released.wait_for(|g| *g > generation).await;
    }

    /// Records a request; returns its number (as `request_count` counts).
    fn record(
        &self,
        path: &str,
        headers: &HeaderMap,
        body: &Bytes,
        parsed: Option<&Value>,
    ) -> usize {
        let rec = if self.config.record_bodies {
            let body = match parsed {
                Some(v) => v.clone(),
                None if body.is_empty() => Value::Null,
                None => Value::String(String::from_utf8_lossy(body).into_owned()),
            };
            RecordedRequest {
                path: path.to_owned(),
                headers: headers
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().to_owned(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect(),
                body,
                arrived: self.started.elapsed(),
            }
        } else {
            RecordedRequest {
                path: path.to_owned(),
                headers: Vec::new(),
                body: Value::Null,
                arrived: self.started.elapsed(),
            }
        };
        let mut reqs = lock(&self.requests);
        reqs.push(rec);
        self.count.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The action of the first available rule matching the request, which then counts as
    /// used. With `only_fatal`, a first match that is not an account-level refusal
    /// ([`Action::QuotaExhausted`], [`Action::UsageLimit`]) is left alone and `None` returned.
    fn pick_action(&self, text: &str, model: &str, only_fatal: bool) -> Option<Action> {
        if self.rule_count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut rules = lock(&self.rules);
        for slot in rules.iter_mut() {
            let available = slot.rule.times.is_none_or(|n| slot.used < n);
            if available
                && text.contains(slot.rule.when_contains.as_str())
                && slot.rule.when_model.as_deref().is_none_or(|m| m == model)
            {
                if only_fatal && !slot.rule.action.is_fatal() {
                    return None;
                }
                slot.used += 1;
                return Some(slot.rule.action.clone());
            }
        }
        None
    }

    /// The limits that apply to `model`.
    fn limits_for(&self, model: &str) -> Option<&MockLimits> {
        self.config
            .model_limits
            .iter()
            .find(|(m, _)| m == model)
            .map(|(_, l)| l)
            .or(self.config.limits.as_ref())
    }

    /// Bill a generated answer.
    fn bill(&self, key: &str, model: &str, input_tokens: u64, output_tokens: u64) {
        let (pin, pout) = self
            .config
            .prices
            .iter()
            .find(|(m, _, _)| m == model)
            .map_or((0.0, 0.0), |(_, i, o)| (*i, *o));
        let usd = (input_tokens as f64 * pin + output_tokens as f64 * pout) / 1e6;
        lock(&self.ledger).push(LedgerEntry {
            key: key.to_owned(),
            model: model.to_owned(),
            input_tokens,
            output_tokens,
            usd,
        });
    }
}

impl Action {
    /// Quota and usage-limit refusals: answered before the rate limits, never charged.
    fn is_fatal(&self) -> bool {
        matches!(self, Action::QuotaExhausted | Action::UsageLimit)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    OpenAi,
    Anthropic,
    Ollama,
}

/// What the answer to one chat request did, for the admission log and the headers.
#[derive(Default)]
struct Outcome {
    format: Option<Format>,
    key: String,
    model: String,
    requests: u64,
    tokens: u64,
    /// When the limiter decided.
    at: Option<Instant>,
    /// A request of a batch: not logged, not delayed, not rate limited, not billed (its
    /// tokens are left in `billed` for the batch to bill once it completes).
    batch: bool,
    billed: Option<(u64, u64)>,
    /// The rate-limit headers as they stood when the request was admitted: a streamed
    /// answer's head is sent then, before anything is generated.
    head: Option<Vec<(String, String)>>,
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let _flying = Flying::new(&shared);
    if batch::owns(req.uri().path()) {
        return batch::handle(&shared, req).await;
    }
    let mut out = Outcome::default();
    let mut resp = answer(&shared, req, &mut out).await;
    let Some(format) = out.format else {
        return resp;
    };
    let limits = shared.limits_for(&out.model).filter(|l| l.headers);
    if let Some(limits) = limits.filter(|_| format != Format::Ollama && !out.model.is_empty()) {
        let headers = match out.head.take() {
            Some(head) => head,
            None => shared.rate_headers(format, &out.key, &out.model, limits),
        };
        for (name, value) in headers {
            if let (Ok(n), Ok(v)) = (
                header::HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                resp.headers_mut().insert(n, v);
            }
        }
    }
    let at = out.at.unwrap_or_else(|| shared.now());
    let entry = Admission {
        at: at.saturating_duration_since(shared.started),
        key: out.key,
        model: out.model,
        status: resp.status().as_u16(),
        requests: out.requests,
        tokens: out.tokens,
    };
    lock(&shared.admissions).push(entry);
    resp
}

/// Sleeps until `due`, to within a fraction of a millisecond, and never less. tokio's timer
/// counts whole milliseconds and its worker wakes from a wait rounded up to one, so a task
/// slept to `due` runs up to a millisecond or two after it: a server answering "in 50 ms"
/// answered in 51–52. A thread of the blocking pool sleeps to the microsecond (the kernel's
/// timer slack, 50 µs), then wakes the task.
async fn sleep_until_precisely(due: Instant) {
    let sleep = move || std::thread::sleep(due.saturating_duration_since(Instant::now()));
    if tokio::task::spawn_blocking(sleep).await.is_err() {
        // The runtime is shutting down: the answer is not waited for anyway.
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario (or table), top to bottom"
)]
async fn answer(shared: &Shared, req: Request, out: &mut Outcome) -> Response {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    // Record before anything else, so a client killed mid-request still
    // shows up in the log.
    let mut held = Duration::ZERO;
    if !out.batch {
        let number = shared.record(&path, &parts.headers, &bytes, parsed.as_ref());
        let holding = Instant::now();
        shared.hold_if_picked(number, parsed.as_ref()).await;
        held = holding.elapsed();
    }

    // The delay counts from the request's arrival (less any hold), as a server answering in
    // 50 ms does: reading the body and recording it are part of those 50 ms, not added to them.
    // A streamed OpenAI or Anthropic answer sends its head and first event at once and the
    // rest once the delay is over, as a server streaming a generation does.
    let due = started + held + shared.config.delay;
    let streamed_later = path != "/api/chat"
        && parsed
            .as_ref()
            .and_then(|b| b.get("stream"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
    if !shared.config.delay.is_zero() && !out.batch && !streamed_later {
        sleep_until_precisely(due).await;
    }
    let due = (!shared.config.delay.is_zero() && !out.batch).then_some(due);

    let format = match (&parts.method, path.as_str()) {
        (&Method::POST, "/v1/chat/completions") => Format::OpenAi,
        (&Method::POST, "/v1/messages") => Format::Anthropic,
        (&Method::POST, "/api/chat") => Format::Ollama,
        (_, "/v1/chat/completions" | "/v1/messages" | "/api/chat") => {
            return json_response(
                StatusCode::METHOD_NOT_ALLOWED,
                &json!({"error": {"message": "method not allowed", "type": "invalid_request_error"}}),
            );
        }
        _ => {
            return json_response(
                StatusCode::NOT_FOUND,
                &json!({"error": {"message": format!("mock: unknown path {path}"), "type": "not_found_error"}}),
            );
        }
    };
    out.format = Some(format);

    // Authentication / mandatory headers.
    match format {
        Format::OpenAi => {
            let key = parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                // A key, or (as a proxy) basic authentication.
                .and_then(|v| {
                    v.strip_prefix("Bearer ").or_else(|| {
                        v.strip_prefix("Basic ")
                            .filter(|_| shared.config.basic_auth_proxy)
                    })
                })
                .filter(|k| !k.trim().is_empty());
            if let Some(key) = key {
                out.key = key.to_owned();
            } else {
                return error_response(
                    format,
                    401,
                    None,
                    "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
                );
            }
        }
        Format::Anthropic => {
            let key = parts
                .headers
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .filter(|k| !k.trim().is_empty());
            let Some(key) = key else {
                return error_response(format, 401, None, "invalid x-api-key");
            };
            out.key = key.to_owned();
            if !parts.headers.contains_key("anthropic-version") {
                return error_response(format, 400, None, "anthropic-version: header is required");
            }
        }
        Format::Ollama => {}
    }

    let Some(body) = parsed else {
        return error_response(format, 400, None, "invalid JSON body");
    };
    let Some(model) = body.get("model").and_then(Value::as_str) else {
        let msg = match format {
            Format::OpenAi => "you must provide a model parameter",
            Format::Anthropic => "model: Field required",
            Format::Ollama => "model is required",
        };
        return error_response(format, 400, None, msg);
    };
    let model = model.to_owned();
    out.model = model.clone();
    if format == Format::Anthropic && body.get("max_tokens").and_then(Value::as_u64).is_none() {
        return error_response(format, 400, None, "max_tokens: Field required");
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        let msg = match format {
            Format::OpenAi => "Missing required parameter: 'messages'.",
            Format::Anthropic => "messages: Field required",
            Format::Ollama => "messages is required",
        };
        return error_response(format, 400, None, msg);
    };
    let stream = match body.get("stream") {
        None | Some(Value::Null) => format == Format::Ollama,
        Some(v) => v.as_bool().unwrap_or(false),
    };
    if shared.config.refuse_stream_options && body.get("stream_options").is_some() {
        let message = "Unrecognized request argument supplied: stream_options";
        return error_response(format, 400, None, message);
    }
    // OpenAI sends the usage in a last chunk of its own only when asked for.
    let stream_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);

    let shape = match requested_shape(format, &body, shared.config.refuse_schemas) {
        Ok(shape) => shape,
        Err(message) => return error_response(format, 400, None, &message),
    };

    // Conversation text.
    let mut texts: Vec<&str> = Vec::new();
    if format == Format::Anthropic {
        match body.get("system") {
            Some(Value::String(s)) => texts.push(s),
            Some(Value::Array(blocks)) => texts.extend(blocks.iter().filter_map(text_of_part)),
            _ => {}
        }
    }
    for m in messages {
        match m.get("content") {
            Some(Value::String(s)) => texts.push(s),
            Some(Value::Array(parts)) => texts.extend(parts.iter().filter_map(text_of_part)),
            _ => {}
        }
    }
    let input_tokens: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
    let text = texts.join("\n");

    // Account-level refusals come before the rate limits and are never charged.
    if let Some(action) = shared.pick_action(&text, &model, true) {
        out.at = Some(shared.now());
        return fatal_response(shared, format, &action);
    }
    let limits = match format {
        Format::Ollama => None,
        _ if out.batch => None,
        _ => shared.limits_for(&model),
    };
    let charge = match format {
        Format::OpenAi => {
            let framing = limits.map_or(0, |l| l.message_tokens * messages.len() as u64);
            openai_token_charge(&body) + framing
        }
        Format::Anthropic => input_tokens as u64,
        Format::Ollama => 0,
    };
    // Output tokens reserved at admission (`MockLimits::reserve_output`): `max_tokens`.
    let reserved = match (format, limits) {
        (Format::Anthropic, Some(l)) if l.reserve_output && l.otpm.is_some() => {
            body.get("max_tokens").and_then(Value::as_u64).unwrap_or(0)
        }
        _ => 0,
    };
    if let Some(limits) = limits {
        let verdict = shared.admit(&out.key, &model, limits, format, charge, reserved);
        out.at = Some(shared.now());
        if let Err(refusal) = verdict {
            return refusal_response(shared, format, &model, &refusal, limits.retry_after);
        }
        if stream && limits.headers {
            out.head = Some(shared.rate_headers(format, &out.key, &model, limits));
        }
    } else {
        out.at = Some(shared.now());
    }
    out.requests = 1;
    out.tokens = charge;

    let action = shared
        .pick_action(&text, &model, false)
        .unwrap_or_else(|| match &shape {
            Some((_, schema)) => Action::Reply(answer_in_shape(schema).to_string()),
            None => Action::Reply(format!("mock reply to: {}", last_user_text(&body))),
        });

    let mut tool_calls: Vec<(String, Value)> = Vec::new();
    let (text, with_usage, truncate) = match action {
        Action::QuotaExhausted | Action::UsageLimit => {
            return fatal_response(shared, format, &action);
        }
        Action::ToolCalls(calls) => {
            // Each call's arguments are what the model generates.
            let generated = calls
                .iter()
                .map(|(name, args)| format!("{name} {args}"))
                .collect::<Vec<_>>()
                .join(" ");
            tool_calls = calls;
            (generated, true, false)
        }
        Action::Reply(t) => (t, true, false),
        Action::NoUsage(t) => (t, false, false),
        Action::Delay(d, t) => {
            tokio::time::sleep(d).await;
            (t, true, false)
        }
        Action::Truncate => (
            format!("mock reply to: {}", last_user_text(&body)),
            true,
            true,
        ),
        Action::Status {
            code,
            retry_after,
            body,
        } => {
            if body.is_empty() {
                return error_response(
                    format,
                    code,
                    retry_after.as_deref(),
                    &default_error_message(code),
                );
            }
            let mut resp = raw_response(status(code), "application/json", Body::from(body));
            if let Some(ra) = retry_after
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                resp.headers_mut().insert(header::RETRY_AFTER, ra);
            }
            return resp;
        }
    };

    let output_tokens = text.split_whitespace().count();
    // The provider generated this answer: it is billed and its output charged, whether or
    // not it then reaches the client whole.
    if format == Format::Anthropic {
        if let Some(limits) = limits {
            // A streamed answer ends when its delay is over; an unstreamed one was delayed
            // before its admission and ends now.
            let ends = match (stream, due) {
                (true, Some(due)) => due,
                _ => shared.now(),
            };
            shared.charge_output(
                &out.key,
                &model,
                limits,
                output_tokens as u64,
                reserved,
                ends,
            );
        }
        out.tokens += output_tokens as u64;
    }
    if out.batch {
        out.billed = Some((input_tokens as u64, output_tokens as u64));
    } else {
        shared.bill(&out.key, &model, input_tokens as u64, output_tokens as u64);
    }
    let usage = with_usage.then_some((input_tokens, output_tokens));
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);

    match format {
        Format::OpenAi => {
            let mut v = json!({
                "id": format!("chatcmpl-mock{id}"),
                "object": "chat.completion",
                "created": unix_now(),
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": null},
                    "logprobs": null,
                    "finish_reason": "stop"
                }],
                "system_fingerprint": "fp_mock"
            });
            if !tool_calls.is_empty() {
                let asked: Vec<Value> = tool_calls
                    .iter()
                    .enumerate()
                    .map(|(i, (name, args))| {
                        json!({"id": format!("call_mock{id}_{i}"), "type": "function",
                            "function": {"name": name, "arguments": args.to_string()}})
                    })
                    .collect();
                v["choices"][0]["message"]["content"] = Value::Null;
                v["choices"][0]["message"]["tool_calls"] = json!(asked);
                v["choices"][0]["finish_reason"] = json!("tool_calls");
            }
            if let Some((i, o)) = usage {
                v["usage"] =
                    json!({"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o});
            }
            if stream {
                let events = openai_events(&v, stream_usage);
                return sse_response(events, due, truncate);
            }
            finish_single(v, truncate)
        }
        Format::Anthropic => {
            let (a, b) = split_at_fraction(&text, 1, 2);
            let (content, stop_reason) = match &shape {
                _ if !tool_calls.is_empty() => (
                    tool_calls
                        .iter()
                        .enumerate()
                        .map(|(i, (name, args))| {
                            json!({"type": "tool_use", "id": format!("toolu_mock{id}_{i}"),
                                "name": name, "input": args})
                        })
                        .collect::<Value>(),
                    "tool_use",
                ),
                // A forced tool answers with its input: the reply's object.
                Some((name, _)) => {
                    // The object in a scripted reply (a model forced to a tool always
                    // answers with an object).
                    let object = match (text.find('{'), text.rfind('}')) {
                        (Some(a), Some(b)) if a < b => &text[a..=b],
                        _ => "",
                    };
                    let input = serde_json::from_str::<Value>(object)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({"text": text}));
                    (
                        json!([{"type": "tool_use", "id": format!("toolu_mock{id}"), "name": name, "input": input}]),
                        "tool_use",
                    )
                }
                None => (
                    json!([{"type": "text", "text": a}, {"type": "text", "text": b}]),
                    "end_turn",
                ),
            };
            let mut v = json!({
                "id": format!("msg_mock{id}"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": null
            });
            if let Some((i, o)) = usage {
                v["usage"] = json!({"input_tokens": i, "output_tokens": o});
            }
            if stream {
                return sse_response(anthropic_events(&v), due, truncate);
            }
            finish_single(v, truncate)
        }
        Format::Ollama => {
            let created_at = rfc3339_now();
            let done_content = if stream { "" } else { text.as_str() };
            let mut done = json!({
                "model": model,
                "created_at": created_at,
                "message": {"role": "assistant", "content": done_content},
                "done_reason": "stop",
                "done": true,
                "total_duration": started.elapsed().as_nanos() as u64,
                "load_duration": 1_000u64,
            });
            if let Some((i, o)) = usage {
                done["prompt_eval_count"] = json!(i);
                done["prompt_eval_duration"] = json!(1_000u64);
                done["eval_count"] = json!(o);
                done["eval_duration"] = json!(1_000u64);
            }
            if !stream {
                return finish_single(done, truncate);
            }
            let (first, rest) = split_at_fraction(&text, 1, 3);
            let (second, third) = split_at_fraction(rest, 1, 2);
            let mut lines: Vec<Bytes> = [first, second, third]
                .into_iter()
                .filter(|c| !c.is_empty())
                .map(|c| {
                    ndjson_line(&json!({
                        "model": model,
                        "created_at": created_at,
                        "message": {"role": "assistant", "content": c},
                        "done": false
                    }))
                })
                .collect();
            if truncate {
                let first = lines.into_iter().next().unwrap_or_else(|| {
                    let d = ndjson_line(&done);
                    d.slice(..d.len() / 2)
                });
                return truncated_response("application/x-ndjson", first, None);
            }
            lines.push(ndjson_line(&done));
            let stream = futures::stream::iter(lines.into_iter().map(Ok::<Bytes, io::Error>));
            raw_response(
                StatusCode::OK,
                "application/x-ndjson",
                Body::from_stream(stream),
            )
        }
    }
}

// ---------------------------------------------------------------------------
// Rate limits
// ---------------------------------------------------------------------------

/// Slack for float comparisons of bucket levels.
const LEVEL_EPS: f64 = 1e-9;

/// A continuously refilling token bucket.
#[derive(Debug, Clone)]
struct Bucket {
    /// Per-minute limit.
    limit: u64,
    capacity: f64,
    /// Refill per second.
    rate: f64,
    /// May go below zero (debt).
    level: f64,
    last: Instant,
}

impl Bucket {
    fn new(limit: u64, window: Duration, now: Instant) -> Self {
        let capacity = limit as f64 * window.as_secs_f64() / 60.0;
        Self {
            limit,
            capacity,
            rate: limit as f64 / 60.0,
            level: capacity,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.level = (self.level + dt * self.rate).min(self.capacity);
        self.last = now;
    }

    /// The level a charge needs: the charge, or a full bucket when it exceeds the capacity.
    fn need(&self, charge: u64) -> f64 {
        (charge as f64).min(self.capacity)
    }

    /// Seconds until the level reaches `need`.
    fn wait_for(&self, need: f64) -> f64 {
        if self.rate <= 0.0 {
            return 60.0;
        }
        ((need - self.level) / self.rate).max(0.0)
    }

    /// Remaining, in per-minute units: floor(level / capacity * limit), level clamped.
    fn remaining(&self) -> u64 {
        if self.capacity <= 0.0 {
            return 0;
        }
        let l = self.level.clamp(0.0, self.capacity);
        (l / self.capacity * self.limit as f64 + LEVEL_EPS).floor() as u64
    }

    /// Seconds until the bucket is full again (debt included).
    fn reset_secs(&self) -> f64 {
        self.wait_for(self.capacity)
    }
}

/// The buckets of one (key, model).
#[derive(Debug, Clone)]
struct Buckets {
    requests: Option<Bucket>,
    tokens: Option<Bucket>,
    input: Option<Bucket>,
    output: Option<Bucket>,
    /// Output reservations given back when their answer ends: (when, tokens).
    settlements: Vec<(Instant, f64)>,
}

impl Buckets {
    fn new(limits: &MockLimits, now: Instant) -> Self {
        let b = |l: Option<u64>| l.map(|l| Bucket::new(l, limits.window, now));
        Self {
            requests: b(limits.rpm),
            tokens: b(limits.tpm),
            input: b(limits.itpm),
            output: b(limits.otpm),
            settlements: Vec::new(),
        }
    }

    fn refill(&mut self, now: Instant) {
        for b in [
            &mut self.requests,
            &mut self.tokens,
            &mut self.input,
            &mut self.output,
        ]
        .into_iter()
        .flatten()
        {
            b.refill(now);
        }
        // Reservations whose answers have ended come back.
        let output = &mut self.output;
        self.settlements.retain(|&(ends, back)| {
            if ends > now {
                return true;
            }
            if let Some(o) = output.as_mut() {
                o.level = (o.level + back).min(o.capacity);
            }
            false
        });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Requests,
    Tokens,
    InputTokens,
    OutputTokens,
}

/// A refusal by the rate limiter.
#[derive(Debug, Clone)]
enum Refusal {
    /// Retry after `wait` seconds. `used` is limit - remaining, in per-minute units.
    Retry {
        kind: Kind,
        limit: u64,
        used: u64,
        requested: u64,
        wait: f64,
    },
    /// The charge exceeds the per-minute limit itself: never succeeds.
    TooLarge {
        kind: Kind,
        limit: u64,
        requested: u64,
        /// Seconds until that bucket is full (Anthropic's `retry-after`).
        reset: f64,
    },
}

impl Shared {
    /// Admit a request (charging it) or refuse it (charging nothing). `charge` is the
    /// OpenAI token charge or the Anthropic input tokens; `reserved` the Anthropic output
    /// tokens reserved at admission (0 unless `MockLimits::reserve_output`).
    fn admit(
        &self,
        key: &str,
        model: &str,
        limits: &MockLimits,
        format: Format,
        charge: u64,
        reserved: u64,
    ) -> Result<(), Refusal> {
        self.with_buckets(key, model, limits, |b| {
            let checks: [(Kind, Option<&Bucket>, u64); 3] = match format {
                Format::OpenAi => [
                    (Kind::Requests, b.requests.as_ref(), 1),
                    (Kind::Tokens, b.tokens.as_ref(), charge),
                    (Kind::OutputTokens, None, 0),
                ],
                _ => [
                    (Kind::Requests, b.requests.as_ref(), 1),
                    (Kind::InputTokens, b.input.as_ref(), charge),
                    (Kind::OutputTokens, b.output.as_ref(), reserved),
                ],
            };
            let mut worst: Option<Refusal> = None;
            for (kind, bucket, c) in checks {
                let Some(bucket) = bucket else { continue };
                if c > bucket.limit {
                    return Err(Refusal::TooLarge {
                        kind,
                        limit: bucket.limit,
                        requested: c,
                        reset: bucket.reset_secs(),
                    });
                }
                let wait = if kind == Kind::OutputTokens && c == 0 {
                    // Output is charged after the answer; admission needs a positive level.
                    if bucket.level > 0.0 {
                        continue;
                    }
                    bucket.wait_for(0.0) + 0.001
                } else {
                    let need = bucket.need(c);
                    if bucket.level + LEVEL_EPS >= need {
                        continue;
                    }
                    bucket.wait_for(need)
                };
                let longer = match &worst {
                    Some(Refusal::Retry { wait: w, .. }) => wait > *w,
                    _ => true,
                };
                if longer {
                    worst = Some(Refusal::Retry {
                        kind,
                        limit: bucket.limit,
                        used: bucket.limit - bucket.remaining(),
                        requested: c,
                        wait,
                    });
                }
            }
            if let Some(refusal) = worst {
                return Err(refusal);
            }
            if let Some(r) = &mut b.requests {
                r.level -= 1.0;
            }
            let tokens = match format {
                Format::OpenAi => &mut b.tokens,
                _ => &mut b.input,
            };
            if let Some(t) = tokens {
                t.level -= charge as f64;
            }
            if let Some(o) = &mut b.output {
                o.level -= reserved as f64;
            }
            Ok(())
        })
    }

    /// Runs `f` on the buckets of (`key`, `model`), made full at first use and refilled to now.
    fn with_buckets<R>(
        &self,
        key: &str,
        model: &str,
        limits: &MockLimits,
        f: impl FnOnce(&mut Buckets) -> R,
    ) -> R {
        let now = self.now();
        let mut map = lock(&self.buckets);
        let b = map
            .entry((key.to_owned(), model.to_owned()))
            .or_insert_with(|| Buckets::new(limits, now));
        b.refill(now);
        f(b)
    }

    /// Charge an Anthropic answer's output tokens to its output bucket: at once, or, for an
    /// answer that reserved `reserved` at admission, the reservation settled to what was
    /// generated when the answer `ends`.
    fn charge_output(
        &self,
        key: &str,
        model: &str,
        limits: &MockLimits,
        output_tokens: u64,
        reserved: u64,
        ends: Instant,
    ) {
        self.with_buckets(key, model, limits, |b| {
            if reserved == 0 {
                if let Some(o) = &mut b.output {
                    o.level -= output_tokens as f64;
                }
            } else {
                b.settlements
                    .push((ends, reserved as f64 - output_tokens as f64));
            }
        });
        // An answer that ends now is settled now.
        self.with_buckets(key, model, limits, |_| ());
    }

    /// The provider's rate-limit headers for (key, model), describing the buckets now.
    fn rate_headers(
        &self,
        format: Format,
        key: &str,
        model: &str,
        limits: &MockLimits,
    ) -> Vec<(String, String)> {
        self.with_buckets(key, model, limits, |b| {
            let mut out = Vec::new();
            match format {
                Format::OpenAi => {
                    for (name, bucket) in [("requests", &b.requests), ("tokens", &b.tokens)] {
                        let Some(bucket) = bucket else { continue };
                        out.push((
                            format!("x-ratelimit-limit-{name}"),
                            bucket.limit.to_string(),
                        ));
                        out.push((
                            format!("x-ratelimit-remaining-{name}"),
                            bucket.remaining().to_string(),
                        ));
                        out.push((
                            format!("x-ratelimit-reset-{name}"),
                            go_duration_secs(bucket.reset_secs()),
                        ));
                    }
                }
                Format::Anthropic => {
                    let wall = SystemTime::now();
                    let mut push = |name: &str, bucket: &Bucket, round: bool| {
                        let remaining = if round {
                            (bucket.remaining() + 500) / 1000 * 1000
                        } else {
                            bucket.remaining()
                        };
                        out.push((
                            format!("anthropic-ratelimit-{name}-limit"),
                            bucket.limit.to_string(),
                        ));
                        out.push((
                            format!("anthropic-ratelimit-{name}-remaining"),
                            remaining.to_string(),
                        ));
                        out.push((
                            format!("anthropic-ratelimit-{name}-reset"),
                            rfc3339_secs_ceil(wall, bucket.reset_secs()),
                        ));
                    };
                    if let Some(r) = &b.requests {
                        push("requests", r, false);
                    }
                    if let Some(i) = &b.input {
                        push("input-tokens", i, true);
                    }
                    if let Some(o) = &b.output {
                        push("output-tokens", o, true);
                    }
                    let fraction = |b: &Bucket| {
                        if b.limit == 0 {
                            0.0
                        } else {
                            b.remaining() as f64 / b.limit as f64
                        }
                    };
                    let tokens = match (&b.input, &b.output) {
                        (Some(i), Some(o)) => Some(if fraction(o) < fraction(i) { o } else { i }),
                        (i, o) => i.as_ref().or(o.as_ref()),
                    };
                    if let Some(t) = tokens {
                        push("tokens", t, true);
                    }
                }
                Format::Ollama => {}
            }
            out
        })
    }
}

/// A duration as OpenAI writes its reset headers (Go's `time.Duration` format, rounded up to
/// whole milliseconds): `0s`, `12ms`, `1.5s`, `20s`, `6m0s`, `2m59.56s`, `1h0m0s`.
pub fn go_duration(d: Duration) -> String {
    go_duration_secs(d.as_secs_f64())
}

fn go_duration_secs(secs: f64) -> String {
    let ms = (secs.max(0.0) * 1000.0 - 1e-6).ceil().max(0.0) as u64;
    if ms == 0 {
        return "0s".into();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let seconds = |ms: u64| {
        let s = format!("{}.{:03}", ms / 1000, ms % 1000);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s}s")
    };
    if ms < 60_000 {
        return seconds(ms);
    }
    let h = ms / 3_600_000;
    let m = ms / 60_000 % 60;
    let rest = seconds(ms % 60_000);
    if h > 0 {
        format!("{h}h{m}m{rest}")
    } else {
        format!("{m}m{rest}")
    }
}

/// `wall + secs` as `YYYY-MM-DDTHH:MM:SSZ`, rounded up to the next whole second.
fn rfc3339_secs_ceil(wall: SystemTime, secs: f64) -> String {
    let t = wall.duration_since(UNIX_EPOCH).unwrap_or_default()
        + Duration::from_secs_f64(secs.max(0.0));
    let whole = t.as_secs() + u64::from(t.subsec_nanos() > 0);
    let (y, m, d, hh, mm, ss) = civil(whole as i64);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// Whole seconds, rounded up, for a `retry-after` header (at least 1).
fn retry_after_secs(wait: f64) -> String {
    ((wait - 1e-6).ceil().max(1.0) as u64).to_string()
}

fn request_id(shared: &Shared) -> String {
    format!(
        "req_mock{:016x}",
        shared.next_id.fetch_add(1, Ordering::Relaxed)
    )
}

const OPENAI_RATE_DOCS: &str =
    "Visit https://platform.openai.com/account/rate-limits to learn more.";
const ANTHROPIC_RATE_TAIL: &str = "For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.";

/// The 429 of a rate-limit refusal, in the provider's shape.
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario (or table), top to bottom"
)]
fn refusal_response(
    shared: &Shared,
    format: Format,
    model: &str,
    refusal: &Refusal,
    retry: RetryAfterHeader,
) -> Response {
    let (v, wait) = match format {
        Format::OpenAi => {
            let (kind, limit, requested) = match refusal {
                Refusal::Retry {
                    kind,
                    limit,
                    requested,
                    ..
                }
                | Refusal::TooLarge {
                    kind,
                    limit,
                    requested,
                    ..
                } => (*kind, *limit, *requested),
            };
            let (unit, abbr) = match kind {
                Kind::Requests => ("requests", "RPM"),
                _ => ("tokens", "TPM"),
            };
            let (message, wait) = match refusal {
                Refusal::Retry { used, wait, .. } => (
                    format!(
                        "Rate limit reached for {model} in organization org-mock on {unit} per min ({abbr}): Limit {limit}, Used {used}, Requested {requested}. Please try again in {}. {OPENAI_RATE_DOCS}",
                        go_duration_secs(*wait)
                    ),
                    Some(*wait),
                ),
                Refusal::TooLarge { .. } => (
                    format!(
                        "Request too large for {model} in organization org-mock on {unit} per min ({abbr}): Limit {limit}, Requested {requested}. The input or output tokens must be reduced in order to run successfully. {OPENAI_RATE_DOCS}"
                    ),
                    None,
                ),
            };
            (
                json!({"error": {"message": message, "type": unit, "param": null, "code": "rate_limit_exceeded"}}),
                wait,
            )
        }
        _ => {
            let (message, wait) = match refusal {
                Refusal::Retry {
                    kind, limit, wait, ..
                } => {
                    let what = match kind {
                        Kind::Requests => "requests",
                        Kind::OutputTokens => "output tokens",
                        _ => "input tokens",
                    };
                    (
                        format!(
                            "This request would exceed the rate limit for your organization (org-mock) of {limit} {what} per minute. {ANTHROPIC_RATE_TAIL}"
                        ),
                        *wait,
                    )
                }
                Refusal::TooLarge {
                    kind, limit, reset, ..
                } => {
                    let what = match kind {
                        Kind::Requests => "requests",
                        _ => "input tokens",
                    };
                    (
                        format!(
                            "This request would exceed your organization's rate limit of {limit} {what} per minute. {ANTHROPIC_RATE_TAIL}"
                        ),
                        *reset,
                    )
                }
            };
            (
                json!({"type": "error", "error": {"type": "rate_limit_error", "message": message}, "request_id": request_id(shared)}),
                Some(wait),
            )
        }
    };
    let mut resp = json_response(StatusCode::TOO_MANY_REQUESTS, &v);
    if let Some(wait) = wait {
        let header = match (retry, format) {
            (RetryAfterHeader::None, _) => None,
            (RetryAfterHeader::Millis, Format::OpenAi) => Some((
                "retry-after-ms",
                ((wait * 1000.0 - 1e-6).ceil().max(1.0) as u64).to_string(),
            )),
            _ => Some(("retry-after", retry_after_secs(wait))),
        };
        if let Some((name, value)) = header {
            resp.headers_mut().insert(
                name,
                HeaderValue::from_str(&value).expect("ascii header value"),
            );
        }
    }
    resp
}

/// The answer to [`Action::QuotaExhausted`] / [`Action::UsageLimit`] in the request's format.
fn fatal_response(shared: &Shared, format: Format, action: &Action) -> Response {
    let quota = matches!(action, Action::QuotaExhausted);
    let (code, v) = match (format, quota) {
        (Format::OpenAi, true) => (
            429,
            json!({"error": {
                "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}),
        ),
        (Format::OpenAi, false) => (
            429,
            json!({"error": {
                "message": "You have exceeded your organization's spend limit. Increase it at https://platform.openai.com/settings/organization/limits or wait until it resets.",
                "type": "invalid_request_error", "param": null, "code": "organization_spend_limit_exceeded"}}),
        ),
        (Format::Anthropic, true) => (
            429,
            json!({"type": "error", "error": {
                "type": "rate_limit_error",
                "message": "You have reached your monthly spend limit. Please increase it at https://console.anthropic.com/settings/limits or wait until the start of next month.",
                "details": {"error_code": "enforced_spend_limit_reached"}},
                "request_id": request_id(shared)}),
        ),
        (Format::Anthropic, false) => (
            400,
            json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC."}}),
        ),
        (Format::Ollama, true) => (429, json!({"error": "mock: quota exhausted"})),
        (Format::Ollama, false) => (429, json!({"error": "mock: usage limit reached"})),
    };
    json_response(status(code), &v)
}

// ---------------------------------------------------------------------------
// Structured output
// ---------------------------------------------------------------------------

/// The schema a request asks its answer to follow (its name and the schema), checked as the
/// real API checks it; the 400 message otherwise.
fn requested_shape(
    format: Format,
    body: &Value,
    refuse: bool,
) -> Result<Option<(String, Value)>, String> {
    let shape = match format {
        Format::OpenAi => openai_shape(body)?,
        Format::Anthropic => anthropic_shape(body)?,
        Format::Ollama => match body.get("format") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s == "json" => None,
            Some(schema @ Value::Object(_)) => {
                check_schema(schema, false)?;
                Some(("format".to_owned(), schema.clone()))
            }
            Some(other) => return Err(format!("invalid format: {other}")),
        },
    };
    if refuse && shape.is_some() {
        return Err("mock: this server does not support structured output".into());
    }
    Ok(shape)
}

fn openai_shape(body: &Value) -> Result<Option<(String, Value)>, String> {
    let Some(rf) = body.get("response_format") else {
        return Ok(None);
    };
    match rf.get("type").and_then(Value::as_str) {
        Some("text" | "json_object") => Ok(None),
        Some("json_schema") => {
            let js = rf
                .get("json_schema")
                .ok_or("Missing required parameter: 'response_format.json_schema'.")?;
            let name = js.get("name").and_then(Value::as_str).unwrap_or_default();
            if !valid_name(name, 64) {
                return Err(format!(
                    "Invalid 'response_format.json_schema.name': '{name}'."
                ));
            }
            let schema = js
                .get("schema")
                .filter(|s| s.is_object())
                .ok_or("Invalid schema for response_format: schema must be an object.")?;
            let strict = js.get("strict").and_then(Value::as_bool).unwrap_or(false);
            check_schema(schema, strict)
                .map_err(|e| format!("Invalid schema for response_format '{name}': {e}"))?;
            Ok(Some((name.to_owned(), schema.clone())))
        }
        other => Err(format!(
            "Invalid value for 'response_format.type': {other:?}."
        )),
    }
}

fn anthropic_shape(body: &Value) -> Result<Option<(String, Value)>, String> {
    let tools = match body.get("tools") {
        None => None,
        Some(Value::Array(tools)) => Some(tools),
        Some(_) => return Err("tools: Input should be a valid list".into()),
    };
    for tool in tools.into_iter().flatten() {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        if !valid_name(name, 128) {
            return Err(format!(
                "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$' ({name})"
            ));
        }
        let schema = tool
            .get("input_schema")
            .ok_or("tools.0.custom.input_schema: Field required")?;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("tools.0.custom.input_schema.type: Input should be 'object'".into());
        }
        check_schema(schema, false)?;
    }
    let Some(choice) = body.get("tool_choice") else {
        return Ok(None);
    };
    match choice.get("type").and_then(Value::as_str) {
        Some("tool") => {
            let name = choice
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let tool = tools
                .into_iter()
                .flatten()
                .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
                .ok_or(format!("tool_choice: tool '{name}' not found in tools"))?;
            Ok(Some((name.to_owned(), tool["input_schema"].clone())))
        }
        Some("auto" | "any" | "none") => Ok(None),
        other => Err(format!("tool_choice.type: invalid value {other:?}")),
    }
}

fn valid_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A JSON schema's checks: known types; in strict mode (OpenAI), every object lists all its
/// properties as required and sets `additionalProperties: false`.
fn check_schema(schema: &Value, strict: bool) -> Result<(), String> {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        None if schema.get("enum").is_some() || schema.get("anyOf").is_some() => Vec::new(),
        None => return Err(format!("schema without a type: {schema}")),
        Some(other) => return Err(format!("invalid type {other}")),
    };
    for t in &types {
        if ![
            "object", "array", "string", "integer", "number", "boolean", "null",
        ]
        .contains(t)
        {
            return Err(format!("unknown type '{t}'"));
        }
    }
    if let Some(values) = schema.get("enum") {
        let values = values.as_array().ok_or("enum must be an array")?;
        if values.is_empty() {
            return Err("enum must not be empty".into());
        }
    }
    if strict && (schema.get("maxLength").is_some() || schema.get("minLength").is_some()) {
        // As OpenAI's strict mode: length bounds on strings are not supported.
        return Err("'maxLength' is not permitted in strict mode".into());
    }
    if types.contains(&"object") {
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if strict {
            if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
                return Err(
                    "'additionalProperties' is required to be supplied and to be false".into(),
                );
            }
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(missing) = properties.keys().find(|k| !required.contains(&k.as_str())) {
                return Err(format!(
                    "'required' is required to include every key in properties; missing '{missing}'"
                ));
            }
        }
        for (_, p) in properties {
            check_schema(&p, strict)?;
        }
    }
    if let Some(items) = schema.get("items") {
        check_schema(items, strict)?;
    }
    Ok(())
}

/// An answer that follows `schema`: each property filled in (the largest value of an enum of
/// integers, the first of another enum, `mock <name>` for a string).
fn answer_in_shape(schema: &Value) -> Value {
    fn value_for(name: &str, schema: &Value) -> Value {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            let largest = values.iter().filter_map(Value::as_i64).max();
            return largest
                .map(Value::from)
                .or_else(|| values.iter().find(|v| !v.is_null()).cloned())
                .unwrap_or(Value::Null);
        }
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        match types.iter().find(|t| **t != "null") {
            Some(&"object") => answer_in_shape(schema),
            Some(&"integer" | &"number") => json!(1),
            Some(&"boolean") => json!(true),
            Some(&"array") => json!([]),
            Some(_) => Value::String(format!("mock {name}")),
            None => Value::Null,
        }
    }
    let mut object = serde_json::Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, p) in properties {
            object.insert(name.clone(), value_for(name, p));
        }
    }
    Value::Object(object)
}

fn text_of_part(p: &Value) -> Option<&str> {
    match p.get("type").and_then(Value::as_str) {
        Some("text") | Some("input_text") => p.get("text").and_then(Value::as_str),
        // A tool's result sent back (Anthropic), when its content is a text.
        Some("tool_result") => p.get("content").and_then(Value::as_str),
        _ => None,
    }
}

/// Text of the last `user` message of a chat body (any of the three formats).
fn last_user_text(body: &Value) -> String {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    let Some(m) = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    else {
        return String::new();
    };
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(text_of_part)
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn body_contains(v: &Value, needle: &str) -> bool {
    fn strings_contain(v: &Value, needle: &str) -> bool {
        match v {
            Value::String(s) => s.contains(needle),
            Value::Array(a) => a.iter().any(|x| strings_contain(x, needle)),
            Value::Object(o) => o
                .iter()
                .any(|(k, x)| k.contains(needle) || strings_contain(x, needle)),
            _ => false,
        }
    }
    if v.is_null() {
        return false;
    }
    strings_contain(v, needle) || v.to_string().contains(needle)
}

/// Split `s` on a char boundary after `num/den` of its characters.
fn split_at_fraction(s: &str, num: usize, den: usize) -> (&str, &str) {
    let chars = s.chars().count();
    let k = chars * num / den;
    let idx = s.char_indices().nth(k).map_or(s.len(), |(i, _)| i);
    s.split_at(idx)
}

fn ndjson_line(v: &Value) -> Bytes {
    let mut buf = serde_json::to_vec(v).expect("serialize");
    buf.push(b'\n');
    Bytes::from(buf)
}

/// A completion's chunks, as OpenAI streams it: the role, the content in two deltas, the
/// finish reason, the usage (when asked for and known), then `[DONE]`.
fn openai_events(v: &Value, with_usage: bool) -> Vec<Bytes> {
    let chunk = |choices: Value| {
        let mut c = json!({
            "id": v["id"], "object": "chat.completion.chunk", "created": v["created"],
            "model": v["model"], "system_fingerprint": "fp_mock", "choices": choices,
        });
        if with_usage {
            c["usage"] = Value::Null;
        }
        c
    };
    let text = v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    let (a, b) = split_at_fraction(text, 1, 2);
    let mut chunks = vec![chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": null}, "logprobs": null, "finish_reason": null}]),
    )];
    for part in [a, b].into_iter().filter(|p| !p.is_empty()) {
        chunks.push(chunk(
            json!([{"index": 0, "delta": {"content": part}, "logprobs": null, "finish_reason": null}]),
        ));
    }
    // Tool calls: each one's id and name first, then its arguments in two fragments.
    let asked = v["choices"][0]["message"]["tool_calls"].as_array();
    for (i, call) in asked.into_iter().flatten().enumerate() {
        let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
        let (a, b) = split_at_fraction(arguments, 1, 2);
        chunks.push(chunk(
            json!([{"index": 0, "delta": {"tool_calls": [{"index": i,
            "id": call["id"], "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""}}]},
            "logprobs": null, "finish_reason": null}]),
        ));
        for part in [a, b] {
            chunks.push(chunk(
                json!([{"index": 0, "delta": {"tool_calls": [{"index": i,
                "function": {"arguments": part}}]}, "logprobs": null, "finish_reason": null}]),
            ));
        }
    }
    chunks.push(chunk(
        json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": v["choices"][0]["finish_reason"]}]),
    ));
    if with_usage && !v["usage"].is_null() {
        let mut last = chunk(json!([]));
        last["usage"] = v["usage"].clone();
        chunks.push(last);
    }
    let mut events: Vec<Bytes> = chunks
        .iter()
        .map(|c| Bytes::from(format!("data: {c}\n\n")))
        .collect();
    events.push(Bytes::from_static(b"data: [DONE]\n\n"));
    events
}

/// A message's events, as Anthropic streams it: `message_start` with the input count, each
/// block's start, its text or input JSON in two deltas and its stop, `message_delta` with the
/// stop reason and the output count, then `message_stop`.
fn anthropic_events(v: &Value) -> Vec<Bytes> {
    let event = |kind: &str, data: Value| Bytes::from(format!("event: {kind}\ndata: {data}\n\n"));
    let mut start = v.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    if let Some(input) = v.pointer("/usage/input_tokens") {
        start["usage"] = json!({"input_tokens": input, "output_tokens": 1});
    }
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": start}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    for (index, block) in v["content"].as_array().into_iter().flatten().enumerate() {
        let (empty, deltas) = if block["type"] == "tool_use" {
            let mut empty = block.clone();
            empty["input"] = json!({});
            let input = block["input"].to_string();
            let (a, b) = split_at_fraction(&input, 1, 2);
            let deltas: Vec<Value> = [a, b]
                .iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect();
            (empty, deltas)
        } else {
            let text = block["text"].as_str().unwrap_or_default();
            let (a, b) = split_at_fraction(text, 1, 2);
            let deltas: Vec<Value> = [a, b]
                .iter()
                .filter(|p| !p.is_empty())
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect();
            (json!({"type": "text", "text": ""}), deltas)
        };
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": empty}),
        ));
        for delta in deltas {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    let mut delta = json!({
        "type": "message_delta",
        "delta": {"stop_reason": v["stop_reason"], "stop_sequence": null},
    });
    if let Some(output) = v.pointer("/usage/output_tokens") {
        delta["usage"] = json!({"output_tokens": output});
    }
    events.push(event("message_delta", delta));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    events
}

/// 200 with `events` as server-sent events: the first at once, the others once `due` has
/// come (the generation's time). Truncated: the first, then the connection fails.
fn sse_response(events: Vec<Bytes>, due: Option<Instant>, truncate: bool) -> Response {
    let mut events = events.into_iter();
    let first = events.next().unwrap_or_default();
    if truncate {
        return truncated_response("text/event-stream", first, None);
    }
    let rest: Bytes = events.flat_map(|e| e.to_vec()).collect::<Vec<u8>>().into();
    let parts = futures::stream::unfold(0u8, move |step| {
        let (first, rest) = (first.clone(), rest.clone());
        async move {
            match step {
                0 => Some((Ok::<Bytes, io::Error>(first), 1)),
                1 => {
                    if let Some(due) = due {
                        sleep_until_precisely(due).await;
                    }
                    Some((Ok(rest), 2))
                }
                _ => None,
            }
        }
    });
    let mut resp = raw_response(
        StatusCode::OK,
        "text/event-stream",
        Body::from_stream(parts),
    );
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

fn finish_single(v: Value, truncate: bool) -> Response {
    let bytes = Bytes::from(serde_json::to_vec(&v).expect("serialize"));
    if truncate {
        let full = bytes.len();
        return truncated_response("application/json", bytes.slice(..full / 2), Some(full));
    }
    raw_response(StatusCode::OK, "application/json", Body::from(bytes))
}

/// 200 with a body that sends `part`, pauses, then fails so hyper aborts the
/// connection. `full_len`, when given, is announced as `content-length`.
fn truncated_response(
    content_type: &'static str,
    part: Bytes,
    full_len: Option<usize>,
) -> Response {
    let stream = futures::stream::unfold(Some(part), |state| async move {
        match state {
            Some(part) => Some((Ok::<Bytes, io::Error>(part), None)),
            None => {
                tokio::time::sleep(TRUNCATE_PAUSE).await;
                Some((
                    Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "mock: truncated response",
                    )),
                    None,
                ))
            }
        }
    });
    let mut resp = raw_response(StatusCode::OK, content_type, Body::from_stream(stream));
    if let Some(n) = full_len {
        resp.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    resp
}

fn raw_response(code: StatusCode, content_type: &'static str, body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = code;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

fn json_response(code: StatusCode, v: &Value) -> Response {
    raw_response(
        code,
        "application/json",
        Body::from(serde_json::to_vec(v).expect("serialize")),
    )
}

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn default_error_message(code: u16) -> String {
    match code {
        400 => "mock: bad request".into(),
        401 => "mock: unauthorized".into(),
        403 => "mock: forbidden".into(),
        404 => "mock: not found".into(),
        429 => "mock: rate limit reached, please retry later".into(),
        500 => "mock: internal server error".into(),
        502 => "mock: bad gateway".into(),
        503 => "mock: service unavailable".into(),
        529 => "mock: overloaded".into(),
        c => format!("mock: status {c}"),
    }
}

/// An error response in the provider's own shape.
fn error_response(format: Format, code: u16, retry_after: Option<&str>, message: &str) -> Response {
    let v = match format {
        Format::OpenAi => {
            let (kind, err_code) = match code {
                401 => ("invalid_request_error", Value::from("invalid_api_key")),
                429 => ("requests", Value::from("rate_limit_exceeded")),
                400..=499 => ("invalid_request_error", Value::Null),
                _ => ("server_error", Value::Null),
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": err_code}})
        }
        Format::Anthropic => {
            let kind = match code {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                503 | 529 => "overloaded_error",
                400..=499 => "invalid_request_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Format::Ollama => json!({"error": message}),
    };
    let mut resp = json_response(status(code), &v);
    if let Some(ra) = retry_after.and_then(|v| HeaderValue::from_str(v).ok()) {
        resp.headers_mut().insert(header::RETRY_AFTER, ra);
    }
    resp
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Current UTC time as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (Ollama's `created_at`).
fn rfc3339_now() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let (y, m, d, hh, mm, ss) = civil(now.as_secs() as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{:06}Z",
        now.subsec_micros()
    )
}

/// Seconds since the Unix epoch as UTC (year, month, day, hour, minute, second).
fn civil(secs: i64) -> (i64, i64, i64, i64, i64, i64) {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, sod / 3600, (sod % 3600) / 60, sod % 60)
}
