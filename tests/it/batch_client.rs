//! track's batch client (`track::llm::batch`) against the mock's batch APIs over real HTTP:
//! every step of both wire formats, and answers compared with what the live path reads from
//! the same requests.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;
use track::llm::batch::{
    self, BatchApi, BatchError, BatchStatus, LineFailure, Lost, Page, Payload,
};
use track::llm::client::ApiKey;
use track::llm::{
    AnswerSchema, ChatRequest, Endpoint, LlmClient, Message, ProviderKind, SamplingParams,
};

use crate::support::mock::batch::{BatchFault, BatchStep, BatchTimings, TokenLimitForm};
use crate::support::mock::{MockConfig, MockProvider};

const GPT: &str = "gpt-4o-mini";
const CLAUDE: &str = "claude-3-5-haiku-20241022";

fn mock() -> MockProvider {
    let mock = MockProvider::start_with(MockConfig {
        prices: vec![(GPT.into(), 2.0, 8.0), (CLAUDE.into(), 4.0, 16.0)],
        ..MockConfig::default()
    });
    mock.batches().set_speed(0.0);
    mock
}

fn client() -> LlmClient {
    LlmClient::new(Duration::from_secs(20)).expect("client")
}

fn openai(mock: &MockProvider) -> Endpoint {
    Endpoint {
        provider: "openai".into(),
        kind: ProviderKind::Openai,
        base_url: mock.openai_base_url(),
        api_key: Some(ApiKey::new("sk-test-batch-client-0001")),
        basic_auth: None,
    }
}

fn anthropic(mock: &MockProvider) -> Endpoint {
    Endpoint {
        provider: "anthropic".into(),
        kind: ProviderKind::Anthropic,
        base_url: mock.anthropic_base_url(),
        api_key: Some(ApiKey::new("sk-ant-test-batch-client-0002")),
        basic_auth: None,
    }
}

fn request(model: &str, text: &str) -> ChatRequest {
    ChatRequest {
        tools: None,
        model: model.into(),
        system: Some("be brief".into()),
        messages: vec![Message::user(text)].into(),
        params: SamplingParams {
            max_tokens: Some(40),
            ..SamplingParams::default()
        }
        .into(),
        schema: None,
    }
}

/// `n` requests keyed as the cache keys them (bare sha256 hex).
fn requests(model: &str, prefix: &str, n: usize) -> HashMap<String, ChatRequest> {
    (0..n)
        .map(|i| {
            let text = format!("{prefix}{i}: tell me about batches");
            (
                track::hash::sha256_hex(text.as_bytes()),
                request(model, &text),
            )
        })
        .collect()
}

/// One payload of `requests` (sorted by key, so it is the same every time).
fn payload(api: BatchApi, kind: ProviderKind, requests: &HashMap<String, ChatRequest>) -> Payload {
    let mut items: Vec<(&str, &ChatRequest)> =
        requests.iter().map(|(k, r)| (k.as_str(), r)).collect();
    items.sort_by_key(|(k, _)| *k);
    let mut split = batch::split(api, kind, items, api.limits()).expect("split");
    assert_eq!(split.payloads.len(), 1);
    split.payloads.remove(0)
}

/// Uploads (when the API wants it) and creates `payload`'s batch.
async fn submit(
    client: &LlmClient,
    endpoint: &Endpoint,
    payload: &Payload,
    tag: &str,
) -> Result<batch::BatchInfo, BatchError> {
    let file = batch::upload(client, endpoint, payload).await?;
    batch::create(client, endpoint, payload, file.as_deref(), tag).await
}

/// Checks that every line answered as the live path answers its request.
async fn compare_with_live(
    client: &LlmClient,
    endpoint: &Endpoint,
    requests: &HashMap<String, ChatRequest>,
    lines: &[batch::ResultLine],
) {
    assert_eq!(lines.len(), requests.len());
    for line in lines {
        let answer = line.outcome.as_ref().expect("answered");
        let request = &requests[&line.custom_id];
        let live = track::llm::chat(client, endpoint, request, None)
            .await
            .expect("live");
        // Streamed (as a scope's first call is), the same answer, and the head comes first.
        let (head, head_seen) = tokio::sync::oneshot::channel();
        let streamed = track::llm::chat(client, endpoint, request, Some(head))
            .await
            .expect("streamed");
        assert!(head_seen.await.is_ok(), "the head was told");
        assert_eq!(
            (&streamed.text, streamed.usage, &streamed.finish_reason),
            (&live.text, live.usage, &live.finish_reason),
            "streamed {}",
            line.custom_id
        );
        assert_eq!(
            (&answer.text, answer.usage, &answer.finish_reason),
            (&live.text, live.usage, &live.finish_reason),
            "{}",
            line.custom_id
        );
        assert!(!answer.usage.estimated);
    }
}

#[tokio::test]
async fn an_openai_batch_answers_what_the_live_path_answers() {
    let mock = mock();
    let (client, endpoint) = (client(), openai(&mock));
    let requests = requests(GPT, "p", 5);
    let payload = payload(BatchApi::Openai, ProviderKind::Openai, &requests);
    let file = batch::upload(&client, &endpoint, &payload)
        .await
        .unwrap()
        .expect("OpenAI uploads a file");
    let info = batch::create(&client, &endpoint, &payload, Some(&file), "track-tag-1")
        .await
        .unwrap();
    assert_eq!(info.status, BatchStatus::Validating);
    assert_eq!(info.tag(), Some("track-tag-1"));
    assert_eq!(info.metadata[batch::PAYLOAD_KEY], payload.sha256);
    assert_eq!(info.input_file_id.as_deref(), Some(file.as_str()));
    let early = batch::results(&client, &endpoint, &info, |id| requests.get(id)).await;
    assert!(
        matches!(early, Err(BatchError::NoResults { .. })),
        "{early:?}"
    );
    // The mock received the file the payload holds, and the live bodies.
    let submitted = mock.batches().submitted();
    assert_eq!(submitted.len(), 5);
    for line in &submitted {
        let live = track::llm::openai::body(&requests[&line.custom_id], ProviderKind::Openai);
        assert_eq!(line.body, live);
    }
    mock.batches().advance(Duration::from_secs(200));
    let info = batch::get(&client, &endpoint, BatchApi::Openai, &info.id)
        .await
        .unwrap();
    assert_eq!(info.status, BatchStatus::InProgress);
    assert!(
        info.counts.succeeded > 0 && info.counts.processing > 0,
        "{:?}",
        info.counts
    );
    mock.batches().advance(Duration::from_secs(200));
    let info = batch::get(&client, &endpoint, BatchApi::Openai, &info.id)
        .await
        .unwrap();
    assert_eq!(info.status, BatchStatus::Completed);
    assert_eq!((info.counts.total, info.counts.succeeded), (5, 5));
    assert!(info.ended_at.is_some() && info.output_file_id.is_some());
    let lines = batch::results(&client, &endpoint, &info, |id| requests.get(id))
        .await
        .unwrap();
    compare_with_live(&client, &endpoint, &requests, &lines).await;
}

#[tokio::test]
async fn an_anthropic_batch_answers_what_the_live_path_answers() {
    let mock = mock();
    let (client, endpoint) = (client(), anthropic(&mock));
    let mut requests = requests(CLAUDE, "a", 3);
    let mut shaped = request(CLAUDE, "rate this");
    shaped.schema = Some(Box::new(AnswerSchema {
        name: "verdict".into(),
        schema: json!({"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2, 3]}},
                       "required": ["score"]}),
    }));
    requests.insert(track::hash::sha256_hex(b"shaped"), shaped);
    let payload = payload(BatchApi::Anthropic, ProviderKind::Anthropic, &requests);
    let info = submit(&client, &endpoint, &payload, "unused")
        .await
        .unwrap();
    assert_eq!(info.status, BatchStatus::InProgress);
    assert_eq!(info.counts.processing, 4);
    mock.batches().advance(Duration::from_secs(400));
    let info = batch::get(&client, &endpoint, BatchApi::Anthropic, &info.id)
        .await
        .unwrap();
    assert_eq!(info.status, BatchStatus::Completed);
    assert_eq!(info.counts.succeeded, 4);
    assert!(info.results_url.is_some());
    let lines = batch::results(&client, &endpoint, &info, |id| requests.get(id))
        .await
        .unwrap();
    compare_with_live(&client, &endpoint, &requests, &lines).await;
    let shaped = lines
        .iter()
        .find(|l| l.custom_id == track::hash::sha256_hex(b"shaped"))
        .unwrap();
    assert_eq!(shaped.outcome.as_ref().unwrap().text, r#"{"score":3}"#);
}

#[tokio::test]
async fn a_batch_whose_create_answer_was_lost_is_found_again() {
    let mock = mock();
    let client = client();
    let since = chrono::Utc::now();

    let endpoint = openai(&mock);
    let first = payload(
        BatchApi::Openai,
        ProviderKind::Openai,
        &requests(GPT, "x", 2),
    );
    submit(&client, &endpoint, &first, "track-other")
        .await
        .unwrap();
    let lost = payload(
        BatchApi::Openai,
        ProviderKind::Openai,
        &requests(GPT, "p", 3),
    );
    let file = batch::upload(&client, &endpoint, &lost).await.unwrap();
    mock.batches()
        .fault(BatchStep::Create, BatchFault::LoseAnswer, 1);
    let answer = batch::create(&client, &endpoint, &lost, file.as_deref(), "track-lost").await;
    assert!(answer.is_err(), "{answer:?}");
    let found = batch::recover(
        &client,
        &endpoint,
        BatchApi::Openai,
        &Lost {
            tag: "track-lost",
            file_id: None,
            request_count: 3,
            since,
        },
    )
    .await
    .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].tag(), Some("track-lost"));
    // Its file id alone finds it too.
    let by_file = batch::recover(
        &client,
        &endpoint,
        BatchApi::Openai,
        &Lost {
            tag: "no-such-tag",
            file_id: file.as_deref(),
            request_count: 3,
            since,
        },
    )
    .await
    .unwrap();
    assert_eq!(by_file.len(), 1);
    assert_eq!(by_file[0].id, found[0].id);

    // Anthropic has no metadata: the batches created since with as many requests.
    let endpoint = anthropic(&mock);
    let other = payload(
        BatchApi::Anthropic,
        ProviderKind::Anthropic,
        &requests(CLAUDE, "x", 2),
    );
    submit(&client, &endpoint, &other, "").await.unwrap();
    let lost = payload(
        BatchApi::Anthropic,
        ProviderKind::Anthropic,
        &requests(CLAUDE, "p", 3),
    );
    mock.batches()
        .fault(BatchStep::Create, BatchFault::LoseAnswer, 1);
    assert!(submit(&client, &endpoint, &lost, "").await.is_err());
    let found = batch::recover(
        &client,
        &endpoint,
        BatchApi::Anthropic,
        &Lost {
            tag: "",
            file_id: None,
            request_count: 3,
            since,
        },
    )
    .await
    .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].counts.total, 3);
    let later = batch::recover(
        &client,
        &endpoint,
        BatchApi::Anthropic,
        &Lost {
            tag: "",
            file_id: None,
            request_count: 3,
            since: since + chrono::Duration::hours(1),
        },
    )
    .await
    .unwrap();
    assert!(later.is_empty(), "created before the intent: not it");
}

#[tokio::test]
async fn expired_and_cancelled_batches_keep_their_answers_and_name_the_rest() {
    let mock = mock();
    let client = client();
    mock.batches().set_timings(BatchTimings {
        in_progress: Duration::from_secs(40 * 3600),
        ..BatchTimings::default()
    });
    for endpoint in [openai(&mock), anthropic(&mock)] {
        let (api, model) = match endpoint.kind {
            ProviderKind::Openai => (BatchApi::Openai, GPT),
            _ => (BatchApi::Anthropic, CLAUDE),
        };
        let requests = requests(model, "e", 4);
        let info = submit(
            &client,
            &endpoint,
            &payload(api, endpoint.kind, &requests),
            "t",
        )
        .await
        .unwrap();
        mock.batches().advance(Duration::from_secs(24 * 3600));
        let info = batch::get(&client, &endpoint, api, &info.id).await.unwrap();
        assert_eq!(info.status, BatchStatus::Expired, "{api:?}");
        let lines = batch::results(&client, &endpoint, &info, |id| requests.get(id))
            .await
            .unwrap();
        assert_eq!(
            lines.iter().filter(|l| l.outcome.is_ok()).count(),
            2,
            "{api:?}"
        );
        let expired: Vec<&LineFailure> = lines
            .iter()
            .filter_map(|l| l.outcome.as_ref().err())
            .collect();
        assert_eq!(
            expired,
            [&LineFailure::Expired, &LineFailure::Expired],
            "{api:?}"
        );
    }
    mock.batches().set_timings(BatchTimings::default());
    for endpoint in [openai(&mock), anthropic(&mock)] {
        let (api, model) = match endpoint.kind {
            ProviderKind::Openai => (BatchApi::Openai, GPT),
            _ => (BatchApi::Anthropic, CLAUDE),
        };
        let requests = requests(model, "c", 4);
        let info = submit(
            &client,
            &endpoint,
            &payload(api, endpoint.kind, &requests),
            "t",
        )
        .await
        .unwrap();
        mock.batches().advance(Duration::from_secs(1));
        let info = batch::cancel(&client, &endpoint, api, &info.id)
            .await
            .unwrap();
        assert_eq!(info.status, BatchStatus::Cancelling, "{api:?}");
        mock.batches().advance(Duration::from_secs(60));
        let info = batch::get(&client, &endpoint, api, &info.id).await.unwrap();
        assert_eq!(info.status, BatchStatus::Cancelled, "{api:?}");
        let lines = batch::results(&client, &endpoint, &info, |id| requests.get(id))
            .await
            .unwrap();
        assert_eq!(lines.len(), 4);
        assert!(
            lines
                .iter()
                .all(|l| l.outcome == Err(LineFailure::Cancelled)),
            "{api:?}: {lines:?}"
        );
    }
}

#[tokio::test]
async fn refusals_are_typed_failures_and_errors() {
    let mock = mock();
    let client = client();
    let endpoint = openai(&mock);
    // A file the client would never write: its second line is not JSON.
    let good = payload(
        BatchApi::Openai,
        ProviderKind::Openai,
        &requests(GPT, "v", 1),
    );
    let mut bytes = good.bytes.to_vec();
    bytes.extend_from_slice(b"{not json\n");
    let bad = Payload {
        bytes: bytes.into(),
        sha256: "0123456789abcdef0123456789abcdef".into(),
        ..good
    };
    let info = submit(&client, &endpoint, &bad, "t").await.unwrap();
    mock.batches().advance(Duration::from_secs(30));
    let info = batch::get(&client, &endpoint, BatchApi::Openai, &info.id)
        .await
        .unwrap();
    let failures = info.status.failures();
    assert_eq!(failures.len(), 1, "{:?}", info.status);
    assert_eq!(
        (failures[0].line, failures[0].code.as_str()),
        (Some(2), "invalid_json_line")
    );
    assert!(info.status.is_ended() && !info.status.has_results());
    assert_eq!(
        batch::failures_from_json(info.failures_json().as_deref()),
        failures
    );

    // The model's queue of tokens is full: a typed error at create.
    mock.batches()
        .set_token_limit(GPT, 1, TokenLimitForm::AtCreate);
    let refused = submit(&client, &endpoint, &good_payload(), "t").await;
    assert!(
        matches!(refused, Err(BatchError::TokenLimit { .. })),
        "{refused:?}"
    );
    assert!(refused.unwrap_err().is_retryable());

    // Anthropic validates a request's parameters late: an errored line, not retried.
    let endpoint = anthropic(&mock);
    let mut requests = requests(CLAUDE, "b", 1);
    let mut bad_tool = request(CLAUDE, "rate this");
    bad_tool.schema = Some(Box::new(AnswerSchema {
        name: "not a valid name!".into(),
        schema: json!({"type": "object", "properties": {}}),
    }));
    let bad_key = track::hash::sha256_hex(b"bad tool");
    requests.insert(bad_key.clone(), bad_tool);
    let info = submit(
        &client,
        &endpoint,
        &payload(BatchApi::Anthropic, ProviderKind::Anthropic, &requests),
        "t",
    )
    .await
    .unwrap();
    mock.batches().advance(Duration::from_secs(400));
    let info = batch::get(&client, &endpoint, BatchApi::Anthropic, &info.id)
        .await
        .unwrap();
    assert_eq!((info.counts.succeeded, info.counts.errored), (1, 1));
    let lines = batch::results(&client, &endpoint, &info, |id| requests.get(id))
        .await
        .unwrap();
    let errored = lines
        .iter()
        .find(|l| l.custom_id == bad_key)
        .unwrap()
        .outcome
        .as_ref()
        .unwrap_err();
    assert!(
        errored.is_invalid_request() && !errored.is_retryable(),
        "{errored:?}"
    );
    assert_eq!(errored.http_status(), Some(400));
    // A line of a request the caller does not know is not read as one of its answers.
    let strangers = batch::results(&client, &endpoint, &info, |_| None)
        .await
        .unwrap();
    assert!(
        strangers
            .iter()
            .all(|l| l.outcome == Err(LineFailure::Unknown))
    );
}

fn good_payload() -> Payload {
    payload(
        BatchApi::Openai,
        ProviderKind::Openai,
        &requests(GPT, "g", 2),
    )
}

#[tokio::test]
async fn listings_page_through_the_client() {
    let mock = mock();
    let client = client();
    let endpoint = openai(&mock);
    let mut ids = Vec::new();
    for i in 0..3 {
        let p = payload(
            BatchApi::Openai,
            ProviderKind::Openai,
            &requests(GPT, &format!("l{i}-"), 1),
        );
        ids.push(
            submit(&client, &endpoint, &p, &format!("t{i}"))
                .await
                .unwrap()
                .id,
        );
    }
    let first = batch::list(
        &client,
        &endpoint,
        BatchApi::Openai,
        &Page {
            limit: Some(2),
            ..Page::default()
        },
    )
    .await
    .unwrap();
    let got: Vec<&str> = first.batches.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(got, [ids[2].as_str(), ids[1].as_str()], "newest first");
    let rest = batch::list(
        &client,
        &endpoint,
        BatchApi::Openai,
        &Page {
            after: first.next.clone(),
            limit: Some(2),
            ..Page::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(rest.batches.len(), 1);
    assert_eq!(rest.batches[0].id, ids[0]);
    assert_eq!(rest.next, None);
    let before = batch::list(
        &client,
        &endpoint,
        BatchApi::Openai,
        &Page {
            before: Some(ids[0].clone()),
            ..Page::default()
        },
    )
    .await;
    assert!(matches!(before, Err(BatchError::Unsupported(_))));
}
