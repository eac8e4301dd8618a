//! The runtime's promises, as a matrix over every kind of experiment: a benchmark file, a
//! benchmark reading its cases from a data file with two templates, a review file, a
//! relevance file, `generate-datasheets`, `review-datasheets`, `relevance compare`, and
//! pairwise files of both forms (candidate models, generated datasheets). A dry run sends
//! nothing and prints the bound; `--offline` on an uncached plan sends nothing and fails
//! naming the misses; a signal leaves the run `interrupted` and the same command finishes it
//! paying only for what had not landed; a budget too small stops the run and a larger one
//! finishes it from the cache; a missing key gives error rows for that model only;
//! `--repeat 2` gives distinct cache entries; `--batch` gives the same results at half the
//! cost.

use std::collections::BTreeMap;

use crate::support::mock::{Hold, MockProvider};
use crate::support::{Sandbox, text};

/// One way of running an experiment, with what its missing-key case removes.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) args: &'static [&'static str],
    /// The key variable whose absence the missing-key test tries, and the model it blocks.
    pub(crate) keyless: (&'static str, &'static str),
    /// Whether other models of the experiment still answer without that key.
    pub(crate) others_answer: bool,
}

pub(crate) const CASES: [Case; 9] = [
    Case {
        name: "benchmark file",
        args: &["run", "bench.yaml"],
        keyless: ("ANTHROPIC_API_KEY", "anthropic:haiku 3.5"),
        others_answer: true,
    },
    Case {
        name: "benchmark from data",
        args: &["run", "cases.yaml"],
        keyless: ("ANTHROPIC_API_KEY", "anthropic:haiku 3.5"),
        others_answer: true,
    },
    Case {
        name: "review file",
        args: &["run", "review.yaml"],
        keyless: ("ANTHROPIC_API_KEY", "anthropic:haiku 3.5"),
        others_answer: true,
    },
    Case {
        name: "relevance file",
        args: &["run", "relevance.yaml"],
        keyless: ("OPENAI_API_KEY", "openai:gpt-4o"),
        others_answer: false,
    },
    Case {
        name: "generate-datasheets",
        args: &["generate-datasheets", "--model", "openai:gpt-4o"],
        keyless: ("OPENAI_API_KEY", "openai:gpt-4o"),
        others_answer: false,
    },
    Case {
        name: "review-datasheets",
        args: &[
            "review-datasheets",
            "--reviewer",
            "anthropic:haiku 3.5,openai:gpt-4o",
        ],
        keyless: ("ANTHROPIC_API_KEY", "anthropic:haiku 3.5"),
        others_answer: true,
    },
    Case {
        name: "relevance compare",
        args: &[
            "relevance",
            "compare",
            "--model",
            "openai:gpt-4o",
            "--images",
            "blocks/state_*.png",
            "--ground-truth",
            "blocks/ground_truth.json",
            "--out",
            "rel",
        ],
        keyless: ("OPENAI_API_KEY", "openai:gpt-4o"),
        others_answer: false,
    },
    Case {
        name: "pairwise file",
        args: &["run", "pairwise.yaml"],
        keyless: ("ANTHROPIC_API_KEY", "anthropic:haiku 3.5"),
        others_answer: true,
    },
    Case {
        name: "pairwise datasheets file",
        args: &["run", "pairwise_sheets.yaml"],
        keyless: ("ANTHROPIC_API_KEY", "anthropic:haiku 3.5"),
        others_answer: false,
    },
];

/// A sandbox with the files of every case: a benchmark of 2 models x 4 prompts, 4 sensors
/// with official and generated datasheets, a review file (one generator, one reviewer), 3
/// synthetic blocks-world images, a relevance file, a pairwise file (two candidate models,
/// one judge, two prompts) and a pairwise file of two versions of two sensors' datasheets.
pub(crate) fn matrix_sandbox(mock: MockProvider) -> Sandbox {
    let s = Sandbox::with_mock(mock);
    let prompts: Vec<(String, String)> = (0..4)
        .map(|i| (format!("p{i}"), format!("benchmark question {i}")))
        .collect();
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_str(), "mock", "contains"))
        .collect();
    s.write(
        "bench.yaml",
        &crate::support::bench_yaml(&["openai:gpt-4o", "anthropic:haiku 3.5"], &prompts),
    );
    // Cases from a data file, two templates each.
    let rows: Vec<String> = (0..3)
        .map(|i| format!(r#"{{"qid": "c{i}", "topic": "data question {i}"}}"#))
        .collect();
    s.write("data/cases.jsonl", &(rows.join("\n") + "\n"));
    s.write(
        "cases.yaml",
        "models: [openai:gpt-4o, anthropic:haiku 3.5]\n\
         templates:\n  - {name: plain, prompt: \"{{topic}}?\"}\n  - {name: polite, prompt: \"Please: {{topic}}\"}\n\
         cases: {from: data/cases.jsonl, id: qid}\n\
         checks: [{method: contains, value: mock}]\n",
    );
    let sensors = [
        ("Bosch", "BME280"),
        ("TI", "HDC1080"),
        ("Sensirion", "SHT31"),
        ("Bosch", "BMP280"),
    ];
    let mut list = String::from("Brand,Sensor\n");
    for (i, (brand, sensor)) in sensors.iter().enumerate() {
        list.push_str(&format!("{brand},{sensor}\n"));
        s.write(
            &format!("datasheet/{brand}_{sensor}.md"),
            &format!("# {brand} {sensor} official\nSupply 3.3 V\n"),
        );
        s.write(
            &format!("results/{brand}/{sensor}/openai_gpt-4o_20250504_03080{i}.md"),
            &format!("{sensor} generated earlier"),
        );
    }
    s.write("data/sensors.csv", &list);
    s.write(
        "review.yaml",
        "kind: review\ngenerators: [ollama:llama3.2]\nreviewers: [anthropic:haiku 3.5]\n",
    );
    crate::support::synth_blocks(&s, 3, "blocks");
    s.write(
        "relevance.yaml",
        "kind: relevance\nmodel: openai:gpt-4o\nimages: \"blocks/state_*.png\"\nground_truth: blocks/ground_truth.json\nout: rel\n",
    );
    // The two candidates answer differently, so a pair's two orders are two requests.
    s.mock.add_rule(
        crate::support::mock::Rule::reply("pairwise question", "the llama's answer")
            .model("llama3.2:3b"),
    );
    // Two versions of two sensors' datasheets, apart from the review's `results/`.
    for (brand, sensor) in &sensors[..2] {
        for (file, version) in [
            ("openai_gpt-4o_20250101_000000", "one"),
            ("anthropic_haiku_20250102_000000", "two"),
        ] {
            s.write(
                &format!("pw_results/{brand}/{sensor}/{file}.md"),
                &format!("{sensor} datasheet version {version}"),
            );
        }
    }
    s.write(
        "pairwise_sheets.yaml",
        "kind: pairwise\ncandidates: datasheets\nresults: pw_results\njudges: [anthropic:haiku 3.5]\n",
    );
    s.write(
        "pairwise.yaml",
        "kind: pairwise\ncandidates: [openai:gpt-4o, ollama:llama3.2]\njudges: [anthropic:haiku 3.5]\n\
         prompts:\n  - q1:\n    prompt: pairwise question 1\n  - q2:\n    prompt: pairwise question 2\n",
    );
    s
}

/// `track <case> <extra>` in `s`.
fn run(s: &Sandbox, case: &Case, extra: &[&str]) -> std::process::Output {
    s.track().args(case.args).args(extra).output().unwrap()
}

/// The `N calls planned` of a dry run's last line.
fn planned(stdout: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.contains("calls planned"))
        .unwrap_or_else(|| panic!("no plan line in {stdout}"));
    let before = line.split(" calls planned").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn a_dry_run_sends_nothing_and_prints_the_bound_for_every_kind() {
    for case in &CASES {
        let s = matrix_sandbox(MockProvider::start());
        let out = run(&s, case, &["--dry-run"]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));
        assert_eq!(s.mock.request_count(), 0, "{}: sent requests", case.name);
        assert!(
            stdout.contains("0 cached") && stdout.contains("at most $"),
            "{}: {stdout}",
            case.name
        );
        assert!(planned(&stdout) > 0, "{}", case.name);
        assert!(
            !s.db_path().exists(),
            "{}: a dry run made a database",
            case.name
        );
        // After a real run, the same plan is all cached.
        let real = run(&s, case, &["-q"]);
        assert!(
            real.status.success(),
            "{}: {}",
            case.name,
            text(&real.stderr)
        );
        let sent = s.mock.request_count();
        let again = run(&s, case, &["--dry-run"]);
        let stdout = text(&again.stdout);
        assert!(
            stdout.contains(" to call") && stdout.contains(", 0 to call"),
            "{}: {stdout}",
            case.name
        );
        assert_eq!(s.mock.request_count(), sent, "{}", case.name);
        assert_eq!(
            planned(&stdout),
            sent as u64,
            "{}: the plan counts every call a run makes",
            case.name
        );
    }
}

#[test]
fn offline_on_an_uncached_plan_sends_nothing_and_fails_naming_the_misses() {
    for case in &CASES {
        let s = matrix_sandbox(MockProvider::start());
        let out = run(&s, case, &["--offline"]);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{}: {stderr}", case.name);
        assert_eq!(s.mock.request_count(), 0, "{}", case.name);
        assert!(
            stderr.contains("--offline") && stderr.contains("not in the cache"),
            "{}: {stderr}",
            case.name
        );
        assert!(!stderr.contains("panicked"), "{}: {stderr}", case.name);
    }
}

/// Sends `signal` to a run of `case` while its second request is held; releases that request
/// once the run has taken the signal; returns its exit code.
fn interrupt(s: &Sandbox, case: &Case, signal: &str) -> Option<i32> {
    s.mock.hold(Hold::From(2));
    let mut args = case.args.to_vec();
    args.extend(["-q", "--concurrency", "1"]);
    let run = s.start(&args);
    s.mock.wait_held(1);
    run.signal(signal);
    run.wait_for_stderr(&format!("{signal} received: sending no more calls"));
    s.mock.release();
    let (code, stderr) = run.finish();
    assert!(
        stderr.contains("interrupted: run 1"),
        "{} {signal}: {stderr}",
        case.name
    );
    code
}

#[test]
fn a_signal_leaves_the_run_interrupted_and_the_same_command_finishes_it() {
    let signals = [("INT", 130), ("TERM", 143), ("HUP", 129)];
    for (i, case) in CASES.iter().enumerate() {
        let (signal, code) = signals[i % signals.len()];
        let s = matrix_sandbox(MockProvider::start()).patient();
        assert_eq!(
            interrupt(&s, case, signal),
            Some(code),
            "{} {signal}",
            case.name
        );
        let status: String = s
            .db()
            .query_row("SELECT status FROM runs WHERE id = 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(status, "interrupted", "{} {signal}", case.name);
        let sent = s.mock.request_count() as i64;
        let landed = s.count("SELECT count(*) FROM calls WHERE status = 'ok'");
        assert_eq!(
            landed, sent,
            "{} {signal}: every call in flight landed and was stored",
            case.name
        );
        let planned = s.count("SELECT planned_calls FROM runs WHERE id = 1");
        assert_eq!(
            sent, 2,
            "{} {signal}: the call in flight landed and no other was sent ({sent} of {planned})",
            case.name
        );
        let out = run(&s, case, &["-q"]);
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));
        assert_eq!(
            s.count("SELECT count(*) FROM calls WHERE status = 'ok'"),
            s.mock.request_count() as i64,
            "{} {signal}: nothing was paid twice",
            case.name
        );
        assert_eq!(
            s.count("SELECT count(DISTINCT cache_key) FROM calls"),
            s.mock.request_count() as i64,
            "{} {signal}",
            case.name
        );
        assert_eq!(
            s.count("SELECT cache_hits FROM runs WHERE id = 2"),
            sent,
            "{} {signal}: what landed before the signal is served from the cache",
            case.name
        );
        let status: String = s
            .db()
            .query_row("SELECT status FROM runs WHERE id = 2", [], |r| r.get(0))
            .unwrap();
        assert_eq!(status, "completed", "{}", case.name);
        // The interrupted run points to the run that finished it.
        let runs = s
            .track()
            .args(["runs", "--format", "json"])
            .output()
            .unwrap();
        let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
        let first = runs
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == 1)
            .unwrap();
        assert_eq!(first["status"], "interrupted", "{}: {runs}", case.name);
        assert_eq!(first["resumed_by"], 2, "{}: {runs}", case.name);
        let table = text(
            &s.track()
                .args(["runs"])
                .env("COLUMNS", "200")
                .output()
                .unwrap()
                .stdout,
        );
        assert!(
            table.contains("interrupted, resumed by 2"),
            "{}: {table}",
            case.name
        );
    }
}

#[test]
fn a_missing_key_gives_error_rows_for_that_model_only() {
    for case in &CASES {
        let s = matrix_sandbox(MockProvider::start());
        let (var, model) = case.keyless;
        let out = s.track().args(case.args).env_remove(var).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.success(),
            case.others_answer,
            "{}: exit non-zero only when nothing could run: {stderr}",
            case.name
        );
        let errors = s.count("SELECT count(*) FROM run_errors");
        let own = s.count(&format!(
            "SELECT count(*) FROM run_errors WHERE model_ref = '{model}' AND error LIKE '%{var}%'"
        ));
        assert!(
            errors > 0 && own == errors,
            "{}: {own} of {errors}",
            case.name
        );
        assert_eq!(
            s.count("SELECT failed_calls FROM runs WHERE id = 1"),
            errors,
            "{}",
            case.name
        );
        let answered = s.count("SELECT calls - failed_calls FROM runs WHERE id = 1");
        assert_eq!(answered > 0, case.others_answer, "{}", case.name);
        // A run that exits 1 because nothing could run is not listed `completed`.
        let status: String = s
            .db()
            .query_row("SELECT status FROM runs WHERE id = 1", [], |r| r.get(0))
            .unwrap();
        let ended = if case.others_answer {
            "completed"
        } else {
            "failed"
        };
        assert_eq!(status, ended, "{}: {stderr}", case.name);
        assert!(stderr.contains(var), "{}: {stderr}", case.name);
        let listed = s
            .track()
            .args(["runs", "--errors", "1", "--format", "csv"])
            .output()
            .unwrap();
        let listed = text(&listed.stdout);
        assert_eq!(
            listed.lines().count() as i64,
            1 + errors,
            "{}: {listed}",
            case.name
        );
        assert!(
            listed
                .lines()
                .skip(1)
                .all(|l| l.contains(model) && l.contains(var)),
            "{}: {listed}",
            case.name
        );
    }
}

#[test]
fn repeat_two_gives_distinct_cache_entries_for_every_kind() {
    for case in &CASES {
        let s = matrix_sandbox(MockProvider::start());
        let once = planned(&text(&run(&s, case, &["--dry-run"]).stdout));
        let twice = planned(&text(
            &run(&s, case, &["--dry-run", "--repeat", "2"]).stdout,
        ));
        assert!(twice > once, "{}: {once} -> {twice}", case.name);
        let out = run(&s, case, &["-q", "--repeat", "2"]);
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));
        // The plan bounds the calls; identical requests (two samples of a deterministic
        // mock written into two datasheets) are sent once.
        let keys = s.count("SELECT count(DISTINCT cache_key) FROM calls") as u64;
        assert!(
            keys > once && keys <= twice,
            "{}: {once} < {keys} <= {twice}",
            case.name
        );
        assert_eq!(s.mock.request_count() as u64, keys, "{}", case.name);
    }
}

#[test]
fn a_budget_too_small_stops_the_run_and_a_larger_one_finishes_it_from_the_cache() {
    for case in &CASES {
        let s = matrix_sandbox(MockProvider::start());
        let out = run(&s, case, &["-q", "--budget", "0.0000001"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}: {}",
            case.name,
            text(&out.stderr)
        );
        let status: String = s
            .db()
            .query_row("SELECT status FROM runs WHERE id = 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(status, "budget", "{}", case.name);
        let sent = s.mock.request_count() as i64;
        let out = run(&s, case, &["-q", "--budget", "1000"]);
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));
        assert_eq!(
            s.count("SELECT cache_hits FROM runs WHERE id = 2"),
            sent,
            "{}: what the small budget paid for is served from the cache",
            case.name
        );
        assert_eq!(
            s.count("SELECT count(*) FROM calls WHERE status = 'ok'"),
            s.mock.request_count() as i64,
            "{}: nothing was paid twice",
            case.name
        );
    }
}

#[test]
fn options_that_make_no_sense_for_a_kind_are_refused_by_name() {
    let s = matrix_sandbox(MockProvider::start());
    for (args, want) in [
        (
            vec!["run", "review.yaml", "--energy", "seed-linear"],
            "--energy does not apply to review experiments",
        ),
        (
            vec!["run", "relevance.yaml", "--energy", "seed-linear"],
            "--energy does not apply to relevance experiments",
        ),
        (
            vec![
                "run",
                "relevance.yaml",
                "--models",
                "openai:gpt-4o,openai:gpt-4o-mini",
            ],
            "--models with several models does not apply to relevance experiments",
        ),
        (
            vec!["run", "bench.yaml", "--repeat", "4294967295", "--dry-run"],
            "`repeat: 4294967295` is more than the 10000 samples",
        ),
    ] {
        let out = s.track().args(&args).output().unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn queries_and_exports_say_when_a_run_is_not_completed() {
    let s = matrix_sandbox(MockProvider::start()).patient();
    assert_eq!(interrupt(&s, &CASES[0], "INT"), Some(130));
    let out = s
        .track()
        .args(["query", "--by", "model", "--format", "csv"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("warning: run 1 is interrupted") && stderr.contains("of the 8 calls"),
        "{stderr}"
    );
    let csv = text(&out.stdout);
    assert!(csv.lines().next().unwrap().ends_with(",status"), "{csv}");
    assert!(
        csv.lines().nth(1).unwrap().ends_with(",interrupted"),
        "{csv}"
    );
    let out = s
        .track()
        .args(["export", "csv", "--out", "exp"])
        .output()
        .unwrap();
    assert!(text(&out.stderr).contains("run 1 is interrupted"));
    let results = std::fs::read_to_string(s.path("exp/bench_results.csv")).unwrap();
    assert!(
        results.lines().next().unwrap().contains("run_status"),
        "{results}"
    );
    assert!(
        results.lines().nth(1).unwrap().contains("interrupted"),
        "{results}"
    );
}

#[test]
fn a_killed_run_is_shown_abandoned() {
    let s = matrix_sandbox(MockProvider::start()).patient();
    s.mock.hold(Hold::From(2));
    let mut run = s.start(&["run", "bench.yaml", "-q", "--concurrency", "1"]);
    s.mock.wait_held(1);
    let runs = s
        .track()
        .args(["runs", "--format", "csv"])
        .output()
        .unwrap();
    assert!(
        text(&runs.stdout).contains(",running,"),
        "{}",
        text(&runs.stdout)
    );
    run.kill(); // SIGKILL: no chance to mark anything
    s.mock.release();
    let runs = s
        .track()
        .args(["runs", "--format", "csv"])
        .output()
        .unwrap();
    assert!(
        text(&runs.stdout).contains(",abandoned,"),
        "{}",
        text(&runs.stdout)
    );
    let out = s.track().args(["query", "--by", "model"]).output().unwrap();
    assert!(
        text(&out.stderr).contains("run 1 is abandoned"),
        "{}",
        text(&out.stderr)
    );
}

/// What a run of the matrix left that must not depend on how its calls were sent: every file
/// `track export csv` writes, without the columns that do (latency, cost, prices, energy,
/// times, ids), and the answers by model.
pub(crate) fn comparable(s: &Sandbox, case: &Case) -> BTreeMap<String, Vec<Vec<String>>> {
    let out = s
        .track()
        .args([
            "export", "csv", "--run", "latest", "--out", "exports", "--kind",
        ])
        .arg(match case.args[0] {
            "run" if case.args[1] == "bench.yaml" => "bench",
            "run" if case.args[1] == "review.yaml" => "review",
            "run" if case.args[1].starts_with("pairwise") => "pairwise",
            "generate-datasheets" | "review-datasheets" => "review",
            _ => "relevance",
        })
        .output()
        .unwrap();
    // `generate-datasheets` records datasheets, not rows: compared below, by their texts.
    let no_rows = text(&out.stderr).contains("no run matches");
    assert!(
        out.status.success() || no_rows,
        "{}: {}",
        case.name,
        text(&out.stderr)
    );
    let volatile = |name: &str| {
        let name = name.to_ascii_lowercase();
        [
            "latency", "cost", "paid", "price", "wh", "energy", "_at", "time", "run_id", "call_id",
        ]
        .iter()
        .any(|v| name.contains(v))
    };
    let mut files = BTreeMap::new();
    let mut paths = Vec::new();
    let mut dirs = vec![s.path("exports"), s.path("results")];
    let mut datasheets = Vec::new();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "csv") {
                paths.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                datasheets.push(vec![std::fs::read_to_string(&path).unwrap()]);
            }
        }
    }
    for path in paths {
        let mut reader = csv::Reader::from_path(&path).unwrap();
        let headers = reader.headers().unwrap().clone();
        let keep: Vec<usize> = (0..headers.len())
            .filter(|&i| !volatile(&headers[i]))
            .collect();
        let mut rows: Vec<Vec<String>> =
            vec![keep.iter().map(|&i| headers[i].to_owned()).collect()];
        for record in reader.records() {
            let record = record.unwrap();
            rows.push(keep.iter().map(|&i| record[i].to_owned()).collect());
        }
        rows[1..].sort();
        let name = path.strip_prefix(s.dir.path()).unwrap();
        files.insert(name.to_string_lossy().into_owned(), rows);
    }
    let db = s.db();
    let mut stmt = db
        .prepare(
            "SELECT model, response_sha256 FROM calls WHERE status = 'ok' \
             AND provider IN ('openai', 'anthropic') ORDER BY 1, 2",
        )
        .unwrap();
    let answers = stmt
        .query_map([], |r| Ok(vec![r.get(0)?, r.get(1)?]))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    files.insert("answers".into(), answers);
    datasheets.sort();
    files.insert("datasheets".into(), datasheets);
    files
}

/// What the calls of OpenAI and Anthropic models cost, as recorded.
fn batchable_cost(s: &Sandbox) -> f64 {
    s.db()
        .query_row(
            "SELECT coalesce(sum(cost_usd), 0) FROM calls WHERE status = 'ok' \
             AND provider IN ('openai', 'anthropic')",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn batch_runs_every_kind_through_the_batch_apis_at_half_the_cost_with_the_same_results() {
    for case in &CASES {
        let live = matrix_sandbox(MockProvider::start());
        let out = run(&live, case, &["-q"]);
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));

        let s = matrix_sandbox(MockProvider::start());
        s.mock.batches().set_speed(1_000_000.0);
        let out = s
            .track()
            .args(case.args)
            .args(["-q", "--batch"])
            .env("TRACK_BATCH_POLL_MS", "20,200")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {}", case.name, text(&out.stderr));
        let live_calls = s
            .mock
            .requests()
            .iter()
            .filter(|r| r.path == "/v1/chat/completions" || r.path == "/v1/messages")
            .count();
        assert_eq!(
            live_calls, 0,
            "{}: no live call to a batch API's provider",
            case.name
        );
        assert!(!s.mock.batches().list().is_empty(), "{}", case.name);
        assert_eq!(
            comparable(&s, case),
            comparable(&live, case),
            "{}: the same results as a live run",
            case.name
        );
        let (batched, full) = (batchable_cost(&s), batchable_cost(&live));
        assert!(full > 0.0, "{}", case.name);
        assert!(
            (batched - full / 2.0).abs() < 1e-12,
            "{}: batched {batched} vs live {full}",
            case.name
        );
    }
}
