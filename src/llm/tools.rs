//! Tools a model may call, in each provider's wire format: the declarations a request sends
//! (OpenAI `tools: [{type: function, function}]`, Anthropic `tools: [{name, input_schema}]`),
//! the calls read from an answer (OpenAI `message.tool_calls`, also streamed as deltas;
//! Anthropic `tool_use` blocks) and the results sent back (an OpenAI `tool` message, an
//! Anthropic user message of `tool_result` blocks). A request carries its tools and the
//! exchange so far as a [`ToolUse`]; an answer that asks for tools is stored as the text of
//! [`stored_answer`] (read back by [`read_answer`]), so the cache holds it as any answer. The
//! loop that uses them is the benchmark's.

use std::sync::Arc;

use serde_json::{Map, Value, json};

/// A tool as a benchmark declares it: `{name, description, parameters}`, `parameters` a JSON
/// Schema of its arguments (an object).
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// A call of a tool a model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The provider's id of the call, which its result names.
    pub id: String,
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

/// A tool's answer to one call, sent back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub call_id: String,
    pub content: String,
}

impl Tool {
    /// A tool from its declaration (`{name, description?, parameters}`), checked: a name both
    /// providers take (`^[a-zA-Z0-9_-]{1,64}$`) and `parameters` a JSON Schema of an object.
    /// The error names the tool and the fix.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        let Value::Object(fields) = value else {
            return Err(
                "a tool is a mapping: `{name: weather, description: \"…\", parameters: \
                 {type: object, properties: {…}}}`"
                    .to_owned(),
            );
        };
        let name = fields
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a tool has no `name:`")?;
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!(
                "tool `{name}`: a name is 1 to 64 letters, digits, `_` or `-` (what both \
                 OpenAI and Anthropic take)"
            ));
        }
        let description = match fields.get("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(_) => return Err(format!("tool `{name}`: `description` is a text")),
        };
        let parameters = fields
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        if parameters.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!(
                "tool `{name}`: `parameters` is a JSON Schema of an object (`{{type: object, \
                 properties: {{city: {{type: string}}}}}}`)"
            ));
        }
        Ok(Self {
            name: name.to_owned(),
            description,
            parameters,
        })
    }
}

/// What a request offers and carries of tools: the tools the model may call, and the steps of
/// the exchange so far (each the calls it asked for and their results), sent after the
/// request's messages. Part of the cache key.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    pub tools: Arc<[Tool]>,
    pub steps: Vec<ToolStep>,
}

/// One step of a tool exchange: what the model said beside its calls, the calls, and the
/// results sent back (one per call, in order).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub results: Vec<ToolResult>,
}

impl ToolUse {
    /// The tools and the exchange as canonical JSON (keys sorted), for the cache key.
    pub(crate) fn canonical(&self) -> Value {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                json!({"description": t.description, "name": t.name,
                    "parameters": super::canonical::sorted(&t.parameters)})
            })
            .collect();
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|s| {
                json!({
                    "calls": s.calls.iter().map(|c| json!({"arguments":
                        super::canonical::sorted(&c.arguments), "id": c.id, "name": c.name}))
                        .collect::<Vec<_>>(),
                    "results": s.results.iter().map(|r| json!({"call_id": r.call_id,
                        "content": r.content})).collect::<Vec<_>>(),
                    "text": s.text,
                })
            })
            .collect();
        json!({"steps": steps, "tools": tools})
    }

    /// The text it adds to a request (declarations, calls and results), for the bounds of
    /// budgets and pacing.
    pub(crate) fn text_len(&self) -> u64 {
        let tools: usize = self
            .tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
            .sum();
        let steps: usize = self
            .steps
            .iter()
            .map(|s| {
                s.text.len()
                    + s.calls
                        .iter()
                        .map(|c| c.id.len() + c.name.len() + c.arguments.to_string().len())
                        .sum::<usize>()
                    + s.results
                        .iter()
                        .map(|r| r.call_id.len() + r.content.len())
                        .sum::<usize>()
            })
            .sum();
        (tools + steps) as u64
    }

    /// The messages its steps add after the request's in OpenAI's form (Ollama's too, but for
    /// its arguments, an object there).
    pub(crate) fn openai_messages(&self, arguments_as_text: bool) -> Vec<Value> {
        let mut messages = Vec::new();
        for step in &self.steps {
            let mut sent = openai_tool_messages(&step.calls, &step.results);
            if !step.text.is_empty() {
                sent[0]["content"] = json!(step.text);
            }
            if !arguments_as_text {
                for (asked, call) in sent[0]["tool_calls"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                    .zip(&step.calls)
                {
                    asked["function"]["arguments"] = call.arguments.clone();
                }
            }
            messages.extend(sent);
        }
        messages
    }

    /// The messages its steps add after the request's in Anthropic's form.
    pub(crate) fn anthropic_messages(&self) -> Vec<Value> {
        let mut messages = Vec::new();
        for step in &self.steps {
            let mut sent = anthropic_tool_messages(&step.calls, &step.results);
            if !step.text.is_empty()
                && let Some(blocks) = sent[0]["content"].as_array_mut()
            {
                blocks.insert(0, json!({"type": "text", "text": step.text}));
            }
            messages.extend(sent);
        }
        messages
    }
}

/// The key that marks a stored answer asking for tools.
const CALLS_KEY: &str = "track_tool_calls";

/// The answer as stored: `text` itself when the model called no tool, else a JSON object
/// holding the text and the calls (`{"text": …, "track_tool_calls": [{id, name,
/// arguments}]}`), which [`read_answer`] reads back.
pub fn stored_answer(text: &str, calls: &[ToolCall]) -> String {
    if calls.is_empty() {
        return text.to_owned();
    }
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
        .collect();
    json!({ "text": text, CALLS_KEY: calls }).to_string()
}

/// The text and the tool calls of an answer stored by [`stored_answer`] (a plain text: no
/// calls).
pub fn read_answer(stored: &str) -> (String, Vec<ToolCall>) {
    let plain = || (stored.to_owned(), Vec::new());
    if !stored.starts_with('{') || !stored.contains(CALLS_KEY) {
        return plain();
    }
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(stored) else {
        return plain();
    };
    let Some(Value::Array(calls)) = fields.get(CALLS_KEY) else {
        return plain();
    };
    let calls = calls
        .iter()
        .map(|c| ToolCall {
            id: text(c, "id"),
            name: text(c, "name"),
            arguments: c
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        })
        .collect();
    (text(&Value::Object(fields), "text"), calls)
}

/// The `tools` of an OpenAI chat completions request.
pub fn openai_tools(tools: &[Tool]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters,
            }})
        })
        .collect()
}

/// The `tools` of an Anthropic messages request.
pub fn anthropic_tools(tools: &[Tool]) -> Value {
    tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect()
}

/// The tool calls of an OpenAI answer's `message` (none when it has no `tool_calls`). The
/// arguments come as JSON text: text that is not a JSON object is an error naming the tool.
pub fn openai_tool_calls(message: &Value) -> Result<Vec<ToolCall>, String> {
    let Some(calls) = message.get("tool_calls").filter(|c| !c.is_null()) else {
        return Ok(Vec::new());
    };
    let calls = calls.as_array().ok_or("`tool_calls` is not a list")?;
    calls
        .iter()
        .map(|call| {
            let function = call
                .get("function")
                .ok_or("a tool call has no `function`")?;
            let name = text(function, "name");
            let arguments = text(function, "arguments");
            Ok(ToolCall {
                id: text(call, "id"),
                arguments: arguments_of(&name, &arguments)?,
                name,
            })
        })
        .collect()
}

/// The tool calls of an Anthropic answer's `content` blocks (its `tool_use` blocks).
pub fn anthropic_tool_uses(content: &Value) -> Vec<ToolCall> {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|block| ToolCall {
            id: text(block, "id"),
            name: text(block, "name"),
            arguments: block
                .get("input")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        })
        .collect()
}

/// OpenAI's streamed tool calls, put together from their deltas (`delta.tool_calls`, each
/// fragment naming its call by `index`).
#[derive(Debug, Default)]
pub struct OpenAiToolDeltas {
    /// By index: id, name, and the arguments' text so far.
    calls: Vec<(String, String, String)>,
}

impl OpenAiToolDeltas {
    /// Adds the tool-call fragments of one chunk's `delta`.
    pub fn add(&mut self, delta: &Value) {
        for fragment in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = fragment.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            if self.calls.len() <= index {
                self.calls.resize(index + 1, Default::default());
            }
            let call = &mut self.calls[index];
            if let Some(id) = fragment.get("id").and_then(Value::as_str) {
                call.0 = id.to_owned();
            }
            let function = fragment.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                call.1.push_str(name);
            }
            if let Some(args) = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
            {
                call.2.push_str(args);
            }
        }
    }

    /// The calls put together, their arguments parsed.
    pub fn finish(self) -> Result<Vec<ToolCall>, String> {
        self.calls
            .into_iter()
            .map(|(id, name, arguments)| {
                Ok(ToolCall {
                    id,
                    arguments: arguments_of(&name, &arguments)?,
                    name,
                })
            })
            .collect()
    }
}

/// The messages that follow an OpenAI answer asking for `calls`: the assistant's message
/// with its `tool_calls`, then a `tool` message per result.
pub fn openai_tool_messages(calls: &[ToolCall], results: &[ToolResult]) -> Vec<Value> {
    let asked: Vec<Value> = calls
        .iter()
        .map(|c| {
            json!({"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": c.arguments.to_string(),
            }})
        })
        .collect();
    let mut messages = vec![json!({"role": "assistant", "content": null, "tool_calls": asked})];
    messages.extend(
        results
            .iter()
            .map(|r| json!({"role": "tool", "tool_call_id": r.call_id, "content": r.content})),
    );
    messages
}

/// The messages that follow an Anthropic answer asking for `calls`: the assistant's
/// `tool_use` blocks, then one user message of `tool_result` blocks.
pub fn anthropic_tool_messages(calls: &[ToolCall], results: &[ToolResult]) -> Vec<Value> {
    let asked: Vec<Value> = calls
        .iter()
        .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}))
        .collect();
    let answered: Vec<Value> = results
        .iter()
        .map(|r| json!({"type": "tool_result", "tool_use_id": r.call_id, "content": r.content}))
        .collect();
    vec![
        json!({"role": "assistant", "content": asked}),
        json!({"role": "user", "content": answered}),
    ]
}

/// A tool exchange for tests: the `weather` tool, and one step where the model called it for
/// Paris and got `sunny`.
#[cfg(test)]
pub(crate) fn weather_use() -> ToolUse {
    ToolUse {
        tools: vec![
            Tool::from_value(&json!({"name": "weather", "description": "The weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}))
            .expect("a valid tool"),
        ]
        .into(),
        steps: vec![ToolStep {
            text: String::new(),
            calls: vec![ToolCall {
                id: "c1".into(),
                name: "weather".into(),
                arguments: json!({"city": "Paris"}),
            }],
            results: vec![ToolResult {
                call_id: "c1".into(),
                content: "sunny".into(),
            }],
        }],
    }
}

/// A text field of `value`, empty when absent.
fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A call's arguments from their JSON text (empty: none), a JSON object.
fn arguments_of(name: &str, arguments: &str) -> Result<Value, String> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) | Err(_) => Err(format!(
            "the model called `{name}` with arguments that are not a JSON object: {}",
            arguments.chars().take(200).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> Tool {
        Tool::from_value(&json!({
            "name": "weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }))
        .unwrap()
    }

    #[test]
    fn tools_are_declared_in_each_wire_format() {
        let tools = [weather()];
        assert_eq!(
            openai_tools(&tools),
            json!([{"type": "function", "function": {
                "name": "weather", "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            }}])
        );
        assert_eq!(
            anthropic_tools(&tools),
            json!([{"name": "weather", "description": "The weather in a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}])
        );
    }

    #[test]
    fn bad_declarations_are_refused_naming_the_tool_and_the_fix() {
        for (value, says) in [
            (json!("weather"), "a tool is a mapping"),
            (json!({"description": "x"}), "no `name:`"),
            (json!({"name": "get weather"}), "1 to 64 letters"),
            (
                json!({"name": "w", "parameters": {"type": "string"}}),
                "JSON Schema of an object",
            ),
        ] {
            let e = Tool::from_value(&value).unwrap_err();
            assert!(e.contains(says), "{value}: {e}");
        }
    }

    #[test]
    fn tool_calls_are_read_from_each_wire_format() {
        let openai = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}},
        ]});
        let expected = vec![ToolCall {
            id: "call_1".into(),
            name: "weather".into(),
            arguments: json!({"city": "Paris"}),
        }];
        assert_eq!(openai_tool_calls(&openai).unwrap(), expected);
        assert!(
            openai_tool_calls(&json!({"content": "hi"}))
                .unwrap()
                .is_empty()
        );
        let anthropic = json!([
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
        ]);
        assert_eq!(anthropic_tool_uses(&anthropic), expected);
        let bad = json!({"tool_calls": [{"id": "c", "function": {"name": "weather",
            "arguments": "{city"}}]});
        let e = openai_tool_calls(&bad).unwrap_err();
        assert!(
            e.contains("`weather`") && e.contains("not a JSON object"),
            "{e}"
        );
    }

    #[test]
    fn streamed_openai_tool_calls_are_put_together_from_their_deltas() {
        let mut deltas = OpenAiToolDeltas::default();
        for delta in [
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "weather", "arguments": ""}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": "}}]}),
            json!({"tool_calls": [{"index": 1, "id": "call_2",
                "function": {"name": "clock", "arguments": "{}"}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
        ] {
            deltas.add(&delta);
        }
        let calls = deltas.finish().unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
        assert_eq!(
            (calls[1].id.as_str(), calls[1].name.as_str()),
            ("call_2", "clock")
        );
    }

    #[test]
    fn an_answer_asking_for_tools_is_stored_as_text_and_read_back() {
        let calls = vec![ToolCall {
            id: "call_1".into(),
            name: "weather".into(),
            arguments: json!({"city": "Paris"}),
        }];
        let stored = stored_answer("Let me look.", &calls);
        assert_eq!(read_answer(&stored), ("Let me look.".to_owned(), calls));
        // No call: the text as it is, read back as it is.
        assert_eq!(stored_answer("sunny", &[]), "sunny");
        assert_eq!(read_answer("sunny"), ("sunny".to_owned(), Vec::new()));
        let json = r#"{"answer": 4}"#;
        assert_eq!(read_answer(json), (json.to_owned(), Vec::new()));
    }

    #[test]
    fn the_exchange_follows_the_messages_in_each_wire_format() {
        let calls = vec![ToolCall {
            id: "c1".into(),
            name: "weather".into(),
            arguments: json!({"city": "Paris"}),
        }];
        let results = vec![ToolResult {
            call_id: "c1".into(),
            content: "sunny".into(),
        }];
        let usage = ToolUse {
            tools: vec![weather()].into(),
            steps: vec![ToolStep {
                text: "Looking.".into(),
                calls,
                results,
            }],
        };
        let openai = usage.openai_messages(true);
        assert_eq!(openai[0]["content"], "Looking.");
        assert_eq!(
            openai[0]["tool_calls"][0]["function"]["arguments"],
            "{\"city\":\"Paris\"}"
        );
        assert_eq!(openai[1]["role"], "tool");
        let ollama = usage.openai_messages(false);
        assert_eq!(
            ollama[0]["tool_calls"][0]["function"]["arguments"],
            json!({"city": "Paris"})
        );
        let anthropic = usage.anthropic_messages();
        assert_eq!(
            anthropic[0]["content"][0],
            json!({"type": "text", "text": "Looking."})
        );
        assert_eq!(anthropic[0]["content"][1]["type"], "tool_use");
        assert_eq!(anthropic[1]["content"][0]["type"], "tool_result");
        // Another result is another exchange: another key.
        let mut other = usage.clone();
        other.steps[0].results[0].content = "rain".into();
        assert_ne!(usage.canonical(), other.canonical());
    }

    #[test]
    fn results_go_back_as_each_provider_wants_them() {
        let calls = vec![ToolCall {
            id: "call_1".into(),
            name: "weather".into(),
            arguments: json!({"city": "Paris"}),
        }];
        let results = vec![ToolResult {
            call_id: "call_1".into(),
            content: "sunny".into(),
        }];
        let openai = openai_tool_messages(&calls, &results);
        assert_eq!(
            openai[0]["tool_calls"][0]["function"]["arguments"],
            "{\"city\":\"Paris\"}"
        );
        assert_eq!(
            openai[1],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "sunny"})
        );
        let anthropic = anthropic_tool_messages(&calls, &results);
        assert_eq!(anthropic[0]["content"][0]["type"], "tool_use");
        assert_eq!(
            anthropic[1],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}]})
        );
    }
}
