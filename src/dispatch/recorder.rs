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
        let finish_reason = response.finish_reason.clone();
        self.writer
            .run(move |s| {
                let call = new_call(
                    &job,
                    Ok(&text),
                    Some(usage),
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
    StoredCall {
        id,
        text: response.text,
        finish_reason: response.finish_reason,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        tokens_estimated: usage.estimated,
        latency_ms: timing.latency_ms,
        attempts: timing.attempts,
        cost_usd: job.price.cost_usd(usage.input_tokens, usage.output_tokens),
        created_at: crate::store::now_rfc3339(),
    }
}

/// The row that records `job`'s outcome: its answer's text or its error.
fn new_call<'a>(
    job: &'a CallJob,
    outcome: Result<&'a str, &'a str>,
    usage: Option<Usage>,
    finish_reason: Option<&'a str>,
    http_status: Option<u16>,
    timing: Timing,
) -> NewCall<'a> {
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
        input_price_per_mtok: job.price.input_per_mtok,
        output_price_per_mtok: job.price.output_per_mtok,
        cost_usd: usage.map(|u| job.price.cost_usd(u.input_tokens, u.output_tokens)),
        http_status,
    }
}
