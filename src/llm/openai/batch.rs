//! OpenAI's Batch API wire format: the JSONL input file (each line a chat completion body the
//! live path builds), its multipart upload to `/files`, batches (create with track's
//! metadata, get, list, cancel), and the output and error files read back into the
//! `ChatResponse`s the live path gives, or typed failures.
//!
//! It speaks HTTP and nothing else: no retries, no database.

use std::collections::BTreeMap;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::batch::{
    self as neutral, BatchApi, BatchCounts, BatchError, BatchFailure, BatchInfo, BatchList,
    BatchStatus, INTENT_KEY, LineFailure, PAYLOAD_KEY, Page, Payload, ResultLine, fetch,
};
use super::super::client::{ApiRequest, Endpoint, LlmClient, body_excerpt};
use super::super::{ChatRequest, ProviderError, ProviderKind};

/// The endpoint every line and the batch name: chat completions.
pub(crate) const CHAT_ENDPOINT: &str = "/v1/chat/completions";

/// One line of the input file (without its newline): the request's live body under its
/// `custom_id`.
pub(crate) fn line(custom_id: &str, request: &ChatRequest, kind: ProviderKind) -> Vec<u8> {
    let line = json!({
        "custom_id": custom_id,
        "method": "POST",
        "url": CHAT_ENDPOINT,
        "body": super::body(request, kind),
    });
    // A `Value` always serializes.
    serde_json::to_vec(&line).unwrap_or_default()
}

/// The base URL without its trailing slash (it ends in `/v1`, as the SDKs take it).
fn base(endpoint: &Endpoint) -> &str {
    endpoint.base_url.trim_end_matches('/')
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

/// Uploads `payload` as a batch input file (`multipart/form-data`, `purpose=batch`); returns
/// the file's id.
pub(crate) async fn upload(
    client: &LlmClient,
    endpoint: &Endpoint,
    payload: &Payload,
) -> Result<String, BatchError> {
    let (content_type, body) = multipart(payload);
    let mut req = request(
        endpoint,
        Method::POST,
        format!("{}/files", base(endpoint)),
        Some((content_type, body.into())),
    )?;
    req.timeout = Some(neutral::transfer_timeout(client, payload.bytes.len()));
    let bytes = fetch(client, endpoint, req).await?;
    #[derive(Deserialize)]
    struct WireFile {
        id: String,
    }
    let file: WireFile = decode(&endpoint.provider, &bytes)?;
    neutral::check_id(&endpoint.provider, &file.id)?;
    Ok(file.id)
}

/// The multipart body of an upload, built here rather than with reqwest's `multipart`
/// feature (which would add `mime_guess` for two fixed parts): its content type and bytes.
fn multipart(payload: &Payload) -> (String, Vec<u8>) {
    // A boundary that holds the payload's own sha256 cannot occur in the payload; checked
    // anyway (the payload is JSON, so UTF-8).
    let mut boundary = format!("track-batch-{}", payload.sha256);
    let text = std::str::from_utf8(&payload.bytes).unwrap_or_default();
    while text.contains(&boundary) {
        boundary.push('x');
    }
    let filename = format!(
        "track-{}.jsonl",
        &payload.sha256[..16.min(payload.sha256.len())]
    );
    let mut body = Vec::with_capacity(payload.bytes.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"{filename}\"\r\nContent-Type: application/jsonl\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(&payload.bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Creates the batch of the uploaded `file_id`, naming `tag` and the payload's sha256 in its
/// metadata so that a batch whose id was lost can be found in the listing.
pub(crate) async fn create(
    client: &LlmClient,
    endpoint: &Endpoint,
    payload: &Payload,
    file_id: &str,
    tag: &str,
) -> Result<BatchInfo, BatchError> {
    let body = json!({
        "input_file_id": file_id,
        "endpoint": CHAT_ENDPOINT,
        "completion_window": "24h",
        "metadata": {INTENT_KEY: tag, PAYLOAD_KEY: payload.sha256},
    });
    let req = request(
        endpoint,
        Method::POST,
        format!("{}/batches", base(endpoint)),
        Some((
            "application/json".into(),
            serde_json::to_vec(&body).unwrap_or_default().into(),
        )),
    )?;
    match fetch(client, endpoint, req).await {
        Ok(bytes) => parse_batch(&endpoint.provider, &bytes),
        Err(BatchError::Provider(ProviderError::Http {
            provider, message, ..
        })) if is_token_limit(&message) => Err(BatchError::TokenLimit { provider, message }),
        Err(e) => Err(e),
    }
}

/// Whether an error's message says the model's queue of batch tokens is full.
fn is_token_limit(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains(neutral::TOKEN_LIMIT_CODE) || lower.contains("enqueued token limit")
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
        format!("{}/batches/{id}", base(endpoint)),
        None,
    )?;
    parse_batch(&endpoint.provider, &fetch(client, endpoint, req).await?)
}

/// Asks to cancel batch `id` (it is `cancelling` for up to 10 minutes).
pub(crate) async fn cancel(
    client: &LlmClient,
    endpoint: &Endpoint,
    id: &str,
) -> Result<BatchInfo, BatchError> {
    neutral::check_id(&endpoint.provider, id)?;
    let req = request(
        endpoint,
        Method::POST,
        format!("{}/batches/{id}/cancel", base(endpoint)),
        None,
    )?;
    parse_batch(&endpoint.provider, &fetch(client, endpoint, req).await?)
}

/// One page of the key's batches (`after`, `limit`), newest first.
pub(crate) async fn list(
    client: &LlmClient,
    endpoint: &Endpoint,
    page: &Page,
) -> Result<BatchList, BatchError> {
    if page.before.is_some() {
        return Err(BatchError::Unsupported(
            "OpenAI's batch listing pages only forward (`after`)".into(),
        ));
    }
    let mut query = Vec::new();
    if let Some(after) = &page.after {
        neutral::check_id(&endpoint.provider, after)?;
        query.push(format!("after={after}"));
    }
    if let Some(limit) = page.limit {
        query.push(format!("limit={}", limit.clamp(1, 100)));
    }
    let url = match query.is_empty() {
        true => format!("{}/batches", base(endpoint)),
        false => format!("{}/batches?{}", base(endpoint), query.join("&")),
    };
    let req = request(endpoint, Method::GET, url, None)?;
    parse_list(&endpoint.provider, &fetch(client, endpoint, req).await?)
}

/// Every line of the batch's output and error files (either may be absent: a batch whose
/// every request failed has no output file).
pub(crate) async fn results<'r>(
    client: &LlmClient,
    endpoint: &Endpoint,
    info: &BatchInfo,
    request_of: &impl Fn(&str) -> Option<&'r ChatRequest>,
) -> Result<Vec<ResultLine>, BatchError> {
    let mut lines = Vec::new();
    for file in [&info.output_file_id, &info.error_file_id]
        .into_iter()
        .flatten()
    {
        neutral::check_id(&endpoint.provider, file)?;
        let mut req = request(
            endpoint,
            Method::GET,
            format!("{}/files/{file}/content", base(endpoint)),
            None,
        )?;
        req.timeout = Some(neutral::download_timeout(client));
        let bytes = fetch(client, endpoint, req).await?;
        lines.extend(parse_lines(&endpoint.provider, &bytes, request_of)?);
    }
    Ok(lines)
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
    status: String,
    #[serde(default)]
    errors: Option<WireErrors>,
    #[serde(default)]
    input_file_id: Option<String>,
    #[serde(default)]
    output_file_id: Option<String>,
    #[serde(default)]
    error_file_id: Option<String>,
    #[serde(default)]
    created_at: Option<i64>,
    #[serde(default)]
    expires_at: Option<i64>,
    #[serde(default)]
    completed_at: Option<i64>,
    #[serde(default)]
    failed_at: Option<i64>,
    #[serde(default)]
    expired_at: Option<i64>,
    #[serde(default)]
    cancelled_at: Option<i64>,
    #[serde(default)]
    request_counts: Option<WireCounts>,
    #[serde(default)]
    metadata: Option<BTreeMap<String, Value>>,
}

#[derive(Deserialize)]
struct WireErrors {
    #[serde(default)]
    data: Vec<WireFailure>,
}

#[derive(Deserialize)]
struct WireFailure {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    param: Option<String>,
    #[serde(default)]
    line: Option<u64>,
}

#[derive(Deserialize, Default)]
struct WireCounts {
    #[serde(default)]
    total: u64,
    #[serde(default)]
    completed: u64,
    #[serde(default)]
    failed: u64,
}

#[derive(Deserialize)]
struct WireList {
    data: Vec<WireBatch>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    last_id: Option<String>,
}

/// A Batch object.
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
    let status = match wire.status.as_str() {
        "validating" => BatchStatus::Validating,
        "in_progress" => BatchStatus::InProgress,
        "finalizing" => BatchStatus::Finalizing,
        "cancelling" => BatchStatus::Cancelling,
        "completed" => BatchStatus::Completed,
        "expired" => BatchStatus::Expired,
        "cancelled" => BatchStatus::Cancelled,
        "failed" => BatchStatus::Failed(
            wire.errors
                .map(|e| e.data)
                .unwrap_or_default()
                .into_iter()
                .map(|f| BatchFailure {
                    code: f.code.unwrap_or_else(|| "unknown".into()),
                    message: f.message.unwrap_or_default(),
                    param: f.param,
                    line: f.line,
                })
                .collect(),
        ),
        other => BatchStatus::Other(other.to_owned()),
    };
    let c = wire.request_counts.unwrap_or_default();
    // OpenAI counts only what ran: once a batch has expired or been cancelled, the requests
    // neither completed nor failed never will (its error file names them), as Anthropic
    // counts them.
    let unrun = c.total.saturating_sub(c.completed + c.failed);
    let (expired, cancelled) = match status {
        BatchStatus::Expired => (unrun, 0),
        BatchStatus::Cancelled => (0, unrun),
        _ => (0, 0),
    };
    let counts = BatchCounts {
        total: c.total,
        processing: unrun - expired - cancelled,
        succeeded: c.completed,
        errored: c.failed,
        cancelled,
        expired,
    };
    let metadata = wire
        .metadata
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(k, v)| match v {
            Value::String(s) => Some((k, s)),
            _ => None,
        })
        .collect();
    BatchInfo {
        api: BatchApi::Openai,
        id: wire.id,
        status,
        counts,
        created_at: neutral::from_unix(wire.created_at),
        expires_at: neutral::from_unix(wire.expires_at),
        ended_at: neutral::from_unix(
            wire.completed_at
                .or(wire.failed_at)
                .or(wire.expired_at)
                .or(wire.cancelled_at),
        ),
        metadata,
        input_file_id: wire.input_file_id,
        output_file_id: wire.output_file_id,
        error_file_id: wire.error_file_id,
        results_url: None,
    }
}

#[derive(Deserialize)]
struct WireLine {
    custom_id: String,
    #[serde(default)]
    response: Option<WireLineResponse>,
    #[serde(default)]
    error: Option<WireLineError>,
}

#[derive(Deserialize)]
struct WireLineResponse {
    status_code: u16,
    #[serde(default)]
    body: Value,
}

#[derive(Deserialize)]
struct WireLineError {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// The lines of an output or error file, each read as the live path reads an answer (with
/// the request `request_of` gives for its `custom_id`). A line that is not JSON fails the
/// whole file (it was cut short: download it again).
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
        let outcome = outcome(provider, &line, request_of(&line.custom_id));
        out.push(ResultLine {
            custom_id: line.custom_id,
            outcome,
        });
    }
    Ok(out)
}

/// What one line says of its request.
fn outcome(
    provider: &str,
    line: &WireLine,
    request: Option<&ChatRequest>,
) -> Result<crate::llm::ChatResponse, LineFailure> {
    let Some(request) = request else {
        return Err(LineFailure::Unknown);
    };
    match (&line.response, &line.error) {
        (Some(response), _) if (200..300).contains(&response.status_code) => {
            let body = serde_json::to_vec(&response.body).unwrap_or_default();
            super::parse(provider, &body, request)
                .map_err(|e| LineFailure::Unreadable(e.to_string()))
        }
        (Some(response), _) => {
            let error = response.body.get("error");
            let field = |name: &str| {
                error
                    .and_then(|e| e.get(name))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            Err(LineFailure::Error {
                status: Some(response.status_code),
                kind: field("type"),
                code: field("code"),
                message: field("message").unwrap_or_else(|| response.body.to_string()),
            })
        }
        (None, Some(error)) => Err(match error.code.as_deref() {
            Some("batch_expired") => LineFailure::Expired,
            Some("batch_cancelled") => LineFailure::Cancelled,
            code => LineFailure::Error {
                status: None,
                kind: None,
                code: code.map(str::to_owned),
                message: error.message.clone().unwrap_or_default(),
            },
        }),
        (None, None) => Err(LineFailure::Unreadable(
            "a line with neither a response nor an error".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    fn request() -> ChatRequest {
        ChatRequest {
            tools: None,
            model: "gpt-4o-mini".into(),
            system: None,
            messages: vec![Message::user("2+2?")].into(),
            params: Default::default(),
            schema: None,
        }
    }

    // The shapes of OpenAI's batch reference (providers.md, section 2).
    const VALIDATING: &str = r#"{"id": "batch_abc123", "object": "batch",
        "endpoint": "/v1/chat/completions", "errors": null, "input_file_id": "file-abc123",
        "completion_window": "24h", "status": "validating", "output_file_id": null,
        "error_file_id": null, "created_at": 1711471533, "in_progress_at": null,
        "expires_at": 1711557933, "finalizing_at": null, "completed_at": null, "failed_at": null,
        "expired_at": null, "cancelling_at": null, "cancelled_at": null,
        "request_counts": {"total": 0, "completed": 0, "failed": 0},
        "metadata": {"track_intent": "t-1", "track_payload_sha256": "ab"}}"#;

    #[test]
    fn a_batch_object_becomes_neutral() {
        let info = parse_batch("openai", VALIDATING.as_bytes()).unwrap();
        assert_eq!(info.id, "batch_abc123");
        assert_eq!(info.status, BatchStatus::Validating);
        assert_eq!(info.tag(), Some("t-1"));
        assert_eq!(info.input_file_id.as_deref(), Some("file-abc123"));
        assert_eq!(info.created_at.map(|t| t.timestamp()), Some(1_711_471_533));
        assert_eq!(info.ended_at, None);
        let done = VALIDATING
            .replace(r#""status": "validating""#, r#""status": "completed""#)
            .replace(
                r#""output_file_id": null"#,
                r#""output_file_id": "file-out""#,
            )
            .replace(r#""completed_at": null"#, r#""completed_at": 1711493133"#)
            .replace(
                r#""total": 0, "completed": 0, "failed": 0"#,
                r#""total": 100, "completed": 95, "failed": 5"#,
            );
        let info = parse_batch("openai", done.as_bytes()).unwrap();
        assert_eq!(info.status, BatchStatus::Completed);
        assert_eq!(
            (
                info.counts.total,
                info.counts.succeeded,
                info.counts.errored,
                info.counts.processing
            ),
            (100, 95, 5, 0)
        );
        assert_eq!(info.output_file_id.as_deref(), Some("file-out"));
        assert_eq!(info.ended_at.map(|t| t.timestamp()), Some(1_711_493_133));
    }

    #[test]
    fn a_failed_batch_keeps_each_error_with_its_line_and_code() {
        let failed = VALIDATING
            .replace(r#""status": "validating""#, r#""status": "failed""#)
            .replace(
                r#""errors": null"#,
                r#""errors": {"object": "list", "data": [{"code": "invalid_request",
                    "message": "The custom_id 'x' is duplicated.", "param": "custom_id",
                    "line": 2}, {"code": "token_limit_exceeded",
                    "message": "Enqueued token limit reached for gpt-4o-mini.", "param": null,
                    "line": null}]}"#,
            );
        let info = parse_batch("openai", failed.as_bytes()).unwrap();
        let failures = info.status.failures();
        assert_eq!(failures.len(), 2);
        assert_eq!(failures[0].line, Some(2));
        assert_eq!(failures[0].code, "invalid_request");
        assert_eq!(failures[0].param.as_deref(), Some("custom_id"));
        assert!(info.status.is_token_limit());
        assert!(info.status.is_ended() && !info.status.has_results());
    }

    #[test]
    fn the_listing_pages_after_its_last_id() {
        let page = format!(
            r#"{{"object": "list", "data": [{VALIDATING}], "first_id": "batch_abc123",
                "last_id": "batch_abc123", "has_more": true}}"#
        );
        let list = parse_list("openai", page.as_bytes()).unwrap();
        assert_eq!(list.batches.len(), 1);
        assert_eq!(list.next.as_deref(), Some("batch_abc123"));
        let last = page.replace(r#""has_more": true"#, r#""has_more": false"#);
        assert_eq!(parse_list("openai", last.as_bytes()).unwrap().next, None);
    }

    #[test]
    fn output_and_error_lines_become_answers_and_typed_failures() {
        let r = request();
        let file = br#"{"id": "batch_req_1", "custom_id": "a", "response": {"status_code": 200, "request_id": "req_1", "body": {"id": "chatcmpl-1", "object": "chat.completion", "created": 1711475054, "model": "gpt-4o-mini", "choices": [{"index": 0, "message": {"role": "assistant", "content": "2 + 2 equals 4."}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 24, "completion_tokens": 15, "total_tokens": 39}, "system_fingerprint": null}}, "error": null}
{"id": "batch_req_2", "custom_id": "b", "response": {"status_code": 400, "request_id": "req_2", "body": {"error": {"message": "Invalid 'messages[0].content'.", "type": "invalid_request_error", "param": "messages", "code": null}}}, "error": null}
{"id": "batch_req_3", "custom_id": "c", "response": null, "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}
{"id": "batch_req_4", "custom_id": "d", "response": null, "error": {"code": "batch_cancelled", "message": "This request was cancelled."}}
{"id": "batch_req_5", "custom_id": "e", "response": {"status_code": 500, "request_id": "req_5", "body": {"error": {"message": "The server had an error.", "type": "server_error", "param": null, "code": null}}}, "error": null}
{"id": "batch_req_6", "custom_id": "stranger", "response": null, "error": {"code": "batch_expired", "message": "x"}}

"#;
        let lines =
            parse_lines("openai", file, &|id: &str| (id != "stranger").then_some(&r)).unwrap();
        assert_eq!(lines.len(), 6);
        let answer = lines[0].outcome.as_ref().unwrap();
        assert_eq!(answer.text, "2 + 2 equals 4.");
        assert_eq!(
            (answer.usage.input_tokens, answer.usage.output_tokens),
            (24, 15)
        );
        assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
        let invalid = lines[1].outcome.as_ref().unwrap_err();
        assert!(
            invalid.is_invalid_request() && !invalid.is_retryable(),
            "{invalid:?}"
        );
        assert_eq!(invalid.http_status(), Some(400));
        assert!(
            invalid
                .to_string()
                .contains("Invalid 'messages[0].content'")
        );
        assert_eq!(lines[2].outcome, Err(LineFailure::Expired));
        assert_eq!(lines[3].outcome, Err(LineFailure::Cancelled));
        let server = lines[4].outcome.as_ref().unwrap_err();
        assert!(server.is_retryable() && !server.is_invalid_request());
        assert_eq!(lines[5].outcome, Err(LineFailure::Unknown));
        assert!(parse_lines("openai", b"{\"custom_id\": \"a\", \"resp", &|_| Some(&r)).is_err());
    }

    #[test]
    fn the_upload_is_one_multipart_body_with_purpose_batch() {
        let payload = Payload {
            api: BatchApi::Openai,
            model: "m".into(),
            custom_ids: vec!["a".into()],
            bytes: bytes::Bytes::from_static(b"{\"custom_id\":\"a\"}\n"),
            sha256: "0123456789abcdef0123".into(),
        };
        let (content_type, body) = multipart(&payload);
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap();
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"purpose\"\r\n\r\nbatch\r\n"));
        assert!(text.contains(
            "name=\"file\"; filename=\"track-0123456789abcdef.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n{\"custom_id\":\"a\"}\n\r\n"
        ));
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
        assert!(is_token_limit(
            "Enqueued token limit reached for gpt-4o in organization org-x."
        ));
        assert!(!is_token_limit("Rate limit reached for requests"));
    }
}
