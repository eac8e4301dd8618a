//! Performance benchmarks of `track` (run with `cargo bench --bench throughput`; not a test).
//!
//! 1. 2,000 calls to a mock provider answering after 50 ms, at concurrency 64, against the
//!    ideal 64 / 0.05 s = 1,280 calls/s.
//! 2. The same run again, all cached, in results per second (and a larger cached run).
//! 3. `track query --by model` and `--by prompt` over a database of 1,000,000 results.
//!
//! Each figure comes with the peak resident memory of the `track` process (wait4's maxrss).
//! `TRACK_BENCH_PARTS` names the cases to run (`1` the first only, `3` the queries only, `1,3`);
//! all by default. `TRACK_BENCH_VERBOSE=1` shows the first case's log (`-v`).
//! `TRACK_BENCH_BIN=PATH` runs that `track` binary instead of the one cargo built with the bench.

#[path = "million.rs"]
mod million;
#[path = "../tests/it/support/mock.rs"]
mod mock;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use million::{bench_dir, build_name, million_db, wait_with_rusage};
use mock::{MockConfig, MockProvider};

fn main() {
    // TRACK_BENCH_DIR keeps the databases and files for profiling; otherwise a temp dir.
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = bench_dir(&temp);

    let mock = MockProvider::start_with(MockConfig {
        delay: Duration::from_millis(50),
        record_bodies: false,
        ..MockConfig::default()
    });
    println!(
        "track benchmarks, {} build ({} cores)",
        build_name(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let parts = std::env::var("TRACK_BENCH_PARTS").unwrap_or_default();
    let runs = |case: &str| parts.trim().is_empty() || parts.split(',').any(|p| p.trim() == case);
    if runs("1") || runs("2") {
        calls(&mock, &dir, runs("2"));
    }
    if runs("3") {
        queries(&mock, &dir);
    }
}

/// Cases 1 and 2 (2 only when `cached`): fresh calls, then the same again cached.
fn calls(mock: &MockProvider, dir: &Path, cached: bool) {
    // 1. Fresh calls.
    let bench = write_bench(dir, "calls.yaml", 2_000);
    let db = dir.join("calls.db");
    // A kept TRACK_BENCH_DIR starts afresh: the fresh calls would be cached.
    remove_db(&db);
    // TRACK_BENCH_VERBOSE=1 lets track log with -v (times since its start, on stderr) to
    // show where the run spends its time.
    let verbosity = match std::env::var_os("TRACK_BENCH_VERBOSE") {
        Some(_) => "-v",
        None => "-q",
    };
    let (secs, rss) = run_track(
        mock,
        &db,
        &[
            "run",
            path(&bench),
            verbosity,
            "--no-detail",
            "--concurrency",
            "64",
        ],
    );
    assert_eq!(mock.request_count(), 2_000, "every call reached the mock");
    let rate = 2_000.0 / secs;
    println!(
        "1. 2,000 calls, 50 ms each, concurrency 64: {secs:.2} s = {rate:.0} calls/s = {:.1} % of the ideal 1,280/s; peak RSS {rss:.1} MB",
        rate / 1_280.0 * 100.0
    );

    if !cached {
        return;
    }

    // 2. The same run, all cached.
    let (secs, rss) = run_track(mock, &db, &["run", path(&bench), "-q", "--no-detail"]);
    assert_eq!(mock.request_count(), 2_000, "the cached run sent requests");
    println!(
        "2. the same 2,000 again, all cached: {secs:.3} s = {:.0} results/s (process start and summaries included); peak RSS {rss:.1} MB",
        2_000.0 / secs
    );
    let big = write_bench(dir, "cached.yaml", 50_000);
    let fast = MockProvider::start_with(MockConfig {
        delay: Duration::ZERO,
        record_bodies: false,
        ..MockConfig::default()
    });
    let big_db = dir.join("cached.db");
    remove_db(&big_db);
    run_track(
        &fast,
        &big_db,
        &[
            "run",
            path(&big),
            "-q",
            "--no-detail",
            "--concurrency",
            "64",
        ],
    );
    let (secs, rss) = run_track(&fast, &big_db, &["run", path(&big), "-q", "--no-detail"]);
    assert_eq!(fast.request_count(), 50_000, "the cached run sent requests");
    println!(
        "   50,000 cached: {secs:.3} s = {:.0} results/s; peak RSS {rss:.1} MB",
        50_000.0 / secs
    );
}

/// Case 3: `track query` over a million results, `--by model` and `--by prompt` in CSV, and
/// `--by prompt` in the other formats too. A kept TRACK_BENCH_DIR keeps its million.db.
fn queries(mock: &MockProvider, dir: &Path) {
    let million = million_db(dir);
    for (by, format) in [
        ("model", "csv"),
        ("prompt", "csv"),
        ("prompt", "table"),
        ("prompt", "json"),
    ] {
        let (secs, rss) = run_track(
            mock,
            &million,
            &["query", "--by", by, "--run", "all", "--format", format],
        );
        println!(
            "3. track query --by {by} --format {format} over 1,000,000 results: {secs:.3} s; peak RSS {rss:.1} MB"
        );
    }
}

/// Removes the database `db` and its write-ahead log, if any.
fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let mut file = db.as_os_str().to_owned();
        file.push(suffix);
        // Absent is fine: there is nothing to remove.
        let _ = std::fs::remove_file(PathBuf::from(file));
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// A benchmark of `n` distinct prompts on one OpenAI model.
fn write_bench(dir: &Path, name: &str, n: usize) -> PathBuf {
    let mut yaml = String::from("models:\n  - openai:gpt-4o\nprompts:\n");
    for i in 0..n {
        yaml.push_str(&format!(
            "  - p{i}:\n    prompt: \"benchmark question {i}\"\n    output: \"mock\"\n    method: contains\n"
        ));
    }
    let file = dir.join(name);
    std::fs::write(&file, yaml).expect("write benchmark");
    file
}

/// Runs the release binary against `mock`; returns wall seconds and peak RSS in MB, and
/// prints the process's CPU time.
#[allow(
    clippy::zombie_processes,
    reason = "reaped by wait4, which also reports its peak memory"
)]
fn run_track(mock: &MockProvider, db: &Path, args: &[&str]) -> (f64, f64) {
    // TRACK_BENCH_BIN runs another build of track (to compare two builds in the same minutes;
    // a shared target directory's `track` is whichever build came last).
    let binary = std::env::var_os("TRACK_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_track")), PathBuf::from);
    let started = Instant::now();
    let child = Command::new(binary)
        .args(args)
        .env("TRACK_DB", db)
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .env("OPENAI_API_KEY", "sk-bench")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start track");
    let (status, rss_kb, cpu) = wait_with_rusage(child.id() as i32);
    let secs = started.elapsed().as_secs_f64();
    println!("   (track {}: {secs:.3} s wall, {cpu:.3} s CPU)", args[0]);
    assert!(status == 0, "track {args:?} exited with {status}");
    (secs, rss_kb as f64 / 1024.0)
}
