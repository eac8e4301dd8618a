//! Self-tests of the mock LLM provider (`support::mock`), talking to it over
//! real HTTP with reqwest.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::mock::{Action, MockConfig, MockProvider, Rule};

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

#[tokio::test]
async fn requests_are_recorded_before_the_response() {
    let mock = MockProvider::start_with(MockConfig {
        delay: Duration::from_secs(30),
        ..MockConfig::default()
    });
    let fut = client()
        .post(format!("{}/chat/completions", mock.openai_base_url()))
        .bearer_auth("k")
        .json(&json!({"model": "m", "messages": [user("abandoned")]}))
        .send();
    let res = tokio::time::timeout(Duration::from_millis(500), fut).await;
    assert!(res.is_err(), "the request should still be pending");
    assert_eq!(mock.request_count(), 1);
    assert_eq!(mock.requests_containing("abandoned"), 1);
    // Dropping the mock with a response in flight must not hang.
    let t = Instant::now();
    drop(mock);
    assert!(t.elapsed() < Duration::from_secs(5));
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
