//! The benchmark judge: its prompt, its token budget, and reading its verdict (one score and a
//! justification) from its answer through `crate::answer`. It must not call models or store
//! rows: the runtime and `bench::experiment` do that.

use std::collections::HashMap;

use serde_json::Value;

use crate::answer::{find_object, normalise_key, read_score};
use crate::llm::{ChatRequest, Message, SamplingParams};

/// The judge prompt (`prompts/judge_prompt.txt`).
pub const JUDGE_PROMPT: &str = include_str!("../../prompts/judge_prompt.txt");
/// Most tokens a judge's answer may use.
pub const JUDGE_MAX_TOKENS: u32 = 512;

/// The request that has `judge_model` judge: the rendered judge prompt, as repeatable as the
/// provider allows.
pub(crate) fn judge_request(judge_model: &str, prompt: String) -> ChatRequest {
    ChatRequest {
        tools: None,
        model: judge_model.into(),
        schema: None,
        system: None,
        messages: vec![Message::user(prompt)].into(),
        params: std::sync::Arc::new(SamplingParams {
            temperature: Some(0.0),
            max_tokens: Some(JUDGE_MAX_TOKENS),
            ..SamplingParams::default()
        }),
    }
}

/// The shape of a judge's verdict (structured output): a justification, then a score on
/// `min..=max`.
pub(crate) fn judge_schema(min: i64, max: i64) -> crate::llm::AnswerSchema {
    crate::llm::AnswerSchema {
        name: "judge_verdict".into(),
        schema: crate::answer::object_schema(vec![
            (
                "justification".into(),
                crate::answer::justification_schema(),
            ),
            (
                "score".into(),
                crate::answer::score_schema(min..=max, false),
            ),
        ]),
    }
}

/// A judge's single score: the `score` (and `justification`) of the JSON object in `answer`,
/// on `min..=max`. An answer without a usable score is an error naming why.
pub(crate) fn parse_judge(
    answer: &str,
    min: i64,
    max: i64,
) -> Result<(i64, Option<String>), String> {
    let object = find_object(answer)?;
    let keys: HashMap<String, &Value> = object.iter().map(|(k, v)| (normalise_key(k), v)).collect();
    let score = keys
        .get("score")
        .ok_or_else(|| "the judge's answer has no `score`".to_owned())
        .and_then(|v| read_score(v, min, max))?;
    let justification = keys
        .get("justification")
        .and_then(|v| v.as_str())
        .map(|s| s.trim().to_owned());
    Ok((score, justification))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_answers() {
        assert_eq!(
            parse_judge(
                "Verdict: {\"score\": \"4\", \"justification\": \"close\"}",
                1,
                5
            ),
            Ok((4, Some("close".into())))
        );
        assert_eq!(
            parse_judge("{\"score\": 6}", 1, 5),
            Err("6 is outside the 1-5 scale".into())
        );
        assert!(
            parse_judge("five stars", 1, 5)
                .unwrap_err()
                .contains("no JSON object")
        );
        assert_eq!(
            parse_judge("{\"grade\": 3}", 1, 5),
            Err("the judge's answer has no `score`".into())
        );
    }
}
