//! `track run` end to end: the three wire formats, the cache, offline and dry runs, repeats,
//! retries and faults, kill-and-resume, queries, exports and secrets.

use crate::support::mock::{Hold, Rule};
use crate::support::{
    ANTHROPIC_KEY, OPENAI_KEY, Sandbox, any_file_contains, bench_yaml, text, wait_for,
};

const THREE_MODELS: [&str; 3] = [
    "openai:gpt-4o",
    "anthropic:sonnet 3.5",
    "ollama:qwen2.5-coder",
];

fn two_prompts() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    vec![
        ("sum", "What is 2+2?", "4", "exact"),
        ("capital", "Capital of France?", "Paris", "contains"),
    ]
}

fn sandbox_with_answers() -> Sandbox {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.mock
        .add_rule(Rule::reply("Capital of France", "The capital is Paris."));
    s.write("bench.yaml", &bench_yaml(&THREE_MODELS, &two_prompts()));
    s
}

#[test]
fn runs_every_prompt_on_every_model_over_the_three_wire_formats() {
    let s = sandbox_with_answers();
    let out = s
        .track()
        .args(["run", "bench.yaml", "--detail"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    for heading in ["Results", "Per model", "Per case"] {
        assert!(stdout.contains(heading), "{stdout}");
    }
    assert_eq!(s.mock.request_count(), 6);
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        6
    );

    // Model-major order: all prompts of one model, then the next.
    let paths: Vec<String> = s.mock.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths[..2], ["/v1/chat/completions", "/v1/chat/completions"]);
    assert_eq!(paths[2..4], ["/v1/messages", "/v1/messages"]);
    assert_eq!(paths[4..], ["/api/chat", "/api/chat"]);

    // Each wire format got its own headers and body shape.
    let requests = s.mock.requests();
    let openai = &requests[0];
    assert_eq!(
        openai.header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    assert_eq!(openai.body["model"], "gpt-4o");
    let anthropic = &requests[2];
    assert_eq!(anthropic.header("x-api-key"), Some(ANTHROPIC_KEY));
    assert!(anthropic.header("anthropic-version").is_some());
    assert_eq!(anthropic.body["model"], "claude-3-5-sonnet-20241022");
    assert!(anthropic.body["max_tokens"].as_u64().unwrap() > 0);
    let ollama = &requests[4];
    assert_eq!(ollama.body["model"], "qwen2.5-coder:7b");
    assert!(
        ollama.body.get("stream").is_none(),
        "Ollama's default streaming is used"
    );

    // Tokens come from the providers' usage fields; the mock counts words.
    // "What is 2+2?" = 3 words in, "4" = 1 word out; gpt-4o: 2.50 / 10.00 per million.
    let (tin, tout, cost, estimated): (i64, i64, f64, bool) = s
        .db()
        .query_row(
            "SELECT input_tokens, output_tokens, cost_usd, tokens_estimated FROM bench_results
             WHERE model_ref = 'openai:gpt-4o' AND prompt_name = 'sum'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!((tin, tout, estimated), (3, 1, false));
    assert!(
        (cost - (3.0 * 2.5 + 1.0 * 10.0) / 1e6).abs() < 1e-15,
        "{cost}"
    );
    // Ollama's streamed counts arrive through prompt_eval_count / eval_count.
    let ollama_out: i64 = s
        .db()
        .query_row(
            "SELECT output_tokens FROM bench_results WHERE model_ref = 'ollama:qwen2.5-coder' AND prompt_name = 'capital'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ollama_out, 4);
    // Energy is stored with its method.
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE energy_method = 'ecologits-0.9' AND energy_wh > 0"),
        6
    );
}

#[test]
fn a_second_run_is_served_from_the_cache_and_pays_nothing() {
    let s = sandbox_with_answers();
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(out.status.success());
    // The per-model time is the latencies added up, read as such, beside the run's own time.
    let stdout = text(&out.stdout);
    let header = stdout.lines().find(|l| l.starts_with("│ model")).unwrap();
    assert!(
        header.contains("latency sum s") && !header.contains(" time s"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("latency sum: the answers' latencies added up; calls overlap: this run took"),
        "{stdout}"
    );
    let first = s.mock.request_count();
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        s.mock.request_count(),
        first,
        "the second run sent requests"
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("6 calls, 6 cache hits"), "{stderr}");
    assert!(stderr.contains("paid $0;"), "{stderr}");
    // The cached answers' time is that of the run that paid for them, and the report says so.
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "latency sum: the answers' latencies added up, each cached answer's when it was \
             called (6 of 6 answers cached); calls overlap: this run took"
        ),
        "{stdout}"
    );
    // Both runs recorded, the second entirely cached, same results.
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 2 AND cache_hit = 1"),
        6
    );
    assert_eq!(
        s.count("SELECT count(*) FROM calls"),
        6,
        "no new calls stored"
    );
    let runs = s
        .track()
        .args(["runs", "--format", "csv"])
        .output()
        .unwrap();
    let runs = text(&runs.stdout);
    assert!(
        runs.starts_with(
            "id,kind,file,models,started,wall_time_s,status,calls,cache_hits,errors,cost_usd,paid_usd,budget_usd,command,inputs,unpriced,resumed_by\n"
        ),
        "{runs}"
    );
    assert!(runs.contains(",completed,6,6,0,"), "{runs}");
    // --offline after a full run: zero requests, success.
    s.track()
        .args(["run", "bench.yaml", "--offline", "-q"])
        .assert()
        .success();
    assert_eq!(s.mock.request_count(), first);
    // --no-cache calls again and the fresh answers are served afterwards.
    s.track()
        .args(["run", "bench.yaml", "--no-cache", "-q"])
        .assert()
        .success();
    assert_eq!(s.mock.request_count(), first * 2);
}

#[test]
fn offline_on_an_empty_cache_calls_nothing_and_fails() {
    let s = sandbox_with_answers();
    let out = s
        .track()
        .args(["run", "bench.yaml", "--offline"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(s.mock.request_count(), 0);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("nothing could run") && stderr.contains("--offline"),
        "{stderr}"
    );
}

#[test]
fn dry_run_counts_cached_calls_and_bounds_the_cost() {
    let s = sandbox_with_answers();
    let out = s
        .track()
        .args(["run", "bench.yaml", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("6 calls planned, 0 cached, 6 to call"),
        "{stdout}"
    );
    assert_eq!(s.mock.request_count(), 0);
    s.track()
        .args(["run", "bench.yaml", "-q", "--models", "openai:gpt-4o"])
        .assert()
        .success();
    let out = s
        .track()
        .args(["run", "bench.yaml", "--dry-run"])
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).contains("6 calls planned, 2 cached, 4 to call"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(s.mock.request_count(), 2);
}

#[test]
fn repeats_are_distinct_cache_entries() {
    let s = sandbox_with_answers();
    let args = [
        "run",
        "bench.yaml",
        "-q",
        "--repeat",
        "3",
        "--models",
        "openai:gpt-4o",
    ];
    s.track().args(args).assert().success();
    assert_eq!(s.mock.request_count(), 6);
    assert_eq!(s.count("SELECT count(DISTINCT cache_key) FROM calls"), 6);
    s.track().args(args).assert().success();
    assert_eq!(s.mock.request_count(), 6);
}

#[test]
fn rate_limits_and_server_errors_are_retried_and_counted() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::rate_limit("limited", "0", 2));
    s.mock.add_rule(Rule::fail("wobbly", 500, 1));
    s.mock.add_rule(Rule::reply("", "ok"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o"],
            &[
                ("a", "limited prompt", "ok", "exact"),
                ("b", "wobbly prompt", "ok", "exact"),
            ],
        ),
    );
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        2
    );
    assert_eq!(s.mock.requests_containing("limited prompt"), 3);
    assert_eq!(s.mock.requests_containing("wobbly prompt"), 2);
    let attempts: Vec<i64> = s
        .db()
        .prepare("SELECT attempts FROM calls ORDER BY attempts")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(attempts, [2, 3]);
}

#[test]
fn failures_are_errors_not_test_failures_and_are_never_cached() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::truncate("cut"));
    s.mock.add_rule(Rule::fail("forbidden", 400, 100));
    s.mock.add_rule(Rule::reply("", "ok"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o", "ollama:qwen2.5-coder"],
            &[
                ("cut", "cut me", "ok", "exact"),
                ("bad", "forbidden words", "ok", "exact"),
                ("fine", "fine prompt", "ok", "exact"),
            ],
        ),
    );
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert!(out.status.success(), "some evaluations ran: exit 0");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("4 errors (4 causes):"), "{stderr}");
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'error'"),
        4
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        2
    );
    // Truncated bodies are retried (4 attempts in the sandbox), a 400 is not.
    assert_eq!(s.mock.requests_containing("cut me"), 8);
    assert_eq!(s.mock.requests_containing("forbidden words"), 2);
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE status = 'error' AND http_status = 400"),
        2
    );
    let before = s.mock.request_count();
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    // Errors are called again, successes are not; a call whose every attempt failed is tried
    // once this time.
    assert_eq!(
        s.mock.request_count() - before,
        2 + 2,
        "errors are called again, successes are not"
    );
}

#[test]
fn usage_is_estimated_and_marked_when_a_provider_gives_none() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::no_usage("", "twelve chars"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["anthropic:sonnet 3.5"],
            &[("a", "hello there", "twelve", "contains")],
        ),
    );
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q", "--detail"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("tokens estimated"),
        "the table marks estimated tokens"
    );
    let (tout, estimated): (i64, bool) = s
        .db()
        .query_row(
            "SELECT output_tokens, tokens_estimated FROM bench_results",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (tout, estimated),
        (3, true),
        "12 characters at 4 a token, marked estimated"
    );
}

#[test]
fn a_missing_key_fails_only_its_model() {
    let s = sandbox_with_answers();
    let out = s
        .track()
        .args(["run", "bench.yaml"])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        4
    );
    let detail: String = s
        .db()
        .query_row(
            "SELECT detail FROM bench_results WHERE model_ref = 'openai:gpt-4o' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(detail.contains("OPENAI_API_KEY"), "{detail}");
    // The specification's variable name works too.
    s.track()
        .args(["run", "bench.yaml", "-q", "--models", "openai:gpt-4o"])
        .env_remove("OPENAI_API_KEY")
        .env("OPENAI_KEY", OPENAI_KEY)
        .assert()
        .success();
    assert_eq!(
        s.mock.requests().last().unwrap().header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
}

#[test]
fn a_local_server_that_is_down_is_named_with_the_command_that_starts_it() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["local:smollm2", "openai:gpt-4o"],
            &[("a", "Say hi", "hi", "contains")],
        ),
    );
    // Port 9 (discard) has no server: the call is refused at once.
    let out = s
        .track()
        .args(["run", "bench.yaml"])
        .env("LOCAL_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "the other model ran: {stderr}");
    let detail: String = s
        .db()
        .query_row(
            "SELECT detail FROM bench_results WHERE model_ref = 'local:smollm2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    for said in [&detail, &stderr] {
        assert!(
            said.contains("cannot reach local at http://127.0.0.1:9/v1"),
            "{said}"
        );
        assert!(said.contains("`bash .ci/local-model.sh start`"), "{said}");
    }
    // Another provider's server that is down is not sent to the local model's script.
    let out = s
        .track()
        .args([
            "run",
            "bench.yaml",
            "--models",
            "openai:gpt-4o",
            "--no-cache",
        ])
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("cannot reach openai"), "{stderr}");
    assert!(!stderr.contains("local-model.sh"), "{stderr}");
}

#[test]
fn keys_never_reach_the_database_exports_or_output() {
    let s = sandbox_with_answers();
    // A provider that echoes the key in its error must not get it stored either.
    s.mock.add_rule(Rule::new(
        "echo",
        crate::support::mock::Action::Status {
            code: 401,
            retry_after: None,
            body: format!(
                r#"{{"error":{{"message":"Incorrect API key provided: {OPENAI_KEY}"}}}}"#
            ),
        },
    ));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &THREE_MODELS,
            &[
                ("sum", "What is 2+2?", "4", "exact"),
                ("echo", "echo the key", "x", "exact"),
            ],
        ),
    );
    let run = s
        .track()
        .args(["run", "bench.yaml", "-v"])
        .output()
        .unwrap();
    let export = s
        .track()
        .args(["export", "csv", "--out", "exports"])
        .output()
        .unwrap();
    assert!(export.status.success());
    for (what, bytes) in [
        ("run stdout", &run.stdout),
        ("run stderr", &run.stderr),
        ("export", &export.stdout),
    ] {
        for key in [OPENAI_KEY, ANTHROPIC_KEY] {
            assert!(
                !text(bytes).contains(key),
                "{what} shows a key:\n{}",
                text(bytes)
            );
        }
    }
    for key in [OPENAI_KEY, ANTHROPIC_KEY] {
        assert_eq!(
            any_file_contains(s.dir.path(), key),
            None,
            "a file holds {key}"
        );
    }
    let error: String = s
        .db()
        .query_row("SELECT error FROM calls WHERE http_status = 401", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(error.contains("Incorrect API key provided: ***"), "{error}");
}

#[test]
fn query_and_export_reproduce_the_run_from_the_database() {
    let s = sandbox_with_answers();
    s.mock.add_rule(Rule::reply("wrong", "nope"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &THREE_MODELS,
            &[
                ("sum", "What is 2+2?", "4", "exact"),
                ("miss", "wrong answer please", "yes", "exact"),
            ],
        ),
    );
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    let by_model = s
        .track()
        .args(["query", "--by", "model", "--format", "csv"])
        .output()
        .unwrap();
    let by_model = text(&by_model.stdout);
    let header = by_model.lines().next().unwrap();
    assert_eq!(
        header,
        "model,results,passed,failed,errors,success_pct,success_low_pct,success_high_pct,total_time_s,total_cost_usd,paid_usd,input_tokens,output_tokens,energy_wh,energy_wh_min,energy_wh_max,cache_hits,status"
    );
    let gpt = by_model
        .lines()
        .find(|l| l.starts_with("openai:gpt-4o,"))
        .unwrap();
    assert!(gpt.starts_with("openai:gpt-4o,2,1,1,0,50.0,9.45"), "{gpt}");
    // 1 of 2: the Wilson 95 % interval is 9.45 % to 90.55 %.
    let high: f64 = gpt.split(',').nth(7).unwrap().parse().unwrap();
    assert!((high - 90.55).abs() < 0.01, "{gpt}");

    let by_prompt = s
        .track()
        .args([
            "query", "--by", "prompt", "--format", "json", "--run", "all",
        ])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&by_prompt.stdout).unwrap();
    assert_eq!(json[0]["case"], "sum");
    assert_eq!(json[0]["success_pct[openai:gpt-4o]"], 100.0);
    assert_eq!(json[1]["success_pct_all"], 0.0);
    assert_eq!(json[0]["avg_input_tokens"], 3.0);

    let out = s
        .track()
        .args(["export", "csv", "--out", "exports"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let results = std::fs::read_to_string(s.path("exports/bench_results.csv")).unwrap();
    let header = results.lines().next().unwrap();
    for column in [
        "model",
        "case",
        "status",
        "latency_ms",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "paid_usd",
        "energy_wh",
        "energy_method",
        "cache_hit",
        "detail",
    ] {
        assert!(
            header.split(',').any(|c| c == column),
            "{column} missing from {header}"
        );
    }
    assert_eq!(results.lines().count(), 1 + 6);
    assert!(
        s.path("exports/bench_by_model.csv").exists()
            && s.path("exports/bench_by_prompt.csv").exists()
    );
    assert!(
        results.contains("expected `yes`, got `nope`"),
        "failure detail is exported"
    );
}

#[test]
fn killing_a_run_loses_nothing_completed_and_resuming_pays_only_the_rest() {
    let s = Sandbox::new().patient();
    let prompts: Vec<(String, String)> = (0..8)
        .map(|i| (format!("p{i}"), format!("question number {i}")))
        .collect();
    let as_refs: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_str(), "x", "contains"))
        .collect();
    s.write("bench.yaml", &bench_yaml(&["openai:gpt-4o"], &as_refs));
    // One at a time: the fourth request is held, unanswered, while three have landed.
    s.mock.hold(Hold::From(4));
    let mut run = s.start(&["run", "bench.yaml", "-q", "--concurrency", "1"]);
    s.mock.wait_held(1);
    wait_for("the three answers stored while the run goes on", || {
        s.count("SELECT count(*) FROM calls WHERE status = 'ok'") == 3
    });
    run.kill(); // SIGKILL: no chance to clean up
    s.mock.release();
    assert_eq!(s.mock.request_count(), 4, "nothing after the held request");
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE status = 'ok'"),
        3,
        "only the call in flight is lost"
    );

    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    assert_eq!(
        s.mock.request_count() - 4,
        5,
        "only the calls not stored were sent again"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 2"),
        8
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 2 AND cache_hit = 1"),
        3
    );
    let mut sent: Vec<usize> = prompts
        .iter()
        .map(|(_, prompt)| s.mock.requests_containing(prompt))
        .collect();
    sent.sort_unstable();
    assert_eq!(
        sent,
        [1, 1, 1, 1, 1, 1, 1, 2],
        "each prompt sent once, twice only the one killed in flight"
    );
}

#[test]
fn prompts_of_one_model_run_concurrently() {
    let prompts: Vec<String> = (0..9).map(|i| format!("prompt {i}")).collect();
    let as_refs: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|p| (p.as_str(), p.as_str(), "x", "contains"))
        .collect();
    // The first call goes alone (its answer tells the provider's limits); of the 8 others,
    // none is answered until all 8 are out at once: one at a time, they never would be.
    let s = Sandbox::new().patient();
    s.write("bench.yaml", &bench_yaml(&["openai:gpt-4o"], &as_refs));
    s.mock.hold(Hold::From(2));
    let run = s.start(&["run", "bench.yaml", "-q", "--concurrency", "8"]);
    s.mock.wait_held(8);
    s.mock.release();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(s.mock.max_in_flight(), 8);
    assert_eq!(s.mock.request_count(), 9);

    // And never more than --concurrency: at 3, the mock never sees 4 at once.
    let s = Sandbox::new().patient();
    s.write("bench.yaml", &bench_yaml(&["openai:gpt-4o"], &as_refs));
    s.mock.hold(Hold::From(2));
    let run = s.start(&["run", "bench.yaml", "-q", "--concurrency", "3"]);
    s.mock.wait_held(3);
    s.mock.release();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(s.mock.max_in_flight(), 3);
    assert_eq!(s.mock.request_count(), 9);
}

#[test]
fn ctrl_c_marks_the_run_interrupted_and_keeps_what_completed() {
    let s = Sandbox::new().patient();
    let prompts: Vec<String> = (0..10).map(|i| format!("slow question {i}")).collect();
    let as_refs: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|p| (p.as_str(), p.as_str(), "x", "contains"))
        .collect();
    s.write("bench.yaml", &bench_yaml(&["openai:gpt-4o"], &as_refs));
    // Ctrl-C while the third call is out: it lands, and no fourth is sent.
    s.mock.hold(Hold::From(3));
    let run = s.start(&["run", "bench.yaml", "-q", "--concurrency", "1"]);
    s.mock.wait_held(1);
    run.signal("INT");
    run.wait_for_stderr("INT received: sending no more calls");
    s.mock.release();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("interrupted: run 1"), "{stderr}");
    let status: String = s
        .db()
        .query_row("SELECT status FROM runs WHERE id = 1", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "interrupted");
    assert_eq!(s.mock.request_count(), 3);
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 1"),
        3,
        "completed evaluations were kept, the one in flight too"
    );
    assert_eq!(s.count("SELECT count(*) FROM calls WHERE status = 'ok'"), 3);
}

#[test]
fn no_cache_after_ctrl_c_asks_again_only_what_the_interrupted_run_did_not_answer() {
    let s = Sandbox::new().patient();
    let prompts: Vec<String> = (0..10).map(|i| format!("fresh question {i}")).collect();
    let as_refs: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|p| (p.as_str(), p.as_str(), "x", "contains"))
        .collect();
    s.write("bench.yaml", &bench_yaml(&["openai:gpt-4o"], &as_refs));
    let no_cache = [
        "run",
        "bench.yaml",
        "-q",
        "--concurrency",
        "1",
        "--no-cache",
    ];
    // Run 1 answers everything: answers older than the run that is interrupted next.
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    assert_eq!(s.mock.request_count(), 10);
    // Run 2 (--no-cache) is interrupted while its fourth call is out: that one lands too.
    s.mock.hold(Hold::From(14));
    let run = s.start(&no_cache);
    s.mock.wait_held(1);
    run.signal("INT");
    run.wait_for_stderr("INT received: sending no more calls");
    s.mock.release();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("run the same command again to finish it"),
        "{stderr}"
    );
    assert_eq!(s.mock.request_count(), 14, "4 answers landed and were paid");
    // The same command (run 3) asks only the 6 that run 2 did not answer; the 4 it did are
    // served, and run 1's are not (--no-cache). Its plan says so first.
    let out = s
        .track()
        .args(["run", "bench.yaml", "--no-cache", "--dry-run"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "--no-cache resumes run 2 (interrupted): 4 answers stored since it began are served"
        ),
        "{stderr}"
    );
    let out = s.track().args(no_cache).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(s.mock.request_count(), 20, "{stderr}");
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 3 AND cache_hit = 1"),
        4
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 3"),
        10
    );
    let mut sent: Vec<usize> = prompts
        .iter()
        .map(|prompt| s.mock.requests_containing(prompt))
        .collect();
    sent.sort_unstable();
    assert_eq!(sent, [2; 10], "each prompt asked once by run 1, once since");
    // Run 3 completed: a --no-cache run after it resumes nothing and asks everything again.
    s.track().args(no_cache).assert().success();
    assert_eq!(s.mock.request_count(), 30);
}

#[test]
fn judge_graded_tests_count_the_judge_in_cost_and_never_fail_on_garbage() {
    let s = Sandbox::new();
    // Judge rules first: a judge prompt holds both the question and the answer.
    s.mock.add_rule(Rule::reply(
        "ANSWER-GOOD",
        r#"Verdict: {"score": 5, "justification": "clear"}"#,
    ));
    s.mock.add_rule(Rule::reply(
        "ANSWER-BAD",
        "```json\n{\"score\": \"2\", \"justification\": \"wrong\"}\n```",
    ));
    s.mock
        .add_rule(Rule::reply("ANSWER-ODD", "I liked it a lot!"));
    s.mock.add_rule(Rule::reply("question good", "ANSWER-GOOD"));
    s.mock.add_rule(Rule::reply("question bad", "ANSWER-BAD"));
    s.mock.add_rule(Rule::reply("question odd", "ANSWER-ODD"));
    s.write(
        "bench.yaml",
        "judge: anthropic:haiku 3.5\nmodels: [openai:gpt-4o]\nprompts:\n\
         - good:\n    prompt: question good\n    method: judge\n    rubric: Says GOOD.\n\
         - bad:\n    prompt: question bad\n    method: judge\n    rubric: Says GOOD.\n    threshold: 3\n\
         - odd:\n    prompt: question odd\n    method: judge\n    output: Says GOOD.\n    judge: openai:gpt-4o-mini\n\
         - plain:\n    prompt: question good\n    output: ANSWER-GOOD\n    method: exact\n",
    );
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Each judge's parse-failure rate is in the run's summary.
    assert!(
        stderr.contains("judge anthropic:haiku 3.5: 2 verdicts, 0 unreadable (0 %)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("judge openai:gpt-4o-mini: 1 verdict, 1 unreadable (100 %)"),
        "{stderr}"
    );
    // 3 distinct answers (the plain test shares the good one) + 3 verdicts.
    assert_eq!(s.mock.request_count(), 6);
    let verdicts: Vec<(String, String, Option<i64>, Option<String>)> = s
        .db()
        .prepare("SELECT prompt_name, status, judge_score, detail FROM bench_results ORDER BY prompt_index")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!((verdicts[0].1.as_str(), verdicts[0].2), ("passed", Some(5)));
    assert_eq!(
        verdicts[0].3.as_deref(),
        Some("judge anthropic:haiku 3.5 scored 5/5 (passes at 4): clear")
    );
    assert_eq!((verdicts[1].1.as_str(), verdicts[1].2), ("failed", Some(2)));
    assert_eq!(
        verdicts[2].1, "error",
        "garbage from the judge is an error, not a failure"
    );
    assert!(
        verdicts[2]
            .3
            .as_deref()
            .unwrap()
            .contains("could not be used")
    );
    assert_eq!(verdicts[3].1, "passed");
    // The judge's cost is in the result's cost: haiku 3.5 at 0.80 / 4.00 per million.
    let (cost, judge_cost, answer_cost): (f64, f64, f64) = s
        .db()
        .query_row(
            "SELECT b.cost_usd, b.judge_cost_usd, c.cost_usd FROM bench_results b JOIN calls c ON c.id = b.call_id
             WHERE b.prompt_name = 'good'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(judge_cost > 0.0 && (cost - answer_cost - judge_cost).abs() < 1e-15);
    let judge_prompt = s
        .mock
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/messages")
        .map(|r| r.last_user_text())
        .find(|t| t.contains("ANSWER-GOOD"))
        .unwrap();
    assert!(
        judge_prompt.contains("Says GOOD.")
            && judge_prompt.contains("ANSWER-GOOD")
            && judge_prompt.contains("question good")
    );
    // Again: answers and verdicts all cached.
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    assert_eq!(s.mock.request_count(), 6);
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 2 AND status = 'passed'"),
        2
    );
    // The plan counts the judges' calls too: 4 answers and 3 verdicts, all cached.
    let dry = s
        .track()
        .args(["run", "bench.yaml", "--dry-run"])
        .output()
        .unwrap();
    assert!(
        text(&dry.stdout).contains("7 calls planned, 7 cached, 0 to call"),
        "{}",
        text(&dry.stdout)
    );
}

/// The rows of a CSV printed on stdout, header first.
fn csv_rows(stdout: &[u8]) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(stdout)
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// Regression: `track runs` counted a judge's garbage verdict among a run's errors, but
/// `track runs --errors` listed only the calls that got no answer, so the two disagreed.
#[test]
fn runs_errors_lists_every_error_the_errors_column_counts() {
    let s = Sandbox::new();
    s.mock
        .add_rule(Rule::reply("ANSWER-ODD", "I liked it a lot!"));
    s.mock.add_rule(Rule::fail("forbidden", 400, 100));
    s.mock.add_rule(Rule::reply("question odd", "ANSWER-ODD"));
    s.mock.add_rule(Rule::reply("", "ok"));
    s.write(
        "bench.yaml",
        "models: [openai:gpt-4o]\nprompts:\n\
         - odd:\n    prompt: question odd\n    method: judge\n    output: Says GOOD.\n    judge: openai:gpt-4o-mini\n\
         - bad:\n    prompt: forbidden words\n    output: ok\n    method: exact\n\
         - fine:\n    prompt: fine prompt\n    output: ok\n    method: exact\n",
    );
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();

    let runs = csv_rows(
        &s.track()
            .args(["runs", "--format", "csv"])
            .output()
            .unwrap()
            .stdout,
    );
    let column = runs[0].iter().position(|c| c == "errors").unwrap();
    assert_eq!(runs[1][column], "2", "a failed call and a garbage verdict");

    let out = s
        .track()
        .args(["runs", "--errors", "1", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let errors = csv_rows(&out.stdout);
    assert_eq!(
        errors[0],
        ["stage", "model", "item", "attempts", "error", "answer"]
    );
    assert_eq!(
        errors.len(),
        1 + 2,
        "as many as the column counts: {errors:?}"
    );
    assert_eq!(
        errors[1][..4],
        ["answers", "openai:gpt-4o", "openai:gpt-4o on bad", "1"],
        "the call that got no answer"
    );
    assert!(errors[1][4].contains("HTTP 400"), "{errors:?}");
    assert_eq!(
        errors[2][..4],
        [
            "judges",
            "openai:gpt-4o-mini",
            "judge openai:gpt-4o-mini of openai:gpt-4o on odd",
            "1"
        ],
        "the verdict that could not be used, labelled as its call"
    );
    assert!(
        errors[2][4].starts_with("the judge's answer could not be used: ")
            && errors[2][4].contains("I liked it a lot!"),
        "with why: {errors:?}"
    );
    // The call that failed has no answer; the judge's verdict is about one.
    assert_eq!(errors[1][5], "", "{errors:?}");
    assert!(!errors[2][5].is_empty(), "{errors:?}");
}
