//! OpenAI chat completions, also spoken by OpenAI-compatible servers (OpenRouter, vLLM,
//! llama.cpp, LM Studio, Gemini's compatible endpoint). Its Batch API is in [`batch`].

pub mod batch;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::client::{Endpoint, LlmClient, Streamable, body_excerpt};
use super::{ChatRequest, ChatResponse, Part, ProviderError, ProviderKind, usage_or_estimate};

/// Sends `request` to an OpenAI-style endpoint.
pub(crate) async fn chat(
    client: &LlmClient,
    endpoint: &Endpoint,
    request: &ChatRequest,
    head: Option<super::HeadSender>,
) -> Result<ChatResponse, ProviderError> {
    let read = |bytes: &[u8]| parse(&endpoint.provider, bytes, request);
    let request = Streamable {
        body: body(request, endpoint.kind),
        stream: ask_stream,
        fold: fold_stream,
        parse: &read,
    };
    client
        .chat_streamable(endpoint, headers(endpoint)?, request, head)
        .await
}

/// Asks for a streamed answer, with its usage (sent in a last chunk of its own only when asked
/// for).
fn ask_stream(body: &mut Value) {
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
}

/// The answer of a streamed completion (`chat.completion.chunk` events until `[DONE]`) as the
/// unstreamed answer it stands for: the deltas' content (or refusal) joined, the last finish
/// reason, and the usage of the last chunk.
fn fold_stream(provider: &str, bytes: &[u8]) -> Result<Vec<u8>, ProviderError> {
    let decode = |detail: String| ProviderError::Decode {
        provider: provider.into(),
        detail,
    };
    let (mut content, mut refusal) = (None::<String>, None::<String>);
    let mut tool_deltas = super::tools::OpenAiToolDeltas::default();
    let (mut finish_reason, mut usage, mut done) = (Value::Null, Value::Null, false);
    for event in super::sse::events(bytes) {
        if event.data.trim() == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(&event.data).map_err(|e| {
            decode(format!(
                "{e} in stream event {}",
                body_excerpt(event.data.as_bytes())
            ))
        })?;
        if let Some(error) = chunk.get("error") {
            let message = error.get("message").and_then(Value::as_str);
            return Err(decode(format!(
                "error in the stream: {}",
                message.map_or_else(|| error.to_string(), str::to_owned)
            )));
        }
        if let Some(choice) = chunk.pointer("/choices/0") {
            let delta = &choice["delta"];
            tool_deltas.add(delta);
            for (field, joined) in [("content", &mut content), ("refusal", &mut refusal)] {
                if let Some(part) = delta.get(field).and_then(Value::as_str) {
                    joined.get_or_insert_with(String::new).push_str(part);
                }
            }
            if !choice["finish_reason"].is_null() {
                finish_reason = choice["finish_reason"].clone();
            }
        }
        if chunk.get("usage").is_some_and(|u| !u.is_null()) {
            usage = chunk["usage"].clone();
        }
    }
    if !done && finish_reason.is_null() {
        return Err(decode(
            "the stream ended before its last chunk (`data: [DONE]`)".into(),
        ));
    }
    let tool_calls = tool_deltas.finish().map_err(decode)?;
    let mut message = json!({"role": "assistant", "content": content, "refusal": refusal});
    if !tool_calls.is_empty() {
        message["tool_calls"] = tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": c.arguments.to_string(),
                }})
            })
            .collect();
    }
    let answer = json!({
        "choices": [{"message": message, "finish_reason": finish_reason}],
        "usage": usage,
    });
    Ok(answer.to_string().into_bytes())
}

/// The headers of every request to an OpenAI-style endpoint: the key as a bearer token
/// (marked sensitive, so it is never logged).
pub(crate) fn headers(endpoint: &Endpoint) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = &endpoint.api_key {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                ProviderError::MissingKey {
                    provider: endpoint.provider.clone(),
                    vars: "a key without control characters".into(),
                }
            })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(headers)
}

/// The request body, live or in a batch. OpenAI itself takes `max_completion_tokens`;
/// compatible servers mostly know only `max_tokens`.
pub fn body(request: &ChatRequest, kind: ProviderKind) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": &**system}));
    }
    for m in request.messages.iter() {
        let only_text = m.parts.iter().all(|p| matches!(p, Part::Text(_)));
        let content = if only_text {
            Value::String(m.text())
        } else {
            Value::Array(
                m.parts
                    .iter()
                    .map(|p| match p {
                        Part::Text(t) => json!({"type": "text", "text": t}),
                        Part::Image(i) => json!({
                            "type": "image_url",
                            "image_url": {"url": format!("data:{};base64,{}", i.media_type, i.base64())}
                        }),
                    })
                    .collect(),
            )
        };
        messages.push(json!({"role": m.role.as_str(), "content": content}));
    }
    if let Some(tools) = &request.tools {
        messages.extend(tools.openai_messages(true));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(&*request.model));
    body.insert("messages".into(), Value::Array(messages));
    let p = &request.params;
    if let Some(t) = p.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(t) = p.top_p {
        body.insert("top_p".into(), json!(t));
    }
    if let Some(s) = p.seed {
        body.insert("seed".into(), json!(s));
    }
    if let Some(n) = p.max_tokens {
        let field = match kind {
            ProviderKind::Openai => "max_completion_tokens",
            _ => "max_tokens",
        };
        body.insert(field.into(), json!(n));
    }
    if let Some(tools) = &request.tools {
        body.insert("tools".into(), super::tools::openai_tools(&tools.tools));
    }
    if let Some(shape) = &request.schema {
        // OpenAI's strict mode refuses length bounds on strings; compatible servers (llama.cpp
        // turns them into its grammar) keep them.
        let schema = match kind {
            ProviderKind::Openai => without_length_bounds(&shape.schema),
            _ => shape.schema.clone(),
        };
        body.insert(
            "response_format".into(),
            json!({
                "type": "json_schema",
                "json_schema": {"name": shape.name, "strict": true, "schema": schema},
            }),
        );
    }
    Value::Object(body)
}

/// `schema` without `minLength` and `maxLength`, at any depth.
fn without_length_bounds(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "minLength" && *k != "maxLength")
                .map(|(k, v)| (k.clone(), without_length_bounds(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_length_bounds).collect()),
        other => other.clone(),
    }
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<String>,
    refusal: Option<String>,
    /// The tools the model asks to call (read when the request offered tools).
    #[serde(default)]
    tool_calls: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// Parses a chat completion; estimates tokens when the server reports no usage.
pub(crate) fn parse(
    provider: &str,
    bytes: &[u8],
    request: &ChatRequest,
) -> Result<ChatResponse, ProviderError> {
    let wire: WireResponse = serde_json::from_slice(bytes).map_err(|e| ProviderError::Decode {
        provider: provider.into(),
        detail: format!("{e} in {}", body_excerpt(bytes)),
    })?;
    let choice = wire
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ProviderError::Decode {
            provider: provider.into(),
            detail: "the answer has no choices".into(),
        })?;
    let calls = match (&request.tools, choice.message.tool_calls) {
        (Some(_), Some(calls)) => super::tools::openai_tool_calls(&json!({"tool_calls": calls}))
            .map_err(|detail| ProviderError::Decode {
                provider: provider.into(),
                detail,
            })?,
        _ => Vec::new(),
    };
    let text = choice
        .message
        .content
        .or(choice.message.refusal)
        .unwrap_or_default();
    let text = super::tools::stored_answer(&text, &calls);
    let reported = wire
        .usage
        .and_then(|u| u.prompt_tokens.zip(u.completion_tokens));
    let usage = usage_or_estimate(reported, request, &text);
    Ok(ChatResponse {
        text,
        usage,
        finish_reason: choice.finish_reason,
        limits: None,
        cost_usd: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, Message, SamplingParams};

    fn request() -> ChatRequest {
        ChatRequest {
            tools: None,
            model: "gpt-4o".into(),
            schema: None,
            system: Some("be brief".into()),
            messages: vec![Message::user("2+2?")].into(),
            params: SamplingParams {
                temperature: Some(0.0),
                max_tokens: Some(5),
                ..Default::default()
            }
            .into(),
        }
    }

    #[test]
    fn body_has_system_and_the_right_max_tokens_field() {
        let b = body(&request(), ProviderKind::Openai);
        assert_eq!(
            b["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(b["messages"][1], json!({"role": "user", "content": "2+2?"}));
        assert_eq!(b["max_completion_tokens"], 5);
        let c = body(&request(), ProviderKind::OpenaiCompatible);
        assert_eq!(c["max_tokens"], 5);
        assert!(c.get("max_completion_tokens").is_none());
    }

    #[test]
    fn tools_and_their_exchange_are_sent_and_calls_read_back() {
        let mut r = request();
        r.tools = Some(Box::new(crate::llm::tools::weather_use()));
        let b = body(&r, ProviderKind::Openai);
        assert_eq!(b["tools"][0]["type"], "function");
        assert_eq!(b["tools"][0]["function"]["name"], "weather");
        let messages = b["messages"].as_array().unwrap();
        // system, user, the assistant's call, its result.
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[2]["tool_calls"][0]["id"], "c1");
        assert_eq!(
            messages[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"})
        );
        assert!(
            body(&request(), ProviderKind::Openai)
                .get("tools")
                .is_none()
        );
        let answer = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "weather",
            "arguments": "{\"city\": \"Oslo\"}"}}]}, "finish_reason": "tool_calls"}]});
        let parsed = parse("openai", answer.to_string().as_bytes(), &r).unwrap();
        let (text, calls) = crate::llm::tools::read_answer(&parsed.text);
        assert_eq!(text, "");
        assert_eq!(calls[0].arguments, json!({"city": "Oslo"}));
        // Streamed, the calls come as deltas.
        let stream = [
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c2",
                "function": {"name": "weather", "arguments": "{\"city\""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0,
                "function": {"arguments": ": \"Oslo\"}"}}]}, "finish_reason": "tool_calls"}]}),
        ]
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect::<String>()
            + "data: [DONE]\n\n";
        let folded = fold_stream("openai", stream.as_bytes()).unwrap();
        let parsed = parse("openai", &folded, &r).unwrap();
        assert_eq!(crate::llm::tools::read_answer(&parsed.text).1, calls);
    }

    #[test]
    fn images_become_data_urls() {
        let mut r = request();
        std::sync::Arc::get_mut(&mut r.messages).unwrap()[0]
            .parts
            .push(Part::Image(Image::new("image/png", vec![1, 2, 3])));
        let b = body(&r, ProviderKind::Openai);
        assert_eq!(
            b["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AQID"
        );
    }

    #[test]
    fn a_streamed_answer_reads_as_the_unstreamed_one() {
        let stream = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n\
            data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"4\"},\"finish_reason\":null}],\"usage\":null}\n\n\
            : a comment\n\n\
            data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"2\"},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n\
            data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2,\"total_tokens\":13}}\n\n\
            data: [DONE]\n\n";
        let folded = fold_stream("openai", stream).unwrap();
        let r = parse("openai", &folded, &request()).unwrap();
        assert_eq!(
            (r.text.as_str(), r.usage.input_tokens, r.usage.output_tokens),
            ("42", 11, 2)
        );
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert!(!r.usage.estimated);
        // A refusal streams in `refusal` deltas; without a usage chunk the counts are estimated.
        let refused = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"I can't\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let r = parse(
            "openai",
            &fold_stream("openai", refused).unwrap(),
            &request(),
        )
        .unwrap();
        assert_eq!(r.text, "I can't");
        assert!(r.usage.estimated);
    }

    #[test]
    fn a_stream_cut_short_or_with_an_error_is_a_decode_error() {
        let cut = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"4\"},\"finish_reason\":null}]}\n\n";
        let e = fold_stream("openai", cut).unwrap_err();
        assert!(
            matches!(&e, ProviderError::Decode { detail, .. } if detail.contains("[DONE]")),
            "{e}"
        );
        assert!(e.is_retryable());
        let error = b"data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n";
        let e = fold_stream("openai", error).unwrap_err();
        assert!(e.to_string().contains("The server had an error"), "{e}");
        let garbage = b"data: {not json\n\n";
        assert!(matches!(
            fold_stream("openai", garbage),
            Err(ProviderError::Decode { .. })
        ));
    }

    #[test]
    fn parses_usage_or_estimates_it() {
        let ok =
            br#"{"choices":[{"message":{"role":"assistant","content":"4"},"finish_reason":"stop"}],
                      "usage":{"prompt_tokens":11,"completion_tokens":1,"total_tokens":12}}"#;
        let r = parse("openai", ok, &request()).unwrap();
        assert_eq!(
            (r.text.as_str(), r.usage.input_tokens, r.usage.output_tokens),
            ("4", 11, 1)
        );
        assert!(!r.usage.estimated);
        let bare = br#"{"choices":[{"message":{"content":"four"},"finish_reason":"stop"}]}"#;
        let r = parse("openai", bare, &request()).unwrap();
        assert!(r.usage.estimated);
        assert_eq!(r.usage.output_tokens, 1);
        assert!(matches!(
            parse("openai", b"{\"choices\":[]}", &request()),
            Err(ProviderError::Decode { .. })
        ));
        assert!(matches!(
            parse("openai", b"<html>", &request()),
            Err(ProviderError::Decode { .. })
        ));
    }
}
