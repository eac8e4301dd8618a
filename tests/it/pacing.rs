//! Pacing against a mock that enforces rate limits as the providers do (token buckets per key
//! and model, refilling continuously, over a one-second burst window), and the refusals that
//! never succeed.

use std::time::Duration;

use crate::support::mock::{Action, MockConfig, MockLimits, MockProvider, RetryAfterHeader, Rule};
use crate::support::{Sandbox, text};

/// A benchmark of `n` short distinct prompts on `models`, with `max_tokens`.
fn many_prompts(models: &[&str], n: usize, max_tokens: u32) -> String {
    prompts_numbered(models, 0..n, max_tokens)
}

/// A benchmark of the prompts numbered `numbers` on `models`, with `max_tokens`.
fn prompts_numbered(models: &[&str], numbers: std::ops::Range<usize>, max_tokens: u32) -> String {
    let mut yaml = format!("temperature: 0\nmax_tokens: {max_tokens}\nmodels:\n");
    for m in models {
        yaml.push_str(&format!("  - {m}\n"));
    }
    yaml.push_str("prompts:\n");
    for i in numbers {
        yaml.push_str(&format!(
            "  - p{i}:\n    prompt: \"question number {i}\"\n    output: \"mock\"\n    method: contains\n"
        ));
    }
    yaml
}

fn limits(rpm: Option<u64>, tpm: Option<u64>) -> MockLimits {
    MockLimits {
        rpm,
        tpm,
        itpm: None,
        otpm: None,
        window: Duration::from_secs(1),
        headers: true,
        retry_after: RetryAfterHeader::Millis,
        reserve_output: false,
        message_tokens: 0,
    }
}

fn limited(limits: MockLimits) -> Sandbox {
    Sandbox::with_mock(MockProvider::start_with(MockConfig {
        limits: Some(limits),
        ..MockConfig::default()
    }))
}

/// How many calls of the database's runs got an answer (each cached answer counts once).
fn answered(s: &Sandbox) -> i64 {
    s.count(
        "SELECT count(DISTINCT r.call_id) FROM bench_results r JOIN calls c ON c.id = r.call_id \
         WHERE c.status = 'ok'",
    )
}

/// Runs `n` prompts at concurrency 64 and checks that every answer arrived with under 1 % of
/// the requests refused.
fn every_answer_with_few_refusals(s: &Sandbox, models: &[&str], n: usize, max_tokens: u32) {
    s.write("bench.yaml", &many_prompts(models, n, max_tokens));
    let out = s
        .track()
        .args(["run", "bench.yaml", "--no-detail", "--concurrency", "64"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let expected = (n * models.len()) as i64;
    assert_eq!(answered(s), expected, "{stderr}");
    let (admitted, refused) = (s.mock.admitted(), s.mock.refused());
    assert_eq!(admitted as i64, expected);
    assert!(
        refused * 100 < admitted + refused,
        "{refused} of {} requests refused",
        admitted + refused
    );
}

#[test]
fn openai_requests_are_paced_to_the_limit_its_headers_tell() {
    // 3,000 RPM enforced as 50 requests a second.
    let s = limited(limits(Some(3_000), None));
    every_answer_with_few_refusals(&s, &["openai:gpt-4o"], 300, 50);
}

#[test]
fn openai_tokens_are_paced_with_max_tokens_counted_at_admission() {
    // Each call is charged its prompt estimate plus max_tokens (200): about 40 calls a second.
    let s = limited(limits(None, Some(500_000)));
    every_answer_with_few_refusals(&s, &["openai:gpt-4o"], 300, 200);
}

#[test]
fn a_provider_counting_more_tokens_than_the_estimate_is_followed_after_one_refusal() {
    // A provider charging 8 tokens of framing a message besides the characters (the cookbook's
    // reading, doubled): each call is counted 23 tokens, estimated by characters at 15. The
    // first refusal says so ("Requested 23"), and later calls are charged that much.
    let s = limited(MockLimits {
        message_tokens: 8,
        ..limits(None, Some(120_000))
    });
    every_answer_with_few_refusals(&s, &["openai:gpt-4o"], 600, 10);
}

#[test]
fn anthropic_requests_and_tokens_are_paced() {
    let s = limited(MockLimits {
        rpm: Some(2_400),
        itpm: Some(400_000),
        otpm: Some(100_000),
        retry_after: RetryAfterHeader::Seconds,
        ..limits(None, None)
    });
    every_answer_with_few_refusals(&s, &["anthropic:haiku 3.5"], 240, 100);
}

#[test]
fn a_models_first_call_streams_and_its_head_lets_the_others_go() {
    // Answers take a second; had the first call's whole answer been awaited, the others
    // would have been sent a second after it.
    let delay = Duration::from_secs(1);
    let s = Sandbox::with_mock(MockProvider::start_with(MockConfig {
        delay,
        limits: Some(limits(Some(6_000), None)),
        ..MockConfig::default()
    }));
    let models = ["openai:gpt-4o", "anthropic:haiku 3.5"];
    s.write("bench.yaml", &many_prompts(&models, 4, 50));
    let out = s
        .track()
        .args(["run", "bench.yaml", "--no-detail", "--concurrency", "8"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    for path in ["/v1/chat/completions", "/v1/messages"] {
        let requests: Vec<_> = s
            .mock
            .requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect();
        assert_eq!(requests.len(), 4, "{path}");
        let (streamed, others): (Vec<_>, Vec<_>) = requests
            .iter()
            .partition(|r| r.body["stream"] == serde_json::json!(true));
        assert_eq!(streamed.len(), 1, "{path}: the first call alone streams");
        let first = streamed[0].arrived;
        for other in others {
            assert!(
                first <= other.arrived && other.arrived < first + delay,
                "{path}: a call went {:?} after the first, not once its head was in",
                other.arrived.saturating_sub(first)
            );
        }
    }
    // The streamed answers are stored as the others are: their counts from the stream's usage.
    let counted = "SELECT count(*) FROM calls WHERE status = 'ok' AND tokens_estimated = 0";
    assert_eq!(s.count(counted), 8);
}

#[test]
fn a_server_refusing_the_streamed_first_call_is_asked_it_unstreamed() {
    let s = Sandbox::with_mock(MockProvider::start_with(MockConfig {
        refuse_stream_options: true,
        ..MockConfig::default()
    }));
    s.write("bench.yaml", &many_prompts(&["openai:gpt-4o"], 3, 50));
    let out = s
        .track()
        .args(["run", "bench.yaml", "--no-detail"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(answered(&s), 3);
    let bodies: Vec<_> = s.mock.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 4, "the first call asked twice: {bodies:?}");
    assert!(bodies[0].get("stream_options").is_some());
    assert!(bodies[1..].iter().all(|b| b.get("stream").is_none()));
}

/// Anthropic's first tier: 8,000 output tokens a minute (and 4,000 requests, so that requests
/// do not bind), enforced over a second, with `max_tokens` reserved at admission or not.
fn otpm_8000(reserve_output: bool) -> MockLimits {
    MockLimits {
        rpm: Some(4_000),
        otpm: Some(8_000),
        reserve_output,
        retry_after: RetryAfterHeader::Seconds,
        ..limits(None, None)
    }
}

/// Issue 26's case: Anthropic's output-token limit with a large `max_tokens`, reserved at
/// admission by the provider (its head tells the buckets with the reservation taken) and given
/// back when the answer ends. Runs 40 prompts answered at once, and returns the gaps between
/// consecutive admissions, the refusals and the requests sent. `window`: the provider's burst
/// window (its buckets hold that much of a minute's limit).
fn anthropic_output_reservations(
    reserve_output: bool,
    window: Duration,
) -> (Vec<Duration>, usize, usize) {
    let s = limited(MockLimits {
        window,
        ..otpm_8000(reserve_output)
    });
    let models = ["anthropic:haiku 3.5"];
    s.write("bench.yaml", &many_prompts(&models, 40, 4096));
    let out = s
        .track()
        .args(["run", "bench.yaml", "--no-detail", "--concurrency", "64"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(answered(&s), 40, "{stderr}");
    let admissions = s.mock.admissions();
    // In the order the limiter admitted them: the log is in the order the answers ended.
    let mut admitted: Vec<_> = admissions.iter().filter(|a| a.requests == 1).collect();
    admitted.sort_by_key(|a| a.at);
    assert_eq!(admitted.len(), 40);
    let gaps = admitted.windows(2).map(|w| w[1].at - w[0].at).collect();
    (gaps, s.mock.refused(), admissions.len())
}

#[test]
fn an_output_reservation_is_counted_once_and_given_back_when_its_answer_ends() {
    // The first call's reservation was taken from the bucket and never given back: a 31.7 s
    // wait at 8,000 OTPM after its head. Each is given back when its answer ends, and the
    // call waiting goes then. Both readings of the documentation: `max_tokens` reserved at
    // admission (2025), or only the tokens generated counted (2026); a provider enforcing
    // the limit over a second, or over the minute.
    let cases = [
        (true, Duration::from_secs(1)),
        (true, Duration::from_secs(60)),
        (false, Duration::from_secs(1)),
    ];
    for (reserve_output, window) in cases {
        let (gaps, refused, sent) = anthropic_output_reservations(reserve_output, window);
        let longest = gaps.iter().max().copied().unwrap_or_default();
        assert!(
            longest < Duration::from_secs(1),
            "reserve_output {reserve_output}, window {window:?}: a call waited {longest:?} \
             after the one before"
        );
        assert!(
            refused * 100 < sent,
            "reserve_output {reserve_output}, window {window:?}: {refused} of {sent} requests \
             refused"
        );
    }
}

#[test]
fn where_only_generated_output_counts_a_large_max_tokens_does_not_hold_calls_back() {
    // Answers take a second and use 6 of the 4,096 tokens they may. A provider counting only
    // the tokens generated (its head tells 8,000 left with a call in flight) lets many calls
    // run at once; reserving 4,096 from a bucket of 65, track sent them one at a time: 40 s.
    let s = Sandbox::with_mock(MockProvider::start_with(MockConfig {
        delay: Duration::from_secs(1),
        limits: Some(otpm_8000(false)),
        ..MockConfig::default()
    }));
    let models = ["anthropic:haiku 3.5"];
    // Two runs of 20 prompts each: the second knows the limits from the first (no first call
    // alone), and learns how output is counted from the head of its first call.
    for (run, numbers) in [(1, 0..20), (2, 20..40)] {
        let before = s.mock.requests().len();
        s.write("bench.yaml", &prompts_numbered(&models, numbers, 4096));
        let out = s
            .track()
            .args(["run", "bench.yaml", "--no-detail", "--concurrency", "64"])
            .output()
            .unwrap();
        assert!(out.status.success(), "run {run}: {}", text(&out.stderr));
        let requests: Vec<_> = s.mock.requests().into_iter().skip(before).collect();
        assert_eq!(requests.len(), 20, "run {run}: nothing refused");
        let streamed = requests
            .iter()
            .filter(|r| r.body["stream"] == serde_json::json!(true))
            .count();
        assert_eq!(streamed, 1, "run {run}: its first call alone streams");
        // Sent one at a time, a second's answer apart, 2 would arrive in the first 1.5 s.
        let first = requests[0].arrived;
        let early = requests
            .iter()
            .filter(|r| r.arrived < first + Duration::from_millis(1500))
            .count();
        assert!(
            early >= 10,
            "run {run}: {early} of 20 calls in the first 1.5 s"
        );
    }
    assert_eq!(answered(&s), 40);
    assert_eq!(s.mock.refused(), 0);
}

#[test]
fn a_server_without_headers_is_paced_by_rate_limit_in_config() {
    let s = limited(MockLimits {
        headers: false,
        ..limits(Some(2_400), None)
    });
    s.write(
        "config.yaml",
        "retry:\n  max_attempts: 4\n  base_delay: 10\n  max_delay: 200\ntimeout_secs: 10\n\
         models:\n  openai:gpt-4o:\n    rate_limit: {rpm: 2400}\n",
    );
    every_answer_with_few_refusals(&s, &["openai:gpt-4o"], 200, 50);
}

#[test]
fn two_processes_on_one_database_and_one_key_share_the_pace() {
    let s = limited(limits(Some(2_400), None));
    // Distinct prompts, so that both pay.
    s.write("a.yaml", &prompts_numbered(&["openai:gpt-4o"], 0..150, 50));
    s.write(
        "b.yaml",
        &prompts_numbered(&["openai:gpt-4o"], 150..300, 50),
    );
    let spawn = |file: &str| {
        s.track_process()
            .args(["run", file, "--no-detail", "--concurrency", "64", "-q"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("a.yaml"), spawn("b.yaml"));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    assert_eq!(answered(&s), 300);
    let (admitted, refused) = (s.mock.admitted(), s.mock.refused());
    assert_eq!(admitted, 300);
    // Paced apart, each to the whole limit, the two get some 40 % of their requests refused;
    // sharing the pace, none on an idle machine and up to 3 % on a loaded one (two processes
    // on two busy cores read and write the shared buckets late).
    assert!(
        refused * 10 < admitted + refused,
        "{refused} of {} requests refused",
        admitted + refused
    );
}

#[test]
fn shards_with_databases_of_their_own_split_one_keys_limits() {
    let run_shards = |pace: &[&str]| {
        let s = limited(limits(Some(2_400), None));
        s.write("bench.yaml", &many_prompts(&["openai:gpt-4o"], 300, 50));
        let spawn = |k: usize| {
            s.track_process()
                .args([
                    "run",
                    "bench.yaml",
                    "--no-detail",
                    "--concurrency",
                    "64",
                    "-q",
                ])
                .args([
                    "--shard",
                    &format!("{k}/2"),
                    "--db",
                    &format!("shard-{k}.db"),
                ])
                .args(pace)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(0), spawn(1));
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        assert_eq!(s.mock.admitted(), 300);
        (s.mock.refused(), s.mock.admitted())
    };
    // Each at half of the limit its headers tell: together within it.
    let (refused, admitted) = run_shards(&[]);
    assert!(
        refused * 10 < admitted + refused,
        "split: {refused} of {} requests refused",
        admitted + refused
    );
    // Each at the whole limit, as if each had a key of its own: the two overrun it.
    let (whole_refused, _) = run_shards(&["--shard-pace", "whole"]);
    eprintln!("refused: split {refused} of {admitted} admitted; whole {whole_refused}");
    assert!(
        whole_refused > refused,
        "whole: {whole_refused} refused, split: {refused}"
    );
}

/// The errors of the latest run, as `model_ref | error`.
fn run_errors(s: &Sandbox) -> Vec<(String, String)> {
    let db = s.db();
    let mut stmt = db
        .prepare(
            "SELECT model_ref, error FROM run_errors \
             WHERE run_id = (SELECT max(id) FROM runs) ORDER BY id",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Runs 60 prompts on `spent` (whose account refuses) and `fine`, at concurrency 16; checks
/// that `spent` got no more requests than the first and those in flight, that every one of
/// its calls is an error naming `cause` and `fix`, and that `fine` got every answer.
fn ends_the_model_at_once(
    s: &Sandbox,
    (spent, spent_id): (&str, &str),
    fine: &str,
    cause: &str,
    fix: &str,
) {
    s.write("bench.yaml", &many_prompts(&[spent, fine], 60, 50));
    let out = s
        .track()
        .args(["run", "bench.yaml", "--no-detail", "--concurrency", "16"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    let to_spent = s
        .mock
        .requests()
        .iter()
        .filter(|r| r.model() == Some(spent_id))
        .count();
    assert!(
        to_spent <= 16,
        "{to_spent} requests went to the spent model after the first refusal\n{stderr}"
    );
    let errors = run_errors(s);
    let of_spent: Vec<_> = errors.iter().filter(|(m, _)| m == spent).collect();
    assert_eq!(of_spent.len(), 60, "{errors:?}");
    for (_, error) in &of_spent {
        assert!(error.contains(cause) && error.contains(fix), "{error}");
    }
    assert!(errors.iter().all(|(m, _)| m == spent), "{errors:?}");
    assert_eq!(
        answered(s),
        60,
        "the other model got every answer\n{stderr}"
    );
    assert!(stderr.contains(fix), "{stderr}");
}

#[test]
fn a_spent_openai_quota_ends_that_models_calls_at_once() {
    let s = Sandbox::new();
    s.mock
        .add_rule(Rule::for_model("gpt-4o", Action::QuotaExhausted));
    ends_the_model_at_once(
        &s,
        ("openai:gpt-4o", "gpt-4o"),
        "openai:gpt-4o-mini",
        "quota is spent (insufficient_quota)",
        "add credit or use another key",
    );
}

#[test]
fn a_request_larger_than_the_whole_limit_ends_that_models_calls() {
    let s = Sandbox::with_mock(MockProvider::start_with(MockConfig {
        model_limits: vec![("gpt-4o".into(), limits(None, Some(40)))],
        ..MockConfig::default()
    }));
    ends_the_model_at_once(
        &s,
        ("openai:gpt-4o", "gpt-4o"),
        "openai:gpt-4o-mini",
        "more than openai's whole limit of 40 tokens a minute",
        "lower max_tokens",
    );
}

#[test]
fn anthropics_spend_cap_and_usage_limit_end_that_models_calls() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::for_model(
        "claude-3-5-haiku-20241022",
        Action::QuotaExhausted,
    ));
    ends_the_model_at_once(
        &s,
        ("anthropic:haiku 3.5", "claude-3-5-haiku-20241022"),
        "openai:gpt-4o-mini",
        "enforced_spend_limit_reached",
        "raise it in the console or use another key",
    );
    let s = Sandbox::new();
    s.mock.add_rule(Rule::for_model(
        "claude-3-5-haiku-20241022",
        Action::UsageLimit,
    ));
    ends_the_model_at_once(
        &s,
        ("anthropic:haiku 3.5", "claude-3-5-haiku-20241022"),
        "openai:gpt-4o-mini",
        "usage limit set for it",
        "raise it in the console or use another key",
    );
}

#[test]
fn a_budget_caps_what_the_provider_bills_and_a_larger_one_finishes_from_the_cache() {
    // The mock bills at the catalog's prices of gpt-4o.
    let s = Sandbox::with_mock(MockProvider::start_with(MockConfig {
        prices: vec![("gpt-4o".into(), 2.5, 10.0)],
        ..MockConfig::default()
    }));
    s.write("bench.yaml", &many_prompts(&["openai:gpt-4o"], 60, 100));
    // Each call's worst case is about $0.0011 (100 output tokens at $10/M and its input);
    // each answer is billed about $0.0001: a budget of $0.003 holds some 20 of 60.
    let budget = 0.003;
    let out = s
        .track()
        .args(["run", "bench.yaml", "--no-detail", "--concurrency", "16"])
        .args(["--budget", &budget.to_string()])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let billed = s.mock.billed_usd();
    assert!(billed <= budget, "billed ${billed} over a ${budget} budget");
    let first = s.mock.ledger().len();
    assert!((10..60).contains(&first), "{first} answers\n{stderr}");
    assert!(stderr.contains("budget"), "{stderr}");
    let status: String = s
        .db()
        .query_row(
            "SELECT status FROM runs ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(status, "budget");
    // A larger budget finishes it, paying only for the rest.
    s.track()
        .args([
            "run",
            "bench.yaml",
            "--no-detail",
            "--concurrency",
            "16",
            "--budget",
            "1",
        ])
        .assert()
        .success();
    let ledger = s.mock.ledger();
    assert_eq!(ledger.len(), 60, "each prompt billed once");
    assert_eq!(answered(&s), 60);
}
