//! `track export parquet` end to end: two benchmark runs against the mock, exported; the files
//! read back with the `parquet` crate, the manifest, a second export into the same folder, the
//! refusals; and (ignored unless the readers are installed) DuckDB and polars reading the
//! datasets, with counts and per-model pass rates equal to `track query --by model`.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::Value;

use crate::support::mock::Rule;
use crate::support::{Sandbox, bench_yaml, text};

const MODELS: [&str; 3] = [
    "openai:gpt-4o",
    "anthropic:sonnet 3.5",
    "ollama:qwen2.5-coder",
];

/// Two runs of 3 models × 3 prompts: passes, a failure (Anthropic's capital), errors (Ollama
/// refuses `Say hi`), the second run from the cache but for the errors, sent again.
fn two_runs() -> Sandbox {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.mock
        .add_rule(Rule::reply("Capital of France", "Lyon").model("claude-3-5-sonnet-20241022"));
    s.mock
        .add_rule(Rule::reply("Capital of France", "The capital is Paris."));
    s.mock
        .add_rule(Rule::fail("Say hi", 400, 100).model("qwen2.5-coder:7b"));
    s.mock.add_rule(Rule::reply("Say hi", "hi"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &MODELS,
            &[
                ("sum", "What is 2+2?", "4", "exact"),
                ("capital", "Capital of France?", "Paris", "contains"),
                ("hello", "Say hi", "hi", "exact"),
            ],
        ),
    );
    for _ in 0..2 {
        let out = s
            .track()
            .args(["run", "bench.yaml", "-q"])
            .output()
            .unwrap();
        assert!(out.status.code().is_some(), "{}", text(&out.stderr));
    }
    assert_eq!(s.count("SELECT count(*) FROM runs"), 2);
    assert_eq!(s.count("SELECT count(*) FROM bench_results"), 18);
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'error'"),
        2
    );
    s
}

/// The `uid` of run `id`: the name of its partitions.
fn run_uid(s: &Sandbox, id: i64) -> String {
    s.db()
        .query_row("SELECT uid FROM runs WHERE id = ?1", [id], |row| row.get(0))
        .unwrap()
}

fn export(s: &Sandbox, args: &[&str]) -> std::process::Output {
    s.track()
        .args(["export", "parquet"])
        .args(args)
        .output()
        .unwrap()
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap()
}

/// Rows and column names of a Parquet file, read with the `parquet` crate.
fn read_back(path: &Path) -> (i64, Vec<String>) {
    let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
    let meta = reader.metadata().file_metadata();
    let names = meta
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    (meta.num_rows(), names)
}

#[test]
fn export_parquet_writes_hive_partitions_a_manifest_and_adds_to_an_earlier_export() {
    let s = two_runs();
    let out = export(&s, &["--run", "all", "--out", "lake"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let lake = s.path("lake");
    assert!(
        stdout.contains("bench_results: 18 rows, 2 runs"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("manifest.json"), "{stdout}");

    let m = manifest(&lake);
    assert_eq!(m["format"], "track parquet export");
    assert_eq!(m["row_group_rows"], 65_536);
    assert_eq!(m["partitioning"], serde_json::json!(["kind", "run"]));
    let bench = &m["datasets"]["bench_results"];
    assert_eq!(bench["rows"], 18);
    let parts = bench["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    for (part, run) in parts.iter().zip(1..) {
        let uid = run_uid(&s, run);
        let path = format!("bench_results/kind=bench/run={uid}/part-00000.parquet");
        assert_eq!(part["path"], path.as_str());
        assert_eq!(part["rows"], 9);
        assert_eq!(part["run_id"], run);
        let (rows, columns) = read_back(&lake.join(&path));
        assert_eq!(rows, 9);
        // Every column of the table, whatever migrations added (V14's `expected`), then the
        // answer and the human rating the export adds (issue 30).
        let table_columns = s.count("SELECT count(*) FROM pragma_table_info('bench_results')");
        assert_eq!(columns.len() as i64, table_columns + 5, "{columns:?}");
        assert_eq!(
            columns[columns.len() - 5..],
            [
                "answer",
                "human_verdict",
                "human_score",
                "human_comment",
                "rater"
            ]
        );
        assert!(columns.iter().any(|c| c == "expected"));
    }
    // Each run's calls: those its rows reference, once each.
    let calls = &m["datasets"]["calls"]["partitions"];
    for run in [1, 2] {
        let referenced = s.count(&format!(
            "SELECT count(DISTINCT call_id) FROM bench_results WHERE run_id = {run}"
        ));
        let part = calls
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["run_id"] == run)
            .unwrap();
        assert_eq!(part["rows"], referenced, "run {run}");
        let (rows, _) = read_back(&lake.join(part["path"].as_str().unwrap()));
        assert_eq!(rows, referenced);
    }
    // The runs: `kind` is in the path, not the file.
    let runs = &m["datasets"]["runs"];
    assert_eq!(runs["rows"], 2);
    assert_eq!(runs["left_out"], serde_json::json!(["kind"]));
    let (_, columns) = read_back(&lake.join(format!(
        "runs/kind=bench/run={}/part-00000.parquet",
        run_uid(&s, 1)
    )));
    assert!(!columns.contains(&"kind".to_owned()) && columns.contains(&"status".to_owned()));
    // No half-written file left behind.
    let hidden = walk(&lake)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(hidden, 0);

    // Run 2 again, into the same folder: run 1's partitions stay in the manifest.
    let again = export(&s, &["--run", "2", "--kind", "bench", "--out", "lake"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let m = manifest(&lake);
    assert_eq!(m["datasets"]["bench_results"]["rows"], 18);
    assert_eq!(
        m["datasets"]["bench_results"]["partitions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // `latest`: the newest run of each kind that has one.
    let latest = export(&s, &["--run", "latest", "--out", "latest"]);
    assert!(latest.status.success(), "{}", text(&latest.stderr));
    let m = manifest(&s.path("latest"));
    assert_eq!(m["datasets"]["bench_results"]["partitions"][0]["run_id"], 2);
    assert_eq!(m["datasets"]["bench_results"]["rows"], 9);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn export_parquet_refuses_bad_input_in_one_line_each() {
    let s = two_runs();
    s.write("a-file", "not a folder");
    for (args, expected) in [
        (
            vec!["--out", "a-file"],
            "--out a-file is a file, not a folder",
        ),
        (
            vec!["--out", "a-file/lake"],
            "cannot create the folder a-file/lake",
        ),
        (vec!["--run", "99", "--out", "lake"], "no run 99 in"),
        (
            vec!["--kind", "relevance", "--out", "lake"],
            "no relevance run in",
        ),
        (
            vec!["--kind", "review", "--run", "1", "--out", "lake"],
            "run 1 is a bench run, not review",
        ),
    ] {
        let out = export(&s, &args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    }
    assert!(
        !s.path("lake").exists(),
        "nothing written for a selection of nothing"
    );
}

/// `track export … | head -1`: a stdout closed before track writes to it. The export is whole
/// all the same (every file, the manifest last), and it is a success, not a panic.
#[test]
fn exports_into_a_closed_pipe_finish_their_files_and_succeed() {
    let s = two_runs();
    for (args, last_file) in [
        (
            vec!["export", "parquet", "--run", "all", "--out", "lake"],
            "lake/manifest.json",
        ),
        (
            vec!["export", "csv", "--out", "csv"],
            "csv/bench_by_prompt.csv",
        ),
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = s
            .track_process()
            .args(&args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(s.path(last_file).is_file(), "{args:?}: {last_file} missing");
    }
    assert_eq!(
        manifest(&s.path("lake"))["datasets"]["bench_results"]["rows"],
        18
    );
}

/// Ctrl-C halfway through an export: it stops between row groups, exits 130 saying so,
/// leaves no half-written file and no manifest; the same command then exports everything.
#[test]
fn an_export_stopped_by_ctrl_c_leaves_no_half_file_and_the_same_command_finishes() {
    let s = two_runs();
    // Run 1 grows to 180,009 results (three row groups of 65,536): long enough to stop.
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    let columns: Vec<String> = db
        .prepare("SELECT name FROM pragma_table_info('bench_results') WHERE name <> 'id'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let values: Vec<String> = columns
        .iter()
        .map(|c| match c.as_str() {
            "uid" => "lower(hex(randomblob(32)))".to_owned(),
            "repeat_index" => "b.repeat_index + 10 * n.i".to_owned(),
            other => format!("b.{other}"),
        })
        .collect();
    db.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO bench_results ({}) SELECT {} FROM bench_results b, n WHERE b.run_id = 1",
        columns.join(", "),
        values.join(", ")
    ))
    .unwrap();
    drop(db);
    let total = s.count("SELECT count(*) FROM bench_results");
    assert_eq!(total, 180_018);

    let running = s.start(&["export", "parquet", "--run", "all", "--out", "lake"]);
    let lake = s.path("lake");
    let hidden = |lake: &Path| {
        lake.exists()
            && walk(lake)
                .iter()
                .any(|p| p.file_name().unwrap().to_string_lossy().ends_with(".tmp"))
    };
    crate::support::wait_for("a partition being written", || hidden(&lake));
    running.signal("INT");
    let (code, stderr) = running.finish();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("stopped by SIGINT") && stderr.contains("the same command finishes"),
        "{stderr}"
    );
    assert!(
        !hidden(&lake),
        "a half-written file was left: {:?}",
        walk(&lake)
    );
    assert!(!lake.join("manifest.json").exists());

    let again = export(&s, &["--run", "all", "--out", "lake"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(manifest(&lake)["datasets"]["bench_results"]["rows"], total);
}

/// Every kind of run exports: after each case of the runtime matrix, every result table with
/// rows is a dataset whose manifest and files hold exactly the table's rows, and the calls
/// dataset holds every call those rows reference.
#[test]
fn every_kind_exports_all_its_rows_and_their_calls() {
    for case in &crate::runtime::CASES {
        let s = crate::runtime::matrix_sandbox(crate::support::mock::MockProvider::start());
        let out = s.track().args(case.args).arg("-q").output().unwrap();
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));
        let exported = export(&s, &["--out", "lake"]);
        assert!(
            exported.status.success(),
            "{}: {}",
            case.name,
            text(&exported.stderr)
        );
        let m = manifest(&s.path("lake"));
        let datasets = m["datasets"].as_object().unwrap();
        let mut tables = 0;
        for table in [
            "bench_results",
            "generated_datasheets",
            "reviews",
            "review_scores",
            "relevance_predictions",
            "pairwise_answers",
            "pairwise_verdicts",
        ] {
            let rows = s.count(&format!("SELECT count(*) FROM {table}"));
            let dataset = &datasets.get(table);
            if rows == 0 {
                assert!(
                    dataset.is_none(),
                    "{}: an empty {table} exported",
                    case.name
                );
                continue;
            }
            tables += 1;
            let dataset = dataset.unwrap_or_else(|| panic!("{}: {table} missing", case.name));
            assert_eq!(dataset["rows"], rows, "{}: {table}", case.name);
            let in_files: i64 = dataset["partitions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| read_back(&s.path("lake").join(p["path"].as_str().unwrap())).0)
                .sum();
            assert_eq!(in_files, rows, "{}: {table} files", case.name);
        }
        assert!(tables > 0, "{}: no result table exported", case.name);
        let referenced = s.count(
            "SELECT count(*) FROM calls WHERE id IN (
                 SELECT call_id FROM bench_results UNION SELECT judge_call_id FROM bench_results
                 UNION SELECT call_id FROM generated_datasheets UNION SELECT call_id FROM reviews
                 UNION SELECT call_id FROM relevance_predictions
                 UNION SELECT call_id FROM pairwise_answers
                 UNION SELECT call_id FROM pairwise_verdicts)",
        );
        assert!(referenced > 0, "{}", case.name);
        // A pairwise run of candidate models exports its candidates' answers and their calls
        // beside the judges': 2 candidates x 2 prompts answered, 1 pair x 2 prompts x 2
        // orders judged. One of generated datasheets has no answers stage.
        let answers = s.count("SELECT count(*) FROM pairwise_answers");
        match case.name {
            "pairwise file" => {
                assert_eq!(answers, 4, "{}", case.name);
                assert_eq!(datasets["pairwise_answers"]["rows"], 4, "{}", case.name);
                assert_eq!(datasets["pairwise_verdicts"]["rows"], 4, "{}", case.name);
                assert_eq!(datasets["calls"]["rows"], 4 + 4, "{}: calls", case.name);
            }
            _ => assert_eq!(answers, 0, "{}", case.name),
        }
        assert_eq!(
            datasets["calls"]["rows"], referenced,
            "{}: calls",
            case.name
        );
    }
}

/// The venv python of `.ci/parquet-readers.sh`, or why not.
fn readers_python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("bash")
        .arg(root.join(".ci/parquet-readers.sh"))
        .arg("python")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "DuckDB and polars are not installed: bash .ci/parquet-readers.sh install ({})",
        text(&out.stderr)
    );
    PathBuf::from(text(&out.stdout).trim())
}

/// Reads the export with DuckDB and with polars; prints, per reader, the count of results,
/// each run's, and per model: results, passed, failed, errors and the pass rate of the
/// decided (as `track query` computes it), plus the results whose call is missing from the
/// calls of their run.
const READ_SCRIPT: &str = r#"
import json, sys
import duckdb, polars as pl

lake = sys.argv[1]
out = {}

con = duckdb.connect()
results = f"read_parquet('{lake}/bench_results/**/*.parquet', hive_partitioning = true)"
calls = f"read_parquet('{lake}/calls/**/*.parquet', hive_partitioning = true)"
runs = f"read_parquet('{lake}/runs/**/*.parquet', hive_partitioning = true)"
d = {}
d["rows"] = con.execute(f"SELECT count(*) FROM {results}").fetchone()[0]
d["per_run"] = {str(r): n for r, n in con.execute(
    f"SELECT run, count(*) FROM {results} WHERE kind = 'bench' GROUP BY run").fetchall()}
d["models"] = {m: [n, p, f, e, pct] for m, n, p, f, e, pct in con.execute(f"""
    SELECT model_ref, count(*), count(*) FILTER (WHERE status = 'passed'),
           count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'error'),
           100.0 * count(*) FILTER (WHERE status = 'passed')
             / nullif(count(*) FILTER (WHERE status IN ('passed', 'failed')), 0)
    FROM {results} GROUP BY model_ref""").fetchall()}
d["orphans"] = con.execute(f"""
    SELECT count(*) FROM {results} r
    WHERE r.call_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM {calls} c WHERE c.id = r.call_id AND c.run = r.run)""").fetchone()[0]
d["run_kinds"] = sorted({k for (k,) in con.execute(f"SELECT kind FROM {runs}").fetchall()})
d["types"] = {n: t for n, t, *_ in con.execute(
    f"DESCRIBE SELECT id, latency_ms, model_ref FROM {results}").fetchall()}
out["duckdb"] = d

frame = pl.scan_parquet(f"{lake}/bench_results/**/*.parquet", hive_partitioning=True)
p = {}
p["rows"] = frame.select(pl.len()).collect().item()
p["per_run"] = {str(r): n for r, n in
    frame.group_by("run").agg(pl.len()).collect().iter_rows()}
per_model = frame.group_by("model_ref").agg(
    pl.len().alias("n"),
    (pl.col("status") == "passed").sum().alias("passed"),
    (pl.col("status") == "failed").sum().alias("failed"),
    (pl.col("status") == "error").sum().alias("errors"),
).collect()
p["models"] = {}
for m, n, ok, bad, err in per_model.iter_rows():
    decided = ok + bad
    p["models"][m] = [n, ok, bad, err, 100.0 * ok / decided if decided else None]
out["polars"] = p
print(json.dumps(out))
"#;

#[test]
#[ignore = "needs DuckDB and polars (bash .ci/parquet-readers.sh install): run with --include-ignored (README)"]
fn duckdb_and_polars_read_the_export_with_track_querys_counts_and_rates() {
    let python = readers_python();
    let s = two_runs();
    let out = export(&s, &["--out", "lake", "--run", "all"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // What track says, per model over both runs.
    let query = s
        .track()
        .args(["query", "--by", "model", "--run", "all", "--format", "csv"])
        .output()
        .unwrap();
    assert!(query.status.success(), "{}", text(&query.stderr));
    let mut expected: BTreeMap<String, (i64, i64, i64, i64, Option<f64>)> = BTreeMap::new();
    let mut csv = csv::Reader::from_reader(query.stdout.as_slice());
    let headers = csv.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    for record in csv.records() {
        let r = record.unwrap();
        let int = |name: &str| r[at(name)].parse::<i64>().unwrap();
        expected.insert(
            r[at("model")].to_owned(),
            (
                int("results"),
                int("passed"),
                int("failed"),
                int("errors"),
                r[at("success_pct")].parse::<f64>().ok(),
            ),
        );
    }
    assert_eq!(expected.len(), 3, "{}", text(&query.stdout));
    let total: i64 = expected.values().map(|e| e.0).sum();
    assert_eq!(total, 18);

    s.write("read.py", READ_SCRIPT);
    let read = std::process::Command::new(&python)
        .arg(s.path("read.py"))
        .arg(s.path("lake"))
        .output()
        .unwrap();
    assert!(read.status.success(), "{}", text(&read.stderr));
    let got: Value = serde_json::from_slice(&read.stdout).unwrap();

    for reader in ["duckdb", "polars"] {
        let r = &got[reader];
        assert_eq!(r["rows"], total, "{reader}: {r}");
        assert_eq!(
            r["per_run"],
            serde_json::json!({run_uid(&s, 1): 9, run_uid(&s, 2): 9}),
            "{reader}"
        );
        let models = r["models"].as_object().unwrap();
        assert_eq!(models.len(), expected.len(), "{reader}: {r}");
        for (model, (n, passed, failed, errors, pct)) in &expected {
            let m = &models[model.as_str()];
            let counts: Vec<Option<i64>> = (0..4).map(|i| m[i].as_i64()).collect();
            assert_eq!(
                counts,
                [Some(*n), Some(*passed), Some(*failed), Some(*errors)],
                "{reader}, {model}"
            );
            match (pct, m[4].as_f64()) {
                (Some(want), Some(have)) => {
                    assert!(
                        (want - have).abs() < 1e-9,
                        "{reader}, {model}: {want} vs {have}"
                    );
                }
                (None, None) => {}
                other => panic!("{reader}, {model}: pass rates {other:?}"),
            }
        }
    }
    let d = &got["duckdb"];
    assert_eq!(d["orphans"], 0, "every result's call is in its run's calls");
    assert_eq!(d["run_kinds"], serde_json::json!(["bench"]));
    assert_eq!(
        d["types"],
        serde_json::json!({"id": "BIGINT", "latency_ms": "DOUBLE", "model_ref": "VARCHAR"})
    );
}

/// Without --run, `export csv`, `export parquet`, `report` and `query` take the same runs:
/// each kind's default (the latest benchmark); both exports say on stderr what they exported
/// and what they left out, and every --help states the rule.
#[test]
fn exports_take_each_kinds_default_runs_and_say_what_they_left_out() {
    let s = two_runs();
    for args in [
        vec!["export", "csv", "--out", "csv"],
        vec!["export", "parquet", "--out", "lake"],
    ] {
        let out = s.track().args(&args).output().unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains("track: exported bench run 2\n"),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("track: not exported: bench run 1 (each kind's default runs")
                && stderr.contains("`--run all` exports every run"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(
        manifest(&s.path("lake"))["datasets"]["bench_results"]["rows"],
        9,
        "run 2's rows only"
    );
    let csv = std::fs::read_to_string(s.path("csv/bench_results.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        10,
        "a header and run 2's 9 rows:\n{csv}"
    );
    // Given --run, nothing is said about the runs left out.
    let out = export(&s, &["--run", "1", "--out", "one"]);
    assert!(
        !text(&out.stderr).contains("not exported"),
        "{}",
        text(&out.stderr)
    );
    // One rule, stated in every --help.
    for command in [
        vec!["export", "csv"],
        vec!["export", "parquet"],
        vec!["report"],
        vec!["query"],
    ] {
        let out = s.track().args(&command).arg("--help").output().unwrap();
        let help = text(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            help.contains(
                "[default: each kind's default runs, as query, report and export take \
                           them: the latest benchmark, all reviews,"
            ),
            "{command:?}: {help}"
        );
    }
}

/// `tests/data/parquet/`: data files as DuckDB, pyarrow and polars write them (its README).
fn data_files() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/parquet")
}

/// The files of `write.py` in `dir`: every writer in every compression it offers.
fn written_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            ["duckdb-", "pyarrow-", "polars-"]
                .iter()
                .any(|w| name.starts_with(w))
                && name.ends_with(".parquet")
        })
        .collect();
    files.sort();
    files
}

/// What `write.py`'s three cases become in a prompt: NaN and infinity as text, zone-less
/// timestamps without a zone, the UTC one with it, each at its precision, a null struct and
/// a null timestamp or date as nothing, and a field of the null struct null too.
const WRITTEN_PROMPTS: [&str; 3] = [
    "What is 1 * 2? x=0.5 naive=2024-01-02 03:04:05 utc=2024-01-02 03:04:05+00:00 ns=2024-01-02 03:04:05 d=2024-01-02 s={\"k\":1,\"v\":\"x\"} k=1",
    "What is 2 * 3? x=NaN naive=2024-01-02 03:04:05.123456 utc=2024-01-02 03:04:05.500+00:00 ns=2024-01-02 03:04:05.000000001 d=1969-12-31 s= k=",
    "What is 3 * 4? x=inf naive= utc=2024-01-02 03:04:05+00:00 ns=2024-01-02 03:04:05.123456789 d= s={\"k\":null,\"v\":\"y\"} k=",
];

/// Runs a benchmark over each of `files` in turn (as `data.parquet`) against the mock: each
/// loads its three cases, which all pass, and every file gives the same prompts, byte for byte
/// (the first file's reach the mock; every other file's are the same requests, from the
/// cache).
fn every_file_gives_the_written_cases(files: &[PathBuf]) {
    assert_eq!(files.len(), 18, "{files:?}");
    let s = Sandbox::new();
    for (a, b, answer) in [(1, 2, "2"), (2, 3, "6"), (3, 4, "12")] {
        s.mock
            .add_rule(Rule::reply(&format!("What is {a} * {b}?"), answer));
    }
    s.write(
        "math.yaml",
        "models: [openai:gpt-4o-mini]\ntemplates:\n  - name: math\n    prompt: \"What is {{a}} * {{b}}? x={{x}} naive={{naive}} utc={{utc}} ns={{ns}} d={{d}} s={{s}} k={{s.k}}\"\ncases: {from: data.parquet, id: qid}\nchecks: [{method: exact, expected: \"{{answer}}\"}]\n",
    );
    for (i, file) in files.iter().enumerate() {
        std::fs::copy(file, s.path("data.parquet")).unwrap();
        let out = s.track().args(["run", "math.yaml"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", file.display());
        assert!(
            stderr.contains(
                "loaded 3 cases from data.parquet (columns: qid, a, b, answer, x, naive, utc, ns, d, s)"
            ),
            "{}: {stderr}",
            file.display()
        );
        let run = i + 1;
        assert_eq!(
            s.count(&format!(
                "SELECT count(*) FROM bench_results WHERE run_id = {run} AND status = 'passed'"
            )),
            3,
            "{}",
            file.display()
        );
    }
    let mut prompts: Vec<String> = s
        .mock
        .requests()
        .iter()
        .map(|r| r.last_user_text())
        .collect();
    prompts.sort();
    assert_eq!(prompts, WRITTEN_PROMPTS, "one file read otherwise");
}

#[test]
fn data_files_written_by_duckdb_pyarrow_and_polars_are_read_in_every_compression() {
    every_file_gives_the_written_cases(&written_files(&data_files()));
}

#[test]
#[ignore = "needs DuckDB, pyarrow and polars (bash .ci/parquet-readers.sh install): run with --include-ignored (README)"]
fn files_written_now_by_duckdb_pyarrow_and_polars_are_read() {
    let python = readers_python();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&python)
        .arg(data_files().join("write.py"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    every_file_gives_the_written_cases(&written_files(dir.path()));
}

#[test]
fn the_deprecated_lz4_codec_is_read_in_hadoops_framing_and_without_it() {
    let s = Sandbox::new();
    s.write(
        "lz4.yaml",
        "models: [openai:gpt-4o-mini]\ntemplates:\n  - {name: t, prompt: \"{{c0}} {{c1}} {{v11}}\"}\ncases: {from: data.parquet}\nchecks: [{method: contains, value: x}]\n",
    );
    for name in [
        "hadoop_lz4_compressed.parquet",
        "non_hadoop_lz4_compressed.parquet",
    ] {
        std::fs::copy(data_files().join(name), s.path("data.parquet")).unwrap();
        let out = s.track().args(["run", "lz4.yaml"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        assert!(
            stderr.contains("loaded 4 cases from data.parquet (columns: c0, c1, v11)"),
            "{name}: {stderr}"
        );
    }
    let mut prompts: Vec<String> = s
        .mock
        .requests()
        .iter()
        .map(|r| r.last_user_text())
        .collect();
    prompts.sort();
    assert_eq!(
        prompts,
        [
            "1593604800 abc 42.0",
            "1593604800 def 7.7",
            "1593604801 abc 42.125",
            "1593604801 def 7.7",
        ]
    );
}

#[test]
fn a_parquet_file_that_cannot_be_read_is_named_with_what_was_met_before_any_call() {
    let s = Sandbox::new();
    s.write(
        "bad.yaml",
        "models: [openai:gpt-4o-mini]\ntemplates:\n  - {name: t, prompt: \"{{a}}\"}\ncases: {from: data.parquet}\nchecks: [{method: contains, value: x}]\n",
    );
    let whole = std::fs::read(data_files().join("pyarrow-snappy.parquet")).unwrap();
    std::fs::write(s.path("data.parquet"), &whole[..whole.len() / 2]).unwrap();
    let out = s.track().args(["run", "bad.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("data.parquet: not a readable Parquet file: "),
        "{stderr}"
    );
    assert!(!stderr.contains("row 1"), "{stderr}");
    assert_eq!(s.mock.request_count(), 0);
}
