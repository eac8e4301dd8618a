//! Checks: how a model's answer is graded. A case has one or more checks, each
//! `{method, value}` with options (`weight`, `ignore_case`, `threshold`, a judge's rubric,
//! a script's command). A [`CheckSpec`] is parsed once from the file or the dataset; it is
//! prepared into a [`Check`] for each case (its `{{name}}` values rendered); a check grades
//! an answer into a [`CheckOutcome`] with its reason; [`combine`] makes a case's verdict
//! under its [`PassRule`]. Judge checks are handed to the benchmark's judge stage and script
//! checks to [`run_scripts`].
//!
//! It replaced `bench::methods` (one method per test), keeping its methods, aliases and
//! messages.

mod check;
mod method;
mod pass;
mod script;
mod spec;
mod tools;

pub use check::{CallFacts, Check, CheckOutcome, CheckStatus, Evaluation, JudgeCheck};
pub(crate) use method::method_names;
pub use method::{METHODS, Method};
pub(crate) use pass::combine;
pub use pass::{CaseOutcome, PassRule};
pub(crate) use script::run_scripts;
pub use script::{ScriptCheck, ScriptInput, ScriptJob};
pub use spec::{CHECK_KEYS, CheckSpec, INLINE_KEYS, ParseContext};
pub use tools::ToolTrace;

use serde_json::Value;

/// A text as messages show it: trimmed, on one line, at most 60 characters.
/// In one pass: each newline becomes one `⏎`, so the count of characters is the text's.
fn excerpt(s: &str) -> String {
    const MAX: usize = 60;
    let trimmed = s.trim();
    let mut flat = String::with_capacity(trimmed.len().min(MAX * 4) + '…'.len_utf8());
    for (n, c) in trimmed.chars().enumerate() {
        if n == MAX {
            flat.push('…');
            break;
        }
        flat.push(if c == '\n' { '⏎' } else { c });
    }
    flat
}

/// Parses an answer as JSON, allowing one surrounding Markdown code fence.
fn parse_json_answer(answer: &str) -> Result<Value, serde_json::Error> {
    let trimmed = answer.trim();
    let unfenced = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|inner| {
            // Drop an info string such as `json` on the opening line.
            match inner.split_once('\n') {
                Some((info, body)) if !info.trim_start().starts_with(['{', '[']) => body,
                _ => inner,
            }
        })
        .unwrap_or(trimmed);
    serde_json::from_str(unfenced.trim())
}

/// JSON equality where `1` equals `1.0`.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests;
