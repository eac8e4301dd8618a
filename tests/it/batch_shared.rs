//! Runs with `--batch` sharing one database with other runs at once, live or batched: each
//! call is paid once (the claim that keeps two live runs from paying twice covers batches,
//! both ways), and a run following a batch another run collects ends `completed`, served
//! from the cache.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::mock::{Hold, MockProvider};
use crate::support::{Running, Sandbox, bench_yaml, wait_for};

/// Polls every 20 ms, at most every 200 ms: the mock's batches end in milliseconds.
const POLL: (&str, &str) = ("TRACK_BATCH_POLL_MS", "20,200");

/// A sandbox whose mock runs batches a million times faster than real time.
fn sandbox() -> Sandbox {
    let s = Sandbox::with_mock(MockProvider::start()).patient();
    s.mock.batches().set_speed(1_000_000.0);
    s
}

/// A benchmark of `model` x `n` prompts (`question 0` …) whose answers must contain "mock".
fn bench(s: &Sandbox, model: &str, n: usize) {
    let prompts: Vec<(String, String)> = (0..n)
        .map(|i| (format!("p{i}"), format!("question {i} of the shared run")))
        .collect();
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(name, prompt)| (name.as_str(), prompt.as_str(), "mock", "contains"))
        .collect();
    s.write("bench.yaml", &bench_yaml(&[model], &prompts));
}

/// `track run bench.yaml <extra>` in the background.
fn start(s: &Sandbox, extra: &[&str]) -> Running {
    let mut cmd = s.track_process();
    cmd.args(["run", "bench.yaml", "-q"])
        .args(extra)
        .env(POLL.0, POLL.1);
    Running::start(cmd)
}

/// The text of the last user message of a chat body (OpenAI's or Anthropic's).
fn user_text(body: &Value) -> String {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(last) = messages.iter().rev().find(|m| m["role"] == "user") else {
        return String::new();
    };
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// How many times the mock billed each prompt: its live answers plus its batch bills.
fn paid_per_prompt(s: &Sandbox) -> BTreeMap<String, usize> {
    let mut paid = BTreeMap::new();
    for request in s.mock.requests() {
        if request.path == "/v1/chat/completions" || request.path == "/v1/messages" {
            *paid.entry(user_text(&request.body)).or_default() += 1;
        }
    }
    let bodies: BTreeMap<String, Value> = s
        .mock
        .batches()
        .submitted()
        .into_iter()
        .map(|l| (l.custom_id, l.body))
        .collect();
    for bill in s.mock.batches().bills() {
        *paid.entry(user_text(&bodies[&bill.custom_id])).or_default() += 1;
    }
    paid
}

/// Each of the `n` prompts was billed exactly once (live or in a batch), the mock's ledger
/// holds `n` answers, and the store one answer a key.
fn assert_each_paid_once(s: &Sandbox, n: usize, what: &str) {
    let paid = paid_per_prompt(s);
    let twice: Vec<_> = paid.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "{what}: paid more than once: {twice:?}");
    assert_eq!(paid.len(), n, "{what}: {paid:?}");
    assert_eq!(s.mock.ledger().len(), n, "{what}: the mock's ledger");
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE status = 'ok'"),
        n as i64,
        "{what}: answers stored"
    );
}

/// Both runs ended 0 and `completed`, each with a result for every prompt.
fn assert_both_completed(s: &Sandbox, runs: [(Option<i32>, String); 2], n: i64) {
    for (code, stderr) in &runs {
        assert_eq!(*code, Some(0), "{stderr}");
    }
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE status = 'completed'"),
        2,
        "{:?}",
        runs.iter().map(|r| &r.1).collect::<Vec<_>>()
    );
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM runs r WHERE (SELECT count(*) FROM bench_results b \
             WHERE b.run_id = r.id AND b.status = 'passed') != {n}"
        )),
        0,
        "every run has every result"
    );
}

/// A live run is sending (its first call held by the mock, a second claimed) when a `--batch`
/// run of the same file starts on the same database: the batch run leaves the keys the live
/// run claimed to it, and the live run, coming to keys the batch has taken since it planned,
/// follows the batch instead of sending them.
#[test]
fn a_live_run_and_a_batch_run_at_once_pay_each_call_once() {
    let s = sandbox();
    bench(&s, "openai:gpt-4o", 20);
    s.mock
        .hold(Hold::Containing("question 0 of the shared run".into()));
    let live = start(&s, &["--concurrency", "1"]);
    s.mock.wait_held(1);
    wait_for("the live run's claims", || {
        s.try_count("SELECT count(*) FROM call_claims") == Some(2)
    });
    let batch = start(&s, &["--batch"]);
    wait_for("the batch to be submitted", || {
        s.try_count("SELECT count(*) FROM batches WHERE state IN ('submitted', 'collected')")
            == Some(1)
    });
    s.mock.release();
    let runs = [live.finish(), batch.finish()];
    assert_each_paid_once(&s, 20, "live + batch");
    assert_both_completed(&s, runs, 20);
}

/// A `--batch` run has stored its batch's intent and the provider holds its create when a
/// second `--batch` run of the same file starts on the same database: the second follows the
/// first's batch, never submits the keys again (nor gives the batch up as if its run were
/// dead), and both end `completed`, one collecting and the other served from the cache.
#[test]
fn two_batch_runs_at_once_submit_each_call_once_and_both_complete() {
    for (model, create) in [
        ("openai:gpt-4o", "track_intent"),
        ("anthropic:haiku 3.5", "question 0 of the shared run"),
    ] {
        let s = sandbox();
        bench(&s, model, 20);
        s.mock.hold(Hold::Containing(create.into()));
        let first = start(&s, &["--batch"]);
        s.mock.wait_held(1);
        let second = start(&s, &["--batch"]);
        wait_for("the second run to plan", || {
            s.try_count("SELECT count(*) FROM runs WHERE planned_calls = 20") == Some(2)
        });
        // Before the fix the second run gave the first's batch up and created its own, held
        // too; after it, it waits. Either way the race is decided once the second has looked.
        let looked = std::time::Instant::now();
        while s.mock.held() < 2 && looked.elapsed() < std::time::Duration::from_secs(1) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        s.mock.release();
        let runs = [first.finish(), second.finish()];
        assert_each_paid_once(&s, 20, model);
        assert_eq!(s.mock.batches().list().len(), 1, "{model}: one batch");
        assert_both_completed(&s, runs, 20);
    }
}

/// The exploratory race, timed rather than held, `TRACK_TRIALS` times (20 by default) for
/// each pair of runs started at once: prints how often a key was paid twice and how often a
/// run did not end 0 and `completed`. Run by hand (`cargo test --test it race_trials --
/// --ignored --nocapture`): the counts before and after a change to the claims.
#[test]
#[ignore = "timed trials, run by hand"]
fn race_trials() {
    use crate::support::mock::MockConfig;
    use std::time::Duration;
    let trials: usize = std::env::var("TRACK_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(20);
    for (name, first, second, latency) in [
        ("live then batch", &[][..], &["--batch"][..], 300),
        ("batch then batch", &["--batch"][..], &["--batch"][..], 0),
        ("batch then live", &["--batch"][..], &[][..], 0),
    ] {
        let (mut paid_twice, mut failed) = (0, 0);
        for trial in 0..trials {
            let mock = MockProvider::start_with(MockConfig {
                delay: Duration::from_millis(latency),
                ..MockConfig::default()
            });
            let s = Sandbox::with_mock(mock).patient();
            s.mock.batches().set_speed(1_000_000.0);
            bench(&s, "openai:gpt-4o", 20);
            let a = start(&s, first);
            std::thread::sleep(Duration::from_millis(if latency > 0 {
                latency / 2
            } else {
                (trial as u64 * 7) % 60
            }));
            let b = start(&s, second);
            let runs = [a.finish(), b.finish()];
            if paid_per_prompt(&s).values().any(|n| *n > 1) {
                paid_twice += 1;
            }
            let completed = s.count("SELECT count(*) FROM runs WHERE status = 'completed'");
            if runs.iter().any(|(code, _)| *code != Some(0)) || completed != 2 {
                failed += 1;
            }
        }
        println!(
            "{name}: paid twice in {paid_twice} of {trials}; a run failed in {failed} of {trials}"
        );
    }
}

/// Two runs of the same command follow one batch a detached run left and collect it at once
/// (their polls held by the mock and released together): both exit 0 and end `completed`,
/// the one storing a result second serving it from the cache.
#[test]
fn two_runs_collecting_one_batch_at_once_both_complete() {
    for model in ["openai:gpt-4o", "anthropic:haiku 3.5"] {
        let s = sandbox();
        s.mock.batches().set_speed(0.0);
        bench(&s, model, 20);
        let out = s
            .track()
            .args(["run", "bench.yaml", "-q", "--batch", "--detach"])
            .env(POLL.0, POLL.1)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            crate::support::text(&out.stderr)
        );
        s.mock
            .batches()
            .advance(std::time::Duration::from_secs(3600));
        let requests = s.mock.request_count();
        s.mock.hold(Hold::From(requests + 1));
        let a = start(&s, &["--batch"]);
        let b = start(&s, &["--batch"]);
        s.mock.wait_held(2);
        s.mock.release();
        let runs = [a.finish(), b.finish()];
        assert_each_paid_once(&s, 20, model);
        for (code, stderr) in &runs {
            assert_eq!(*code, Some(0), "{model}: {stderr}");
        }
        assert_eq!(
            s.count("SELECT count(*) FROM runs WHERE status = 'completed'"),
            2,
            "{model}"
        );
        assert_eq!(
            s.count(
                "SELECT count(*) FROM runs r WHERE r.status = 'completed' AND (SELECT count(*) \
                 FROM bench_results b WHERE b.run_id = r.id AND b.status = 'passed') = 20"
            ),
            2,
            "{model}: both have every result"
        );
    }
}
