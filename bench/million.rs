//! What the benchmarks share: a database of 1,000,000 benchmark results, and the peak memory
//! of a child process.

use std::path::{Path, PathBuf};

use track::store::{BenchResultRow, Outcome, RunStatus, RunTally, Store};

/// The folder a benchmark works in: `TRACK_BENCH_DIR` when set (kept, for profiling), else
/// `temp`.
pub fn bench_dir(temp: &tempfile::TempDir) -> PathBuf {
    match std::env::var_os("TRACK_BENCH_DIR") {
        Some(kept) => {
            let kept = PathBuf::from(kept);
            std::fs::create_dir_all(&kept).expect("create TRACK_BENCH_DIR");
            kept
        }
        None => temp.path().to_path_buf(),
    }
}

/// `dir`'s million.db, filled by [`fill_million`] unless a kept folder has it already.
pub fn million_db(dir: &Path) -> PathBuf {
    let db = dir.join("million.db");
    if !db.exists() {
        let started = std::time::Instant::now();
        fill_million(&db);
        println!(
            "(wrote 1,000,000 results in {:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
    db
}

/// The build profile the benchmark was compiled in, for its heading.
pub fn build_name() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// Waits for `pid` and returns its exit status, peak resident set size in KiB and CPU seconds.
#[allow(
    unsafe_code,
    reason = "std has no wait4, the one way to a child's peak memory"
)]
pub fn wait_with_rusage(pid: i32) -> (i32, i64, f64) {
    let mut status = 0;
    // SAFETY: rusage is a plain C struct, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a plain syscall on a child we spawned and have not waited for, writing into
    // two locals that outlive it.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4 failed");
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    (libc::WEXITSTATUS(status), usage.ru_maxrss, cpu)
}

/// A database with one run of 1,000,000 results: 20 models x 50,000 prompts.
pub fn fill_million(db: &Path) {
    let mut store = Store::open(db).expect("open");
    let run_id = store
        .create_run(
            track::experiment::ExperimentKind::Bench,
            Some("million.yaml"),
            None,
            "{}",
        )
        .expect("run");
    let mut rows = Vec::with_capacity(50_000);
    for model in 0..20u32 {
        for prompt in 0..50_000u32 {
            let passed = (model + prompt) % 3 != 0;
            rows.push(BenchResultRow {
                run_id,
                model_index: model,
                prompt_index: prompt,
                repeat_index: 0,
                model_ref: format!("openai:model-{model}"),
                provider: "openai".into(),
                model_id: format!("model-{model}"),
                prompt_name: format!("prompt_{prompt}"),
                method: "exact".into(),
                call_id: None,
                cache_hit: prompt % 2 == 0,
                outcome: if prompt % 97 == 0 {
                    Outcome::Error
                } else {
                    Outcome::of_test(passed)
                },
                detail: None,
                latency_ms: Some(100.0 + f64::from(prompt % 50)),
                input_tokens: Some(u64::from(10 + prompt % 20)),
                output_tokens: Some(u64::from(20 + prompt % 40)),
                tokens_estimated: false,
                cost_usd: Some(0.0001),
                paid_usd: Some(0.00005),
                energy_wh: Some(0.01),
                energy_wh_min: Some(0.005),
                energy_wh_max: Some(0.015),
                energy_method: Some("ecologits-0.9".into()),
                judge_call_id: None,
                judge_score: None,
                judge_cost_usd: None,
                expected: Some("4".into()),
                template_index: 0,
                template_name: None,
                score: None,
                checks: Vec::new(),
            });
        }
        store.insert_bench_results(&rows).expect("insert");
        rows.clear();
    }
    let tally = RunTally {
        planned_calls: 1_000_000,
        calls: 1_000_000,
        ..RunTally::default()
    };
    store.update_run_tally(run_id, &tally).expect("tally");
    store
        .finish_run(run_id, RunStatus::Completed)
        .expect("finish");
}
