//! openai/evals registry samples (`format: openai-evals`): `{"input": [messages] | "text",
//! "ideal": "..." | [...]}` a row. `input` becomes the case's messages (a plain text is one
//! user message); every key stays a value (`{{input}}`, `{{ideal}}`); `ideal` becomes the
//! registry's `Match` check, `{method: starts-with, value: [ideals...]}`: the answer starts
//! with one of the ideals. A sample without `ideal` brings no check.

use serde_json::{Value, json};

use super::case::{CaseMessage, RowCase, parse_checks, parse_messages};
use super::read::kind_of;
use super::template::Values;
use crate::llm::Role;

/// The case of one sample.
pub(crate) fn convert(mut values: Values) -> Result<RowCase, String> {
    let mut checks = match values.shift_remove("checks") {
        Some(value) => parse_checks(&value)?,
        None => Vec::new(),
    };
    let messages = match values.get("input") {
        Some(Value::String(text)) => vec![CaseMessage {
            role: Role::User,
            content: text.clone(),
        }],
        Some(value @ Value::Array(_)) => parse_messages(value, "input")?,
        Some(other) => {
            return Err(format!(
                "`input` is {}; an openai/evals sample's input is a list of messages or a text",
                kind_of(other)
            ));
        }
        None => {
            return Err(
                "no `input`; an openai/evals sample is {\"input\": [messages], \"ideal\": \"...\"}"
                    .into(),
            );
        }
    };
    let ideals: Vec<Value> = match values.get("ideal") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(ideal_text).collect::<Result<_, _>>()?,
        Some(one) => vec![ideal_text(one)?],
    };
    if !ideals.is_empty() {
        checks.insert(0, json!({"method": "starts-with", "value": ideals}));
    }
    Ok(RowCase {
        values,
        messages: Some(messages),
        checks,
    })
}

/// An ideal answer as text (a number as JSON writes it).
fn ideal_text(value: &Value) -> Result<Value, String> {
    match value {
        Value::String(_) => Ok(value.clone()),
        Value::Number(n) => Ok(Value::String(n.to_string())),
        Value::Bool(b) => Ok(Value::String(b.to_string())),
        other => Err(format!(
            "`ideal` holds {}; an ideal is a text, or a list of texts",
            kind_of(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(v: Value) -> Values {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn input_becomes_the_messages_and_ideal_the_match_check() {
        let row = values(json!({
            "input": [
                {"role": "system", "content": "Answer with the capital only."},
                {"role": "user", "content": "France?"}
            ],
            "ideal": ["Paris", "paris"]
        }));
        let case = convert(row.clone()).unwrap();
        assert_eq!(case.values, row);
        let messages = case.messages.unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(
            (messages[0].role, messages[1].content.as_str()),
            (Role::System, "France?")
        );
        assert_eq!(
            case.checks,
            [json!({"method": "starts-with", "value": ["Paris", "paris"]})]
        );
        let case = convert(values(json!({"input": "2+2=", "ideal": 4}))).unwrap();
        assert_eq!(
            case.messages.unwrap(),
            [CaseMessage {
                role: Role::User,
                content: "2+2=".into()
            }]
        );
        assert_eq!(
            case.checks,
            [json!({"method": "starts-with", "value": ["4"]})]
        );
        assert!(
            convert(values(json!({"input": "x"})))
                .unwrap()
                .checks
                .is_empty()
        );
    }

    #[test]
    fn a_sample_without_input_or_with_a_bad_one_is_refused() {
        let e = convert(values(json!({"ideal": "x"}))).unwrap_err();
        assert!(e.starts_with("no `input`"), "{e}");
        let e = convert(values(json!({"input": 3, "ideal": "x"}))).unwrap_err();
        assert!(e.starts_with("`input` is a number"), "{e}");
        let e = convert(values(json!({"input": [{"role": "tool", "content": "x"}]}))).unwrap_err();
        assert!(e.contains("role `tool`"), "{e}");
        let e = convert(values(json!({"input": "x", "ideal": [{"a": 1}]}))).unwrap_err();
        assert!(e.contains("`ideal` holds an object"), "{e}");
    }
}
