//! Conversations end to end: a case's `turns` (or a `messages` column with assistant turns
//! left open) sent turn by turn, each answer added to the history before the next turn, each
//! turn one call cached by its whole history; `turn: N` checks; malformed `turns` refused.

use crate::support::mock::Rule;
use crate::support::{Sandbox, text};

/// Two models (two wire formats), two cases of 3 turns; trip's checks pass (the last turn's
/// and turn 2's), math's `turn: 1` check fails. The mock answers `mock reply to: <last user
/// text>`.
fn bench(trip_last_turn: &str) -> String {
    format!(
        r#"temperature: 0
models: [openai:gpt-4o, "anthropic:sonnet 3.5"]
cases:
  - id: trip
    turns: ["Plan a trip to Rome", "How many days?", "{trip_last_turn}"]
    checks:
      - {{method: contains, value: "{trip_last_turn}"}}
      - {{method: contains, value: "How many days", turn: 2}}
  - id: math
    turns: ["What is 2+2?", "Double it", "Halve it"]
    checks:
      - {{method: contains, value: "Halve it"}}
      - {{method: contains, value: "Double it", turn: 1}}
"#
    )
}

#[test]
fn a_three_turn_conversation_is_cached_turn_by_turn() {
    let s = Sandbox::new();
    s.write("bench.yaml", &bench("Summarize it"));
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{stderr}");
    // 2 models x 2 cases x 3 turns: one call a turn.
    assert_eq!(s.mock.request_count(), 12, "{stderr}");
    assert_eq!(s.count("SELECT count(*) FROM calls"), 12);

    // Each turn's request holds the history: the answers before it, in each wire format.
    for request in s.mock.requests() {
        let messages = request.body["messages"].as_array().unwrap().clone();
        let last = request.last_user_text();
        let expected = match last.as_str() {
            "Plan a trip to Rome" | "What is 2+2?" => 1,
            "How many days?" | "Double it" => 3,
            _ => 5,
        };
        assert_eq!(messages.len(), expected, "{last}: {messages:?}");
        if expected == 5 {
            let body = request.body.to_string();
            assert!(
                body.contains("mock reply to: Plan a trip to Rome")
                    || body.contains("mock reply to: What is 2+2?"),
                "the first answer is in the history: {body}"
            );
            assert!(
                body.contains("mock reply to: How many days?")
                    || body.contains("mock reply to: Double it"),
                "{body}"
            );
        }
    }

    // A result a case: its last turn's call, the conversation's measures summed.
    let rows: Vec<(String, String, String)> = s
        .db()
        .prepare(
            "SELECT model_ref, prompt_name, status FROM bench_results
             ORDER BY model_index, prompt_index",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let statuses: Vec<(&str, &str)> = rows
        .iter()
        .map(|(_, p, st)| (p.as_str(), st.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("trip", "passed"),
            ("math", "failed"),
            ("trip", "passed"),
            ("math", "failed")
        ],
        "turn 2's check passes trip; turn 1's fails math"
    );
    let last_turn_call: String = s
        .db()
        .query_row(
            "SELECT CAST(b.content AS TEXT) FROM bench_results r
             JOIN calls c ON c.id = r.call_id JOIN blobs b ON b.sha256 = c.response_sha256
             WHERE r.prompt_name = 'trip' AND r.model_index = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(last_turn_call, "mock reply to: Summarize it");
    let (tokens, one_call): (i64, i64) = s
        .db()
        .query_row(
            "SELECT r.output_tokens, c.output_tokens FROM bench_results r
             JOIN calls c ON c.id = r.call_id
             WHERE r.prompt_name = 'trip' AND r.model_index = 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(
        tokens > one_call,
        "the row sums its turns: {tokens} vs {one_call}"
    );

    // A re-run pays nothing: every turn is served from the cache.
    s.mock.reset_requests();
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert_eq!(s.mock.request_count(), 0, "{}", text(&out.stderr));
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_results WHERE status = 'passed'
             AND run_id = (SELECT max(run_id) FROM bench_results)"
        ),
        2,
        "the cached conversations are graded as before"
    );

    // --offline serves them too.
    let out = s
        .track()
        .args(["run", "bench.yaml", "--offline"])
        .output()
        .unwrap();
    assert_eq!(s.mock.request_count(), 0, "{}", text(&out.stderr));

    // Changing trip's turn 3 pays only turn 3: one call a model for that case.
    s.write("bench.yaml", &bench("Summarize it in one line"));
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert_eq!(s.mock.request_count(), 2, "{}", text(&out.stderr));
    assert_eq!(
        s.mock.requests_containing("Summarize it in one line"),
        2,
        "the new turn 3 is what was sent"
    );
}

#[test]
fn a_shard_runs_whole_conversations() {
    let s = Sandbox::new();
    s.write("bench.yaml", &bench("Summarize it"));
    for index in 0..2 {
        let shard = format!("{index}/2");
        let out = s
            .track()
            .args(["run", "bench.yaml", "--shard", &shard])
            .output()
            .unwrap();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            text(&out.stderr)
        );
    }
    // Together the shards made every turn once, and a result a case.
    assert_eq!(s.mock.request_count(), 12);
    assert_eq!(s.count("SELECT count(*) FROM bench_results"), 4);
}

#[test]
fn a_messages_column_with_open_assistant_turns_is_a_conversation() {
    let s = Sandbox::new();
    s.write(
        "cases.jsonl",
        concat!(
            r#"{"id": "a", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": null}, {"role": "user", "content": "Bye"}]}"#,
            "\n",
            r#"{"id": "b", "turns": "[\"One\", \"Two\"]"}"#,
            "\n"
        ),
    );
    s.write(
        "bench.yaml",
        "models: [openai:gpt-4o]\ncases: {from: cases.jsonl}\nsystem: Be kind.\nchecks:\n  \
         - {method: contains, value: mock}\n",
    );
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.request_count(), 4, "2 cases of 2 turns");
    let second_turns: Vec<String> = s
        .mock
        .requests()
        .iter()
        .filter(|r| r.body["messages"].as_array().unwrap().len() > 2)
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(second_turns.len(), 2);
    assert!(
        second_turns
            .iter()
            .any(|b| b.contains("mock reply to: Hi") && b.contains("Be brief.")),
        "{second_turns:?}"
    );
    assert!(
        second_turns
            .iter()
            .any(|b| b.contains("mock reply to: One") && b.contains("Be kind.")),
        "a case's `turns` gets the file's system prompt: {second_turns:?}"
    );
}

#[test]
fn malformed_turns_are_refused_naming_the_case_and_the_fix() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        "models: [openai:gpt-4o]\ncases:\n  - id: chat\n    turns: [\"Hi\", {role: user}]\n\
         checks:\n  - {method: contains, value: x}\n",
    );
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("case `chat`"), "{stderr}");
    assert!(stderr.contains("`turns`, item 2"), "{stderr}");
    assert!(
        stderr.contains(r#"turns: ["Hello", "And then?"]"#),
        "{stderr}"
    );
    assert_eq!(s.mock.request_count(), 0);

    // A check of a turn the conversation does not have.
    s.write(
        "bench.yaml",
        "models: [openai:gpt-4o]\ncases:\n  - id: chat\n    turns: [\"Hi\", \"Bye\"]\n\
         checks:\n  - {method: contains, value: x, turn: 3}\n",
    );
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("case `chat`"), "{stderr}");
    assert!(
        stderr.contains(
            "check 1 has `turn: 3`, but the conversation has 2 turns; give a turn from 1 to 2, \
             or no `turn` (the last)"
        ),
        "{stderr}"
    );
}

#[test]
fn a_turn_that_fails_ends_its_conversation_in_error_and_a_rerun_goes_on_from_the_cache() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        "models: [openai:gpt-4o]\ncases:\n  - id: trip\n    turns: [\"Plan a trip to Rome\", \
         \"How many days?\", \"Summarize it\"]\nchecks:\n  - {method: contains, value: mock}\n",
    );
    // Turn 2 fails however often it is retried.
    s.mock.add_rule(Rule::fail("How many days?", 500, 100));
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("openai:gpt-4o on trip, turn 2: openai answered HTTP 500"),
        "the error names the turn: {stderr}"
    );
    let (status, detail): (String, String) = s
        .db()
        .query_row("SELECT status, detail FROM bench_results", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(status, "error");
    assert!(detail.starts_with("turn 2 of 3: "), "{detail}");
    assert_eq!(
        s.mock.requests_containing("Summarize it"),
        0,
        "turn 3 is not sent"
    );

    // Fixed, the same command pays turn 2 and turn 3 only: turn 1 comes from the cache.
    s.mock.clear_rules();
    s.mock.reset_requests();
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent: Vec<String> = s
        .mock
        .requests()
        .iter()
        .map(|r| r.last_user_text())
        .collect();
    assert_eq!(sent, ["How many days?", "Summarize it"]);
}
