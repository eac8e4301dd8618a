//! Benchmarks from data (issue 29; run with `cargo bench --bench cases`; not a test).
//!
//! A JSONL file of 100,000 cases, 2 templates and 2 models: 400,000 results.
//! 1. `track run --dry-run`: read the file, render every request, plan and look every call
//!    up in the cache (target: under 2 s and 300 MB).
//! 2. The same run with every answer in the cache (filled here through the library, with the
//!    keys the plan computes), in results per second (target: at least 50,000/s).
//!
//! Each figure comes with the peak resident memory of the `track` process (wait4's maxrss).
//! `TRACK_BENCH_CASES=N` changes the number of cases; `TRACK_BENCH_DIR` keeps the files.

#[allow(
    dead_code,
    reason = "the benchmarks share million.rs; this one needs only its helpers"
)]
#[path = "million.rs"]
mod million;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use million::{bench_dir, build_name, wait_with_rusage};
use track::bench::{BenchExperiment, BenchSpec};
use track::config::Catalog;
use track::experiment::{Experiment, Overrides};
use track::store::{NewCall, Store};

fn main() {
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = bench_dir(&temp);
    let cases: usize = std::env::var("TRACK_BENCH_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    println!(
        "track benchmarks from data, {} build ({} cores): {cases} cases x 2 templates x 2 models",
        build_name(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let bench = write_files(&dir, cases);
    let db = dir.join("cases.db");
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let mut file = db.as_os_str().to_owned();
        file.push(suffix);
        // Absent is fine: there is nothing to remove.
        let _ = std::fs::remove_file(PathBuf::from(file));
    }
    let results = cases * 4;

    // 1. The plan, on an empty database (nothing cached: every call looked up, none found).
    Store::open(&db).expect("create the database");
    let (secs, rss) = run_track(&db, &["run", path(&bench), "--dry-run"]);
    println!(
        "1. --dry-run (load {cases} cases, render {results} requests, plan, look each up): {secs:.2} s; peak RSS {rss:.0} MB"
    );

    // 2. Every answer in the cache, then the run.
    let started = Instant::now();
    fill_cache(&bench, &db);
    println!(
        "   (stored {results} answers through the library in {:.1} s)",
        started.elapsed().as_secs_f64()
    );
    let (secs, rss) = run_track(&db, &["run", path(&bench), "-q", "--no-detail"]);
    let store = Store::open(&db).expect("open");
    let runs = store.list_runs().expect("runs");
    let run = runs.iter().max_by_key(|r| r.id).expect("the cached run");
    assert_eq!(
        (run.tally.calls, run.tally.cache_hits),
        (results as u64, results as u64),
        "the run was not all cached"
    );
    println!(
        "2. the run, all cached: {secs:.2} s = {:.0} results/s (process start, summaries and report included); peak RSS {rss:.0} MB",
        results as f64 / secs
    );
    let (secs, rss) = run_track(&db, &["run", path(&bench), "--dry-run"]);
    println!("   --dry-run again, all cached: {secs:.2} s; peak RSS {rss:.0} MB");
}

/// `cases.jsonl` and `cases.yaml` in `dir`; returns the benchmark's path.
fn write_files(dir: &Path, cases: usize) -> PathBuf {
    let mut jsonl = String::with_capacity(cases * 60);
    for i in 0..cases {
        let (a, b) = (i % 1000, i / 1000 + 2);
        jsonl.push_str(&format!(
            "{{\"qid\": \"q{i}\", \"a\": {a}, \"b\": {b}, \"answer\": \"{}\"}}\n",
            a * b
        ));
    }
    std::fs::write(dir.join("cases.jsonl"), jsonl).expect("write cases");
    let yaml = "models: [openai:gpt-4o-mini, openai:gpt-4o]\n\
                templates:\n  - {name: terse, prompt: \"What is {{a}} * {{b}}? The number only.\"}\n  \
                - {name: steps, system: Think step by step., prompt: \"Multiply {{a}} by {{b}}.\"}\n\
                cases: {from: cases.jsonl, id: qid}\n\
                checks:\n  - {method: exact, value: \"{{answer}}\"}\n  - {method: icontains, value: \"{{answer}}\"}\n";
    let file = dir.join("cases.yaml");
    std::fs::write(&file, yaml).expect("write benchmark");
    file
}

/// Stores an answer for every call the benchmark plans, under the key the plan gives it.
fn fill_cache(bench: &Path, db: &Path) {
    let text = std::fs::read_to_string(bench).expect("read benchmark");
    let spec = BenchSpec::parse(bench, &text).expect("benchmark");
    let experiment = BenchExperiment::new(
        spec,
        &Catalog::builtin(),
        &Overrides::default(),
        track::energy::EnergyMethod::default(),
    )
    .expect("resolve");
    let stage = experiment.stage(0, None).expect("plan").expect("stage 0");
    let mut store = Store::open(db).expect("open");
    for call in &stage.calls {
        store
            .insert_call(&NewCall {
                cache_key: &call.job.canonical.key,
                canonical_request: call.job.canonical_json().into(),
                provider: "openai",
                model: &call.job.request.model,
                outcome: Ok("42"),
                finish_reason: Some("stop"),
                input_tokens: Some(12),
                output_tokens: Some(1),
                tokens_estimated: false,
                latency_ms: 300.0,
                attempts: 1,
                input_price_per_mtok: Some(0.15),
                output_price_per_mtok: Some(0.6),
                cost_usd: Some(0.000_002_4),
                http_status: Some(200),
            })
            .expect("store an answer");
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// Runs the benchmark's `track` binary on `db` (its answers all cached: nothing is sent);
/// returns wall seconds and peak RSS in MB, and prints the process's CPU time.
#[allow(
    clippy::zombie_processes,
    reason = "reaped by wait4, which also reports its peak memory"
)]
fn run_track(db: &Path, args: &[&str]) -> (f64, f64) {
    let binary = std::env::var_os("TRACK_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_track")), PathBuf::from);
    let started = Instant::now();
    let child = Command::new(binary)
        .args(args)
        .env("TRACK_DB", db)
        // The default endpoint, as the cache was filled with (the key names the endpoint):
        // nothing is sent, and the run's tally says so.
        .env_remove("OPENAI_BASE_URL")
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
