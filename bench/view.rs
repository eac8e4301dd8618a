//! The time and memory of `track view` over 1,000,000 benchmark results (20 models × 50,000
//! prompts, each result with a call and an answer of its own), run with `cargo bench --bench
//! view` (release) or `cargo bench --profile dev --bench view` (a debug build, slower). Not a
//! test.
//!
//! Starts the viewer on the database, then times pages over HTTP, each five times (the first
//! one cold): a run's grid (its first page, a filtered one, a far page, a sorted one), a
//! search of a rare word and one of a word every answer holds; then prints the server's peak
//! resident memory. Issue 30's aims: the grid's first page under 300 ms, a search under 1 s,
//! the server under 200 MB.

#[path = "million.rs"]
mod million;

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use million::{bench_dir, build_name, million_db, wait_with_rusage};

#[allow(
    clippy::too_many_lines,
    reason = "a benchmark reads as one scenario, top to bottom"
)]
fn main() {
    // TRACK_BENCH_DIR keeps the database; otherwise a temp dir.
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = bench_dir(&temp);
    let db = million_db(&dir);
    let with_answers = dir.join("million-answers.db");
    if !with_answers.exists() {
        let started = Instant::now();
        add_answers(&db, &with_answers);
        println!(
            "(gave 1,000,000 results their calls and answers, indexed for search, in {:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
    #[allow(
        clippy::zombie_processes,
        reason = "waited for with wait4, for its peak memory (wait_with_rusage)"
    )]
    let mut viewer = Command::new(env!("CARGO_BIN_EXE_track"))
        .args(["view", "--port", "0"])
        .env("TRACK_DB", &with_answers)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start track view");
    let mut line = String::new();
    BufReader::new(viewer.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the address");
    let base = line
        .trim()
        .strip_prefix("track view: ")
        .expect("track view prints its address")
        .trim_end_matches('/')
        .to_owned();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("track view, {} build, {cores} cores:", build_name());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = reqwest::Client::new();
    let pages = [
        ("the grid's first page", "/runs/1", Some(300.0)),
        ("failures", "/runs/1?filter=failures", None),
        ("models disagree", "/runs/1?filter=disagree", None),
        ("page 500", "/runs/1?page=500", None),
        ("slowest first", "/runs/1?sort=latency", None),
        (
            "a search (`zebra`, 100 answers)",
            "/runs/1?q=zebra",
            Some(1000.0),
        ),
        (
            "a search of every answer (`answer`)",
            "/runs/1?q=answer",
            None,
        ),
        ("a transcript", "/runs/1/results/500000", None),
        ("the runs", "/", None),
    ];
    for (what, path, aim) in pages {
        let mut times = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            let status = runtime.block_on(async {
                let response = client
                    .get(format!("{base}{path}"))
                    .send()
                    .await
                    .expect("fetch");
                let status = response.status();
                response.bytes().await.expect("read the page");
                status
            });
            assert!(status.is_success(), "{path}: {status}");
            times.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let worst_warm = times[1..].iter().copied().fold(0.0, f64::max);
        let verdict = aim.map_or_else(String::new, |aim| {
            format!(
                " (aim < {aim:.0} ms: {})",
                if worst_warm < aim { "met" } else { "MISSED" }
            )
        });
        println!(
            "  {what}: cold {:.0} ms, warm {} ms{verdict}",
            times[0],
            times[1..]
                .iter()
                .map(|t| format!("{t:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // Stopped as Ctrl-C stops it, then its peak memory read from its end.
    let stopped = Command::new("kill")
        .args(["-TERM", &viewer.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(stopped.success(), "could not stop track view");
    let (status, peak_kb, cpu) = wait_with_rusage(viewer.id() as i32);
    assert_eq!(status, 0, "track view did not end cleanly");
    let met = if peak_kb < 200 * 1024 {
        "met"
    } else {
        "MISSED"
    };
    println!(
        "  server peak memory: {:.0} MB (aim < 200 MB: {met}), {cpu:.1} s of CPU",
        peak_kb as f64 / 1024.0
    );
}

/// A copy of `db` where each result has a call whose answer is a text of its own (one in
/// 10,000 says `zebra`), stored as track stores them: the search index is filled by the
/// triggers of migration V22 as the calls are inserted.
fn add_answers(db: &Path, to: &Path) {
    // Opened by track first: migrated to the current schema (V22's indexes and triggers).
    drop(track::store::Store::open(db).expect("migrate"));
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.execute("VACUUM INTO ?1", [to.to_str().expect("a UTF-8 path")])
        .expect("copy");
    drop(conn);
    let conn = rusqlite::Connection::open(to).expect("open the copy");
    conn.execute_batch(
        "BEGIN;
         INSERT INTO blobs (sha256, media_type, size, content)
         SELECT printf('%064x', id), 'text/plain; charset=utf-8', 40,
                CAST('The answer to prompt ' || prompt_index || ' is ' || (id % 97)
                     || CASE WHEN id % 10000 = 0 THEN ' zebra' ELSE '' END AS BLOB)
         FROM bench_results;
         INSERT INTO calls (id, cache_key, provider, model, status, response_sha256,
                finish_reason, input_tokens, output_tokens, tokens_estimated, latency_ms,
                attempts, input_price_per_mtok, output_price_per_mtok, cost_usd, http_status,
                created_at)
         SELECT id, printf('k%063x', id), provider, model_id, 'ok', printf('%064x', id), 'stop',
                input_tokens, output_tokens, 0, latency_ms, 1, 2.5, 10.0, cost_usd, 200,
                created_at
         FROM bench_results;
         UPDATE bench_rows SET call_id = id;
         COMMIT;",
    )
    .expect("add the calls and answers");
}
