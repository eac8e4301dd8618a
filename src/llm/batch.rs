//! Batches in provider-neutral form: a stage's calls sent through a provider's batch API at
//! half price. This module owns what a batch is made of (payloads split by the provider's
//! limits, each request's `custom_id` its cache key), what becomes of it (status, counts), and
//! what each request came to: the same [`ChatResponse`] a live call gives, or a typed
//! [`LineFailure`]. The wire formats live beside each provider's live one
//! ([`super::openai::batch`], [`super::anthropic::batch`]); this module dispatches to them.
//!
//! It never touches the database and never retries: the runtime stores each step (the intent
//! with the payload's sha256 before [`upload`], the file id, the batch id, every poll, every
//! result) before relying on it. [`create`] is not idempotent: when its answer is lost, the
//! batch is found again with [`recover`], never by creating it again.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::client::{ApiRequest, Endpoint, LlmClient, scrub_key};
use super::{ChatRequest, ChatResponse, ProviderError, ProviderKind, anthropic, openai};

/// The batch API a provider speaks (`batch: openai | anthropic` in config.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchApi {
    /// OpenAI's Batch API: a JSONL file uploaded to `/files`, then `/batches`.
    Openai,
    /// Anthropic's Message Batches: the requests in the body of `/v1/messages/batches`.
    Anthropic,
}

impl BatchApi {
    /// The batch API a provider of `kind` speaks by default; `None` for those without one
    /// (Ollama, and OpenAI-compatible servers unless config.yaml says otherwise).
    pub(crate) fn of(kind: ProviderKind) -> Option<Self> {
        match kind {
            ProviderKind::Openai => Some(Self::Openai),
            ProviderKind::Anthropic => Some(Self::Anthropic),
            ProviderKind::Ollama
            | ProviderKind::OpenaiCompatible
            | ProviderKind::Http
            | ProviderKind::Exec => None,
        }
    }

    /// Its name, as stored and written in config.yaml.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// The API named `name` (as [`BatchApi::as_str`] writes it).
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name {
            "openai" => Some(Self::Openai),
            "anthropic" => Some(Self::Anthropic),
            _ => None,
        }
    }

    /// The provider's limits on one batch.
    pub fn limits(self) -> Limits {
        match self {
            // "At most 50,000 lines and 200 MB"; MB read as 10^6 bytes, the smaller reading.
            Self::Openai => Limits {
                max_requests: 50_000,
                max_bytes: 200_000_000,
            },
            // "1 to 100,000 requests and at most 256 MB (else 413)".
            Self::Anthropic => Limits {
                max_requests: 100_000,
                max_bytes: 256_000_000,
            },
        }
    }
}

/// The most one batch may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Requests (OpenAI: lines of the file).
    pub max_requests: usize,
    /// Bytes of the payload (OpenAI: the file; Anthropic: the create body).
    pub max_bytes: usize,
}

/// What one batch carries, built before anything is sent so that its sha256 can be stored
/// with the intent first. One model per payload (OpenAI requires it; for Anthropic it keeps
/// an intent to one model).
#[derive(Clone, PartialEq, Eq)]
pub struct Payload {
    /// The batch API it is for.
    pub api: BatchApi,
    /// The model id every request of the payload names.
    pub model: String,
    /// The requests' `custom_id`s (their cache keys), in payload order.
    pub custom_ids: Vec<String>,
    /// OpenAI: the JSONL file; Anthropic: the JSON body of the create request.
    pub bytes: bytes::Bytes,
    /// Lowercase hex sha256 of `bytes`.
    pub sha256: String,
}

impl Payload {
    /// How many requests it holds.
    pub fn request_count(&self) -> usize {
        self.custom_ids.len()
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The bytes hold every prompt (and images): too much for a log line.
        f.debug_struct("Payload")
            .field("api", &self.api)
            .field("model", &self.model)
            .field("requests", &self.custom_ids.len())
            .field("bytes", &self.bytes.len())
            .field("sha256", &self.sha256)
            .finish()
    }
}

/// Requests split into payloads that each fit the limits.
#[derive(Debug, Clone, Default)]
pub struct Split {
    /// In the order the models first appear, each model's requests in their order.
    pub payloads: Vec<Payload>,
    /// The `custom_id`s of requests that alone exceed the byte limit: they cannot be batched
    /// (send them live).
    pub oversized: Vec<String>,
}

/// Splits `items` (`custom_id`, request) into payloads for `api`: one model per payload, each
/// within `limits`. A request's body is the one the live path sends to a provider of `kind`.
/// A `custom_id` given twice is sent once (it is the cache key: the same request); one that
/// is not 1 to 64 letters, digits, `_` or `-` is refused (a bare sha256 hex fits).
pub fn split<'a>(
    api: BatchApi,
    kind: ProviderKind,
    items: impl IntoIterator<Item = (&'a str, &'a ChatRequest)>,
    limits: Limits,
) -> Result<Split, BatchError> {
    // Each model's entries (custom_id, serialized entry), models in order of appearance.
    let mut models: Vec<(String, Vec<Entry>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (custom_id, request) in items {
        check_custom_id(custom_id)?;
        if !seen.insert(custom_id.to_owned()) {
            continue;
        }
        let entry = match api {
            BatchApi::Openai => openai::batch::line(custom_id, request, kind),
            BatchApi::Anthropic => anthropic::batch::entry(custom_id, request),
        };
        let slot = match models.iter().position(|(m, _)| **m == *request.model) {
            Some(i) => i,
            None => {
                models.push((request.model.to_string(), Vec::new()));
                models.len() - 1
            }
        };
        models[slot].1.push((custom_id.to_owned(), entry));
    }
    let (fixed, per_entry) = framing(api);
    let mut split = Split::default();
    for (model, entries) in models {
        let mut chunk: Vec<Entry> = Vec::new();
        let mut size = fixed;
        for (custom_id, entry) in entries {
            let cost = entry.len() + per_entry;
            if fixed + cost > limits.max_bytes {
                split.oversized.push(custom_id);
                continue;
            }
            if !chunk.is_empty()
                && (chunk.len() >= limits.max_requests || size + cost > limits.max_bytes)
            {
                split
                    .payloads
                    .push(payload(api, &model, std::mem::take(&mut chunk)));
                size = fixed;
            }
            size += cost;
            chunk.push((custom_id, entry));
        }
        if !chunk.is_empty() {
            split.payloads.push(payload(api, &model, chunk));
        }
    }
    Ok(split)
}

/// A request serialized for a payload, under its `custom_id`.
type Entry = (String, Vec<u8>);

/// Bytes a payload of `api` adds around its entries: (once, per entry, at most).
fn framing(api: BatchApi) -> (usize, usize) {
    match api {
        // Each line and its newline.
        BatchApi::Openai => (0, 1),
        // `{"requests":[` … `]}`, and a comma between entries.
        BatchApi::Anthropic => (r#"{"requests":[]}"#.len(), 1),
    }
}

/// The payload of `entries`, framed for `api`.
fn payload(api: BatchApi, model: &str, entries: Vec<Entry>) -> Payload {
    let mut bytes =
        Vec::with_capacity(entries.iter().map(|(_, e)| e.len() + 1).sum::<usize>() + 16);
    let mut custom_ids = Vec::with_capacity(entries.len());
    match api {
        BatchApi::Openai => {
            for (id, entry) in entries {
                bytes.extend_from_slice(&entry);
                bytes.push(b'\n');
                custom_ids.push(id);
            }
        }
        BatchApi::Anthropic => {
            bytes.extend_from_slice(br#"{"requests":["#);
            for (i, (id, entry)) in entries.into_iter().enumerate() {
                if i > 0 {
                    bytes.push(b',');
                }
                bytes.extend_from_slice(&entry);
                custom_ids.push(id);
            }
            bytes.extend_from_slice(b"]}");
        }
    }
    let sha256 = crate::hash::sha256_hex(&bytes);
    Payload {
        api,
        model: model.to_owned(),
        custom_ids,
        bytes: bytes.into(),
        sha256,
    }
}

/// Refuses a `custom_id` Anthropic would refuse (`^[a-zA-Z0-9_-]{1,64}$`); OpenAI takes the
/// same, so both APIs get the same ids.
fn check_custom_id(id: &str) -> Result<(), BatchError> {
    if is_id(id) && id.len() <= 64 {
        Ok(())
    } else {
        Err(BatchError::BadCustomId(id.to_owned()))
    }
}

/// Whether `id` is one or more letters, digits, `_` and `-`: safe in a URL path or query.
pub(crate) fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Refuses an id from a provider that would change the URL it is put in.
pub(crate) fn check_id(provider: &str, id: &str) -> Result<(), BatchError> {
    if is_id(id) {
        Ok(())
    } else {
        Err(BatchError::BadId {
            provider: provider.to_owned(),
            id: id.to_owned(),
        })
    }
}

/// Where a batch is, in provider-neutral form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchStatus {
    /// OpenAI checks the input file.
    Validating,
    /// Requests are being processed (Anthropic's whole life before it ends).
    InProgress,
    /// OpenAI writes the output and error files.
    Finalizing,
    /// A cancel was asked; requests already done keep their results.
    Cancelling,
    /// Ended with every request done (succeeded or errored).
    Completed,
    /// The completion window ended first: finished requests have results, the rest expired.
    Expired,
    /// Cancelled: finished requests have results, the rest were cancelled.
    Cancelled,
    /// Refused before any request ran (OpenAI's validation: each error with its line and
    /// code, `token_limit_exceeded` among them). Nothing was billed.
    Failed(Vec<BatchFailure>),
    /// A status track does not know: treated as still running.
    Other(String),
}

impl BatchStatus {
    /// Whether it will not change any more.
    pub fn is_ended(&self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Expired | Self::Cancelled | Self::Failed(_)
        )
    }

    /// Whether it has ended with results to read (all, or those finished before it expired
    /// or was cancelled).
    pub fn has_results(&self) -> bool {
        matches!(self, Self::Completed | Self::Expired | Self::Cancelled)
    }

    /// Its stored name: `validating`, `in_progress`, `finalizing`, `cancelling`, `completed`,
    /// `expired`, `cancelled`, `failed`, or the provider's own word for another.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Validating => "validating",
            Self::InProgress => "in_progress",
            Self::Finalizing => "finalizing",
            Self::Cancelling => "cancelling",
            Self::Completed => "completed",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::Failed(_) => "failed",
            Self::Other(s) => s,
        }
    }

    /// The status stored as `name` (with the failures stored beside a `failed` one).
    pub(crate) fn from_stored(name: &str, failures: Vec<BatchFailure>) -> Self {
        match name {
            "validating" => Self::Validating,
            "in_progress" => Self::InProgress,
            "finalizing" => Self::Finalizing,
            "cancelling" => Self::Cancelling,
            "completed" => Self::Completed,
            "expired" => Self::Expired,
            "cancelled" => Self::Cancelled,
            "failed" => Self::Failed(failures),
            other => Self::Other(other.to_owned()),
        }
    }

    /// The failures of a failed batch (none otherwise).
    pub fn failures(&self) -> &[BatchFailure] {
        match self {
            Self::Failed(f) => f,
            _ => &[],
        }
    }

    /// Whether it failed because the provider's queue of tokens for the model is full
    /// (`token_limit_exceeded`): submit it again once other batches have ended.
    #[cfg(test)]
    pub(crate) fn is_token_limit(&self) -> bool {
        self.failures().iter().any(|f| f.code == TOKEN_LIMIT_CODE)
    }
}

impl fmt::Display for BatchStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())?;
        for (i, failure) in self.failures().iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { "; " })?;
            write!(f, "{failure}")?;
        }
        Ok(())
    }
}

/// OpenAI's code for a batch refused because the model's queue of tokens is full.
pub const TOKEN_LIMIT_CODE: &str = "token_limit_exceeded";

/// Why a batch was refused (OpenAI's `errors.data[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchFailure {
    /// The provider's code (`invalid_json_line`, `token_limit_exceeded`, …).
    pub code: String,
    /// What it says of the error.
    pub message: String,
    /// The parameter at fault, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// The line of the input file (1-based), when the error is one line's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

impl fmt::Display for BatchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        write!(f, "{} ({})", self.message, self.code)?;
        if let Some(param) = &self.param {
            write!(f, " [{param}]")?;
        }
        Ok(())
    }
}

/// How many of a batch's requests are where. OpenAI counts `completed` (here `succeeded`)
/// and `failed` (here `errored`) as they move, and the rest of an expired or cancelled batch
/// is counted expired or cancelled here; Anthropic keeps everything under `processing` until
/// the batch ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BatchCounts {
    /// Requests in the batch (OpenAI: 0 while validating).
    pub total: u64,
    /// Not done yet.
    pub processing: u64,
    /// Answered.
    pub succeeded: u64,
    /// Answered with an error.
    pub errored: u64,
    /// Cancelled before they ran.
    pub cancelled: u64,
    /// Expired before they ran.
    pub expired: u64,
}

/// A batch as the provider describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchInfo {
    /// The batch API it was read from.
    pub api: BatchApi,
    /// The provider's id (`batch_…`, `msgbatch_…`).
    pub id: String,
    /// Where it is.
    pub status: BatchStatus,
    /// How many of its requests are where.
    pub counts: BatchCounts,
    /// When the provider created it.
    pub created_at: Option<DateTime<Utc>>,
    /// When its completion window closes (24 h after creation).
    pub expires_at: Option<DateTime<Utc>>,
    /// When it ended (completed, failed, expired or cancelled).
    pub ended_at: Option<DateTime<Utc>>,
    /// OpenAI: the metadata given at creation (track's [`INTENT_KEY`] among them).
    pub metadata: BTreeMap<String, String>,
    /// OpenAI: the uploaded input file.
    pub input_file_id: Option<String>,
    /// OpenAI: the file of requests that got an answer (none when every request failed).
    pub output_file_id: Option<String>,
    /// OpenAI: the file of requests that failed, expired or were cancelled.
    pub error_file_id: Option<String>,
    /// Anthropic: where the results are, once ended (followed, never built).
    pub results_url: Option<String>,
}

impl BatchInfo {
    /// The tag of the intent track created it for (OpenAI's metadata), if any.
    pub fn tag(&self) -> Option<&str> {
        self.metadata.get(INTENT_KEY).map(String::as_str)
    }

    /// A failed batch's errors as the JSON stored beside its status (`None` when there are
    /// none).
    pub fn failures_json(&self) -> Option<String> {
        let failures = self.status.failures();
        (!failures.is_empty())
            .then(|| serde_json::to_string(failures).ok())
            .flatten()
    }
}

/// The errors stored by [`BatchInfo::failures_json`] (none when absent or unreadable).
pub fn failures_from_json(json: Option<&str>) -> Vec<BatchFailure> {
    json.and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default()
}

/// A time as the store writes it (RFC 3339, milliseconds, UTC).
pub(crate) fn stored_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The metadata key naming the intent a batch was created for (OpenAI).
pub const INTENT_KEY: &str = "track_intent";
/// The metadata key holding the payload's sha256 (OpenAI).
pub const PAYLOAD_KEY: &str = "track_payload_sha256";

/// A page of a listing: newest batches first; `after` is the last id of the previous page
/// (older batches follow it), `before` the first (newer batches; Anthropic only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub after: Option<String>,
    pub before: Option<String>,
    /// At most this many (OpenAI: 1 to 100, Anthropic: 1 to 1000; the provider's default
    /// when `None`).
    pub limit: Option<u32>,
}

/// One page of batches, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchList {
    /// This page's batches, newest first.
    pub batches: Vec<BatchInfo>,
    /// The `after` of the next (older) page, when there is one.
    pub next: Option<String>,
}

/// What one request of a batch came to.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultLine {
    /// Its `custom_id`: the cache key.
    pub custom_id: String,
    /// The answer, as the live path reads it, or why there is none.
    pub outcome: Result<ChatResponse, LineFailure>,
}

/// Why a request of a batch has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineFailure {
    /// The provider answered it with an error: OpenAI gives the HTTP status; Anthropic's
    /// `errored` result gives the error's type, and `status` is the one the live API answers
    /// that type with (`invalid_request_error` 400, `rate_limit_error` 429, `api_error` 500,
    /// `overloaded_error` 529, …). Not billed.
    Error {
        /// The HTTP status (see above).
        status: Option<u16>,
        /// The error's type (`invalid_request_error`, `api_error`, …).
        kind: Option<String>,
        /// OpenAI's error code, when it gives one.
        code: Option<String>,
        /// The provider's message.
        message: String,
    },
    /// The completion window ended before it ran (`batch_expired`, `expired`): send it again.
    Expired,
    /// The batch was cancelled before it ran: send it again.
    Cancelled,
    /// Its line could not be read (the answer's body is not the provider's format).
    Unreadable(String),
    /// Its `custom_id` is not one of the requests the caller knows.
    Unknown,
}

impl LineFailure {
    /// Whether the request itself is at fault (`invalid_request_error`, HTTP 400, 404, 413,
    /// 422): sending it again gets the same error.
    pub fn is_invalid_request(&self) -> bool {
        match self {
            Self::Error { status, kind, .. } => {
                kind.as_deref() == Some("invalid_request_error")
                    || matches!(status, Some(400 | 404 | 413 | 422))
            }
            _ => false,
        }
    }

    /// Whether it never ran (expired, cancelled): the next run sends it again.
    pub(crate) fn is_unfinished(&self) -> bool {
        matches!(self, Self::Expired | Self::Cancelled)
    }

    /// Whether sending it again may succeed: it never ran, or its error is one a live call
    /// would retry (408, 409, 425, 429, 5xx, an error without a status that is not the
    /// request's fault). An invalid request, an unknown id or an unreadable answer is final.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Expired | Self::Cancelled => true,
            Self::Error {
                status: Some(s), ..
            } => {
                matches!(s, 408 | 409 | 425 | 429 | 500..=599)
            }
            Self::Error { status: None, .. } => !self.is_invalid_request(),
            Self::Unreadable(_) | Self::Unknown => false,
        }
    }

    /// The HTTP status the error has, or the live API would answer it with.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::Error { status, .. } => *status,
            _ => None,
        }
    }

    /// The error as the live path records it, for `provider`: an HTTP error with its status
    /// and message, or a format error. `None` for requests that never ran or are not known.
    #[cfg(test)]
    pub(crate) fn to_provider_error(&self, provider: &str) -> Option<ProviderError> {
        match self {
            Self::Error {
                status, message, ..
            } => Some(ProviderError::Http {
                provider: provider.to_owned(),
                status: status.unwrap_or(500),
                retry_after: None,
                message: message.clone(),
                limits: None,
            }),
            Self::Unreadable(detail) => Some(ProviderError::Decode {
                provider: provider.to_owned(),
                detail: detail.clone(),
            }),
            Self::Expired | Self::Cancelled | Self::Unknown => None,
        }
    }
}

impl fmt::Display for LineFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Error {
                status,
                kind,
                code,
                message,
            } => {
                f.write_str("the batch answered")?;
                if let Some(s) = status {
                    write!(f, " HTTP {s}")?;
                }
                if let Some(k) = kind.as_deref().or(code.as_deref()) {
                    write!(f, " {k}")?;
                }
                write!(f, ": {message}")
            }
            Self::Expired => f.write_str("the batch expired before this request ran"),
            Self::Cancelled => f.write_str("the batch was cancelled before this request ran"),
            Self::Unreadable(detail) => write!(f, "the batch's answer is unreadable: {detail}"),
            Self::Unknown => f.write_str("the batch holds a request track did not send"),
        }
    }
}

/// The HTTP status Anthropic's live API answers an error of type `kind` with.
pub(crate) fn anthropic_status(kind: &str) -> Option<u16> {
    Some(match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return None,
    })
}

/// What can go wrong with a batch as a whole.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A request to the provider failed (with its status and message; never a key).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The provider's queue of tokens for the model is full: OpenAI refused to create the
    /// batch (`token_limit_exceeded`). Submit it again once other batches have ended.
    #[error(
        "{provider} refused the batch: its queue of tokens for this model is full ({message}); \
         it is submitted again once other batches have ended"
    )]
    TokenLimit { provider: String, message: String },
    /// A `custom_id` the batch APIs refuse.
    #[error("`{0}` cannot be a batch custom_id: it must be 1 to 64 letters, digits, `_` or `-`")]
    BadCustomId(String),
    /// An id from the provider that would change the URL it is put in.
    #[error("{provider} gave the id `{id}`, which track does not put in a URL")]
    BadId { provider: String, id: String },
    /// An OpenAI batch was to be created before its file was uploaded.
    #[error("the batch file must be uploaded before the batch is created")]
    NotUploaded,
    /// The batch has not ended with results.
    #[error("batch {id} of {provider} has no results to read: it is {status}")]
    NoResults {
        provider: String,
        id: String,
        status: String,
    },
    /// Anthropic's results are somewhere track will not send its key.
    #[error(
        "the results of batch {id} are at {url}, outside {provider}'s base URL: track sends its \
         key only there"
    )]
    ForeignResults {
        provider: String,
        id: String,
        url: String,
    },
    /// A listing that OpenAI cannot page (`before`).
    #[error("{0}")]
    Unsupported(String),
}

impl BatchError {
    /// Whether trying the same step again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Provider(e) => e.is_retryable(),
            Self::TokenLimit { .. } => true,
            _ => false,
        }
    }

    /// The HTTP status, when the provider answered with one.
    pub(crate) fn http_status(&self) -> Option<u16> {
        match self {
            Self::Provider(e) => e.http_status(),
            _ => None,
        }
    }
}

/// `error` without any key a provider may have echoed.
fn scrub(error: BatchError) -> BatchError {
    match error {
        BatchError::Provider(e) => BatchError::Provider(scrub_key(e)),
        other => other,
    }
}

/// Uploads what must be uploaded before `payload`'s batch is created: OpenAI's file (its id
/// is returned); nothing for Anthropic (`None`). Store the file id before creating the batch.
pub async fn upload(
    client: &LlmClient,
    endpoint: &Endpoint,
    payload: &Payload,
) -> Result<Option<String>, BatchError> {
    let result = match payload.api {
        BatchApi::Openai => openai::batch::upload(client, endpoint, payload)
            .await
            .map(Some),
        BatchApi::Anthropic => Ok(None),
    };
    result.map_err(scrub)
}

/// Creates `payload`'s batch: OpenAI from the uploaded `file_id`, with `tag` (the intent's)
/// and the payload's sha256 in its metadata; Anthropic with the requests in the body (it has
/// no metadata). Not idempotent: when the answer is lost (a timeout, a crash), find the batch
/// with [`recover`] before creating it again.
pub async fn create(
    client: &LlmClient,
    endpoint: &Endpoint,
    payload: &Payload,
    file_id: Option<&str>,
    tag: &str,
) -> Result<BatchInfo, BatchError> {
    let result = match payload.api {
        BatchApi::Openai => match file_id {
            Some(file_id) => openai::batch::create(client, endpoint, payload, file_id, tag).await,
            None => Err(BatchError::NotUploaded),
        },
        BatchApi::Anthropic => anthropic::batch::create(client, endpoint, payload).await,
    };
    result.map_err(scrub)
}

/// The batch `id` as it is now (a poll; poll with backoff: polls count against the batch
/// endpoints' own rate limit).
pub async fn get(
    client: &LlmClient,
    endpoint: &Endpoint,
    api: BatchApi,
    id: &str,
) -> Result<BatchInfo, BatchError> {
    let result = match api {
        BatchApi::Openai => openai::batch::get(client, endpoint, id).await,
        BatchApi::Anthropic => anthropic::batch::get(client, endpoint, id).await,
    };
    result.map_err(scrub)
}

/// One page of the key's batches, newest first.
pub async fn list(
    client: &LlmClient,
    endpoint: &Endpoint,
    api: BatchApi,
    page: &Page,
) -> Result<BatchList, BatchError> {
    let result = match api {
        BatchApi::Openai => openai::batch::list(client, endpoint, page).await,
        BatchApi::Anthropic => anthropic::batch::list(client, endpoint, page).await,
    };
    result.map_err(scrub)
}

/// Asks the provider to cancel batch `id`; requests already done keep their results.
pub async fn cancel(
    client: &LlmClient,
    endpoint: &Endpoint,
    api: BatchApi,
    id: &str,
) -> Result<BatchInfo, BatchError> {
    let result = match api {
        BatchApi::Openai => openai::batch::cancel(client, endpoint, id).await,
        BatchApi::Anthropic => anthropic::batch::cancel(client, endpoint, id).await,
    };
    result.map_err(scrub)
}

/// Every result of an ended batch, joined on `custom_id` by the caller: OpenAI's output and
/// error files both; Anthropic's `results_url`, followed (only on the endpoint's own origin,
/// where its key may go). `request_of` gives the request a `custom_id` stands for (the answer
/// is read as the live path reads it); a line of another id is [`LineFailure::Unknown`].
pub async fn results<'r>(
    client: &LlmClient,
    endpoint: &Endpoint,
    info: &BatchInfo,
    request_of: impl Fn(&str) -> Option<&'r ChatRequest>,
) -> Result<Vec<ResultLine>, BatchError> {
    if !info.status.has_results() {
        return Err(BatchError::NoResults {
            provider: endpoint.provider.clone(),
            id: info.id.clone(),
            status: info.status.to_string(),
        });
    }
    let result = match info.api {
        BatchApi::Openai => openai::batch::results(client, endpoint, info, &request_of).await,
        BatchApi::Anthropic => anthropic::batch::results(client, endpoint, info, &request_of).await,
    };
    result.map_err(scrub)
}

/// What is known of a batch whose creation may have happened without its id being stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Lost<'a> {
    /// The intent's tag (OpenAI's metadata names it).
    pub tag: &'a str,
    /// The uploaded file, when its id was stored (OpenAI).
    pub file_id: Option<&'a str>,
    /// How many requests the payload held.
    pub request_count: usize,
    /// When the intent was stored: the batch was created after it.
    pub since: DateTime<Utc>,
}

/// How far the provider's clock may be behind this machine's.
pub const CLOCK_SKEW: Duration = Duration::from_secs(600);
/// The most pages [`recover`] reads (100 batches a page).
const RECOVERY_PAGES: usize = 50;

/// The batches that may be the one `lost` describes, newest first, from the key's listing
/// down to `since` (less [`CLOCK_SKEW`]). OpenAI: those whose metadata names the tag or whose
/// input file is `file_id` (at most one, unless the tag was reused). Anthropic (no metadata):
/// those created since with `request_count` requests; once one has ended, its results'
/// `custom_id`s tell whether it is the one.
pub async fn recover(
    client: &LlmClient,
    endpoint: &Endpoint,
    api: BatchApi,
    lost: &Lost<'_>,
) -> Result<Vec<BatchInfo>, BatchError> {
    let floor = lost.since - chrono::Duration::from_std(CLOCK_SKEW).unwrap_or_default();
    let mut found = Vec::new();
    let mut page = Page {
        limit: Some(100),
        ..Page::default()
    };
    for _ in 0..RECOVERY_PAGES {
        let listing = list(client, endpoint, api, &page).await?;
        let mut older = false;
        for info in listing.batches {
            if info.created_at.is_some_and(|t| t < floor) {
                older = true;
                continue;
            }
            if matches_lost(&info, lost) {
                found.push(info);
            }
        }
        match listing.next {
            Some(next) if !older => page.after = Some(next),
            _ => break,
        }
    }
    Ok(found)
}

/// Whether `info` may be the batch `lost` describes (its time aside).
fn matches_lost(info: &BatchInfo, lost: &Lost<'_>) -> bool {
    match info.api {
        BatchApi::Openai => {
            info.tag() == Some(lost.tag)
                || lost
                    .file_id
                    .is_some_and(|f| info.input_file_id.as_deref() == Some(f))
        }
        BatchApi::Anthropic => info.counts.total == lost.request_count as u64,
    }
}

/// The timeout of a transfer of `bytes` (uploads, result files): the client's, or more for
/// large ones (a minute plus 2 s a MB).
pub(crate) fn transfer_timeout(client: &LlmClient, bytes: usize) -> Duration {
    client
        .timeout()
        .max(Duration::from_secs(60 + (bytes / 500_000) as u64))
}

/// The timeout of downloading a result file of unknown size.
pub(crate) fn download_timeout(client: &LlmClient) -> Duration {
    client.timeout().max(Duration::from_secs(600))
}

/// Sends `request` and reads its whole body.
pub(crate) async fn fetch(
    client: &LlmClient,
    endpoint: &Endpoint,
    request: ApiRequest,
) -> Result<bytes::Bytes, BatchError> {
    let url = request.url.clone();
    let timeout = request.timeout;
    let response = client.send(endpoint, request).await?;
    response
        .bytes()
        .await
        .map_err(|e| BatchError::Provider(client.transport_error_at(endpoint, &url, timeout, &e)))
}

/// Unix seconds as a time (`None` for absent or impossible values).
pub(crate) fn from_unix(secs: Option<i64>) -> Option<DateTime<Utc>> {
    secs.and_then(|s| DateTime::from_timestamp(s, 0))
}

/// An RFC 3339 time (`None` for absent or unreadable values).
pub(crate) fn from_rfc3339(text: Option<&str>) -> Option<DateTime<Utc>> {
    text.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, SamplingParams};

    fn request(model: &str, text: &str) -> ChatRequest {
        ChatRequest {
            tools: None,
            model: model.into(),
            system: None,
            messages: vec![Message::user(text)].into(),
            params: SamplingParams {
                max_tokens: Some(5),
                ..Default::default()
            }
            .into(),
            schema: None,
        }
    }

    fn key(i: usize) -> String {
        crate::hash::sha256_hex(format!("k{i}").as_bytes())
    }

    #[test]
    fn one_model_a_payload_in_order_of_appearance() {
        let a = request("gpt-4o", "a");
        let b = request("gpt-4o-mini", "b");
        let keys: Vec<String> = (0..4).map(key).collect();
        let items = vec![
            (keys[0].as_str(), &a),
            (keys[1].as_str(), &b),
            (keys[2].as_str(), &a),
            (keys[3].as_str(), &b),
        ];
        let split = split(
            BatchApi::Openai,
            ProviderKind::Openai,
            items,
            BatchApi::Openai.limits(),
        )
        .unwrap();
        assert!(split.oversized.is_empty());
        let models: Vec<(&str, usize)> = split
            .payloads
            .iter()
            .map(|p| (p.model.as_str(), p.request_count()))
            .collect();
        assert_eq!(models, [("gpt-4o", 2), ("gpt-4o-mini", 2)]);
        assert_eq!(
            split.payloads[0].custom_ids,
            [keys[0].clone(), keys[2].clone()]
        );
        assert_eq!(
            split.payloads[0].sha256,
            crate::hash::sha256_hex(&split.payloads[0].bytes)
        );
    }

    #[test]
    fn payloads_stay_within_the_limits_and_oversized_requests_are_set_apart() {
        let small = request("m", "hi");
        let big = request("m", &"x".repeat(2_000));
        let keys: Vec<String> = (0..7).map(key).collect();
        let mut items: Vec<(&str, &ChatRequest)> =
            keys[..6].iter().map(|k| (k.as_str(), &small)).collect();
        items.push((keys[6].as_str(), &big));
        for api in [BatchApi::Openai, BatchApi::Anthropic] {
            let one = split(
                api,
                ProviderKind::Openai,
                [(keys[0].as_str(), &small)],
                api.limits(),
            )
            .unwrap();
            let entry = one.payloads[0].bytes.len();
            // Room for two small requests a payload by bytes, three by count.
            let limits = Limits {
                max_requests: 3,
                max_bytes: entry * 2 + 2,
            };
            let by_bytes = split(api, ProviderKind::Openai, items.clone(), limits).unwrap();
            assert_eq!(by_bytes.oversized, [keys[6].clone()], "{api:?}");
            let sizes: Vec<usize> = by_bytes
                .payloads
                .iter()
                .map(Payload::request_count)
                .collect();
            assert_eq!(sizes, [2, 2, 2], "{api:?}");
            for p in &by_bytes.payloads {
                assert!(
                    p.bytes.len() <= limits.max_bytes,
                    "{api:?}: {}",
                    p.bytes.len()
                );
            }
            let by_count = Limits {
                max_requests: 4,
                max_bytes: usize::MAX,
            };
            let counted = split(api, ProviderKind::Openai, items.clone(), by_count).unwrap();
            let sizes: Vec<usize> = counted
                .payloads
                .iter()
                .map(Payload::request_count)
                .collect();
            assert_eq!(sizes, [4, 3], "{api:?}");
        }
    }

    #[test]
    fn custom_ids_must_suit_both_apis_and_repeats_are_sent_once() {
        let r = request("m", "hi");
        let bad = split(
            BatchApi::Anthropic,
            ProviderKind::Anthropic,
            [("sha256:abc", &r)],
            BatchApi::Anthropic.limits(),
        );
        assert!(matches!(bad, Err(BatchError::BadCustomId(_))), "{bad:?}");
        let long = "a".repeat(65);
        assert!(
            split(
                BatchApi::Openai,
                ProviderKind::Openai,
                [(long.as_str(), &r)],
                BatchApi::Openai.limits()
            )
            .is_err()
        );
        let k = key(1);
        let twice = split(
            BatchApi::Openai,
            ProviderKind::Openai,
            [(k.as_str(), &r), (k.as_str(), &r)],
            BatchApi::Openai.limits(),
        )
        .unwrap();
        assert_eq!(twice.payloads[0].request_count(), 1);
    }

    #[test]
    fn payload_bytes_are_the_wire_format_with_the_live_bodies() {
        let r = request("gpt-4o", "2+2?");
        let k = key(0);
        let openai = split(
            BatchApi::Openai,
            ProviderKind::Openai,
            [(k.as_str(), &r)],
            BatchApi::Openai.limits(),
        )
        .unwrap();
        let text = std::str::from_utf8(&openai.payloads[0].bytes).unwrap();
        assert!(text.ends_with('\n'));
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(line["custom_id"], k.as_str());
        assert_eq!(line["method"], "POST");
        assert_eq!(line["url"], "/v1/chat/completions");
        assert_eq!(line["body"], openai::body(&r, ProviderKind::Openai));
        let anthropic = split(
            BatchApi::Anthropic,
            ProviderKind::Anthropic,
            [(k.as_str(), &r)],
            BatchApi::Anthropic.limits(),
        )
        .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&anthropic.payloads[0].bytes).unwrap();
        assert_eq!(body["requests"][0]["custom_id"], k.as_str());
        assert_eq!(body["requests"][0]["params"], anthropic::body(&r));
    }

    #[test]
    fn statuses_round_trip_through_their_stored_names() {
        let failure = BatchFailure {
            code: "invalid_json_line".into(),
            message: "line is not valid JSON".into(),
            param: None,
            line: Some(3),
        };
        for status in [
            BatchStatus::Validating,
            BatchStatus::InProgress,
            BatchStatus::Finalizing,
            BatchStatus::Cancelling,
            BatchStatus::Completed,
            BatchStatus::Expired,
            BatchStatus::Cancelled,
            BatchStatus::Failed(vec![failure.clone()]),
            BatchStatus::Other("paused".into()),
        ] {
            let back = BatchStatus::from_stored(status.as_str(), status.failures().to_vec());
            assert_eq!(back, status);
        }
        let info = BatchInfo {
            api: BatchApi::Openai,
            id: "batch_1".into(),
            status: BatchStatus::Failed(vec![failure.clone()]),
            counts: BatchCounts::default(),
            created_at: None,
            expires_at: None,
            ended_at: None,
            metadata: BTreeMap::new(),
            input_file_id: None,
            output_file_id: None,
            error_file_id: None,
            results_url: None,
        };
        let stored = info.failures_json();
        assert_eq!(failures_from_json(stored.as_deref()), vec![failure.clone()]);
        assert_eq!(failures_from_json(None), []);
        let failed = BatchStatus::Failed(vec![failure]);
        assert_eq!(
            failed.to_string(),
            "failed: line 3: line is not valid JSON (invalid_json_line)"
        );
        assert!(failed.is_ended() && !failed.has_results() && !failed.is_token_limit());
        assert!(!BatchStatus::Finalizing.is_ended());
        assert!(BatchStatus::Expired.has_results());
    }

    #[test]
    fn line_failures_say_whether_to_send_again() {
        let error = |status: Option<u16>, kind: &str| LineFailure::Error {
            status,
            kind: Some(kind.into()),
            code: None,
            message: "m".into(),
        };
        let invalid = error(Some(400), "invalid_request_error");
        assert!(invalid.is_invalid_request() && !invalid.is_retryable());
        let overloaded = error(Some(529), "overloaded_error");
        assert!(!overloaded.is_invalid_request() && overloaded.is_retryable());
        assert!(!error(None, "invalid_request_error").is_retryable());
        assert!(error(None, "something_new").is_retryable());
        assert!(LineFailure::Expired.is_unfinished() && LineFailure::Expired.is_retryable());
        assert!(!LineFailure::Unknown.is_retryable());
        let stored = invalid.to_provider_error("openai").unwrap();
        assert_eq!(stored.http_status(), Some(400));
        assert!(!stored.is_retryable());
        assert!(LineFailure::Cancelled.to_provider_error("openai").is_none());
    }

    #[test]
    fn ids_that_would_change_a_url_are_refused() {
        assert!(check_id("openai", "batch_abc-123").is_ok());
        for bad in ["", "../files", "a?b", "a/b", "a b"] {
            assert!(check_id("openai", bad).is_err(), "{bad}");
        }
    }
}
