//! The HTTP client shared by all providers, endpoints (where a provider lives and its key),
//! and the mapping of transport failures to [`ProviderError`].

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

use super::{ChatResponse, ProviderError, ProviderKind};

/// An API key. Never printed: its `Debug` and `Display` show only that it is set.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

/// Every key track has read, so that any text leaving the process can be redacted.
static KNOWN_KEYS: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

impl ApiKey {
    /// Wraps a key read from the environment and remembers it for [`redact`].
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        if key.len() >= 4 {
            let mut known = KNOWN_KEYS.write().unwrap_or_else(|p| p.into_inner());
            if !known.contains(&key) {
                known.push(key.clone());
            }
        }
        Self(key)
    }

    /// The secret itself, for a request header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// Where one provider lives: its name, wire format, base URL and key.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The provider's name as used in model references (`openai`, `local`, ...).
    pub provider: String,
    pub kind: ProviderKind,
    /// The base URL as the official SDKs take it (`OPENAI_BASE_URL` with `/v1`,
    /// `ANTHROPIC_BASE_URL` without, `OLLAMA_HOST` with or without scheme and port).
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// A user and password written in the base URL (`http://user:pass@host/v1`): taken out of
    /// the URL (which is stored and printed) and sent as HTTP basic authentication.
    pub basic_auth: Option<(String, ApiKey)>,
}

impl Endpoint {
    /// The URL chat requests are posted to.
    pub(crate) fn chat_url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.kind {
            ProviderKind::Openai | ProviderKind::OpenaiCompatible => {
                format!("{base}/chat/completions")
            }
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
            ProviderKind::Ollama => format!("{}/api/chat", ollama_base(base)),
            // A target's URL is its own (an exec target's is its command, never posted to).
            ProviderKind::Http | ProviderKind::Exec => self.base_url.clone(),
        }
    }
}

impl Endpoint {
    /// The key's fingerprint (16 hex digits of a salted sha256, `no-key` without one): enough
    /// to tell keys apart in the database (pacing scopes, batches), never enough to use one.
    pub fn key_fingerprint(&self) -> String {
        match &self.api_key {
            Some(key) => {
                let hash =
                    crate::hash::sha256_hex(format!("track pacing\n{}", key.expose()).as_bytes());
                hash[..16].to_owned()
            }
            None => "no-key".to_owned(),
        }
    }
}

/// The HTTP client of [`LlmClient`]; the error's text when it cannot be built.
fn build_http(timeout: Duration) -> Result<reqwest::Client, String> {
    // reqwest is built without a default TLS provider: install ring once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(20))
        .pool_max_idle_per_host(256)
        .user_agent(concat!("track/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| e.to_string())
}

/// Normalises `OLLAMA_HOST` the way the Ollama clients do: scheme defaults to http, port to
/// 11434, and `0.0.0.0` (a listen address) means this machine.
fn ollama_base(host: &str) -> String {
    let (scheme, rest) = match host.split_once("://") {
        Some((scheme, rest)) => (scheme, rest),
        None => ("http", host),
    };
    let rest = rest.trim_end_matches('/');
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = authority.replace("0.0.0.0", "127.0.0.1");
    let has_port = authority.rsplit_once(':').is_some_and(|(_, port)| {
        port.chars().all(|c| c.is_ascii_digit()) && !authority.ends_with(']')
    });
    let port = if has_port { "" } else { ":11434" };
    format!("{scheme}://{authority}{port}{path}")
}

/// The HTTP client of all providers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    timeout: Duration,
}

/// A client being built on a thread of its own ([`LlmClient::build_ahead`]), with its timeout.
type Ahead = (
    Duration,
    std::thread::JoinHandle<Result<reqwest::Client, String>>,
);

/// The client [`LlmClient::build_ahead`] started, until [`LlmClient::new`] takes it.
static AHEAD: std::sync::Mutex<Option<Ahead>> = std::sync::Mutex::new(None);

impl LlmClient {
    /// Builds the client with a per-request timeout (taking the one [`Self::build_ahead`]
    /// started with the same timeout, if any).
    pub fn new(timeout: Duration) -> Result<Self, ProviderError> {
        let ahead = AHEAD.lock().unwrap_or_else(|p| p.into_inner()).take();
        let built = match ahead {
            Some((same, thread)) if same == timeout => thread
                .join()
                .unwrap_or_else(|_| Err("the thread building it panicked".into())),
            _ => build_http(timeout),
        };
        let http = built.map_err(|detail| ProviderError::Connect {
            provider: "http client".into(),
            url: String::new(),
            detail,
        })?;
        Ok(Self { http, timeout })
    }

    /// Starts building the client of [`Self::new`] on a thread of its own, while the caller
    /// does other work (reads an experiment file): TLS set-up reads and parses the system's
    /// root certificates, a few milliseconds. Nothing is sent, and nothing is kept if no
    /// client is asked for.
    pub(crate) fn build_ahead(timeout: Duration) {
        let thread = std::thread::Builder::new()
            .name("track-client".into())
            .spawn(move || build_http(timeout));
        if let Ok(thread) = thread {
            *AHEAD.lock().unwrap_or_else(|p| p.into_inner()) = Some((timeout, thread));
        }
    }

    /// Posts `body` as JSON with `headers`; returns the response when its status is a success,
    /// a [`ProviderError::Http`] with the provider's message otherwise.
    pub(crate) async fn post_json(
        &self,
        endpoint: &Endpoint,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<reqwest::Response, ProviderError> {
        // A `Value` always serializes.
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.send(
            endpoint,
            ApiRequest {
                method: reqwest::Method::POST,
                url: endpoint.chat_url(),
                headers,
                body: Some(("application/json".into(), bytes.into())),
                timeout: None,
            },
        )
        .await
    }

    /// Sends a chat request that can stream its answer, and reads the answer. With `head`, the
    /// request asks for a streamed answer and `head` is told the limits of the response's head
    /// before the body is read; a server that refuses the streamed request with 400 or 422
    /// naming streaming (one that knows no streaming, or not its options) is asked the
    /// unstreamed one instead, and one that answers unstreamed is read as usual.
    pub(crate) async fn chat_streamable(
        &self,
        endpoint: &Endpoint,
        headers: HeaderMap,
        request: Streamable<'_>,
        head: Option<super::HeadSender>,
    ) -> Result<ChatResponse, ProviderError> {
        let Streamable {
            body,
            stream,
            fold,
            parse,
        } = request;
        let streamed = head.as_ref().map(|_| {
            let mut streamed = body.clone();
            stream(&mut streamed);
            streamed
        });
        let (response, asked_stream) = match streamed {
            None => (self.post_json(endpoint, headers, &body).await?, false),
            Some(streamed) => match self.post_json(endpoint, headers.clone(), &streamed).await {
                Err(ProviderError::Http {
                    status: 400 | 422,
                    message,
                    ..
                }) if message.to_ascii_lowercase().contains("stream") => {
                    tracing::debug!(provider = %endpoint.provider, "a streamed request was refused; asking unstreamed");
                    (self.post_json(endpoint, headers, &body).await?, false)
                }
                answered => (answered?, true),
            },
        };
        let limits = limits_of(&response);
        let events = super::sse::is_event_stream(&response);
        if let Some(head) = head {
            let _ = head.send(limits.clone());
        }
        let bytes = self.read_body(endpoint, response).await?;
        let answer = if events || (asked_stream && super::sse::looks_like_events(&bytes)) {
            parse(&fold(&endpoint.provider, &bytes)?)
        } else {
            parse(&bytes)
        };
        answer.map(|answer| answer.with_limits(limits))
    }

    /// Sends `request` to one of `endpoint`'s URLs; returns the response when its status is a
    /// success, a [`ProviderError::Http`] (or `Exhausted`) with the provider's message otherwise.
    pub(crate) async fn send(
        &self,
        endpoint: &Endpoint,
        request: ApiRequest,
    ) -> Result<reqwest::Response, ProviderError> {
        let ApiRequest {
            method,
            url,
            headers,
            body,
            timeout,
        } = request;
        let mut builder = self.http.request(method, &url);
        // A key's own Authorization header wins over credentials of the URL.
        if let Some((user, password)) = &endpoint.basic_auth
            && !headers.contains_key(reqwest::header::AUTHORIZATION)
        {
            builder = builder.basic_auth(user, Some(password.expose()));
        }
        builder = builder.headers(headers);
        if let Some((content_type, bytes)) = body {
            builder = builder
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(bytes);
        }
        if let Some(timeout) = timeout {
            builder = builder.timeout(timeout);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| self.transport_error_at(endpoint, &url, timeout, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = parse_retry_after(response.headers());
        let limits = limits_of(&response);
        let text = response.text().await.unwrap_or_default();
        let refusal = super::ratelimit::read_refusal(status.as_u16(), &text);
        if let Some(cause) = refusal.exhausted {
            return Err(ProviderError::Exhausted {
                provider: endpoint.provider.clone(),
                status: status.as_u16(),
                cause,
            });
        }
        let refused =
            (limits.is_some() || refusal.dimension.is_some() || refusal.try_again_in.is_some())
                .then(|| {
                    Box::new(super::Refused {
                        limits,
                        dimension: refusal.dimension,
                        try_again_in: refusal.try_again_in,
                        requested: refusal.requested,
                    })
                });
        Err(ProviderError::Http {
            provider: endpoint.provider.clone(),
            status: status.as_u16(),
            retry_after,
            message: error_message(&text),
            limits: refused,
        })
    }

    /// Reads a whole successful response body.
    pub(crate) async fn read_body(
        &self,
        endpoint: &Endpoint,
        response: reqwest::Response,
    ) -> Result<bytes::Bytes, ProviderError> {
        response
            .bytes()
            .await
            .map_err(|e| self.transport_error(endpoint, &e))
    }

    /// Maps a reqwest failure to the error kinds the retry policy understands.
    pub(crate) fn transport_error(&self, endpoint: &Endpoint, e: &reqwest::Error) -> ProviderError {
        self.transport_error_at(endpoint, &endpoint.chat_url(), None, e)
    }

    /// Maps a reqwest failure of a request to `url` (with its own `timeout`, if it had one).
    pub(crate) fn transport_error_at(
        &self,
        endpoint: &Endpoint,
        url: &str,
        timeout: Option<Duration>,
        e: &reqwest::Error,
    ) -> ProviderError {
        let provider = endpoint.provider.clone();
        if e.is_timeout() {
            ProviderError::Timeout {
                provider,
                timeout: timeout.unwrap_or(self.timeout),
            }
        } else if e.is_builder() {
            ProviderError::Request {
                provider,
                detail: root_cause(e),
            }
        } else if e.is_connect() {
            ProviderError::Connect {
                provider,
                url: url.to_owned(),
                detail: root_cause(e),
            }
        } else {
            ProviderError::Truncated {
                provider,
                detail: root_cause(e),
            }
        }
    }

    /// The per-request timeout of this client.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// A request to one of a provider's URLs besides chat (batches, files).
pub(crate) struct ApiRequest {
    pub method: reqwest::Method,
    pub url: String,
    pub headers: HeaderMap,
    /// The body and its content type.
    pub body: Option<(String, bytes::Bytes)>,
    /// A timeout of its own (large uploads and downloads), instead of the client's.
    pub timeout: Option<Duration>,
}

/// A chat request in a wire format that can stream its answer ([`LlmClient::chat_streamable`]).
pub(crate) struct Streamable<'a> {
    /// The request body, unstreamed.
    pub body: Value,
    /// Makes a copy of `body` ask for a streamed answer.
    pub stream: fn(&mut Value),
    /// The unstreamed answer that a streamed answer's bytes stand for (`provider` names it in
    /// errors).
    pub fold: fn(provider: &str, bytes: &[u8]) -> Result<Vec<u8>, ProviderError>,
    /// Reads an unstreamed answer.
    pub parse: &'a (dyn Fn(&[u8]) -> Result<ChatResponse, ProviderError> + Sync),
}

/// What an answer's headers say of the provider's rate limits.
pub(crate) fn limits_of(response: &reqwest::Response) -> Option<super::ratelimit::RateLimits> {
    super::ratelimit::read_headers(response.headers(), std::time::SystemTime::now())
}

/// The innermost message of an error chain (reqwest's outer messages repeat the URL).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// `Retry-After` as seconds or an HTTP date; also OpenAI's `retry-after-ms`.
/// A provider's `inf`, `1e300` or `99999999999999999999` is clamped to a day (the retry policy
/// caps the wait further); `NaN` and negative numbers mean no wait asked.
fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Some(seconds(ms / 1000.0));
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Some(seconds(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// The longest wait a provider can ask for.
const MAX_ASKED_WAIT: Duration = Duration::from_secs(86_400);

/// `secs` as a duration, whatever number it is: never panics.
pub(crate) fn seconds(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs)
        .unwrap_or(MAX_ASKED_WAIT)
        .min(MAX_ASKED_WAIT)
}

/// The provider's own error message from a JSON error body, or the start of the raw body.
fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_owned)
    });
    let message = from_json.unwrap_or_else(|| body.trim().to_owned());
    if message.is_empty() {
        return "(empty body)".into();
    }
    truncate_chars(&message, 300)
}

/// At most `max` characters of `s`, with an ellipsis when cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// `text` with every known API key replaced by `***`.
pub(crate) fn redact(text: &str) -> String {
    let known = KNOWN_KEYS.read().unwrap_or_else(|p| p.into_inner());
    known
        .iter()
        .fold(text.to_owned(), |acc, key| acc.replace(key.as_str(), "***"))
}

/// Removes any key from an error, in case a provider echoed one back.
pub(crate) fn scrub_key(error: ProviderError) -> ProviderError {
    let scrub = |s: String| redact(&s);
    match error {
        ProviderError::Http {
            provider,
            status,
            retry_after,
            message,
            limits,
        } => ProviderError::Http {
            provider,
            status,
            retry_after,
            message: scrub(message),
            limits,
        },
        ProviderError::Truncated { provider, detail } => ProviderError::Truncated {
            provider,
            detail: scrub(detail),
        },
        ProviderError::Decode { provider, detail } => ProviderError::Decode {
            provider,
            detail: scrub(detail),
        },
        ProviderError::Request { provider, detail } => ProviderError::Request {
            provider,
            detail: scrub(detail),
        },
        ProviderError::Target {
            provider,
            detail,
            retryable,
        } => ProviderError::Target {
            provider,
            detail: scrub(detail),
            retryable,
        },
        other => other,
    }
}

/// The first `max` characters of a body that could not be decoded, for error messages.
pub(crate) fn body_excerpt(body: &[u8]) -> String {
    truncate_chars(&String::from_utf8_lossy(body), 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_built_ahead_is_the_one_taken_with_its_timeout() {
        let timeout = Duration::from_millis(123_457);
        LlmClient::build_ahead(timeout);
        assert_eq!(LlmClient::new(timeout).unwrap().timeout, timeout);
        // Another timeout builds its own.
        LlmClient::build_ahead(timeout);
        let other = Duration::from_millis(98_765);
        assert_eq!(LlmClient::new(other).unwrap().timeout, other);
    }

    fn endpoint(kind: ProviderKind, base: &str) -> Endpoint {
        Endpoint {
            provider: "p".into(),
            kind,
            base_url: base.into(),
            api_key: Some(ApiKey::new("sk-secret-123")),
            basic_auth: None,
        }
    }

    #[test]
    fn chat_urls_follow_the_sdks() {
        let openai = endpoint(ProviderKind::Openai, "https://api.openai.com/v1/");
        assert_eq!(
            openai.chat_url(),
            "https://api.openai.com/v1/chat/completions"
        );
        let anthropic = endpoint(ProviderKind::Anthropic, "https://api.anthropic.com");
        assert_eq!(
            anthropic.chat_url(),
            "https://api.anthropic.com/v1/messages"
        );
        for (host, url) in [
            ("127.0.0.1", "http://127.0.0.1:11434/api/chat"),
            ("0.0.0.0:11434", "http://127.0.0.1:11434/api/chat"),
            ("http://localhost:9999", "http://localhost:9999/api/chat"),
            (
                "https://ollama.example/",
                "https://ollama.example:11434/api/chat",
            ),
        ] {
            assert_eq!(
                endpoint(ProviderKind::Ollama, host).chat_url(),
                url,
                "{host}"
            );
        }
    }

    #[test]
    fn keys_never_show() {
        let e = endpoint(ProviderKind::Openai, "u");
        assert!(!format!("{e:?}").contains("secret"));
        let err = scrub_key(ProviderError::Http {
            provider: "p".into(),
            status: 401,
            retry_after: None,
            message: "Incorrect API key provided: sk-secret-123".into(),
            limits: None,
        });
        assert!(!err.to_string().contains("sk-secret-123"), "{err}");
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(150)));
        let mut date = HeaderMap::new();
        date.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(parse_retry_after(&date), Some(Duration::ZERO));
    }

    #[test]
    fn absurd_retry_after_values_are_clamped_not_a_panic() {
        for (header, value) in [
            ("retry-after", "inf"),
            ("retry-after", "1e300"),
            ("retry-after", "99999999999999999999"),
            ("retry-after-ms", "inf"),
            ("retry-after-ms", "1e300"),
        ] {
            let mut h = HeaderMap::new();
            h.insert(header, value.parse().unwrap());
            assert_eq!(
                parse_retry_after(&h),
                Some(MAX_ASKED_WAIT),
                "{header}: {value}"
            );
        }
        for value in ["-5", "NaN", "-inf"] {
            let mut h = HeaderMap::new();
            h.insert(RETRY_AFTER, value.parse().unwrap());
            assert_eq!(parse_retry_after(&h), Some(Duration::ZERO), "{value}");
        }
    }

    #[test]
    fn error_messages_come_from_the_body() {
        assert_eq!(
            error_message(r#"{"error":{"message":"slow down"}}"#),
            "slow down"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message("  "), "(empty body)");
        assert_eq!(error_message(&"x".repeat(400)).chars().count(), 301);
    }
}
