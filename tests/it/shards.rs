//! Shards and merges (issue 19): `--shard k/N` splits every kind's plan into disjoint parts
//! that together cover it, `track merge` joins the shards' databases into one run whose
//! summaries equal the unsharded run's, refuses what must not be merged (leaving OUT as it
//! was), is idempotent and order-independent, survives a kill, and shares call caches
//! between unrelated databases.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::runtime::{CASES, Case, comparable, matrix_sandbox};
use crate::support::mock::{MockConfig, MockProvider};
use crate::support::{Sandbox, text};

/// The `--by` summaries of a case's kind.
fn summaries_of(case: &Case) -> &'static [&'static [&'static str]] {
    match case.args[0] {
        "run" if case.args[1] == "bench.yaml" => &[&["--by", "model"], &["--by", "prompt"]],
        "run" if case.args[1] == "cases.yaml" => &[
            &["--by", "model"],
            &["--by", "prompt"],
            &["--by", "template"],
        ],
        "run" if case.args[1].starts_with("pairwise") => &[
            &["--by", "candidate"],
            &["--by", "pair"],
            &["--by", "judge"],
        ],
        "run" if case.args[1] == "relevance.yaml" => &[
            &["--by", "variant"],
            &["--by", "variant", "--per-predicate"],
        ],
        "relevance" => &[&["--by", "variant"]],
        "generate-datasheets" => &[],
        _ => &[
            &["--by", "reviewer"],
            &["--by", "sensor"],
            &["--by", "criterion"],
            &["--by", "criterion", "--agreement"],
        ],
    }
}

/// The case's summaries as CSV, without the columns that depend on timing (latency, time,
/// energy, which a run measures): everything else byte for byte.
fn summaries(s: &Sandbox, case: &Case) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    for by in summaries_of(case) {
        let out = s
            .track()
            .arg("query")
            .args(*by)
            .args(["--run", "latest", "--format", "csv"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} {by:?}: {}",
            case.name,
            text(&out.stderr)
        );
        let csv = text(&out.stdout);
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
        let timed = |name: &str| {
            let name = name.to_ascii_lowercase();
            ["latency", "time", "wh", "energy", "run"]
                .iter()
                .any(|t| name.contains(t))
        };
        let keep: Vec<usize> = (0..header.len()).filter(|&i| !timed(header[i])).collect();
        let mut kept = String::new();
        for line in std::iter::once(header.join(",")).chain(lines.map(str::to_owned)) {
            let cells: Vec<&str> = line.split(',').collect();
            let row: Vec<&str> = keep.iter().filter_map(|&i| cells.get(i).copied()).collect();
            kept.push_str(&row.join(","));
            kept.push('\n');
        }
        all.insert(by.join(" "), kept);
    }
    all
}

/// The pairwise answer rows of database `db`'s runs that no merge superseded, by candidate
/// and item: candidate, item, error, cache hit, then the answer's call by content (status and
/// answer) and by global id, so that a call id not mapped to the database's own call shows.
fn answers(db: &Path) -> Vec<Vec<Option<String>>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT a.candidate, a.item, a.error, CAST(a.cache_hit AS TEXT), c.status,
                    c.response_sha256, c.uid
             FROM pairwise_answers a JOIN runs r ON r.id = a.run_id
             LEFT JOIN calls c ON c.id = a.call_id
             WHERE r.merged_into IS NULL ORDER BY a.candidate, a.item",
        )
        .unwrap();
    stmt.query_map([], |r| (0..7).map(|i| r.get(i)).collect())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Runs `case` as `count` shards, each into `shard-k.db`, all against the sandbox's one mock.
fn run_shards(s: &Sandbox, case: &Case, count: u32) {
    for k in 0..count {
        let out = s
            .track()
            .args(case.args)
            .args(["-q", "--shard", &format!("{k}/{count}")])
            .args(["--db", &format!("shard-{k}.db")])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} shard {k}/{count}: {}",
            case.name,
            text(&out.stderr)
        );
    }
}

/// `track merge OUT shard-0.db … shard-(count-1).db`.
fn merge(s: &Sandbox, out: &str, shards: &[String], extra: &[&str]) -> std::process::Output {
    s.track()
        .arg("merge")
        .arg(out)
        .args(shards)
        .args(extra)
        .output()
        .unwrap()
}

fn shard_files(count: u32) -> Vec<String> {
    (0..count).map(|k| format!("shard-{k}.db")).collect()
}

/// The request bodies the mock received for chat calls (live), as text, without how they were
/// streamed: a model's first call in each process streams its answer (the pacer learns the
/// limits from its head), and which call is first varies.
fn chat_bodies(s: &Sandbox) -> Vec<String> {
    s.mock
        .requests()
        .iter()
        .filter(|r| {
            r.path == "/v1/chat/completions" || r.path == "/v1/messages" || r.path == "/api/chat"
        })
        .map(|r| {
            let mut body = r.body.clone();
            if let Some(fields) = body.as_object_mut().filter(|_| r.path != "/api/chat") {
                fields.remove("stream");
                fields.remove("stream_options");
            }
            body.to_string()
        })
        .collect()
}

#[test]
fn shards_are_disjoint_and_cover_the_plan_for_every_kind() {
    for case in &CASES {
        let whole = matrix_sandbox(MockProvider::start());
        let out = whole.track().args(case.args).arg("-q").output().unwrap();
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));
        let expected: BTreeSet<String> = chat_bodies(&whole).into_iter().collect();
        assert!(!expected.is_empty(), "{}", case.name);
        let counts: &[u32] = if case.args[1] == "bench.yaml" {
            &[1, 2, 3, 8]
        } else {
            &[3]
        };
        for &count in counts {
            let s = matrix_sandbox(MockProvider::start());
            run_shards(&s, case, count);
            let sent = chat_bodies(&s);
            let distinct: BTreeSet<String> = sent.iter().cloned().collect();
            assert_eq!(
                sent.len(),
                distinct.len(),
                "{} in {count} shards: a call sent twice",
                case.name
            );
            assert_eq!(
                distinct, expected,
                "{} in {count} shards: the shards' calls are the plan's",
                case.name
            );
        }
    }
}

#[test]
fn merged_shards_give_the_unsharded_summaries_for_every_kind() {
    for case in &CASES {
        let whole = matrix_sandbox(MockProvider::start());
        let out = whole.track().args(case.args).arg("-q").output().unwrap();
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));

        let s = matrix_sandbox(MockProvider::start());
        run_shards(&s, case, 3);
        let out = merge(&s, "track.db", &shard_files(3), &[]);
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));
        let (merged, unsharded) = (summaries(&s, case), summaries(&whole, case));
        for (by, csv) in &unsharded {
            assert_eq!(
                merged.get(by),
                Some(csv),
                "{} {by}: merged summaries equal the unsharded run's",
                case.name
            );
        }
        assert_eq!(
            comparable(&s, case),
            comparable(&whole, case),
            "{}: merged exports equal the unsharded run's",
            case.name
        );
        // The candidates' answers: the shards' rows, each at its own call in OUT (by uid),
        // and the unsharded run's (by content: the two sandboxes' calls differ in their keys).
        let merged_answers = answers(&s.db_path());
        let mut shards_answers: Vec<_> = shard_files(3)
            .iter()
            .flat_map(|file| answers(&s.path(file)))
            .collect();
        shards_answers.sort();
        assert_eq!(merged_answers, shards_answers, "{}: answers", case.name);
        let by_content = |rows: &[Vec<Option<String>>]| -> Vec<Vec<Option<String>>> {
            rows.iter().map(|row| row[..6].to_vec()).collect()
        };
        assert_eq!(
            by_content(&merged_answers),
            by_content(&answers(&whole.db_path())),
            "{}: answers",
            case.name
        );
        let expected_answers = if case.name == "pairwise file" {
            2 * 2 // candidates x prompts
        } else {
            0
        };
        assert_eq!(merged_answers.len(), expected_answers, "{}", case.name);
        assert!(
            merged_answers.iter().all(|row| row[6].is_some()),
            "{}: every answer's call is in OUT: {merged_answers:?}",
            case.name
        );
        // One run in `track runs`, completed, with the whole plan's tally.
        let runs = s
            .track()
            .args(["runs", "--format", "csv"])
            .output()
            .unwrap();
        let runs = text(&runs.stdout);
        assert_eq!(runs.lines().count(), 2, "{}: {runs}", case.name);
        assert!(runs.contains("completed"), "{}: {runs}", case.name);
        let planned = |db: &Path| -> i64 {
            rusqlite::Connection::open(db)
                .unwrap()
                .query_row(
                    "SELECT calls FROM runs WHERE merged_into IS NULL ORDER BY id DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .unwrap()
        };
        assert_eq!(
            planned(&s.db_path()),
            planned(&whole.db_path()),
            "{}",
            case.name
        );
    }
}

/// A benchmark whose tests pass on some prompts only: 12 prompts, a third expecting what the
/// mock never says.
fn skewed_sandbox() -> Sandbox {
    let s = Sandbox::new();
    let prompts: Vec<(String, String, String)> = (0..12)
        .map(|i| {
            let expected = if i % 3 == 0 { "never said" } else { "mock" };
            (
                format!("p{i}"),
                format!("question {i}"),
                expected.to_owned(),
            )
        })
        .collect();
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p, e)| (n.as_str(), p.as_str(), e.as_str(), "contains"))
        .collect();
    s.write(
        "bench.yaml",
        &crate::support::bench_yaml(&["openai:gpt-4o"], &prompts),
    );
    s
}

/// The success rate `track query --by model` gives, as printed.
fn success_rate(s: &Sandbox, db: &str) -> f64 {
    let out = s
        .track()
        .args(["query", "--by", "model", "--format", "json", "--db", db])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows.as_array().unwrap()[0];
    let (key, value) = row
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.contains("success"))
        .unwrap_or_else(|| panic!("no success column in {row}"));
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number: {value}"))
}

#[test]
fn statistics_come_from_the_merged_rows_not_from_averaging_shards() {
    let s = skewed_sandbox();
    let case = Case {
        name: "skewed benchmark",
        args: &["run", "bench.yaml"],
        ..CASES[0]
    };
    run_shards(&s, &case, 3);
    let per_shard: Vec<f64> = shard_files(3)
        .iter()
        .map(|db| success_rate(&s, db))
        .collect();
    let out = merge(&s, "merged.db", &shard_files(3), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let merged = success_rate(&s, "merged.db");
    // 8 of the 12 tests pass.
    assert!((merged - 100.0 * 8.0 / 12.0).abs() < 0.01, "{merged}");
    let mean = per_shard.iter().sum::<f64>() / per_shard.len() as f64;
    assert!(
        (mean - merged).abs() > 0.1,
        "skewed shards {per_shard:?}: their mean {mean} should differ from the merged {merged}"
    );
    // A lone shard says it is one.
    let out = s
        .track()
        .args(["query", "--by", "model", "--db", "shard-0.db"])
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("shard 0/3"),
        "{}",
        text(&out.stderr)
    );
    let out = s
        .track()
        .args(["report", "-q", "--db", "shard-0.db", "--out", "shard.html"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(s.path("shard.html")).unwrap();
    assert!(
        html.contains("is shard 0/3 of its plan"),
        "the report says so"
    );
    // A shard's own id names the merged run: its diff with the merged run is empty.
    let out = s
        .track()
        .args(["diff", "2", "1", "--db", "merged.db", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("compared with itself"),
        "{}",
        text(&out.stderr)
    );
}

/// The content of a database by global id, for comparing two merges.
fn content(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut lines = Vec::new();
    for (table, columns) in [
        (
            "runs",
            "uid, kind, status, plan_sha256, shard_index, shard_count, calls, paid_usd, \
             (SELECT p.uid FROM runs p WHERE p.id = runs.merged_into)",
        ),
        ("calls", "uid, cache_key, status, response_sha256"),
        (
            "bench_results",
            "uid, (SELECT r.uid FROM runs r WHERE r.id = run_id), status, \
             (SELECT c.uid FROM calls c WHERE c.id = call_id)",
        ),
        ("blobs", "sha256, size"),
    ] {
        let mut stmt = conn
            .prepare(&format!("SELECT {columns} FROM {table}"))
            .unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let mut cells = Vec::new();
                for i in 0..n {
                    let v: rusqlite::types::Value = r.get(i)?;
                    cells.push(format!("{v:?}"));
                }
                Ok(format!("{table}: {}", cells.join(" | ")))
            })
            .unwrap();
        lines.extend(rows.map(Result::unwrap));
    }
    lines.sort();
    lines
}

fn bench_shards(count: u32) -> Sandbox {
    let s = skewed_sandbox();
    let case = Case {
        name: "benchmark",
        args: &["run", "bench.yaml"],
        ..CASES[0]
    };
    run_shards(&s, &case, count);
    s
}

#[test]
fn merging_is_idempotent_and_order_independent() {
    let s = bench_shards(3);
    let files = shard_files(3);
    assert!(merge(&s, "a.db", &files, &[]).status.success());
    let first = content(&s.path("a.db"));
    assert!(merge(&s, "a.db", &files, &[]).status.success());
    assert_eq!(
        content(&s.path("a.db")),
        first,
        "merging again changes nothing"
    );
    let reversed: Vec<String> = files.iter().rev().cloned().collect();
    assert!(merge(&s, "b.db", &reversed, &[]).status.success());
    assert_eq!(content(&s.path("b.db")), first, "the order does not matter");
    // One shard at a time (partial, then whole) ends as all at once.
    let out = merge(&s, "c.db", &files[..1], &["--allow-partial"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("partial"),
        "{}",
        text(&out.stdout)
    );
    assert!(merge(&s, "c.db", &files[1..], &[]).status.success());
    assert_eq!(content(&s.path("c.db")), first, "merged in steps");
    // A merged database merges as its shards do.
    assert!(
        merge(&s, "d.db", &["a.db".to_owned()], &[])
            .status
            .success()
    );
    assert_eq!(content(&s.path("d.db")), first, "a merge of a merge");
}

/// Gives every result of database `db` two check rows (as a benchmark with several checks per
/// case writes them), the second failed; returns how many it wrote.
fn add_check_rows(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(
        "INSERT INTO bench_checks (run_id, model_index, template_index, prompt_index,
             repeat_index, check_index, method, expected, status, score, weight, reason)
         SELECT run_id, model_index, template_index, prompt_index, repeat_index, 0,
             'contains', '4', 'passed', NULL, 1, NULL FROM bench_results;
         INSERT INTO bench_checks (run_id, model_index, template_index, prompt_index,
             repeat_index, check_index, method, expected, status, score, weight, reason)
         SELECT run_id, model_index, template_index, prompt_index, repeat_index, 1,
             'not-contains', 'sorry', 'failed', NULL, 1, 'said sorry' FROM bench_results;",
    )
    .unwrap();
    conn.query_row("SELECT count(*) FROM bench_checks", [], |r| r.get(0))
        .unwrap()
}

/// Merges shards whose results each got rows of `table` from `add` twice (the second adding
/// nothing), checking each row is copied once, belongs to its result in the merged run, and
/// that `half` counts half of them.
fn merged_rows_stay_once_with_their_result(table: &str, add: fn(&Path) -> i64, half: &str) {
    let s = bench_shards(2);
    let files = shard_files(2);
    let written: i64 = files.iter().map(|f| add(&s.path(f))).sum();
    assert!(written > 0);
    for _ in 0..2 {
        // Merging again adds nothing.
        let out = merge(&s, "merged.db", &files, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let conn = rusqlite::Connection::open(s.path("merged.db")).unwrap();
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(count(&format!("SELECT count(*) FROM {table}")), written);
        assert_eq!(
            count(&format!(
                "SELECT count(*) FROM {table} k JOIN bench_results b USING (run_id,
                     model_index, template_index, prompt_index, repeat_index)
                 JOIN runs r ON r.id = k.run_id WHERE r.merged_into IS NULL"
            )),
            written,
            "every row of {table} belongs to its result, in the merged run"
        );
        assert_eq!(
            count(&format!("SELECT count(*) FROM {table} WHERE {half}")),
            written / 2
        );
    }
}

#[test]
fn merged_shards_keep_every_check_row_once_with_its_run() {
    merged_rows_stay_once_with_their_result("bench_checks", add_check_rows, "status = 'failed'");
}

/// Gives every result of database `db` a tool loop of two calls (as a benchmark with `tools:`
/// writes them), the second in a second step; returns how many it wrote.
fn add_tool_calls(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(
        "INSERT INTO tool_calls (run_id, model_index, template_index, prompt_index,
             repeat_index, step, call_index, call_id, name, arguments, result)
         SELECT run_id, model_index, template_index, prompt_index, repeat_index, 1, 0,
             'call_1', 'weather', '{\"city\": \"Paris\"}', '18 C' FROM bench_results;
         INSERT INTO tool_calls (run_id, model_index, template_index, prompt_index,
             repeat_index, step, call_index, call_id, name, arguments, result)
         SELECT run_id, model_index, template_index, prompt_index, repeat_index, 2, 0,
             'call_2', 'clock', '{}', NULL FROM bench_results;",
    )
    .unwrap();
    conn.query_row("SELECT count(*) FROM tool_calls", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn merged_shards_keep_every_tool_call_once_with_its_result() {
    merged_rows_stay_once_with_their_result(
        "tool_calls",
        add_tool_calls,
        "name = 'clock' AND result IS NULL",
    );
}

/// The bytes of `path`, or `None` when it does not exist.
fn bytes(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

#[test]
fn merges_refuse_missing_repeated_unfinished_and_foreign_shards_leaving_out_as_it_was() {
    let s = bench_shards(3);
    let files = shard_files(3);
    // OUT exists, with a teammate's run in it: it must stay as it was.
    std::fs::copy(s.path("shard-0.db"), s.path("out.db")).unwrap();
    let before = bytes(&s.path("out.db"));
    let refused = |args: Vec<String>, extra: &[&str], needle: &str| {
        let out = merge(&s, "out.db", &args, extra);
        assert!(!out.status.success(), "{args:?} merged");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert_eq!(bytes(&s.path("out.db")), before, "{args:?}: OUT changed");
    };
    refused(files[..2].to_vec(), &[], "missing shard 2/3");
    refused(
        vec![files[0].clone(), files[1].clone(), files[1].clone()],
        &[],
        "given twice",
    );
    // The same shard run again, in another database: two runs claim shard 1.
    let case = Case {
        name: "benchmark",
        args: &["run", "bench.yaml"],
        ..CASES[0]
    };
    let again = s
        .track()
        .args(case.args)
        .args(["-q", "--shard", "1/3", "--db", "again-1.db", "--no-cache"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again.stderr));
    refused(
        vec![
            files[0].clone(),
            files[1].clone(),
            files[2].clone(),
            "again-1.db".into(),
        ],
        &[],
        "shard 1/3 of plan",
    );
    // Another plan: the file changed.
    let other = s.path("other.yaml");
    std::fs::write(
        &other,
        std::fs::read_to_string(s.path("bench.yaml")).unwrap() + "\n# edited\n",
    )
    .unwrap();
    let out = s
        .track()
        .args([
            "run",
            "other.yaml",
            "-q",
            "--shard",
            "2/3",
            "--db",
            "other-2.db",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    refused(
        vec![files[0].clone(), files[1].clone(), "other-2.db".into()],
        &[],
        "shards of different plans",
    );
    // An unfinished shard: its run recorded as interrupted.
    std::fs::copy(s.path("shard-2.db"), s.path("cut-2.db")).unwrap();
    rusqlite::Connection::open(s.path("cut-2.db"))
        .unwrap()
        .execute("UPDATE runs SET status = 'interrupted'", [])
        .unwrap();
    refused(
        vec![files[0].clone(), files[1].clone(), "cut-2.db".into()],
        &[],
        "is interrupted, not completed",
    );
    refused(
        vec!["no-such.db".into()],
        &[],
        "no-such.db: no such database file",
    );
    refused(vec!["out.db".into()], &[], "both the output and an input");
    // --allow-partial merges the unfinished one, and says partial.
    let out = merge(
        &s,
        "partial.db",
        &[files[0].clone(), files[1].clone(), "cut-2.db".into()],
        &["--allow-partial"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let status: String = rusqlite::Connection::open(s.path("partial.db"))
        .unwrap()
        .query_row(
            "SELECT status FROM runs WHERE shard_index IS NULL AND shard_count = 3",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(status, "partial");
}

#[test]
fn a_merge_killed_halfway_leaves_out_as_it_was_or_complete() {
    let s = bench_shards(8);
    let files = shard_files(8);
    assert!(merge(&s, "whole.db", &files, &[]).status.success());
    let complete = content(&s.path("whole.db"));
    // OUT holds one shard; each kill lands at another moment of the merge of the rest.
    let mut seen_before = false;
    let mut seen_after = false;
    for delay_ms in [0u64, 5, 10, 20, 30, 45, 60, 90, 130, 200] {
        let out = s.path("out.db");
        let _ = std::fs::remove_file(&out);
        assert!(
            merge(&s, "out.db", &files[..1], &["--allow-partial"])
                .status
                .success()
        );
        let before = content(&out);
        let mut child = s.track_process();
        // What a merge that finished before the kill printed is not the test's output.
        child
            .arg("merge")
            .arg("out.db")
            .args(&files)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = child.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let now = content(&out);
        if now == before {
            seen_before = true;
        } else {
            assert_eq!(now, complete, "killed after {delay_ms} ms: half a merge");
            seen_after = true;
        }
        // The same command then completes it.
        let out = merge(&s, "out.db", &files, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(content(&s.path("out.db")), complete);
    }
    assert!(seen_before, "no kill landed before the merge ended");
    let _ = seen_after;
}

#[test]
fn merging_unrelated_databases_shares_their_caches() {
    let mine = matrix_sandbox(MockProvider::start());
    let out = mine
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A teammate's database, made from the same files: their relevance run.
    let out = mine
        .track()
        .args(["run", "relevance.yaml", "-q", "--db", "theirs.db"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = merge(
        &mine,
        "both.db",
        &["track.db".into(), "theirs.db".into()],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Their relevance run, served from the merged cache: nothing is sent.
    mine.mock.reset_requests();
    let out = mine
        .track()
        .args(["run", "relevance.yaml", "--db", "both.db"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(mine.mock.request_count(), 0, "served from the merged cache");
    let runs = mine
        .track()
        .args(["runs", "--db", "both.db", "--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(
        text(&runs.stdout).lines().count(),
        4,
        "{}",
        text(&runs.stdout)
    );
}

#[test]
fn a_shard_is_named_in_the_dry_run_and_bad_shards_are_refused_in_one_line() {
    let s = skewed_sandbox();
    let out = s
        .track()
        .args(["run", "bench.yaml", "--dry-run", "--shard", "1/3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("shard 1/3 of plan"), "{stdout}");
    let whole = s
        .track()
        .args(["run", "bench.yaml", "--dry-run"])
        .output()
        .unwrap();
    let calls = |out: &str| -> u64 {
        let line = out.lines().find(|l| l.contains("calls planned")).unwrap();
        line.split(" calls planned")
            .next()
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(calls(&stdout) < calls(&text(&whole.stdout)), "{stdout}");
    for (shard, env, needle) in [
        ("3/3", None, "the shards of 3 are 0/3 to 2/3"),
        ("x", None, "write k/N"),
        ("auto", None, "JOB_COMPLETION_INDEX"),
        (
            "auto",
            Some(("SLURM_ARRAY_TASK_ID", "2")),
            "SLURM_ARRAY_TASK_COUNT is not",
        ),
    ] {
        let mut cmd = s.track();
        cmd.args(["run", "bench.yaml", "--shard", shard]);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success(), "{shard}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(needle), "{shard}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    assert_eq!(s.mock.request_count(), 0);
    // A scheduler's shard: the Slurm array 1-3's last task is shard 2/3.
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q", "--shard", "auto"])
        .env("SLURM_ARRAY_TASK_ID", "3")
        .env("SLURM_ARRAY_TASK_COUNT", "3")
        .env("SLURM_ARRAY_TASK_MIN", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        s.count("SELECT shard_index * 10 + shard_count FROM runs"),
        23
    );
}

/// Three shards of the skewed benchmark, shard 2 stopped by its budget after paying for some
/// of its calls (an unfinished attempt), the others finished.
fn shards_with_shard_2_unfinished() -> Sandbox {
    // The mock bills at the catalog's prices of gpt-4o.
    let s = Sandbox::with_mock(MockProvider::start_with(MockConfig {
        prices: vec![("gpt-4o".into(), 2.5, 10.0)],
        ..MockConfig::default()
    }));
    s.write(
        "bench.yaml",
        &std::fs::read_to_string(skewed_sandbox().path("bench.yaml")).unwrap(),
    );
    let case = Case {
        name: "benchmark",
        args: &["run", "bench.yaml"],
        ..CASES[0]
    };
    for k in 0..2 {
        let out = s
            .track()
            .args(case.args)
            .args([
                "-q",
                "--shard",
                &format!("{k}/3"),
                "--db",
                &format!("shard-{k}.db"),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "shard {k}: {}", text(&out.stderr));
    }
    let cut = s
        .track()
        .args(case.args)
        .args(["-q", "--shard", "2/3", "--db", "shard-2.db"])
        .args(["--budget", "0.1234", "--concurrency", "1"])
        .output()
        .unwrap();
    let (status, calls): (String, i64) = rusqlite::Connection::open(s.path("shard-2.db"))
        .unwrap()
        .query_row("SELECT status, calls FROM runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(status, "budget", "{}", text(&cut.stderr));
    assert!(
        calls > 0,
        "the cut attempt paid for nothing: {}",
        text(&cut.stderr)
    );
    s
}

/// Runs shard 2's command again on its database: a new run that finishes the shard.
fn finish_shard_2(s: &Sandbox) {
    let out = s
        .track()
        .args([
            "run",
            "bench.yaml",
            "-q",
            "--shard",
            "2/3",
            "--db",
            "shard-2.db",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_finished_shard_replaces_its_unfinished_attempt_in_out() {
    let s = shards_with_shard_2_unfinished();
    let files = shard_files(3);
    let out = merge(&s, "out.db", &files, &["--allow-partial"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    finish_shard_2(&s);
    // The finished shard alone, into the OUT that holds its unfinished attempt.
    let out = merge(&s, "out.db", &files[2..], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("(completed)"),
        "{}",
        text(&out.stdout)
    );
    assert!(merge(&s, "whole.db", &files, &[]).status.success());
    assert_eq!(
        content(&s.path("out.db")),
        content(&s.path("whole.db")),
        "merged in steps, the attempt replaced, equals all at once"
    );
    let results = |db: &str| -> i64 {
        rusqlite::Connection::open(s.path(db))
            .unwrap()
            .query_row(
                "SELECT count(*) FROM bench_results b JOIN runs r ON r.id = b.run_id
                 WHERE r.merged_into IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(results("out.db"), 12, "one result per prompt, none twice");
}

#[test]
fn every_attempt_paid_is_in_out() {
    let s = shards_with_shard_2_unfinished();
    finish_shard_2(&s);
    assert!(merge(&s, "out.db", &shard_files(3), &[]).status.success());
    let billed = s.mock.billed_usd();
    assert!(billed > 0.0);
    let conn = rusqlite::Connection::open(s.path("out.db")).unwrap();
    let sum = |sql: &str| -> f64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    let close = |a: f64| (a - billed).abs() < 1e-9;
    let calls = sum("SELECT sum(cost_usd) FROM calls");
    assert!(close(calls), "calls cost ${calls}, billed ${billed}");
    let attempts = sum("SELECT sum(paid_usd) FROM runs WHERE shard_index IS NOT NULL");
    assert!(
        close(attempts),
        "the shards' runs paid ${attempts}, billed ${billed}"
    );
    let merged = sum("SELECT paid_usd FROM runs WHERE shard_index IS NULL AND shard_count = 3");
    assert!(
        close(merged),
        "the merged run paid ${merged}, billed ${billed}"
    );
}

#[test]
fn a_partial_merge_says_the_whole_plans_size() {
    // 12 prompts, one model: a plan of 12 calls, of which shards 0 and 1 hold fewer.
    let s = bench_shards(3);
    let out = merge(&s, "out.db", &shard_files(3)[..2], &["--allow-partial"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let recorded = rusqlite::Connection::open(s.path("out.db"))
        .unwrap()
        .query_row(
            "SELECT calls FROM runs WHERE shard_index IS NULL AND shard_count = 3",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap();
    assert!(recorded < 12, "{recorded}");
    let out = s
        .track()
        .args(["query", "--by", "model", "--db", "out.db"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "it recorded {recorded} of the 12 calls it planned"
        )),
        "{stderr}"
    );
    // Shards recorded before their plan's size was (V19): only their own parts are known.
    for k in 0..2 {
        rusqlite::Connection::open(s.path(&format!("shard-{k}.db")))
            .unwrap()
            .execute("UPDATE runs SET plan_calls = NULL", [])
            .unwrap();
    }
    let out = merge(&s, "old.db", &shard_files(3)[..2], &["--allow-partial"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = s
        .track()
        .args(["query", "--by", "model", "--db", "old.db"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "it recorded {recorded} of the {recorded} calls its merged shards planned, of a plan \
             of 3 shards whose size was not recorded"
        )),
        "{stderr}"
    );
}

/// Shards of a benchmark reading an `hf://` file whose branch moved between them: `track merge`
/// names the file, the commit each shard read, and the address pinned to a commit; pinned,
/// the shards merge.
#[test]
fn shards_that_read_a_moved_hf_branch_are_refused_naming_the_commits_and_the_pin() {
    use crate::support::hf::HubServer;
    use crate::support::mock::Rule;
    let before = "0123456789abcdef0123456789abcdef01234567";
    let after = "fedcba9876543210fedcba9876543210fedcba98";
    let data = |version: &str| -> String {
        (1..=4)
            .map(|i| format!("{{\"qid\": \"q{i}\", \"q\": \"Question {i} {version}?\"}}\n"))
            .collect()
    };
    let hub = HubServer::start(before);
    hub.add("acme/qa", "data/test.jsonl", data("v1").as_bytes());
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("Question", "yes"));
    let yaml = |address: &str| {
        format!(
            "models: [openai:gpt-4o-mini]\ntemplates:\n  - {{name: ask, prompt: \"{{{{q}}}}\"}}\ncases: {{from: \"{address}\", id: qid}}\nchecks: [{{method: contains, value: \"yes\"}}]\n"
        )
    };
    let run_shard = |k: u32, db: &str| {
        let out = s
            .track()
            .args([
                "run",
                "hf.yaml",
                "-q",
                "--shard",
                &format!("{k}/2"),
                "--db",
                db,
            ])
            .env("HF_ENDPOINT", hub.url())
            .output()
            .unwrap();
        assert!(out.status.success(), "shard {k}: {}", text(&out.stderr));
    };
    let moving = "hf://datasets/acme/qa/data/test.jsonl";
    s.write("hf.yaml", &yaml(moving));
    run_shard(0, "shard-0.db");
    // The branch moves before the second shard starts, on another machine.
    hub.set_commit(after);
    hub.add("acme/qa", "data/test.jsonl", data("v2").as_bytes());
    run_shard(1, "shard-1.db");
    let out = merge(&s, "out.db", &shard_files(2), &[]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "merged: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!(
            "the shards read {moving} as different data: shard-0.db read commit {before} and shard-1.db read commit {after}; its revision moved between the shards; pin a commit in the address (hf://datasets/acme/qa@{before}/data/test.jsonl) so that every shard reads the same bytes, and run the shards again"
        )),
        "{stderr}"
    );
    assert!(!s.path("out.db").exists());
    // Pinned, as the message says: both shards read the same bytes, and they merge.
    s.write(
        "hf.yaml",
        &yaml(&format!("hf://datasets/acme/qa@{before}/data/test.jsonl")),
    );
    run_shard(0, "pinned-0.db");
    run_shard(1, "pinned-1.db");
    let out = merge(
        &s,
        "out.db",
        &["pinned-0.db".to_owned(), "pinned-1.db".to_owned()],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}
