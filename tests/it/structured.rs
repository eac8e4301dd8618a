//! Structured output: every model-graded call (reviews, judges, relevance answers) carries its
//! answer's JSON schema in each wire format, the mock checks it as the real APIs do, a server
//! that refuses schemas is asked again without one (once per model), and `off` sends none.

use serde_json::Value;

use crate::support::mock::{MockConfig, MockProvider, RecordedRequest, Rule};
use crate::support::{Sandbox, bench_yaml, text};

/// Two generated datasheets of one sensor with its official one.
fn datasheets(s: &Sandbox) {
    s.write("data/sensors.csv", "Brand,Sensor\nBosch,BME280\n");
    s.write("datasheet/Bosch_BME280.md", "# BME280 official\n");
    s.write(
        "results/Bosch/BME280/openai_gpt-4o_20250504_030759.md",
        "BME280 text one",
    );
    s.write(
        "results/Bosch/BME280/openai_gpt-4o_20250504_030800.md",
        "BME280 text two",
    );
}

fn review(s: &Sandbox, reviewers: &str, extra: &[&str]) -> std::process::Output {
    s.track()
        .args(["review-datasheets", "--reviewer", reviewers, "-q"])
        .args(extra)
        .output()
        .unwrap()
}

/// The review rows' parse statuses and overall scores, by reviewer.
fn reviews(s: &Sandbox) -> Vec<(String, String, Option<i64>)> {
    s.db()
        .prepare(
            "SELECT reviewer_ref, parse_status, overall_score FROM reviews ORDER BY reviewer_ref, id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn with_path<'a>(requests: &'a [RecordedRequest], path: &str) -> Vec<&'a RecordedRequest> {
    requests.iter().filter(|r| r.path == path).collect()
}

#[test]
fn each_wire_format_carries_the_review_schema_and_the_answers_are_scored() {
    let s = Sandbox::new();
    datasheets(&s);
    let out = review(&s, "openai:gpt-4o,anthropic:haiku 3.5,ollama:llama3.2", &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = s.mock.requests();

    let openai = with_path(&requests, "/v1/chat/completions");
    assert_eq!(openai.len(), 2);
    let format = &openai[0].body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "datasheet_review");
    assert_eq!(format["json_schema"]["strict"], true);
    let schema = &format["json_schema"]["schema"];
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["p16_score"]["enum"],
        serde_json::json!([1, 2, 3, 4, 5, null])
    );
    assert_eq!(schema["required"].as_array().unwrap().len(), 34);
    // OpenAI's strict mode takes no length bounds; the others keep the justification's.
    assert_eq!(
        schema["properties"]["p1_justification"],
        serde_json::json!({"type": "string"})
    );

    let anthropic = with_path(&requests, "/v1/messages");
    assert_eq!(anthropic.len(), 2);
    let body = &anthropic[0].body;
    assert_eq!(body["tools"][0]["name"], "datasheet_review");
    let tool_schema = &body["tools"][0]["input_schema"];
    assert_eq!(
        tool_schema["properties"]["p1_justification"]["maxLength"],
        400
    );
    assert_eq!(tool_schema["required"], schema["required"]);
    assert_eq!(
        body["tool_choice"],
        serde_json::json!({"type": "tool", "name": "datasheet_review"})
    );

    let ollama = with_path(&requests, "/api/chat");
    assert_eq!(ollama.len(), 2);
    let body = &ollama[0].body;
    assert_eq!(body["format"], *tool_schema);
    assert_eq!(body["options"]["temperature"].as_f64(), Some(0.0));
    let prompt = body["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("follows this JSON schema"), "{prompt}");

    // The mock answers in shape (the largest score): every review is read, none unparsable.
    let rows = reviews(&s);
    assert_eq!(rows.len(), 6, "{rows:?}");
    for (reviewer, status, overall) in &rows {
        assert_eq!(
            (status.as_str(), *overall),
            ("ok", Some(5)),
            "{reviewer}: {rows:?}"
        );
    }
    let by_reviewer = s
        .track()
        .args(["query", "--by", "reviewer", "--format", "json"])
        .output()
        .unwrap();
    let by_reviewer: Value = serde_json::from_slice(&by_reviewer.stdout).unwrap();
    for row in by_reviewer.as_array().unwrap() {
        assert_eq!(row["parse_failures"], 0, "{row}");
        assert_eq!(row["parse_failure_pct"], 0.0, "{row}");
    }
}

#[test]
fn a_server_that_refuses_schemas_is_asked_without_one_once_per_model() {
    let mock = MockProvider::start_with(MockConfig {
        refuse_schemas: true,
        ..MockConfig::default()
    });
    let s = Sandbox::with_mock(mock);
    datasheets(&s);
    s.write(
        "datasheet/Bosch_BME280.md",
        "# BME280 official\nreview me in prose\n",
    );
    s.mock.add_rule(Rule::reply(
        "review me in prose",
        r#"Here it is: {"overall_score": 4, "overall_justification": "fine"}"#,
    ));
    let out = s
        .track()
        // One call at a time: calls already in flight when the refusal lands were sent with
        // the schema too (each then falls back alike).
        .args([
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o",
            "-v",
            "--concurrency",
            "1",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("refused the answer's schema (HTTP 400)"),
        "{stderr}"
    );
    let requests = s.mock.requests();
    let shaped = requests
        .iter()
        .filter(|r| r.body.get("response_format").is_some())
        .count();
    assert_eq!(
        (requests.len(), shaped),
        (3, 1),
        "one refused request, then the two reviews without a schema"
    );
    let rows = reviews(&s);
    assert!(
        rows.iter()
            .all(|(_, status, overall)| status == "partial" && *overall == Some(4)),
        "{rows:?}"
    );
    // A re-run is served from the cache of the plain requests. The request refused before is
    // not sent again; the other review's shaped request was never sent, so it is, once (a 400
    // costs nothing), and then its answer comes from the cache.
    s.mock.reset_requests();
    let again = review(&s, "openai:gpt-4o", &[]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(s.mock.request_count(), 1);

    // `on` does not fall back: the refusal is an error naming the status.
    s.mock.reset_requests();
    let on = review(&s, "openai:gpt-4o", &["--structured", "on", "--no-cache"]);
    let stderr = text(&on.stderr);
    assert_eq!(on.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("HTTP 400"), "{stderr}");
    assert_eq!(s.mock.request_count(), 2);
}

#[test]
fn structured_off_sends_no_schema() {
    let s = Sandbox::new();
    datasheets(&s);
    let out = review(&s, "openai:gpt-4o", &["--structured", "off"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|r| r.body.get("response_format").is_none())
    );
    // The mock's prose default cannot be read: unparsable, counted as such.
    let rows = reviews(&s);
    assert!(
        rows.iter().all(|(_, status, _)| status == "failed"),
        "{rows:?}"
    );
    // A model can be set to off in config.yaml too.
    s.write(
        "config.yaml",
        "models:\n  openai:gpt-4o:\n    structured: off\n",
    );
    s.mock.reset_requests();
    let out = review(&s, "openai:gpt-4o", &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.request_count(), 0, "the same requests: all cached");
}

#[test]
fn judges_and_relevance_answers_carry_their_schemas() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        &format!(
            "judge: anthropic:haiku 3.5\n{}",
            bench_yaml(&["openai:gpt-4o"], &[("p", "question", "x", "contains")])
                .replace("method: contains", "method: judge\n    rubric: Says x.")
        ),
    );
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = s.mock.requests();
    let judge = with_path(&requests, "/v1/messages");
    assert_eq!(judge.len(), 1, "{requests:?}");
    let tool = &judge[0].body["tools"][0];
    assert_eq!(tool["name"], "judge_verdict");
    assert_eq!(
        tool["input_schema"]["properties"]["score"]["enum"],
        serde_json::json!([1, 2, 3, 4, 5])
    );
    // The answer under evaluation is free text: no schema.
    let answer = with_path(&requests, "/v1/chat/completions");
    assert!(answer[0].body.get("response_format").is_none());
    assert_eq!(
        s.count("SELECT judge_score FROM bench_results"),
        5,
        "the judge's shaped answer is read"
    );

    crate::support::synth_blocks(&s, 1, "blocks");
    s.write(
        "truth.json",
        r#"{"state_0000": {"clear(red:block)": 1, "on(red:block,blue:block)": 0}}"#,
    );
    s.mock.reset_requests();
    let out = s
        .track()
        .args([
            "relevance",
            "compare",
            "--model",
            "openai:gpt-4o",
            "--images",
            "blocks/state_0000.png",
            "--ground-truth",
            "truth.json",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let format = &request.body["response_format"]["json_schema"];
        let properties = format["schema"]["properties"].as_object().unwrap();
        let keys: Vec<&String> = properties.keys().collect();
        assert_eq!(
            keys,
            ["clear(red:block)", "on(red:block,blue:block)"],
            "{format}"
        );
        let allowed = &properties["clear(red:block)"]["enum"];
        match format["name"].as_str().unwrap() {
            "predicate_scores_with_uncertain" => {
                assert_eq!(*allowed, serde_json::json!([0, 1, 2]))
            }
            "predicate_scores_without_uncertain" => {
                assert_eq!(*allowed, serde_json::json!([0, 2]))
            }
            other => panic!("unexpected schema name {other}"),
        }
    }
    assert_eq!(
        s.count("SELECT count(*) FROM relevance_predictions WHERE score IS NOT NULL"),
        4,
        "every shaped answer is read"
    );
}
