//! Test methods: how a model's answer is judged against the expected output.

use std::fmt;
use std::str::FromStr;

use regex::Regex;
use serde_json::Value;

/// A test method with what it needs, prepared when the benchmark file is loaded.
#[derive(Debug, Clone)]
pub enum TestMethod {
    /// The answer equals the expected output after trimming surrounding white space.
    Exact,
    /// The answer contains the expected output.
    Contains,
    /// The answer contains the expected output, ignoring case.
    IContains,
    /// The answer matches the expected output as a regular expression.
    Regex(Regex),
    /// The answer is valid JSON (a surrounding ```json fence is allowed).
    JsonValid,
    /// The answer is JSON equal to the expected output's JSON (key order and number form
    /// do not matter).
    JsonEquals(Value),
    /// A judge model scores the answer against a rubric (1-5); it passes at `threshold`.
    Judge(JudgeTest),
}

/// What a judge-graded test needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeTest {
    pub rubric: String,
    /// The lowest passing score, 1-5.
    pub threshold: i64,
    /// The judge model (`provider:name`).
    pub judge: String,
}

/// The names of the methods, for messages.
pub const METHOD_NAMES: [&str; 7] = [
    "exact",
    "contains",
    "icontains",
    "regex",
    "json-valid",
    "json-equals",
    "judge",
];

/// The kind of a method without its prepared data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodName {
    Exact,
    Contains,
    IContains,
    Regex,
    JsonValid,
    JsonEquals,
    Judge,
}

impl FromStr for MethodName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(
            match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
                "exact" => Self::Exact,
                "contains" => Self::Contains,
                "icontains" => Self::IContains,
                "regex" => Self::Regex,
                "json-valid" | "is-json" => Self::JsonValid,
                "json-equals" => Self::JsonEquals,
                "judge" | "llm-rubric" => Self::Judge,
                _ => {
                    return Err(format!(
                        "unknown method `{s}`; valid methods: {}",
                        METHOD_NAMES.join(", ")
                    ));
                }
            },
        )
    }
}

impl TestMethod {
    /// Prepares `name` for `expected`: compiles a regex, parses expected JSON. Judge tests are
    /// built by the benchmark file's loader, which knows their rubric and judge.
    pub fn prepare(name: MethodName, expected: &str) -> Result<Self, String> {
        Ok(match name {
            MethodName::Exact => Self::Exact,
            MethodName::Contains => Self::Contains,
            MethodName::IContains => Self::IContains,
            MethodName::Regex => Self::Regex(Regex::new(expected).map_err(|e| {
                // regex's own message draws a caret under the pattern on several lines;
                // its last line says what is wrong.
                let text = e.to_string();
                let why = text.lines().last().unwrap_or_default();
                let why = why.trim().trim_start_matches("error: ");
                format!("`output` `{expected}` is not a valid regex: {why}")
            })?),
            MethodName::JsonValid => Self::JsonValid,
            MethodName::JsonEquals => Self::JsonEquals(
                serde_json::from_str(expected.trim())
                    .map_err(|e| format!("`output` is not valid JSON for json-equals: {e}"))?,
            ),
            MethodName::Judge => return Err("a judge test needs a rubric and a judge model".into()),
        })
    }

    /// The method's name as stored with results.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Contains => "contains",
            Self::IContains => "icontains",
            Self::Regex(_) => "regex",
            Self::JsonValid => "json-valid",
            Self::JsonEquals(_) => "json-equals",
            Self::Judge(_) => "judge",
        }
    }

    /// Judges `answer` against `expected`; on failure says why.
    pub fn check(&self, expected: &str, answer: &str) -> Verdict {
        let passed = match self {
            Self::Exact => answer.trim() == expected.trim(),
            Self::Contains => answer.contains(expected),
            Self::IContains => answer.to_lowercase().contains(&expected.to_lowercase()),
            Self::Regex(re) => re.is_match(answer),
            Self::JsonValid => parse_json_answer(answer).is_ok(),
            // Graded by the benchmark run with a judge call, never here.
            Self::Judge(_) => {
                return Verdict::fail("a judge test is graded by its judge model".into());
            }
            Self::JsonEquals(want) => match parse_json_answer(answer) {
                Ok(got) => json_equal(want, &got),
                Err(e) => {
                    return Verdict::fail(format!("answer is not JSON: {e}"));
                }
            },
        };
        if passed {
            Verdict::pass()
        } else {
            Verdict::fail(format!(
                "{} `{}`, got `{}`",
                match self {
                    Self::Exact | Self::JsonEquals(_) => "expected",
                    Self::Contains | Self::IContains => "expected to contain",
                    Self::Regex(_) => "expected to match",
                    Self::JsonValid => "expected valid JSON",
                    Self::Judge(_) => "judged",
                },
                excerpt(expected),
                excerpt(answer)
            ))
        }
    }
}

impl fmt::Display for TestMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The outcome of a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub passed: bool,
    /// Why it failed.
    pub detail: Option<String>,
}

impl Verdict {
    /// A passing verdict.
    pub fn pass() -> Self {
        Self {
            passed: true,
            detail: None,
        }
    }

    /// A failing verdict with its reason.
    pub fn fail(detail: String) -> Self {
        Self {
            passed: false,
            detail: Some(detail),
        }
    }
}

fn excerpt(s: &str) -> String {
    let flat = s.trim().replace('\n', "⏎");
    crate::llm::client::truncate_chars(&flat, 60)
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
mod tests {
    use super::*;

    fn check(method: &str, expected: &str, answer: &str) -> bool {
        let m = TestMethod::prepare(method.parse().unwrap(), expected).unwrap();
        m.check(expected, answer).passed
    }

    #[test]
    fn table_of_methods() {
        let cases = [
            ("exact", "4", " 4\n", true),
            ("exact", "4", "4.", false),
            ("exact", "Paris", "paris", false),
            ("contains", "Paris", "It is Paris.", true),
            ("contains", "Paris", "It is paris.", false),
            ("icontains", "Paris", "it is PARIS", true),
            ("regex", r"^\d+$", "42", true),
            ("regex", r"^\d+$", "42a", false),
            ("json-valid", "", r#"{"a": 1}"#, true),
            ("json-valid", "", "```json\n{\"a\": 1}\n```", true),
            ("json-valid", "", "{a: 1}", false),
            (
                "json-equals",
                r#"{"a": 1, "b": [1, 2]}"#,
                r#"{"b":[1,2.0],"a":1}"#,
                true,
            ),
            ("json-equals", r#"{"a": 1}"#, r#"{"a": 2}"#, false),
            ("json-equals", r#"{"a": 1}"#, "not json", false),
        ];
        for (method, expected, answer, want) in cases {
            assert_eq!(
                check(method, expected, answer),
                want,
                "{method} {expected:?} {answer:?}"
            );
        }
    }

    #[test]
    fn failures_say_why() {
        let m = TestMethod::Exact;
        let v = m.check("4", "five");
        assert_eq!(v.detail.as_deref(), Some("expected `4`, got `five`"));
    }

    #[test]
    fn bad_methods_and_bad_expectations_are_reported() {
        let e = "fuzzy".parse::<MethodName>().unwrap_err();
        assert!(e.contains("exact") && e.contains("json-equals"), "{e}");
        assert!(TestMethod::prepare(MethodName::Regex, "(").is_err());
        assert!(TestMethod::prepare(MethodName::JsonEquals, "{").is_err());
    }
}
