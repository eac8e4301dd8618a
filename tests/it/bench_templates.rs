//! The output side of benchmarks from data (issue 29): a run of several prompt templates with
//! several checks per case, written with the store as `track run` writes it, read by `track
//! query --by template|case`, `export csv|parquet`, `diff --templates`, `runs --wide` and
//! `report`.

use track::store::{BenchResultRow, CheckRow, Outcome, RunStatus, Store};

use crate::support::{Sandbox, text};

const MODELS: [&str; 2] = ["openai:m0", "openai:m1"];
const TEMPLATES: [&str; 2] = ["terse", "steps"];
const CASES: [&str; 4] = ["q1", "q2", "q3", "q4"];

/// The run's options, as a run from data records its inputs.
const OPTIONS: &str = r#"{"inputs": [
    {"kind": "data", "name": "data/math.jsonl",
     "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "rows": 4},
    {"kind": "template", "name": "terse",
     "sha256": "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"},
    {"kind": "template", "name": "steps",
     "sha256": "fd61a03af4f77d870fc21e05e7e80678095c92d808cfb3b5c279ee04c74aca13"}
]}"#;

/// Whether `model` passes case `case` with `template`: `steps` fails q1 on both models, m1
/// fails q2 with `terse`.
fn passes(model: usize, template: usize, case: usize) -> bool {
    !((template == 1 && case == 0) || (model == 1 && template == 0 && case == 1))
}

/// A run of 2 models x 2 templates x 4 cases, each result with two checks (`exact`, failed
/// where the result failed, and `not-contains`, passed); returns its id.
fn templated_run(s: &Sandbox) -> i64 {
    let mut store = Store::open(&s.db_path()).unwrap();
    let run = store
        .create_run(
            track::experiment::ExperimentKind::Bench,
            Some("math.yaml"),
            None,
            OPTIONS,
        )
        .unwrap();
    let mut rows = Vec::new();
    for (m, model) in MODELS.iter().enumerate() {
        for (t, template) in TEMPLATES.iter().enumerate() {
            for (c, case) in CASES.iter().enumerate() {
                let passed = passes(m, t, c);
                let check = |method: &str, passed: bool, reason: Option<&str>| CheckRow {
                    method: method.into(),
                    expected: Some(format!("{c}")),
                    outcome: Outcome::of_test(passed),
                    score: None,
                    weight: 1.0,
                    reason: reason.map(str::to_owned),
                };
                rows.push(BenchResultRow {
                    run_id: run,
                    model_index: m as u32,
                    prompt_index: c as u32,
                    repeat_index: 0,
                    model_ref: (*model).into(),
                    provider: "openai".into(),
                    model_id: model[7..].into(),
                    prompt_name: (*case).into(),
                    method: "checks".into(),
                    call_id: None,
                    cache_hit: false,
                    outcome: Outcome::of_test(passed),
                    detail: (!passed).then(|| "1 of 2 checks failed".to_owned()),
                    latency_ms: Some(100.0 + (m * 10 + t) as f64),
                    input_tokens: Some(10 + t as u64),
                    output_tokens: Some(5),
                    tokens_estimated: false,
                    cost_usd: Some(0.001),
                    paid_usd: Some(0.001),
                    energy_wh: Some(0.01),
                    energy_wh_min: Some(0.005),
                    energy_wh_max: Some(0.02),
                    energy_method: None,
                    judge_call_id: None,
                    judge_score: None,
                    judge_cost_usd: None,
                    expected: Some(format!("{c}")),
                    template_index: t as u32,
                    template_name: Some((*template).into()),
                    score: Some(if passed { 1.0 } else { 0.5 }),
                    checks: vec![
                        check(
                            "exact",
                            passed,
                            (!passed).then_some("expected `0`, got `zero`"),
                        ),
                        check("not-contains", true, None),
                    ],
                });
            }
        }
    }
    store.insert_bench_results(&rows).unwrap();
    store.finish_run(run, RunStatus::Completed).unwrap();
    run
}

fn track_ok(s: &Sandbox, args: &[&str]) -> String {
    let out = s.track().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "track {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The rows of a CSV as maps from its header.
fn csv_rows(csv: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|line| {
            header
                .iter()
                .zip(line.split(','))
                .map(|(h, v)| ((*h).to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

#[test]
fn query_by_template_gives_each_template_and_model_its_rate_and_by_case_the_cases() {
    let s = Sandbox::new();
    templated_run(&s);
    let csv = track_ok(&s, &["query", "--by", "template", "--format", "csv"]);
    let rows = csv_rows(&csv);
    let pairs: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["template"].as_str(),
                r["model"].as_str(),
                r["success_pct"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            ("terse", "openai:m0", "100.0"),
            ("terse", "openai:m1", "75.0"),
            ("steps", "openai:m0", "75.0"),
            ("steps", "openai:m1", "75.0"),
        ],
        "{csv}"
    );
    for row in &rows {
        assert_eq!(row["results"], "4");
        assert!(!row["success_low_pct"].is_empty() && !row["success_high_pct"].is_empty());
        assert!(!row["energy_wh"].is_empty() && !row["total_cost_usd"].is_empty());
    }
    // Per model, every template pooled: m0 7 of 8.
    let by_model = csv_rows(&track_ok(
        &s,
        &["query", "--by", "model", "--format", "csv"],
    ));
    assert_eq!(by_model[0]["success_pct"], "87.5");
    // Per case: the rows of --by prompt (kept for scripts), a column per model and template.
    let by_prompt = track_ok(&s, &["query", "--by", "prompt", "--format", "csv"]);
    let by_case = track_ok(&s, &["query", "--by", "case", "--format", "csv"]);
    assert!(by_case.starts_with("case,"), "{by_case}");
    assert_eq!(by_case, by_prompt, "the same rows");
    let cases = csv_rows(&by_case);
    assert_eq!(cases.len(), 4);
    assert_eq!(cases[0]["case"], "q1");
    assert_eq!(cases[0]["success_pct[openai:m0|terse]"], "100.0");
    assert_eq!(cases[0]["success_pct[openai:m0|steps]"], "0.0");
    assert_eq!(cases[0]["success_pct_all"], "50.0");
    let json = track_ok(&s, &["query", "--by", "template", "--format", "json"]);
    assert!(json.contains("\"template\": \"steps\""), "{json}");
}

#[test]
fn export_csv_writes_each_check_with_its_result_and_results_with_template_and_score() {
    let s = Sandbox::new();
    templated_run(&s);
    let out = track_ok(&s, &["export", "csv", "--out", "x"]);
    assert!(out.contains("bench_checks.csv"), "{out}");
    let checks = std::fs::read_to_string(s.path("x/bench_checks.csv")).unwrap();
    let rows = csv_rows(&checks);
    assert_eq!(rows.len(), 2 * 2 * 4 * 2, "{checks}");
    assert!(
        checks.starts_with(
            "run_id,model,template,case,repeat,check_index,method,expected,status,score,weight,reason\n"
        ),
        "{checks}"
    );
    let failed: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .filter(|r| r["status"] == "failed")
        .map(|r| {
            (
                r["model"].as_str(),
                r["template"].as_str(),
                r["case"].as_str(),
                r["method"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [
            ("openai:m0", "steps", "q1", "exact"),
            ("openai:m1", "terse", "q2", "exact"),
            ("openai:m1", "steps", "q1", "exact"),
        ]
    );
    let results = std::fs::read_to_string(s.path("x/bench_results.csv")).unwrap();
    let results = csv_rows(&results);
    assert_eq!(results.len(), 16);
    let steps_q1 = results
        .iter()
        .find(|r| r["template"] == "steps" && r["case"] == "q1" && r["model"] == "openai:m0")
        .unwrap();
    assert_eq!(steps_q1["status"], "failed");
    assert_eq!(steps_q1["score"], "0.5");
}

#[test]
fn export_parquet_writes_the_checks_in_their_runs_partition() {
    let s = Sandbox::new();
    let run = templated_run(&s);
    let out = track_ok(&s, &["export", "parquet", "--run", "all", "--out", "lake"]);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("lake/manifest.json")).unwrap())
            .unwrap();
    let checks = &m["datasets"]["bench_checks"];
    assert_eq!(checks["rows"], 32, "{out}");
    let uid: String = s
        .db()
        .query_row("SELECT uid FROM runs WHERE id = ?1", [run], |r| r.get(0))
        .unwrap();
    assert_eq!(checks["partitions"][0]["run_id"], run);
    assert_eq!(
        checks["partitions"][0]["path"],
        format!("bench_checks/kind=bench/run={uid}/part-00000.parquet")
    );
}

#[test]
fn diff_compares_two_templates_of_a_run_with_mcnemar_per_model() {
    let s = Sandbox::new();
    let run = templated_run(&s).to_string();
    let csv = track_ok(
        &s,
        &[
            "diff",
            &run,
            "--templates",
            "terse",
            "steps",
            "--format",
            "csv",
        ],
    );
    let rows = csv_rows(&csv);
    let per_model: Vec<(&str, &str, &str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["model"].as_str(),
                r["paired"].as_str(),
                r["regressions"].as_str(),
                r["fixes"].as_str(),
                r["delta_success_pct"].as_str(),
            )
        })
        .collect();
    // m0: q1 passed with terse, failed with steps; m1: that, and q2 the other way round.
    assert_eq!(
        per_model,
        [
            ("openai:m0", "4", "1", "0", "-25.0"),
            ("openai:m1", "4", "1", "1", "0.0"),
        ],
        "{csv}"
    );
    assert!(rows.iter().all(|r| !r["p_value"].is_empty()), "{csv}");
    let table = track_ok(&s, &["diff", &run, "--templates", "terse", "steps"]);
    assert!(
        table.starts_with(&format!(
            "run {run}, template terse → template steps (benchmark): 8 items shared, \
             2 regressions, 1 fix, 0 new errors"
        )),
        "{table}"
    );
    let items = track_ok(
        &s,
        &[
            "diff",
            &run,
            "--templates",
            "terse",
            "steps",
            "--items",
            "--format",
            "csv",
        ],
    );
    let items = csv_rows(&items);
    assert_eq!(items.len(), 8);
    let regressions: Vec<(&str, &str)> = items
        .iter()
        .filter(|r| r["change"] == "regression")
        .map(|r| (r["model"].as_str(), r["case"].as_str()))
        .collect();
    assert_eq!(regressions, [("openai:m0", "q1"), ("openai:m1", "q1")]);
    // A template the run does not have is named, with those it has.
    let out = s
        .track()
        .args(["diff", &run, "--templates", "terse", "wordy"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("no template `wordy`") && err.contains("terse, steps"),
        "{err}"
    );
    // Run against run still pairs each template with itself: nothing changed.
    let same = track_ok(&s, &["diff", &run, &run, "--format", "csv"]);
    assert!(
        csv_rows(&same)
            .iter()
            .all(|r| r["regressions"] == "0" && r["paired"] == "8"),
        "{same}"
    );
}

#[test]
fn runs_wide_shows_the_data_files_and_templates_with_their_hashes() {
    let s = Sandbox::new();
    templated_run(&s);
    let inputs = "data/math.jsonl 9f86d081884c (4 rows); template terse 60303ae22b99; \
                  template steps fd61a03af4f7";
    let mut wide = s.track();
    wide.args(["runs", "--wide"]).env("COLUMNS", "1000");
    let out = wide.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains(inputs), "{table}");
    let compact = track_ok(&s, &["runs"]);
    assert!(!compact.contains("9f86d081884c"), "{compact}");
    let json = track_ok(&s, &["runs", "--format", "json"]);
    assert!(json.contains(inputs), "{json}");
}
