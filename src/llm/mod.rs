//! The wire: the shared request and response types, the canonical request and its cache key,
//! the HTTP client and server-sent events, the rate-limit headers, one module per
//! provider's live and batch formats, and what targets (the user's own application: [`crate::targets`]) share with them: their
//! kinds and their errors.
//!
//! It knows wire formats and nothing of experiments or the database: sending calls with the
//! cache, pacing, budgets and batches is [`crate::dispatch`]'s.

pub mod anthropic;
pub mod batch;
pub mod canonical;
pub mod client;
pub mod ollama;
pub mod openai;
pub mod ratelimit;
pub mod sse;
pub mod tools;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use canonical::{CacheKey, CanonicalRequest};
pub use client::{Endpoint, LlmClient};

/// Where a call that streams its answer tells what the response's head says of the rate
/// limits, as soon as the head is in: a scope's first call ([`pacer`]) teaches the limits
/// then, a round trip to the first byte instead of a whole generation.
pub type HeadSender = tokio::sync::oneshot::Sender<Option<ratelimit::RateLimits>>;

/// Sends one chat request to `endpoint` in its wire format (no retries: the caller owns the
/// retry policy). Any API key a provider echoes back is scrubbed from the error.
///
/// With `head`, the answer is streamed (OpenAI's and Anthropic's server-sent events; Ollama
/// always streams) and the limits its head tells go to `head` before the body is read; the
/// answer is the same as unstreamed. A server that answers such a request unstreamed is read
/// as usual.
pub async fn chat(
    client: &LlmClient,
    endpoint: &Endpoint,
    request: &ChatRequest,
    head: Option<HeadSender>,
) -> Result<ChatResponse, ProviderError> {
    let result = match endpoint.kind {
        ProviderKind::Openai | ProviderKind::OpenaiCompatible => {
            openai::chat(client, endpoint, request, head).await
        }
        ProviderKind::Anthropic => anthropic::chat(client, endpoint, request, head).await,
        ProviderKind::Ollama => ollama::chat(client, endpoint, request, head).await,
        // A target is sent by its own sender ([`crate::targets::App::send`]), with the case's
        // values.
        ProviderKind::Http | ProviderKind::Exec => Err(ProviderError::Request {
            provider: endpoint.provider.clone(),
            detail: "a target is not a model API: its calls go through its own sender".into(),
        }),
    };
    result.map_err(client::scrub_key)
}

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// OpenAI chat completions at `api.openai.com`.
    Openai,
    /// Anthropic messages.
    Anthropic,
    /// Ollama's `/api/chat`.
    Ollama,
    /// Any server speaking OpenAI chat completions (OpenRouter, vLLM, llama.cpp, LM Studio,
    /// Gemini's compatible endpoint).
    OpenaiCompatible,
    /// The user's application behind a URL ([`crate::targets::http`]).
    Http,
    /// The user's application as a command ([`crate::targets::exec`]).
    Exec,
}

impl ProviderKind {
    /// The name used in config files.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Anthropic => "anthropic",
            Self::Ollama => "ollama",
            Self::OpenaiCompatible => "openai-compatible",
            Self::Http => "http",
            Self::Exec => "exec",
        }
    }

    /// Whether it is the user's application rather than a model API.
    pub(crate) fn is_target(self) -> bool {
        matches!(self, Self::Http | Self::Exec)
    }
}

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    /// The role name every wire format uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// An image attached to a message. Its bytes are shared; its identity is its sha256.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    pub media_type: String,
    pub sha256: String,
    pub data: Arc<Vec<u8>>,
}

impl Image {
    /// Wraps image bytes, hashing them.
    pub(crate) fn new(media_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self {
            media_type: media_type.into(),
            sha256: crate::hash::sha256_hex(&data),
            data: Arc::new(data),
        }
    }

    /// The bytes as standard base64, as every wire format wants them.
    pub(crate) fn base64(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(self.data.as_slice())
    }
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Image({}, {} bytes, sha256:{})",
            self.media_type,
            self.data.len(),
            self.sha256
        )
    }
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Image(Image),
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

impl Message {
    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            parts: vec![Part::Text(text.into())],
        }
    }

    /// The text parts joined by newlines.
    pub(crate) fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                Part::Image(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Sampling parameters: everything besides the messages that changes the answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// A chat request in provider-neutral form.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model id sent to the provider (shared by the calls to one model).
    pub model: Arc<str>,
    /// An optional system prompt (sent the way each wire format wants it). Shared: a
    /// benchmark's calls of one template share its text.
    pub system: Option<Arc<str>>,
    /// The conversation; shared by the calls that send it to several models or repeat it.
    pub messages: Arc<[Message]>,
    /// Shared: the calls of one case (every model, template and repeat) send the same ones,
    /// and a plan holds 400,000 requests at once.
    pub params: Arc<SamplingParams>,
    /// The JSON shape the answer must take (structured output), sent the way each wire format
    /// wants it; part of the cache key.
    pub schema: Option<Box<AnswerSchema>>,
    /// The tools the model may call and the exchange so far (a benchmark's `tools:`), sent
    /// the way each wire format wants them after the messages; part of the cache key.
    pub tools: Option<Box<tools::ToolUse>>,
}

impl ChatRequest {
    /// The most tokens its tools and their exchange add to its input.
    pub(crate) fn tools_bound(&self) -> u64 {
        self.tools.as_ref().map_or(0, |t| t.text_len())
    }
}

/// The shape of a model-graded answer: a JSON schema with a name. OpenAI-style servers get
/// it as `response_format` (llama.cpp turns it into a grammar), Anthropic as a forced tool,
/// Ollama as `format`; the answer's text is then the JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerSchema {
    /// A name of letters, digits, `_` and `-` (OpenAI's schema name, Anthropic's tool name).
    pub name: String,
    /// The JSON schema of the answer: an object.
    pub schema: serde_json::Value,
}

/// Whether model-graded calls ask for structured output (`structured:` in config.yaml, per
/// model, and `--structured`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Structured {
    /// Ask for it; when a server answers 400 to the schema, ask again without it and stop
    /// asking that model for the rest of the run.
    #[default]
    Auto,
    /// Always ask for it (a 400 is an error).
    On,
    /// Never: free text, read by the tolerant parser.
    Off,
}

/// Token counts of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// True when the provider reported no usage and track estimated it (4 characters a token).
    pub estimated: bool,
}

/// A provider's answer in provider-neutral form; what the cache stores.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub text: String,
    pub usage: Usage,
    pub finish_reason: Option<String>,
    /// What the answer's headers said of the provider's rate limits (not stored).
    pub limits: Option<ratelimit::RateLimits>,
    /// What the call cost, in USD, when the provider said so (a target reporting its cost);
    /// `None`: its tokens at the model's price.
    pub cost_usd: Option<f64>,
}

impl ChatResponse {
    /// The answer with the rate limits its headers told.
    pub(crate) fn with_limits(mut self, limits: Option<ratelimit::RateLimits>) -> Self {
        self.limits = limits;
        self
    }
}

/// The provider's token counts when it reported both, else an estimate from the texts
/// (marked as such).
pub(crate) fn usage_or_estimate(
    reported: Option<(u64, u64)>,
    request: &ChatRequest,
    answer: &str,
) -> Usage {
    if let Some((input_tokens, output_tokens)) = reported {
        return Usage {
            input_tokens,
            output_tokens,
            estimated: false,
        };
    }
    let input: u64 = request.system.as_deref().map_or(0, estimate_tokens)
        + request
            .messages
            .iter()
            .map(|m| estimate_tokens(&m.text()))
            .sum::<u64>()
        + request.tools_bound().div_ceil(4);
    Usage {
        input_tokens: input,
        output_tokens: estimate_tokens(answer),
        estimated: true,
    }
}

/// The most input tokens `text` can count: no tokenizer the providers use makes more than a
/// token a byte. What budgets reserve and plans bound, never less than a provider bills.
pub(crate) fn tokens_bound(text: &str) -> u64 {
    text.len() as u64
}

/// Tokens of a message's framing (its role and separators), at most, besides its text.
pub const MESSAGE_TOKENS_BOUND: u64 = 8;

/// Rough token count for providers that report none: about 4 characters a token.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// What a rate-limit refusal said besides its status: the limits in its headers, the bucket
/// its body named, the wait its message asked for, and what it counted the request as.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Refused {
    pub limits: Option<ratelimit::RateLimits>,
    pub dimension: Option<ratelimit::Dimension>,
    pub try_again_in: Option<Duration>,
    /// "Requested 900" (OpenAI): the request's charge in the bucket `dimension` names.
    pub requested: Option<u64>,
}

/// What to do when `provider`'s server cannot be reached. The built-in `local` provider is the
/// llama.cpp server of `.ci/local-model.sh`, so its message names the command that starts it,
/// as a missing key's names the variable to set.
fn connect_advice(provider: &str) -> &'static str {
    match provider {
        "local" => {
            "is the server running and the base URL right? Start the local model server with \
             `bash .ci/local-model.sh start` (after `bash .ci/local-model.sh install` once)"
        }
        _ => "is the server running and the base URL right?",
    }
}

/// What can go wrong talking to a provider. Keeps status, `Retry-After` and the body so the
/// caller can decide to retry; never holds an API key.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("{provider} answered HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        retry_after: Option<Duration>,
        message: String,
        /// What the refusal's headers and body said of the rate limits.
        limits: Option<Box<Refused>>,
    },
    /// A refusal no retry mends (a quota spent, a request larger than the whole limit).
    #[error("{provider} answered HTTP {status}: {}", cause.explain(provider))]
    Exhausted {
        provider: String,
        status: u16,
        cause: ratelimit::Exhausted,
    },
    #[error("{provider} did not answer within {timeout:?}")]
    Timeout { provider: String, timeout: Duration },
    #[error(
        "cannot reach {provider} at {url}: {detail}; {}",
        connect_advice(provider)
    )]
    Connect {
        provider: String,
        url: String,
        detail: String,
    },
    #[error("{provider}'s answer was cut off or unreadable: {detail}")]
    Truncated { provider: String, detail: String },
    #[error("{provider}'s answer is not in the expected format: {detail}")]
    Decode { provider: String, detail: String },
    #[error("the request to {provider} cannot be sent: {detail}; check its base URL")]
    Request { provider: String, detail: String },
    #[error("no API key for {provider}: set {vars} in the environment or in .env")]
    MissingKey { provider: String, vars: String },
    /// The user's application failed: its command crashed, hung or printed no answer, or its
    /// response held no answer at the configured path.
    #[error("{provider}: {detail}")]
    Target {
        provider: String,
        detail: String,
        /// Whether asking again may mend it (a target's own retry policy says how often).
        retryable: bool,
    },
}

impl ProviderError {
    /// Whether trying again may succeed: 408, 409, 429, 5xx, timeouts, broken connections.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => matches!(status, 408 | 409 | 425 | 429 | 500..=599),
            // A 200 in another format is what gateways answer under load: retried like a 5xx.
            Self::Timeout { .. }
            | Self::Connect { .. }
            | Self::Truncated { .. }
            | Self::Decode { .. } => true,
            Self::Request { .. } | Self::MissingKey { .. } | Self::Exhausted { .. } => false,
            Self::Target { retryable, .. } => *retryable,
        }
    }

    /// Why this error is not tried again, for messages (`None` when it is retryable).
    pub(crate) fn why_final(&self) -> Option<&'static str> {
        match self {
            Self::Http { .. } if !self.is_retryable() => {
                Some("this HTTP status does not change on retry")
            }
            Self::Request { .. } => Some("the request cannot be sent as it is"),
            Self::Exhausted { .. } => Some("waiting does not refill this limit"),
            Self::MissingKey { .. } => Some("there is no key"),
            Self::Target {
                retryable: false, ..
            } => Some("the application answers the same way again"),
            _ => None,
        }
    }

    /// The delay the provider asked for, if any.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The HTTP status, when the provider answered with one.
    pub(crate) fn http_status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } | Self::Exhausted { status, .. } => Some(*status),
            _ => None,
        }
    }
}
