//! `track diff` end to end: two runs against the mock, some answers changed in between, and
//! the diff must find exactly those changes, for benchmarks, reviews and relevance.

use serde_json::Value;

use crate::support::mock::{Hold, Rule};
use crate::support::{Sandbox, bench_yaml, synth_blocks, text};

const MODEL: &str = "openai:gpt-4o";

/// Twelve prompts `item 00`..`item 11`, each expecting `answer-NN` exactly.
fn twelve_prompts() -> Vec<(String, String, String)> {
    (0..12)
        .map(|i| {
            (
                format!("q{i:02}"),
                format!("What is item {i:02}?"),
                format!("answer-{i:02}"),
            )
        })
        .collect()
}

fn write_bench(s: &Sandbox, file: &str, prompts: &[(String, String, String)]) {
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p, o)| (n.as_str(), p.as_str(), o.as_str(), "exact"))
        .collect();
    s.write(file, &bench_yaml(&[MODEL], &prompts));
}

/// Scripts the mock: every prompt answered right, except `wrong` (answered wrong) and
/// `failing` (a 400, so an error).
fn script(s: &Sandbox, wrong: &[usize], failing: &[usize]) {
    s.mock.clear_rules();
    for i in failing {
        s.mock
            .add_rule(Rule::fail(&format!("item {i:02}"), 400, 1000));
    }
    for i in 0..12 {
        let answer = if wrong.contains(&i) {
            "no idea".to_owned()
        } else {
            format!("answer-{i:02}")
        };
        s.mock
            .add_rule(Rule::reply(&format!("item {i:02}"), &answer));
    }
}

/// Runs a benchmark file afresh. A run with errors exits non-zero by design, so its status
/// is not checked: the diff is what is under test.
fn run_bench(s: &Sandbox, file: &str) {
    s.track()
        .args(["run", file, "--no-cache", "-q"])
        .output()
        .unwrap();
}

fn diff_json(s: &Sandbox, args: &[&str]) -> Value {
    let out = s.track().arg("diff").args(args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

/// The values of `key` of the rows whose `column` is `value`.
fn rows_where(rows: &Value, column: &str, value: &str, key: &str) -> Vec<String> {
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r[column] == value)
        .map(|r| r[key].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_benchmark_diff_finds_exactly_the_changed_answers() {
    let s = Sandbox::new();
    write_bench(&s, "bench.yaml", &twelve_prompts());
    script(&s, &[10, 11], &[]);
    run_bench(&s, "bench.yaml");
    // Run 2: 00 and 01 now wrong, 10 now right, 05 now an error, 11 still wrong.
    script(&s, &[0, 1, 11], &[5]);
    run_bench(&s, "bench.yaml");

    let items = diff_json(&s, &["1", "2", "--items", "--format", "json"]);
    assert_eq!(items.as_array().unwrap().len(), 12);
    assert_eq!(
        rows_where(&items, "change", "regression", "case"),
        ["q00", "q01"]
    );
    assert_eq!(rows_where(&items, "change", "fix", "case"), ["q10"]);
    assert_eq!(rows_where(&items, "change", "new_error", "case"), ["q05"]);
    assert_eq!(rows_where(&items, "change", "unchanged", "case").len(), 8);
    let q00 = &items[0];
    assert_eq!(
        (&q00["base_status"], &q00["new_status"], &q00["only_in"]),
        (&Value::from("passed"), &Value::from("failed"), &Value::Null)
    );
    assert!(q00["delta_cost_usd"].is_number() && q00["delta_tokens"].is_number());

    let summary = diff_json(&s, &["1", "2", "--format", "json"]);
    let model = &summary[0];
    assert_eq!(model["model"], MODEL);
    assert_eq!(
        (
            &model["shared"],
            &model["paired"],
            &model["regressions"],
            &model["fixes"]
        ),
        (
            &Value::from(12),
            &Value::from(11),
            &Value::from(2),
            &Value::from(1)
        )
    );
    assert_eq!(model["new_errors"], 1);
    assert_eq!(model["p_value"], 1.0, "2 against 1 is noise");
    assert_eq!(model["significant_regression"], false);

    // The table: the headline, the summary, the changes, regressions first.
    let out = s.track().args(["diff", "1", "latest"]).output().unwrap();
    let table = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        table.starts_with(
            "run 1 → run 2 (benchmark): 12 items shared, 2 regressions, 1 fix, 1 new error; \
             0 only in run 1, 0 only in run 2\nno significant regression\n"
        ),
        "{table}"
    );
    let changes = table.split("Changed items").nth(1).unwrap_or_default();
    let q00 = changes.find("q00").unwrap();
    assert!(q00 < changes.find("q05").unwrap() && q00 < changes.find("q10").unwrap());
    assert!(
        !changes.contains("q03"),
        "unchanged items are not listed: {table}"
    );

    // `track report --run 1,2` shows the same comparison as a section.
    s.track()
        .args(["report", "--run", "1,2", "--out", "pair.html"])
        .assert()
        .success();
    let html = std::fs::read_to_string(s.path("pair.html")).unwrap();
    let section = html
        .split("<section id=\"comparison\"")
        .nth(1)
        .expect("a comparison section")
        .split("</section>")
        .next()
        .unwrap();
    assert!(
        section.contains(
            "run 1 → run 2 (benchmark): 12 items shared, 2 regressions, 1 fix, 1 new error; \
             0 only in run 1, 0 only in run 2"
        ),
        "{section}"
    );
    assert!(
        section.contains("No regression is significant"),
        "{section}"
    );
    let changed = section
        .split("id=\"comparison-changes\"")
        .nth(1)
        .expect("the changed items");
    assert_eq!(changed.matches(">regression<").count(), 2, "{changed}");
    assert_eq!(changed.matches(">fix<").count(), 1, "{changed}");
    let csv = s
        .track()
        .args(["diff", "1", "2", "--items", "--format", "csv"])
        .output()
        .unwrap();
    assert!(
        text(&csv.stdout)
            .starts_with("model,template,case,repeat,change,only_in,base_status,new_status,"),
        "{}",
        text(&csv.stdout)
    );
}

#[test]
fn fail_on_regression_exits_1_only_when_the_drop_is_significant() {
    let s = Sandbox::new();
    write_bench(&s, "bench.yaml", &twelve_prompts());
    script(&s, &[], &[]);
    run_bench(&s, "bench.yaml");
    script(&s, &[3], &[]);
    run_bench(&s, "bench.yaml");
    let all: Vec<usize> = (0..12).collect();
    script(&s, &all, &[]);
    run_bench(&s, "bench.yaml");

    // One flip out of twelve: noise.
    s.track()
        .args(["diff", "1", "2", "--fail-on-regression"])
        .assert()
        .code(0);
    // Twelve flips: McNemar p = 2 / 2^12.
    let out = s
        .track()
        .args(["diff", "1", "3", "--fail-on-regression", "--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("significant regression: openai:gpt-4o: success 100.0 % → 0.0 %")
            && stderr.contains("exit status 3: 1 significant regression"),
        "{stderr}"
    );
    let csv = text(&out.stdout);
    assert!(csv.contains(",true,"), "the summary still prints: {csv}");
    // Without the flag the same diff exits 0, and the table names the regression.
    let out = s.track().args(["diff", "1", "3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("significant regression: openai:gpt-4o"),
        "{}",
        text(&out.stdout)
    );
    // Fixes are never a regression, however many.
    s.track()
        .args(["diff", "3", "1", "--fail-on-regression"])
        .assert()
        .code(0);
}

#[test]
fn items_in_one_run_only_are_counted_and_listed() {
    let s = Sandbox::new();
    let prompts = twelve_prompts();
    write_bench(&s, "first.yaml", &prompts[0..3]);
    write_bench(&s, "second.yaml", &prompts[1..4]);
    script(&s, &[], &[]);
    run_bench(&s, "first.yaml");
    run_bench(&s, "second.yaml");
    let items = diff_json(&s, &["1", "2", "--items", "--format", "json"]);
    assert_eq!(rows_where(&items, "only_in", "base", "case"), ["q00"]);
    assert_eq!(rows_where(&items, "only_in", "new", "case"), ["q03"]);
    assert_eq!(
        rows_where(&items, "change", "unchanged", "case"),
        ["q01", "q02"]
    );
    let only = items
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case"] == "q03")
        .unwrap();
    assert_eq!(
        (&only["change"], &only["base_status"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(only["new_status"], "passed");

    let out = s.track().args(["diff", "1", "2"]).output().unwrap();
    let table = text(&out.stdout);
    assert!(
        table.contains(
            "2 items shared, 0 regressions, 0 fixes, 0 new errors; 1 only in run 1, 1 only in run 2"
        ),
        "{table}"
    );
    let only_section = table.split("Only in one run").nth(1).unwrap_or_default();
    assert!(
        only_section.contains("q00") && only_section.contains("q03"),
        "{table}"
    );
    let summary = diff_json(&s, &["1", "2", "--format", "json"]);
    assert_eq!(
        (&summary[0]["only_in_base"], &summary[0]["only_in_new"]),
        (&Value::from(1), &Value::from(1))
    );
}

#[test]
fn a_run_that_did_not_complete_gets_a_warning() {
    let s = Sandbox::new().patient();
    write_bench(&s, "bench.yaml", &twelve_prompts());
    script(&s, &[], &[]);
    run_bench(&s, "bench.yaml");
    // Run 2 is killed while its second call is out.
    s.mock.hold(Hold::From(s.mock.request_count() + 2));
    let mut run = s.start(&[
        "run",
        "bench.yaml",
        "--no-cache",
        "-q",
        "--concurrency",
        "1",
    ]);
    s.mock.wait_held(1);
    run.kill(); // no chance to mark the run: it shows as abandoned
    s.mock.release();
    let out = s.track().args(["diff", "1", "2"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("warning: run 2 is abandoned"), "{stderr}");
    assert!(
        text(&out.stdout).contains("only in run 1, 0 only in run 2"),
        "what run 2 did not record is only in run 1: {}",
        text(&out.stdout)
    );
}

#[test]
fn runs_of_different_kinds_or_missing_runs_are_refused() {
    let s = relevance_sandbox(2);
    write_bench(&s, "bench.yaml", &twelve_prompts()[..1]);
    script(&s, &[], &[]);
    run_bench(&s, "bench.yaml");
    compare(&s, &[]);
    let out = s.track().args(["diff", "1", "2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "trouble, not a regression");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("run 1 is a benchmark run and run 2 a relevance run"),
        "{stderr}"
    );
    let out = s.track().args(["diff", "1", "7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no run 7") && stderr.contains("`track runs`"),
        "{stderr}"
    );
    let out = s.track().args(["diff", "1", "all"]).output().unwrap();
    assert!(text(&out.stderr).contains("use a run id or `latest`"));
}

/// A reviewer's answer: `score` for every criterion and overall.
fn review_answer(score: u8) -> String {
    let mut parts: Vec<String> = (1..=16)
        .flat_map(|i| {
            [
                format!("\"p{i}_score\": {score}"),
                format!("\"p{i}_justification\": \"ok\""),
            ]
        })
        .collect();
    parts.push(format!("\"overall_score\": {score}"));
    parts.push("\"overall_justification\": \"ok\"".into());
    format!("{{{}}}", parts.join(", "))
}

#[test]
fn a_review_diff_shows_a_lower_score_as_a_negative_delta() {
    let s = Sandbox::new();
    let mut sensors = String::from("Brand,Sensor,Category\n");
    for i in 0..6 {
        sensors.push_str(&format!("Acme,S{i},test\n"));
        s.write(
            &format!("datasheet/Acme_S{i}.md"),
            &format!("official S{i}"),
        );
        s.write(
            &format!("results/Acme/S{i}/openai_gpt-4o_20250504_03080{i}.md"),
            &format!("generated text of S{i}"),
        );
    }
    s.write("data/sensors.csv", &sensors);
    let review = |s: &Sandbox| {
        let out = s
            .track()
            .args([
                "review-datasheets",
                "--reviewer",
                "openai:gpt-4o-mini",
                "--no-cache",
                "-q",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    s.mock
        .add_rule(Rule::reply("generated text of", &review_answer(4)));
    review(&s);
    // Every datasheet now scores 2 but S0 (still 4).
    s.mock.clear_rules();
    s.mock
        .add_rule(Rule::reply("generated text of S0", &review_answer(4)));
    s.mock
        .add_rule(Rule::reply("generated text of", &review_answer(2)));
    review(&s);

    let summary = diff_json(&s, &["1", "2", "--format", "json"]);
    let rows = summary.as_array().unwrap();
    assert_eq!(rows.len(), 17, "P1-P16 and Overall of one generator");
    let p1 = &rows[0];
    assert_eq!(
        (&p1["criterion"], &p1["generator"]),
        (&Value::from("P1"), &Value::from("openai:gpt-4o"))
    );
    assert_eq!(p1["paired"], 6);
    assert_eq!(p1["base_mean_score"], 4.0);
    let new_mean = p1["new_mean_score"].as_f64().unwrap();
    assert!(
        (new_mean - 14.0 / 6.0).abs() < 1e-9,
        "S0 still 4, five at 2: {p1}"
    );
    assert!(p1["delta_mean_score"].as_f64().unwrap() < 0.0);
    assert!(p1["delta_high"].as_f64().unwrap() < 0.0, "{p1}");
    assert_eq!(p1["significant_regression"], true);
    assert_eq!(rows[16]["criterion"], "Overall");

    let items = diff_json(&s, &["1", "2", "--items", "--format", "json"]);
    assert_eq!(items.as_array().unwrap().len(), 6 * 17);
    let lower = rows_where(&items, "change", "lower", "sensor");
    assert_eq!(lower.len(), 5 * 17);
    assert!(!lower.contains(&"Acme S0".to_owned()), "{lower:?}");
    s.track()
        .args(["diff", "1", "2", "--fail-on-regression", "-q"])
        .assert()
        .code(3);
    // The other way round the scores rise.
    let back = diff_json(&s, &["2", "1", "--format", "json"]);
    assert!(back[0]["delta_mean_score"].as_f64().unwrap() > 0.0);
}

const WITH_RIGHT: &str = r#"{"clear(red:block)": 2, "clear(blue:block)": 0, "on(red:block,blue:block)": 2, "holding(red:block)": 1}"#;
const WITHOUT_RIGHT: &str = r#"{"clear(red:block)": 2, "clear(blue:block)": 0, "on(red:block,blue:block)": 2, "holding(red:block)": 0}"#;

/// `states` synthetic images whose truth is the same hand-made one: red on blue.
fn relevance_sandbox(states: usize) -> Sandbox {
    let s = Sandbox::new();
    synth_blocks(&s, states, "blocks");
    let truth: Vec<String> = (0..states)
        .map(|i| {
            format!(
                "\"state_{i:04}\": {{\"clear(red:block)\": 1, \"clear(blue:block)\": 0, \
                 \"on(red:block,blue:block)\": 1, \"holding(red:block)\": 0}}"
            )
        })
        .collect();
    s.write("truth.json", &format!("{{{}}}", truth.join(", ")));
    s
}

/// Scripts the WITH and WITHOUT answers (`with` replaces the right WITH answer), then runs a
/// comparison.
fn compare(s: &Sandbox, with: &[(&str, &str)]) {
    let mut with_reply = WITH_RIGHT.to_owned();
    for (from, to) in with {
        with_reply = with_reply.replace(from, to);
    }
    s.mock.clear_rules();
    s.mock
        .add_rule(Rule::reply("Use 1 whenever you are uncertain", &with_reply));
    s.mock
        .add_rule(Rule::reply("Do not use score 1", WITHOUT_RIGHT));
    let out = s
        .track()
        .args([
            "relevance",
            "compare",
            "--model",
            MODEL,
            "--images",
            "blocks/state_*.png",
            "--ground-truth",
            "truth.json",
            "--out",
            "out",
            "--no-cache",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_relevance_diff_shows_a_wrong_answer_as_a_drop_in_recall() {
    let s = relevance_sandbox(6);
    compare(&s, &[]);
    // WITH now denies clear(red), which is true: one false negative per image.
    compare(
        &s,
        &[(r#""clear(red:block)": 2"#, r#""clear(red:block)": 0"#)],
    );

    let summary = diff_json(&s, &["1", "2", "--format", "json"]);
    let row = |variant: &str, class: &str, metric: &str| -> Value {
        summary
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["variant"] == variant && r["class"] == class && r["metric"] == metric)
            .cloned()
            .unwrap_or_else(|| panic!("no {variant} {class} {metric}: {summary}"))
    };
    // WITH positive: TP 2 per image, then 1 (and one FN): recall 1 → 0.5.
    let recall = row("with_uncertain", "positive", "recall");
    assert_eq!(
        (&recall["base"], &recall["new"]),
        (&Value::from(1.0), &Value::from(0.5))
    );
    assert_eq!(recall["delta"], -0.5);
    assert_eq!(
        (&recall["images"], &recall["shared"]),
        (&Value::from(6), &Value::from(24))
    );
    assert_eq!(recall["significant_regression"], true, "{recall}");
    let untouched = row("without_uncertain", "positive", "recall");
    assert_eq!(untouched["delta"], 0.0);
    assert_eq!(untouched["significant_regression"], false);

    let items = diff_json(&s, &["1", "2", "--items", "--format", "json"]);
    assert_eq!(items.as_array().unwrap().len(), 6 * 4 * 2);
    let regressions = rows_where(&items, "change", "regression", "predicate");
    assert_eq!(regressions, vec!["clear(red:block)"; 6]);
    assert!(rows_where(&items, "change", "fix", "predicate").is_empty());
    let out = s
        .track()
        .args(["diff", "1", "2", "--fail-on-regression"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stdout)
            .contains("48 predictions shared, 6 regressions (right → not right), 0 fixes"),
        "{}",
        text(&out.stdout)
    );
}
