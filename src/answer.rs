//! Reading a model's answer: finds the JSON object in it (code fences, prose around it, JSON5
//! slips such as trailing commas, a cut-off end), normalises its keys and reads a score on the
//! scale the caller names. It must not know any experiment's keys, scales or verdicts: what the
//! object means is the caller's business.

use serde_json::Value;

/// The JSON object of an answer: the first object (in a code fence or the text) whose keys
/// name a score (`…score`, `overall`, in any case and punctuation), else the first object at
/// all. Every experiment that reads answers today asks for scores, so the preference is built
/// in; an answer without scored keys still yields its first object. An empty answer, or one
/// without a non-empty object, is an error naming why.
pub(crate) fn find_object(answer: &str) -> Result<serde_json::Map<String, Value>, String> {
    let mut first_object = None;
    for candidate in json_candidates(answer) {
        let Some(Value::Object(map)) = parse_lenient(candidate) else {
            continue;
        };
        let has_scores = map.keys().any(|k| {
            let k = normalise_key(k);
            k.ends_with("score") || k == "overall"
        });
        if has_scores {
            return Ok(map);
        }
        first_object.get_or_insert(map);
    }
    match first_object {
        Some(map) if !map.is_empty() => Ok(map),
        _ if answer.trim().is_empty() => Err("the answer is empty".into()),
        _ => Err(format!(
            "no JSON object with scores in the answer (it begins `{}`)",
            crate::llm::client::truncate_chars(&answer.trim().replace('\n', " "), 80)
        )),
    }
}

/// The JSON schema of an answer object with exactly `properties` (name, schema), all required
/// and no others: the form OpenAI's strict mode, Anthropic's tools, Ollama and llama.cpp's
/// grammars all accept.
pub(crate) fn object_schema(properties: Vec<(String, Value)>) -> Value {
    let required: Vec<Value> = properties
        .iter()
        .map(|(name, _)| Value::String(name.clone()))
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": serde_json::Map::from_iter(properties),
        "required": required,
        "additionalProperties": false,
    })
}

/// The most characters of a justification in a structured answer: one to three sentences.
/// The bound keeps a small model from looping inside a string until its token budget ends
/// (and the answer with it).
pub const JUSTIFICATION_CHARS: u64 = 400;

/// The schema of a justification: a string of at most [`JUSTIFICATION_CHARS`] characters.
pub(crate) fn justification_schema() -> Value {
    serde_json::json!({"type": "string", "maxLength": JUSTIFICATION_CHARS})
}

/// The schema of an integer score, one of `allowed`, or null (N/A) when `nullable`.
pub(crate) fn score_schema(allowed: impl IntoIterator<Item = i64>, nullable: bool) -> Value {
    let mut values: Vec<Value> = allowed.into_iter().map(Value::from).collect();
    if nullable {
        values.push(Value::Null);
        serde_json::json!({"type": ["integer", "null"], "enum": values})
    } else {
        serde_json::json!({"type": "integer", "enum": values})
    }
}

/// A key as answers spell it, reduced to lowercase letters and digits: `P1_Score`, `p1-score`
/// and `p1 score` all become `p1score`.
pub(crate) fn normalise_key(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase()
}

/// A score on `min..=max` from a number or a string like "4", "4/5", "4 out of 5"; else why
/// not, in words a results table can show. The words name "the reviewer" for every scorer
/// (a review's reviewer and the bench judge alike), as they always have.
pub(crate) fn read_score(value: &Value, min: i64, max: i64) -> Result<i64, String> {
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let s = s.trim();
            if s.is_empty() || s.eq_ignore_ascii_case("n/a") || s.eq_ignore_ascii_case("na") {
                return Err("the reviewer gave no score (N/A)".into());
            }
            let leading = s
                .split(|c: char| c == '/' || c.is_whitespace())
                .next()
                .unwrap_or_default();
            let rest = s[leading.len()..].trim().to_ascii_lowercase();
            let denominator_ok = rest.is_empty()
                || rest.trim_start_matches('/').trim() == max.to_string()
                || rest == format!("out of {max}");
            match leading.parse::<f64>() {
                Ok(v) if denominator_ok => Some(v),
                _ => return Err(format!("`{s}` is not a score")),
            }
        }
        Value::Null => return Err("the reviewer gave no score (null)".into()),
        other => return Err(format!("`{other}` is not a score")),
    };
    let Some(v) = number else {
        return Err(format!("`{value}` is not a score"));
    };
    if v.fract() != 0.0 {
        return Err(format!("{v} is not a whole score on the {min}-{max} scale"));
    }
    let v = v as i64;
    if v < min || v > max {
        return Err(format!("{v} is outside the {min}-{max} scale"));
    }
    Ok(v)
}

/// Slices that may hold the object: fenced blocks first, then every balanced `{...}`.
fn json_candidates(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(0, |i| i + 1);
        let Some(end) = after[body_start..].find("```") else {
            break;
        };
        out.push(&after[body_start..body_start + end]);
        rest = &after[body_start + end + 3..];
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            if let Some(end) = matching_brace(text, i) {
                out.push(&text[i..=end]);
                i = end + 1;
                continue;
            }
            // Unbalanced (a cut-off answer): try what there is.
            out.push(&text[i..]);
            break;
        }
        i += 1;
    }
    out
}

/// The index of the `}` closing the `{` at `open`, skipping braces inside strings.
fn matching_brace(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, c) in text[open..].char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + offset);
                }
            }
            _ => {}
        }
    }
    None
}

/// Strict JSON, else JSON5 (trailing commas, single quotes, comments, unquoted keys).
fn parse_lenient(candidate: &str) -> Option<Value> {
    let candidate = candidate.trim();
    serde_json::from_str(candidate)
        .ok()
        .or_else(|| json5::from_str(candidate).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_inside_strings_do_not_confuse_the_scanner() {
        let answer = r#"{"p1_score": 4, "p1_justification": "uses {braces} and \"}\" inside", "overall_score": 4}"#;
        let object = find_object(answer).unwrap();
        assert_eq!(
            object["p1_justification"].as_str(),
            Some("uses {braces} and \"}\" inside")
        );
    }

    #[test]
    fn prefers_the_first_object_with_score_keys() {
        let scored = find_object("{\"note\": \"hi\"} and then {\"P1-Score\": 2,}").unwrap();
        assert_eq!(scored["P1-Score"], 2, "JSON5 slips are read");
        let first = find_object("{\"note\": \"hi\"} {\"other\": 1}").unwrap();
        assert_eq!(first["note"], "hi");
        assert_eq!(find_object("  "), Err("the answer is empty".into()));
        assert!(
            find_object("{} no object here")
                .unwrap_err()
                .starts_with("no JSON object with scores in the answer (it begins `{} no object")
        );
    }
}
