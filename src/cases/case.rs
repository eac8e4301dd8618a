//! A case as the loader gives it: its id, its values, where it came from, the chat messages
//! and the checks it brings. Also the readers of a row's `messages` (OpenAI chat format) and
//! `checks` columns, shared by every format.

use serde_json::Value;

use super::read::kind_of;
use super::template::Values;
use crate::llm::Role;

/// One case: a row of a data file, with its id.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The id: the `id:` column's value as text, else the first 16 hex digits of the sha256
    /// of the values ([`super::ids`]). Unique among the cases loaded.
    pub id: String,
    /// The row's values by column, in the file's order, for templates (`{{column}}`). A
    /// `checks` column is not among them (it is [`Case::checks`]); a `messages` column is
    /// (parsed, in CSV, from its JSON text), as are openai-evals' `input` and `ideal`.
    pub values: Values,
    /// Where the row is: [`super::LoadedCases::place`] writes it as `file:line`.
    pub origin: Origin,
    /// The conversation the case itself holds, when it holds one: a `messages` column in
    /// OpenAI chat format, or openai-evals' `input`. `None`: the templates make the input.
    pub messages: Option<Vec<CaseMessage>>,
    /// Check specs the case brings (each a `{method, value, ...}` mapping, as a benchmark
    /// file writes one): its `checks` column or entry, or those converted from promptfoo's
    /// `__expected` columns or openai-evals' `ideal`. They add to the file's `checks:`.
    pub checks: Vec<Value>,
}

/// Where a case's row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The index of its file in [`super::LoadedCases::sources`].
    pub source: usize,
    /// The 1-based line the row starts on; in a Parquet file, its 1-based row number.
    pub line: u64,
}

/// One message of a case's conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseMessage {
    pub role: Role,
    /// The text (a list of text parts is joined with no separator).
    pub content: String,
}

impl From<CaseMessage> for crate::llm::Message {
    fn from(message: CaseMessage) -> Self {
        Self {
            role: message.role,
            parts: vec![crate::llm::Part::Text(message.content)],
        }
    }
}

/// What a converter makes of a row: the case but for its id and origin.
#[derive(Debug, Clone, PartialEq)]
pub struct RowCase {
    pub values: Values,
    pub messages: Option<Vec<CaseMessage>>,
    pub checks: Vec<Value>,
}

/// A row read as it is: its `checks` column taken out into checks, its `messages` column (if
/// any) read as the case's conversation and kept, parsed, among the values.
pub(crate) fn plain(mut values: Values) -> Result<RowCase, String> {
    let checks = match values.shift_remove("checks") {
        Some(value) => parse_checks(&value)?,
        None => Vec::new(),
    };
    let messages = match values.get_mut("messages") {
        Some(value) => {
            let messages = parse_messages(value, "messages")?;
            if let Value::String(text) = value
                && let Ok(parsed) = serde_json::from_str::<Value>(text)
            {
                *value = parsed;
            }
            Some(messages)
        }
        None => None,
    };
    Ok(RowCase {
        values,
        messages,
        checks,
    })
}

/// The messages of an OpenAI chat-format value (a list of `{role, content}`; in CSV, its JSON
/// text). `developer` is taken as `system`. The error says what is wrong, without the place.
pub(crate) fn parse_messages(value: &Value, name: &str) -> Result<Vec<CaseMessage>, String> {
    let parsed;
    let value = match value {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).map_err(|e| {
                format!("`{name}` is not a JSON list of messages ({e}); write [{{\"role\": \"user\", \"content\": \"...\"}}]")
            })?;
            &parsed
        }
        other => other,
    };
    let Value::Array(items) = value else {
        return Err(format!(
            "`{name}` is {}, not a list of {{\"role\", \"content\"}} messages",
            kind_of(value)
        ));
    };
    if items.is_empty() {
        return Err(format!(
            "`{name}` is an empty list; give at least one message"
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            parse_message(item).map_err(|e| format!("`{name}`, message {}: {e}", i + 1))
        })
        .collect()
}

fn parse_message(item: &Value) -> Result<CaseMessage, String> {
    let Value::Object(message) = item else {
        return Err(format!(
            "{}, not a {{\"role\", \"content\"}} object",
            kind_of(item)
        ));
    };
    let role = match message.get("role").and_then(Value::as_str) {
        Some("system" | "developer") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some(other) => {
            return Err(format!(
                "role `{other}` is not one of system, user, assistant"
            ));
        }
        None => return Err("no `role` (system, user or assistant)".into()),
    };
    let content = match message.get("content") {
        // An assistant turn left open: the model answers there (a conversation).
        None | Some(Value::Null) if role == Role::Assistant => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                match part {
                    Value::String(s) => text.push_str(s),
                    Value::Object(p) if p.get("type").and_then(Value::as_str) == Some("text") => {
                        text.push_str(p.get("text").and_then(Value::as_str).unwrap_or_default());
                    }
                    other => {
                        let kind = other
                            .get("type")
                            .and_then(Value::as_str)
                            .map_or_else(|| kind_of(other).to_owned(), |t| format!("`{t}`"));
                        return Err(format!(
                            "a content part of type {kind}; only text parts are read"
                        ));
                    }
                }
            }
            text
        }
        Some(other) => return Err(format!("`content` is {}, not text", kind_of(other))),
        None => return Err("no `content`".into()),
    };
    Ok(CaseMessage { role, content })
}

/// The checks of a `checks` value: a list of mappings, one mapping, or (in CSV) the JSON text
/// of either; null and an empty text are no checks.
pub(crate) fn parse_checks(value: &Value) -> Result<Vec<Value>, String> {
    let parsed;
    let value = match value {
        Value::String(text) if text.trim().is_empty() => return Ok(Vec::new()),
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).map_err(|e| {
                format!("`checks` is not JSON ({e}); write a list of checks: [{{\"method\": \"contains\", \"value\": \"...\"}}]")
            })?;
            &parsed
        }
        other => other,
    };
    let checks = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Object(_) => vec![value.clone()],
        Value::Array(items) => items.clone(),
        other => {
            return Err(format!(
                "`checks` is {}, not a list of checks ({{\"method\": ..., \"value\": ...}})",
                kind_of(other)
            ));
        }
    };
    if let Some((i, bad)) = checks.iter().enumerate().find(|(_, c)| !c.is_object()) {
        return Err(format!(
            "check {} of `checks` is {}, not a mapping ({{\"method\": ..., \"value\": ...}})",
            i + 1,
            kind_of(bad)
        ));
    }
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_read_from_values_and_from_json_text() {
        let expected = vec![
            CaseMessage {
                role: Role::System,
                content: "Be brief.".into(),
            },
            CaseMessage {
                role: Role::User,
                content: "Hi there".into(),
            },
        ];
        let value = json!([
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]}
        ]);
        assert_eq!(parse_messages(&value, "messages").unwrap(), expected);
        assert_eq!(
            parse_messages(&Value::String(value.to_string()), "messages").unwrap(),
            expected
        );
    }

    #[test]
    fn bad_messages_are_refused_saying_what_is_wrong() {
        let e = parse_messages(&json!([{"role": "tool", "content": "x"}]), "messages").unwrap_err();
        assert_eq!(
            e,
            "`messages`, message 1: role `tool` is not one of system, user, assistant"
        );
        let e = parse_messages(
            &json!([{"role": "user", "content": [{"type": "image_url"}]}]),
            "messages",
        )
        .unwrap_err();
        assert!(e.contains("type `image_url`"), "{e}");
        assert!(
            parse_messages(&json!("not json"), "messages")
                .unwrap_err()
                .contains("not a JSON list")
        );
        assert!(
            parse_messages(&json!([]), "messages")
                .unwrap_err()
                .contains("empty list")
        );
        assert!(
            parse_messages(&json!({"role": "user"}), "messages")
                .unwrap_err()
                .contains("an object, not a list")
        );
    }

    #[test]
    fn checks_are_a_list_one_mapping_or_json_text_of_them() {
        let one = json!({"method": "contains", "value": "x"});
        assert_eq!(
            parse_checks(&json!([one])).unwrap(),
            [json!({"method": "contains", "value": "x"})]
        );
        assert_eq!(parse_checks(&one).unwrap(), std::slice::from_ref(&one));
        assert_eq!(
            parse_checks(&Value::String(json!([one, one]).to_string()))
                .unwrap()
                .len(),
            2
        );
        assert!(parse_checks(&json!("")).unwrap().is_empty());
        assert!(parse_checks(&Value::Null).unwrap().is_empty());
        assert!(
            parse_checks(&json!("contains x"))
                .unwrap_err()
                .contains("not JSON")
        );
        assert!(
            parse_checks(&json!([1]))
                .unwrap_err()
                .contains("check 1 of `checks` is a number")
        );
    }
}
