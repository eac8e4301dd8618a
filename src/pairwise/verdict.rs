//! The pairwise judge's verdict: its shape (structured output), its request, and reading it
//! tolerantly through `crate::answer`. An answer without a readable winner is `invalid`,
//! never a guess. It must not call models or store rows.

use std::collections::HashMap;

use serde_json::Value;

use crate::answer::{find_object, normalise_key};
use crate::llm::{AnswerSchema, ChatRequest, Message, SamplingParams};
use crate::store::Winner;

/// The built-in judge prompt of candidates that answer prompts.
pub const ANSWERS_PROMPT: &str = include_str!("../../prompts/pairwise_prompt.txt");
/// The built-in judge prompt of generated datasheets.
pub const DATASHEETS_PROMPT: &str = include_str!("../../prompts/pairwise_datasheets_prompt.txt");
/// The placeholders every judge prompt must have.
pub const PLACEHOLDERS: [&str; 4] = ["task", "reference", "a", "b"];

/// The shape of a verdict: a justification, then the winner as shown (`A`, `B` or `tie`).
pub(crate) fn schema() -> AnswerSchema {
    AnswerSchema {
        name: "pairwise_verdict".into(),
        schema: crate::answer::object_schema(vec![
            (
                "justification".into(),
                crate::answer::justification_schema(),
            ),
            (
                "winner".into(),
                serde_json::json!({"type": "string", "enum": ["A", "B", "tie"]}),
            ),
        ]),
    }
}

/// The request that has `model` judge `prompt`, as repeatable as the provider allows.
pub(crate) fn request(model: &str, prompt: String, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        tools: None,
        model: model.into(),
        schema: None,
        system: None,
        messages: vec![Message::user(prompt)].into(),
        params: std::sync::Arc::new(SamplingParams {
            temperature: Some(0.0),
            max_tokens: Some(max_tokens),
            ..SamplingParams::default()
        }),
    }
}

/// The winner as shown (`A` is the first answer shown) and the justification of `answer`; an
/// error naming why when no winner can be read.
pub(crate) fn parse(answer: &str) -> Result<(Winner, Option<String>), String> {
    let object = find_object(answer)?;
    let keys: HashMap<String, &Value> = object.iter().map(|(k, v)| (normalise_key(k), v)).collect();
    let value = ["winner", "verdict", "better"]
        .iter()
        .find_map(|k| keys.get(*k))
        .ok_or_else(|| "the judge's answer has no `winner`".to_owned())?;
    let text = value
        .as_str()
        .ok_or_else(|| format!("`{value}` is not a winner (A, B or tie)"))?;
    let word = normalise_key(text);
    let winner = match word.as_str() {
        "a" | "answera" | "datasheeta" => Winner::A,
        "b" | "answerb" | "datasheetb" => Winner::B,
        "tie" | "draw" | "equal" | "neither" | "both" => Winner::Tie,
        _ => return Err(format!("`{text}` is not a winner (A, B or tie)")),
    };
    let justification = keys
        .get("justification")
        .and_then(|v| v.as_str())
        .map(|s| s.trim().to_owned());
    Ok((winner, justification))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_read_tolerantly_and_garbage_is_an_error() {
        assert_eq!(
            parse("```json\n{\"justification\": \"clearer\", \"winner\": \"B\"}\n```"),
            Ok((Winner::B, Some("clearer".into())))
        );
        assert_eq!(
            parse("Verdict: {'Winner': 'answer a',}"),
            Ok((Winner::A, None))
        );
        assert_eq!(parse("{\"winner\": \"Tie\"}"), Ok((Winner::Tie, None)));
        assert!(parse("A is better").unwrap_err().contains("no JSON object"));
        assert_eq!(
            parse("{\"winner\": \"C\"}"),
            Err("`C` is not a winner (A, B or tie)".into())
        );
        assert_eq!(
            parse("{\"score\": 3}"),
            Err("the judge's answer has no `winner`".into())
        );
    }
}
