//! Self-tests of the mock's batch APIs (`support::mock::batch`), talking to it over real HTTP
//! with reqwest, in the wire formats of providers.md section 2: OpenAI's files and batches,
//! Anthropic's message batches, on the mock's controllable clock.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::mock::batch::{BatchFault, BatchStep, BatchTimings, TokenLimitForm};
use crate::support::mock::{Hold, MockConfig, MockProvider, Rule};

const OPENAI_KEY: &str = "sk-test-batch";
const ANTHROPIC_KEY: &str = "sk-ant-test-batch";
const MODEL: &str = "gpt-4o-mini";
const CLAUDE: &str = "claude-3-5-haiku-20241022";

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("reqwest client")
}

/// A mock with prices, its batch clock stopped (only `advance` moves it).
fn mock() -> MockProvider {
    let mock = MockProvider::start_with(MockConfig {
        prices: vec![(MODEL.into(), 2.0, 8.0), (CLAUDE.into(), 4.0, 16.0)],
        ..MockConfig::default()
    });
    mock.batches().set_speed(0.0);
    mock
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The chat body of prompt `name`.
fn openai_body(name: &str) -> Value {
    json!({"model": MODEL, "messages": [{"role": "user", "content": format!("{name}: how many words is this")}],
           "max_completion_tokens": 50})
}

fn anthropic_params(name: &str) -> Value {
    json!({"model": CLAUDE, "max_tokens": 50,
           "messages": [{"role": "user", "content": [{"type": "text", "text": format!("{name}: say something")}]}]})
}

fn line(custom_id: &str, body: &Value) -> String {
    json!({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body})
        .to_string()
}

fn jsonl(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| line(n, &openai_body(n)) + "\n")
        .collect()
}

async fn upload(mock: &MockProvider, key: &str, content: &str) -> reqwest::Response {
    let boundary = "selftest-boundary-1234";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n{content}\r\n--{boundary}--\r\n"
    );
    client()
        .post(format!("{}/files", mock.openai_base_url()))
        .bearer_auth(key)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .expect("upload")
}

async fn json_of(resp: reqwest::Response) -> Value {
    let status = resp.status();
    let text = resp.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{status}: {e}: {text}"))
}

/// Uploads `content` and creates its batch; returns the batch object.
async fn openai_batch(mock: &MockProvider, content: &str, metadata: Value) -> Value {
    let file = json_of(upload(mock, OPENAI_KEY, content).await).await;
    assert_eq!(file["purpose"], "batch", "{file}");
    let resp = openai_create(mock, OPENAI_KEY, file["id"].as_str().unwrap(), metadata).await;
    assert_eq!(resp.status(), 200);
    json_of(resp).await
}

async fn openai_create(
    mock: &MockProvider,
    key: &str,
    file_id: &str,
    metadata: Value,
) -> reqwest::Response {
    client()
        .post(format!("{}/batches", mock.openai_base_url()))
        .bearer_auth(key)
        .json(
            &json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                      "completion_window": "24h", "metadata": metadata}),
        )
        .send()
        .await
        .expect("create")
}

async fn openai_get(mock: &MockProvider, path: &str) -> reqwest::Response {
    client()
        .get(format!("{}{path}", mock.openai_base_url()))
        .bearer_auth(OPENAI_KEY)
        .send()
        .await
        .expect("get")
}

async fn batch_status(mock: &MockProvider, id: &str) -> Value {
    json_of(openai_get(mock, &format!("/batches/{id}")).await).await
}

/// The lines of a file's content.
async fn file_lines(mock: &MockProvider, file_id: &Value) -> Vec<Value> {
    let id = file_id.as_str().expect("a file id");
    let text = openai_get(mock, &format!("/files/{id}/content"))
        .await
        .text()
        .await
        .unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn anthropic_call(method: reqwest::Method, url: &str) -> Value {
    json_of(
        client()
            .request(method, url)
            .header("x-api-key", ANTHROPIC_KEY)
            .header("anthropic-version", "2023-06-01")
            .send()
            .await
            .expect("anthropic"),
    )
    .await
}

async fn anthropic_create(mock: &MockProvider, requests: Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages/batches", mock.anthropic_base_url()))
        .header("x-api-key", ANTHROPIC_KEY)
        .header("anthropic-version", "2023-06-01")
        .json(&json!({"requests": requests}))
        .send()
        .await
        .expect("create")
}

async fn anthropic_results(url: &str) -> Vec<Value> {
    let resp = client()
        .get(url)
        .header("x-api-key", ANTHROPIC_KEY)
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .expect("results");
    assert_eq!(resp.status(), 200, "{url}");
    resp.text()
        .await
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the live endpoints of a fresh mock answer `body`, and what it billed.
async fn live_openai(body: &Value) -> (Value, f64) {
    let live = mock();
    let resp = client()
        .post(format!("{}/chat/completions", live.openai_base_url()))
        .bearer_auth(OPENAI_KEY)
        .json(body)
        .send()
        .await
        .unwrap();
    (json_of(resp).await, live.billed_usd())
}

async fn live_anthropic(body: &Value) -> (reqwest::StatusCode, Value, f64) {
    let live = mock();
    let resp = client()
        .post(format!("{}/v1/messages", live.anthropic_base_url()))
        .header("x-api-key", ANTHROPIC_KEY)
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    (status, json_of(resp).await, live.billed_usd())
}

fn ids(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l["custom_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_openai_batch_moves_through_its_statuses_and_answers_as_the_live_mock() {
    let mock = mock();
    let names = ["p0", "p1", "p2", "p3", "p4", "p5"];
    let created = openai_batch(&mock, &jsonl(&names), json!({"track_intent": "t-1"})).await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["status"], "validating");
    assert_eq!(
        created["request_counts"],
        json!({"total": 0, "completed": 0, "failed": 0})
    );
    assert_eq!(created["metadata"]["track_intent"], "t-1");
    assert!(
        created["expires_at"].as_i64().unwrap() - created["created_at"].as_i64().unwrap() >= 86_399
    );
    // Requests are done evenly over 300 s of progress after 20 s of validating: at 50 s
    // intervals, from 70 s.
    mock.batches().advance(secs(21));
    let b = batch_status(&mock, &id).await;
    assert_eq!(b["status"], "in_progress");
    assert_eq!(
        b["request_counts"],
        json!({"total": 6, "completed": 0, "failed": 0})
    );
    mock.batches().advance(secs(150));
    let b = batch_status(&mock, &id).await;
    assert_eq!(
        b["request_counts"]["completed"], 3,
        "counts move in progress: {b}"
    );
    assert_eq!(b["output_file_id"], Value::Null);
    assert_eq!(mock.batches().bills().len(), 3, "billed as they are done");
    mock.batches().advance(secs(150));
    assert_eq!(batch_status(&mock, &id).await["status"], "finalizing");
    mock.batches().advance(secs(20));
    let b = batch_status(&mock, &id).await;
    assert_eq!(b["status"], "completed");
    assert_eq!(
        b["request_counts"],
        json!({"total": 6, "completed": 6, "failed": 0})
    );
    assert!(b["completed_at"].is_i64() && b["finalizing_at"].is_i64());
    assert_eq!(
        b["error_file_id"],
        Value::Null,
        "no failed request, no error file"
    );
    let output = file_lines(&mock, &b["output_file_id"]).await;
    let mut got = ids(&output);
    assert_ne!(got, names, "results come in a shuffled order");
    got.sort();
    assert_eq!(got, names);
    // Each answer is the live mock's answer to the same body; billed at half its price.
    let mut live_usd = 0.0;
    for line in &output {
        let name = line["custom_id"].as_str().unwrap();
        assert_eq!(line["response"]["status_code"], 200);
        assert!(line["error"].is_null() && line["id"].is_string());
        let (live, usd) = live_openai(&openai_body(name)).await;
        live_usd += usd;
        let body = &line["response"]["body"];
        assert_eq!(
            body["choices"][0]["message"]["content"],
            live["choices"][0]["message"]["content"]
        );
        assert_eq!(body["usage"], live["usage"]);
    }
    let billed = mock.batches().billed_usd();
    assert!(
        live_usd > 0.0 && (billed - live_usd / 2.0).abs() < 1e-12,
        "{billed} vs {live_usd}"
    );
    assert!(
        (mock.billed_usd() - billed).abs() < 1e-12,
        "the mock's ledger has them too"
    );
    assert_eq!(mock.ledger().len(), 6);
    assert_eq!(mock.batches().submitted().len(), 6);
    assert_eq!(
        mock.admitted(),
        0,
        "batch requests are not live chat requests"
    );
}

#[tokio::test]
async fn failed_requests_go_to_the_error_file_and_rules_apply_to_batches() {
    let mock = mock();
    mock.add_rule(Rule::fail("p2:", 400, 1));
    mock.add_rule(Rule::reply("p1:", "scripted answer"));
    let b = openai_batch(&mock, &jsonl(&["p0", "p1", "p2"]), Value::Null).await;
    mock.batches().advance(secs(400));
    let b = batch_status(&mock, b["id"].as_str().unwrap()).await;
    assert_eq!(b["status"], "completed");
    assert_eq!(
        b["request_counts"],
        json!({"total": 3, "completed": 2, "failed": 1})
    );
    let output = file_lines(&mock, &b["output_file_id"]).await;
    let errors = file_lines(&mock, &b["error_file_id"]).await;
    assert_eq!(ids(&errors), ["p2"]);
    assert_eq!(errors[0]["response"]["status_code"], 400);
    assert_eq!(
        errors[0]["response"]["body"]["error"]["type"],
        "invalid_request_error"
    );
    let p1 = output.iter().find(|l| l["custom_id"] == "p1").unwrap();
    assert_eq!(
        p1["response"]["body"]["choices"][0]["message"]["content"],
        "scripted answer"
    );
    assert_eq!(mock.batches().bills().len(), 2, "the error is not billed");
}

#[tokio::test]
async fn an_expired_batch_keeps_what_was_done_and_bills_only_that() {
    let mock = mock();
    // 40 h of progress for a 24 h window: requests done at 10 h, 20 h, 30 h and 40 h.
    mock.batches().set_timings(BatchTimings {
        in_progress: secs(40 * 3600),
        ..BatchTimings::default()
    });
    let b = openai_batch(&mock, &jsonl(&["p0", "p1", "p2", "p3"]), Value::Null).await;
    let id = b["id"].as_str().unwrap().to_owned();
    mock.batches().advance(secs(23 * 3600));
    assert_eq!(batch_status(&mock, &id).await["status"], "in_progress");
    mock.batches().advance(secs(3600));
    let b = batch_status(&mock, &id).await;
    assert_eq!(b["status"], "expired");
    assert!(b["expired_at"].is_i64());
    assert_eq!(
        b["request_counts"],
        json!({"total": 4, "completed": 2, "failed": 2})
    );
    assert_eq!(file_lines(&mock, &b["output_file_id"]).await.len(), 2);
    let errors = file_lines(&mock, &b["error_file_id"]).await;
    assert_eq!(errors.len(), 2);
    for e in &errors {
        assert!(e["response"].is_null());
        assert_eq!(e["error"]["code"], "batch_expired");
    }
    assert_eq!(mock.batches().bills().len(), 2);
}

#[tokio::test]
async fn a_cancelled_batch_keeps_what_was_done() {
    let mock = mock();
    let b = openai_batch(&mock, &jsonl(&["p0", "p1", "p2", "p3"]), Value::Null).await;
    let id = b["id"].as_str().unwrap().to_owned();
    // Done at 95, 170, 245 and 320 s.
    mock.batches().advance(secs(200));
    let url = format!("{}/batches/{id}/cancel", mock.openai_base_url());
    let cancel = || client().post(&url).bearer_auth(OPENAI_KEY).send();
    let b = json_of(cancel().await.unwrap()).await;
    assert_eq!(b["status"], "cancelling");
    assert!(b["cancelling_at"].is_i64());
    mock.batches().advance(secs(10));
    assert_eq!(batch_status(&mock, &id).await["status"], "cancelling");
    mock.batches().advance(secs(100));
    let b = batch_status(&mock, &id).await;
    assert_eq!(b["status"], "cancelled");
    assert_eq!(file_lines(&mock, &b["output_file_id"]).await.len(), 2);
    let errors = file_lines(&mock, &b["error_file_id"]).await;
    assert!(
        errors
            .iter()
            .all(|e| e["error"]["code"] == "batch_cancelled"),
        "{errors:?}"
    );
    assert_eq!(errors.len(), 2);
    assert_eq!(
        cancel().await.unwrap().status(),
        400,
        "an ended batch cannot be cancelled"
    );
    assert_eq!(mock.batches().bills().len(), 2);
}

#[tokio::test]
async fn a_bad_file_fails_validation_with_each_line_and_code() {
    let mock = mock();
    let other = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]});
    let content = [
        line("a", &openai_body("a")),
        "{not json".to_owned(),
        line("a", &openai_body("a")),
        line("b", &other),
        json!({"custom_id": "c", "method": "POST", "url": "/v1/embeddings", "body": openai_body("c")})
            .to_string(),
        line("d", &openai_body("d")),
    ]
    .join("\n");
    let b = openai_batch(&mock, &content, Value::Null).await;
    assert_eq!(b["status"], "validating");
    mock.batches().advance(secs(21));
    let b = batch_status(&mock, b["id"].as_str().unwrap()).await;
    assert_eq!(b["status"], "failed");
    assert!(b["failed_at"].is_i64());
    let errors: Vec<(i64, &str)> = b["errors"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["line"].as_i64().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        errors,
        [
            (2, "invalid_json_line"),
            (3, "duplicate_custom_id"),
            (4, "mismatched_model"),
            (5, "invalid_url")
        ]
    );
    assert_eq!(b["output_file_id"], Value::Null);
    mock.batches().advance(secs(3600));
    assert!(
        mock.batches().bills().is_empty(),
        "nothing ran, nothing billed"
    );
    assert!(mock.batches().submitted().is_empty());
}

#[tokio::test]
async fn queued_tokens_over_the_limit_are_refused_at_create_or_fail_the_batch() {
    let mock = mock();
    let content = jsonl(&["p0", "p1"]);
    // Each request is charged its text (~ 9 tokens) plus its 50 max tokens.
    mock.batches()
        .set_token_limit(MODEL, 150, TokenLimitForm::AtCreate);
    openai_batch(&mock, &content, Value::Null).await;
    let file = json_of(upload(&mock, OPENAI_KEY, &content).await).await;
    let refused = openai_create(&mock, OPENAI_KEY, file["id"].as_str().unwrap(), Value::Null).await;
    assert_eq!(refused.status(), 400);
    let body = json_of(refused).await;
    assert_eq!(body["error"]["code"], "token_limit_exceeded");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Enqueued token limit")
    );
    assert_eq!(mock.batches().list().len(), 1, "no batch was created");
    // Once the first has ended, its tokens no longer count.
    mock.batches().advance(secs(400));
    let again = openai_create(&mock, OPENAI_KEY, file["id"].as_str().unwrap(), Value::Null).await;
    assert_eq!(again.status(), 200);

    let mock = self::mock();
    mock.batches()
        .set_token_limit(MODEL, 150, TokenLimitForm::Failed);
    openai_batch(&mock, &content, Value::Null).await;
    let second = openai_batch(&mock, &content, Value::Null).await;
    assert_eq!(second["status"], "validating");
    mock.batches().advance(secs(21));
    let second = batch_status(&mock, second["id"].as_str().unwrap()).await;
    assert_eq!(second["status"], "failed");
    assert_eq!(second["errors"]["data"][0]["code"], "token_limit_exceeded");
    assert_eq!(second["errors"]["data"][0]["line"], Value::Null);
}

#[tokio::test]
async fn an_anthropic_batch_ends_with_its_results_at_its_results_url() {
    let mock = mock();
    let mut bad = anthropic_params("p4");
    bad.as_object_mut().unwrap().remove("max_tokens");
    let requests: Vec<Value> = (0..4)
        .map(
            |i| json!({"custom_id": format!("p{i}"), "params": anthropic_params(&format!("p{i}"))}),
        )
        .chain([json!({"custom_id": "p4", "params": bad})])
        .collect();
    let created = json_of(anthropic_create(&mock, json!(requests)).await).await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["type"], "message_batch");
    assert_eq!(created["processing_status"], "in_progress");
    assert_eq!(created["request_counts"]["processing"], 5);
    assert_eq!(created["results_url"], Value::Null);
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
    let url = format!("{}/v1/messages/batches/{id}", mock.anthropic_base_url());
    // Requests done at 60 s intervals; no per-request progress until the batch ends.
    mock.batches().advance(secs(200));
    let b = anthropic_call(reqwest::Method::GET, &url).await;
    assert_eq!(b["processing_status"], "in_progress");
    assert_eq!(b["request_counts"]["processing"], 5);
    assert_eq!(b["request_counts"]["succeeded"], 0);
    mock.batches().advance(secs(200));
    let b = anthropic_call(reqwest::Method::GET, &url).await;
    assert_eq!(b["processing_status"], "ended");
    assert_eq!(
        b["request_counts"],
        json!({"processing": 0, "succeeded": 4, "errored": 1, "canceled": 0, "expired": 0})
    );
    assert!(b["ended_at"].is_string());
    let results_url = b["results_url"].as_str().unwrap();
    assert!(results_url.starts_with(&mock.url()), "{results_url}");
    // The documented path is not where this mock serves them: follow, never build.
    let built = client()
        .get(format!("{url}/results"))
        .header("x-api-key", ANTHROPIC_KEY)
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap();
    assert_eq!(built.status(), 404);
    let results = anthropic_results(results_url).await;
    let mut got = ids(&results);
    assert_ne!(got, ["p0", "p1", "p2", "p3", "p4"], "shuffled");
    got.sort();
    assert_eq!(got, ["p0", "p1", "p2", "p3", "p4"]);
    let mut live_usd = 0.0;
    for r in &results {
        let name = r["custom_id"].as_str().unwrap();
        if name == "p4" {
            assert_eq!(r["result"]["type"], "errored");
            assert_eq!(r["result"]["error"]["type"], "error");
            assert_eq!(
                r["result"]["error"]["error"]["type"],
                "invalid_request_error"
            );
            continue;
        }
        assert_eq!(r["result"]["type"], "succeeded");
        let (status, live, usd) = live_anthropic(&anthropic_params(name)).await;
        assert_eq!(status, 200);
        live_usd += usd;
        assert_eq!(r["result"]["message"]["content"], live["content"]);
        assert_eq!(r["result"]["message"]["usage"], live["usage"]);
    }
    let billed = mock.batches().billed_usd();
    assert!(
        (billed - live_usd / 2.0).abs() < 1e-12,
        "{billed} vs {live_usd}"
    );
    assert_eq!(mock.batches().bills().len(), 4);
}

#[tokio::test]
async fn anthropic_refuses_bad_custom_ids_at_create() {
    let mock = mock();
    for requests in [
        json!([{"custom_id": "sha256:abc", "params": anthropic_params("a")}]),
        json!([{"custom_id": "a", "params": anthropic_params("a")},
               {"custom_id": "a", "params": anthropic_params("b")}]),
        json!([]),
    ] {
        let resp = anthropic_create(&mock, requests.clone()).await;
        assert_eq!(resp.status(), 400, "{requests}");
        assert_eq!(
            json_of(resp).await["error"]["type"],
            "invalid_request_error"
        );
    }
    assert!(mock.batches().list().is_empty());
}

#[tokio::test]
async fn anthropic_batches_expire_or_are_cancelled_with_partial_results() {
    let mock = mock();
    mock.batches().set_timings(BatchTimings {
        in_progress: secs(40 * 3600),
        ..BatchTimings::default()
    });
    let requests = |prefix: &str| -> Value {
        (0..4)
            .map(|i| json!({"custom_id": format!("{prefix}{i}"), "params": anthropic_params(&format!("{prefix}{i}"))}))
            .collect()
    };
    let expiring = json_of(anthropic_create(&mock, requests("e")).await).await;
    mock.batches().advance(secs(24 * 3600));
    let url = format!(
        "{}/v1/messages/batches/{}",
        mock.anthropic_base_url(),
        expiring["id"].as_str().unwrap()
    );
    let b = anthropic_call(reqwest::Method::GET, &url).await;
    assert_eq!(b["processing_status"], "ended");
    assert_eq!(b["request_counts"]["succeeded"], 2);
    assert_eq!(b["request_counts"]["expired"], 2);
    let results = anthropic_results(b["results_url"].as_str().unwrap()).await;
    assert_eq!(
        results
            .iter()
            .filter(|r| r["result"]["type"] == "expired")
            .count(),
        2
    );

    mock.batches().set_timings(BatchTimings::default());
    let cancelled = json_of(anthropic_create(&mock, requests("c")).await).await;
    let url = format!(
        "{}/v1/messages/batches/{}",
        mock.anthropic_base_url(),
        cancelled["id"].as_str().unwrap()
    );
    // Done at 75, 150, 225 and 300 s.
    mock.batches().advance(secs(160));
    let b = anthropic_call(reqwest::Method::POST, &format!("{url}/cancel")).await;
    assert_eq!(b["processing_status"], "canceling");
    assert!(b["cancel_initiated_at"].is_string());
    mock.batches().advance(secs(60));
    let b = anthropic_call(reqwest::Method::GET, &url).await;
    assert_eq!(b["processing_status"], "ended");
    assert_eq!(b["request_counts"]["succeeded"], 2);
    assert_eq!(b["request_counts"]["canceled"], 2);
    let results = anthropic_results(b["results_url"].as_str().unwrap()).await;
    assert_eq!(
        results
            .iter()
            .filter(|r| r["result"]["type"] == "canceled")
            .count(),
        2
    );
    assert_eq!(mock.batches().bills().len(), 4, "two of each batch");
}

#[tokio::test]
async fn listings_page_newest_first_echo_metadata_and_keep_keys_apart() {
    let mock = mock();
    for tag in ["t1", "t2", "t3"] {
        openai_batch(&mock, &jsonl(&["p0"]), json!({"track_intent": tag})).await;
    }
    let file = json_of(upload(&mock, "sk-other", &jsonl(&["p0"])).await).await;
    assert_eq!(
        openai_create(&mock, "sk-other", file["id"].as_str().unwrap(), Value::Null)
            .await
            .status(),
        200
    );
    let page = json_of(openai_get(&mock, "/batches?limit=2").await).await;
    let tags: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["metadata"]["track_intent"].as_str().unwrap())
        .collect();
    assert_eq!(tags, ["t3", "t2"]);
    assert_eq!(page["has_more"], true);
    let after = page["last_id"].as_str().unwrap();
    let rest = json_of(openai_get(&mock, &format!("/batches?limit=2&after={after}")).await).await;
    assert_eq!(
        rest["data"].as_array().unwrap().len(),
        1,
        "the other key's is not listed"
    );
    assert_eq!(rest["data"][0]["metadata"]["track_intent"], "t1");
    assert_eq!(rest["has_more"], false);
    // Another key can read neither the batch nor its file.
    let first = rest["data"][0]["id"].as_str().unwrap();
    let theirs = client()
        .get(format!("{}/batches/{first}", mock.openai_base_url()))
        .bearer_auth("sk-other")
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 404);

    for i in 0..3 {
        anthropic_create(
            &mock,
            json!([{"custom_id": format!("a{i}"), "params": anthropic_params("a")}]),
        )
        .await;
    }
    let base = format!("{}/v1/messages/batches", mock.anthropic_base_url());
    let page = anthropic_call(reqwest::Method::GET, &format!("{base}?limit=2")).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    assert_eq!(page["has_more"], true);
    let last = page["last_id"].as_str().unwrap();
    let older = anthropic_call(
        reqwest::Method::GET,
        &format!("{base}?limit=2&after_id={last}"),
    )
    .await;
    assert_eq!(older["data"].as_array().unwrap().len(), 1);
    assert_eq!(older["has_more"], false);
    let oldest = older["first_id"].as_str().unwrap();
    let newer = anthropic_call(
        reqwest::Method::GET,
        &format!("{base}?limit=1&before_id={oldest}"),
    )
    .await;
    assert_eq!(newer["data"][0]["id"], page["data"][1]["id"]);
    assert_eq!(newer["has_more"], true);
}

#[tokio::test]
async fn faults_refuse_a_step_or_do_it_and_lose_the_answer() {
    let mock = mock();
    mock.batches()
        .fault(BatchStep::Create, BatchFault::LoseAnswer, 1);
    let file = json_of(upload(&mock, OPENAI_KEY, &jsonl(&["p0", "p1"])).await).await;
    let lost = openai_create(
        &mock,
        OPENAI_KEY,
        file["id"].as_str().unwrap(),
        json!({"track_intent": "lost"}),
    )
    .await;
    assert!(lost.text().await.is_err(), "the answer is cut off");
    let made = mock.batches().list();
    assert_eq!(made.len(), 1, "but the batch was created");
    assert_eq!(made[0].metadata["track_intent"], "lost");
    let listed = json_of(openai_get(&mock, "/batches").await).await;
    assert_eq!(listed["data"][0]["metadata"]["track_intent"], "lost");

    mock.batches()
        .fault(BatchStep::Get, BatchFault::Status(503), 1);
    let path = format!("/batches/{}", made[0].id);
    assert_eq!(openai_get(&mock, &path).await.status(), 503);
    assert_eq!(openai_get(&mock, &path).await.status(), 200, "once");

    mock.batches()
        .fault(BatchStep::Upload, BatchFault::Status(500), 1);
    assert_eq!(
        upload(&mock, OPENAI_KEY, &jsonl(&["p9"])).await.status(),
        500
    );
    assert_eq!(mock.batches().list().len(), 1);
}

#[tokio::test]
async fn the_clock_runs_at_the_speed_set() {
    let mock = mock();
    let b = openai_batch(&mock, &jsonl(&["p0"]), Value::Null).await;
    mock.batches().set_speed(10_000.0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(mock.batches().now() >= secs(1000));
    let b = batch_status(&mock, b["id"].as_str().unwrap()).await;
    assert_eq!(b["status"], "completed", "{b}");
}

#[tokio::test]
async fn batch_endpoints_want_the_providers_credentials() {
    let mock = mock();
    let resp = client()
        .get(format!("{}/batches", mock.openai_base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let resp = client()
        .get(format!("{}/v1/messages/batches", mock.anthropic_base_url()))
        .header("x-api-key", ANTHROPIC_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400, "anthropic-version is required");
    assert_eq!(
        mock.requests()
            .iter()
            .filter(|r| r.path.contains("batches"))
            .count(),
        2,
        "batch requests are logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_stops_a_batch_create_before_it_is_made_until_released() {
    let mock = mock();
    let file = json_of(upload(&mock, OPENAI_KEY, &jsonl(&["p0"])).await).await;
    mock.hold(Hold::Containing("held-intent".into()));
    let url = format!("{}/batches", mock.openai_base_url());
    let body = json!({"input_file_id": file["id"], "endpoint": "/v1/chat/completions",
                      "completion_window": "24h", "metadata": {"track_intent": "held-intent"}});
    let create = tokio::spawn(async move {
        client()
            .post(url)
            .bearer_auth(OPENAI_KEY)
            .json(&body)
            .send()
            .await
            .map(|r| r.status())
    });
    mock.wait_held(1);
    assert!(
        mock.batches().list().is_empty(),
        "held before it is created"
    );
    mock.release();
    assert_eq!(create.await.unwrap().unwrap(), 200);
    assert_eq!(mock.batches().list().len(), 1);
}
