//! Anthropic messages: `x-api-key`, `anthropic-version`, a required `max_tokens`, and answers
//! as content blocks that are joined. Its Message Batches are in [`batch`].

pub mod batch;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::client::{Endpoint, LlmClient, body_excerpt};
use super::{ChatRequest, ChatResponse, Part, ProviderError, usage_or_estimate};

/// The API version track speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is used when the experiment sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Sends `request` to Anthropic's messages endpoint.
pub(crate) async fn chat(
    client: &LlmClient,
    endpoint: &Endpoint,
    request: &ChatRequest,
) -> Result<ChatResponse, ProviderError> {
    let response = client
        .post_json(endpoint, headers(endpoint)?, &body(request))
        .await?;
    let limits = super::client::limits_of(&response);
    let bytes = client.read_body(endpoint, response).await?;
    parse(&endpoint.provider, &bytes, request).map(|answer| answer.with_limits(limits))
}

/// The headers of every request to Anthropic: the API version and the key (marked
/// sensitive, so it is never logged).
pub(crate) fn headers(endpoint: &Endpoint) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        "anthropic-version",
        HeaderValue::from_static(ANTHROPIC_VERSION),
    );
    if let Some(key) = &endpoint.api_key {
        let mut value =
            HeaderValue::from_str(key.expose()).map_err(|_| ProviderError::MissingKey {
                provider: endpoint.provider.clone(),
                vars: "a key without control characters".into(),
            })?;
        value.set_sensitive(true);
        headers.insert("x-api-key", value);
    }
    Ok(headers)
}

/// The request body, live or in a batch (its `params`).
pub fn body(request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    Part::Image(i) => json!({
                        "type": "image",
                        "source": {"type": "base64", "media_type": i.media_type, "data": i.base64()}
                    }),
                })
                .collect();
            json!({"role": m.role.as_str(), "content": content})
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert(
        "max_tokens".into(),
        json!(request.params.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    body.insert("messages".into(), Value::Array(messages));
    if let Some(system) = &request.system {
        body.insert("system".into(), json!(system));
    }
    if let Some(t) = request.params.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(t) = request.params.top_p {
        body.insert("top_p".into(), json!(t));
    }
    if let Some(shape) = &request.schema {
        // A forced tool: the answer is the tool call's input, in the schema's shape.
        body.insert(
            "tools".into(),
            json!([{
                "name": shape.name,
                "description": "Record the answer in this shape.",
                "input_schema": shape.schema,
            }]),
        );
        body.insert(
            "tool_choice".into(),
            json!({"type": "tool", "name": shape.name}),
        );
    }
    Value::Object(body)
}

#[derive(Deserialize)]
struct WireResponse {
    content: Vec<WireBlock>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    /// A `tool_use` block's arguments: the answer of a forced tool.
    input: Option<Value>,
}

/// Anthropic counts prompt tokens served from or written to its prompt cache apart from
/// `input_tokens`; the prompt's size is their sum.
#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

/// Parses a message: the text blocks joined in order or, for a forced tool, its input as JSON.
pub(crate) fn parse(
    provider: &str,
    bytes: &[u8],
    request: &ChatRequest,
) -> Result<ChatResponse, ProviderError> {
    let wire: WireResponse = serde_json::from_slice(bytes).map_err(|e| ProviderError::Decode {
        provider: provider.into(),
        detail: format!("{e} in {}", body_excerpt(bytes)),
    })?;
    let tool_input = wire
        .content
        .iter()
        .filter(|b| b.kind == "tool_use")
        .find_map(|b| b.input.as_ref());
    let text: String = match tool_input {
        Some(input) if request.schema.is_some() => input.to_string(),
        _ => wire
            .content
            .iter()
            .filter(|b| b.kind == "text")
            .filter_map(|b| b.text.as_deref())
            .collect(),
    };
    let reported = wire.usage.and_then(|u| {
        let cached =
            u.cache_read_input_tokens.unwrap_or(0) + u.cache_creation_input_tokens.unwrap_or(0);
        u.input_tokens.map(|n| n + cached).zip(u.output_tokens)
    });
    let usage = usage_or_estimate(reported, request, &text);
    Ok(ChatResponse {
        text,
        usage,
        finish_reason: wire.stop_reason,
        limits: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, Message, SamplingParams};

    fn request() -> ChatRequest {
        ChatRequest {
            model: "claude-3-5-haiku-20241022".into(),
            schema: None,
            system: Some("be brief".into()),
            messages: vec![Message::user("hi")],
            params: SamplingParams::default(),
        }
    }

    #[test]
    fn body_always_has_max_tokens_and_top_level_system() {
        let mut r = request();
        r.messages[0]
            .parts
            .push(Part::Image(Image::new("image/png", vec![1, 2, 3])));
        let b = body(&r);
        assert_eq!(b["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(b["system"], "be brief");
        assert_eq!(b["messages"][0]["content"][1]["source"]["data"], "AQID");
        assert_eq!(
            b["messages"][0]["content"][1]["source"]["media_type"],
            "image/png"
        );
    }

    #[test]
    fn blocks_are_joined() {
        let raw = br#"{"id":"m","type":"message","role":"assistant","model":"x",
            "content":[{"type":"text","text":"Hello, "},{"type":"text","text":"world"}],
            "stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}"#;
        let r = parse("anthropic", raw, &request()).unwrap();
        assert_eq!(r.text, "Hello, world");
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (3, 2));
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn prompt_cache_tokens_count_as_input() {
        let raw = br#"{"content":[{"type":"text","text":"4"}],"stop_reason":"end_turn",
            "usage":{"cache_read_input_tokens":41,"input_tokens":1,"output_tokens":7}}"#;
        let r = parse("anthropic", raw, &request()).unwrap();
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (42, 7));
    }
}
