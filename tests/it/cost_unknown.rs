//! Any id of a known provider runs (`openai:gpt-9.9-preview`, not in the catalog): its cost is
//! unknown (NULL in the database, empty in CSV, "–" in tables, unknown in every sum), the run
//! says so, and a budget refuses it before any call, naming the prices to set in config.yaml.
//! A current model of the catalog (`openai:gpt-5-mini`) gets its list price.

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

use crate::support::mock::Rule;
use crate::support::{Sandbox, bench_yaml, text};

/// Not in the catalog: nothing knows its price.
const UNLISTED: &str = "openai:gpt-9.9-preview";

/// What the messages tell to set for its price.
const PRICE_KEYS: &str = "`input_price:` and `output_price:` (USD per million tokens) under \
                          `models: openai:gpt-9.9-preview:` in config.yaml";

/// A sandbox with a benchmark of `models` over two prompts the mock answers.
fn sandbox(models: &[&str]) -> Sandbox {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.mock.add_rule(Rule::reply("Capital of France", "Paris"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            models,
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

/// The records of a CSV file, with the index of each header.
fn csv_rows(path: &std::path::Path) -> (Vec<String>, Vec<csv::StringRecord>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader.records().map(Result::unwrap).collect();
    (headers, rows)
}

#[test]
fn an_unlisted_openai_id_runs_with_its_cost_unknown_in_tables_exports_and_sums() {
    let s = sandbox(&["openai:gpt-4o-mini", UNLISTED]);
    let out = s
        .track()
        .args(["run", "bench.yaml", "--detail"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The id went to the provider as written.
    let models: Vec<String> = s
        .mock
        .requests()
        .iter()
        .filter_map(|r| r.model().map(str::to_owned))
        .collect();
    assert_eq!(
        models.iter().filter(|m| *m == "gpt-9.9-preview").count(),
        2,
        "{models:?}"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        4
    );
    // Stored: NULL cost and prices for it, its tokens kept; gpt-4o-mini's cost as before.
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM bench_results WHERE model_ref = '{UNLISTED}' \
             AND cost_usd IS NULL AND paid_usd IS NULL AND output_tokens > 0"
        )),
        2
    );
    assert_eq!(
        s.count(
            "SELECT count(*) FROM calls WHERE model = 'gpt-9.9-preview' AND status = 'ok' \
             AND cost_usd IS NULL AND input_price_per_mtok IS NULL"
        ),
        2
    );
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_results WHERE model_ref = 'openai:gpt-4o-mini' \
             AND cost_usd > 0 AND paid_usd = cost_usd"
        ),
        2
    );

    // The run says what is unknown and what to set, before it and in its tally.
    assert!(
        stderr.contains(&format!(
            "track: note: cost unknown: `{UNLISTED}` has no price: set {PRICE_KEYS}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("+ unknown (2 answers without a price)"),
        "{stderr}"
    );

    // Tables: "–" for its cost, its total and every prompt's mean across models.
    let per_model = table_after(&stdout, "Per model");
    assert_eq!(cell(&per_model, UNLISTED, "cost $"), "–", "{stdout}");
    assert_ne!(cell(&per_model, "openai:gpt-4o-mini", "cost $"), "–");
    assert_eq!(cell(&per_model, UNLISTED, "pass %"), "100.0");
    let per_prompt = table_after(&stdout, "Per case");
    assert_eq!(cell(&per_prompt, "sum", "avg $"), "–", "{stdout}");
    let results = table_after(&stdout, "Results");
    let cost = results[0].iter().position(|h| h == "cost $").unwrap();
    let unlisted: Vec<&Vec<String>> = results.iter().filter(|r| r[0] == UNLISTED).collect();
    assert_eq!(unlisted.len(), 2, "{stdout}");
    assert!(unlisted.iter().all(|r| r[cost] == "–"), "{stdout}");

    // CSV: empty cells, not 0; the per-model export too.
    let export = s
        .track()
        .args(["export", "csv", "--out", "exports"])
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", text(&export.stderr));
    let (headers, rows) = csv_rows(&s.path("exports/bench_results.csv"));
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (model, cost, paid) = (at("model"), at("cost_usd"), at("paid_usd"));
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let unknown = &row[model] == UNLISTED;
        assert_eq!(row[cost].is_empty(), unknown, "{row:?}");
        assert_eq!(row[paid].is_empty(), unknown, "{row:?}");
    }
    let (headers, rows) = csv_rows(&s.path("exports/bench_by_model.csv"));
    let total = headers.iter().position(|h| h == "total_cost_usd").unwrap();
    let mine = rows.iter().find(|r| &r[0] == UNLISTED).unwrap();
    assert_eq!(&mine[total], "", "{mine:?}");
    let known = rows.iter().find(|r| &r[0] == "openai:gpt-4o-mini").unwrap();
    assert!(known[total].parse::<f64>().unwrap() > 0.0);

    // Parquet: null, not 0.
    let export = s
        .track()
        .args(["export", "parquet", "--out", "lake"])
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", text(&export.stderr));
    let uid: String = s
        .db()
        .query_row("SELECT uid FROM runs WHERE id = 1", [], |row| row.get(0))
        .unwrap();
    let path = s.path(&format!(
        "lake/bench_results/kind=bench/run={uid}/part-00000.parquet"
    ));
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut costs: Vec<(String, Field)> = Vec::new();
    for row in reader.get_row_iter(None).unwrap() {
        let row = row.unwrap();
        let field = |name: &str| {
            row.get_column_iter()
                .find(|(n, _)| n.as_str() == name)
                .map(|(_, f)| f.clone())
                .unwrap()
        };
        let Field::Str(model) = field("model_ref") else {
            panic!("model_ref is text")
        };
        costs.push((model, field("cost_usd")));
    }
    assert_eq!(costs.len(), 4);
    for (model, cost) in &costs {
        assert_eq!(
            matches!(cost, Field::Null),
            model == UNLISTED,
            "{model}: {cost:?}"
        );
    }

    // track query: null, not 0.
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
        .find(|m| m["model"] == UNLISTED)
        .unwrap();
    assert!(mine["total_cost_usd"].is_null(), "{mine}");
    assert!(mine["paid_usd"].is_null(), "{mine}");

    // track runs: the run's cost and paid are unknown, and it says which model had no price.
    let runs = s
        .track()
        .args(["runs", "--format", "json"])
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert!(runs[0]["cost_usd"].is_null(), "{runs}");
    assert!(runs[0]["paid_usd"].is_null(), "{runs}");
    assert_eq!(runs[0]["unpriced"], UNLISTED, "{runs}");
    let table = s.track().arg("runs").output().unwrap();
    let table = text(&table.stdout);
    assert!(
        table.contains(&format!("run 1: cost unknown (–): {UNLISTED} had no price")),
        "{table}"
    );

    // The report: "–" for the total cost and paid, not the known part.
    s.track()
        .args(["report", "--out", "report.html"])
        .assert()
        .success();
    let html = std::fs::read_to_string(s.path("report.html")).unwrap();
    assert!(
        html.contains("<dt>Cost ($)</dt><dd>–</dd>"),
        "the total is unknown"
    );
    assert!(html.contains("<dt>Paid ($)</dt><dd>–</dd>"));
}

#[test]
fn a_budget_refuses_a_model_without_a_price_before_any_call_naming_the_prices_to_set() {
    let s = sandbox(&["openai:gpt-4o-mini", UNLISTED]);
    for (args, setting) in [
        (vec!["run", "bench.yaml", "--budget", "5"], "--budget"),
        (
            vec!["run", "bench.yaml", "--budget", "5", "--dry-run"],
            "--budget",
        ),
    ] {
        let out = s.track().args(&args).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        // (After the note that the database was created.)
        assert_eq!(
            stderr.lines().last().unwrap_or_default(),
            format!(
                "track: {setting} cannot bound what calls to a model without a price cost: \
                 `{UNLISTED}` has no price: set {PRICE_KEYS}; or run without a budget"
            ),
            "{args:?}"
        );
    }
    // The file's `budget:` is refused the same way, named as such.
    let yaml = std::fs::read_to_string(s.path("bench.yaml")).unwrap();
    s.write("budgeted.yaml", &format!("budget: 5\n{yaml}"));
    let out = s.track().args(["run", "budgeted.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("track: the file's `budget:` cannot bound") && last.contains(PRICE_KEYS),
        "{stderr}"
    );
    assert_eq!(s.mock.request_count(), 0, "refused before any call");
    assert_eq!(
        s.count("SELECT count(*) FROM runs"),
        0,
        "no run was started"
    );

    // With the prices in config.yaml, the same budget runs, and costs them.
    s.write(
        "config.yaml",
        "retry:\n  max_attempts: 4\n  base_delay: 10\n  max_delay: 200\ntimeout_secs: 10\n\
         models:\n  openai:gpt-9.9-preview:\n    input_price: 2\n    output_price: 8\n",
    );
    let out = s
        .track()
        .args(["run", "bench.yaml", "--budget", "5", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM bench_results WHERE model_ref = '{UNLISTED}' AND cost_usd > 0"
        )),
        2
    );
}

#[test]
fn a_dry_run_says_the_cost_of_a_model_without_a_price_is_unknown() {
    let s = sandbox(&["openai:gpt-4o-mini", UNLISTED]);
    let out = s
        .track()
        .args(["run", "bench.yaml", "--dry-run"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let plan = table_after(&format!("title\n{stdout}"), "title");
    assert_eq!(cell(&plan, UNLISTED, "max $"), "–", "{stdout}");
    assert_eq!(cell(&plan, UNLISTED, "note"), "cost unknown: no price");
    assert_ne!(cell(&plan, "openai:gpt-4o-mini", "max $"), "–");
    let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("plus the unknown cost of the calls of models without a price"),
        "{stdout}"
    );
    assert!(
        flat.contains(&format!(
            "cost unknown: `{UNLISTED}` has no price: set {PRICE_KEYS}"
        )),
        "{stdout}"
    );
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn a_dry_run_asks_did_you_mean_of_a_model_id_one_slip_from_the_catalog() {
    for (typed, meant) in [
        ("openai:gpt-4o-mnii", "openai:gpt-4o-mini"),
        ("local:smollm", "local:smollm2"),
    ] {
        let s = sandbox(&[typed]);
        let out = s
            .track()
            .args(["run", "bench.yaml", "--dry-run"])
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!("`{typed}` is not in the catalog"))
                && stderr.contains(&format!("did you mean `{meant}`?")),
            "{typed}: {stderr}"
        );
        assert_eq!(s.mock.request_count(), 0);
    }
}

#[test]
fn a_current_model_of_the_catalog_gets_its_list_price() {
    // genai-prices: gpt-5-mini at $0.25 / $2.00 per million tokens; claude-haiku-4-5 at $1 / $5.
    let s = sandbox(&["openai:gpt-5-mini", "anthropic:claude-haiku-4-5"]);
    let out = s
        .track()
        .args(["run", "bench.yaml", "--budget", "1"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("cost unknown"), "{stderr}");
    for (model, (input, output)) in [
        ("gpt-5-mini", (0.25, 2.0)),
        ("claude-haiku-4-5", (1.0, 5.0)),
    ] {
        assert_eq!(
            s.count(&format!(
                "SELECT count(*) FROM calls WHERE model = '{model}' AND status = 'ok' \
                 AND input_price_per_mtok = {input} AND output_price_per_mtok = {output} \
                 AND abs(cost_usd - (input_tokens * {input} + output_tokens * {output}) / 1e6) \
                     < 1e-12 AND cost_usd > 0"
            )),
            2,
            "{model}"
        );
    }
}

#[test]
fn answers_bought_without_a_price_cost_the_price_set_later_when_served_again() {
    let s = sandbox(&[UNLISTED]);
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 1 AND cost_usd IS NULL"),
        2
    );
    s.write(
        "config.yaml",
        "retry:\n  max_attempts: 4\n  base_delay: 10\n  max_delay: 200\ntimeout_secs: 10\n\
         models:\n  openai:gpt-9.9-preview:\n    input_price: 2\n    output_price: 8\n",
    );
    s.mock.reset_requests();
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(s.mock.request_count(), 0, "served from the cache");
    assert!(
        !stderr.contains("cost unknown") && !stderr.contains("+ unknown"),
        "{stderr}"
    );
    // Costed at the price now set, paid nothing; the stored calls keep what was known then.
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_results r JOIN calls c ON c.id = r.call_id \
             WHERE r.run_id = 2 AND r.paid_usd = 0 AND r.cache_hit = 1 \
             AND abs(r.cost_usd - (c.input_tokens * 2 + c.output_tokens * 8) / 1e6) < 1e-12 \
             AND r.cost_usd > 0 AND c.cost_usd IS NULL"
        ),
        2
    );
    let runs = s
        .track()
        .args(["runs", "--format", "json"])
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert!(runs[0]["cost_usd"].as_f64().unwrap() > 0.0, "{runs}");
    assert!(runs[1]["cost_usd"].is_null(), "{runs}");
}
