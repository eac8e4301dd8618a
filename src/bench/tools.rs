//! Tool loops: a benchmark's `tools:` (each `{name, description, parameters, result | run}`)
//! and `max_steps:`. The model is sent the tools with the case's request; when it asks for
//! tools, each call's result is filled (`result:`, a template of the case's values) or run
//! (`run:`, a command reading the arguments as JSON on stdin and printing the result, within
//! `timeout_secs:`, 30 by default), sent
//! back, and the model asked again, until it answers in text or `max_steps` calls were made.
//! Each step is one call of its own stage, cached by its whole exchange, as a conversation's
//! turns are ([`super::conversation`]).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::Value;

use crate::cases::{Template, Values};
use crate::checks::ToolTrace;
use crate::llm::tools::{Tool, ToolCall, ToolResult, ToolStep, ToolUse};
use crate::process::Program;

/// How many calls a tool loop makes at most, unless `max_steps:` says.
pub const DEFAULT_MAX_STEPS: u32 = 8;
/// The most `max_steps:` may be.
const MOST_STEPS: u32 = 100;
/// How long a tool's command may run, unless `timeout_secs:` says.
const DEFAULT_TOOL_TIMEOUT_SECS: f64 = 30.0;
/// The most `timeout_secs:` may be.
const MAX_TOOL_TIMEOUT_SECS: f64 = 3600.0;

/// The fix named for a malformed tool.
const TOOL_FIX: &str = "write each tool as `{name: weather, description: \"…\", parameters: \
                        {type: object, properties: {city: {type: string}}}, result: \
                        \"{{weather}}\"}` (or `run: \"python3 weather.py\"` instead of \
                        `result:`)";

/// The keys of a tool.
const TOOL_KEYS: [&str; 6] = [
    "name",
    "description",
    "parameters",
    "result",
    "run",
    "timeout_secs",
];

/// A benchmark's tools: what the model is offered, where each result comes from, and how
/// many calls a loop makes at most.
#[derive(Debug, Clone)]
pub struct ToolSet {
    /// The tools as sent, in the file's order.
    pub tools: Arc<[Tool]>,
    /// Where each tool's results come from, in the same order.
    sources: Vec<Source>,
    /// The most calls of one case's loop (`max_steps:`, 8 by default).
    pub max_steps: u32,
}

/// Where a tool's result comes from.
#[derive(Debug, Clone)]
enum Source {
    /// A template of the case's values (`result: "{{weather}}"`).
    Result(Template),
    /// A command reading the arguments as JSON on stdin and printing the result, stopped
    /// after its timeout.
    Run(Program, Duration),
}

impl ToolSet {
    /// The tools of `tools:` and `max_steps:`, checked; the error names the tool and the fix.
    /// Commands run in `base_dir` (the benchmark file's folder).
    pub fn parse(tools: &Value, max_steps: Option<u32>, base_dir: &Path) -> Result<Self, String> {
        let Value::Array(items) = tools else {
            return Err(format!("`tools` is a list of tools; {TOOL_FIX}"));
        };
        if items.is_empty() {
            return Err(format!("`tools` is an empty list; {TOOL_FIX}"));
        }
        let max_steps = match max_steps {
            None => DEFAULT_MAX_STEPS,
            Some(n) if (1..=MOST_STEPS).contains(&n) => n,
            Some(n) => {
                return Err(format!(
                    "`max_steps: {n}` must be from 1 to {MOST_STEPS}: the most calls a case's \
                     tool loop makes"
                ));
            }
        };
        let mut parsed: Vec<Tool> = Vec::with_capacity(items.len());
        let mut sources = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let (tool, source) = parse_tool(i, item, base_dir)?;
            if parsed.iter().any(|t| t.name == tool.name) {
                return Err(format!(
                    "tools: two tools are named `{}`; give each its own name",
                    tool.name
                ));
            }
            parsed.push(tool);
            sources.push(source);
        }
        Ok(Self {
            tools: parsed.into(),
            sources,
            max_steps,
        })
    }

    /// What a request carries after `steps`: the tools and that exchange.
    pub(crate) fn usage(&self, steps: Vec<ToolStep>) -> Box<ToolUse> {
        Box::new(ToolUse {
            tools: self.tools.clone(),
            steps,
        })
    }

    /// The results of `calls` for a case of `values`: each tool's result filled or run; a
    /// call of a tool not declared gets a result saying so (the model may then try again). An
    /// error (a value missing, a command that failed) names the tool; `None` when `stop` was
    /// set while a command ran.
    pub(crate) fn answer(
        &self,
        calls: &[ToolCall],
        values: Option<&Values>,
        stop: &AtomicBool,
    ) -> Result<Option<Vec<ToolResult>>, String> {
        let none = Values::new();
        let values = values.unwrap_or(&none);
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let Some(at) = self.tools.iter().position(|t| t.name == call.name) else {
                let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
                results.push(ToolResult {
                    call_id: call.id.clone(),
                    content: format!(
                        "error: there is no tool named `{}`; the tools are: {}",
                        call.name,
                        names.join(", ")
                    ),
                });
                continue;
            };
            let content = match &self.sources[at] {
                Source::Result(template) => template
                    .render(values)
                    .map_err(|e| format!("tool `{}`: `result:` has {e} in this case", call.name))?,
                Source::Run(program, timeout) => {
                    match run(program, *timeout, &call.arguments, stop)
                        .map_err(|e| format!("tool `{}`: {e}", call.name))?
                    {
                        Some(content) => content,
                        None => return Ok(None),
                    }
                }
            };
            results.push(ToolResult {
                call_id: call.id.clone(),
                content,
            });
        }
        Ok(Some(results))
    }
}

/// Runs a tool's command with `arguments` as JSON on stdin: what it printed, trimmed; `None`
/// when `stop` was set first. Output too long to keep whole is sent as its start and its end,
/// with a line between them saying how much was left out (the model reads it, and so does
/// the stored row).
fn run(
    program: &Program,
    timeout: Duration,
    arguments: &Value,
    stop: &AtomicBool,
) -> Result<Option<String>, String> {
    let name = format!("`{}`", program.run);
    let Some(ended) = program.run(arguments.to_string().into_bytes(), timeout, stop)? else {
        return Ok(None);
    };
    let (stdout, _) = ended.output(&name, timeout)?;
    let text = stdout.text(|dropped| {
        let count = crate::output::counted;
        format!(
            "[track: this tool printed {}, too many to send: the {} between its start and \
             its end are left out here]",
            count(stdout.total(), "byte"),
            count(dropped, "byte"),
        )
    });
    Ok(Some(text.trim().to_owned()))
}

/// The trace the checks grade of a loop that made `steps` then got a last answer asking for
/// `last` (none: it answered in text).
pub(crate) fn trace(steps: &[ToolStep], last: &[ToolCall]) -> ToolTrace {
    ToolTrace {
        calls: steps
            .iter()
            .flat_map(|s| &s.calls)
            .chain(last)
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect(),
        steps: steps.len() as u32 + 1,
    }
}

/// `tool_calls.csv` of runs `run_ids`: one row per call of a tool (run, model, case,
/// template, repeat, step, call index and id, tool, arguments, result); `None` when the runs
/// made none.
pub(crate) fn tool_calls_frame(
    store: &crate::store::Store,
    run_ids: &[i64],
) -> anyhow::Result<Option<polars::prelude::DataFrame>> {
    use polars::prelude::{Column, DataFrame};
    let rows = store.tool_calls(run_ids)?;
    if rows.is_empty() {
        return Ok(None);
    }
    let [
        run,
        model,
        prompt,
        template,
        repeat,
        step,
        index,
        id,
        tool,
        arguments,
        result,
    ] = crate::store::TOOL_CALL_COLUMNS;
    let texts = |f: fn(&crate::store::ExportedToolCall) -> Option<&str>| {
        rows.iter().map(f).collect::<Vec<_>>()
    };
    let numbers =
        |f: fn(&crate::store::ExportedToolCall) -> u32| rows.iter().map(f).collect::<Vec<_>>();
    Ok(Some(DataFrame::new_infer_height(vec![
        Column::new(
            run.into(),
            rows.iter().map(|r| r.run_id).collect::<Vec<_>>(),
        ),
        Column::new(model.into(), texts(|r| Some(&r.model_ref))),
        Column::new(prompt.into(), texts(|r| Some(&r.prompt_name))),
        Column::new(template.into(), texts(|r| r.template_name.as_deref())),
        Column::new(repeat.into(), numbers(|r| r.repeat_index)),
        Column::new(step.into(), numbers(|r| r.step)),
        Column::new(index.into(), numbers(|r| r.call_index)),
        Column::new(id.into(), texts(|r| Some(&r.call_id))),
        Column::new(tool.into(), texts(|r| Some(&r.name))),
        Column::new(arguments.into(), texts(|r| Some(&r.arguments))),
        Column::new(result.into(), texts(|r| r.result.as_deref())),
    ])?))
}

/// Tool `i` of `tools:` (from 0) and where its result comes from, checked.
fn parse_tool(i: usize, item: &Value, base_dir: &Path) -> Result<(Tool, Source), String> {
    let label = match item.get("name").and_then(Value::as_str) {
        Some(name) => format!("tool `{name}`"),
        None => format!("tool {}", i + 1),
    };
    let tool = Tool::from_value(item).map_err(|e| {
        // `from_value` names a tool that has a name itself.
        match item.get("name").and_then(Value::as_str) {
            Some(_) => format!("tools: {e}; {TOOL_FIX}"),
            None => format!("tools: {label}: {e}; {TOOL_FIX}"),
        }
    })?;
    let Some(fields) = item.as_object() else {
        unreachable!("a tool is a mapping: from_value checked")
    };
    if let Some(key) = fields.keys().find(|k| !TOOL_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "tools: {label}: {}",
            crate::yaml::unknown_key(key, &TOOL_KEYS)
        ));
    }
    let text = |key: &str| match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!(
            "tools: {label}: `{key}` is a text, not {}",
            crate::cases::read::kind_of(other)
        )),
    };
    let timeout = match fields.get("timeout_secs") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(secs) if secs > 0.0 && secs <= MAX_TOOL_TIMEOUT_SECS => {
                Some(Duration::from_secs_f64(secs))
            }
            _ => {
                return Err(format!(
                    "tools: {label}: `timeout_secs: {n}` must be above 0 and at most \
                     {MAX_TOOL_TIMEOUT_SECS}: the seconds its command may run"
                ));
            }
        },
        Some(other) => {
            return Err(format!(
                "tools: {label}: `timeout_secs` is a number of seconds, not {}",
                crate::cases::read::kind_of(other)
            ));
        }
    };
    let source = match (text("result")?, text("run")?) {
        (Some(_), None) if timeout.is_some() => {
            return Err(format!(
                "tools: {label}: `timeout_secs` goes with `run:` (a command), not `result:`"
            ));
        }
        (Some(result), None) => Source::Result(Template::parse(&result)),
        (None, Some(run)) => Source::Run(
            Program::new(&run, base_dir, "the command that answers the tool")
                .map_err(|e| format!("tools: {label}: {e}"))?,
            timeout.unwrap_or(Duration::from_secs_f64(DEFAULT_TOOL_TIMEOUT_SECS)),
        ),
        (Some(_), Some(_)) => {
            return Err(format!(
                "tools: {label} has both `result:` and `run:`; give one: `result:` fills the \
                 result from the case's values, `run:` runs a command"
            ));
        }
        (None, None) => {
            return Err(format!(
                "tools: {label} has no `result:` or `run:`: say where its result comes from \
                 (`result: \"{{{{weather}}}}\"`, a case's value, or `run: \"python3 \
                 weather.py\"`, a command reading the arguments as JSON on stdin)"
            ));
        }
    };
    Ok((tool, source))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools(yaml_like: Value) -> Result<ToolSet, String> {
        ToolSet::parse(&yaml_like, None, Path::new("."))
    }

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: format!("id_{name}"),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn results_are_filled_from_the_case_or_run_with_the_arguments_on_stdin() {
        let set = tools(json!([
            {"name": "weather", "description": "The weather.",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
             "result": "{{weather}} in {{city}}"},
            {"name": "echo", "run": "cat"},
        ]))
        .unwrap();
        assert_eq!(set.max_steps, DEFAULT_MAX_STEPS);
        let values: Values =
            serde_json::from_value(json!({"weather": "sunny", "city": "Paris"})).unwrap();
        let stop = AtomicBool::new(false);
        let results = set
            .answer(
                &[
                    call("weather", json!({"city": "Paris"})),
                    call("echo", json!({"x": 1})),
                    call("nope", json!({})),
                ],
                Some(&values),
                &stop,
            )
            .unwrap()
            .unwrap();
        assert_eq!(results[0].content, "sunny in Paris");
        assert_eq!(results[0].call_id, "id_weather");
        assert_eq!(results[1].content, r#"{"x":1}"#, "the arguments on stdin");
        assert!(results[2].content.contains("no tool named `nope`"));
        // A value the case lacks: an error naming the tool.
        let e = set
            .answer(&[call("weather", json!({}))], None, &stop)
            .unwrap_err();
        assert!(
            e.contains("tool `weather`") && e.contains("{{weather}}"),
            "{e}"
        );
    }

    #[test]
    fn a_failing_command_is_an_error_naming_the_tool() {
        let set = tools(json!([{"name": "broken", "run": "false"}])).unwrap();
        let e = set
            .answer(&[call("broken", json!({}))], None, &AtomicBool::new(false))
            .unwrap_err();
        assert!(
            e.contains("tool `broken`") && e.contains("exited with status 1"),
            "{e}"
        );
    }

    #[test]
    fn a_command_past_its_timeout_is_stopped_and_is_an_error_naming_the_tool() {
        let set = tools(json!([{"name": "slow", "run": "sleep 5", "timeout_secs": 0.3}])).unwrap();
        let started = std::time::Instant::now();
        let e = set
            .answer(&[call("slow", json!({}))], None, &AtomicBool::new(false))
            .unwrap_err();
        assert!(
            e.contains("tool `slow`") && e.contains("timeout of 0.3 s"),
            "{e}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(4),
            "stopped at its timeout"
        );
    }

    #[test]
    fn malformed_tools_are_refused_naming_the_tool_and_the_fix() {
        for (value, says) in [
            (json!({"name": "w"}), "`tools` is a list"),
            (json!([]), "an empty list"),
            (
                json!([{"name": "w"}]),
                "tool `w` has no `result:` or `run:`",
            ),
            (
                json!([{"name": "w", "result": "x", "run": "cat"}]),
                "both `result:` and `run:`",
            ),
            (
                json!([{"name": "w", "result": "x", "color": 1}]),
                "tool `w`",
            ),
            (
                json!([{"name": "get weather", "result": "x"}]),
                "1 to 64 letters",
            ),
            (
                json!([{"name": "w", "result": "x"}, {"name": "w", "result": "y"}]),
                "two tools are named `w`",
            ),
            (json!([{"name": "w", "result": 3}]), "`result` is a text"),
            (
                json!([{"name": "w", "run": "cat", "timeout_secs": 0}]),
                "`timeout_secs: 0` must be above 0",
            ),
            (
                json!([{"name": "w", "run": "cat", "timeout_secs": "soon"}]),
                "`timeout_secs` is a number of seconds",
            ),
            (
                json!([{"name": "w", "result": "x", "timeout_secs": 5}]),
                "`timeout_secs` goes with `run:`",
            ),
            (
                json!([{"name": "w", "result": "x", "parameters": {"type": "array"}}]),
                "JSON Schema of an object",
            ),
        ] {
            let e = tools(value.clone()).unwrap_err();
            assert!(e.contains(says), "{value}: {e}");
        }
        let e = ToolSet::parse(
            &json!([{"name": "w", "result": "x"}]),
            Some(0),
            Path::new("."),
        )
        .unwrap_err();
        assert!(e.contains("`max_steps: 0` must be from 1"), "{e}");
    }

    #[test]
    fn the_trace_lists_every_call_in_order_and_counts_the_steps() {
        let step = ToolStep {
            text: String::new(),
            calls: vec![call("a", json!({"n": 1})), call("b", json!({}))],
            results: Vec::new(),
        };
        let trace = trace(&[step], &[call("c", json!({}))]);
        let names: Vec<&str> = trace.calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(trace.steps, 2);
        assert_eq!(super::trace(&[], &[]).steps, 1);
    }
}
