#![allow(dead_code)]
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

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use axum::serve::ListenerExt;
use serde_json::{Value, json};

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
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            record_bodies: true,
            basic_auth_proxy: false,
            refuse_schemas: false,
        }
    }
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
}

/// A programmable behaviour. Rules are checked in insertion order; the first
/// one that matches (and is not exhausted) applies.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Substring matched against the concatenated text (system prompt and
    /// every message text, joined with `\n`). Empty matches everything.
    pub when_contains: String,
    pub action: Action,
    /// Apply to only the first N matching requests, then skip the rule.
    pub times: Option<usize>,
}

impl Rule {
    pub fn new(when: &str, action: Action) -> Self {
        Self {
            when_contains: when.to_owned(),
            action,
            times: None,
        }
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
}

struct RuleSlot {
    rule: Rule,
    used: usize,
}

impl Shared {
    fn record(&self, path: &str, headers: &HeaderMap, body: &Bytes, parsed: Option<&Value>) {
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
            }
        } else {
            RecordedRequest {
                path: path.to_owned(),
                headers: Vec::new(),
                body: Value::Null,
            }
        };
        let mut reqs = lock(&self.requests);
        reqs.push(rec);
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    fn pick_action(&self, text: &str) -> Option<Action> {
        if self.rule_count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut rules = lock(&self.rules);
        for slot in rules.iter_mut() {
            let available = slot.rule.times.is_none_or(|n| slot.used < n);
            if available && text.contains(slot.rule.when_contains.as_str()) {
                slot.used += 1;
                return Some(slot.rule.action.clone());
            }
        }
        None
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

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    // Record before anything else, so a client killed mid-request still
    // shows up in the log.
    shared.record(&path, &parts.headers, &bytes, parsed.as_ref());

    if !shared.config.delay.is_zero() {
        tokio::time::sleep(shared.config.delay).await;
    }

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

    // Authentication / mandatory headers.
    match format {
        Format::OpenAi => {
            let ok = parts
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
                .is_some_and(|k| !k.trim().is_empty());
            if !ok {
                return error_response(
                    format,
                    401,
                    None,
                    "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
                );
            }
        }
        Format::Anthropic => {
            let key_ok = parts
                .headers
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|k| !k.trim().is_empty());
            if !key_ok {
                return error_response(format, 401, None, "invalid x-api-key");
            }
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
    if stream && format != Format::Ollama {
        return error_response(
            format,
            400,
            None,
            "mock: streaming is not supported for this format",
        );
    }

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
    let action = shared
        .pick_action(&texts.join("\n"))
        .unwrap_or_else(|| match &shape {
            Some((_, schema)) => Action::Reply(answer_in_shape(schema).to_string()),
            None => Action::Reply(format!("mock reply to: {}", last_user_text(&body))),
        });

    let (text, with_usage, truncate) = match action {
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
            if let Some((i, o)) = usage {
                v["usage"] =
                    json!({"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o});
            }
            finish_single(v, truncate)
        }
        Format::Anthropic => {
            let (a, b) = split_at_fraction(&text, 1, 2);
            let (content, stop_reason) = match &shape {
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
    let secs = now.as_secs() as i64;
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
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        sod / 3600,
        (sod % 3600) / 60,
        sod % 60,
        now.subsec_micros()
    )
}
