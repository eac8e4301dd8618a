//! The whole answers in every output (issue 30, "Answers everywhere"): `bench_results.csv` and
//! each kind's rows export, the Parquet export, `track diff --items` and the report's pairwise
//! section hold what the mock answered, passes included, never cut.

use crate::support::mock::Rule;
use crate::support::{Sandbox, bench_yaml, text};

/// An answer of two lines, with a comma and a quote: CSV must quote it, and nothing may cut it.
pub const PARIS: &str = "The capital is Paris.\nIt has \"many\" bridges, and a tower.";
/// An answer that fails its check.
pub const NOPE: &str = "nope, no idea";

/// A sandbox whose mock answers [`PARIS`] and [`NOPE`], with a benchmark of a passing and a
/// failing prompt on one model, run.
pub fn bench_run() -> Sandbox {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("Capital of France", PARIS));
    s.mock.add_rule(Rule::reply("wrong", NOPE));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o"],
            &[
                ("capital", "Capital of France?", "Paris", "contains"),
                ("miss", "wrong answer please", "yes", "exact"),
            ],
        ),
    );
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    s
}

/// The rows of a CSV file as maps from column to value.
pub fn csv_rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn bench_results_csv_has_the_whole_answer_of_passes_and_failures() {
    let s = bench_run();
    let out = s
        .track()
        .args(["export", "csv", "--out", "exports"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = csv_rows(&s.path("exports/bench_results.csv"));
    assert_eq!(rows.len(), 2);
    let of = |prompt: &str| rows.iter().find(|r| r["prompt"] == prompt).unwrap();
    assert_eq!(of("capital")["status"], "passed");
    assert_eq!(of("capital")["answer"], PARIS);
    assert_eq!(of("miss")["status"], "failed");
    assert_eq!(of("miss")["answer"], NOPE);
    // No one rated them: the human columns are there, empty.
    for column in ["human_verdict", "human_score", "human_comment", "rater"] {
        assert_eq!(of("capital")[column], "", "{column}");
    }
}
