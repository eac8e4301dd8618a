//! The checks of a tool loop: `tool-called` (a tool was called, with `arguments:` an optional
//! JSON subset of its arguments), `tool-not-called`, `tool-sequence` (the tools called, in
//! order) and `steps` (the loop made at most N calls of the model). They grade the loop's
//! [`ToolTrace`], not the answer's text.

use serde_json::Value;

use super::check::CheckOutcome;
use super::json_equal;

/// The facts of a tool loop the checks grade: the tools called, in order, with their
/// arguments, and how many calls of the model the loop made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolTrace {
    /// Each call's tool and arguments, in the order the model made them.
    pub calls: Vec<(String, Value)>,
    /// How many calls of the model the loop made (1: it answered at once).
    pub steps: u32,
}

/// The trace checks grade when an answer came without a tool loop: no call, one step.
static NO_LOOP: ToolTrace = ToolTrace {
    calls: Vec::new(),
    steps: 1,
};

/// The names called, for messages: `weather, clock` or `no tool`.
fn called(trace: &ToolTrace) -> String {
    match trace.calls.as_slice() {
        [] => "no tool".to_owned(),
        calls => calls
            .iter()
            .map(|(name, _)| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Whether `have` holds `want`: every key of an object with a value holding the wanted one;
/// anything else equal (`1` equals `1.0`).
pub(super) fn contains_json(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(have), Value::Object(want)) => want
            .iter()
            .all(|(k, w)| have.get(k).is_some_and(|h| contains_json(h, w))),
        _ => json_equal(have, want),
    }
}

/// `tool-called`: `name` was called, with arguments holding `arguments` when given.
pub(super) fn tool_called(
    trace: Option<&ToolTrace>,
    name: &str,
    arguments: Option<&Value>,
) -> CheckOutcome {
    let trace = trace.unwrap_or(&NO_LOOP);
    let of_name: Vec<&Value> = trace
        .calls
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, a)| a)
        .collect();
    match arguments {
        _ if of_name.is_empty() => CheckOutcome::fail(format!(
            "expected a call of `{name}`, got {}",
            called(trace)
        )),
        None => CheckOutcome::pass(),
        Some(want) if of_name.iter().any(|have| contains_json(have, want)) => CheckOutcome::pass(),
        Some(want) => CheckOutcome::fail(format!(
            "expected a call of `{name}` with arguments holding {want}, got {}",
            of_name
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// `tool-not-called`: `name` was never called.
pub(super) fn tool_not_called(trace: Option<&ToolTrace>, name: &str) -> CheckOutcome {
    let trace = trace.unwrap_or(&NO_LOOP);
    match trace.calls.iter().filter(|(n, _)| n == name).count() {
        0 => CheckOutcome::pass(),
        n => CheckOutcome::fail(format!(
            "expected no call of `{name}`, got {}",
            crate::output::count(n as u64, "call")
        )),
    }
}

/// `tool-sequence`: the tools called are `names`, in that order, and no other.
pub(super) fn tool_sequence(trace: Option<&ToolTrace>, names: &[String]) -> CheckOutcome {
    let trace = trace.unwrap_or(&NO_LOOP);
    let got: Vec<&str> = trace.calls.iter().map(|(n, _)| n.as_str()).collect();
    if got == names.iter().map(String::as_str).collect::<Vec<_>>() {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected the calls [{}], got [{}]",
            names.join(", "),
            got.join(", ")
        ))
    }
}

/// `steps`: the loop made at most `max` calls of the model.
pub(super) fn steps(trace: Option<&ToolTrace>, max: u32) -> CheckOutcome {
    let trace = trace.unwrap_or(&NO_LOOP);
    if trace.steps <= max {
        CheckOutcome::pass()
    } else {
        CheckOutcome::fail(format!(
            "expected at most {}, took {}",
            crate::output::count(u64::from(max), "step"),
            trace.steps
        ))
    }
}
