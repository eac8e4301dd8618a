//! The time and memory of `track export parquet` over 1,000,000 benchmark results (20 models ×
//! 50,000 prompts), run with `cargo bench --bench parquet` (release) or `cargo bench --profile
//! dev --bench parquet` (a debug build, slower). Not a test.
//!
//! Two cases: the 1,000,000 results alone (as the other benchmarks fill them, without calls),
//! then the same results each referencing a call of its own, so that the export also writes
//! 1,000,000 calls. For each, prints the wall and CPU time of the export, its peak resident
//! memory and the size of what it wrote, for three runs, and checks the manifest's counts.
//! Issue 19's aim: under 5 s and under 300 MB.

#[path = "million.rs"]
mod million;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use million::{bench_dir, build_name, million_db, wait_with_rusage};

fn main() {
    // TRACK_BENCH_DIR keeps the database and the export; otherwise a temp dir.
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = bench_dir(&temp);
    let db = million_db(&dir);
    let with_calls = dir.join("million-calls.db");
    if !with_calls.exists() {
        add_calls(&db, &with_calls);
    }
    let build = build_name();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("track export parquet, {build} build, {cores} cores:");
    println!("1,000,000 results:");
    rounds(&db, &dir.join("parquet"), 0);
    println!("1,000,000 results and their 1,000,000 calls:");
    rounds(&with_calls, &dir.join("parquet-calls"), 1_000_000);
}

/// A copy of `db` where each result references a call of its own, made from the result.
fn add_calls(db: &Path, to: &Path) {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.execute("VACUUM INTO ?1", [to.to_str().expect("a UTF-8 path")])
        .expect("copy");
    drop(conn);
    let conn = rusqlite::Connection::open(to).expect("open the copy");
    conn.execute_batch(
        "BEGIN;
         INSERT INTO calls (id, cache_key, provider, model, status, finish_reason, input_tokens,
                output_tokens, tokens_estimated, latency_ms, attempts, input_price_per_mtok,
                output_price_per_mtok, cost_usd, http_status, created_at)
         SELECT id, lower(hex(randomblob(32))), provider, model_id,
                CASE status WHEN 'error' THEN 'error' ELSE 'ok' END, 'stop', input_tokens,
                output_tokens, 0, latency_ms, 1, 2.5, 10.0, cost_usd, 200, created_at
         FROM bench_results;
         UPDATE bench_rows SET call_id = id;
         COMMIT;",
    )
    .expect("add the calls");
}

/// Three exports of `db` into `out`, each timed and checked.
fn rounds(db: &Path, out: &Path, calls: u64) {
    for round in 1..=3 {
        let _ = std::fs::remove_dir_all(out);
        let started = Instant::now();
        let (status, rss_kb, cpu) = run_export(db, out);
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(status, 0, "track export parquet failed");
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("manifest.json")).expect("the manifest"),
        )
        .expect("a JSON manifest");
        assert_eq!(
            manifest["datasets"]["bench_results"]["rows"], 1_000_000,
            "every result exported"
        );
        assert_eq!(
            manifest["datasets"]["calls"]["rows"].as_u64().unwrap_or(0),
            calls,
            "every call exported"
        );
        println!(
            "{round}. {secs:.2} s wall, {cpu:.2} s CPU, peak RSS {:.0} MB, files {:.1} MB",
            rss_kb as f64 / 1024.0,
            size(out) as f64 / 1e6
        );
    }
}

/// Bytes of the files under `dir`.
fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("read the export")
        .map(|e| {
            let path = e.expect("an entry").path();
            if path.is_dir() {
                size(&path)
            } else {
                std::fs::metadata(&path).map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// Runs `track export parquet --run all` over `db` into `out`; returns its exit status, peak
/// RSS in KiB and CPU seconds.
#[allow(
    clippy::zombie_processes,
    reason = "reaped by wait4, which also reports its peak memory"
)]
fn run_export(db: &Path, out: &Path) -> (i32, i64, f64) {
    let child = Command::new(env!("CARGO_BIN_EXE_track"))
        .args(["export", "parquet", "-q", "--run", "all", "--out"])
        .arg(out)
        .env("TRACK_DB", db)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start track");
    wait_with_rusage(child.id() as i32)
}
