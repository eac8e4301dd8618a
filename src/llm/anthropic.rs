//! Anthropic messages: `x-api-key`, `anthropic-version`, a required `max_tokens`, and answers
//! as content blocks that are joined. Its Message Batches are in [`batch`].

pub mod batch;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::client::{Endpoint, LlmClient, Streamable, body_excerpt};
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
    head: Option<super::HeadSender>,
) -> Result<ChatResponse, ProviderError> {
    let read = |bytes: &[u8]| parse(&endpoint.provider, bytes, request);
    let request = Streamable {
        body: body(request),
        stream: ask_stream,
        fold: fold_stream,
        parse: &read,
    };
    client
        .chat_streamable(endpoint, headers(endpoint)?, request, head)
        .await
}

/// Asks for a streamed answer.
fn ask_stream(body: &mut Value) {
    body["stream"] = json!(true);
}

/// The answer of a streamed message (`message_start`, content blocks and their deltas,
/// `message_delta`, `message_stop`) as the unstreamed message it stands for: text blocks with
/// their text, tool-use blocks with their input (its JSON deltas joined), the stop reason, and
/// the usage of `message_start` updated by `message_delta`.
fn fold_stream(provider: &str, bytes: &[u8]) -> Result<Vec<u8>, ProviderError> {
    let decode = |detail: String| ProviderError::Decode {
        provider: provider.into(),
        detail,
    };
    let mut blocks: Vec<(Value, String)> = Vec::new();
    let (mut usage, mut stop_reason, mut stopped) = (Map::new(), Value::Null, false);
    for event in super::sse::events(bytes) {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            decode(format!(
                "{e} in stream event {}",
                body_excerpt(event.data.as_bytes())
            ))
        })?;
        let block = |data: &Value| data["index"].as_u64().map(|i| i as usize);
        match data["type"].as_str().unwrap_or_default() {
            "message_start" => {
                if let Some(start) = data.pointer("/message/usage").and_then(Value::as_object) {
                    usage.extend(start.clone());
                }
            }
            "content_block_start" => {
                let at = block(&data).unwrap_or(blocks.len());
                if blocks.len() <= at {
                    blocks.resize(at + 1, (Value::Null, String::new()));
                }
                blocks[at] = (data["content_block"].clone(), String::new());
            }
            "content_block_delta" => {
                let Some((content, json)) = block(&data).and_then(|at| blocks.get_mut(at)) else {
                    continue;
                };
                add_delta(content, json, &data["delta"]);
            }
            "message_delta" => {
                if !data
                    .pointer("/delta/stop_reason")
                    .is_none_or(Value::is_null)
                {
                    stop_reason = data["delta"]["stop_reason"].clone();
                }
                if let Some(counts) = data["usage"].as_object() {
                    usage.extend(counts.clone().into_iter().filter(|(_, v)| !v.is_null()));
                }
            }
            "message_stop" => stopped = true,
            "error" => {
                let error = &data["error"];
                return Err(decode(format!(
                    "error in the stream: {}: {}",
                    error["type"].as_str().unwrap_or("error"),
                    error["message"].as_str().unwrap_or_default()
                )));
            }
            _ => {}
        }
    }
    if !stopped {
        return Err(decode(
            "the stream ended before its last event (`message_stop`)".into(),
        ));
    }
    let content = finished_blocks(blocks).map_err(decode)?;
    let answer = json!({"content": content, "stop_reason": stop_reason, "usage": usage});
    Ok(answer.to_string().into_bytes())
}

/// Adds a `content_block_delta`'s `delta` to its block: text to a text block's, JSON to the
/// text of a tool's input (`json`), parsed once the block is whole.
fn add_delta(content: &mut Value, json: &mut String, delta: &Value) {
    match delta["type"].as_str().unwrap_or_default() {
        "text_delta" => {
            let text = delta["text"].as_str().unwrap_or_default();
            let joined = format!("{}{text}", content["text"].as_str().unwrap_or(""));
            content["text"] = Value::String(joined);
        }
        "input_json_delta" => {
            json.push_str(delta["partial_json"].as_str().unwrap_or_default());
        }
        _ => {}
    }
}

/// The content blocks a stream built, each tool's input parsed from its joined JSON; an
/// index the stream skipped is left out.
fn finished_blocks(blocks: Vec<(Value, String)>) -> Result<Vec<Value>, String> {
    let mut content = Vec::new();
    for (mut block, json) in blocks {
        if block.is_null() {
            continue;
        }
        if !json.trim().is_empty() {
            block["input"] = serde_json::from_str(&json)
                .map_err(|e| format!("{e} in a tool's input {}", body_excerpt(json.as_bytes())))?;
        }
        content.push(block);
    }
    Ok(content)
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
pub(crate) fn body(request: &ChatRequest) -> Value {
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
        .chain(request.tools.iter().flat_map(|t| t.anthropic_messages()))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(&*request.model));
    body.insert(
        "max_tokens".into(),
        json!(request.params.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    body.insert("messages".into(), Value::Array(messages));
    if let Some(system) = &request.system {
        body.insert("system".into(), json!(&**system));
    }
    if let Some(t) = request.params.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(t) = request.params.top_p {
        body.insert("top_p".into(), json!(t));
    }
    if let Some(tools) = &request.tools {
        body.insert("tools".into(), super::tools::anthropic_tools(&tools.tools));
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
    /// A `tool_use` block's id and tool.
    id: Option<String>,
    name: Option<String>,
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
    let text = match &request.tools {
        Some(_) => {
            let calls: Vec<super::tools::ToolCall> = wire
                .content
                .iter()
                .filter(|b| b.kind == "tool_use")
                .map(|b| super::tools::ToolCall {
                    id: b.id.clone().unwrap_or_default(),
                    name: b.name.clone().unwrap_or_default(),
                    arguments: b.input.clone().unwrap_or_else(|| json!({})),
                })
                .collect();
            super::tools::stored_answer(&text, &calls)
        }
        None => text,
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
        cost_usd: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, Message};

    fn request() -> ChatRequest {
        ChatRequest {
            tools: None,
            model: "claude-3-5-haiku-20241022".into(),
            schema: None,
            system: Some("be brief".into()),
            messages: vec![Message::user("hi")].into(),
            params: Default::default(),
        }
    }

    /// `events` as an event stream.
    fn stream(events: &[(&str, Value)]) -> Vec<u8> {
        events
            .iter()
            .map(|(kind, data)| format!("event: {kind}\ndata: {data}\n\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn tools_and_their_exchange_are_sent_and_tool_uses_read_back() {
        let mut r = request();
        r.tools = Some(Box::new(crate::llm::tools::weather_use()));
        let b = body(&r);
        assert_eq!(b["tools"][0]["name"], "weather");
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
        let messages = b["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][0]["type"], "tool_use");
        assert_eq!(
            messages[2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "sunny"}]})
        );
        assert!(body(&request()).get("tools").is_none());
        let answer = json!({"content": [{"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 3}});
        let parsed = parse("anthropic", answer.to_string().as_bytes(), &r).unwrap();
        let (text, calls) = crate::llm::tools::read_answer(&parsed.text);
        assert_eq!(text, "Looking.");
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("toolu_1", "weather")
        );
        // Without tools offered, the same answer is its text.
        let plain = parse("anthropic", answer.to_string().as_bytes(), &request()).unwrap();
        assert_eq!(plain.text, "Looking.");
    }

    #[test]
    fn a_streamed_message_reads_as_the_unstreamed_one() {
        let bytes = stream(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "content": [], "stop_reason": null, "usage": {"input_tokens": 25, "cache_read_input_tokens": 5, "output_tokens": 1}}}),
            ),
            ("ping", json!({"type": "ping"})),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " there"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 15}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        let r = parse(
            "anthropic",
            &fold_stream("anthropic", &bytes).unwrap(),
            &request(),
        )
        .unwrap();
        assert_eq!(r.text, "Hello there");
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (30, 15));
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn a_streamed_tool_answer_joins_its_input_json() {
        let mut asked = request();
        asked.schema = Some(Box::new(crate::llm::AnswerSchema {
            name: "verdict".into(),
            schema: json!({"type": "object"}),
        }));
        let bytes = stream(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 9, "output_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "verdict", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"score\": "}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "4}"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        let r = parse(
            "anthropic",
            &fold_stream("anthropic", &bytes).unwrap(),
            &asked,
        )
        .unwrap();
        assert_eq!(r.text, r#"{"score":4}"#);
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (9, 7));
    }

    #[test]
    fn a_stream_cut_short_or_with_an_error_is_a_decode_error() {
        let cut = stream(&[(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 9}}}),
        )]);
        let e = fold_stream("anthropic", &cut).unwrap_err();
        assert!(e.to_string().contains("message_stop"), "{e}");
        assert!(e.is_retryable());
        let overloaded = stream(&[(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )]);
        let e = fold_stream("anthropic", &overloaded).unwrap_err();
        assert!(
            e.to_string().contains("overloaded_error: Overloaded"),
            "{e}"
        );
    }

    #[test]
    fn body_always_has_max_tokens_and_top_level_system() {
        let mut r = request();
        std::sync::Arc::get_mut(&mut r.messages).unwrap()[0]
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
