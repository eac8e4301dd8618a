//! What a provider says of its rate limits: the `x-ratelimit-*` (OpenAI) and
//! `anthropic-ratelimit-*` headers of every answer, the wait a 429 asks for, and the 429s (and
//! Anthropic's 400) that no retry mends.
//!
//! Only reading: pacing on what is read is the pacer's.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use serde_json::Value;

/// A bucket a provider limits calls by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dimension {
    /// Requests a minute (RPM).
    Requests,
    /// Tokens a minute (OpenAI's TPM: prompt estimate plus `max_tokens`, at admission).
    Tokens,
    /// Input tokens a minute (Anthropic's ITPM).
    InputTokens,
    /// Output tokens a minute (Anthropic's OTPM).
    OutputTokens,
}

impl Dimension {
    /// Every dimension, in storage order.
    pub const ALL: [Dimension; 4] = [
        Self::Requests,
        Self::Tokens,
        Self::InputTokens,
        Self::OutputTokens,
    ];

    /// The name stored and shown: `requests`, `tokens`, `input_tokens`, `output_tokens`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Requests => "requests",
            Self::Tokens => "tokens",
            Self::InputTokens => "input_tokens",
            Self::OutputTokens => "output_tokens",
        }
    }

    /// The dimension of a stored name.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == name)
    }

    /// The unit as users write it in `rate_limit:` and read it in messages: `RPM`, `TPM`,
    /// `ITPM`, `OTPM`.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Self::Requests => "RPM",
            Self::Tokens => "TPM",
            Self::InputTokens => "ITPM",
            Self::OutputTokens => "OTPM",
        }
    }
}

/// One bucket as an answer's headers describe it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub dimension: Dimension,
    /// The limit, per minute.
    pub limit: f64,
    /// What is left of it when the answer was made.
    pub remaining: Option<f64>,
    /// How long until the bucket is full again.
    pub reset: Option<Duration>,
    /// Whether `remaining` is rounded (Anthropic rounds token counts to thousands).
    pub rounded: bool,
}

/// What one answer's headers say of the limits, and the wait a refusal asked for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RateLimits {
    pub readings: Vec<Reading>,
}

impl RateLimits {
    /// The reading of `dimension`, if the headers had one.
    #[cfg(test)]
    pub(crate) fn get(&self, dimension: Dimension) -> Option<&Reading> {
        self.readings.iter().find(|r| r.dimension == dimension)
    }
}

/// Reads the rate-limit headers of an answer (`None` when it has none, as Ollama, llama.cpp
/// and most gateways). `now` turns Anthropic's reset times into waits.
pub(crate) fn read_headers(headers: &HeaderMap, now: SystemTime) -> Option<RateLimits> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let number = |name: &str| {
        text(name)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    let mut readings = Vec::new();
    for (dimension, name) in [
        (Dimension::Requests, "requests"),
        (Dimension::Tokens, "tokens"),
    ] {
        if let Some(limit) = number(&format!("x-ratelimit-limit-{name}")).filter(|l| *l > 0.0) {
            readings.push(Reading {
                dimension,
                limit,
                remaining: number(&format!("x-ratelimit-remaining-{name}")),
                reset: text(&format!("x-ratelimit-reset-{name}")).and_then(go_duration),
                rounded: false,
            });
        }
    }
    // Anthropic's `tokens` bucket is the more restrictive of input and output: the two are
    // read on their own.
    for (dimension, name) in [
        (Dimension::Requests, "requests"),
        (Dimension::InputTokens, "input-tokens"),
        (Dimension::OutputTokens, "output-tokens"),
    ] {
        let prefix = format!("anthropic-ratelimit-{name}");
        if let Some(limit) = number(&format!("{prefix}-limit")).filter(|l| *l > 0.0) {
            readings.push(Reading {
                dimension,
                limit,
                remaining: number(&format!("{prefix}-remaining")),
                reset: text(&format!("{prefix}-reset")).and_then(|t| until(t, now)),
                rounded: dimension != Dimension::Requests,
            });
        }
    }
    (!readings.is_empty()).then_some(RateLimits { readings })
}

/// A Go duration as OpenAI writes its resets: `0s`, `12ms`, `1.5s`, `6m0s`, `2m59.56s`,
/// `1h2m3s`; `None` when it is not one.
pub(crate) fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * seconds;
    }
    Some(super::client::seconds(total))
}

/// The wait until an RFC 3339 time (Anthropic's resets), zero when it is past.
fn until(text: &str, now: SystemTime) -> Option<Duration> {
    let when = chrono::DateTime::parse_from_rfc3339(text).ok()?;
    let when = SystemTime::UNIX_EPOCH
        + Duration::try_from_secs_f64(when.timestamp_millis().max(0) as f64 / 1000.0).ok()?;
    Some(when.duration_since(now).unwrap_or_default())
}

/// Why calls to a model can never succeed, however long one waits: its account or the
/// request itself is over a limit that time does not refill.
#[derive(Debug, Clone, PartialEq)]
pub enum Exhausted {
    /// OpenAI's quota or a spend limit is used up (`insufficient_quota` and kin).
    Quota { code: String },
    /// One request needs more tokens than the whole limit of a minute.
    TooLarge { requested: u64, limit: u64 },
    /// Anthropic's monthly spend cap is reached (`enforced_spend_limit_reached`).
    SpendCap,
    /// A usage limit the user set in Anthropic's console is reached.
    UsageLimit,
}

impl Exhausted {
    /// What happened and what to do, for a provider named `provider`.
    pub(crate) fn explain(&self, provider: &str) -> String {
        match self {
            Self::Quota { code } => format!(
                "the {provider} account's quota is spent ({code}): add credit or use another key"
            ),
            Self::TooLarge { requested, limit } => format!(
                "one request needs {requested} tokens, more than {provider}'s whole limit of \
                 {limit} tokens a minute: lower max_tokens or the prompt, or raise the limit"
            ),
            Self::SpendCap => format!(
                "the {provider} account reached its monthly spend limit \
                 (enforced_spend_limit_reached): raise it in the console or use another key"
            ),
            Self::UsageLimit => format!(
                "the {provider} account reached the usage limit set for it: raise it in the \
                 console or use another key"
            ),
        }
    }
}

/// OpenAI's error codes for a quota or spend limit used up.
const QUOTA_CODES: [&str; 5] = [
    "insufficient_quota",
    "credit_balance_exhausted",
    "organization_spend_limit_exceeded",
    "project_spend_limit_exceeded",
    "organization_usage_limit_exceeded",
];

/// What a refusal's body says: whether it can never succeed, and which bucket a
/// rate-limit 429 ran out of.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Refusal {
    /// A refusal no retry mends.
    pub exhausted: Option<Exhausted>,
    /// The bucket that ran out (OpenAI's `error.type` `requests` or `tokens`).
    pub dimension: Option<Dimension>,
    /// "Please try again in 1.8s", when the message says so.
    pub try_again_in: Option<Duration>,
    /// "Requested 900": what the provider counted this request as, in the bucket it names.
    pub requested: Option<u64>,
}

/// Reads a refused call's status and body (any wire format).
pub(crate) fn read_refusal(status: u16, body: &str) -> Refusal {
    let json: Option<Value> = serde_json::from_str(body).ok();
    let error = json.as_ref().and_then(|v| v.get("error"));
    let field = |name: &str| {
        error
            .and_then(|e| e.get(name))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (kind, code, message) = (field("type"), field("code"), field("message"));
    let detail_code = error
        .and_then(|e| e.pointer("/details/error_code"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let exhausted = if QUOTA_CODES.contains(&kind) || QUOTA_CODES.contains(&code) {
        Some(Exhausted::Quota {
            code: if QUOTA_CODES.contains(&code) {
                code
            } else {
                kind
            }
            .to_owned(),
        })
    } else if detail_code == "enforced_spend_limit_reached" {
        Some(Exhausted::SpendCap)
    } else if status == 400
        && kind == "invalid_request_error"
        && message
            .to_ascii_lowercase()
            .contains("reached your specified api usage limits")
    {
        Some(Exhausted::UsageLimit)
    } else if status == 429 {
        too_large(message)
    } else {
        None
    };
    let dimension = match kind {
        "requests" => Some(Dimension::Requests),
        "tokens" => Some(Dimension::Tokens),
        _ => None,
    };
    Refusal {
        exhausted,
        dimension,
        try_again_in: try_again_in(message),
        requested: (status == 429)
            .then(|| number_after(message, "Requested"))
            .flatten(),
    }
}

/// "Request too large … Limit L, Requested R" with R > L.
fn too_large(message: &str) -> Option<Exhausted> {
    if !message.to_ascii_lowercase().contains("request too large") {
        return None;
    }
    let (limit, requested) = (
        number_after(message, "Limit")?,
        number_after(message, "Requested")?,
    );
    (requested > limit).then_some(Exhausted::TooLarge { requested, limit })
}

/// The number after `label` in `message` (`Limit 30,000` is 30000).
fn number_after(message: &str, label: &str) -> Option<u64> {
    let start = message.find(label)? + label.len();
    let digits: String = message[start..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The wait in "Please try again in 1.8s" / "in 120ms" / "in 6m0s".
fn try_again_in(message: &str) -> Option<Duration> {
    let start = message.find("try again in ")? + "try again in ".len();
    let token: String = message[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    go_duration(token.trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn go_durations_as_openai_writes_them() {
        for (text, ms) in [
            ("0s", 0),
            ("12ms", 12),
            ("1.5s", 1500),
            ("6m0s", 360_000),
            ("2m59.56s", 179_560),
            ("1h2m3s", 3_723_000),
        ] {
            assert_eq!(go_duration(text), Some(Duration::from_millis(ms)), "{text}");
        }
        for bad in ["", "s", "5", "1.5x", "abc"] {
            assert_eq!(go_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn openai_headers() {
        let h = headers(&[
            ("x-ratelimit-limit-requests", "500"),
            ("x-ratelimit-remaining-requests", "499"),
            ("x-ratelimit-reset-requests", "120ms"),
            ("x-ratelimit-limit-tokens", "30000"),
            ("x-ratelimit-remaining-tokens", "29100"),
            ("x-ratelimit-reset-tokens", "1.8s"),
        ]);
        let limits = read_headers(&h, SystemTime::now()).unwrap();
        let requests = limits.get(Dimension::Requests).unwrap();
        assert_eq!(
            (requests.limit, requests.remaining, requests.reset),
            (500.0, Some(499.0), Some(Duration::from_millis(120)))
        );
        let tokens = limits.get(Dimension::Tokens).unwrap();
        assert_eq!(tokens.reset, Some(Duration::from_millis(1800)));
        assert!(read_headers(&HeaderMap::new(), SystemTime::now()).is_none());
    }

    #[test]
    fn anthropic_resets_are_times_not_seconds() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-23T12:40:57Z").unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(now.timestamp() as u64);
        let h = headers(&[
            ("anthropic-ratelimit-requests-limit", "480"),
            ("anthropic-ratelimit-requests-remaining", "479"),
            ("anthropic-ratelimit-requests-reset", "2026-11-23T12:40:59Z"),
            ("anthropic-ratelimit-input-tokens-limit", "40000"),
            ("anthropic-ratelimit-input-tokens-remaining", "39000"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2026-11-23T12:40:58Z",
            ),
            ("anthropic-ratelimit-output-tokens-limit", "8000"),
            ("anthropic-ratelimit-output-tokens-remaining", "8000"),
            (
                "anthropic-ratelimit-output-tokens-reset",
                "2026-11-23T12:40:00Z",
            ),
        ]);
        let limits = read_headers(&h, now).unwrap();
        let requests = limits.get(Dimension::Requests).unwrap();
        assert_eq!(requests.reset, Some(Duration::from_secs(2)));
        assert!(!requests.rounded);
        let input = limits.get(Dimension::InputTokens).unwrap();
        assert_eq!((input.limit, input.rounded), (40_000.0, true));
        let output = limits.get(Dimension::OutputTokens).unwrap();
        assert_eq!(output.reset, Some(Duration::ZERO), "a reset in the past");
    }

    #[test]
    fn refusals_that_never_succeed() {
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert_eq!(
            read_refusal(429, quota).exhausted,
            Some(Exhausted::Quota {
                code: "insufficient_quota".into()
            })
        );
        let project = r#"{"error":{"message":"x","type":"invalid_request_error","code":"project_spend_limit_exceeded"}}"#;
        assert!(matches!(
            read_refusal(429, project).exhausted,
            Some(Exhausted::Quota { .. })
        ));
        let too_large = r#"{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 50000. The input or output tokens must be reduced.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
        assert_eq!(
            read_refusal(429, too_large).exhausted,
            Some(Exhausted::TooLarge {
                requested: 50_000,
                limit: 30_000
            })
        );
        let cap = r#"{"type":"error","error":{"type":"rate_limit_error","message":"monthly spend limit","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert_eq!(read_refusal(429, cap).exhausted, Some(Exhausted::SpendCap));
        let usage = r#"{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC."}}"#;
        assert_eq!(
            read_refusal(400, usage).exhausted,
            Some(Exhausted::UsageLimit)
        );
        let msg = Exhausted::Quota {
            code: "insufficient_quota".into(),
        }
        .explain("openai");
        assert!(msg.contains("add credit or use another key"), "{msg}");
    }

    #[test]
    fn refusals_that_pass_with_time() {
        let rpm = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 600, Used 600, Requested 1. Please try again in 100ms. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
        let r = read_refusal(429, rpm);
        assert_eq!(r.exhausted, None);
        assert_eq!(r.dimension, Some(Dimension::Requests));
        assert_eq!(r.try_again_in, Some(Duration::from_millis(100)));
        let tpm = r#"{"error":{"message":"Rate limit reached … on tokens per min (TPM): Limit 30000, Used 29500, Requested 900. Please try again in 1.8s. …","type":"tokens","code":"rate_limit_exceeded"}}"#;
        let r = read_refusal(429, tpm);
        assert_eq!(
            (r.exhausted, r.dimension, r.try_again_in),
            (
                None,
                Some(Dimension::Tokens),
                Some(Duration::from_millis(1800))
            )
        );
        // What the provider counted the request as: the pacer's estimate is checked on it.
        assert_eq!(r.requested, Some(900));
        assert_eq!(read_refusal(429, rpm).requested, Some(1));
        let plain = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        assert_eq!(read_refusal(429, plain), Refusal::default());
        assert_eq!(read_refusal(500, "not json"), Refusal::default());
    }
}
