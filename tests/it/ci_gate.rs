//! A gate for CI, end to end: `--fail-under` and `--fail-on-errors` on `track run` and `track
//! query` (exit status 3 below the bar, each miss named on stderr; 0 at or over it; an
//! interrupted run keeps 130, bad input 2), `track diff --fail-on-regression` (3), `track export
//! junit`, and `--format markdown`.

use std::process::Output;

use crate::support::mock::{Hold, Rule};
use crate::support::{Sandbox, bench_yaml, text};

const MODELS: [&str; 2] = ["openai:gpt-4o", "anthropic:sonnet 3.5"];
/// The model id the mock sees for `anthropic:sonnet 3.5`.
const SONNET_ID: &str = "claude-3-5-sonnet-20241022";

/// Four prompts `Question N?` expecting `answer N`.
fn prompts() -> Vec<(String, String, String)> {
    (0..4)
        .map(|i| {
            (
                format!("q{i}"),
                format!("Question {i}?"),
                format!("answer {i}"),
            )
        })
        .collect()
}

/// A sandbox whose benchmark (`bench.yaml`, with `extra` keys on top) has gpt-4o answer all
/// four prompts right and sonnet the first two only: 100 % and 50 %, 75 % overall.
fn sandbox(extra: &str) -> Sandbox {
    let s = Sandbox::new();
    for (i, (_, prompt, output)) in prompts().iter().enumerate() {
        if i >= 2 {
            s.mock
                .add_rule(Rule::reply(prompt, "no idea").model(SONNET_ID));
        }
        s.mock.add_rule(Rule::reply(prompt, output));
    }
    write_bench(&s, extra);
    s
}

fn write_bench(s: &Sandbox, extra: &str) {
    let prompts = prompts();
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p, o)| (n.as_str(), p.as_str(), o.as_str(), "exact"))
        .collect();
    s.write(
        "bench.yaml",
        &format!("{extra}{}", bench_yaml(&MODELS, &prompts)),
    );
}

fn track(s: &Sandbox, args: &[&str]) -> Output {
    s.track().args(args).output().unwrap()
}

/// Asserts `out` ended with `code`, showing its stderr when not.
fn assert_code(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn a_model_under_the_bar_exits_3_naming_it_with_its_rate_and_the_bar() {
    let s = sandbox("");
    let out = track(&s, &["run", "bench.yaml", "-q", "--fail-under", "60"]);
    assert_code(&out, 3, "sonnet at 50 % is under 60");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "track: below the bar: anthropic:sonnet 3.5: pass rate 50.0 % (2 of 4), under the \
             bar of 60 % (--fail-under 60)"
        ) && stderr.contains("track: exit status 3: below the bar (1 miss)"),
        "{stderr}"
    );
    assert!(!stderr.contains("openai:gpt-4o: pass rate"), "{stderr}");
    // The results are recorded and printed as without a bar.
    assert!(text(&out.stdout).contains("anthropic:sonnet 3.5"));
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 1"),
        8
    );
    // At the bar is not under it; without a bar the run passes whatever its rate.
    let out = track(&s, &["run", "bench.yaml", "-q", "--fail-under", "50"]);
    assert_code(&out, 0, "sonnet at 50 % meets 50");
    assert_code(&track(&s, &["run", "bench.yaml", "-q"]), 0, "no bar");
    assert_eq!(
        s.mock.request_count(),
        8,
        "later runs are served from the cache"
    );
}

#[test]
fn an_overall_bar_pools_every_model_s_results() {
    let s = sandbox("");
    let out = track(
        &s,
        &["run", "bench.yaml", "-q", "--fail-under", "overall:70"],
    );
    assert_code(&out, 0, "75 % overall meets 70");
    let out = track(
        &s,
        &["run", "bench.yaml", "-q", "--fail-under", "overall:80"],
    );
    assert_code(&out, 3, "75 % overall is under 80");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "below the bar: all models together: pass rate 75.0 % (6 of 8), under the bar of \
             80 % (--fail-under overall:80)"
        ),
        "{stderr}"
    );
}

#[test]
fn the_file_sets_the_bar_and_the_flag_overrides_it() {
    let s = sandbox("fail_under: 60\n");
    assert_code(
        &track(&s, &["run", "bench.yaml", "-q"]),
        3,
        "the file's bar of 60",
    );
    assert_code(
        &track(&s, &["run", "bench.yaml", "-q", "--fail-under", "40"]),
        0,
        "--fail-under 40 over the file's 60",
    );
    write_bench(&s, "fail_under: overall:90\n");
    assert_code(&track(&s, &["run", "bench.yaml", "-q"]), 3, "overall:90");
    // A bad bar in the file is bad input, named with the fix, before anything is sent.
    write_bench(&s, "fail_under: most\n");
    let sent = s.mock.request_count();
    let out = track(&s, &["run", "bench.yaml", "-q"]);
    assert_code(&out, 2, "a bad fail_under:");
    assert!(
        text(&out.stderr).contains("`fail_under:` `most` is not a pass rate"),
        "{}",
        text(&out.stderr)
    );
    write_bench(&s, "fail_on_errors: sometimes\n");
    let out = track(&s, &["run", "bench.yaml", "-q"]);
    assert_code(&out, 2, "a bad fail_on_errors:");
    assert!(
        text(&out.stderr).contains("`fail_on_errors: \"sometimes\"` must be true"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(s.mock.request_count(), sent);
}

#[test]
fn error_rows_exit_3_only_with_fail_on_errors() {
    let s = sandbox("");
    // gpt-4o's call on q3 fails for good: an error row, left out of its pass rate.
    s.mock.clear_rules();
    s.mock
        .add_rule(Rule::fail("Question 3?", 400, 1000).model("gpt-4o"));
    for (_, prompt, output) in prompts() {
        s.mock.add_rule(Rule::reply(&prompt, &output));
    }
    let out = track(&s, &["run", "bench.yaml", "-q"]);
    assert_code(&out, 0, "errors are results");
    let out = track(&s, &["run", "bench.yaml", "-q", "--fail-on-errors"]);
    assert_code(&out, 3, "an error row under --fail-on-errors");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("below the bar: openai:gpt-4o: 1 error row (--fail-on-errors)"),
        "{stderr}"
    );
    assert!(!stderr.contains("sonnet"), "{stderr}");
    // The file can ask the same.
    write_bench(&s, "fail_on_errors: true\n");
    assert_code(
        &track(&s, &["run", "bench.yaml", "-q"]),
        3,
        "fail_on_errors: true",
    );
    // Errors are left out of the rate: 3 of 3 answered is 100 %.
    let out = track(&s, &["run", "bench.yaml", "-q", "--fail-under", "100"]);
    assert_code(&out, 3, "fail_on_errors: true stays with --fail-under");
    assert!(
        !text(&out.stderr).contains("pass rate"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn query_holds_recorded_runs_to_the_bar() {
    let s = sandbox("");
    assert_code(&track(&s, &["run", "bench.yaml", "-q"]), 0, "the run");
    let out = track(
        &s,
        &[
            "query",
            "--by",
            "model",
            "--format",
            "csv",
            "--fail-under",
            "60",
        ],
    );
    assert_code(&out, 3, "query under the bar");
    assert!(
        text(&out.stdout).contains("anthropic:sonnet 3.5"),
        "the summary still prints"
    );
    assert!(
        text(&out.stderr).contains("anthropic:sonnet 3.5: pass rate 50.0 % (2 of 4)"),
        "{}",
        text(&out.stderr)
    );
    let out = track(
        &s,
        &["query", "--by", "model", "--fail-under", "overall:75"],
    );
    assert_code(&out, 0, "query at the overall bar");
    let out = track(&s, &["query", "--by", "model", "--fail-on-errors"]);
    assert_code(&out, 0, "no error row");
}

#[test]
fn an_interrupted_run_and_bad_input_keep_their_own_statuses() {
    let s = sandbox("").patient();
    s.mock.hold(Hold::From(2));
    let run = s.start(&[
        "run",
        "bench.yaml",
        "-q",
        "--concurrency",
        "1",
        "--fail-under",
        "100",
    ]);
    s.mock.wait_held(1);
    run.signal("INT");
    run.wait_for_stderr("INT received: sending no more calls");
    s.mock.release();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(!stderr.contains("below the bar"), "{stderr}");

    let out = track(&s, &["run", "bench.yaml", "--fail-under", "120"]);
    assert_code(&out, 2, "a bar over 100");
    assert!(
        text(&out.stderr).contains("`120` is not a pass rate"),
        "{}",
        text(&out.stderr)
    );
    // A kind without a pass rate refuses the bar before anything is sent.
    crate::support::synth_blocks(&s, 3, "blocks");
    s.write(
        "relevance.yaml",
        "kind: relevance\nmodel: openai:gpt-4o\nimages: \"blocks/state_*.png\"\nground_truth: \
         blocks/ground_truth.json\nout: rel\n",
    );
    let sent = s.mock.request_count();
    let out = track(&s, &["run", "relevance.yaml", "--fail-under", "80"]);
    assert_code(&out, 2, "--fail-under on a relevance run");
    assert!(
        text(&out.stderr).contains("only benchmarks have"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(s.mock.request_count(), sent);
}
