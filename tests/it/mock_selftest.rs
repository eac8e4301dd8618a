//! Self-tests of the mock LLM provider (`support::mock`), talking to it over
//! real HTTP with reqwest.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use tokio::task::JoinHandle;

use crate::support::mock::{
    Action, Hold, MockConfig, MockLimits, MockProvider, RetryAfterHeader, Rule, WAIT_LIMIT,
    go_duration, openai_token_charge,
};

const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("reqwest client")
}

async fn openai(mock: &MockProvider, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", mock.openai_base_url()))
        .bearer_auth("sk-test")
        .json(&body)
        .send()
        .await
        .expect("send")
}

async fn anthropic(mock: &MockProvider, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", mock.anthropic_base_url()))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .expect("send")
}

async fn ollama(mock: &MockProvider, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/api/chat", mock.ollama_host()))
        .json(&body)
        .send()
        .await
        .expect("send")
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

#[tokio::test]
async fn openai_response_shape_and_usage() {
    let mock = MockProvider::start();
    let resp = openai(
        &mock,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are terse."},
                user("hello there world"),
            ],
            "temperature": 0
        }),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let v: Value = resp.json().await.unwrap();
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(v["object"], "chat.completion");
    assert!(v["created"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(v["model"], "gpt-4o-mini");
    let reply = "mock reply to: hello there world";
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["message"]["content"], reply);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["prompt_tokens"], 3 + 3);
    assert_eq!(v["usage"]["completion_tokens"], words(reply));
    assert_eq!(v["usage"]["total_tokens"], 6 + words(reply));

    assert_eq!(mock.request_count(), 1);
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].header("Authorization"), Some("Bearer sk-test"));
    assert_eq!(reqs[0].last_user_text(), "hello there world");
    assert_eq!(reqs[0].body["temperature"], 0);
}

#[tokio::test]
async fn openai_array_parts_and_image_are_recorded() {
    let mock = MockProvider::start();
    let data_url = format!("data:image/png;base64,{PNG_B64}");
    let resp = openai(
        &mock,
        json!({
            "model": "gpt-4o",
            "messages": [{
                "role": "user",
                "content": [
                    {"type": "text", "text": "describe"},
                    {"type": "image_url", "image_url": {"url": data_url}},
                    {"type": "text", "text": "this picture"}
                ]
            }]
        }),
    )
    .await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "mock reply to: describe this picture"
    );
    assert_eq!(v["usage"]["prompt_tokens"], 3);
    let req = mock.last_request().unwrap();
    assert_eq!(req.images(), vec![data_url.clone()]);
    assert_eq!(
        req.body["messages"][0]["content"][1]["image_url"]["url"],
        data_url
    );
    assert_eq!(mock.requests_containing(PNG_B64), 1);
    assert_eq!(mock.requests_containing("no such needle"), 0);
}

#[tokio::test]
async fn openai_auth_failures() {
    let mock = MockProvider::start();
    let url = format!("{}/chat/completions", mock.openai_base_url());
    let body = json!({"model": "m", "messages": [user("hi")]});
    for auth in [None, Some("Bearer "), Some("Basic abc")] {
        let mut rb = client().post(&url).json(&body);
        if let Some(a) = auth {
            rb = rb.header("authorization", a);
        }
        let resp = rb.send().await.unwrap();
        assert_eq!(resp.status(), 401, "auth {auth:?}");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["error"]["code"], "invalid_api_key");
        assert!(v["error"]["message"].is_string());
    }
    // Failed requests are recorded too.
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test]
async fn anthropic_two_blocks_and_usage() {
    let mock = MockProvider::start();
    let resp = anthropic(
        &mock,
        json!({
            "model": "claude-3-5-haiku-latest",
            "max_tokens": 100,
            "system": "Be brief please",
            "messages": [
                user("first question"),
                {"role": "assistant", "content": "first answer"},
                {"role": "user", "content": [
                    {"type": "text", "text": "what is"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
                    {"type": "text", "text": "shown here"}
                ]}
            ]
        }),
    )
    .await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "claude-3-5-haiku-latest");
    assert_eq!(v["stop_reason"], "end_turn");
    assert!(v["id"].as_str().unwrap().starts_with("msg_"));
    let blocks = v["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    assert!(blocks.iter().all(|b| b["type"] == "text"));
    let joined: String = blocks.iter().map(|b| b["text"].as_str().unwrap()).collect();
    let reply = "mock reply to: what is shown here";
    assert_eq!(joined, reply);
    assert!(!blocks[0]["text"].as_str().unwrap().is_empty());
    assert!(!blocks[1]["text"].as_str().unwrap().is_empty());
    // system 3 + 2 + 2 + (2 + 2)
    assert_eq!(v["usage"]["input_tokens"], 11);
    assert_eq!(v["usage"]["output_tokens"], words(reply));

    let req = mock.last_request().unwrap();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.images(), vec![PNG_B64.to_owned()]);
    assert_eq!(req.last_user_text(), "what is shown here");
    assert_eq!(mock.requests_containing(PNG_B64), 1);
}

#[tokio::test]
async fn anthropic_system_blocks_are_counted() {
    let mock = MockProvider::start();
    mock.add_rule(Rule::reply("SECRET rule", "matched by system"));
    let v: Value = anthropic(
        &mock,
        json!({
            "model": "claude",
            "max_tokens": 10,
            "system": [{"type": "text", "text": "SECRET rule here"}],
            "messages": [user("q")]
        }),
    )
    .await
    .json()
    .await
    .unwrap();
    let joined: String = v["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap())
        .collect();
    assert_eq!(joined, "matched by system");
    assert_eq!(v["usage"]["input_tokens"], 4);
    assert_eq!(v["usage"]["output_tokens"], 3);
}

#[tokio::test]
async fn anthropic_header_and_body_errors() {
    let mock = MockProvider::start();
    let url = format!("{}/v1/messages", mock.anthropic_base_url());
    let body = json!({"model": "claude", "max_tokens": 10, "messages": [user("hi")]});

    // No API key.
    let resp = client()
        .post(&url)
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "authentication_error");
    assert!(v["error"]["message"].is_string());

    // Empty API key.
    let resp = client()
        .post(&url)
        .header("x-api-key", "")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    // No anthropic-version.
    let resp = client()
        .post(&url)
        .header("x-api-key", "k")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");

    // No max_tokens.
    let resp = anthropic(&mock, json!({"model": "claude", "messages": [user("hi")]})).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens")
    );

    assert_eq!(mock.request_count(), 4);
}

async fn ollama_lines(resp: reqwest::Response) -> Vec<Value> {
    let mut stream = resp.bytes_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        buf.extend_from_slice(&chunk.expect("chunk"));
    }
    let text = String::from_utf8(buf).unwrap();
    assert!(text.ends_with('\n'));
    text.lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

#[tokio::test]
async fn ollama_streams_by_default_and_when_asked() {
    let mock = MockProvider::start();
    let data = json!({
        "model": "llama3.2",
        "messages": [
            {"role": "system", "content": "sys prompt"},
            {"role": "user", "content": "tell me about cats", "images": [PNG_B64]}
        ]
    });
    let mut with_stream = data.clone();
    with_stream["stream"] = json!(true);
    for body in [data, with_stream] {
        let resp = ollama(&mock, body).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
        let lines = ollama_lines(resp).await;
        assert_eq!(lines.len(), 4, "3 chunks + done: {lines:?}");
        let reply = "mock reply to: tell me about cats";
        let mut joined = String::new();
        for l in &lines[..3] {
            assert_eq!(l["model"], "llama3.2");
            assert!(l["created_at"].as_str().unwrap().ends_with('Z'));
            assert_eq!(l["message"]["role"], "assistant");
            assert_eq!(l["done"], false);
            joined.push_str(l["message"]["content"].as_str().unwrap());
        }
        assert_eq!(joined, reply);
        let done = &lines[3];
        assert_eq!(done["done"], true);
        assert_eq!(done["done_reason"], "stop");
        assert_eq!(done["message"]["content"], "");
        assert!(done["total_duration"].is_u64());
        assert_eq!(done["prompt_eval_count"], 2 + 4);
        assert_eq!(done["eval_count"], words(reply));
    }
    let req = mock.last_request().unwrap();
    assert_eq!(req.path, "/api/chat");
    assert_eq!(req.images(), vec![PNG_B64.to_owned()]);
    assert_eq!(mock.requests_containing(PNG_B64), 2);
}

#[tokio::test]
async fn ollama_non_streaming() {
    let mock = MockProvider::start();
    let resp = ollama(
        &mock,
        json!({"model": "qwen", "stream": false, "messages": [user("one two")]}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["model"], "qwen");
    assert_eq!(v["done"], true);
    assert_eq!(v["done_reason"], "stop");
    assert_eq!(v["message"]["role"], "assistant");
    assert_eq!(v["message"]["content"], "mock reply to: one two");
    assert_eq!(v["prompt_eval_count"], 2);
    assert_eq!(v["eval_count"], 5);
}

#[tokio::test]
async fn rate_limit_once_then_success() {
    let mock = MockProvider::start();
    mock.add_rule(Rule::rate_limit("flaky", "1", 1));
    let body = json!({"model": "m", "messages": [user("a flaky call")]});

    let resp = openai(&mock, body.clone()).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");

    let resp = openai(&mock, body.clone()).await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "mock reply to: a flaky call"
    );
    assert_eq!(mock.request_count(), 2);
    assert_eq!(mock.requests_containing("a flaky call"), 2);

    // The same through the struct literal form, on Anthropic.
    mock.add_rule(Rule {
        when_contains: "overload".into(),
        when_model: None,
        action: Action::Status {
            code: 529,
            retry_after: Some("2".into()),
            body: String::new(),
        },
        times: Some(1),
    });
    let body = json!({"model": "c", "max_tokens": 5, "messages": [user("overload me")]});
    let resp = anthropic(&mock, body.clone()).await;
    assert_eq!(resp.status(), 529);
    assert_eq!(resp.headers()["retry-after"], "2");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");
    assert_eq!(anthropic(&mock, body).await.status(), 200);
}

#[tokio::test]
async fn fail_rule_custom_body_and_rule_order() {
    let mock = MockProvider::start();
    mock.add_rule(Rule::fail("boom", 500, 2));
    mock.add_rule(Rule::new(
        "boom",
        Action::Status {
            code: 503,
            retry_after: None,
            body: r#"{"custom":true}"#.into(),
        },
    ));
    mock.add_rule(Rule::reply("boom", "never reached"));
    let body = json!({"model": "m", "messages": [user("boom")]});
    for _ in 0..2 {
        let resp = openai(&mock, body.clone()).await;
        assert_eq!(resp.status(), 500);
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["type"], "server_error");
    }
    let resp = openai(&mock, body.clone()).await;
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().get("retry-after").is_none());
    assert_eq!(resp.json::<Value>().await.unwrap(), json!({"custom": true}));

    // Ollama error shape.
    let resp = ollama(
        &mock,
        json!({"model": "x", "messages": [user("zzz")], "stream": false}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    mock.clear_rules();
    mock.add_rule(Rule::fail("zzz", 500, 1));
    let resp = ollama(&mock, json!({"model": "x", "messages": [user("zzz")]})).await;
    assert_eq!(resp.status(), 500);
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"].is_string());
}

#[tokio::test]
async fn truncate_breaks_body_read() {
    let mock = MockProvider::start();
    mock.add_rule(Rule::truncate("cut"));

    let resp = openai(&mock, json!({"model": "m", "messages": [user("cut me")]})).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.bytes().await.is_err(), "openai body should fail");

    let resp = anthropic(
        &mock,
        json!({"model": "c", "max_tokens": 5, "messages": [user("cut me")]}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.json::<Value>().await.is_err(),
        "anthropic body should fail"
    );

    let resp = ollama(
        &mock,
        json!({"model": "o", "stream": false, "messages": [user("cut me")]}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.bytes().await.is_err(),
        "ollama non-stream body should fail"
    );

    // Ollama streaming: one chunk line arrives, then the stream fails.
    let resp = ollama(&mock, json!({"model": "o", "messages": [user("cut me")]})).await;
    assert_eq!(resp.status(), 200);
    let mut stream = resp.bytes_stream();
    let mut got = Vec::new();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(b) => got.extend_from_slice(&b),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "ollama stream should fail");
    let text = String::from_utf8(got).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text:?}");
    let first: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(first["done"], false);
    assert!(!text.contains("\"done\":true"));

    // Non-matching requests are unaffected.
    let resp = openai(&mock, json!({"model": "m", "messages": [user("whole")]})).await;
    assert!(resp.json::<Value>().await.is_ok());
    assert_eq!(mock.request_count(), 5);
}

#[tokio::test]
async fn no_usage_omits_token_counts() {
    let mock = MockProvider::start();
    mock.add_rule(Rule::no_usage("", "plain answer"));

    let v: Value = openai(&mock, json!({"model": "m", "messages": [user("x")]}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "plain answer");
    assert!(v.get("usage").is_none());

    let v: Value = anthropic(
        &mock,
        json!({"model": "c", "max_tokens": 5, "messages": [user("x")]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["content"].as_array().unwrap().len(), 2);
    assert!(v.get("usage").is_none());

    let v: Value = ollama(
        &mock,
        json!({"model": "o", "stream": false, "messages": [user("x")]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["message"]["content"], "plain answer");
    assert!(v.get("prompt_eval_count").is_none());
    assert!(v.get("eval_count").is_none());

    let lines =
        ollama_lines(ollama(&mock, json!({"model": "o", "messages": [user("x")]})).await).await;
    let done = lines.last().unwrap();
    assert_eq!(done["done"], true);
    assert!(done.get("prompt_eval_count").is_none());
    assert!(done.get("eval_count").is_none());
}

#[tokio::test]
async fn delay_rule_and_config_delay() {
    let mock = MockProvider::start();
    mock.add_rule(Rule::delay(
        "slow",
        Duration::from_millis(300),
        "slow answer",
    ));
    let t = Instant::now();
    let v: Value = openai(
        &mock,
        json!({"model": "m", "messages": [user("slow please")]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert_eq!(v["choices"][0]["message"]["content"], "slow answer");
    assert_eq!(v["usage"]["completion_tokens"], 2);

    let mock = MockProvider::start_with(MockConfig {
        delay: Duration::from_millis(200),
        ..MockConfig::default()
    });
    let t = Instant::now();
    let resp = openai(&mock, json!({"model": "m", "messages": [user("q")]})).await;
    assert_eq!(resp.status(), 200);
    assert!(t.elapsed() >= Duration::from_millis(200));
}

/// Sends an OpenAI chat request with `text` in a task of its own, so that the test can watch
/// the mock while the request waits.
fn spawn_openai(mock: &MockProvider, text: &str) -> JoinHandle<reqwest::Result<reqwest::Response>> {
    let url = format!("{}/chat/completions", mock.openai_base_url());
    let body = json!({"model": "m", "messages": [user(text)]});
    tokio::spawn(async move { client().post(url).bearer_auth("k").json(&body).send().await })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_recorded_before_the_response() {
    let mock = MockProvider::start();
    mock.hold(Hold::From(1));
    let pending = spawn_openai(&mock, "abandoned");
    mock.wait_held(1);
    assert_eq!(mock.request_count(), 1);
    assert_eq!(mock.requests_containing("abandoned"), 1);
    assert!(!pending.is_finished(), "a held request gets no answer");
    // Dropping the mock with a response in flight must not hang, and ends that request.
    let (dropped, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(mock);
        let _ = dropped.send(());
    });
    done.recv_timeout(WAIT_LIMIT)
        .expect("dropping the mock with a request in flight hung");
    assert!(
        pending.await.unwrap().is_err(),
        "the held request got no answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_requests_wait_for_the_release_and_count_in_flight() {
    let mock = MockProvider::start();
    // From the second request on.
    mock.hold(Hold::From(2));
    let first = openai(&mock, json!({"model": "m", "messages": [user("one")]})).await;
    assert_eq!(first.status(), 200, "the first request is not held");
    let (second, third) = (spawn_openai(&mock, "two"), spawn_openai(&mock, "three"));
    mock.wait_held(2);
    assert_eq!((mock.held(), mock.in_flight()), (2, 2));
    assert_eq!(mock.request_count(), 3, "held requests are recorded");
    assert!(!second.is_finished() && !third.is_finished());
    mock.release();
    for (task, text) in [(second, "two"), (third, "three")] {
        let v: Value = task.await.unwrap().unwrap().json().await.unwrap();
        assert_eq!(
            v["choices"][0]["message"]["content"],
            format!("mock reply to: {text}")
        );
    }
    assert_eq!(
        (mock.held(), mock.in_flight(), mock.max_in_flight()),
        (0, 0, 2)
    );
    // A release ends the holds: the next request is answered at once.
    let fourth = openai(&mock, json!({"model": "m", "messages": [user("four")]})).await;
    assert_eq!(fourth.status(), 200);

    // Only the requests whose body holds the text; the others go by meanwhile.
    let mock = MockProvider::start();
    mock.hold(Hold::Containing("wait for me".into()));
    let waiting = spawn_openai(&mock, "please wait for me");
    mock.wait_held(1);
    for text in ["first", "second"] {
        let resp = openai(&mock, json!({"model": "m", "messages": [user(text)]})).await;
        assert_eq!(resp.status(), 200);
    }
    assert!(!waiting.is_finished());
    assert_eq!((mock.held(), mock.max_in_flight()), (1, 2));
    mock.release();
    assert_eq!(waiting.await.unwrap().unwrap().status(), 200);
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test]
async fn reset_and_record_bodies_false() {
    let mock = MockProvider::start();
    openai(&mock, json!({"model": "m", "messages": [user("one")]})).await;
    assert_eq!(mock.request_count(), 1);
    mock.reset_requests();
    assert_eq!(mock.request_count(), 0);
    assert!(mock.requests().is_empty());

    let mock = MockProvider::start_with(MockConfig {
        record_bodies: false,
        ..MockConfig::default()
    });
    let resp = openai(&mock, json!({"model": "m", "messages": [user("hello")]})).await;
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "mock reply to: hello"
    );
    assert_eq!(mock.request_count(), 1);
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert!(reqs[0].body.is_null());
    assert!(reqs[0].headers.is_empty());
    assert_eq!(mock.requests_containing("hello"), 0);
}

#[tokio::test]
async fn unknown_path_is_404_and_drop_stops_server() {
    let mock = MockProvider::start();
    let resp = client()
        .post(format!("{}/v1/embeddings", mock.url()))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert!(mock.url().starts_with("http://127.0.0.1:"));
    assert_eq!(mock.anthropic_base_url(), mock.url());
    assert_eq!(mock.ollama_host(), mock.url());
    assert_eq!(mock.openai_base_url(), format!("{}/v1", mock.url()));
    let url = mock.url();
    drop(mock);
    let res = client()
        .post(format!("{url}/api/chat"))
        .json(&json!({"model": "x", "messages": []}))
        .send()
        .await;
    assert!(res.is_err(), "server should be gone");
}

#[test]
fn works_from_a_sync_test() {
    let mock = MockProvider::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let v: Value = rt.block_on(async {
        ollama(
            &mock,
            json!({"model": "x", "stream": false, "messages": [user("sync")]}),
        )
        .await
        .json()
        .await
        .unwrap()
    });
    assert_eq!(v["message"]["content"], "mock reply to: sync");
}

#[tokio::test]
async fn structured_output_is_checked_and_answered_in_shape() {
    let mock = MockProvider::start();
    let schema = json!({
        "type": "object",
        "properties": {"score": {"type": "integer", "enum": [1, 2, 3]}, "why": {"type": "string"}},
        "required": ["score", "why"],
        "additionalProperties": false
    });
    // OpenAI strict mode: a schema that leaves a property out of `required` is refused.
    let mut loose = schema.clone();
    loose["required"] = json!(["score"]);
    let refused = openai(
        &mock,
        json!({"model": "m", "messages": [user("hi")], "response_format": {"type": "json_schema",
            "json_schema": {"name": "v", "strict": true, "schema": loose}}}),
    )
    .await;
    assert_eq!(refused.status(), 400);
    let bad_name = openai(
        &mock,
        json!({"model": "m", "messages": [user("hi")], "response_format": {"type": "json_schema",
            "json_schema": {"name": "a name", "strict": true, "schema": schema}}}),
    )
    .await;
    assert_eq!(bad_name.status(), 400);
    let ok: Value = openai(
        &mock,
        json!({"model": "m", "messages": [user("hi")], "response_format": {"type": "json_schema",
            "json_schema": {"name": "v", "strict": true, "schema": schema}}}),
    )
    .await
    .json()
    .await
    .unwrap();
    let content = ok["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(content).unwrap(),
        json!({"score": 3, "why": "mock why"})
    );
    // Anthropic: the forced tool must exist; the answer is a tool_use block.
    let missing = anthropic(
        &mock,
        json!({"model": "m", "max_tokens": 10, "messages": [user("hi")],
            "tools": [{"name": "v", "input_schema": schema}],
            "tool_choice": {"type": "tool", "name": "other"}}),
    )
    .await;
    assert_eq!(missing.status(), 400);
    let ok: Value = anthropic(
        &mock,
        json!({"model": "m", "max_tokens": 10, "messages": [user("hi")],
            "tools": [{"name": "v", "input_schema": schema}],
            "tool_choice": {"type": "tool", "name": "v"}}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(ok["content"][0]["type"], "tool_use");
    assert_eq!(ok["content"][0]["input"]["score"], 3);
    assert_eq!(ok["stop_reason"], "tool_use");
    // Ollama: `format` is "json" or a schema object.
    let bad = ollama(
        &mock,
        json!({"model": "m", "messages": [user("hi")], "format": 42, "stream": false}),
    )
    .await;
    assert_eq!(bad.status(), 400);
    let ok: Value = ollama(
        &mock,
        json!({"model": "m", "messages": [user("hi")], "format": schema, "stream": false}),
    )
    .await
    .json()
    .await
    .unwrap();
    let content = ok["message"]["content"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(content).unwrap()["score"], 3);
}

// ---------------------------------------------------------------------------
// Rate limits, quota errors, billing
// ---------------------------------------------------------------------------

async fn openai_as(mock: &MockProvider, key: &str, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", mock.openai_base_url()))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("send")
}

async fn anthropic_as(mock: &MockProvider, key: &str, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", mock.anthropic_base_url()))
        .header("x-api-key", key)
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .expect("send")
}

fn header<'a>(resp: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    resp.headers().get(name).map(|v| v.to_str().unwrap())
}

fn header_u64(resp: &reqwest::Response, name: &str) -> u64 {
    header(resp, name)
        .unwrap_or_else(|| panic!("missing {name}"))
        .parse()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Seconds of a Go duration as OpenAI writes it (`0s`, `12ms`, `1.5s`, `6m0s`, `2m59.56s`,
/// `1h0m0s`); `None` when it is not one.
fn parse_go_duration(s: &str) -> Option<f64> {
    if let Some(ms) = s.strip_suffix("ms") {
        return ms.parse::<u64>().ok().map(|ms| ms as f64 / 1000.0);
    }
    let mut rest = s.strip_suffix('s')?;
    let mut total = 0.0;
    if let Some((h, r)) = rest.split_once('h') {
        total += h.parse::<u64>().ok()? as f64 * 3600.0;
        rest = r;
    }
    if let Some((m, r)) = rest.split_once('m') {
        total += m.parse::<u64>().ok()? as f64 * 60.0;
        rest = r;
    }
    let (whole, frac) = rest.split_once('.').unwrap_or((rest, ""));
    if frac.len() > 3 || frac.ends_with('0') || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    total += whole.parse::<u64>().ok()? as f64;
    if !frac.is_empty() {
        total += format!("0.{frac}").parse::<f64>().ok()?;
    }
    Some(total)
}

fn chat(model: &str, text: &str) -> Value {
    json!({"model": model, "messages": [user(text)]})
}

fn claude(model: &str, text: &str) -> Value {
    json!({"model": model, "max_tokens": 100, "messages": [user(text)]})
}

#[test]
fn go_duration_formats_as_openai_writes_it() {
    let ms = Duration::from_millis;
    assert_eq!(go_duration(Duration::ZERO), "0s");
    assert_eq!(go_duration(ms(12)), "12ms");
    assert_eq!(go_duration(Duration::from_micros(11_200)), "12ms");
    assert_eq!(go_duration(ms(1500)), "1.5s");
    assert_eq!(go_duration(ms(20_000)), "20s");
    assert_eq!(go_duration(ms(59_900)), "59.9s");
    assert_eq!(go_duration(ms(360_000)), "6m0s");
    assert_eq!(go_duration(ms(179_560)), "2m59.56s");
    assert_eq!(go_duration(ms(3_600_000)), "1h0m0s");
    for s in [
        "0s", "12ms", "1.5s", "20s", "59.9s", "6m0s", "2m59.56s", "1h0m0s",
    ] {
        assert!(parse_go_duration(s).is_some(), "{s}");
    }
}

#[test]
fn openai_token_charge_counts_text_max_tokens_and_images() {
    let body = json!({
        "model": "gpt-4o",
        "max_tokens": 100,
        "messages": [
            {"role": "system", "content": "12345"},
            {"role": "user", "content": [
                {"type": "text", "text": "abcd"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
            ]}
        ]
    });
    assert_eq!(openai_token_charge(&body), 2 + 1 + 85 + 100);
    let body = json!({"model": "o", "max_completion_tokens": 7, "messages": [user("")]});
    assert_eq!(openai_token_charge(&body), 7);
    assert_eq!(openai_token_charge(&chat("m", "hi")), 1);
}

#[tokio::test]
async fn requests_bucket_refills_within_its_window() {
    // 120 RPM over a 1 s window: a bucket of 2 requests refilling at 2 a second.
    let limits = MockLimits {
        rpm: Some(120),
        window: Duration::from_secs(1),
        ..MockLimits::default()
    };
    let mock = MockProvider::start_with(MockConfig {
        limits: Some(limits.clone()),
        model_limits: vec![(
            "gpt-ms".into(),
            MockLimits {
                retry_after: RetryAfterHeader::Millis,
                ..limits
            },
        )],
        manual_clock: true,
        ..MockConfig::default()
    });
    for _ in 0..2 {
        let resp = openai(&mock, chat("gpt-4o", "hi")).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header_u64(&resp, "x-ratelimit-limit-requests"), 120);
    }
    let resp = openai(&mock, chat("gpt-4o", "hi")).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(header(&resp, "retry-after"), Some("1"));
    assert!(header(&resp, "retry-after-ms").is_none());
    assert_eq!(header_u64(&resp, "x-ratelimit-limit-requests"), 120);
    assert_eq!(header_u64(&resp, "x-ratelimit-remaining-requests"), 0);
    // The clock stands still: the bucket is empty, a whole second from full.
    assert_eq!(header(&resp, "x-ratelimit-reset-requests"), Some("1s"));
    assert!(header(&resp, "x-ratelimit-limit-tokens").is_none());
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "requests");
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    assert_eq!(v["error"]["param"], Value::Null);
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Rate limit reached for gpt-4o in organization org-mock on requests per min (RPM): Limit 120, Used "
        ),
        "{message}"
    );
    assert!(
        message.contains(", Requested 1. Please try again in "),
        "{message}"
    );
    let wait = message
        .split("Please try again in ")
        .nth(1)
        .and_then(|r| r.split(". Visit").next())
        .and_then(parse_go_duration)
        .unwrap();
    assert_eq!(wait, 0.5, "half a second refills one request");
    assert!(
        message.ends_with("Visit https://platform.openai.com/account/rate-limits to learn more.")
    );

    // Another key has its own buckets; so has another model (here with retry-after-ms).
    assert_eq!(
        openai_as(&mock, "sk-other", chat("gpt-4o", "hi"))
            .await
            .status(),
        200
    );
    for _ in 0..2 {
        assert_eq!(openai(&mock, chat("gpt-ms", "hi")).await.status(), 200);
    }
    let resp = openai(&mock, chat("gpt-ms", "hi")).await;
    assert_eq!(resp.status(), 429);
    assert!(header(&resp, "retry-after").is_none());
    assert_eq!(header(&resp, "retry-after-ms"), Some("500"));

    // 499 ms refill most of a request, not all of it; 500 ms refill one.
    mock.advance(Duration::from_millis(499));
    assert_eq!(openai(&mock, chat("gpt-4o", "hi")).await.status(), 429);
    mock.advance(Duration::from_millis(1));
    assert_eq!(openai(&mock, chat("gpt-4o", "hi")).await.status(), 200);

    assert_eq!(mock.refused(), 3);
    assert_eq!(mock.admitted(), 6);
    let log = mock.admissions();
    let statuses: Vec<u16> = log.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [200, 200, 429, 200, 200, 200, 429, 429, 200]);
    assert_eq!(log[2].requests, 0);
    assert_eq!(log[2].tokens, 0);
    assert_eq!(log[0].requests, 1);
    assert_eq!(log[0].tokens, 1);
    assert_eq!(log[0].key, "sk-test");
    assert_eq!(log[3].key, "sk-other");
    assert_eq!(log[0].model, "gpt-4o");
    assert!(log.windows(2).all(|w| w[0].at <= w[1].at));
    assert_eq!(log[8].at - log[2].at, Duration::from_millis(500));
}

#[tokio::test]
async fn openai_headers_parse_and_remaining_decreases() {
    // The default mock sends no rate-limit headers.
    let plain = MockProvider::start();
    let resp = openai(&plain, chat("gpt-4o", "hi")).await;
    assert!(
        resp.headers()
            .keys()
            .all(|k| !k.as_str().starts_with("x-ratelimit"))
    );
    assert_eq!(plain.refused(), 0);
    assert_eq!(plain.admitted(), 1);

    let mock = MockProvider::start_with(MockConfig {
        limits: Some(MockLimits {
            rpm: Some(60),
            tpm: Some(100_000),
            ..MockLimits::default()
        }),
        manual_clock: true,
        ..MockConfig::default()
    });
    let body = json!({"model": "gpt-4o", "max_tokens": 1000, "messages": [user("hello world")]});
    assert_eq!(openai_token_charge(&body), 1003);
    let mut last = (u64::MAX, u64::MAX);
    for i in 0..3u64 {
        let resp = openai(&mock, body.clone()).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header_u64(&resp, "x-ratelimit-limit-requests"), 60);
        assert_eq!(header_u64(&resp, "x-ratelimit-limit-tokens"), 100_000);
        let requests = header_u64(&resp, "x-ratelimit-remaining-requests");
        let tokens = header_u64(&resp, "x-ratelimit-remaining-tokens");
        assert_eq!(requests, 59 - i);
        assert!(
            tokens < last.1 && tokens <= 100_000 - 1003 * (i + 1) + 500,
            "{tokens}"
        );
        assert!(requests < last.0);
        last = (requests, tokens);
        let reset_requests =
            parse_go_duration(header(&resp, "x-ratelimit-reset-requests").unwrap()).unwrap();
        let reset_tokens =
            parse_go_duration(header(&resp, "x-ratelimit-reset-tokens").unwrap()).unwrap();
        // reset ≈ (limit - remaining) * 60 s / limit
        let expected = (i + 1) as f64;
        assert!(
            reset_requests > expected - 0.5 && reset_requests <= expected,
            "{reset_requests}"
        );
        let expected = 1003.0 * (i + 1) as f64 * 60.0 / 100_000.0;
        assert!(
            reset_tokens > expected - 0.3 && reset_tokens <= expected + 0.01,
            "{reset_tokens} vs {expected}"
        );
    }
    // Errors carry the headers too.
    let resp = openai(&mock, json!({"model": "gpt-4o"})).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(header_u64(&resp, "x-ratelimit-limit-requests"), 60);
}

#[tokio::test]
async fn openai_tokens_too_large_and_debt() {
    let mock = MockProvider::start_with(MockConfig {
        limits: Some(MockLimits {
            tpm: Some(30_000),
            window: Duration::from_secs(1),
            ..MockLimits::default()
        }),
        manual_clock: true,
        ..MockConfig::default()
    });
    // Above the per-minute limit: never succeeds, no retry header.
    let big = json!({"model": "gpt-4o", "max_tokens": 50_000, "messages": [user("hi")]});
    let resp = openai(&mock, big).await;
    assert_eq!(resp.status(), 429);
    assert!(header(&resp, "retry-after").is_none());
    assert!(header(&resp, "retry-after-ms").is_none());
    assert_eq!(header_u64(&resp, "x-ratelimit-remaining-tokens"), 30_000);
    assert_eq!(header(&resp, "x-ratelimit-reset-tokens"), Some("0s"));
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v,
        json!({"error": {
            "message": "Request too large for gpt-4o in organization org-mock on tokens per min (TPM): Limit 30000, Requested 50001. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.",
            "type": "tokens", "param": null, "code": "rate_limit_exceeded"}})
    );
    assert_eq!(mock.ledger().len(), 0);

    // Above the 500-token bucket but within the limit: admitted when full, leaves debt.
    let large = json!({"model": "gpt-4o", "max_tokens": 1000, "messages": [user("hi")]});
    let resp = openai(&mock, large).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header_u64(&resp, "x-ratelimit-remaining-tokens"), 0);
    let reset = parse_go_duration(header(&resp, "x-ratelimit-reset-tokens").unwrap()).unwrap();
    assert!(
        reset > 1.5 && reset <= 2.01,
        "debt of 501 + 500 to refill: {reset}"
    );
    // 401 tokens need 501 + 401 to refill at 500 a second.
    let next = json!({"model": "gpt-4o", "max_tokens": 400, "messages": [user("hi")]});
    let resp = openai(&mock, next).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(header(&resp, "retry-after"), Some("2"));
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "tokens");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Rate limit reached for gpt-4o in organization org-mock on tokens per min (TPM): Limit 30000, Used 30000, Requested 401. Please try again in 1."
        ),
        "{message}"
    );
    let log = mock.admissions();
    assert_eq!(
        log.iter().map(|a| a.tokens).collect::<Vec<_>>(),
        [0, 1001, 0]
    );
}

#[tokio::test]
async fn anthropic_headers_and_output_charged_after_the_answer() {
    let mock = MockProvider::start_with(MockConfig {
        limits: Some(MockLimits {
            rpm: Some(50),
            itpm: Some(100_000),
            otpm: Some(5_000),
            ..MockLimits::default()
        }),
        manual_clock: true,
        ..MockConfig::default()
    });
    let long = vec!["word"; 3000].join(" ");
    mock.add_rule(Rule::reply("long", &long));
    let before = chrono::Utc::now();
    let resp = anthropic(&mock, claude("claude-x", "say something long")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header_u64(&resp, "anthropic-ratelimit-requests-limit"), 50);
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-requests-remaining"),
        49
    );
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-input-tokens-limit"),
        100_000
    );
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-input-tokens-remaining"),
        100_000
    );
    // The 3,000 output tokens are charged once the answer is generated.
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-output-tokens-limit"),
        5_000
    );
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-output-tokens-remaining"),
        2_000
    );
    // The more restrictive of the two token buckets.
    assert_eq!(header_u64(&resp, "anthropic-ratelimit-tokens-limit"), 5_000);
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-tokens-remaining"),
        2_000
    );
    for name in ["requests", "input-tokens", "output-tokens", "tokens"] {
        let raw = header(&resp, &format!("anthropic-ratelimit-{name}-reset")).unwrap();
        assert!(raw.ends_with('Z') && raw.len() == 20, "{raw}");
        let at = chrono::DateTime::parse_from_rfc3339(raw).unwrap();
        assert!(at >= before, "{name} reset {raw} is in the past");
        assert!(
            at <= before + chrono::Duration::seconds(62),
            "{name} reset {raw}"
        );
        if name != "requests" {
            assert_eq!(
                header_u64(&resp, &format!("anthropic-ratelimit-{name}-remaining")) % 1000,
                0
            );
        }
    }
    let requests_reset = chrono::DateTime::parse_from_rfc3339(
        header(&resp, "anthropic-ratelimit-requests-reset").unwrap(),
    )
    .unwrap();
    assert!(requests_reset > before, "one request to refill");
    let output_reset = chrono::DateTime::parse_from_rfc3339(
        header(&resp, "anthropic-ratelimit-output-tokens-reset").unwrap(),
    )
    .unwrap();
    assert!(output_reset >= before + chrono::Duration::seconds(35));

    // A second long answer is admitted (output level still positive) and takes it below zero.
    let resp = anthropic(&mock, claude("claude-x", "long again")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-output-tokens-remaining"),
        0
    );
    // Now refused until the output bucket is positive again.
    let resp = anthropic(&mock, claude("claude-x", "short")).await;
    assert_eq!(resp.status(), 429);
    let retry: u64 = header(&resp, "retry-after").unwrap().parse().unwrap();
    assert!(
        (11..=13).contains(&retry),
        "1,000 tokens of debt at 83/s: {retry}"
    );
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert!(v["request_id"].as_str().unwrap().starts_with("req_mock"));
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "This request would exceed the rate limit for your organization (org-mock) of 5000 output tokens per minute."
        ),
        "{message}"
    );
    let log = mock.admissions();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].tokens, 3 + 3000);
    assert_eq!(log[2].status, 429);
    assert_eq!(log[2].tokens, 0);
    assert_eq!(log[0].key, "sk-ant-test");
}

#[tokio::test]
async fn anthropic_output_reserved_at_admission_and_given_back_when_the_answer_ends() {
    let mock = MockProvider::start_with(MockConfig {
        limits: Some(MockLimits {
            otpm: Some(50_000),
            reserve_output: true,
            ..MockLimits::default()
        }),
        manual_clock: true,
        ..MockConfig::default()
    });
    let body = |max_tokens: u64, stream: bool| {
        json!({"model": "claude-x", "max_tokens": max_tokens, "stream": stream,
               "messages": [user("hello")]})
    };
    // A streamed answer's head is sent at admission: its own 20,000 are reserved.
    let resp = anthropic(&mock, body(20_000, true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-output-tokens-remaining"),
        30_000
    );
    assert!(resp.text().await.unwrap().contains("message_stop"));
    // Once it ended, all but the few tokens generated came back: the next answer, made when
    // it ended, tells a bucket about full.
    let resp = anthropic(&mock, body(20_000, false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-output-tokens-remaining"),
        50_000
    );
    // A reservation above the whole limit never fits.
    let resp = anthropic(&mock, body(60_000, false)).await;
    assert_eq!(resp.status(), 429);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");
}

#[tokio::test]
async fn anthropic_requests_and_input_limits() {
    let mock = MockProvider::start_with(MockConfig {
        limits: Some(MockLimits {
            rpm: Some(3),
            itpm: Some(10),
            ..MockLimits::default()
        }),
        manual_clock: true,
        ..MockConfig::default()
    });
    // More input than the per-minute limit: a rate_limit_error that never fits.
    let resp = anthropic(&mock, claude("claude-x", &["w"; 11].join(" "))).await;
    assert_eq!(resp.status(), 429);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "This request would exceed your organization's rate limit of 10 input tokens per minute."
        ),
        "{message}"
    );
    // 3 requests, then a 429 naming the requests limit.
    for _ in 0..3 {
        assert_eq!(anthropic(&mock, claude("claude-x", "")).await.status(), 200);
    }
    let resp = anthropic(&mock, claude("claude-x", "")).await;
    assert_eq!(resp.status(), 429);
    // One request refills in 20 s.
    assert_eq!(header(&resp, "retry-after"), Some("20"));
    assert_eq!(
        header_u64(&resp, "anthropic-ratelimit-requests-remaining"),
        0
    );
    let v: Value = resp.json().await.unwrap();
    assert!(
        v["error"]["message"].as_str().unwrap().starts_with(
            "This request would exceed the rate limit for your organization (org-mock) of 3 requests per minute."
        )
    );
}

#[tokio::test]
async fn quota_and_usage_limits_never_succeed_for_their_model_only() {
    let mock = MockProvider::start_with(MockConfig {
        limits: Some(MockLimits {
            rpm: Some(1),
            ..MockLimits::default()
        }),
        manual_clock: true,
        ..MockConfig::default()
    });
    mock.add_rule(Rule::for_model("gpt-broke", Action::QuotaExhausted).times(2));
    mock.add_rule(Rule::for_model("gpt-capped", Action::UsageLimit));
    mock.add_rule(Rule::for_model("claude-broke", Action::QuotaExhausted));
    mock.add_rule(Rule::for_model("claude-capped", Action::UsageLimit));

    for _ in 0..2 {
        let resp = openai(&mock, chat("gpt-broke", "hi")).await;
        assert_eq!(resp.status(), 429);
        assert!(header(&resp, "retry-after").is_none());
        assert!(header(&resp, "retry-after-ms").is_none());
        assert_eq!(
            resp.json::<Value>().await.unwrap(),
            json!({"error": {
                "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}})
        );
    }
    // Neither was charged: the 1-RPM bucket of (sk-test, gpt-broke) is still full.
    assert_eq!(openai(&mock, chat("gpt-broke", "hi")).await.status(), 200);

    let resp = openai(&mock, chat("gpt-capped", "hi")).await;
    assert_eq!(resp.status(), 429);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "organization_spend_limit_exceeded");
    assert_eq!(v["error"]["type"], "invalid_request_error");

    let resp = anthropic(&mock, claude("claude-broke", "hi")).await;
    assert_eq!(resp.status(), 429);
    assert!(header(&resp, "retry-after").is_none());
    let mut v: Value = resp.json().await.unwrap();
    let request_id = v.as_object_mut().unwrap().remove("request_id").unwrap();
    assert!(request_id.as_str().unwrap().starts_with("req_mock"));
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert_eq!(
        v["error"]["details"],
        json!({"error_code": "enforced_spend_limit_reached"})
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("You have reached your monthly spend limit.")
    );

    let resp = anthropic(&mock, claude("claude-capped", "hi")).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC."}})
    );

    // Other models are unaffected.
    assert_eq!(openai(&mock, chat("gpt-ok", "hi")).await.status(), 200);
    assert_eq!(
        anthropic(&mock, claude("claude-ok", "hi")).await.status(),
        200
    );

    assert_eq!(mock.request_count(), 8);
    let billed: Vec<String> = mock.ledger().into_iter().map(|e| e.model).collect();
    assert_eq!(billed, ["gpt-broke", "gpt-ok", "claude-ok"]);
    assert_eq!(mock.refused(), 4);
    assert_eq!(mock.admitted(), 3);
}

#[tokio::test]
async fn ledger_bills_generated_answers_at_their_price() {
    let mock = MockProvider::start_with(MockConfig {
        prices: vec![("gpt-4o".into(), 2.5, 10.0), ("claude-x".into(), 3.0, 15.0)],
        model_limits: vec![(
            "gpt-4o-limited".into(),
            MockLimits {
                rpm: Some(1),
                ..MockLimits::default()
            },
        )],
        manual_clock: true,
        ..MockConfig::default()
    });
    mock.add_rule(Rule::fail("boom", 500, 1));
    mock.add_rule(Rule::truncate("cut"));

    // 3 input words, "mock reply to: one two three" = 6 output words.
    assert_eq!(
        openai_as(&mock, "sk-a", chat("gpt-4o", "one two three"))
            .await
            .status(),
        200
    );
    // 2 input words, 5 output words.
    assert_eq!(
        anthropic_as(&mock, "sk-ant-b", claude("claude-x", "alpha beta"))
            .await
            .status(),
        200
    );
    // A failure is not billed.
    assert_eq!(
        openai_as(&mock, "sk-a", chat("gpt-4o", "boom"))
            .await
            .status(),
        500
    );
    // A refusal is not billed; the admitted one costs nothing (no price).
    assert_eq!(
        openai_as(&mock, "sk-c", chat("gpt-4o-limited", "x"))
            .await
            .status(),
        200
    );
    assert_eq!(
        openai_as(&mock, "sk-c", chat("gpt-4o-limited", "x"))
            .await
            .status(),
        429
    );
    // A truncated answer was generated: billed. 2 input words, 5 output.
    let resp = openai_as(&mock, "sk-d", chat("gpt-4o", "cut me")).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.bytes().await.is_err());

    let ledger = mock.ledger();
    let rows: Vec<(&str, &str, u64, u64)> = ledger
        .iter()
        .map(|e| {
            (
                e.key.as_str(),
                e.model.as_str(),
                e.input_tokens,
                e.output_tokens,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("sk-a", "gpt-4o", 3, 6),
            ("sk-ant-b", "claude-x", 2, 5),
            ("sk-c", "gpt-4o-limited", 1, 4),
            ("sk-d", "gpt-4o", 2, 5),
        ]
    );
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(close(ledger[0].usd, (3.0 * 2.5 + 6.0 * 10.0) / 1e6));
    assert!(close(ledger[1].usd, (2.0 * 3.0 + 5.0 * 15.0) / 1e6));
    assert_eq!(ledger[2].usd, 0.0);
    let gpt = (3.0 * 2.5 + 6.0 * 10.0 + 2.0 * 2.5 + 5.0 * 10.0) / 1e6;
    assert!(close(mock.billed_usd_for("gpt-4o"), gpt));
    assert!(close(mock.billed_usd_for("claude-x"), 81.0 / 1e6));
    assert_eq!(mock.billed_usd_for("gpt-4o-limited"), 0.0);
    assert!(close(mock.billed_usd(), gpt + 81.0 / 1e6));
}

#[tokio::test]
async fn limits_without_headers_still_enforce() {
    let mock = MockProvider::start_with(MockConfig {
        limits: Some(MockLimits {
            rpm: Some(60),
            tpm: Some(1_000_000),
            itpm: Some(1_000_000),
            otpm: Some(1_000_000),
            window: Duration::from_secs(1),
            headers: false,
            retry_after: RetryAfterHeader::Seconds,
            reserve_output: false,
            message_tokens: 0,
        }),
        manual_clock: true,
        ..MockConfig::default()
    });
    let quiet = |resp: &reqwest::Response| {
        resp.headers().keys().all(|k| {
            !k.as_str().starts_with("x-ratelimit") && !k.as_str().starts_with("anthropic-ratelimit")
        })
    };
    let resp = openai(&mock, chat("gpt-4o", "hi")).await;
    assert_eq!(resp.status(), 200);
    assert!(quiet(&resp));
    let resp = openai(&mock, chat("gpt-4o", "hi")).await;
    assert_eq!(resp.status(), 429);
    assert!(quiet(&resp));
    assert_eq!(header(&resp, "retry-after"), Some("1"));

    let resp = anthropic(&mock, claude("claude-x", "hi")).await;
    assert_eq!(resp.status(), 200);
    assert!(quiet(&resp));
    let resp = anthropic(&mock, claude("claude-x", "hi")).await;
    assert_eq!(resp.status(), 429);
    assert!(quiet(&resp));
    assert_eq!(header(&resp, "retry-after"), Some("1"));

    // Ollama is never limited.
    for _ in 0..3 {
        let resp = ollama(
            &mock,
            json!({"model": "gpt-4o", "stream": false, "messages": [user("hi")]}),
        )
        .await;
        assert_eq!(resp.status(), 200);
    }
    assert_eq!(mock.refused(), 2);
}

/// The `data:` payloads of an SSE response, `[DONE]` left out.
async fn sse_payloads(resp: reqwest::Response) -> Vec<Value> {
    let body = resp.text().await.unwrap();
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn the_mock_asks_for_tool_calls_in_both_wire_formats_whole_and_streamed() {
    use track::llm::tools::{OpenAiToolDeltas, anthropic_tool_uses, openai_tool_calls};
    let mock = MockProvider::start();
    mock.add_rule(Rule::new(
        "weather",
        Action::ToolCalls(vec![
            ("weather".into(), json!({"city": "Paris"})),
            ("clock".into(), json!({})),
        ]),
    ));
    let asked = |calls: &[track::llm::tools::ToolCall]| -> Vec<(String, Value)> {
        calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect()
    };
    let want = vec![
        ("weather".to_owned(), json!({"city": "Paris"})),
        ("clock".to_owned(), json!({})),
    ];
    let body = json!({"model": "gpt-4o", "messages": [user("weather in Paris?")]});
    let whole: Value = openai(&mock, body.clone()).await.json().await.unwrap();
    assert_eq!(whole["choices"][0]["finish_reason"], "tool_calls");
    let calls = openai_tool_calls(&whole["choices"][0]["message"]).unwrap();
    assert_eq!(asked(&calls), want);
    assert!(calls.iter().all(|c| c.id.starts_with("call_mock")));

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let mut deltas = OpenAiToolDeltas::default();
    let mut finish = Value::Null;
    for chunk in sse_payloads(openai(&mock, streamed).await).await {
        if let Some(choice) = chunk["choices"].get(0) {
            deltas.add(&choice["delta"]);
            if !choice["finish_reason"].is_null() {
                finish = choice["finish_reason"].clone();
            }
        }
    }
    assert_eq!(finish, "tool_calls");
    assert_eq!(asked(&deltas.finish().unwrap()), want);

    let body = json!({"model": "claude-3-5-sonnet-20241022", "max_tokens": 100,
        "messages": [user("weather in Paris?")]});
    let whole: Value = anthropic(&mock, body).await.json().await.unwrap();
    assert_eq!(whole["stop_reason"], "tool_use");
    assert_eq!(asked(&anthropic_tool_uses(&whole["content"])), want);
}
