//! promptfoo test files (`format: promptfoo`, or a CSV with an `__expected` column): every
//! column is a value except promptfoo's reserved ones.
//!
//! | promptfoo column        | here                                                   |
//! |-------------------------|--------------------------------------------------------|
//! | `__expected`, `__expectedN` | one check each (below); an empty cell is no check  |
//! | `__description`         | the value `description`                                |
//! | `__metadata:KEY`        | the value `KEY`                                        |
//! | `__prefix`, `__suffix`, `__metric`, `__threshold` | refused when a cell has text  |
//!
//! An `__expected` cell is `TYPE: VALUE` or a bare value (which means `equals`):
//! `equals` → `exact`; `contains`, `icontains`, `regex`, `not-contains`, `starts-with`,
//! `not-regex` → the method of that name; `contains-any`, `contains-all` (comma-separated
//! values) → a list; `icontains-any`, `icontains-all` → the same with `ignore_case: true`.
//! `llm-rubric: RUBRIC` and `model-graded-closedqa: RUBRIC` → a `judge` check of the rubric;
//! `factuality: REFERENCE` (and `model-graded-factuality`) → a `judge` check whose rubric asks
//! for the reference's facts; the judge is the benchmark file's `judge:`, and a judged answer
//! passes at 4 of 5 (the judge check's threshold).
//! Any other promptfoo assertion (`javascript:`, `python:`, `similar(0.8):`, `is-json`, …) is
//! refused with the row's line and the form named, never dropped.

use serde_json::{Value, json};

use super::case::{RowCase, parse_checks};
use super::template::Values;

/// The forms of `__expected` this reader converts.
pub const SUPPORTED: [&str; 15] = [
    "equals",
    "contains",
    "icontains",
    "regex",
    "not-contains",
    "starts-with",
    "not-regex",
    "contains-any",
    "contains-all",
    "icontains-any",
    "icontains-all",
    "llm-rubric",
    "model-graded-closedqa",
    "factuality",
    "model-graded-factuality",
];

/// The rubric a `factuality:` check gives the judge, before the reference answer.
pub const FACTUALITY_RUBRIC: &str = "The answer states facts that agree with this reference \
     answer and contradicts none of it (wording, detail and order may differ). Reference: ";

/// promptfoo's assertion types (without `not-`), to tell a form from a bare value that holds
/// a colon: `note: x` is a value; `javascript: x` is a form, refused.
const PROMPTFOO_TYPES: [&str; 62] = [
    "answer-relevance",
    "bleu",
    "classifier",
    "contains",
    "contains-all",
    "contains-any",
    "contains-html",
    "contains-json",
    "contains-sql",
    "contains-xml",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "cost",
    "equals",
    "f-score",
    "factuality",
    "finish-reason",
    "g-eval",
    "gleu",
    "grade",
    "guardrails",
    "human",
    "icontains",
    "icontains-all",
    "icontains-any",
    "is-html",
    "is-json",
    "is-refusal",
    "is-sql",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "is-xml",
    "javascript",
    "latency",
    "levenshtein",
    "llm-rubric",
    "max-score",
    "meteor",
    "model-graded-closedqa",
    "model-graded-factuality",
    "moderation",
    "perplexity",
    "perplexity-score",
    "pi",
    "python",
    "regex",
    "rouge-n",
    "ruby",
    "search-rubric",
    "select-best",
    "similar",
    "starts-with",
    "tool-call-f1",
    "trace-error-spans",
    "trace-span-count",
    "trace-span-duration",
    "webhook",
    "word-count",
    "wer",
];

/// The case of one row of a promptfoo test file.
pub(crate) fn convert(row: Values) -> Result<RowCase, String> {
    let mut values = Values::with_capacity(row.len());
    let mut checks = Vec::new();
    let mut from_metadata: Vec<String> = Vec::new();
    for (column, value) in row {
        if column == "__expected"
            || column
                .strip_prefix("__expected")
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
        {
            let text = cell_text(&value);
            if !text.trim().is_empty() {
                checks.push(expected(&text).map_err(|e| format!("`{column}`: {e}"))?);
            }
        } else if column == "__description" {
            values.insert("description".into(), value);
        } else if let Some(key) = column.strip_prefix("__metadata:") {
            if values.contains_key(key) {
                return Err(format!(
                    "`{column}` and the column `{key}` both give the value `{key}`; rename one"
                ));
            }
            from_metadata.push(key.to_owned());
            values.insert(key.to_owned(), value);
        } else if let Some(fix) = unsupported_column(&column) {
            if !cell_text(&value).trim().is_empty() {
                return Err(format!(
                    "the promptfoo column `{column}` is not supported; {fix}"
                ));
            }
        } else if column == "checks" {
            checks.extend(parse_checks(&value)?);
        } else {
            if from_metadata.contains(&column) {
                return Err(format!(
                    "`__metadata:{column}` and the column `{column}` both give the value `{column}`; rename one"
                ));
            }
            values.insert(column, value);
        }
    }
    Ok(RowCase {
        values,
        messages: None,
        checks,
    })
}

/// The values a promptfoo file's `columns` make that describe a case rather than feed a
/// template: `description` (from `__description`) and each `__metadata:KEY`'s `KEY`.
pub(crate) fn metadata_columns<'a>(columns: impl Iterator<Item = &'a String>) -> Vec<String> {
    columns
        .filter_map(|c| match c.as_str() {
            "__description" => Some("description".to_owned()),
            other => other.strip_prefix("__metadata:").map(str::to_owned),
        })
        .collect()
}

/// Whether a file's columns make it a promptfoo test file: one is `__expected` or
/// `__expectedN`.
pub(crate) fn is_promptfoo<'a>(mut columns: impl Iterator<Item = &'a String>) -> bool {
    columns.any(|c| {
        c.strip_prefix("__expected")
            .is_some_and(|n| n.chars().all(|ch| ch.is_ascii_digit()))
    })
}

/// What to do instead of a reserved column this reader does not take.
fn unsupported_column(column: &str) -> Option<&'static str> {
    Some(match column {
        "__prefix" | "__suffix" => {
            "write the text into the template instead (`prompt: \"...{{question}}...\"`)"
        }
        "__metric" => "remove the column (results are grouped by template, model and case)",
        "__threshold" => "use `pass: {threshold: ...}` in the benchmark file instead",
        _ => return None,
    })
}

fn cell_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The check an `__expected` cell means.
fn expected(cell: &str) -> Result<Value, String> {
    let Some((head, argument, rest)) = form(cell) else {
        // A bare value: equals.
        return Ok(json!({"method": "exact", "value": cell}));
    };
    let written = match (argument, rest) {
        (Some(arg), Some(_)) => format!("{head}({arg}):"),
        (Some(arg), None) => format!("{head}({arg})"),
        (None, Some(_)) => format!("{head}:"),
        (None, None) => head.to_owned(),
    };
    let refuse = || {
        format!(
            "the form `{written}` is not supported (supported: {}; `llm-rubric`, `model-graded-closedqa` and `factuality` become judge checks); write that check in the benchmark file's `checks:` (a `script` check runs code), or write `equals: ...` if the cell is the literal answer",
            SUPPORTED.join(", ")
        )
    };
    if argument.is_some() || !SUPPORTED.contains(&head) {
        return Err(refuse());
    }
    let value = rest.unwrap_or_default().trim();
    if value.is_empty() {
        return Err(format!("`{written}` has no value; write `{head}: VALUE`"));
    }
    let list = || -> Value {
        value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.to_owned()))
            .collect()
    };
    Ok(match head {
        "equals" => json!({"method": "exact", "value": value}),
        "llm-rubric" | "model-graded-closedqa" => json!({"method": "judge", "rubric": value}),
        "factuality" | "model-graded-factuality" => {
            json!({"method": "judge", "rubric": format!("{FACTUALITY_RUBRIC}{value}")})
        }
        "contains-any" | "contains-all" => json!({"method": head, "value": list()}),
        "icontains-any" | "icontains-all" => {
            json!({"method": &head[1..], "value": list(), "ignore_case": true})
        }
        // contains, icontains, regex, not-contains, starts-with, not-regex
        _ => json!({"method": head, "value": value}),
    })
}

/// A cell's assertion form, if it has one: its type (with `not-`), its `(argument)` and the
/// text after the colon. `None` when the cell is a bare value.
fn form(cell: &str) -> Option<(&str, Option<&str>, Option<&str>)> {
    let trimmed = cell.trim();
    let (head, rest) = match trimmed.split_once(':') {
        Some((head, rest)) => (head.trim_end(), Some(rest)),
        None => (trimmed, None),
    };
    let (name, argument) = match head.split_once('(') {
        Some((name, arg)) => (name, Some(arg.strip_suffix(')')?.trim())),
        None => (head, None),
    };
    if argument.is_some_and(|a| a.is_empty() || !a.chars().all(|c| c.is_ascii_digit() || c == '.'))
    {
        return None;
    }
    let base = name.strip_prefix("not-").unwrap_or(name);
    PROMPTFOO_TYPES
        .contains(&base)
        .then_some((name, argument, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(v: Value) -> Values {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn columns_become_values_and_reserved_ones_are_mapped() {
        let case = convert(values(json!({
            "question": "2+2?",
            "__expected": "equals: 4",
            "__expected1": "contains: four",
            "__expected2": "",
            "__description": "sums",
            "__metadata:topic": "math",
            "__prefix": "",
        })))
        .unwrap();
        assert_eq!(
            Value::Object(case.values),
            json!({"question": "2+2?", "description": "sums", "topic": "math"})
        );
        assert_eq!(
            case.checks,
            [
                json!({"method": "exact", "value": "4"}),
                json!({"method": "contains", "value": "four"}),
            ]
        );
        assert_eq!(case.messages, None);
    }

    #[test]
    fn every_supported_form_of_expected_is_converted() {
        let cases = [
            (
                "equals: Paris, France",
                json!({"method": "exact", "value": "Paris, France"}),
            ),
            ("4", json!({"method": "exact", "value": "4"})),
            (
                "note: a colon",
                json!({"method": "exact", "value": "note: a colon"}),
            ),
            ("contains:x", json!({"method": "contains", "value": "x"})),
            (
                "icontains: PARIS",
                json!({"method": "icontains", "value": "PARIS"}),
            ),
            (
                "regex: ^\\d+$",
                json!({"method": "regex", "value": "^\\d+$"}),
            ),
            (
                "not-contains: sorry",
                json!({"method": "not-contains", "value": "sorry"}),
            ),
            (
                "starts-with: Yes",
                json!({"method": "starts-with", "value": "Yes"}),
            ),
            (
                "not-regex: [a-z]",
                json!({"method": "not-regex", "value": "[a-z]"}),
            ),
            (
                "contains-any: a, b ,c",
                json!({"method": "contains-any", "value": ["a", "b", "c"]}),
            ),
            (
                "contains-all: a,b",
                json!({"method": "contains-all", "value": ["a", "b"]}),
            ),
            (
                "icontains-any: A,B",
                json!({"method": "contains-any", "value": ["A", "B"], "ignore_case": true}),
            ),
        ];
        for (cell, check) in cases {
            assert_eq!(expected(cell).unwrap(), check, "{cell}");
        }
    }

    #[test]
    fn rubric_forms_become_judge_checks() {
        assert_eq!(
            expected("llm-rubric: Is polite and names {{city}}").unwrap(),
            json!({"method": "judge", "rubric": "Is polite and names {{city}}"})
        );
        assert_eq!(
            expected("model-graded-closedqa: answers in French").unwrap(),
            json!({"method": "judge", "rubric": "answers in French"})
        );
        for form in ["factuality", "model-graded-factuality"] {
            let check = expected(&format!("{form}: Paris is the capital")).unwrap();
            assert_eq!(check["method"], "judge");
            let rubric = check["rubric"].as_str().unwrap();
            assert!(
                rubric.starts_with(FACTUALITY_RUBRIC) && rubric.ends_with("Paris is the capital"),
                "{rubric}"
            );
        }
        let e = expected("llm-rubric:  ").unwrap_err();
        assert_eq!(e, "`llm-rubric:` has no value; write `llm-rubric: VALUE`");
        assert!(expected("not-llm-rubric: rude").is_err());
    }

    #[test]
    fn metadata_columns_are_the_description_and_metadata_keys() {
        let columns = ["q", "__description", "__metadata:topic", "__expected"].map(String::from);
        assert_eq!(metadata_columns(columns.iter()), ["description", "topic"]);
    }

    #[test]
    fn other_forms_are_refused_naming_the_form() {
        for (cell, form) in [
            ("javascript: output.length < 10", "`javascript:`"),
            ("python: len(output) < 10", "`python:`"),
            ("similar(0.8): hello", "`similar(0.8):`"),
            ("is-json", "`is-json`"),
            ("not-equals: x", "`not-equals:`"),
            ("contains(2): x", "`contains(2):`"),
        ] {
            let e = expected(cell).unwrap_err();
            assert!(
                e.starts_with(&format!("the form {form} is not supported")),
                "{cell}: {e}"
            );
            assert!(e.contains("supported: equals, contains"), "{e}");
        }
        let e = expected("contains:  ").unwrap_err();
        assert_eq!(e, "`contains:` has no value; write `contains: VALUE`");
        let e = convert(values(json!({"q": "x", "__expected3": "python: 1"}))).unwrap_err();
        assert!(e.starts_with("`__expected3`: the form `python:`"), "{e}");
    }

    #[test]
    fn unsupported_reserved_columns_with_text_are_refused() {
        let e = convert(values(json!({"q": "x", "__prefix": "Answer: "}))).unwrap_err();
        assert!(
            e.starts_with(
                "the promptfoo column `__prefix` is not supported; write the text into the template"
            ),
            "{e}"
        );
        let e = convert(values(json!({"q": "x", "__threshold": "0.5"}))).unwrap_err();
        assert!(e.contains("`pass: {threshold: ...}`"), "{e}");
        let e = convert(values(json!({"topic": "a", "__metadata:topic": "b"}))).unwrap_err();
        assert!(e.contains("both give the value `topic`"), "{e}");
        let e = convert(values(json!({"__metadata:topic": "b", "topic": "a"}))).unwrap_err();
        assert!(e.contains("both give the value `topic`"), "{e}");
    }

    #[test]
    fn a_file_is_promptfoo_by_its_expected_columns() {
        let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_promptfoo(cols(&["q", "__expected"]).iter()));
        assert!(is_promptfoo(cols(&["q", "__expected2"]).iter()));
        assert!(!is_promptfoo(
            cols(&["q", "__expectedx", "expected"]).iter()
        ));
    }
}
