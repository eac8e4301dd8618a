//! `track report` end to end: the HTML file of each kind holds the numbers `track query`
//! prints, is well-formed and self-contained, survives hostile text, renders in a real
//! browser, and fails clearly on a missing run, an empty database or an unwritable file.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::mock::Rule;
use crate::support::{Sandbox, bench_yaml, text};

const MODELS: [&str; 3] = [
    "openai:gpt-4o",
    "anthropic:sonnet 3.5",
    "ollama:qwen2.5-coder",
];
const HOSTILE_ANSWER: &str = "</script><img src=x onerror=alert(1)>";
const HOSTILE_EXPECTED: &str = "</script><b>magic</b>";

/// A benchmark of three models on three prompts, two repeats each: the first model gets one
/// of its two sums wrong and its first capital call fails for good; nobody says the magic
/// words, and the answers are hostile markup.
fn add_bench(s: &Sandbox) {
    s.mock.add_rule(Rule::reply("2+2", "five").times(1));
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.mock.add_rule(Rule::fail("Capital of France", 400, 1));
    s.mock
        .add_rule(Rule::reply("Capital of France", "The capital is Paris."));
    s.mock.add_rule(Rule::reply("magic words", HOSTILE_ANSWER));
    let prompts = [
        ("sum", "What is 2+2?", "4", "exact"),
        ("capital", "Capital of France?", "Paris", "contains"),
        ("magic", "Say the magic words", HOSTILE_EXPECTED, "contains"),
    ];
    let yaml = format!("repeat: 2\n{}", bench_yaml(&MODELS, &prompts));
    s.write("bench.yaml", &yaml);
}

fn run_bench(s: &Sandbox) {
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    // The failing call and the failed tests make the run exit non-zero; it still records all.
    assert!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = (SELECT max(id) FROM runs)")
            == 18,
        "{}",
        text(&out.stderr)
    );
}

fn run_reviews(s: &Sandbox) {
    s.track()
        .args([
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o-mini,anthropic:haiku 3.5",
            "-q",
        ])
        .assert()
        .success();
}

fn run_relevance(s: &Sandbox) {
    s.track()
        .args([
            "relevance",
            "compare",
            "--model",
            "openai:gpt-4o",
            "--images",
            "blocks/state_*.png",
            "--ground-truth",
            "truth.json",
            "--out",
            "out",
            "-q",
        ])
        .assert()
        .success();
}

/// Runs `track report` with `args` and returns the file's text.
fn report(s: &Sandbox, args: &[&str]) -> String {
    let out = s
        .track()
        .args(["report", "--out", "report.html"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "report.html");
    std::fs::read_to_string(s.path("report.html")).unwrap()
}

/// `track query` with `args` as JSON rows.
fn query(s: &Sandbox, args: &[&str]) -> Vec<Value> {
    let out = s
        .track()
        .arg("query")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Parses the report strictly (it is written as well-formed XML) and checks it fetches
/// nothing: no script, stylesheet link, image, frame or object, and every link in-page.
fn parse_self_contained(html: &str) -> roxmltree::Document<'_> {
    // The one DTD is `<!DOCTYPE html>`, which declares nothing.
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(html, options)
        .unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "html");
    for node in doc.descendants().filter(|n| n.is_element()) {
        let name = node.tag_name().name();
        assert!(
            !matches!(
                name,
                "script" | "link" | "img" | "iframe" | "object" | "embed" | "image" | "use"
            ),
            "a <{name}> element"
        );
        for attribute in node.attributes() {
            let value = attribute.value().trim().to_ascii_lowercase();
            if matches!(attribute.name(), "src" | "href" | "srcset" | "action") {
                assert!(
                    !value.starts_with("http://")
                        && !value.starts_with("https://")
                        && !value.starts_with("//"),
                    "a resource from the network: {value}"
                );
                assert!(value.starts_with('#'), "a link out of the page: {value}");
            }
            assert!(
                !attribute.name().starts_with("on"),
                "an event handler attribute {}",
                attribute.name()
            );
        }
    }
    let style = doc
        .descendants()
        .find(|n| n.has_tag_name("style"))
        .and_then(|n| n.text())
        .unwrap_or_default();
    assert!(
        !style.contains("url(") && !style.contains("@import"),
        "the stylesheet fetches something"
    );
    doc
}

/// The rows of the table `id`: each a map from column name (`data-column`) to cell text.
fn table(doc: &roxmltree::Document<'_>, id: &str) -> Vec<BTreeMap<String, String>> {
    let table = doc
        .descendants()
        .find(|n| n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no table `{id}`"));
    let body = table.children().find(|n| n.has_tag_name("tbody")).unwrap();
    body.children()
        .filter(|n| n.has_tag_name("tr"))
        .map(|row| {
            row.children()
                .filter(|c| c.is_element())
                .map(|c| {
                    let column = c.attribute("data-column").unwrap_or_default().to_owned();
                    (column, c.text().unwrap_or_default().to_owned())
                })
                .collect()
        })
        .collect()
}

/// A JSON value as the terminal table prints it (`track query`'s `format_value`).
fn as_terminal(column: &str, value: &Value) -> String {
    match value.as_f64().filter(|_| value.is_f64()) {
        Some(number) => terminal_number(column, number),
        None => match value {
            Value::Null => "–".into(),
            Value::Bool(b) => if *b { "yes" } else { "no" }.into(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

fn terminal_number(column: &str, number: f64) -> String {
    if column.contains("_pct") {
        format!("{number:.1}")
    } else if column.ends_with("_usd") {
        format!("{number:.6}")
    } else if column.contains("_wh") {
        format!("{number:.4}")
    } else if column.ends_with("_s") {
        format!("{number:.2}")
    } else if column.contains("tokens") {
        format!("{number:.1}")
    } else {
        format!("{number:.3}")
    }
}

/// Whether `cell` is `value` as the terminal prints it. JSON carries a float to 15
/// significant digits (binary noise removed); the table rounds the float itself. The two
/// differ only for a value on a rounding boundary (0.0000305 stored as 0.0000305000…02),
/// so a cell that a nudge of the last of those digits explains is the same number.
fn reads_as(cell: &str, column: &str, value: &Value) -> bool {
    if cell == as_terminal(column, value) {
        return true;
    }
    value.as_f64().filter(|_| value.is_f64()).is_some_and(|v| {
        let nudge = v.abs() * 1e-14;
        [v - nudge, v + nudge]
            .iter()
            .any(|n| terminal_number(column, *n) == cell)
    })
}

/// Checks that the table `id` has one row per query row, matched on `keys`, and that every
/// other column of the query (its `status` aside) reads the same in the report.
fn assert_matches_query(doc: &roxmltree::Document<'_>, id: &str, rows: &[Value], keys: &[&str]) {
    assert_eq!(table(doc, id).len(), rows.len(), "rows of `{id}`");
    assert_rows_match_query(doc, id, rows, keys);
}

/// Checks that every row of the table `id` is a query row, matched on `keys`, that reads
/// the same in every column.
fn assert_rows_match_query(doc: &roxmltree::Document<'_>, id: &str, rows: &[Value], keys: &[&str]) {
    let html_rows = table(doc, id);
    let shown = |row: &&Value| {
        html_rows.iter().any(|h| {
            keys.iter()
                .all(|k| h.get(*k) == Some(&as_terminal(k, &row[*k])))
        })
    };
    assert_eq!(
        rows.iter().filter(shown).count(),
        html_rows.len(),
        "rows of `{id}`"
    );
    for row in rows.iter().filter(shown) {
        let object = row.as_object().unwrap();
        let found = html_rows
            .iter()
            .find(|h| {
                keys.iter()
                    .all(|k| h.get(*k) == Some(&as_terminal(k, &row[*k])))
            })
            .unwrap_or_else(|| panic!("`{id}` has no row for {row}"));
        let mut compared = 0;
        for (column, value) in object {
            if column == "status" {
                continue;
            }
            let cell = found
                .get(column)
                .unwrap_or_else(|| panic!("`{id}` has no column `{column}`"));
            assert!(
                reads_as(cell, column, value),
                "`{id}` {column} of {row}: `{cell}`, the terminal prints `{}`",
                as_terminal(column, value)
            );
            compared += 1;
        }
        assert!(compared > keys.len(), "nothing compared in `{id}`");
    }
}

/// Every text of the document joined: what a reader can find with the browser's search.
fn all_text(doc: &roxmltree::Document<'_>) -> String {
    doc.descendants()
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_benchmark_report_holds_the_numbers_of_track_query() {
    let s = Sandbox::new();
    add_bench(&s);
    run_bench(&s);
    let html = report(&s, &[]);
    let doc = parse_self_contained(&html);
    assert_matches_query(
        &doc,
        "bench-models",
        &query(&s, &["--by", "model"]),
        &["model"],
    );
    assert_matches_query(
        &doc,
        "bench-prompts",
        &query(&s, &["--by", "prompt"]),
        &["case"],
    );
    let words = all_text(&doc);
    // The pass matrix: every cell's rate in its tooltip, as the prompt table has it.
    for prompt in query(&s, &["--by", "prompt"]) {
        for model in MODELS {
            let column = format!("success_pct[{model}]");
            let cell = format!(
                "{} · {model}: {}",
                prompt["case"].as_str().unwrap(),
                as_terminal(&column, &prompt[&column])
            );
            assert!(words.contains(&cell), "no matrix cell `{cell}`");
        }
    }
    assert!(
        words.contains("sum · openai:gpt-4o: 50.0"),
        "one of two repeats passed"
    );
    assert!(
        words.contains("capital · openai:gpt-4o: 100.0"),
        "the error is apart"
    );
    // Wilson intervals, the latency box plot and the failures with both answers.
    assert!(
        words.contains("openai:gpt-4o: 40.0 % success, 95 % interval"),
        "{words}"
    );
    assert!(
        doc.descendants()
            .any(|n| n.attribute("id") == Some("bench-latency"))
    );
    assert!(
        words.contains("8 results did not pass: 7 failed, 1 error. All are listed."),
        "{words}"
    );
    assert!(
        words.contains(HOSTILE_EXPECTED),
        "the expected output, stored with the result"
    );
    assert!(words.contains(HOSTILE_ANSWER), "the answer, as text");
    assert!(words.contains("expected `4`, got `five`"));
    assert!(!html.contains("<img"), "hostile markup is escaped");
    // The header: one completed run, its calls and no banner.
    assert!(words.contains("1 run: 1 benchmark"), "{words}");
    assert!(
        !doc.descendants()
            .any(|n| n.attribute("class") == Some("banner"))
    );
}

/// Issue 16: the report showed expected outputs by reading the benchmark file again, and lost
/// them once the file was edited or out of reach. They are stored with the results now.
#[test]
fn expected_outputs_survive_an_edited_or_missing_benchmark_file() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("question 1", "no idea"));
    let expected = "the answer is 42";
    s.write(
        "b.yaml",
        &bench_yaml(&MODELS[..1], &[("p1", "question 1", expected, "icontains")]),
    );
    let out = s.track().args(["run", "b.yaml", "-q"]).output().unwrap();
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
    let shown = format!("<dt>Expected</dt><dd><pre>{expected}</pre>");
    s.write(
        "b.yaml",
        &bench_yaml(&MODELS[..1], &[("p1", "question 1", "edited", "exact")]),
    );
    let html = report(&s, &[]);
    assert!(html.contains(&shown), "after an edit");
    std::fs::remove_file(s.path("b.yaml")).unwrap();
    let html = report(&s, &[]);
    assert!(html.contains(&shown), "without the file");
    assert!(
        !html.contains("predate"),
        "a run of today stored its expected outputs"
    );
}

#[test]
fn a_benchmark_of_many_prompts_shows_its_hardest_and_says_so() {
    let s = Sandbox::new();
    // Prompts 1 and 10-19 fail on both models; 2 and 20-29 on the first model only.
    s.mock.add_rule(Rule::reply("question 1", "no idea"));
    s.mock
        .add_rule(Rule::reply("question 2", "no idea").times(11));
    let prompts: Vec<(String, String)> = (0..45)
        .map(|i| (format!("p{i:02}"), format!("question {i}")))
        .collect();
    let tests: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str(), text.as_str(), "contains"))
        .collect();
    s.write("many.yaml", &bench_yaml(&MODELS[..2], &tests));
    s.track().args(["run", "many.yaml", "-q"]).output().unwrap();
    let html = report(&s, &[]);
    let doc = parse_self_contained(&html);
    let words = all_text(&doc);
    assert!(
        words.contains("The 40 cases with the lowest success across models, of 45."),
        "{words}"
    );
    let rows = table(&doc, "bench-prompts");
    assert_eq!(rows.len(), 40);
    let first: Vec<&str> = rows[..11]
        .iter()
        .map(|r| r["success_pct_all"].as_str())
        .collect();
    assert_eq!(first, ["0.0"; 11], "the hardest first");
    assert_eq!(rows[11]["success_pct_all"], "50.0");
    assert_rows_match_query(
        &doc,
        "bench-prompts",
        &query(&s, &["--by", "prompt"]),
        &["case"],
    );
    let cells = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill").is_some())
        .filter(|n| n.children().any(|c| c.has_tag_name("title")))
        .count();
    assert_eq!(cells, 40 * 2, "the matrix is bounded too");
}

#[test]
fn a_review_report_holds_the_numbers_of_track_query() {
    let s = Sandbox::new();
    crate::review::add_review_files(&s);
    run_reviews(&s);
    let html = report(&s, &[]);
    let doc = parse_self_contained(&html);
    assert_matches_query(
        &doc,
        "review-reviewers",
        &query(&s, &["--by", "reviewer"]),
        &["reviewer"],
    );
    assert_matches_query(
        &doc,
        "review-generator-table",
        &query(&s, &["--by", "generator"]),
        &["reviewer", "generator"],
    );
    assert_matches_query(
        &doc,
        "review-criteria",
        &query(&s, &["--by", "criterion"]),
        &["criterion", "reviewer"],
    );
    assert_matches_query(
        &doc,
        "review-agreement",
        &query(&s, &["--by", "criterion", "--agreement"]),
        &["criterion"],
    );
    let words = all_text(&doc);
    assert!(words.contains("8 reviews by 2 reviewers"), "{words}");
    // Each score's justification, and each N/A with its reason.
    assert!(
        words.contains("P1: fine, \"mostly\"\nsecond line"),
        "{words}"
    );
    assert!(words.contains("overall, ok"));
    assert!(
        words.contains("overall – (failed)"),
        "the unparsable review is listed"
    );
    // Means per generator with intervals, from the pooled scores.
    assert!(
        table(&doc, "review-criteria-generators")
            .iter()
            .any(|r| r["criterion"] == "Overall" && r["generator"] == "openai:gpt-4o")
    );
}

#[test]
fn a_relevance_report_holds_the_numbers_of_track_query_and_the_console() {
    let s = Sandbox::new();
    crate::relevance::add_compare_files(&s);
    run_relevance(&s);
    let html = report(&s, &[]);
    let doc = parse_self_contained(&html);
    assert_matches_query(
        &doc,
        "relevance-summary",
        &query(&s, &["--by", "variant"]),
        &["variant", "class"],
    );
    assert_matches_query(
        &doc,
        "relevance-types",
        &query(&s, &["--by", "variant", "--per-predicate"]),
        &["predicate_type", "variant", "class"],
    );
    // The deltas and McNemar's test as `track relevance compare` wrote them.
    let statistics = std::fs::read_to_string(s.path("out/comparison_statistics.csv")).unwrap();
    let deltas = table(&doc, "relevance-deltas-table");
    let mut checked = 0;
    for line in statistics
        .lines()
        .filter(|l| l.starts_with("delta_with_minus_without"))
    {
        let f: Vec<&str> = line.split(',').collect();
        let name = format!("{} {}", f[1], f[2]);
        let row = deltas
            .iter()
            .find(|r| r["class and metric"] == name)
            .unwrap_or_else(|| panic!("no delta row {name}"));
        for (value, column) in [(f[3], "delta"), (f[4], "low"), (f[5], "high")] {
            let want = value
                .parse::<f64>()
                .map_or("–".to_owned(), |v| format!("{v:.3}"));
            assert_eq!(row[column], want, "{line}");
        }
        checked += 1;
    }
    assert_eq!(checked, 6);
    // Threshold tuning as comparison_thresholds.csv: four readings per variant.
    let thresholds = std::fs::read_to_string(s.path("out/comparison_thresholds.csv")).unwrap();
    let rows = table(&doc, "relevance-thresholds");
    assert_eq!(rows.len(), thresholds.lines().count() - 1);
    assert_eq!(rows[1]["policy"], "uncertain_as_true");
    let words = all_text(&doc);
    let p_exact = statistics
        .lines()
        .find(|l| l.starts_with("mcnemar,,p_exact,"))
        .unwrap()
        .split(',')
        .nth(3)
        .unwrap()
        .parse::<f64>()
        .unwrap();
    assert!(
        words.contains(&format!("p = {p_exact:.4} (exact binomial)")),
        "{words}"
    );
    assert!(
        words.contains("Coverage (certain answers among answered ones): WITH 6 of 8"),
        "{words}"
    );
    assert!(
        words.contains("all types, answer 1 (uncertain): 1 of 2 true"),
        "{words}"
    );
}

#[test]
fn a_run_that_did_not_complete_gets_a_banner_and_runs_can_be_named() {
    let s = Sandbox::new();
    add_bench(&s);
    run_bench(&s);
    run_bench(&s);
    // The first run's process died without ending it.
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    db.execute("UPDATE runs SET status = 'running' WHERE id = 1", [])
        .unwrap();
    drop(db);
    let html = report(&s, &["--run", "1,2"]);
    let doc = parse_self_contained(&html);
    let banner = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("banner"))
        .expect("a banner");
    assert_eq!(banner.attribute("role"), Some("alert"));
    let words = all_text(&doc);
    assert!(words.contains("Run 1 (bench) was abandoned"), "{words}");
    assert!(words.contains("track report: runs 1, 2"));
    assert!(words.contains("Benchmark (runs 1, 2)"));
    // Pooled, as `track query --run all` pools them.
    assert_matches_query(
        &doc,
        "bench-models",
        &query(&s, &["--by", "model", "--run", "all"]),
        &["model"],
    );
    let latest = report(&s, &["--run", "latest"]);
    assert!(latest.contains("Benchmark (run 2)"));
}

#[test]
fn errors_name_what_is_wrong() {
    let s = Sandbox::new();
    let missing_db = s.track().args(["report"]).output().unwrap();
    assert!(text(&missing_db.stderr).contains("no database at"));
    // An empty database: a new one with no runs.
    std::fs::write(s.db_path(), b"").unwrap();
    let empty = s.track().args(["report"]).output().unwrap();
    assert!(!empty.status.success());
    assert!(
        text(&empty.stderr).contains("has no benchmark, review, relevance or pairwise run yet"),
        "{}",
        text(&empty.stderr)
    );
    add_bench(&s);
    run_bench(&s);
    let unknown = s
        .track()
        .args(["report", "--run", "1,99"])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(
        text(&unknown.stderr).contains("no run 99 in this database; the latest are run"),
        "{}",
        text(&unknown.stderr)
    );
    let bad = s.track().args(["report", "--run", "one"]).output().unwrap();
    assert!(text(&bad.stderr).contains("`one` is not a run"));
    let nowhere = s.path("no/such/folder/report.html");
    let unwritable = s
        .track()
        .args(["report", "--out"])
        .arg(&nowhere)
        .output()
        .unwrap();
    assert!(!unwritable.status.success());
    let stderr = text(&unwritable.stderr);
    assert!(
        stderr.contains(&format!("cannot write the report to {}", nowhere.display())),
        "{stderr}"
    );
    // To stdout; a pipe closed before the end ends it quietly with 0, as `| head` ends any
    // Unix tool (issue 45: it exited 2 with "Broken pipe").
    let piped = s.track().args(["report", "--out", "-"]).output().unwrap();
    assert!(text(&piped.stdout).starts_with("<!DOCTYPE html>"));
    let mut child = s
        .track_process()
        .args(["report", "--out", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let closed = child.wait_with_output().unwrap();
    assert_eq!(closed.status.code(), Some(0), "{}", text(&closed.stderr));
    assert_eq!(text(&closed.stderr), "");
}

/// The browser to render with: Debian's `chromium`, else another Chromium on the PATH.
pub(crate) fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "chromium is not installed, and this test renders the report in it: \
         `apt-get install -y chromium` (CI's .ci/run installs it)"
    );
}

/// Screenshots `page` with headless Chromium at 1200 × `height` into `png`.
fn screenshot(page: &Path, png: &Path, height: u32) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size=1200,{height}"))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium took more than 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(png.is_file(), "chromium wrote no screenshot");
}

/// Fails unless the PNG shows something: several colours, and a fair share of pixels that
/// are not the background.
fn assert_not_blank(png: &Path) {
    let image = image::open(png).unwrap().to_rgba8();
    let mut colours: BTreeMap<[u8; 4], u64> = BTreeMap::new();
    for pixel in image.pixels() {
        *colours.entry(pixel.0).or_default() += 1;
    }
    let total: u64 = colours.values().sum();
    let background = colours.values().copied().max().unwrap_or(0);
    let drawn = total - background;
    assert!(colours.len() > 20, "{} colours only", colours.len());
    assert!(
        drawn * 100 > total * 5,
        "only {drawn} of {total} pixels differ from the background"
    );
}

/// Says where a screenshot is: with --nocapture, or on stderr past the capture when
/// TRACK_TEST_VERBOSE is set.
fn show(png: &Path) {
    println!("screenshot: {}", png.display());
    if std::env::var_os("TRACK_TEST_VERBOSE").is_some() {
        let _ = writeln!(std::io::stderr(), "screenshot: {}", png.display());
    }
}

#[test]
#[ignore = "needs chromium (bash .ci/browser.sh install): run with --include-ignored (README)"]
fn the_report_renders_in_a_real_browser() {
    let s = Sandbox::new();
    add_bench(&s);
    crate::review::add_review_files(&s);
    crate::relevance::add_compare_files(&s);
    run_bench(&s);
    run_reviews(&s);
    run_relevance(&s);
    let html = report(&s, &["--run", "all"]);
    parse_self_contained(&html);
    // Kept beside the screenshot, to look at after the test.
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::copy(s.path("report.html"), shots.join("report-all.html")).unwrap();
    let png = shots.join("report-all.png");
    screenshot(&s.path("report.html"), &png, 2000);
    assert_not_blank(&png);
    show(&png);
    // TRACK_DOCS_SCREENSHOTS=1 refreshes the book's pictures (docs/src/images), one per kind.
    if std::env::var_os("TRACK_DOCS_SCREENSHOTS").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/images");
        std::fs::create_dir_all(&docs).unwrap();
        for (run, kind, height) in [
            ("1", "bench", 2600),
            ("2", "review", 2600),
            ("3", "relevance", 2600),
        ] {
            report(&s, &["--run", run]);
            let png = docs.join(format!("report-{kind}.png"));
            screenshot(&s.path("report.html"), &png, height);
            assert_not_blank(&png);
            show(&png);
        }
    }
}
