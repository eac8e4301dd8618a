//! Ollama's `/api/chat` with its default streaming: NDJSON chunks folded into one answer.
//! Token counts come from the final chunk's `prompt_eval_count` and `eval_count`.

use futures::StreamExt;
use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::client::{Endpoint, LlmClient, body_excerpt};
use super::{ChatRequest, ChatResponse, Part, ProviderError, usage_or_estimate};

/// Sends `request` to Ollama and folds its stream into one response.
pub(crate) async fn chat(
    client: &LlmClient,
    endpoint: &Endpoint,
    request: &ChatRequest,
    head: Option<super::HeadSender>,
) -> Result<ChatResponse, ProviderError> {
    let response = client
        .post_json(endpoint, HeaderMap::new(), &body(request))
        .await?;
    let limits = super::client::limits_of(&response);
    if let Some(head) = head {
        let _ = head.send(limits.clone());
    }
    let mut stream = response.bytes_stream();
    let mut folder = StreamFolder::default();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| client.transport_error(endpoint, &e))?;
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            folder.push_line(&endpoint.provider, &line)?;
        }
    }
    folder.push_line(&endpoint.provider, &pending)?;
    folder
        .finish(&endpoint.provider, request)
        .map(|answer| answer.with_limits(limits))
}

/// The request body. `stream` is left out: Ollama streams by default and track reads streams.
/// A schema goes in `format`, and also in the prompt at temperature 0 unless one is set, as
/// Ollama's documentation advises.
pub(crate) fn body(request: &ChatRequest) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": &**system}));
    }
    let last = request.messages.len().saturating_sub(1);
    for (i, m) in request.messages.iter().enumerate() {
        let mut content = m.text();
        if let (Some(shape), true) = (&request.schema, i == last) {
            content.push_str(&format!(
                "\n\nAnswer with a JSON object that follows this JSON schema:\n{}",
                shape.schema
            ));
        }
        let mut message = json!({"role": m.role.as_str(), "content": content});
        let images: Vec<String> = m
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Image(i) => Some(i.base64()),
                Part::Text(_) => None,
            })
            .collect();
        if !images.is_empty() {
            message["images"] = json!(images);
        }
        messages.push(message);
    }
    if let Some(tools) = &request.tools {
        messages.extend(tools.openai_messages(false));
    }
    let mut options = Map::new();
    let p = &request.params;
    match (p.temperature, &request.schema) {
        (Some(t), _) => {
            options.insert("temperature".into(), json!(t));
        }
        (None, Some(_)) => {
            options.insert("temperature".into(), json!(0));
        }
        (None, None) => {}
    }
    if let Some(t) = p.top_p {
        options.insert("top_p".into(), json!(t));
    }
    if let Some(s) = p.seed {
        options.insert("seed".into(), json!(s));
    }
    if let Some(n) = p.max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    let mut body = json!({"model": &*request.model, "messages": messages});
    if !options.is_empty() {
        body["options"] = Value::Object(options);
    }
    if let Some(shape) = &request.schema {
        body["format"] = shape.schema.clone();
    }
    if let Some(tools) = &request.tools {
        body["tools"] = super::tools::openai_tools(&tools.tools);
    }
    body
}

#[derive(Deserialize)]
struct WireChunk {
    message: Option<WireMessage>,
    /// `/api/generate`'s text field, which some Ollama-compatible servers send on `/api/chat`.
    response: Option<String>,
    #[serde(default)]
    done: bool,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    eval_count: Option<u64>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: String,
    /// Tools the model asks to call: `[{function: {name, arguments: {…}}}]`.
    #[serde(default)]
    tool_calls: Vec<Value>,
}

/// Accumulates stream chunks (or one non-streamed object, which is the same shape).
#[derive(Default)]
struct StreamFolder {
    text: String,
    done: bool,
    done_reason: Option<String>,
    counts: Option<(u64, u64)>,
    /// The tools the model asked to call.
    calls: Vec<super::tools::ToolCall>,
    /// Chunks read, and chunks that carried text of either form.
    chunks: usize,
    chunks_with_text: usize,
}

impl StreamFolder {
    fn push_line(&mut self, provider: &str, line: &[u8]) -> Result<(), ProviderError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let chunk: WireChunk =
            serde_json::from_slice(line).map_err(|e| ProviderError::Truncated {
                provider: provider.into(),
                detail: format!("{e} in stream line {}", body_excerpt(line)),
            })?;
        if let Some(error) = chunk.error {
            return Err(ProviderError::Truncated {
                provider: provider.into(),
                detail: format!("error in the stream: {error}"),
            });
        }
        self.chunks += 1;
        if let Some(message) = &chunk.message {
            for call in &message.tool_calls {
                let function = &call["function"];
                self.calls.push(super::tools::ToolCall {
                    id: call["id"]
                        .as_str()
                        .map_or_else(|| format!("call_{}", self.calls.len()), str::to_owned),
                    name: function["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: function
                        .get("arguments")
                        .cloned()
                        .unwrap_or_else(|| json!({})),
                });
            }
            if !message.tool_calls.is_empty() {
                self.chunks_with_text += 1;
            }
        }
        let text = chunk.message.map(|m| m.content).or(chunk.response);
        if let Some(text) = text {
            self.chunks_with_text += 1;
            self.text.push_str(&text);
        }
        if chunk.done {
            self.done = true;
            self.done_reason = chunk.done_reason;
            self.counts = chunk.prompt_eval_count.zip(chunk.eval_count);
        }
        Ok(())
    }

    fn finish(self, provider: &str, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        if !self.done {
            return Err(ProviderError::Truncated {
                provider: provider.into(),
                detail: "the stream ended before its final `done` chunk".into(),
            });
        }
        // Chunks with neither `message` nor `response`, and no token counts: a server speaking
        // another format. Recording that as an empty answer would cache it as one.
        if self.text.is_empty() && self.counts.is_none() && self.chunks_with_text == 0 {
            return Err(ProviderError::Decode {
                provider: provider.into(),
                detail: format!(
                    "{} stream chunks with no `message` or `response` text and no token counts; \
                     is the base URL an Ollama server?",
                    self.chunks
                ),
            });
        }
        let usage = usage_or_estimate(self.counts, request, &self.text);
        let text = match &request.tools {
            Some(_) => super::tools::stored_answer(&self.text, &self.calls),
            None => self.text,
        };
        Ok(ChatResponse {
            text,
            usage,
            finish_reason: self.done_reason,
            limits: None,
            cost_usd: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, Message, SamplingParams};

    fn request() -> ChatRequest {
        ChatRequest {
            tools: None,
            model: "qwen2.5-coder:7b".into(),
            schema: None,
            system: None,
            messages: vec![Message::user("hi")].into(),
            params: SamplingParams {
                max_tokens: Some(10),
                ..Default::default()
            }
            .into(),
        }
    }

    fn fold(lines: &[&str]) -> Result<ChatResponse, ProviderError> {
        let mut f = StreamFolder::default();
        for l in lines {
            f.push_line("ollama", l.as_bytes())?;
        }
        f.finish("ollama", &request())
    }

    #[test]
    fn tools_go_in_the_openai_like_form_and_calls_are_read_from_the_stream() {
        let mut r = request();
        r.tools = Some(Box::new(crate::llm::tools::weather_use()));
        let b = body(&r);
        assert_eq!(b["tools"][0]["function"]["name"], "weather");
        let messages = b["messages"].as_array().unwrap();
        assert_eq!(
            messages[1]["tool_calls"][0]["function"]["arguments"],
            json!({"city": "Paris"}),
            "arguments as an object"
        );
        assert_eq!(messages[2]["role"], "tool");
        assert!(body(&request()).get("tools").is_none());
        let mut f = StreamFolder::default();
        let line = r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"weather","arguments":{"city":"Oslo"}}}]},"done":true,"prompt_eval_count":3,"eval_count":2}"#;
        f.push_line("ollama", line.as_bytes()).unwrap();
        let answer = f.finish("ollama", &r).unwrap();
        let (_, calls) = crate::llm::tools::read_answer(&answer.text);
        assert_eq!(calls[0].name, "weather");
        assert_eq!(calls[0].arguments, json!({"city": "Oslo"}));
    }

    #[test]
    fn response_chunks_are_read_and_a_stream_without_text_is_a_format_error() {
        let folded = fold(&[
            r#"{"response":"hel","done":false}"#,
            r#"{"response":"lo","done":true,"prompt_eval_count":3,"eval_count":2}"#,
        ])
        .unwrap();
        assert_eq!(folded.text, "hello");
        let e = fold(&[r#"{"foo":1,"done":false}"#, r#"{"done":true}"#]).unwrap_err();
        assert!(matches!(e, ProviderError::Decode { .. }), "{e}");
        assert!(e.to_string().contains("no `message` or `response`"), "{e}");
        // A model may answer nothing at all: with token counts that is an answer.
        let empty = fold(&[
            r#"{"message":{"content":""},"done":true,"prompt_eval_count":3,"eval_count":0}"#,
        ]);
        assert_eq!(empty.unwrap().text, "");
    }

    #[test]
    fn body_streams_by_default_with_options_and_images() {
        let mut r = request();
        std::sync::Arc::get_mut(&mut r.messages).unwrap()[0]
            .parts
            .push(Part::Image(Image::new("image/png", vec![1, 2, 3])));
        let b = body(&r);
        assert!(b.get("stream").is_none());
        assert_eq!(b["options"]["num_predict"], 10);
        assert_eq!(b["messages"][0]["images"][0], "AQID");
    }

    #[test]
    fn stream_chunks_fold_into_one_answer() {
        let r = fold(&[
            r#"{"model":"m","message":{"role":"assistant","content":"Hel"},"done":false}"#,
            r#"{"model":"m","message":{"role":"assistant","content":"lo"},"done":false}"#,
            r#"{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":7,"eval_count":2}"#,
        ])
        .unwrap();
        assert_eq!(r.text, "Hello");
        assert_eq!(
            (
                r.usage.input_tokens,
                r.usage.output_tokens,
                r.usage.estimated
            ),
            (7, 2, false)
        );
    }

    #[test]
    fn a_stream_without_done_is_truncated() {
        let e = fold(&[r#"{"message":{"content":"Hel"},"done":false}"#]).unwrap_err();
        assert!(e.is_retryable());
        assert!(matches!(e, ProviderError::Truncated { .. }));
        assert!(fold(&[r#"{"message":{"content":"Hel"#]).is_err());
        assert!(fold(&[r#"{"error":"model not loaded"}"#]).is_err());
    }
}
