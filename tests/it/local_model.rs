//! One end-to-end run against a real model server that nobody here wrote: llama.cpp's
//! `llama-server` with SmolLM2-135M, installed and started by `.ci/local-model.sh`.
//! It answers OpenAI chat completions and Anthropic messages with real token counts.
//! Ignored by a plain `cargo test` (a fresh clone has no model server); the README's test
//! command runs them with `--include-ignored`.

use std::path::PathBuf;
use std::process::Command;

use crate::support::{Sandbox, bench_yaml, text};

/// The local server for this test: reused if the script already runs one, else started on a
/// free port and stopped when dropped.
struct LocalServer {
    base_url: String,
    started_here: bool,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/local-model.sh")
}

impl LocalServer {
    fn start() -> Self {
        let status = Command::new("bash")
            .arg(script())
            .arg("status")
            .output()
            .expect("run the script");
        if status.status.success() {
            let env = Command::new("bash")
                .arg(script())
                .arg("env")
                .output()
                .expect("run the script");
            let base_url = text(&env.stdout)
                .lines()
                .find_map(|l| l.strip_prefix("export LOCAL_MODEL_BASE_URL="))
                .expect("the script prints the base URL")
                .to_owned();
            return Self {
                base_url,
                started_here: false,
            };
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let out = Command::new("bash")
            .arg(script())
            .args(["start", &port.to_string()])
            .output()
            .expect("run the script");
        assert!(
            out.status.success(),
            "the local model server did not start (run `bash .ci/local-model.sh install` first):\n{}",
            text(&out.stderr)
        );
        Self {
            base_url: text(&out.stdout).trim().to_owned(),
            started_here: true,
        }
    }
}

/// The tests' one server: the script runs one server at a time, so tests that run at once
/// share it. The first to need it starts it (unless the script already runs one); it stops
/// when the last lease goes.
static SHARED: std::sync::Mutex<(usize, Option<LocalServer>)> = std::sync::Mutex::new((0, None));

/// A test's use of the shared server.
struct ServerLease {
    base_url: String,
}

impl ServerLease {
    fn acquire() -> Self {
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        let server = shared.1.get_or_insert_with(LocalServer::start);
        let base_url = server.base_url.clone();
        shared.0 += 1;
        Self { base_url }
    }
}

impl Drop for ServerLease {
    fn drop(&mut self) {
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        shared.0 -= 1;
        if shared.0 == 0 {
            shared.1 = None;
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new("bash").arg(script()).arg("stop").output();
        }
    }
}

#[test]
#[ignore = "needs llama-server and its model (bash .ci/local-model.sh install): run with --include-ignored (README)"]
fn a_real_llama_cpp_server_answers_in_openai_and_anthropic_formats() {
    let server = ServerLease::acquire();
    let s = Sandbox::new();
    let anthropic_base = server.base_url.trim_end_matches("/v1").to_owned();
    s.write(
        "config.yaml",
        &format!(
            "retry:\n  max_attempts: 3\n  base_delay: 100\n  max_delay: 1000\n\
             providers:\n  llama-anthropic:\n    kind: anthropic\n    base_url: {anthropic_base}\n\
             models:\n  llama-anthropic:smollm2:\n    parameters: 0.135\n"
        ),
    );
    let mut yaml = bench_yaml(
        &["local:smollm2", "llama-anthropic:smollm2"],
        &[
            (
                "capital",
                "What is the capital of France? Answer in one word.",
                "paris",
                "icontains",
            ),
            ("greeting", "Say hello.", "hello", "icontains"),
        ],
    );
    yaml.push_str("max_tokens: 24\n");
    s.write("local.yaml", &yaml);

    let out = s
        .track()
        .args(["run", "local.yaml"])
        .env("LOCAL_MODEL_BASE_URL", &server.base_url)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    // Every evaluation got an answer (pass or fail is the model's business), with the server's
    // own token counts.
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status IN ('passed', 'failed')"),
        4,
        "{stdout}"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE status = 'ok' AND tokens_estimated = 0 AND input_tokens > 5 AND output_tokens > 0"),
        4
    );
    assert_eq!(
        s.count("SELECT count(*) FROM calls WHERE length(cache_key) = 64"),
        4
    );

    // The second run is served from the cache: no new call is stored.
    let again = s
        .track()
        .args(["run", "local.yaml", "--offline"])
        .env("LOCAL_MODEL_BASE_URL", &server.base_url)
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("4 calls, 4 cache hits"));
    assert_eq!(s.count("SELECT count(*) FROM calls"), 4);
}

#[test]
#[ignore = "needs llama-server and its model (bash .ci/local-model.sh install): run with --include-ignored (README)"]
fn a_real_llama_cpp_server_writes_a_structured_review_that_parses() {
    // llama.cpp turns the review's JSON schema (`response_format`) into a grammar: even a
    // 135M model's review can then be read, every score on the scale or null.
    let server = ServerLease::acquire();
    let s = Sandbox::new();
    // A review of 16 criteria is about 1,700 tokens: about a minute on one CPU thread.
    s.write(
        "config.yaml",
        "timeout_secs: 600\nretry:\n  max_attempts: 2\n  base_delay: 100\n  max_delay: 1000\n",
    );
    s.write("data/sensors.csv", "Brand,Sensor\nBosch,BME280\n");
    s.write(
        "datasheet/Bosch_BME280.md",
        "# BME280\nHumidity, pressure and temperature sensor. Supply 1.71 V to 3.6 V. I2C and \
         SPI interfaces. Package LGA 2.5 x 2.5 mm.\n",
    );
    s.write(
        "results/Bosch/BME280/local_smollm2_20250504_030759.md",
        "# BME280 datasheet\nThe BME280 measures humidity, pressure and temperature. It runs \
         from 1.8 V to 3.6 V and talks I2C or SPI.\n",
    );
    let out = s
        .track()
        .args(["review-datasheets", "--reviewer", "local:smollm2"])
        .env("LOCAL_MODEL_BASE_URL", &server.base_url)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let (status, overall): (String, Option<i64>) = s
        .db()
        .query_row("SELECT parse_status, overall_score FROM reviews", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(
        status == "ok" || status == "partial",
        "the structured review was read: {status}\n{stderr}"
    );
    assert!(
        overall.is_none_or(|score| (1..=5).contains(&score)),
        "{overall:?}"
    );
    let request: String = s
        .db()
        .query_row(
            "SELECT CAST(b.content AS TEXT) FROM calls c JOIN blobs b ON b.sha256 = c.cache_key",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(request.contains("\"schema\""), "{request}");
}

#[test]
#[ignore = "needs llama-server and its model (bash .ci/local-model.sh install): run with --include-ignored (README)"]
fn a_real_llama_cpp_server_runs_the_pairwise_example_offline_after() {
    // data/pairwise.yaml as shipped: one local model under two settings, judging itself.
    let server = ServerLease::acquire();
    let s = Sandbox::new();
    s.write(
        "config.yaml",
        "timeout_secs: 600\nretry:\n  max_attempts: 2\n  base_delay: 100\n  max_delay: 1000\n",
    );
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/pairwise.yaml"),
    )
    .unwrap();
    s.write("pairwise.yaml", &example);
    let out = s
        .track()
        .args(["run", "pairwise.yaml"])
        .env("LOCAL_MODEL_BASE_URL", &server.base_url)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // 1 pair x 3 prompts x 1 judge x 2 orders; structured output makes every verdict readable.
    assert_eq!(
        s.count("SELECT count(*) FROM pairwise_verdicts"),
        6,
        "{stderr}"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM pairwise_verdicts WHERE winner = 'invalid'"),
        0,
        "{stderr}"
    );
    let again = s
        .track()
        .args(["run", "pairwise.yaml", "--offline"])
        .env("LOCAL_MODEL_BASE_URL", &server.base_url)
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again.stderr));
}

/// The README's test command, which runs the tests above, is the one CI runs.
#[test]
fn the_readme_test_command_is_what_ci_runs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let command = readme
        .lines()
        .skip_while(|l| *l != "# 2. Run the tests")
        .nth(1)
        .expect("the README's test command, under `# 2. Run the tests`");
    assert!(
        command.ends_with("cargo test --locked -- --include-ignored"),
        "{command}"
    );
    assert_eq!(
        ci.lines().filter(|l| *l == command).count(),
        1,
        ".ci/run runs `{command}`"
    );
}

#[test]
#[ignore = "needs llama-server and its model (bash .ci/local-model.sh install): run with --include-ignored (README)"]
fn the_quick_starts_dataset_runs_both_templates_on_a_real_model() {
    // data/math.yaml as shipped: 20 cases from data/math.jsonl, two templates, two checks.
    let server = ServerLease::acquire();
    let s = Sandbox::new();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["data/math.yaml", "data/math.jsonl"] {
        s.write(file, &std::fs::read_to_string(repo.join(file)).unwrap());
    }
    let out = s
        .track()
        .args(["run", "data/math.yaml"])
        .env("LOCAL_MODEL_BASE_URL", &server.base_url)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("loaded 20 cases from math.jsonl"),
        "{}",
        text(&out.stderr)
    );
    // Every case with both templates got an answer: pass or fail is the model's business.
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status IN ('passed', 'failed')"),
        40,
        "{stdout}"
    );
    assert_eq!(
        s.count("SELECT count(DISTINCT template_index) FROM bench_results"),
        2
    );
    let by_template = s
        .track()
        .args(["query", "--by", "template", "--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&by_template.stdout);
    assert!(
        by_template.status.success(),
        "{}",
        text(&by_template.stderr)
    );
    assert!(csv.contains("terse") && csv.contains("worded"), "{csv}");
}
