//! Runs with `--batch` against the mock's batch APIs: the calls of OpenAI and Anthropic models
//! go to batches at half price, each step stored first, so that a run killed at any step is
//! finished by the same command without a call submitted twice or a paid result lost; expired
//! batches keep what finished and the next run submits only the rest; `--detach` and a signal
//! leave the run `waiting`; a two-stage benchmark submits its judges as a second round.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::mock::batch::{BatchFault, BatchStep, BatchTimings, TokenLimitForm};
use crate::support::mock::{Hold, MockProvider};
use crate::support::{Sandbox, bench_yaml, text, wait_for};

/// Polls every 20 ms, at most every 200 ms: the mock's batches end in milliseconds.
const POLL: (&str, &str) = ("TRACK_BATCH_POLL_MS", "20,200");

/// A sandbox whose mock runs batches a million times faster than real time: a batch's
/// default 6 minutes pass in well under a millisecond.
fn sandbox() -> Sandbox {
    let s = Sandbox::with_mock(MockProvider::start()).patient();
    s.mock.batches().set_speed(1_000_000.0);
    s
}

/// A benchmark of `models` x `n` prompts whose answers must contain "mock".
fn bench(s: &Sandbox, models: &[&str], n: usize) {
    let prompts: Vec<(String, String)> = (0..n)
        .map(|i| (format!("p{i}"), format!("batched question {i}")))
        .collect();
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(name, prompt)| (name.as_str(), prompt.as_str(), "mock", "contains"))
        .collect();
    s.write("bench.yaml", &bench_yaml(models, &prompts));
}

/// `track run bench.yaml --batch <extra>`.
fn run_batch(s: &Sandbox, extra: &[&str]) -> std::process::Output {
    s.track()
        .args(["run", "bench.yaml", "--batch"])
        .args(extra)
        .env(POLL.0, POLL.1)
        .output()
        .unwrap()
}

/// `track run bench.yaml --batch <extra>` in the background, to signal or kill.
fn start_batch(s: &Sandbox, extra: &[&str]) -> crate::support::Running {
    let mut cmd = s.track_process();
    cmd.args(["run", "bench.yaml", "--batch"])
        .args(extra)
        .env(POLL.0, POLL.1);
    crate::support::Running::start(cmd)
}

/// Chat requests sent live to OpenAI's or Anthropic's API (not their batch APIs).
fn live_requests(mock: &MockProvider) -> usize {
    mock.requests()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions" || r.path == "/v1/messages")
        .count()
}

/// No key waits in two batches at once or is paid twice: a key is submitted again only when
/// an earlier batch ended without running it (expired, cancelled), and the provider billed
/// each key once; none is answered twice in the store.
fn assert_no_call_in_two_batches(s: &Sandbox) {
    let mut billed = BTreeSet::new();
    for bill in s.mock.batches().bills() {
        assert!(
            billed.insert(bill.custom_id.clone()),
            "{} was billed by two batches",
            bill.custom_id
        );
    }
    let unfinished: BTreeSet<String> = {
        let db = s.db();
        let mut stmt = db
            .prepare("SELECT cache_key FROM batch_calls WHERE outcome = 'unfinished'")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let mut seen = BTreeSet::new();
    for line in s.mock.batches().submitted() {
        assert!(
            seen.insert(line.custom_id.clone()) || unfinished.contains(&line.custom_id),
            "{} was submitted in two batches, though the first did not leave it unfinished",
            line.custom_id
        );
    }
    assert_eq!(
        s.count(
            "SELECT count(*) FROM (SELECT cache_key FROM batch_calls \
             WHERE outcome = 'answered' GROUP BY cache_key HAVING count(*) > 1)"
        ),
        0
    );
}

/// The run ended, every result is in and passed, answered at the batch price.
fn assert_complete(s: &Sandbox, results: i64) {
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = (SELECT max(id) FROM runs)"),
        results
    );
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_results WHERE run_id = (SELECT max(id) FROM runs) \
             AND status = 'passed'"
        ),
        results
    );
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE status = 'ok' AND batch IS NULL"),
        0,
        "every answer came from a batch"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE id = (SELECT max(id) FROM runs) AND status = 'completed'"),
        1
    );
}

#[test]
fn a_batched_benchmark_sends_nothing_live_costs_half_and_matches_a_live_run() {
    let models = ["openai:gpt-4o", "anthropic:haiku 3.5"];
    let live = sandbox();
    bench(&live, &models, 5);
    let out = live.track().args(["run", "bench.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    let s = sandbox();
    bench(&s, &models, 5);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        live_requests(&s.mock),
        0,
        "no live call to a batch API's provider"
    );
    // One batch per model: OpenAI takes one model per file; Anthropic's are kept apart too.
    assert_eq!(s.mock.batches().list().len(), 2);
    assert_complete(&s, 10);
    assert_no_call_in_two_batches(&s);

    // The same answers (keys differ: each mock has its own base URL), at half the cost.
    let answers = |s: &Sandbox| -> Vec<(String, String, i64)> {
        let db = s.db();
        let mut stmt = db
            .prepare(
                "SELECT c.model, c.response_sha256, r.status = 'passed' FROM calls c \
                 JOIN bench_results r ON r.call_id = c.id WHERE c.status = 'ok' ORDER BY 1, 2",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(answers(&s).len(), 10);
    assert_eq!(answers(&s), answers(&live));
    let cost = |s: &Sandbox| -> f64 {
        s.db()
            .query_row(
                "SELECT sum(cost_usd) FROM calls WHERE status = 'ok'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let (batched, full) = (cost(&s), cost(&live));
    assert!(full > 0.0);
    assert!(
        (batched - full / 2.0).abs() < 1e-12,
        "batched {batched} vs live {full}"
    );
    // Billed by the provider as recorded.
    assert!((s.mock.batches().billed_usd() - s.mock.billed_usd()).abs() < 1e-12);

    // A later run, with or without --batch, is served from the cache.
    let before = s.mock.request_count();
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(s.mock.request_count(), before, "nothing asked again");
}

#[test]
fn models_without_a_batch_api_run_live_in_the_same_run_said_once() {
    let s = sandbox();
    bench(&s, &["openai:gpt-4o", "ollama:llama3.2"], 3);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("has no batch API").count(),
        1,
        "said once: {stderr}"
    );
    assert!(
        stderr.contains("ollama:llama3.2 has no batch API"),
        "{stderr}"
    );
    assert_eq!(live_requests(&s.mock), 0);
    assert_eq!(
        s.mock
            .requests()
            .iter()
            .filter(|r| r.path == "/api/chat")
            .count(),
        3
    );
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE batch IS NOT NULL"),
        3
    );
}

#[test]
fn detach_leaves_the_run_waiting_and_the_same_command_collects_submitting_nothing_twice() {
    let s = sandbox();
    // Batches that take an hour of mock time: not done when the run detaches.
    s.mock.batches().set_speed(0.0);
    bench(&s, &["openai:gpt-4o"], 4);
    let out = run_batch(&s, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("waiting for 1 batch"), "{stderr}");
    assert!(stderr.contains("run the same command"), "{stderr}");
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE status = 'waiting'"),
        1
    );
    assert_eq!(s.mock.batches().list().len(), 1);

    // Still running: the same command polls, finds it unfinished and waits again.
    let out = run_batch(&s, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.batches().list().len(), 1, "nothing submitted twice");

    // Done: collected.
    s.mock.batches().advance(Duration::from_secs(3600));
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.batches().list().len(), 1);
    assert_complete(&s, 4);
    assert_no_call_in_two_batches(&s);
}

#[test]
fn a_signal_while_waiting_leaves_the_run_waiting_and_exits_0() {
    let s = sandbox();
    s.mock.batches().set_speed(0.0);
    bench(&s, &["anthropic:haiku 3.5"], 3);
    let running = start_batch(&s, &[]);
    wait_for("the batch to be submitted", || {
        s.try_count("SELECT count(*) FROM batches WHERE state = 'submitted'") == Some(1)
    });
    running.signal("INT");
    let (code, stderr) = running.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("waiting for 1 batch"), "{stderr}");
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE status = 'waiting'"),
        1
    );
    s.mock.batches().advance(Duration::from_secs(3600));
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.batches().list().len(), 1);
    assert_complete(&s, 3);
}

#[test]
fn an_expired_batch_keeps_what_finished_and_the_next_run_submits_only_the_rest() {
    let s = sandbox();
    // 40 h of work in a 24 h window: 60 % is done when it expires.
    s.mock.batches().set_timings(BatchTimings {
        in_progress: Duration::from_secs(40 * 3600),
        ..BatchTimings::default()
    });
    bench(&s, &["openai:gpt-4o", "anthropic:haiku 3.5"], 10);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let answered = s.count("SELECT count(*) FROM calls WHERE status = 'ok'");
    assert!(answered > 0 && answered < 20, "{answered} of 20 answered");
    let unfinished = s.count("SELECT count(*) FROM batch_calls WHERE outcome = 'unfinished'");
    assert_eq!(answered + unfinished, 20);
    assert!(
        text(&out.stderr).contains("the next run submits it again")
            || text(&out.stdout).contains("expired"),
        "{}",
        text(&out.stderr)
    );
    let first: BTreeSet<String> = s
        .mock
        .batches()
        .submitted()
        .into_iter()
        .map(|l| l.custom_id)
        .collect();
    assert_eq!(first.len(), 20);

    s.mock.batches().set_timings(BatchTimings::default());
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let second: Vec<String> = s
        .mock
        .batches()
        .submitted()
        .into_iter()
        .skip(20)
        .map(|l| l.custom_id)
        .collect();
    assert_eq!(
        second.len() as i64,
        unfinished,
        "only the rest is submitted"
    );
    assert_complete(&s, 20);
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE status = 'ok'"),
        20
    );
}

#[test]
fn a_batch_refused_as_a_whole_is_reported_with_its_code() {
    let s = sandbox();
    s.mock
        .batches()
        .set_token_limit("gpt-4o", 1, TokenLimitForm::Failed);
    bench(&s, &["openai:gpt-4o"], 2);
    let out = run_batch(&s, &[]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("token_limit_exceeded"), "{stderr}");
    assert_eq!(
        s.count("SELECT count(*) FROM batches WHERE state = 'void'"),
        1
    );
    // Nothing billed; the next run (once the queue has room) submits them again.
    assert_eq!(s.mock.batches().billed_usd(), 0.0);
    s.mock
        .batches()
        .set_token_limit("gpt-4o", 1_000_000, TokenLimitForm::Failed);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_complete(&s, 2);
}

#[test]
fn a_benchmark_with_a_judge_submits_the_judges_as_a_second_round() {
    let s = sandbox();
    s.write(
        "bench.yaml",
        "judge: anthropic:haiku 3.5\nmodels: [openai:gpt-4o]\nprompts:\n\
         - a:\n    prompt: question a\n    method: judge\n    rubric: Says anything.\n\
         - b:\n    prompt: question b\n    method: judge\n    rubric: Says anything.\n",
    );
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(live_requests(&s.mock), 0);
    let batches = s.mock.batches().list();
    assert_eq!(batches.len(), 2, "answers, then judges");
    assert!(!batches[0].anthropic && batches[1].anthropic);
    // The judges' prompts hold the answers of the first round.
    assert!(
        s.mock.batches().submitted()[2..]
            .iter()
            .all(|l| l.body.to_string().contains("question"))
    );
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE status = 'ok' AND batch IS NOT NULL"),
        4
    );
}

/// Kills `track run --batch` once the mock holds the request `hold` picks, checks the stored
/// state, lets the mock go on, and runs the same command: one batch, every result, no call
/// in two batches.
fn crash_and_resume(model: &str, hold: Hold, state: &str) {
    let s = sandbox();
    bench(&s, &[model], 4);
    s.mock.hold(hold);
    let mut running = start_batch(&s, &[]);
    s.mock.wait_held(1);
    running.kill();
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM batches WHERE state = '{state}'"
        )),
        1,
        "{model}: the step stored before the kill"
    );
    s.mock.release();
    wait_for("the held request to end", || s.mock.in_flight() == 0);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{model}: {}", text(&out.stderr));
    let created = s.mock.batches().list();
    assert_eq!(created.len(), 1, "{model}: one batch: {created:?}");
    assert_complete(&s, 4);
    assert_no_call_in_two_batches(&s);
    assert_eq!(
        s.mock.batches().bills().len(),
        4,
        "{model}: each billed once"
    );
}

#[test]
fn killed_after_the_upload_the_next_run_submits_once() {
    // OpenAI: 1 upload, 2 create (held: the file is stored, the batch not created).
    crash_and_resume("openai:gpt-4o", Hold::From(2), "uploaded");
}

#[test]
fn killed_after_the_batch_is_created_the_next_run_collects_it() {
    // OpenAI: 3 is the first poll; Anthropic: 2.
    crash_and_resume("openai:gpt-4o", Hold::From(3), "submitted");
    crash_and_resume("anthropic:haiku 3.5", Hold::From(2), "submitted");
}

#[test]
fn killed_while_reading_results_the_next_run_collects_them() {
    // OpenAI: 3 poll (ended), 4 the output file; Anthropic: 2 poll, 3 the results.
    crash_and_resume("openai:gpt-4o", Hold::From(4), "submitted");
    crash_and_resume("anthropic:haiku 3.5", Hold::From(3), "submitted");
}

/// The provider creates the batch but its answer is lost, and the run is killed while it
/// looks for the batch: the next run finds it (OpenAI by the tag in its metadata, Anthropic
/// by its request count and time) instead of creating another.
#[test]
fn a_batch_created_but_not_recorded_is_found_again_not_created_twice() {
    for (model, state, list_request) in [
        ("openai:gpt-4o", "uploaded", 3),
        ("anthropic:haiku 3.5", "intent", 2),
    ] {
        let s = sandbox();
        bench(&s, &[model], 4);
        s.mock
            .batches()
            .fault(BatchStep::Create, BatchFault::LoseAnswer, 1);
        s.mock.hold(Hold::From(list_request));
        let mut running = start_batch(&s, &[]);
        s.mock.wait_held(1);
        running.kill();
        assert_eq!(s.mock.batches().list().len(), 1, "{model}: created");
        assert_eq!(
            s.count(&format!(
                "SELECT count(*) FROM batches WHERE state = '{state}'"
            )),
            1,
            "{model}: its id never stored"
        );
        s.mock.release();
        wait_for("the held request to end", || s.mock.in_flight() == 0);
        let out = run_batch(&s, &[]);
        assert!(out.status.success(), "{model}: {}", text(&out.stderr));
        assert_eq!(
            s.mock.batches().list().len(),
            1,
            "{model}: not created twice"
        );
        assert_complete(&s, 4);
        assert_no_call_in_two_batches(&s);
    }
}

/// A run stopped while storing a batch's results has stored some (each in a transaction of
/// its own) and not the rest: the state is made here exactly, by taking the last results
/// back out of a collected batch. The next run stores the rest, pays nothing again.
#[test]
fn killed_while_storing_results_the_next_run_stores_the_rest() {
    let s = sandbox();
    bench(&s, &["openai:gpt-4o"], 4);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    {
        let db = rusqlite::Connection::open(s.db_path()).unwrap();
        db.execute_batch(
            "PRAGMA foreign_keys = OFF;
             UPDATE batches SET state = 'submitted', collected_at = NULL;
             CREATE TEMP TABLE gone AS SELECT call_id FROM batch_calls ORDER BY position DESC LIMIT 2;
             UPDATE batch_calls SET outcome = 'pending', call_id = NULL
                 WHERE call_id IN (SELECT call_id FROM gone);
             DELETE FROM bench_results WHERE call_id IN (SELECT call_id FROM gone);
             DELETE FROM calls WHERE id IN (SELECT call_id FROM gone);",
        )
        .unwrap();
    }
    let requests = s.mock.batches().submitted().len();
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        s.mock.batches().submitted().len(),
        requests,
        "nothing submitted"
    );
    assert_eq!(s.mock.batches().list().len(), 1);
    assert_complete(&s, 4);
    assert_no_call_in_two_batches(&s);
    assert_eq!(
        s.count("SELECT count(*) FROM batches WHERE state = 'collected'"),
        1
    );
}

/// The plan's bound as `--dry-run` prints it with a budget: `the plan's bound $0.0312`.
fn planned_bound(s: &Sandbox, extra: &[&str]) -> f64 {
    let out = s
        .track()
        .args(["run", "bench.yaml", "--dry-run", "--budget", "1000"])
        .args(extra)
        .output()
        .unwrap();
    let stdout = text(&out.stdout) + &text(&out.stderr);
    let after = stdout
        .split("the plan's bound $")
        .nth(1)
        .unwrap_or_else(|| panic!("no bound in {stdout}"));
    after
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_budget_reserves_at_the_batch_price_when_a_batch_is_submitted() {
    let s = sandbox();
    bench(&s, &["openai:gpt-4o", "anthropic:haiku 3.5"], 6);
    let live_bound = planned_bound(&s, &[]);
    let batch_bound = planned_bound(&s, &["--batch"]);
    assert!(
        (batch_bound - live_bound / 2.0).abs() <= 1e-4 * live_bound,
        "{batch_bound} vs {live_bound}"
    );
    // Room for no call's worst case: nothing is submitted, and the run says what the next
    // call needed, more than the budget has left.
    let tiny = batch_bound / 100.0;
    let out = run_batch(&s, &["--budget", &format!("{tiny}")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("budget reached"), "{stderr}");
    assert!(stderr.contains("12 of 12 calls are left"), "{stderr}");
    let needed: f64 = stderr
        .split("the next needed up to $")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no need in {stderr}"));
    assert!(
        needed > tiny,
        "needed {needed} of {tiny}: it would have fit"
    );
    assert_eq!(s.mock.batches().submitted().len(), 0);
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE status = 'budget'"),
        1
    );
    // Room for about half the worst cases at the batch price: what fits is submitted, and
    // the rest once those answers settle their reservations to what they cost (far less):
    // the run finishes in several batches, within its budget.
    let half = batch_bound / 2.0;
    let out = run_batch(&s, &["--budget", &format!("{half}")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let batches = s.mock.batches().list();
    assert!(
        batches.len() > 2,
        "more than one batch a model: {batches:?}"
    );
    assert!(
        batches.iter().all(|b| b.custom_ids.len() < 6),
        "no batch holds a model's every call: {batches:?}"
    );
    assert!(s.mock.batches().billed_usd() <= half);
    assert_complete(&s, 12);
    assert_no_call_in_two_batches(&s);
    assert_eq!(
        s.mock.batches().submitted().len(),
        12,
        "each submitted once"
    );
}

#[test]
fn killed_while_polling_a_running_batch_the_next_run_collects_it() {
    for (model, second_poll) in [("openai:gpt-4o", 4), ("anthropic:haiku 3.5", 3)] {
        let s = sandbox();
        // The mock's clock stands still: the first poll finds it running, the second is held.
        s.mock.batches().set_speed(0.0);
        bench(&s, &[model], 4);
        s.mock.hold(Hold::From(second_poll));
        let mut running = start_batch(&s, &[]);
        s.mock.wait_held(1);
        running.kill();
        assert_eq!(
            s.count("SELECT count(*) FROM batches WHERE state = 'submitted' AND polls = 1"),
            1,
            "{model}: one poll stored"
        );
        s.mock.release();
        wait_for("the held request to end", || s.mock.in_flight() == 0);
        s.mock.batches().advance(Duration::from_secs(3600));
        let out = run_batch(&s, &[]);
        assert!(out.status.success(), "{model}: {}", text(&out.stderr));
        assert_eq!(s.mock.batches().list().len(), 1, "{model}");
        assert_complete(&s, 4);
        assert_no_call_in_two_batches(&s);
    }
}

#[test]
fn a_cancelled_batch_keeps_what_finished_and_the_next_run_submits_the_rest() {
    let s = sandbox();
    s.mock.batches().set_speed(0.0);
    bench(&s, &["anthropic:haiku 3.5"], 10);
    let out = run_batch(&s, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Half of its 5 minutes in progress: about half the requests are done.
    s.mock.batches().advance(Duration::from_secs(150));
    let out = s.track().args(["batches", "cancel", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.mock.batches().advance(Duration::from_secs(3600));
    let out = run_batch(&s, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let answered = s.count("SELECT count(*) FROM calls WHERE status = 'ok'");
    assert!(answered > 0 && answered < 10, "{answered} of 10 kept");
    assert_eq!(
        s.count("SELECT count(*) FROM batch_calls WHERE batch = 1 AND outcome = 'unfinished'"),
        10 - answered
    );
    // The rest, and only the rest, in a second batch.
    s.mock.batches().set_speed(1_000_000.0);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let batches = s.mock.batches().list();
    assert_eq!(batches.len(), 2, "{batches:?}");
    assert_eq!(batches[1].custom_ids.len() as i64, 10 - answered);
    assert_complete(&s, 10);
    assert_no_call_in_two_batches(&s);
}

#[test]
fn a_bad_batch_setting_in_a_file_is_named_and_a_detached_run_with_nothing_back_prints_no_tables() {
    let s = sandbox();
    bench(&s, &["openai:gpt-4o"], 2);
    let yaml = std::fs::read_to_string(s.path("bench.yaml")).unwrap();
    s.write("bench.yaml", &format!("batch: maybe\n{yaml}"));
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`batch: maybe` must be true"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    s.write("bench.yaml", &format!("batch: true\n{yaml}"));
    s.mock.batches().set_speed(0.0);
    let out = s
        .track()
        .args(["run", "bench.yaml", "--detach"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "", "no empty tables");
    assert!(text(&out.stderr).contains("waiting for 1 batch"));
}

#[test]
fn refused_polls_and_downloads_are_tried_again_and_the_run_completes() {
    let s = sandbox();
    bench(&s, &["openai:gpt-4o"], 3);
    s.mock
        .batches()
        .fault(BatchStep::Get, BatchFault::Status(429), 2);
    s.mock
        .batches()
        .fault(BatchStep::Results, BatchFault::Status(503), 1);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_complete(&s, 3);
    assert_eq!(s.mock.batches().list().len(), 1);
}

#[test]
fn a_batch_that_cannot_be_polled_ends_the_wait_and_is_followed_again_later() {
    let s = sandbox();
    bench(&s, &["openai:gpt-4o"], 2);
    // The poll refused for good (as a batch unknown to the key would be): not tried again.
    s.mock
        .batches()
        .fault(BatchStep::Get, BatchFault::Status(404), 1);
    let out = run_batch(&s, &[]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("could not be followed"), "{stderr}");
    assert_eq!(
        s.count("SELECT count(*) FROM batch_calls WHERE outcome = 'pending'"),
        2,
        "its calls still wait in it"
    );
    // Mended: the same command follows it, submitting nothing again.
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.batches().list().len(), 1);
    assert_complete(&s, 2);
}

/// The same, with a real kill: a batch of 1,500 answers is stored one transaction each, and
/// `track` is killed once some and not all are in.
#[test]
fn killed_with_sigkill_while_storing_results_the_next_run_stores_the_rest() {
    let s = sandbox();
    bench(&s, &["openai:gpt-4o"], 1_500);
    let mut running = start_batch(&s, &["-q"]);
    let stored = || {
        s.try_count("SELECT count(*) FROM calls WHERE batch IS NOT NULL")
            .unwrap_or(0)
    };
    wait_for("the first results to be stored", || stored() > 0);
    running.kill();
    let at_kill = stored();
    assert!(
        at_kill > 0 && at_kill < 1_500,
        "killed with {at_kill} of 1,500 stored: not while storing"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM batches WHERE state = 'submitted'"),
        1
    );
    let out = run_batch(&s, &["-q"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.batches().list().len(), 1, "nothing submitted again");
    assert_complete(&s, 1_500);
    assert_no_call_in_two_batches(&s);
    assert_eq!(stored(), 1_500, "each answer stored once");
}

/// A batch a detached run submitted is cancelled half done: the next run collects what
/// finished and submits the rest itself, at once, ending `completed` with every result (it
/// used to record the rest as errors, leaving them to the run after it).
#[test]
fn the_run_collecting_a_cancelled_batch_submits_the_rest_itself() {
    let s = sandbox();
    s.mock.batches().set_speed(0.0);
    bench(&s, &["anthropic:haiku 3.5"], 10);
    let out = run_batch(&s, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.mock.batches().advance(Duration::from_secs(150));
    let out = s.track().args(["batches", "cancel", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.mock.batches().advance(Duration::from_secs(3600));
    s.mock.batches().set_speed(1_000_000.0);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let batches = s.mock.batches().list();
    assert_eq!(batches.len(), 2, "the rest in a second batch: {batches:?}");
    let kept = 10 - batches[1].custom_ids.len() as i64;
    assert!(kept > 0 && kept < 10, "{kept} of 10 kept");
    assert_complete(&s, 10);
    assert_no_call_in_two_batches(&s);
    assert_eq!(
        s.count("SELECT count(*) FROM run_errors WHERE run_id = 2"),
        0,
        "no request recorded as an error"
    );
    // `track batches`: what was cancelled is not counted done.
    let out = s
        .track()
        .args(["batches", "--format", "json"])
        .output()
        .unwrap();
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let first = rows.iter().find(|r| r["id"] == 1).unwrap();
    assert_eq!(first["done"], kept, "{first}");
    assert_eq!(first["cancelled"], 10 - kept, "{first}");
    assert_eq!(first["status"], "cancelled, collected", "{first}");
}

/// A detached run waits; the same command collects its batch under a new run: the waiting
/// run ends (`interrupted`, its results in the new run), and `track runs` no longer tells
/// the user to run the same command for it.
#[test]
fn a_waiting_run_whose_batches_another_run_collected_ends() {
    let s = sandbox();
    s.mock.batches().set_speed(0.0);
    bench(&s, &["openai:gpt-4o"], 3);
    let out = run_batch(&s, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE id = 1 AND status = 'waiting'"),
        1
    );
    s.mock.batches().advance(Duration::from_secs(3600));
    let out = run_batch(&s, &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("run 1 waited for batches that are all collected now"),
        "{stderr}"
    );
    assert_complete(&s, 3);
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE status = 'waiting'"),
        0,
        "no run left waiting"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE id = 1 AND status = 'interrupted'"),
        1
    );
    let runs = s.track().args(["runs"]).output().unwrap();
    let stdout = text(&runs.stdout);
    assert!(!stdout.contains("run the same command"), "{stdout}");
}

/// `track batches` after an expiry: OpenAI's and Anthropic's read alike (done is what ran,
/// the rest expired), a collected batch still says how it ended, the status says when it
/// was seen, and models are named by their reference as in every other table.
#[test]
fn track_batches_shows_an_expiry_alike_for_both_providers_with_its_references() {
    let s = sandbox();
    // 40 h of work in a 24 h window: 60 % is done when it expires.
    s.mock.batches().set_timings(BatchTimings {
        in_progress: Duration::from_secs(40 * 3600),
        ..BatchTimings::default()
    });
    bench(&s, &["openai:gpt-4o", "anthropic:haiku 3.5"], 10);
    let out = run_batch(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = s
        .track()
        .args(["batches", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        let answered = s.count(&format!(
            "SELECT count(*) FROM batch_calls WHERE batch = {} AND outcome = 'answered'",
            row["id"]
        ));
        assert!(answered > 0 && answered < 10, "{row}");
        assert_eq!(row["done"], answered, "done is what ran: {row}");
        assert_eq!(row["expired"], 10 - answered, "{row}");
        assert_eq!(row["cancelled"], 0, "{row}");
        assert_eq!(row["status"], "expired, collected", "{row}");
        assert!(row["status_at"].is_string(), "{row}");
    }
    let models: Vec<&str> = rows.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["anthropic:haiku 3.5", "openai:gpt-4o"]);
    let out = s
        .track()
        .args(["batches"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let table = text(&out.stdout);
    assert!(table.contains("expired, collected"), "{table}");
    assert!(table.contains("openai:gpt-4o"), "{table}");
    assert!(table.contains("expired"), "{table}");
    for line in table.lines() {
        assert!(line.chars().count() <= 80, "{table}");
    }
}
