//! Tool loops end to end against the mock: a benchmark's `tools:` sent in each wire format
//! (OpenAI, Anthropic), the model's calls answered from the case's values or by a command and
//! sent back, step by step, until it answers in text or `max_steps` is reached; the tool
//! checks (`tool-called`, `tool-not-called`, `tool-sequence`, `steps`) passing and failing; a
//! re-run and `--offline` served by the cache; `--batch` running the loops live; the calls
//! stored and exported.

use serde_json::json;

use crate::support::mock::{Action, Rule};
use crate::support::{Sandbox, text};

/// Two models (two wire formats), two cases. The model asks for `weather`, then for `clock`,
/// then answers. `paris`'s checks pass; `rome`'s `tool-called` (its arguments say Paris) and
/// `tool-sequence` (the order is wrong) fail. `clock` is a command echoing its arguments.
const BENCH: &str = r#"temperature: 0
models: [openai:gpt-4o, "anthropic:sonnet 3.5"]
tools:
  - name: weather
    description: The weather in a city today.
    parameters: {type: object, properties: {city: {type: string}}, required: [city]}
    result: "{{weather}}"
  - name: clock
    description: The time now.
    parameters: {type: object, properties: {}}
    run: "python3 -c 'import sys; sys.stdin.read(); print(\"noon\")'"
templates: ["{{question}}"]
cases:
  - id: paris
    question: "What should I wear in Paris today?"
    weather: "sunny 21C"
    checks:
      - {method: tool-called, value: weather, arguments: {city: Paris}}
      - {method: tool-sequence, value: [weather, clock]}
      - {method: tool-not-called, value: calendar}
      - {method: steps, value: 3}
      - {method: contains, value: "light clothes"}
  - id: rome
    question: "What should I wear in Rome today?"
    weather: "sunny 21C"
    checks:
      - {method: tool-called, value: weather, arguments: {city: Rome}}
      - {method: tool-sequence, value: [clock, weather]}
"#;

/// The mock's script: the first question asks for the weather, its result asks for the
/// clock, the clock's result gets the answer.
fn script(s: &Sandbox) {
    s.mock
        .add_rule(Rule::reply("noon", "Wear light clothes: it is noon."));
    s.mock.add_rule(Rule::new(
        "sunny 21C",
        Action::ToolCalls(vec![("clock".into(), json!({}))]),
    ));
    s.mock.add_rule(Rule::new(
        "What should I wear",
        Action::ToolCalls(vec![("weather".into(), json!({"city": "Paris"}))]),
    ));
}

/// Statuses of the last run's results, by model then case: `(model, case, status, detail)`.
fn results(s: &Sandbox) -> Vec<(String, String, String, Option<String>)> {
    s.db()
        .prepare(
            "SELECT model_ref, prompt_name, status, detail FROM bench_results
             WHERE run_id = (SELECT max(id) FROM runs)
             ORDER BY model_index, prompt_index",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_two_tool_loop_runs_in_both_wire_formats_is_checked_stored_cached_and_exported() {
    let s = Sandbox::new();
    script(&s);
    s.write("bench.yaml", BENCH);
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // 2 models x 2 cases x 3 steps.
    assert_eq!(s.mock.request_count(), 12, "{stderr}");

    // Each wire format got the tools and, step by step, the calls and their results.
    for request in s.mock.requests() {
        let body = &request.body;
        let anthropic = request.path == "/v1/messages";
        let tools = body["tools"].as_array().expect("tools sent");
        let names: Vec<&str> = tools
            .iter()
            .map(|t| {
                if anthropic {
                    t["name"].as_str().unwrap()
                } else {
                    t["function"]["name"].as_str().unwrap()
                }
            })
            .collect();
        assert_eq!(names, ["weather", "clock"]);
        let messages = body["messages"].as_array().unwrap();
        let text = body.to_string();
        if text.contains("noon") {
            if anthropic {
                // user, assistant tool_use, user tool_result (x2).
                assert_eq!(messages.len(), 5, "{text}");
                assert_eq!(messages[3]["content"][0]["type"], "tool_use");
                assert_eq!(messages[4]["content"][0]["type"], "tool_result");
                assert_eq!(messages[4]["content"][0]["content"], "noon");
            } else {
                // user, assistant tool_calls, tool (x2).
                assert_eq!(messages.len(), 5, "{text}");
                assert_eq!(messages[3]["tool_calls"][0]["function"]["name"], "clock");
                assert_eq!(messages[4]["role"], "tool");
                assert_eq!(messages[4]["content"], "noon");
                assert_eq!(
                    messages[4]["tool_call_id"],
                    messages[3]["tool_calls"][0]["id"]
                );
            }
        }
    }

    let rows = results(&s);
    let statuses: Vec<(&str, &str)> = rows
        .iter()
        .map(|(_, case, status, _)| (case.as_str(), status.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("paris", "passed"),
            ("rome", "failed"),
            ("paris", "passed"),
            ("rome", "failed")
        ],
        "{rows:?}"
    );
    // Each check's own outcome, with why.
    let checks: Vec<(String, String, Option<String>)> = s
        .db()
        .prepare(
            "SELECT k.method, k.status, k.reason FROM bench_checks k
             JOIN bench_results r USING (run_id, model_index, template_index, prompt_index,
                 repeat_index)
             WHERE r.prompt_name = 'rome' AND r.model_index = 1 ORDER BY k.check_index",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(checks[0].0, "tool-called");
    assert_eq!(checks[0].1, "failed");
    assert!(
        checks[0]
            .2
            .as_deref()
            .unwrap()
            .contains(r#"{"city":"Paris"}"#),
        "{checks:?}"
    );
    assert_eq!(
        (checks[1].0.as_str(), checks[1].1.as_str()),
        ("tool-sequence", "failed")
    );
    assert!(
        checks[1]
            .2
            .as_deref()
            .unwrap()
            .contains("expected the calls [clock, weather], got [weather, clock]"),
        "{checks:?}"
    );

    // The calls are stored with their arguments and results, keyed by the result.
    let stored: Vec<(i64, i64, String, String, Option<String>)> = s
        .db()
        .prepare(
            "SELECT model_index, step, name, arguments, result FROM tool_calls
             WHERE prompt_index = 0 ORDER BY model_index, step",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let weather = (
        r#"{"city":"Paris"}"#.to_owned(),
        Some("sunny 21C".to_owned()),
    );
    let clock = ("{}".to_owned(), Some("noon".to_owned()));
    assert_eq!(
        stored,
        [
            (0, 1, "weather".into(), weather.0.clone(), weather.1.clone()),
            (0, 2, "clock".into(), clock.0.clone(), clock.1.clone()),
            (1, 1, "weather".into(), weather.0, weather.1),
            (1, 2, "clock".into(), clock.0, clock.1),
        ]
    );
    // A row's measures are its steps' sums.
    let (tokens, one_call): (i64, i64) = s
        .db()
        .query_row(
            "SELECT r.output_tokens, c.output_tokens FROM bench_results r
             JOIN calls c ON c.id = r.call_id WHERE r.prompt_name = 'paris' AND r.model_index = 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(tokens > one_call, "{tokens} vs {one_call}");

    // A re-run pays nothing: every step is served from the cache, the tools answer again.
    s.mock.reset_requests();
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert_eq!(s.mock.request_count(), 0, "{}", text(&out.stderr));
    assert_eq!(results(&s).len(), 4);
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_results WHERE status = 'passed'
             AND run_id = (SELECT max(id) FROM runs)"
        ),
        2
    );
    // --offline too.
    let out = s
        .track()
        .args(["run", "bench.yaml", "--offline"])
        .output()
        .unwrap();
    assert_eq!(s.mock.request_count(), 0, "{}", text(&out.stderr));
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_results WHERE status = 'passed'
             AND run_id = (SELECT max(id) FROM runs)"
        ),
        2,
        "{}",
        text(&out.stderr)
    );

    // The CSV export has the calls in a file of their own.
    let out = s
        .track()
        .args(["export", "csv", "--out", "exports"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(s.path("exports/tool_calls.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "run_id,model,prompt,template,repeat_index,step,call_index,call_id,tool,arguments,result"
    );
    let body: Vec<&str> = lines.collect();
    assert_eq!(body.len(), 8, "{csv}");
    assert!(
        body.iter().any(|l| l.contains("openai:gpt-4o,paris,")
            && l.contains(",weather,")
            && l.contains("sunny 21C")),
        "{csv}"
    );
}

#[test]
fn a_loop_that_never_answers_stops_at_max_steps_recorded_as_such() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::new(
        "Loop forever",
        Action::ToolCalls(vec![("weather".into(), json!({"city": "Oslo"}))]),
    ));
    s.write(
        "bench.yaml",
        r#"models: [openai:gpt-4o, "anthropic:sonnet 3.5"]
max_steps: 3
tools:
  - {name: weather, parameters: {type: object, properties: {city: {type: string}}}, result: rain}
prompts:
  - forever:
    prompt: "Loop forever"
    checks: [{method: tool-called, value: weather}]
"#,
    );
    // A plan bounds each case at max_steps calls: 2 known, 4 more bounded.
    let plan = s
        .track()
        .args(["run", "bench.yaml", "--dry-run"])
        .output()
        .unwrap();
    let said = format!("{}{}", text(&plan.stdout), text(&plan.stderr));
    assert!(plan.status.success(), "{said}");
    assert_eq!(s.mock.request_count(), 0, "{said}");
    assert!(
        said.contains("6 calls") || said.contains("6 planned"),
        "{said}"
    );
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(s.mock.request_count(), 6, "3 steps a model: {stderr}");
    let rows = results(&s);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (model, _, status, detail) in &rows {
        assert_eq!(status, "error", "{model}");
        let detail = detail.as_deref().unwrap();
        assert!(
            detail.contains("max_steps (3) reached") && detail.contains("`weather`"),
            "{detail}"
        );
    }
    // Its calls are stored, the last one unanswered.
    assert_eq!(s.count("SELECT count(*) FROM tool_calls"), 6);
    assert_eq!(
        s.count("SELECT count(*) FROM tool_calls WHERE result IS NULL AND step = 3"),
        2
    );
    // Cached as any call: a re-run sends nothing and stops at the same place.
    s.mock.reset_requests();
    s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert_eq!(s.mock.request_count(), 0);
    assert_eq!(results(&s)[0].2, "error");
}

#[test]
fn batch_runs_tool_loops_live_and_says_so_once() {
    let s = Sandbox::new();
    script(&s);
    s.write("bench.yaml", BENCH);
    let out = s
        .track()
        .args(["run", "bench.yaml", "--batch"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("tool loops cannot be batched").count(),
        1,
        "{stderr}"
    );
    let live = s
        .mock
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions" || r.path == "/v1/messages")
        .count();
    assert_eq!(live, 12, "every step live: {stderr}");
    assert_eq!(results(&s).len(), 4);
}

#[test]
fn malformed_tools_and_tool_checks_without_tools_are_refused_naming_the_fix() {
    let s = Sandbox::new();
    for (file, says) in [
        (
            "models: [openai:gpt-4o]\ntools:\n  - {name: weather}\nprompts:\n  - p:\n    prompt: hi\n    checks: [{method: tool-called, value: weather}]\n",
            "tool `weather` has no `result:` or `run:`",
        ),
        (
            "models: [openai:gpt-4o]\nprompts:\n  - p:\n    prompt: hi\n    checks: [{method: tool-called, value: weather}]\n",
            "declares no `tools:`",
        ),
        (
            "models: [openai:gpt-4o]\nmax_steps: 2\nprompts:\n  - p:\n    prompt: hi\n    method: contains\n    output: x\n",
            "declares no `tools:`",
        ),
        (
            "models: [openai:gpt-4o]\ntools: [{name: w, result: x}]\nprompts:\n  - p:\n    prompt: hi\n    checks: [{method: contains, value: x, arguments: {a: 1}}]\n",
            "`arguments` goes with `method: tool-called`",
        ),
        (
            "models: [openai:gpt-4o]\ntools: [{name: clock, parameters: none, result: x}]\nprompts:\n  - p:\n    prompt: hi\n    checks: [{method: tool-called, value: clock}]\n",
            "tools: tool `clock`: `parameters` is a JSON Schema of an object",
        ),
    ] {
        s.write("bad.yaml", file);
        let out = s.track().args(["run", "bad.yaml"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(s.mock.request_count(), 0);
}
