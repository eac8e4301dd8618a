//! A config.yaml model without `parameters:` runs: its energy is unknown (NULL in the database,
//! empty in CSV, null in JSON, "–" in tables and the report), and the run says why, once.

use crate::support::mock::Rule;
use crate::support::{Sandbox, bench_yaml, text};

/// The sandbox's config.yaml plus `openai:mymodel`, which has prices but no parameter count.
const CONFIG: &str = "retry:\n  max_attempts: 4\n  base_delay: 10\n  max_delay: 200\ntimeout_secs: 10\n\
models:\n  openai:mymodel:\n    input_price: 1\n    output_price: 2\n";

const NOTE: &str = "track: note: energy unknown for `openai:mymodel`: config.yaml gives no \
                    `parameters:`";

fn sandbox() -> Sandbox {
    let s = Sandbox::new();
    s.write("config.yaml", CONFIG);
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.mock.add_rule(Rule::reply("Capital of France", "Paris"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o", "openai:mymodel"],
            &[
                ("sum", "What is 2+2?", "4", "exact"),
                ("capital", "Capital of France?", "Paris", "contains"),
            ],
        ),
    );
    s
}

/// The cells of the first table after the line `title` as rows of trimmed texts, the header
/// first (comfy-table's condensed UTF-8 borders: `│` outside, `┆` between cells).
fn table_after(stdout: &str, title: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .skip_while(|l| l.trim() != title)
        .skip(1)
        .take_while(|l| !l.starts_with('└'))
        .filter(|l| l.starts_with('│'))
        .map(|l| {
            l.trim_matches('│')
                .split('┆')
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

/// The cell of `table` in column `header` of the row whose first cell is `key`.
fn cell<'t>(table: &'t [Vec<String>], key: &str, header: &str) -> &'t str {
    let column = table[0]
        .iter()
        .position(|h| h == header)
        .unwrap_or_else(|| panic!("no column {header} in {:?}", table[0]));
    let row = table
        .iter()
        .find(|r| r[0] == key)
        .unwrap_or_else(|| panic!("no row {key} in {table:?}"));
    &row[column]
}

#[test]
fn a_model_without_parameters_runs_with_energy_unknown_and_a_note() {
    let s = sandbox();
    let out = s
        .track()
        .args(["run", "bench.yaml", "--detail"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(s.mock.request_count(), 4, "both models were called");
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        4
    );

    // The note, once, naming the model and the fix; none for the model with a count.
    assert_eq!(stderr.matches(NOTE).count(), 1, "{stderr}");
    assert!(
        stderr.contains("add it to estimate energy") && !stderr.contains("`openai:gpt-4o`:"),
        "{stderr}"
    );

    // Stored as NULL, with no method, while gpt-4o's is estimated as before.
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_results WHERE model_ref = 'openai:mymodel' \
             AND energy_wh IS NULL AND energy_wh_min IS NULL AND energy_wh_max IS NULL \
             AND energy_method IS NULL AND output_tokens > 0 AND cost_usd > 0"
        ),
        2
    );
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_results WHERE model_ref = 'openai:gpt-4o' \
             AND energy_wh > 0 AND energy_method = 'ecologits-0.9'"
        ),
        2
    );

    // Tables: "–" for the unknown model, its total and every prompt's mean across models.
    let per_model = table_after(&stdout, "Per model");
    assert_eq!(cell(&per_model, "openai:mymodel", "Wh"), "–", "{stdout}");
    assert_ne!(cell(&per_model, "openai:gpt-4o", "Wh"), "–", "{stdout}");
    assert_eq!(cell(&per_model, "openai:mymodel", "pass %"), "100.0");
    let per_prompt = table_after(&stdout, "Per case");
    assert_eq!(cell(&per_prompt, "sum", "avg Wh"), "–", "{stdout}");
    let results = table_after(&stdout, "Results");
    let unknown: Vec<&Vec<String>> = results
        .iter()
        .filter(|r| r[0] == "openai:mymodel")
        .collect();
    assert_eq!(unknown.len(), 2, "{stdout}");
    let wh = results[0].iter().position(|h| h == "Wh").unwrap();
    assert!(unknown.iter().all(|r| r[wh] == "–"), "{stdout}");

    // CSV: an empty cell; JSON: null.
    let export = s
        .track()
        .args(["export", "csv", "--out", "exports"])
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", text(&export.stderr));
    let csv = std::fs::read_to_string(s.path("exports/bench_results.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (model, energy, method) = (at("model"), at("energy_wh"), at("energy_method"));
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let unknown = &row[model] == "openai:mymodel";
        assert_eq!(row[energy].is_empty(), unknown, "{csv}");
        assert_eq!(row[method].is_empty(), unknown, "{csv}");
    }
    let by_model = std::fs::read_to_string(s.path("exports/bench_by_model.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(by_model.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let energy = headers.iter().position(|h| h == "energy_wh").unwrap();
    let mine = reader
        .records()
        .map(Result::unwrap)
        .find(|r| &r[0] == "openai:mymodel")
        .unwrap();
    assert_eq!(&mine[energy], "", "{by_model}");

    let json = s
        .track()
        .args(["query", "--by", "model", "--format", "json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let mine = json
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "openai:mymodel")
        .unwrap();
    assert!(mine["energy_wh"].is_null(), "{mine}");
    assert!(mine["energy_wh_max"].is_null(), "{mine}");
    assert!(json[0]["energy_wh"].as_f64().unwrap() > 0.0, "{json}");
    // Queries read the database: no note there, only the run gives one.
    let query = s.track().args(["query", "--by", "model"]).output().unwrap();
    assert!(!text(&query.stderr).contains("energy unknown"));

    // The report: "–" for the total, and the reason under the energy chart.
    s.track()
        .args(["report", "--out", "report.html"])
        .assert()
        .success();
    let html = std::fs::read_to_string(s.path("report.html")).unwrap();
    assert!(
        html.contains("<dt>Energy (Wh)</dt><dd>–</dd>"),
        "the total is unknown"
    );
    assert!(
        html.contains("Energy is unknown (–) for `openai:mymodel`"),
        "the report says why"
    );
}

#[test]
fn models_lists_an_unknown_parameter_count_as_a_dash_and_quiet_runs_say_nothing() {
    let s = sandbox();
    let out = s
        .track()
        .args(["models", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mine = json
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["reference"] == "openai:mymodel")
        .unwrap();
    assert!(mine["parameters_b"].is_null(), "{mine}");
    assert!(mine["active_b"].is_null(), "{mine}");
    assert_eq!(mine["pue"], "1.2");

    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!text(&out.stderr).contains("energy unknown"));
}
