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

// ----------------------------------------------------------------------------------- JUnit

/// The reply that makes gpt-4o fail q1: every character XML must escape, and a control
/// character XML 1.0 cannot hold at all.
const NASTY: &str = "a < b & \"c\" 'd' \u{1b}[31m>";

/// A run with a passed case, a failed one whose reason needs escaping, and an error row,
/// exported as JUnit to `junit.xml`; returns the file's text.
fn junit_export(s: &Sandbox) -> String {
    s.mock.clear_rules();
    s.mock
        .add_rule(Rule::reply("Question 1?", NASTY).model("gpt-4o"));
    s.mock
        .add_rule(Rule::fail("Question 2?", 400, 1000).model("gpt-4o"));
    for (_, prompt, output) in prompts() {
        s.mock.add_rule(Rule::reply(&prompt, &output));
    }
    track(s, &["run", "bench.yaml", "-q"]);
    let out = track(s, &["export", "junit", "--out", "reports/junit.xml"]);
    assert_code(&out, 0, "export junit");
    assert!(
        text(&out.stderr).contains(
            "wrote 8 test cases (6 passes, 1 failure, 1 error) of bench run 1 to \
             reports/junit.xml"
        ),
        "{}",
        text(&out.stderr)
    );
    std::fs::read_to_string(s.path("reports/junit.xml")).unwrap()
}

#[test]
fn junit_has_a_testcase_per_result_with_failures_and_errors_and_their_reasons() {
    let s = sandbox("");
    let xml = junit_export(&s);
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        (
            root.attribute("tests"),
            root.attribute("failures"),
            root.attribute("errors")
        ),
        (Some("8"), Some("1"), Some("1"))
    );
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 1);
    assert_eq!(suites[0].attribute("name"), Some("bench.yaml (run 1)"));
    let cases: Vec<_> = suites[0]
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let names: Vec<(&str, &str)> = cases
        .iter()
        .map(|c| {
            (
                c.attribute("classname").unwrap(),
                c.attribute("name").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("openai:gpt-4o", "q0"),
            ("openai:gpt-4o", "q1"),
            ("openai:gpt-4o", "q2"),
            ("openai:gpt-4o", "q3"),
            ("anthropic:sonnet 3.5", "q0"),
            ("anthropic:sonnet 3.5", "q1"),
            ("anthropic:sonnet 3.5", "q2"),
            ("anthropic:sonnet 3.5", "q3"),
        ]
    );
    // Each time is the result's latency, in seconds.
    let latency: f64 = s
        .db()
        .query_row(
            "SELECT latency_ms FROM bench_results WHERE model_index = 0 AND prompt_index = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        cases[0].attribute("time"),
        Some(format!("{:.3}", latency / 1000.0).as_str())
    );
    let failure = cases[1]
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("q1 failed");
    assert_eq!(failure.attribute("type"), Some("exact"));
    // Read back, the reason is the reply's text, its control character spelled out.
    let shown = NASTY.replace('\u{1b}', "\\u001b");
    let message = failure.attribute("message").unwrap();
    assert!(message.contains(&shown), "{message}");
    assert!(failure.text().unwrap().contains(&shown), "{xml}");
    let error = cases[2]
        .children()
        .find(|n| n.has_tag_name("error"))
        .expect("q2 is an error row");
    assert!(error.attribute("message").unwrap().contains("400"), "{xml}");
    assert!(
        cases
            .iter()
            .enumerate()
            .filter(|(i, _)| ![1, 2].contains(i))
            .all(|(_, c)| c.children().all(|n| !n.is_element())),
        "passed cases have no child: {xml}"
    );
}

#[test]
#[ignore = "needs xmllint (bash .ci/xmllint.sh install): run with --include-ignored (README)"]
fn junit_is_valid_against_the_jenkins_ant_schema() {
    let s = sandbox("");
    junit_export(&s);
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/junit/junit-10.xsd");
    let out = std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&schema)
        .arg(s.path("reports/junit.xml"))
        .output()
        .expect("xmllint (bash .ci/xmllint.sh install)");
    assert!(
        out.status.success() && text(&out.stderr).contains("validates"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

// -------------------------------------------------------------------------------- Markdown

/// The rows of a Markdown table in `text` whose first cell is `first`, each as its cells.
fn markdown_rows<'a>(text: &'a str, first: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .filter(|l| l.starts_with("| "))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(str::trim)
                .collect::<Vec<_>>()
        })
        .filter(|cells| cells.first() == Some(&first))
        .collect()
}

#[test]
fn query_and_runs_print_markdown_tables() {
    let s = sandbox("");
    assert_code(&track(&s, &["run", "bench.yaml", "-q"]), 0, "the run");
    let out = track(&s, &["query", "--by", "model", "--format", "markdown"]);
    assert_code(&out, 0, "query --format markdown");
    let md = text(&out.stdout);
    let mut lines = md.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("| model | "), "{md}");
    let rule = lines.next().unwrap();
    assert_eq!(
        rule.matches('|').count(),
        header.matches('|').count(),
        "one rule per column: {md}"
    );
    assert!(rule.starts_with("|---|") && rule.contains("---:"), "{md}");
    let headers: Vec<&str> = header
        .trim_matches('|')
        .split(" | ")
        .map(str::trim)
        .collect();
    let pct = headers
        .iter()
        .position(|h| *h == "success %")
        .expect(header);
    let gpt = &markdown_rows(&md, "openai:gpt-4o")[0];
    let sonnet = &markdown_rows(&md, "anthropic:sonnet 3.5")[0];
    assert_eq!((gpt[pct], sonnet[pct]), ("100.0", "50.0"), "{md}");

    let out = track(&s, &["runs", "--format", "markdown"]);
    assert_code(&out, 0, "runs --format markdown");
    let md = text(&out.stdout);
    assert!(md.starts_with("| id | "), "{md}");
    let run = &markdown_rows(&md, "1")[0];
    assert!(run.contains(&"bench"), "{md}");
    assert!(run.contains(&"completed"), "{md}");
}

/// Twelve prompts whose names need escaping in a cell (`q|00`…), expecting `answer-NN`.
fn twelve() -> Vec<(String, String, String)> {
    (0..12)
        .map(|i| {
            (
                format!("q|{i:02}"),
                format!("What is item {i:02}?"),
                format!("answer-{i:02}"),
            )
        })
        .collect()
}

#[test]
fn a_regression_exits_3_and_the_markdown_diff_puts_it_first() {
    let s = Sandbox::new();
    let prompts = twelve();
    let listed: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p, o)| (n.as_str(), p.as_str(), o.as_str(), "exact"))
        .collect();
    // gpt-4o is listed first and does not change; sonnet regresses on every prompt.
    s.write("bench.yaml", &bench_yaml(&MODELS, &listed));
    for (_, prompt, output) in &prompts {
        s.mock.add_rule(Rule::reply(prompt, output));
    }
    assert_code(&track(&s, &["run", "bench.yaml", "-q"]), 0, "run 1");
    s.mock.clear_rules();
    for (_, prompt, output) in &prompts {
        s.mock
            .add_rule(Rule::reply(prompt, "no idea").model(SONNET_ID));
        s.mock.add_rule(Rule::reply(prompt, output));
    }
    assert_code(
        &track(&s, &["run", "bench.yaml", "-q", "--no-cache"]),
        0,
        "run 2",
    );

    let out = track(
        &s,
        &[
            "diff",
            "1",
            "2",
            "--fail-on-regression",
            "--format",
            "markdown",
        ],
    );
    assert_code(&out, 3, "a significant regression");
    let md = text(&out.stdout);
    assert!(md.starts_with("### track diff 1 2\n"), "{md}");
    let regressions = md.find("**1 significant regression:**").expect(&md);
    let named = md
        .find("- anthropic:sonnet 3.5: success 100.0 % → 0.0 %")
        .expect(&md);
    let summary = md.find("#### ").expect(&md);
    assert!(
        regressions < named && named < summary,
        "regressions first: {md}"
    );
    // In the summary, sonnet's row comes before gpt-4o's, though the file lists it second.
    let sonnet = md.find("| anthropic:sonnet 3.5 |").expect(&md);
    let gpt = md.find("| openai:gpt-4o |").expect(&md);
    assert!(sonnet < gpt, "{md}");
    // A `|` in a cell is escaped: every row of a table has as many cells as its header.
    assert!(md.contains("q\\|00"), "{md}");
    for table in md.split("\n\n").filter(|b| b.starts_with("| ")) {
        let cells = |line: &str| line.replace("\\|", "").matches('|').count();
        let width = cells(table.lines().next().unwrap());
        assert!(table.lines().all(|l| cells(l) == width), "{table}");
    }
    // The stderr line names the exit status, as for the other formats.
    assert!(
        text(&out.stderr).contains("exit status 3: 1 significant regression"),
        "{}",
        text(&out.stderr)
    );
}
