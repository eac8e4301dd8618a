//! Merging 8 shards of 125,000 benchmark results each (1,000,000 results, 1,000,000 calls and
//! their answers) with `track merge`: wall time, CPU time and the peak memory of the process,
//! then the merged plan queried (`track query --by model`) to check it is whole.
//!
//! `cargo bench --bench merge` (release). `TRACK_BENCH_SHARD_RESULTS` changes the results per
//! shard (e.g. 10000 for a quick try in a debug build: `cargo bench --profile dev --bench merge`).
//! `TRACK_BENCH_DIR=DIR` keeps the shards there (filled once, merged again by later runs: a
//! profile of the merge alone is `perf record -g track merge OUT DIR/shard-*.db`), and
//! `TRACK_BENCH_BIN=PATH` merges with another build of `track`.

#[path = "million.rs"]
#[allow(
    dead_code,
    reason = "this benchmark fills shards of its own, not one run of a million"
)]
mod million;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use million::{bench_dir, wait_with_rusage};
use track::store::{BenchResultRow, Outcome, RunStatus, RunTally, Store, uid};

const SHARDS: u32 = 8;
const MODELS: u32 = 20;

/// Shard `k` of a plan of `MODELS` x (`per_shard` x `SHARDS` / `MODELS`) tests: its run, and
/// for each of its results a call with an answer of its own.
#[allow(
    clippy::too_many_lines,
    reason = "a benchmark reads as one scenario, top to bottom"
)]
fn fill_shard(db: &Path, k: u32, per_shard: u32) {
    let store = Store::open(db).expect("open");
    let run_id = store
        .create_run(
            track::experiment::ExperimentKind::Bench,
            Some("sharded.yaml"),
            Some("spec"),
            "{}",
        )
        .expect("run");
    store
        .set_run_plan(run_id, "plan-of-the-merge-benchmark", Some((k, SHARDS)))
        .expect("plan");
    drop(store);
    // Calls and answers straight into the tables, as the writer stores them.
    let mut conn = rusqlite::Connection::open(db).expect("open");
    let tx = conn.transaction().expect("tx");
    let prompts = per_shard * SHARDS / MODELS;
    let mut mine = Vec::with_capacity(per_shard as usize);
    {
        let mut blob = tx
            .prepare(
                "INSERT OR IGNORE INTO blobs (sha256, media_type, size, content)
                 VALUES (?1, 'text/plain', ?2, ?3)",
            )
            .expect("blob");
        let mut call = tx
            .prepare(
                "INSERT INTO calls (cache_key, provider, model, status, response_sha256,
                    input_tokens, output_tokens, latency_ms, attempts, cost_usd, created_at, uid)
                 VALUES (?1, 'openai', ?2, 'ok', ?3, 20, 40, 120.0, 1, 0.0001,
                    '2026-11-25T10:00:00.000Z', ?4)",
            )
            .expect("call");
        for model in 0..MODELS {
            for prompt in 0..prompts {
                // The plan's items, split as --shard splits them.
                if (model * prompts + prompt) % SHARDS != k {
                    continue;
                }
                let text = format!("answer of model {model} to prompt {prompt}");
                let sha = track::hash::sha256_hex(text.as_bytes());
                blob.execute(rusqlite::params![sha, text.len() as i64, text.as_bytes()])
                    .expect("blob");
                let key = track::hash::sha256_hex(format!("{model}/{prompt}").as_bytes());
                let call_uid = uid(&["call".into(), key.as_str().into(), sha.as_str().into()]);
                call.execute(rusqlite::params![
                    key,
                    format!("model-{model}"),
                    sha,
                    call_uid
                ])
                .expect("call");
                mine.push((model, prompt, tx.last_insert_rowid()));
            }
        }
    }
    tx.commit().expect("commit");
    drop(conn);
    let mut store = Store::open(db).expect("open");
    let rows: Vec<BenchResultRow> = mine
        .iter()
        .map(|&(model, prompt, call_id)| BenchResultRow {
            run_id,
            model_index: model,
            prompt_index: prompt,
            repeat_index: 0,
            model_ref: format!("openai:model-{model}"),
            provider: "openai".into(),
            model_id: format!("model-{model}"),
            prompt_name: format!("prompt_{prompt}"),
            method: "exact".into(),
            call_id: Some(call_id),
            cache_hit: false,
            outcome: Outcome::of_test((model + prompt) % 3 != 0),
            detail: None,
            latency_ms: Some(120.0),
            input_tokens: Some(20),
            output_tokens: Some(40),
            tokens_estimated: false,
            cost_usd: Some(0.0001),
            paid_usd: Some(0.0001),
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
        })
        .collect();
    for chunk in rows.chunks(50_000) {
        store.insert_bench_results(chunk).expect("insert");
    }
    let tally = RunTally {
        planned_calls: rows.len() as u64,
        calls: rows.len() as u64,
        ..RunTally::default()
    };
    store.update_run_tally(run_id, &tally).expect("tally");
    store
        .finish_run(run_id, RunStatus::Completed)
        .expect("finish");
}

#[allow(
    clippy::zombie_processes,
    reason = "the child is reaped by wait_with_rusage (wait4), which clippy does not see"
)]
fn main() {
    let per_shard: u32 = std::env::var("TRACK_BENCH_SHARD_RESULTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(125_000);
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = bench_dir(&temp);
    let filled = Instant::now();
    let mut shards = Vec::new();
    for k in 0..SHARDS {
        // A kept folder's shards of this size are merged again as they are.
        let db = dir.join(format!("shard-{k}-of-{per_shard}.db"));
        if !db.exists() {
            // Under another name until whole: a fill stopped halfway is never merged.
            let filling = db.with_extension("filling");
            for stale in ["filling", "filling-wal", "filling-shm"] {
                let _ = std::fs::remove_file(db.with_extension(stale));
            }
            fill_shard(&filling, k, per_shard);
            std::fs::rename(&filling, &db).expect("filled shard");
            let _ = std::fs::remove_file(filling.with_extension("filling-lock"));
        }
        shards.push(db);
    }
    eprintln!(
        "filled {SHARDS} shards of {per_shard} results in {:.1} s",
        filled.elapsed().as_secs_f64()
    );
    let track =
        std::env::var_os("TRACK_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_track").into());
    let out = dir.join("merged.db");
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(dir.join(format!("merged.db{suffix}")));
    }
    let started = Instant::now();
    let child = Command::new(track)
        .arg("-q")
        .arg("merge")
        .arg(&out)
        .args(&shards)
        .spawn()
        .expect("track merge");
    let (status, peak_kib, cpu) = wait_with_rusage(child.id() as i32);
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(status, 0, "track merge failed");
    let total = u64::from(per_shard) * u64::from(SHARDS);
    let merged = rusqlite::Connection::open(&out).expect("merged");
    let rows: i64 = merged
        .query_row("SELECT count(*) FROM bench_results", [], |r| r.get(0))
        .expect("count");
    let status: String = merged
        .query_row(
            "SELECT status FROM runs WHERE merged_into IS NULL AND shard_count = 8",
            [],
            |r| r.get(0),
        )
        .expect("merged run");
    assert_eq!(rows as u64, total, "every result merged");
    assert_eq!(status, "completed");
    println!(
        "merge: {SHARDS} shards x {per_shard} results ({total} results and calls) in {wall:.2} s \
         wall, {cpu:.2} s CPU, peak {:.0} MB; {:.0} results/s",
        peak_kib as f64 / 1024.0,
        total as f64 / wall
    );
}
