//! Anthropic's Message Batches wire format: the create body (each request's params the body
//! the live path builds), batches (create, get, list, cancel), and the results at the
//! batch's `results_url` read back into the `ChatResponse`s the live path gives, or typed
//! failures.
//!
//! It speaks HTTP and nothing else: no retries, no database.

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::batch::{
    self as neutral, BatchApi, BatchCounts, BatchError, BatchInfo, BatchList, BatchStatus,
    LineFailure, Page, Payload, ResultLine, fetch,
};
use super::super::client::{ApiRequest, Endpoint, LlmClient, body_excerpt};
use super::super::{ChatRequest, ProviderError};

/// One request of the create body: the request's live body as `params` under its
/// `custom_id`.
pub(crate) fn entry(custom_id: &str, request: &ChatRequest) -> Vec<u8> {
    let entry = json!({"custom_id": custom_id, "params": super::body(request)});
    // A `Value` always serializes.
    serde_json::to_vec(&entry).unwrap_or_default()
}

/// `{base}/v1/messages/batches`.
fn batches_url(endpoint: &Endpoint) -> String {
    format!(
        "{}/v1/messages/batches",
        endpoint.base_url.trim_end_matches('/')
    )
}

/// A request to `url` with the key's headers.
fn request(
    endpoint: &Endpoint,
    method: Method,
    url: String,
    body: Option<(String, bytes::Bytes)>,
) -> Result<ApiRequest, BatchError> {
    Ok(ApiRequest {
        method,
        url,
        headers: super::headers(endpoint)?,
        body,
        timeout: None,
    })
}

/// Creates the batch of `payload` (its bytes are the create body).
pub(crate) async fn create(
    client: &LlmClient,
    endpoint: &Endpoint,
    payload: &Payload,
) -> Result<BatchInfo, BatchError> {
    let mut req = request(
        endpoint,
        Method::POST,
        batches_url(endpoint),
        Some(("application/json".into(), payload.bytes.clone())),
    )?;
    req.timeout = Some(neutral::transfer_timeout(client, payload.bytes.len()));
    parse_batch(&endpoint.provider, &fetch(client, endpoint, req).await?)
}

/// The batch `id` now.
pub(crate) async fn get(
    client: &LlmClient,
    endpoint: &Endpoint,
    id: &str,
) -> Result<BatchInfo, BatchError> {
    neutral::check_id(&endpoint.provider, id)?;
    let req = request(
        endpoint,
        Method::GET,
        format!("{}/{id}", batches_url(endpoint)),
        None,
    )?;
    parse_batch(&endpoint.provider, &fetch(client, endpoint, req).await?)
}

/// Asks to cancel batch `id` (it is `canceling` until the requests in flight end).
pub(crate) async fn cancel(
    client: &LlmClient,
    endpoint: &Endpoint,
    id: &str,
) -> Result<BatchInfo, BatchError> {
    neutral::check_id(&endpoint.provider, id)?;
    let req = request(
        endpoint,
        Method::POST,
        format!("{}/{id}/cancel", batches_url(endpoint)),
        None,
    )?;
    parse_batch(&endpoint.provider, &fetch(client, endpoint, req).await?)
}

/// One page of the key's batches (`after_id`, `before_id`, `limit`), newest first.
pub(crate) async fn list(
    client: &LlmClient,
    endpoint: &Endpoint,
    page: &Page,
) -> Result<BatchList, BatchError> {
    let mut query = Vec::new();
    for (name, id) in [("after_id", &page.after), ("before_id", &page.before)] {
        if let Some(id) = id {
            neutral::check_id(&endpoint.provider, id)?;
            query.push(format!("{name}={id}"));
        }
    }
    if let Some(limit) = page.limit {
        query.push(format!("limit={}", limit.clamp(1, 1000)));
    }
    let url = match query.is_empty() {
        true => batches_url(endpoint),
        false => format!("{}?{}", batches_url(endpoint), query.join("&")),
    };
    let req = request(endpoint, Method::GET, url, None)?;
    parse_list(&endpoint.provider, &fetch(client, endpoint, req).await?)
}

/// The results at the batch's `results_url`, followed as given (never built), with the key's
/// headers, and only when it is on the endpoint's own origin: the key goes nowhere else.
pub(crate) async fn results<'r>(
    client: &LlmClient,
    endpoint: &Endpoint,
    info: &BatchInfo,
    request_of: &impl Fn(&str) -> Option<&'r ChatRequest>,
) -> Result<Vec<ResultLine>, BatchError> {
    let Some(url) = &info.results_url else {
        return Err(BatchError::NoResults {
            provider: endpoint.provider.clone(),
            id: info.id.clone(),
            status: format!("{} without a results_url", info.status),
        });
    };
    if !same_origin(url, &endpoint.base_url) {
        return Err(BatchError::ForeignResults {
            provider: endpoint.provider.clone(),
            id: info.id.clone(),
            url: url.clone(),
        });
    }
    let mut req = request(endpoint, Method::GET, url.clone(), None)?;
    req.timeout = Some(neutral::download_timeout(client));
    let bytes = fetch(client, endpoint, req).await?;
    parse_lines(&endpoint.provider, &bytes, request_of)
}

/// Whether `url` has the scheme, host and port of `base`.
fn same_origin(url: &str, base: &str) -> bool {
    match (reqwest::Url::parse(url), reqwest::Url::parse(base)) {
        (Ok(a), Ok(b)) => {
            a.scheme() == b.scheme()
                && a.host_str() == b.host_str()
                && a.port_or_known_default() == b.port_or_known_default()
        }
        _ => false,
    }
}

/// Decodes a JSON answer, or says it is not the expected format.
fn decode<T: serde::de::DeserializeOwned>(provider: &str, bytes: &[u8]) -> Result<T, BatchError> {
    serde_json::from_slice(bytes).map_err(|e| {
        BatchError::Provider(ProviderError::Decode {
            provider: provider.into(),
            detail: format!("{e} in {}", body_excerpt(bytes)),
        })
    })
}

#[derive(Deserialize)]
struct WireBatch {
    id: String,
    processing_status: String,
    #[serde(default)]
    request_counts: WireCounts,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    expires_at: Option<String>,
    #[serde(default)]
    ended_at: Option<String>,
    #[serde(default)]
    cancel_initiated_at: Option<String>,
    #[serde(default)]
    results_url: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireCounts {
    #[serde(default)]
    processing: u64,
    #[serde(default)]
    succeeded: u64,
    #[serde(default)]
    errored: u64,
    #[serde(default)]
    canceled: u64,
    #[serde(default)]
    expired: u64,
}

#[derive(Deserialize)]
struct WireList {
    data: Vec<WireBatch>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    last_id: Option<String>,
}

/// A Message Batch object.
pub(crate) fn parse_batch(provider: &str, bytes: &[u8]) -> Result<BatchInfo, BatchError> {
    let wire: WireBatch = decode(provider, bytes)?;
    Ok(batch_info(wire))
}

/// A page of the batch listing.
pub(crate) fn parse_list(provider: &str, bytes: &[u8]) -> Result<BatchList, BatchError> {
    let wire: WireList = decode(provider, bytes)?;
    let next = wire
        .has_more
        .then(|| {
            wire.last_id
                .or_else(|| wire.data.last().map(|b| b.id.clone()))
        })
        .flatten();
    Ok(BatchList {
        batches: wire.data.into_iter().map(batch_info).collect(),
        next,
    })
}

fn batch_info(wire: WireBatch) -> BatchInfo {
    let c = &wire.request_counts;
    let counts = BatchCounts {
        total: c.processing + c.succeeded + c.errored + c.canceled + c.expired,
        processing: c.processing,
        succeeded: c.succeeded,
        errored: c.errored,
        cancelled: c.canceled,
        expired: c.expired,
    };
    // Anthropic says only `ended`; how it ended is in its cancel time and its counts.
    let status = match wire.processing_status.as_str() {
        "in_progress" => BatchStatus::InProgress,
        "canceling" => BatchStatus::Cancelling,
        "ended" if wire.cancel_initiated_at.is_some() => BatchStatus::Cancelled,
        "ended" if counts.expired > 0 => BatchStatus::Expired,
        "ended" => BatchStatus::Completed,
        other => BatchStatus::Other(other.to_owned()),
    };
    BatchInfo {
        api: BatchApi::Anthropic,
        id: wire.id,
        status,
        counts,
        created_at: neutral::from_rfc3339(wire.created_at.as_deref()),
        expires_at: neutral::from_rfc3339(wire.expires_at.as_deref()),
        ended_at: neutral::from_rfc3339(wire.ended_at.as_deref()),
        metadata: Default::default(),
        input_file_id: None,
        output_file_id: None,
        error_file_id: None,
        results_url: wire.results_url,
    }
}

#[derive(Deserialize)]
struct WireLine {
    custom_id: String,
    result: WireResult,
}

#[derive(Deserialize)]
struct WireResult {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

/// The lines of a results file, each read as the live path reads an answer (with the
/// request `request_of` gives for its `custom_id`). A line that is not JSON fails the whole
/// file (it was cut short: download it again).
pub(crate) fn parse_lines<'r>(
    provider: &str,
    bytes: &[u8],
    request_of: &impl Fn(&str) -> Option<&'r ChatRequest>,
) -> Result<Vec<ResultLine>, BatchError> {
    let mut out = Vec::new();
    for raw in bytes.split(|b| *b == b'\n') {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line: WireLine = decode(provider, raw)?;
        let outcome = match request_of(&line.custom_id) {
            None => Err(LineFailure::Unknown),
            Some(request) => outcome(provider, line.result, request),
        };
        out.push(ResultLine {
            custom_id: line.custom_id,
            outcome,
        });
    }
    Ok(out)
}

/// What one result says of its request.
fn outcome(
    provider: &str,
    result: WireResult,
    request: &ChatRequest,
) -> Result<crate::llm::ChatResponse, LineFailure> {
    match result.kind.as_str() {
        "succeeded" => {
            let message = result.message.unwrap_or(Value::Null);
            let body = serde_json::to_vec(&message).unwrap_or_default();
            super::parse(provider, &body, request)
                .map_err(|e| LineFailure::Unreadable(e.to_string()))
        }
        "errored" => Err(errored(result.error.as_ref())),
        "canceled" => Err(LineFailure::Cancelled),
        "expired" => Err(LineFailure::Expired),
        other => Err(LineFailure::Unreadable(format!(
            "a result of unknown type `{other}`"
        ))),
    }
}

/// An `errored` result's error: the error response `{"type": "error", "error": {"type",
/// "message"}}`, or (older documentation) the error object itself.
fn errored(error: Option<&Value>) -> LineFailure {
    let object = match error {
        Some(e) if e.get("type").and_then(Value::as_str) == Some("error") => e.get("error"),
        other => other,
    };
    let field = |name: &str| {
        object
            .and_then(|o| o.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let kind = field("type");
    LineFailure::Error {
        status: kind.as_deref().and_then(neutral::anthropic_status),
        message: field("message")
            .unwrap_or_else(|| error.map_or_else(|| "no error given".into(), Value::to_string)),
        kind,
        code: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{AnswerSchema, Message};

    fn request() -> ChatRequest {
        ChatRequest {
            tools: None,
            model: "claude-3-5-haiku-20241022".into(),
            system: None,
            messages: vec![Message::user("hi")].into(),
            params: Default::default(),
            schema: None,
        }
    }

    // The shapes of Anthropic's Message Batches reference (providers.md, section 2).
    const IN_PROGRESS: &str = r#"{"id": "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message_batch", "processing_status": "in_progress",
        "request_counts": {"processing": 100, "succeeded": 0, "errored": 0, "canceled": 0,
        "expired": 0}, "ended_at": null, "created_at": "2024-09-24T18:37:24.100435Z",
        "expires_at": "2024-09-25T18:37:24.100435Z", "cancel_initiated_at": null,
        "archived_at": null, "results_url": null}"#;

    #[test]
    fn a_message_batch_becomes_neutral() {
        let info = parse_batch("anthropic", IN_PROGRESS.as_bytes()).unwrap();
        assert_eq!(info.status, BatchStatus::InProgress);
        assert_eq!((info.counts.total, info.counts.processing), (100, 100));
        assert_eq!(info.created_at.map(|t| t.timestamp()), Some(1_727_203_044));
        let ended = |counts: &str, cancel: &str| {
            IN_PROGRESS
                .replace(r#""processing_status": "in_progress""#, r#""processing_status": "ended""#)
                .replace(
                    r#""processing": 100, "succeeded": 0, "errored": 0, "canceled": 0,
        "expired": 0"#,
                    counts,
                )
                .replace(r#""cancel_initiated_at": null"#, cancel)
                .replace(r#""ended_at": null"#, r#""ended_at": "2024-09-24T19:00:00Z""#)
                .replace(
                    r#""results_url": null"#,
                    r#""results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/results""#,
                )
        };
        let done = parse_batch(
            "anthropic",
            ended(
                r#""processing": 0, "succeeded": 98, "errored": 2, "canceled": 0, "expired": 0"#,
                r#""cancel_initiated_at": null"#,
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(done.status, BatchStatus::Completed);
        assert_eq!((done.counts.total, done.counts.errored), (100, 2));
        assert!(done.results_url.is_some() && done.ended_at.is_some());
        let expired = parse_batch(
            "anthropic",
            ended(
                r#""processing": 0, "succeeded": 60, "errored": 0, "canceled": 0, "expired": 40"#,
                r#""cancel_initiated_at": null"#,
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(expired.status, BatchStatus::Expired);
        let cancelled = parse_batch(
            "anthropic",
            ended(
                r#""processing": 0, "succeeded": 10, "errored": 0, "canceled": 90, "expired": 0"#,
                r#""cancel_initiated_at": "2024-09-24T18:40:00Z""#,
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(cancelled.status, BatchStatus::Cancelled);
        assert_eq!(cancelled.counts.cancelled, 90);
        let canceling = IN_PROGRESS.replace(
            r#""processing_status": "in_progress""#,
            r#""processing_status": "canceling""#,
        );
        assert_eq!(
            parse_batch("anthropic", canceling.as_bytes())
                .unwrap()
                .status,
            BatchStatus::Cancelling
        );
    }

    #[test]
    fn the_listing_pages_after_its_last_id() {
        let page = format!(
            r#"{{"data": [{IN_PROGRESS}], "has_more": true,
                "first_id": "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF",
                "last_id": "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF"}}"#
        );
        let list = parse_list("anthropic", page.as_bytes()).unwrap();
        assert_eq!(list.batches.len(), 1);
        assert_eq!(
            list.next.as_deref(),
            Some("msgbatch_013Zva2CMHLNnXjNJJKqJ2EF")
        );
    }

    #[test]
    fn results_become_answers_and_typed_failures() {
        let plain = request();
        let mut shaped = request();
        shaped.schema = Some(Box::new(AnswerSchema {
            name: "verdict".into(),
            schema: json!({"type": "object", "properties": {"score": {"type": "integer"}}}),
        }));
        let file = br#"{"custom_id":"a","result":{"type":"succeeded","message":{"id":"msg_014VwiXbi91y3JMjcpyGBHX5","type":"message","role":"assistant","model":"claude-3-5-sonnet-20240620","content":[{"type":"text","text":"Hello again! "},{"type":"text","text":"How can I help?"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":36}}}}
{"custom_id":"s","result":{"type":"succeeded","message":{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"verdict","input":{"score":4}}],"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":5}}}}
{"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}}}
{"custom_id":"c","result":{"type":"errored","error":{"type":"overloaded_error","message":"Overloaded"}}}
{"custom_id":"d","result":{"type":"canceled"}}
{"custom_id":"e","result":{"type":"expired"}}
"#;
        let lines = parse_lines("anthropic", file, &|id: &str| {
            Some(if id == "s" { &shaped } else { &plain })
        })
        .unwrap();
        assert_eq!(lines.len(), 6);
        let a = lines[0].outcome.as_ref().unwrap();
        assert_eq!(a.text, "Hello again! How can I help?");
        assert_eq!((a.usage.input_tokens, a.usage.output_tokens), (11, 36));
        assert_eq!(a.finish_reason.as_deref(), Some("end_turn"));
        assert_eq!(lines[1].outcome.as_ref().unwrap().text, r#"{"score":4}"#);
        let invalid = lines[2].outcome.as_ref().unwrap_err();
        assert!(
            invalid.is_invalid_request() && !invalid.is_retryable(),
            "{invalid:?}"
        );
        assert_eq!(invalid.http_status(), Some(400));
        assert!(invalid.to_string().contains("max_tokens: Field required"));
        let overloaded = lines[3].outcome.as_ref().unwrap_err();
        assert_eq!(overloaded.http_status(), Some(529));
        assert!(overloaded.is_retryable());
        assert_eq!(lines[4].outcome, Err(LineFailure::Cancelled));
        assert_eq!(lines[5].outcome, Err(LineFailure::Expired));
    }

    #[test]
    fn results_are_followed_only_on_the_endpoints_origin() {
        let base = "https://api.anthropic.com";
        assert!(same_origin(
            "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results",
            base
        ));
        assert!(same_origin(
            "http://127.0.0.1:4000/x",
            "http://127.0.0.1:4000"
        ));
        assert!(!same_origin("https://evil.example/results", base));
        assert!(!same_origin("http://api.anthropic.com/r", base));
        assert!(!same_origin(
            "http://127.0.0.1:4001/x",
            "http://127.0.0.1:4000"
        ));
        assert!(!same_origin("not a url", base));
    }
}
