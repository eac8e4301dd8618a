//! Batch mode as a user meets it around the runtime: `--batch` and `--detach` (refused when
//! they contradict the run), `batch:` in config.yaml and in experiment files, the `waiting`
//! status in `track runs`, `track batches` (listing, cancel against the batch mock), and the
//! half-price bound of `--dry-run --batch`.

use crate::support::mock::MockProvider;
use crate::support::{Sandbox, bench_yaml, text};

/// A benchmark of `models` and two prompts, with `extra` lines before it.
fn bench(s: &Sandbox, name: &str, models: &[&str], extra: &str) {
    let yaml = bench_yaml(
        models,
        &[
            ("p1", "first question", "mock", "contains"),
            ("p2", "second question", "mock", "contains"),
        ],
    );
    s.write(name, &format!("{extra}{yaml}"));
}

#[test]
fn batch_with_offline_and_detach_without_batch_are_refused_before_anything_is_sent() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", &["openai:gpt-4o"], "");
    for extra in [&[][..], &["--dry-run"][..]] {
        let out = s
            .track()
            .args(["run", "bench.yaml", "--batch", "--offline"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(
            stderr.trim_end(),
            "track: --batch sends calls to a provider's batch API; --offline forbids calls: \
             drop one"
        );
        let out = s
            .track()
            .args(["run", "bench.yaml", "--detach"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("track: --detach ") && stderr.contains("--batch"),
            "{stderr}"
        );
    }
    assert!(!s.db_path().exists(), "a refused run opens no database");
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn batch_true_in_an_experiment_file_is_batch_mode_and_detach_is_then_accepted() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", &["openai:gpt-4o"], "batch: true\n");
    let out = s
        .track()
        .args(["run", "bench.yaml", "--detach", "--dry-run"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("dry run"), "{stdout}");
    // --offline wins over the file's `batch: true`: nothing is sent, the cache serves what
    // it has (only --batch itself, asked on the same command line, is a contradiction).
    let out = s
        .track()
        .args(["run", "bench.yaml", "--offline", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // An unknown key is still refused.
    bench(&s, "typo.yaml", &["openai:gpt-4o"], "batched: true\n");
    let out = s.track().args(["run", "typo.yaml"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unknown key `batched`"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn batch_in_config_per_provider_and_model_shows_in_track_models() {
    let s = Sandbox::with_mock(MockProvider::start());
    s.write(
        "config.yaml",
        "providers:
  openrouter:
    kind: openai-compatible
    base_url: http://127.0.0.1:9/v1
    batch: openai
  anthropic:
    batch: off
models:
  openrouter:llama:
    model: meta/llama
  anthropic:sonnet 3.5:
    batch: anthropic
  openai:gpt-4o:
    batch: \"off\"
",
    );
    let out = s
        .track()
        .args(["models", "--format", "csv"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let header: Vec<&str> = stdout.lines().next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|h| *h == "batch")
        .expect("batch column");
    let batch_of = |reference: &str| -> String {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{reference},")))
            .unwrap_or_else(|| panic!("{reference} in {stdout}"));
        line.split(',').nth(column).unwrap().to_owned()
    };
    assert_eq!(batch_of("openai:gpt-4o-mini"), "openai");
    assert_eq!(batch_of("openai:gpt-4o"), "");
    assert_eq!(batch_of("anthropic:haiku 3.5"), "");
    assert_eq!(batch_of("anthropic:sonnet 3.5"), "anthropic");
    assert_eq!(batch_of("openrouter:llama"), "openai");
    assert_eq!(batch_of("ollama:qwen2.5-coder"), "");
    let json = s
        .track()
        .args(["models", "--format", "json"])
        .output()
        .unwrap();
    assert!(text(&json.stdout).contains("\"batch\": \"anthropic\""));
    assert!(text(&json.stdout).contains("\"batch\": null"));
}

#[test]
fn a_bad_batch_in_config_is_one_line_naming_the_setting_and_the_allowed_values() {
    let s = Sandbox::with_mock(MockProvider::start());
    for (yaml, expected) in [
        (
            "models:\n  openai:gpt-4o:\n    batch: openia\n",
            "`batch: openia` is not a batch API: write openai, anthropic or off",
        ),
        (
            "providers:\n  ollama:\n    batch: openai\n",
            "`ollama`: `batch: openai` does not fit a provider of kind ollama",
        ),
    ] {
        s.write("config.yaml", yaml);
        let out = s.track().args(["models"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("config.yaml"), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}

mod recorded {
    //! Batches recorded in the sandbox's database as the runtime records them (intent, file,
    //! batch id, the create's answer), sent to the batch mock by track's own client.

    use std::collections::HashMap;
    use std::time::Duration;

    use track::llm::batch::{self, BatchApi, BatchInfo};
    use track::llm::client::ApiKey;
    use track::llm::{ChatRequest, Endpoint, LlmClient, Message, ProviderKind, SamplingParams};
    use track::store::{NewBatch, RunStatus, Store};

    use crate::support::mock::{MockConfig, MockProvider};
    use crate::support::{ANTHROPIC_KEY, OPENAI_KEY, Sandbox};

    pub const GPT: &str = "gpt-4o-mini";
    pub const CLAUDE: &str = "claude-3-5-haiku-20241022";

    /// A sandbox whose mock answers batches on a clock the test moves.
    pub fn sandbox() -> Sandbox {
        let mock = MockProvider::start_with(MockConfig {
            prices: vec![(GPT.into(), 2.0, 8.0), (CLAUDE.into(), 4.0, 16.0)],
            ..MockConfig::default()
        });
        mock.batches().set_speed(0.0);
        Sandbox::with_mock(mock)
    }

    /// The endpoint the `track` binary resolves for `api`'s provider in the sandbox.
    pub fn endpoint(s: &Sandbox, api: BatchApi) -> Endpoint {
        match api {
            BatchApi::Openai => Endpoint {
                provider: "openai".into(),
                kind: ProviderKind::Openai,
                base_url: s.mock.openai_base_url(),
                api_key: Some(ApiKey::new(OPENAI_KEY)),
                basic_auth: None,
            },
            BatchApi::Anthropic => Endpoint {
                provider: "anthropic".into(),
                kind: ProviderKind::Anthropic,
                base_url: s.mock.anthropic_base_url(),
                api_key: Some(ApiKey::new(ANTHROPIC_KEY)),
                basic_auth: None,
            },
        }
    }

    /// `n` requests to `model`, keyed as the cache keys them.
    fn requests(model: &str, prefix: &str, n: usize) -> Vec<(String, ChatRequest)> {
        let mut requests: Vec<(String, ChatRequest)> = (0..n)
            .map(|i| {
                let text = format!("{prefix}{i}: tell me about batches");
                let request = ChatRequest {
                    tools: None,
                    model: model.into(),
                    system: None,
                    messages: vec![Message::user(&text)].into(),
                    params: SamplingParams {
                        max_tokens: Some(20),
                        ..SamplingParams::default()
                    }
                    .into(),
                    schema: None,
                };
                (track::hash::sha256_hex(text.as_bytes()), request)
            })
            .collect();
        requests.sort_by(|a, b| a.0.cmp(&b.0));
        requests
    }

    /// Records the intent of a batch of `n` requests of run `run`, and unless `intent_only`
    /// submits it to the mock and records its id and the create's answer. Returns track's id
    /// and what the provider said.
    pub fn submit(
        s: &Sandbox,
        run: Option<i64>,
        api: BatchApi,
        n: usize,
        intent_only: bool,
    ) -> (i64, Option<BatchInfo>) {
        let (model, kind, prefix) = match api {
            BatchApi::Openai => (GPT, ProviderKind::Openai, "o"),
            BatchApi::Anthropic => (CLAUDE, ProviderKind::Anthropic, "a"),
        };
        // Distinct requests in every batch: a call never waits in two.
        static SENT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let nth = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let requests = requests(model, &format!("{prefix}{nth}-"), n);
        let by_key: HashMap<&str, &ChatRequest> =
            requests.iter().map(|(k, r)| (k.as_str(), r)).collect();
        let items = requests.iter().map(|(k, r)| (k.as_str(), r));
        let mut split = batch::split(api, kind, items, api.limits()).expect("split");
        let payload = split.payloads.remove(0);
        assert_eq!(payload.request_count(), by_key.len());
        let endpoint = endpoint(s, api);
        let mut store = Store::open(&s.db_path()).expect("store");
        let fingerprint = endpoint.key_fingerprint();
        let row = store
            .create_batch(&NewBatch {
                run_id: run,
                provider: &endpoint.provider,
                api,
                base_url: &endpoint.base_url,
                key_fingerprint: &fingerprint,
                model,
                payload_sha256: &payload.sha256,
                payload_bytes: payload.bytes.len() as u64,
                keys: &payload.custom_ids,
            })
            .expect("intent");
        if intent_only {
            return (row.id, None);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = LlmClient::new(Duration::from_secs(20)).unwrap();
        let file = runtime
            .block_on(batch::upload(&client, &endpoint, &payload))
            .expect("upload");
        if let Some(file) = &file {
            store.set_batch_file(row.id, file).unwrap();
        }
        let info = runtime
            .block_on(batch::create(
                &client,
                &endpoint,
                &payload,
                file.as_deref(),
                &row.tag,
            ))
            .expect("create");
        track::dispatch::batch::with_poll(&info, |poll| {
            store.set_batch_submitted(row.id, &info.id, poll)
        })
        .unwrap();
        (row.id, Some(info))
    }

    /// A run left `waiting`, as the runtime leaves one it detached from.
    pub fn waiting_run(s: &Sandbox) -> i64 {
        let store = Store::open(&s.db_path()).expect("store");
        let run = store
            .create_run(
                track::experiment::ExperimentKind::Bench,
                Some("bench.yaml"),
                None,
                "{}",
            )
            .unwrap();
        store
            .set_run_identity(run, "openai:gpt-4o-mini", Some("run bench.yaml --batch"))
            .unwrap();
        store.finish_run(run, RunStatus::Waiting).unwrap();
        run
    }
}

use track::llm::batch::BatchApi;

#[test]
fn track_runs_shows_a_waiting_run_with_what_it_waits_for() {
    let s = recorded::sandbox();
    let run = recorded::waiting_run(&s);
    recorded::submit(&s, Some(run), BatchApi::Openai, 3, false);
    recorded::submit(&s, Some(run), BatchApi::Anthropic, 2, false);
    let out = s.track().args(["runs"]).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("waiting"), "{stdout}");
    assert!(!stdout.contains("abandoned"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "run {run} waits for 2 batches (openai {}: 0 of 3 done, anthropic {}: 0 of 2 \
             done); run the same command to collect, or see track batches",
            recorded::GPT,
            recorded::CLAUDE
        )),
        "{stdout}"
    );
    // CSV and JSON keep their schema: the status says waiting, no note is added.
    let out = s
        .track()
        .args(["runs", "--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&out.stdout);
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.contains(",waiting,"), "{csv}");
}

#[test]
fn track_batches_lists_batches_newest_first_with_their_cost_so_far() {
    let s = recorded::sandbox();
    let run = recorded::waiting_run(&s);
    let (first, _) = recorded::submit(&s, Some(run), BatchApi::Openai, 3, false);
    let (second, info) = recorded::submit(&s, Some(run), BatchApi::Anthropic, 2, false);
    let (third, _) = recorded::submit(&s, None, BatchApi::Openai, 1, true);
    // One answer of the first batch is stored, at the batch rate.
    {
        let mut store = track::store::Store::open(&s.db_path()).unwrap();
        let key = store.batch_keys(first).unwrap()[0].cache_key.clone();
        store
            .insert_batch_call(
                first,
                &track::store::NewCall {
                    cache_key: &key,
                    canonical_request: "{}".into(),
                    provider: "openai",
                    model: recorded::GPT,
                    outcome: Ok("answer"),
                    finish_reason: Some("stop"),
                    input_tokens: Some(1000),
                    output_tokens: Some(500),
                    tokens_estimated: false,
                    latency_ms: 0.0,
                    attempts: 1,
                    input_price_per_mtok: Some(1.0),
                    output_price_per_mtok: Some(4.0),
                    cost_usd: Some(0.003),
                    http_status: Some(200),
                },
            )
            .unwrap();
    }
    let sent = s.mock.request_count();
    let out = s
        .track()
        .args(["batches", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<i64> = rows.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [third, second, first], "newest first");
    assert_eq!(rows[0]["state"], "intent");
    assert_eq!(rows[0]["batch_id"], serde_json::Value::Null);
    assert_eq!(rows[1]["provider"], "anthropic");
    assert_eq!(
        rows[1]["batch_id"].as_str(),
        info.as_ref().map(|i| i.id.as_str())
    );
    assert_eq!(rows[1]["status"], "in_progress");
    assert_eq!(rows[1]["requests"], 2);
    assert_eq!(rows[2]["status"], "validating");
    assert_eq!(rows[2]["run"], run);
    assert_eq!(rows[2]["cost_usd"], 0.003);
    assert_eq!(rows[1]["cost_usd"], 0.0);
    // --run and --limit narrow it.
    let out = s
        .track()
        .args(["batches", "--run", &run.to_string(), "--limit", "1"])
        .args(["--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&out.stdout);
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with(&format!("{second},"))
    );
    // The table fits 80 columns.
    let out = s
        .track()
        .args(["batches"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let table = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for line in table.lines() {
        assert!(line.chars().count() <= 80, "{table}");
    }
    // A provider's status says how old it is: a batch polled long ago may have moved on.
    for needed in [
        "in_progress (",
        "validating (",
        " s ago)",
        "intent",
        "0/3",
        "0/2",
        "0.003",
    ] {
        assert!(table.contains(needed), "{needed}: {table}");
    }
    let wide = s.track().args(["batches", "--wide"]).output().unwrap();
    let wide = text(&wide.stdout);
    assert!(
        wide.contains(info.as_ref().map_or("", |i| i.id.as_str())),
        "{wide}"
    );
    assert_eq!(s.mock.request_count(), sent, "listing asks no provider");
}

#[test]
fn track_batches_cancel_asks_the_provider_and_records_its_answer() {
    let s = recorded::sandbox();
    let run = recorded::waiting_run(&s);
    let (openai, _) = recorded::submit(&s, Some(run), BatchApi::Openai, 3, false);
    let (anthropic, info) = recorded::submit(&s, Some(run), BatchApi::Anthropic, 2, false);
    let (never, _) = recorded::submit(&s, Some(run), BatchApi::Openai, 1, true);
    // By track's id.
    let out = s
        .track()
        .args(["batches", "cancel", &openai.to_string()])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.starts_with(&format!("batch {openai} (openai batch_")),
        "{stdout}"
    );
    assert!(stdout.contains(": cancelling ("), "{stdout}");
    assert!(
        stdout.contains(&format!("run the command of run {run} again")),
        "{stdout}"
    );
    let polled = |id: i64| -> (String, i64) {
        s.db()
            .query_row(
                "SELECT status, polls FROM batches WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    assert_eq!(polled(openai), ("cancelling".to_owned(), 1));
    // By the provider's id.
    let msgbatch = info.unwrap().id;
    let out = s
        .track()
        .args(["batches", "cancel", &msgbatch])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!(
            "batch {anthropic} (anthropic {msgbatch}): cancelling"
        )),
        "{stdout}"
    );
    assert_eq!(polled(anthropic), ("cancelling".to_owned(), 1));
    // Once the provider says it has ended, there is nothing to cancel.
    {
        let mut store = track::store::Store::open(&s.db_path()).unwrap();
        store
            .record_batch_poll(
                anthropic,
                &track::store::BatchPoll {
                    status: "cancelled",
                    ..Default::default()
                },
            )
            .unwrap();
    }
    let out = s
        .track()
        .args(["batches", "cancel", &anthropic.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("has already ended (cancelled): nothing to cancel"),
        "{}",
        text(&out.stdout)
    );
    // A batch never submitted is nothing the provider has.
    let out = s
        .track()
        .args(["batches", "cancel", &never.to_string()])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("batch {never} (openai) was never submitted")),
        "{stderr}"
    );
    // Unknown ids, and a missing key, are named.
    let out = s
        .track()
        .args(["batches", "cancel", "batch_nope"])
        .output()
        .unwrap();
    assert!(text(&out.stderr).contains("no batch `batch_nope` is recorded"));
    let (openai2, _) = recorded::submit(&s, Some(run), BatchApi::Openai, 2, false);
    let cancels = s.mock.request_count();
    let out = s
        .track()
        .args(["batches", "cancel", &openai2.to_string()])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no API key for openai: set OPENAI_API_KEY or OPENAI_KEY"),
        "{stderr}"
    );
    assert_eq!(
        s.mock.request_count(),
        cancels,
        "nothing sent without a key"
    );
    for output in [&out.stdout, &out.stderr] {
        assert!(!text(output).contains(crate::support::OPENAI_KEY));
    }
    // A provider that refuses says so, and nothing is recorded as a poll.
    s.mock.batches().fault(
        crate::support::mock::batch::BatchStep::Cancel,
        crate::support::mock::batch::BatchFault::Status(500),
        1,
    );
    let out = s
        .track()
        .args(["batches", "cancel", &openai2.to_string()])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!("track: cancelling batch {openai2} (openai batch_")),
        "{stderr}"
    );
    assert!(stderr.contains("500"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(polled(openai2).1, 0);
    assert!(!stderr.contains(crate::support::OPENAI_KEY));
}

#[test]
fn a_dry_run_with_batch_bounds_batched_calls_at_half_price_and_names_the_live_ones() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(
        &s,
        "bench.yaml",
        &[
            "openai:gpt-4o",
            "anthropic:haiku 3.5",
            "ollama:qwen2.5-coder",
        ],
        "",
    );
    let plan = |extra: &[&str]| -> (String, f64) {
        let out = s
            .track()
            .args(["run", "bench.yaml", "--dry-run"])
            .args(extra)
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        let bound = stdout
            .split("at most $")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{stdout}"));
        (stdout, bound)
    };
    let (live, full) = plan(&[]);
    assert!(!live.contains("batch API"), "{live}");
    let (batched, half) = plan(&["--batch"]);
    assert!(full > 0.0);
    // Ollama's calls are free: the whole bound is the hosted models', halved.
    assert!((half - full / 2.0).abs() < 1e-6, "{half} vs {full}");
    for expected in [
        "batch: openai:gpt-4o through the openai batch API, bounded at half price",
        "batch: anthropic:haiku 3.5 through the anthropic batch API, bounded at half price",
        "batch: ollama:qwen2.5-coder has no batch API: runs live",
        "calls through a batch API at its half price",
    ] {
        assert!(batched.contains(expected), "{expected}: {batched}");
    }
    // `batch: true` in the file plans the same.
    bench(
        &s,
        "bench.yaml",
        &[
            "openai:gpt-4o",
            "anthropic:haiku 3.5",
            "ollama:qwen2.5-coder",
        ],
        "batch: true\n",
    );
    let (from_file, bound) = plan(&[]);
    assert_eq!(bound, half);
    assert!(from_file.contains("runs live"), "{from_file}");
    // A budget is read against the half-price bound.
    let (fits, _) = plan(&["--budget", &format!("{}", (half + full) / 2.0)]);
    assert!(fits.contains("fits"), "{fits}");
    assert!(!fits.contains("does not fit"), "{fits}");
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn queries_exports_and_reports_of_a_waiting_run_show_its_rows_so_far_as_waiting() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", &["openai:gpt-4o"], "");
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The run's batches are out: its rows so far are those answered live or from the cache.
    track::store::Store::open(&s.db_path())
        .unwrap()
        .finish_run(1, track::store::RunStatus::Waiting)
        .unwrap();
    let out = s
        .track()
        .args([
            "query", "--by", "model", "--run", "latest", "--format", "csv",
        ])
        .output()
        .unwrap();
    let (csv, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: run 1 is waiting for its batches (`waiting`; the same command collects them)"
        ),
        "{stderr}"
    );
    assert!(csv.lines().next().unwrap().ends_with(",status"), "{csv}");
    assert!(csv.lines().nth(1).unwrap().ends_with(",waiting"), "{csv}");
    let out = s
        .track()
        .args(["export", "csv", "--out", "exp"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = std::fs::read_to_string(s.path("exp/bench_results.csv")).unwrap();
    assert!(
        results.lines().nth(1).unwrap().contains("waiting"),
        "{results}"
    );
    let out = s
        .track()
        .args(["report", "--run", "latest", "--out", "r.html"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(s.path("r.html")).unwrap();
    assert!(
        html.contains("is waiting for its batches (the same command collects them)"),
        "the report's banner says so"
    );
    // `track runs` shows it waiting, not abandoned, though no process holds it.
    let runs = s.track().args(["runs"]).output().unwrap();
    let table = text(&runs.stdout);
    assert!(table.contains("waiting"), "{table}");
    assert!(
        table.contains("run 1 is waiting with no batch left open"),
        "{table}"
    );
}
