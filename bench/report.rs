//! The time and size of `track report` over 1,000,000 benchmark results (20 models × 50,000
//! prompts), run with `cargo bench --bench report` (release) or `cargo bench --profile dev
//! --bench report` (a debug build, slower). Not a test.
//!
//! Prints the wall and CPU time of the report, its peak resident memory and the size of the
//! file it wrote, for three runs.

#[path = "million.rs"]
mod million;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use million::{bench_dir, build_name, million_db, wait_with_rusage};

fn main() {
    // TRACK_BENCH_DIR keeps the database and the report; otherwise a temp dir.
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = bench_dir(&temp);
    let db = million_db(&dir);
    let out = dir.join("report.html");
    println!(
        "track report over 1,000,000 results, {} build, {} cores:",
        build_name(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for round in 1..=3 {
        let started = Instant::now();
        let (status, rss_kb, cpu) = run_report(&db, &out);
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(status, 0, "track report failed");
        let size = std::fs::metadata(&out).expect("the report").len();
        println!(
            "{round}. {secs:.2} s wall, {cpu:.2} s CPU, peak RSS {:.0} MB, file {:.0} KB",
            rss_kb as f64 / 1024.0,
            size as f64 / 1024.0
        );
    }
}

/// Runs `track report --run all` over `db` into `out`; returns its exit status, peak RSS in
/// KiB and CPU seconds.
#[allow(
    clippy::zombie_processes,
    reason = "reaped by wait4, which also reports its peak memory"
)]
fn run_report(db: &Path, out: &Path) -> (i32, i64, f64) {
    let child = Command::new(env!("CARGO_BIN_EXE_track"))
        .args(["report", "-q", "--run", "all", "--out"])
        .arg(out)
        .env("TRACK_DB", db)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start track");
    wait_with_rusage(child.id() as i32)
}
