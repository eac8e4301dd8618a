//! A check prepared for one case, and how it grades an answer: one enum with a variant per
//! method and one exhaustive `evaluate`. Every outcome says why it failed.

use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

use super::method::Method;
use super::script::ScriptCheck;
use super::{excerpt, json_equal, parse_json_answer};

/// A check ready to grade answers of one case: its values rendered, its regex compiled, its
/// JSON parsed and its schema built. Cheap to clone (the heavy parts are shared).
#[derive(Debug, Clone)]
pub struct Check {
    /// The method, as stored with each outcome.
    pub method: Method,
    /// The check's weight in a weighted score (> 0, 1 by default).
    pub weight: f64,
    /// The value the answer is compared with, rendered for the case, as stored with each
    /// outcome: a list or JSON as compact JSON; `None` where the check has none.
    pub expected: Option<String>,
    /// The turn of a conversation it checks (from 1); `None`: the last.
    pub turn: Option<usize>,
    kind: CheckKind,
}

/// What each method needs, prepared.
#[derive(Debug, Clone)]
pub(super) enum CheckKind {
    Exact {
        want: String,
        ignore_case: bool,
    },
    Contains {
        want: String,
        ignore_case: bool,
    },
    NotContains {
        want: String,
        ignore_case: bool,
    },
    StartsWith {
        any: Vec<String>,
        ignore_case: bool,
    },
    EndsWith {
        want: String,
        ignore_case: bool,
    },
    ContainsAny {
        items: Vec<String>,
        ignore_case: bool,
    },
    ContainsAll {
        items: Vec<String>,
        ignore_case: bool,
    },
    Regex(Regex),
    NotRegex(Regex),
    JsonValid,
    JsonEquals(Arc<Value>),
    JsonSchema(Arc<jsonschema::Validator>),
    Similar {
        want: String,
        threshold: f64,
        ignore_case: bool,
    },
    Latency {
        max_ms: f64,
    },
    Cost {
        max_usd: f64,
    },
    Tokens {
        max: u64,
    },
    Judge(JudgeCheck),
    Script(ScriptCheck),
    ToolCalled {
        name: String,
        arguments: Option<Arc<Value>>,
    },
    ToolNotCalled(String),
    ToolSequence(Vec<String>),
    Steps {
        max: u32,
    },
}

/// What a judge-graded check needs; the benchmark's judge stage grades it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeCheck {
    /// The rubric, rendered for the case.
    pub rubric: String,
    /// The lowest passing score, 1-5.
    pub threshold: i64,
    /// The judge model (`provider:name`).
    pub judge: String,
}

/// The facts of the call that gave the answer, for `latency`, `cost` and `tokens` checks;
/// `None` where the call did not record it. A tool loop's trace, for the tool checks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallFacts {
    pub latency_ms: Option<f64>,
    pub cost_usd: Option<f64>,
    pub output_tokens: Option<u64>,
    /// The tool loop's calls and steps (`None`: no loop, no tool called).
    pub tools: Option<Arc<super::tools::ToolTrace>>,
}

/// Whether a check passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckStatus {
    Passed,
    Failed,
    /// The check could not grade the answer (a script that crashed, hung or printed garbage;
    /// a fact the call did not record): never a pass.
    Error,
}

impl CheckStatus {}

/// The outcome of one check on one answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    pub status: CheckStatus,
    /// The check's own score from 0 to 1 where it has one: `similar`'s ratio, a script's
    /// `score`, a judge's score mapped from 1-5 (see [`CheckOutcome::judged`]).
    pub score: Option<f64>,
    /// Why: always set on a failure or an error; a script or judge may give one on a pass.
    pub reason: Option<String>,
}

impl CheckOutcome {
    /// A pass without a reason or a score.
    pub(crate) fn pass() -> Self {
        Self {
            status: CheckStatus::Passed,
            score: None,
            reason: None,
        }
    }

    /// A failure with its reason.
    pub(crate) fn fail(reason: impl Into<String>) -> Self {
        Self {
            status: CheckStatus::Failed,
            score: None,
            reason: Some(reason.into()),
        }
    }

    /// An error with its reason.
    pub(crate) fn error(reason: impl Into<String>) -> Self {
        Self {
            status: CheckStatus::Error,
            score: None,
            reason: Some(reason.into()),
        }
    }

    /// The same outcome with `score`.
    pub(crate) fn with_score(mut self, score: f64) -> Self {
        self.score = Some(score);
        self
    }

    /// Whether it passed.
    pub(crate) fn passed(&self) -> bool {
        self.status == CheckStatus::Passed
    }

    /// The outcome of a judge check whose judge gave `score` (1-5) with `justification`: a
    /// pass at `threshold` or above; its score is `(score - 1) / 4`, so 1 counts 0 and 5
    /// counts 1 in a weighted score.
    #[cfg(test)]
    pub(crate) fn judged(score: i64, threshold: i64, justification: Option<&str>) -> Self {
        let said = justification
            .map(|j| format!(": {}", excerpt(j)))
            .unwrap_or_default();
        let outcome = if score >= threshold {
            Self {
                status: CheckStatus::Passed,
                score: None,
                reason: justification.map(|_| format!("scored {score}/5{said}")),
            }
        } else {
            Self::fail(format!("scored {score}/5, below {threshold}{said}"))
        };
        outcome.with_score((score.clamp(1, 5) - 1) as f64 / 4.0)
    }
}

/// What `evaluate` did: graded the answer here, or handed it to a later stage.
#[derive(Debug, Clone)]
pub enum Evaluation<'a> {
    /// Graded.
    Graded(CheckOutcome),
    /// A judge check: grade it with a judge call (then [`CheckOutcome::judged`]).
    Judge(&'a JudgeCheck),
    /// A script check: run it with [`super::run_scripts`].
    Script(&'a ScriptCheck),
}

impl Evaluation<'_> {
    /// The outcome when graded here; a judge or script check not yet run is an error (never
    /// a pass), for callers that grade inline checks only.
    #[cfg(test)]
    pub(crate) fn into_outcome(self) -> CheckOutcome {
        match self {
            Self::Graded(outcome) => outcome,
            Self::Judge(_) => CheckOutcome::error("a judge check is graded by its judge model"),
            Self::Script(s) => CheckOutcome::error(format!(
                "script `{}` was not run (scripts run in a batch)",
                s.run
            )),
        }
    }
}

impl Check {
    pub(super) fn new(
        method: Method,
        weight: f64,
        expected: Option<String>,
        kind: CheckKind,
    ) -> Self {
        Self {
            method,
            weight,
            expected,
            turn: None,
            kind,
        }
    }

    /// The judge check, for the judge stage.
    pub(crate) fn judge(&self) -> Option<&JudgeCheck> {
        match &self.kind {
            CheckKind::Judge(j) => Some(j),
            _ => None,
        }
    }

    /// The script check, for the script runner.
    pub(crate) fn script(&self) -> Option<&ScriptCheck> {
        match &self.kind {
            CheckKind::Script(s) => Some(s),
            _ => None,
        }
    }

    /// Grades `answer` (and the call's `facts`); judge and script checks are handed back.
    pub(crate) fn evaluate(&self, answer: &str, facts: &CallFacts) -> Evaluation<'_> {
        let expected = || self.expected.as_deref().unwrap_or_default();
        let outcome = match &self.kind {
            CheckKind::Exact { want, ignore_case } => exact(answer, want, *ignore_case),
            CheckKind::Contains { want, ignore_case } => contains(answer, want, *ignore_case),
            CheckKind::NotContains { want, ignore_case } => {
                not_contains(answer, want, *ignore_case)
            }
            CheckKind::StartsWith { any, ignore_case } => starts_with(answer, any, *ignore_case),
            CheckKind::EndsWith { want, ignore_case } => ends_with(answer, want, *ignore_case),
            CheckKind::ContainsAny { items, ignore_case } => {
                contains_any(answer, items, *ignore_case)
            }
            CheckKind::ContainsAll { items, ignore_case } => {
                contains_all(answer, items, *ignore_case)
            }
            CheckKind::Regex(re) => regex(answer, re),
            CheckKind::NotRegex(re) => not_regex(answer, re),
            CheckKind::JsonValid => json_valid(answer, expected()),
            CheckKind::JsonEquals(want) => json_equals(answer, want, expected()),
            CheckKind::JsonSchema(validator) => match parse_json_answer(answer) {
                Ok(value) => schema_outcome(validator, &value),
                Err(e) => CheckOutcome::fail(format!("answer is not JSON: {e}")),
            },
            CheckKind::Similar {
                want,
                threshold,
                ignore_case,
            } => similar(answer, want, *threshold, *ignore_case),
            CheckKind::Latency { max_ms } => latency(facts, *max_ms),
            CheckKind::Cost { max_usd } => cost(facts, *max_usd),
            CheckKind::Tokens { max } => tokens(facts, *max),
            CheckKind::ToolCalled { name, arguments } => {
                super::tools::tool_called(facts.tools.as_deref(), name, arguments.as_deref())
            }
            CheckKind::ToolNotCalled(name) => {
                super::tools::tool_not_called(facts.tools.as_deref(), name)
            }
            CheckKind::ToolSequence(names) => {
                super::tools::tool_sequence(facts.tools.as_deref(), names)
            }
            CheckKind::Steps { max } => super::tools::steps(facts.tools.as_deref(), *max),
            CheckKind::Judge(j) => return Evaluation::Judge(j),
            CheckKind::Script(s) => return Evaluation::Script(s),
        };
        Evaluation::Graded(outcome)
    }
}

/// `exact`: the answer is `want`, spaces around either ignored.
fn exact(answer: &str, want: &str, ignore_case: bool) -> CheckOutcome {
    if same(answer.trim(), want.trim(), ignore_case) {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected `{}`, got `{}`",
            excerpt(want),
            excerpt(answer)
        ))
    }
}

/// `contains`: `want` is in the answer.
fn contains(answer: &str, want: &str, ignore_case: bool) -> CheckOutcome {
    if holds(answer, want, ignore_case) {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected to contain `{}`, got `{}`",
            excerpt(want),
            excerpt(answer)
        ))
    }
}

/// `not-contains`: `want` is not in the answer.
fn not_contains(answer: &str, want: &str, ignore_case: bool) -> CheckOutcome {
    if holds(answer, want, ignore_case) {
        CheckOutcome::fail(format!(
            "expected not to contain `{}`, got `{}`",
            excerpt(want),
            excerpt(answer)
        ))
    } else {
        CheckOutcome::pass()
    }
}

/// `starts-with`: the answer, spaces before it ignored, starts with one of `any`.
fn starts_with(answer: &str, any: &[String], ignore_case: bool) -> CheckOutcome {
    let start = fold(answer.trim_start(), ignore_case);
    if any
        .iter()
        .any(|w| start.starts_with(&*fold(w, ignore_case)))
    {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected to start with {}, got `{}`",
            one_of(any),
            excerpt(answer)
        ))
    }
}

/// `ends-with`: the answer, spaces after it ignored, ends with `want`.
fn ends_with(answer: &str, want: &str, ignore_case: bool) -> CheckOutcome {
    if fold(answer.trim_end(), ignore_case).ends_with(&*fold(want, ignore_case)) {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected to end with `{}`, got `{}`",
            excerpt(want),
            excerpt(answer)
        ))
    }
}

/// `contains-any`: one of `items` is in the answer.
fn contains_any(answer: &str, items: &[String], ignore_case: bool) -> CheckOutcome {
    if items.iter().any(|w| holds(answer, w, ignore_case)) {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected to contain {}, got `{}`",
            one_of(items),
            excerpt(answer)
        ))
    }
}

/// `contains-all`: every one of `items` is in the answer; the message names those missing.
fn contains_all(answer: &str, items: &[String], ignore_case: bool) -> CheckOutcome {
    let missing: Vec<String> = items
        .iter()
        .filter(|w| !holds(answer, w, ignore_case))
        .cloned()
        .collect();
    if missing.is_empty() {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected to contain all of {}; missing {}, got `{}`",
            quoted(items),
            quoted(&missing),
            excerpt(answer)
        ))
    }
}

/// `regex`: the pattern matches somewhere in the answer.
fn regex(answer: &str, re: &regex::Regex) -> CheckOutcome {
    if re.is_match(answer) {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected to match `{}`, got `{}`",
            excerpt(re.as_str()),
            excerpt(answer)
        ))
    }
}

/// `not-regex`: the pattern matches nowhere; the message shows what it matched.
fn not_regex(answer: &str, re: &regex::Regex) -> CheckOutcome {
    match re.find(answer) {
        None => CheckOutcome::pass(),
        Some(m) => CheckOutcome::fail(format!(
            "expected not to match `{}`, got `{}` (matched `{}`)",
            excerpt(re.as_str()),
            excerpt(answer),
            excerpt(m.as_str())
        )),
    }
}

/// `json-valid`: the answer is JSON (the message is the seed's, with its `expected` output).
fn json_valid(answer: &str, expected: &str) -> CheckOutcome {
    match parse_json_answer(answer) {
        Ok(_) => CheckOutcome::pass(),
        Err(_) => CheckOutcome::fail(format!(
            "expected valid JSON `{}`, got `{}`",
            excerpt(expected),
            excerpt(answer)
        )),
    }
}

/// `json-equals`: the answer is JSON equal to `want` (written as `expected`).
fn json_equals(answer: &str, want: &Value, expected: &str) -> CheckOutcome {
    match parse_json_answer(answer) {
        Ok(value) if json_equal(want, &value) => CheckOutcome::pass(),
        Ok(_) => CheckOutcome::fail(format!(
            "expected `{}`, got `{}`",
            excerpt(expected),
            excerpt(answer)
        )),
        Err(e) => CheckOutcome::fail(format!("answer is not JSON: {e}")),
    }
}

/// `similar`: the answer's normalized Levenshtein similarity to `want` is at least
/// `threshold`; the similarity is the outcome's score.
fn similar(answer: &str, want: &str, threshold: f64, ignore_case: bool) -> CheckOutcome {
    let ratio = strsim::normalized_levenshtein(
        &fold(answer.trim(), ignore_case),
        &fold(want.trim(), ignore_case),
    );
    let outcome = if ratio >= threshold {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected similarity {threshold:.2} or more to `{}`, got {ratio:.2} with `{}`",
            excerpt(want),
            excerpt(answer)
        ))
    };
    outcome.with_score(ratio)
}

/// `latency`: the call took at most `max_ms`.
fn latency(facts: &CallFacts, max_ms: f64) -> CheckOutcome {
    match facts.latency_ms {
        None => CheckOutcome::error("the call recorded no latency"),
        Some(ms) if ms <= max_ms => CheckOutcome::pass(),
        Some(ms) => CheckOutcome::fail(format!(
            "expected at most {} ms, took {} ms",
            number(max_ms),
            number(ms)
        )),
    }
}

/// `cost`: the call cost at most `max_usd` (an error when its price is unknown).
fn cost(facts: &CallFacts, max_usd: f64) -> CheckOutcome {
    match facts.cost_usd {
        None => CheckOutcome::error(
            "the call's cost is unknown (no price for its model); a cost check needs one",
        ),
        Some(usd) if usd <= max_usd => CheckOutcome::pass(),
        Some(usd) => CheckOutcome::fail(format!(
            "expected at most ${}, cost ${}",
            number(max_usd),
            number(usd)
        )),
    }
}

/// `tokens`: the answer used at most `max` output tokens.
fn tokens(facts: &CallFacts, max: u64) -> CheckOutcome {
    match facts.output_tokens {
        None => CheckOutcome::error("the call recorded no output token count"),
        Some(n) if n <= max => CheckOutcome::pass(),
        Some(n) => CheckOutcome::fail(format!("expected at most {max} output tokens, used {n}")),
    }
}

/// The answer against a schema: the first violation with where it is, and how many more.
fn schema_outcome(validator: &jsonschema::Validator, value: &Value) -> CheckOutcome {
    let mut errors = validator.iter_errors(value);
    let Some(first) = errors.next() else {
        return CheckOutcome::pass();
    };
    let more = errors.count();
    let path = first.instance_path().to_string();
    let at = if path.is_empty() {
        String::new()
    } else {
        format!(" at `{path}`")
    };
    let and_more = match more {
        0 => String::new(),
        1 => " (and 1 more violation)".to_owned(),
        n => format!(" (and {n} more violations)"),
    };
    CheckOutcome::fail(format!(
        "answer does not match the schema{at}: {}{and_more}",
        crate::llm::client::truncate_chars(&first.to_string().replace('\n', "⏎"), 160)
    ))
}

/// `text` lower-cased when case is ignored.
fn fold(text: &str, ignore_case: bool) -> std::borrow::Cow<'_, str> {
    if ignore_case {
        std::borrow::Cow::Owned(text.to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Whether `a` and `b` are the same text, case ignored when `ignore_case`: ASCII texts
/// compared in place, others lower-cased as [`fold`] does.
fn same(a: &str, b: &str, ignore_case: bool) -> bool {
    match ignore_case {
        false => a == b,
        // ASCII lower-cases byte for byte: no need to build either text.
        true if a.is_ascii() && b.is_ascii() => a.eq_ignore_ascii_case(b),
        true => a.to_lowercase() == b.to_lowercase(),
    }
}

/// The longest `want` looked for in place in an ASCII answer, case ignored; a longer one
/// is lower-cased with its answer and found by the standard search.
const IN_PLACE_WANT: usize = 64;

/// Whether `answer` contains `want`.
fn holds(answer: &str, want: &str, ignore_case: bool) -> bool {
    if !ignore_case {
        return answer.contains(want);
    }
    if answer.is_ascii() && want.is_ascii() && want.len() <= IN_PLACE_WANT {
        // ASCII lower-cases byte for byte, so comparing each window in place finds what
        // lower-casing both would.
        let want = want.as_bytes();
        return want.is_empty()
            || answer
                .as_bytes()
                .windows(want.len())
                .any(|w| w.eq_ignore_ascii_case(want));
    }
    fold(answer, true).contains(&*fold(want, true))
}

/// `` `a` `` or `` one of `a`, `b` ``.
fn one_of(items: &[String]) -> String {
    match items {
        [one] => format!("`{}`", excerpt(one)),
        _ => format!("one of {}", quoted(items)),
    }
}

/// `` `a`, `b` `` (each an excerpt).
fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{}`", excerpt(i)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A number as a person writes it: no trailing `.0`, at most 6 decimals.
fn number(x: f64) -> String {
    let text = format!("{x:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
