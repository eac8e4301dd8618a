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
    let of = |prompt: &str| rows.iter().find(|r| r["case"] == prompt).unwrap();
    assert_eq!(of("capital")["status"], "passed");
    assert_eq!(of("capital")["answer"], PARIS);
    assert_eq!(of("miss")["status"], "failed");
    assert_eq!(of("miss")["answer"], NOPE);
    // No one rated them: the human columns are there, empty.
    for column in ["human_verdict", "human_score", "human_comment", "rater"] {
        assert_eq!(of("capital")[column], "", "{column}");
    }
}

/// The values of the text columns `names` of every row of the Parquet file at `path`.
pub fn parquet_texts(path: &std::path::Path, names: &[&str]) -> Vec<Vec<Option<String>>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            names
                .iter()
                .map(|name| {
                    match row
                        .get_column_iter()
                        .find(|(n, _)| n == name)
                        .unwrap_or_else(|| panic!("no column {name}"))
                        .1
                    {
                        parquet::record::Field::Str(text) => Some(text.clone()),
                        parquet::record::Field::Null => None,
                        other => panic!("{name} is not a text: {other:?}"),
                    }
                })
                .collect()
        })
        .collect()
}

/// The only file under `dir` whose path holds `part`.
fn file_under(dir: &std::path::Path, part: &str) -> std::path::PathBuf {
    let files: Vec<_> = crate::support::files_under(dir)
        .into_keys()
        .filter(|p| p.contains(part) && p.ends_with(".parquet"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    dir.join(&files[0])
}

#[test]
fn the_parquet_export_has_the_requests_and_answers_texts() {
    let s = bench_run();
    let out = s
        .track()
        .args(["export", "parquet", "--out", "lake"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lake = s.path("lake");
    let results = parquet_texts(
        &file_under(&lake, "bench_results/"),
        &["prompt_name", "answer", "human_verdict"],
    );
    let mut answers: Vec<(String, String)> = results
        .iter()
        .map(|r| (r[0].clone().unwrap(), r[1].clone().unwrap()))
        .collect();
    answers.sort();
    assert_eq!(
        answers,
        [
            ("capital".to_owned(), PARIS.to_owned()),
            ("miss".to_owned(), NOPE.to_owned())
        ]
    );
    assert!(results.iter().all(|r| r[2].is_none()), "no one rated them");
    let calls = parquet_texts(&file_under(&lake, "calls/"), &["request", "answer"]);
    assert_eq!(calls.len(), 2);
    let paris = calls
        .iter()
        .find(|c| c[1].as_deref() == Some(PARIS))
        .expect("the call answered PARIS");
    // The request as its cache key hashes it: canonical JSON, with the prompt.
    let request: serde_json::Value = serde_json::from_str(paris[0].as_deref().unwrap()).unwrap();
    assert!(
        request.to_string().contains("Capital of France?"),
        "{request}"
    );
}

#[test]
fn diff_items_show_both_runs_answers_whole_in_csv_and_cut_in_a_table() {
    let s = bench_run();
    // The second run asks the capital in other words: a new answer, and the same `miss`.
    s.mock.add_rule(Rule::reply(
        "capital city of France",
        "Paris.\nSecond line.",
    ));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o"],
            &[
                (
                    "capital",
                    "What is the capital city of France? Answer briefly.",
                    "Paris",
                    "contains",
                ),
                ("miss", "wrong answer please", "yes", "exact"),
            ],
        ),
    );
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    let out = s
        .track()
        .args(["diff", "1", "2", "--items", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.write("items.csv", &text(&out.stdout));
    let rows = csv_rows(&s.path("items.csv"));
    let of = |prompt: &str| rows.iter().find(|r| r["case"] == prompt).unwrap();
    assert_eq!(of("capital")["base_answer"], PARIS);
    assert_eq!(of("capital")["new_answer"], "Paris.\nSecond line.");
    assert_eq!(of("miss")["base_answer"], NOPE);
    assert_eq!(of("miss")["new_answer"], NOPE);
    let json = s
        .track()
        .args(["diff", "1", "2", "--items", "--format", "json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .any(|item| item["base_answer"] == PARIS),
        "{json}"
    );

    // A terminal of 80 columns: the first line of each answer, cut; no line wider.
    let table = s
        .track()
        .env("COLUMNS", "80")
        .env("NO_COLOR", "1")
        .args(["diff", "1", "2", "--items"])
        .output()
        .unwrap();
    let table = text(&table.stdout);
    assert!(table.contains("The capital is Paris. …"), "{table}");
    assert!(!table.contains("bridges"), "only the first line: {table}");
    for line in table.lines() {
        assert!(line.chars().count() <= 80, "{line:?} in\n{table}");
    }
}

#[test]
fn diff_items_of_reviews_show_each_run_s_reviewer_answer() {
    let s = Sandbox::new();
    crate::review::add_review_files(&s);
    for _ in 0..2 {
        s.track()
            .args([
                "review-datasheets",
                "--reviewer",
                "openai:gpt-4o-mini",
                "-q",
            ])
            .assert()
            .success();
    }
    let out = s
        .track()
        .args(["diff", "1", "2", "--items", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.write("items.csv", &text(&out.stdout));
    let rows = csv_rows(&s.path("items.csv"));
    // The review of `BME280 text one` (by gpt-4o): its answer, whole, on each criterion.
    let of_text_one: Vec<_> = rows
        .iter()
        .filter(|r| r["generator"] == "openai:gpt-4o" && r["sensor"] == "Bosch BME280")
        .collect();
    assert_eq!(of_text_one.len(), 17, "16 criteria and the overall score");
    for row in of_text_one {
        for side in ["base_answer", "new_answer"] {
            assert!(
                row[side].starts_with("Here is my review.\n```json\n{\"p1_score\": 4")
                    && row[side].ends_with("Let me know!"),
                "{side}: {row:?}"
            );
        }
    }
    // The unparsable review's answer too.
    let hdc = rows
        .iter()
        .find(|r| r["sensor"] == "TI HDC1080")
        .expect("the HDC1080 review");
    assert_eq!(hdc["base_answer"], "Sorry, I cannot review this datasheet.");
}

#[test]
fn diff_items_of_pairwise_runs_show_the_judge_s_answer_in_each_order() {
    let s = crate::pairwise::answers_sandbox();
    for _ in 0..2 {
        s.track()
            .args(["run", "pairwise.yaml", "-q"])
            .assert()
            .success();
    }
    let out = s
        .track()
        .args(["diff", "1", "2", "--items", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.write("items.csv", &text(&out.stdout));
    let rows = csv_rows(&s.path("items.csv"));
    // gpt-4o-mini prefers GOOD (gpt-4o) to MID (sonnet) in both orders: shown first (`ab`,
    // the row's candidate_a, sonnet, as A) it says B; the other way round, A.
    let row = rows
        .iter()
        .find(|r| {
            r["judge"] == "openai:gpt-4o-mini"
                && r["item"] == "one"
                && r["candidate_a"] == "anthropic:sonnet 3.5"
                && r["candidate_b"] == "openai:gpt-4o"
        })
        .unwrap_or_else(|| panic!("no verdict of the pair in {rows:?}"));
    let winner = |column: &str| -> String {
        let answer: serde_json::Value =
            serde_json::from_str(&row[column]).unwrap_or_else(|e| panic!("{column}: {e}: {row:?}"));
        answer["winner"].as_str().unwrap().to_owned()
    };
    assert_eq!(winner("base_ab_answer"), "B");
    assert_eq!(winner("base_ba_answer"), "A");
    assert_eq!(winner("new_ab_answer"), "B");
    assert_eq!(winner("new_ba_answer"), "A");
    assert!(!row["base_ab_call_id"].is_empty());
}
