//! The one place a dispatched call becomes a stored call: live answers as they land, a
//! batch's results as they are collected, and failures of both, all through the writer
//! thread (async workers never block on SQLite).

use super::CallJob;
use crate::llm::{ChatResponse, Usage};
use crate::store::{NewCall, Store, StoreError, StoredCall, Writer};

/// How a call was made: the last attempt's latency (a batch's turnaround) and the attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub latency_ms: f64,
    pub attempts: u32,
}

/// Stores the calls a run makes.
#[derive(Clone)]
pub struct CallRecorder {
    writer: Writer,
}

/// A call stored, or not stored because another run collecting the same batch stored it
/// first (it is served from there).
pub type Recorded<T> = Result<Option<T>, StoreError>;

impl CallRecorder {
    /// A recorder writing through `writer`.
    pub fn new(writer: Writer) -> Self {
        Self { writer }
    }

    /// The writer it stores through, for the claims that go with the calls.
    pub fn writer(&self) -> &Writer {
        &self.writer
    }

    /// Stores `response`, the answer to `job` sent live, and returns it as stored.
    pub async fn answer(
        &self,
        job: &CallJob,
        response: ChatResponse,
        timing: Timing,
    ) -> Result<StoredCall, StoreError> {
        let id = self
            .store_answer(job, &response, timing, |s, call| s.insert_call(call))
            .await?;
        Ok(stored_call(id, job, response, timing))
    }

    /// Stores `response`, batch `batch`'s answer to `job`, and returns it as stored; `None`
    /// when another run collecting the same batch stored its result first.
    pub async fn batch_answer(
        &self,
        batch: i64,
        job: &CallJob,
        response: ChatResponse,
        timing: Timing,
    ) -> Recorded<StoredCall> {
        let id = self
            .store_answer(job, &response, timing, move |s, call| {
                batch_result(s, batch, call)
            })
            .await?;
        Ok(id.map(|id| stored_call(id, job, response, timing)))
    }

    /// Stores that `job`, sent live, failed with `error` (HTTP `status` when one came); the
    /// stored call's id.
    pub async fn failure(
        &self,
        job: &CallJob,
        error: &str,
        status: Option<u16>,
        timing: Timing,
    ) -> Result<i64, StoreError> {
        self.store_failure(job, error, status, timing, |s, call| s.insert_call(call))
            .await
    }

    /// Stores that batch `batch` answered `job` with `error`; the stored call's id, `None`
    /// when another run collecting the same batch stored its result first.
    pub async fn batch_failure(
        &self,
        batch: i64,
        job: &CallJob,
        error: &str,
        status: Option<u16>,
        timing: Timing,
    ) -> Recorded<i64> {
        self.store_failure(job, error, status, timing, move |s, call| {
            batch_result(s, batch, call)
        })
        .await
    }

    /// Stores the answer `response` to `job` with `insert`.
    async fn store_answer<T: Send + 'static>(
        &self,
        job: &CallJob,
        response: &ChatResponse,
        timing: Timing,
        insert: impl FnOnce(&mut Store, &NewCall<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let job = job.clone();
        let (text, usage) = (response.text.clone(), response.usage);
        let cost_usd = job.answer_cost(response);
        let finish_reason = response.finish_reason.clone();
        self.writer
            .run(move |s| {
                let call = new_call(
                    &job,
                    Ok(&text),
                    Some((usage, cost_usd)),
                    finish_reason.as_deref(),
                    Some(200),
                    timing,
                );
                insert(s, &call)
            })
            .await
    }

    /// Stores that `job` failed with `error` with `insert`.
    async fn store_failure<T: Send + 'static>(
        &self,
        job: &CallJob,
        error: &str,
        status: Option<u16>,
        timing: Timing,
        insert: impl FnOnce(&mut Store, &NewCall<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (job, error) = (job.clone(), error.to_owned());
        self.writer
            .run(move |s| {
                let call = new_call(&job, Err(&error), None, None, status, timing);
                insert(s, &call)
            })
            .await
    }
}

/// Inserts `call` as a result of `batch`: `None` when another run stored that result first.
fn batch_result(store: &mut Store, batch: i64, call: &NewCall<'_>) -> Recorded<i64> {
    match store.insert_batch_call(batch, call) {
        Ok(id) => Ok(Some(id)),
        Err(StoreError::NotPending { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The answer `response` to `job` as stored under `id`, with its cost at the job's price.
fn stored_call(id: i64, job: &CallJob, response: ChatResponse, timing: Timing) -> StoredCall {
    let usage = response.usage;
    let cost_usd = job.answer_cost(&response);
    StoredCall {
        id,
        text: response.text,
        finish_reason: response.finish_reason,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        tokens_estimated: usage.estimated,
        latency_ms: timing.latency_ms,
        attempts: timing.attempts,
        cost_usd,
        created_at: crate::store::now_rfc3339(),
    }
}

/// The row that records `job`'s outcome: its answer's text (with its usage and cost) or its
/// error.
fn new_call<'a>(
    job: &'a CallJob,
    outcome: Result<&'a str, &'a str>,
    answered: Option<(Usage, Option<f64>)>,
    finish_reason: Option<&'a str>,
    http_status: Option<u16>,
    timing: Timing,
) -> NewCall<'a> {
    let usage = answered.map(|(usage, _)| usage);
    NewCall {
        cache_key: &job.canonical.key,
        canonical_request: job.canonical_json().into(),
        provider: &job.endpoint.provider,
        model: &job.request.model,
        outcome,
        finish_reason,
        input_tokens: usage.map(|u| u.input_tokens),
        output_tokens: usage.map(|u| u.output_tokens),
        tokens_estimated: usage.is_some_and(|u| u.estimated),
        latency_ms: timing.latency_ms,
        attempts: timing.attempts,
        input_price_per_mtok: job.price.map(|p| p.input_per_mtok),
        output_price_per_mtok: job.price.map(|p| p.output_per_mtok),
        cost_usd: answered.and_then(|(_, cost)| cost),
        http_status,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::cost::Price;
    use crate::llm::batch::BatchApi;
    use crate::llm::client::ApiKey;
    use crate::llm::{ChatRequest, Endpoint, Message, ProviderKind};
    use crate::store::{KeyOutcome, NewBatch, lock};

    /// The secrets the endpoint of every job here carries: neither may reach the database.
    const API_KEY: &str = "sk-recorder-test-0123456789abcdef";
    const PASSWORD: &str = "basic-auth-secret-4242";

    /// A call to an endpoint with a key and a password, priced $2 / $8 per million tokens.
    fn call_job(question: &str) -> CallJob {
        let endpoint = Arc::new(Endpoint {
            provider: "fake".into(),
            kind: ProviderKind::Openai,
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: Some(ApiKey::new(API_KEY)),
            basic_auth: Some(("user".into(), ApiKey::new(PASSWORD))),
        });
        let request = ChatRequest {
            tools: None,
            model: "m-1".into(),
            system: None,
            messages: vec![Message::user(question)].into(),
            params: Default::default(),
            schema: None,
        };
        let price = Price {
            input_per_mtok: 2.0,
            output_per_mtok: 8.0,
        };
        CallJob::new(endpoint, request, 1, price)
    }

    fn answer(text: &str, input_tokens: u64, output_tokens: u64) -> ChatResponse {
        ChatResponse {
            text: text.into(),
            usage: Usage {
                input_tokens,
                output_tokens,
                estimated: false,
            },
            finish_reason: Some("stop".into()),
            limits: None,
            cost_usd: None,
        }
    }

    fn recorder() -> (Arc<Mutex<Store>>, CallRecorder) {
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let writer = Writer::start(store.clone()).unwrap();
        (store, CallRecorder::new(writer))
    }

    /// A batch (track's id) waiting for `job`'s key.
    fn batch_of(store: &Arc<Mutex<Store>>, job: &CallJob) -> i64 {
        let keys = vec![job.canonical.key.to_string()];
        lock(store)
            .create_batch(&NewBatch {
                run_id: None,
                provider: "fake",
                api: BatchApi::Openai,
                base_url: &job.endpoint.base_url,
                key_fingerprint: &job.endpoint.key_fingerprint(),
                model: "m-1",
                payload_sha256: "ab",
                payload_bytes: 2,
                keys: &keys,
            })
            .unwrap()
            .id
    }

    /// A stored call row, as the database holds it.
    #[derive(Debug, PartialEq)]
    struct Row {
        cache_key: String,
        provider: String,
        model: String,
        status: String,
        text: Option<String>,
        finish_reason: Option<String>,
        tokens: (Option<i64>, Option<i64>),
        prices: (f64, f64),
        cost_usd: Option<f64>,
        latency_ms: f64,
        attempts: i64,
        http_status: Option<i64>,
        error: Option<String>,
        batch: Option<i64>,
    }

    fn rows(store: &Arc<Mutex<Store>>) -> Vec<(i64, Row)> {
        let store = lock(store);
        let mut stmt = store
            .conn()
            .prepare(
                "SELECT c.id, c.cache_key, c.provider, c.model, c.status, b.content,
                    c.finish_reason, c.input_tokens, c.output_tokens, c.input_price_per_mtok,
                    c.output_price_per_mtok, c.cost_usd, c.latency_ms, c.attempts,
                    c.http_status, c.error, c.batch
                 FROM calls c LEFT JOIN blobs b ON b.sha256 = c.response_sha256 ORDER BY c.id",
            )
            .unwrap();
        stmt.query_map([], |r| {
            let text: Option<Vec<u8>> = r.get(5)?;
            Ok((
                r.get(0)?,
                Row {
                    cache_key: r.get(1)?,
                    provider: r.get(2)?,
                    model: r.get(3)?,
                    status: r.get(4)?,
                    text: text.map(|t| String::from_utf8(t).unwrap()),
                    finish_reason: r.get(6)?,
                    tokens: (r.get(7)?, r.get(8)?),
                    prices: (r.get(9)?, r.get(10)?),
                    cost_usd: r.get(11)?,
                    latency_ms: r.get(12)?,
                    attempts: r.get(13)?,
                    http_status: r.get(14)?,
                    error: r.get(15)?,
                    batch: r.get(16)?,
                },
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    /// Every text and blob of every table, for looking for secrets.
    fn everything_stored(store: &Arc<Mutex<Store>>) -> String {
        let store = lock(store);
        let conn = store.conn();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut all = String::new();
        for table in tables {
            let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
            let columns = stmt.column_count();
            let mut rows = stmt.query([]).unwrap();
            while let Some(row) = rows.next().unwrap() {
                for i in 0..columns {
                    match row.get_ref(i).unwrap() {
                        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                            all.push_str(&String::from_utf8_lossy(t));
                            all.push('\n');
                        }
                        _ => {}
                    }
                }
            }
        }
        all
    }

    fn expected(job: &CallJob, status: &str, timing: Timing) -> Row {
        Row {
            cache_key: job.canonical.key.to_string(),
            provider: "fake".into(),
            model: "m-1".into(),
            status: status.into(),
            text: None,
            finish_reason: None,
            tokens: (None, None),
            prices: (2.0, 8.0),
            cost_usd: None,
            latency_ms: timing.latency_ms,
            attempts: i64::from(timing.attempts),
            http_status: None,
            error: None,
            batch: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_live_answer_is_one_row_with_its_key_tokens_cost_and_attempts() {
        let (store, recorder) = recorder();
        let job = call_job("2 + 2?");
        let timing = Timing {
            latency_ms: 321.5,
            attempts: 3,
        };
        let stored = recorder
            .answer(&job, answer("4", 1_000, 500), timing)
            .await
            .unwrap();
        let rows = rows(&store);
        assert_eq!(rows.len(), 1, "one row");
        let (id, row) = &rows[0];
        assert_eq!(
            *row,
            Row {
                text: Some("4".into()),
                finish_reason: Some("stop".into()),
                tokens: (Some(1_000), Some(500)),
                // 1,000 × $2 + 500 × $8 per million.
                cost_usd: Some(0.006),
                http_status: Some(200),
                ..expected(&job, "ok", timing)
            }
        );
        // What the caller gets is the row as stored.
        assert_eq!(stored.id, *id);
        assert_eq!((stored.text.as_str(), stored.attempts), ("4", 3));
        assert_eq!((stored.input_tokens, stored.output_tokens), (1_000, 500));
        assert!((stored.cost_usd.unwrap() - 0.006).abs() < 1e-15);
        // Served from the cache from now on.
        let cached = lock(&store)
            .cached_calls([job.canonical.key.as_str()])
            .unwrap();
        assert_eq!(cached[job.canonical.key.as_str()].id, *id);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_live_failure_is_one_row_with_its_error_status_and_attempts_and_no_cost() {
        let (store, recorder) = recorder();
        let job = call_job("2 + 2?");
        let timing = Timing {
            latency_ms: 40.0,
            attempts: 4,
        };
        let id = recorder
            .failure(&job, "HTTP 503: overloaded (4 attempts)", Some(503), timing)
            .await
            .unwrap();
        let rows = rows(&store);
        assert_eq!(rows.len(), 1, "one row");
        assert_eq!(rows[0].0, id);
        assert_eq!(
            rows[0].1,
            Row {
                http_status: Some(503),
                error: Some("HTTP 503: overloaded (4 attempts)".into()),
                ..expected(&job, "error", timing)
            }
        );
        // A failure is never served from the cache.
        let cached = lock(&store)
            .cached_calls([job.canonical.key.as_str()])
            .unwrap();
        assert!(cached.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_answer_is_one_row_of_its_batch_and_a_second_collect_stores_nothing() {
        let (store, recorder) = recorder();
        let mut job = call_job("2 + 2?");
        job.price = job.price.map(Price::batch);
        let batch = batch_of(&store, &job);
        let timing = Timing {
            latency_ms: 60_000.0,
            attempts: 1,
        };
        let stored = recorder
            .batch_answer(batch, &job, answer("4", 1_000, 500), timing)
            .await
            .unwrap()
            .expect("stored: the key was pending");
        let rows = rows(&store);
        assert_eq!(rows.len(), 1, "one row");
        assert_eq!(
            rows[0].1,
            Row {
                text: Some("4".into()),
                finish_reason: Some("stop".into()),
                tokens: (Some(1_000), Some(500)),
                prices: (1.0, 4.0),
                // Half of the live price.
                cost_usd: Some(0.003),
                http_status: Some(200),
                batch: Some(batch),
                ..expected(&job, "ok", timing)
            }
        );
        assert_eq!(stored.id, rows[0].0);
        let keys = lock(&store).batch_keys(batch).unwrap();
        assert_eq!(
            (keys[0].outcome, keys[0].call_id),
            (KeyOutcome::Answered, Some(stored.id)),
            "the key is answered by that row"
        );
        // Another run collecting the same batch stores nothing more: served from the first.
        let again = recorder
            .batch_answer(batch, &job, answer("4", 1_000, 500), timing)
            .await
            .unwrap();
        assert_eq!(again, None);
        let failed = recorder
            .batch_failure(batch, &job, "late", None, timing)
            .await
            .unwrap();
        assert_eq!(failed, None);
        assert_eq!(self::rows(&store).len(), 1, "still one row");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_failure_is_one_row_of_its_batch_with_its_error() {
        let (store, recorder) = recorder();
        let mut job = call_job("2 + 2?");
        job.price = job.price.map(Price::batch);
        let batch = batch_of(&store, &job);
        let timing = Timing {
            latency_ms: 90_000.0,
            attempts: 1,
        };
        let error = "the batch answered HTTP 400 invalid_request_error: bad (not retried)";
        let id = recorder
            .batch_failure(batch, &job, error, Some(400), timing)
            .await
            .unwrap()
            .expect("stored: the key was pending");
        let rows = rows(&store);
        assert_eq!(rows.len(), 1, "one row");
        assert_eq!(rows[0].0, id);
        assert_eq!(
            rows[0].1,
            Row {
                prices: (1.0, 4.0),
                http_status: Some(400),
                error: Some(error.into()),
                batch: Some(batch),
                ..expected(&job, "error", timing)
            }
        );
        let keys = lock(&store).batch_keys(batch).unwrap();
        assert_eq!(
            (keys[0].outcome, keys[0].call_id),
            (KeyOutcome::Failed, Some(id))
        );
        // A key no batch waits for is refused, not stored as a batch's.
        let stray = call_job("3 + 1?");
        let refused = recorder
            .batch_answer(batch, &stray, answer("4", 1, 1), timing)
            .await
            .unwrap();
        assert_eq!(refused, None);
        assert_eq!(self::rows(&store).len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_endpoints_key_and_password_never_reach_the_database() {
        let (store, recorder) = recorder();
        let timing = Timing {
            latency_ms: 1.0,
            attempts: 1,
        };
        let live = call_job("live");
        recorder
            .answer(&live, answer("ok", 1, 1), timing)
            .await
            .unwrap();
        recorder
            .failure(&call_job("failed"), "HTTP 401: bad key", Some(401), timing)
            .await
            .unwrap();
        let batched = call_job("batched");
        let batch = batch_of(&store, &batched);
        recorder
            .batch_answer(batch, &batched, answer("ok", 1, 1), timing)
            .await
            .unwrap()
            .unwrap();
        let failed = call_job("batch failed");
        let batch = batch_of(&store, &failed);
        recorder
            .batch_failure(batch, &failed, "HTTP 500", Some(500), timing)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rows(&store).len(), 4);
        let all = everything_stored(&store);
        // The check looks where the rows are: the canonical requests are stored.
        assert!(all.contains(&live.canonical_json()), "{all}");
        assert!(!all.contains(API_KEY), "the API key is stored: {all}");
        assert!(!all.contains(PASSWORD), "the password is stored: {all}");
    }
}
