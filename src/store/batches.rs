//! Batch state: each batch from its intent (stored before anything is uploaded) through its
//! file id, batch id and polls to its collection, the calls it holds, and the calls it
//! answered (ordinary rows of `calls`, marked with their batch).
//!
//! Plain rows only: what a status means and how a provider is spoken to are `llm::batch`'s;
//! when to poll, recover or resubmit is the runtime's.

use std::collections::HashMap;

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{OptionalExtension, params};

use super::calls::{NewCall, insert_call_row};
use super::stored::{by_name, in_row, name};
use super::{Result, Store, StoreError, now_rfc3339};
use crate::llm::batch::BatchApi;

/// A batch about to be sent, as known before anything leaves the machine.
#[derive(Debug, Clone)]
pub struct NewBatch<'a> {
    /// The run that sends it.
    pub run_id: Option<i64>,
    /// The provider's name, as in model references.
    pub provider: &'a str,
    /// The batch API it is sent through.
    pub api: BatchApi,
    pub base_url: &'a str,
    /// The key's fingerprint (`Endpoint::key_fingerprint`), never the key.
    pub key_fingerprint: &'a str,
    pub model: &'a str,
    /// The payload's sha256 and size.
    pub payload_sha256: &'a str,
    pub payload_bytes: u64,
    /// The cache keys of its calls (the requests' `custom_id`s), in payload order.
    pub keys: &'a [String],
}

/// Where a batch is in track's own steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchState {
    /// Stored; nothing sent yet (or the upload's answer was lost).
    Intent,
    /// OpenAI's input file is uploaded; the batch is not created yet (or its answer was lost).
    Uploaded,
    /// The provider's batch id is stored: polled until it ends.
    Submitted,
    /// Every result is stored.
    Collected,
    /// Never created, or given up: its calls are sent again.
    Void,
}

impl BatchState {
    /// The name stored.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Intent => "intent",
            Self::Uploaded => "uploaded",
            Self::Submitted => "submitted",
            Self::Collected => "collected",
            Self::Void => "void",
        }
    }

    fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "intent" => Self::Intent,
            "uploaded" => Self::Uploaded,
            "submitted" => Self::Submitted,
            "collected" => Self::Collected,
            "void" => Self::Void,
            other => {
                return Err(StoreError::Value(rusqlite::types::FromSqlError::Other(
                    format!("unknown batch state `{other}`").into(),
                )));
            }
        })
    }

    /// Whether the batch is still to be followed (not collected, not void).
    pub(crate) fn is_open(self) -> bool {
        matches!(self, Self::Intent | Self::Uploaded | Self::Submitted)
    }
}

/// How many of a batch's requests are where, as the last poll said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchCountsRow {
    /// Requests in the batch.
    pub total: u64,
    /// Not done yet.
    pub processing: u64,
    /// Answered.
    pub succeeded: u64,
    /// Answered with an error.
    pub errored: u64,
    /// Cancelled before they ran.
    pub cancelled: u64,
    /// Expired before they ran.
    pub expired: u64,
}

/// What one poll (or the create's answer) said of a batch.
#[derive(Debug, Clone, Default)]
pub struct BatchPoll<'a> {
    /// The neutral status (`llm::batch::BatchStatus::as_str`).
    pub status: &'a str,
    /// A failed batch's errors, as JSON.
    pub failures: Option<&'a str>,
    pub counts: BatchCountsRow,
    pub output_file_id: Option<&'a str>,
    pub error_file_id: Option<&'a str>,
    pub results_url: Option<&'a str>,
    /// RFC 3339.
    pub expires_at: Option<&'a str>,
    /// RFC 3339, once it has ended.
    pub ended_at: Option<&'a str>,
}

/// A batch as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRow {
    /// Track's id of the batch (`calls.batch`, `batch_calls.batch`).
    pub id: i64,
    /// Track's random name for it (OpenAI's metadata `track_intent`).
    pub tag: String,
    pub run_id: Option<i64>,
    pub provider: String,
    pub api: BatchApi,
    pub base_url: String,
    pub key_fingerprint: String,
    pub model: String,
    pub payload_sha256: String,
    pub payload_bytes: u64,
    pub request_count: u64,
    /// When the intent was stored (RFC 3339): the provider created the batch after it.
    pub created_at: String,
    pub state: BatchState,
    pub file_id: Option<String>,
    pub batch_id: Option<String>,
    pub submitted_at: Option<String>,
    /// The neutral status of the last poll (none before the batch was created).
    pub status: Option<String>,
    pub failures: Option<String>,
    pub counts: BatchCountsRow,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub results_url: Option<String>,
    pub expires_at: Option<String>,
    pub polls: u64,
    pub last_polled_at: Option<String>,
    pub ended_at: Option<String>,
    pub collected_at: Option<String>,
    /// Why it is void.
    pub note: Option<String>,
}

impl BatchRow {
    /// Requests the last poll counted as run: answered or errored (expired and cancelled
    /// ones never ran: [`BatchRow::unrun`]).
    pub(crate) fn done(&self) -> u64 {
        let c = &self.counts;
        c.succeeded + c.errored
    }

    /// Requests that never ran: expired or cancelled.
    #[cfg(test)]
    pub(crate) fn unrun(&self) -> u64 {
        let c = &self.counts;
        c.cancelled + c.expired
    }

    /// Where it is, in a word or two: track's step before it is submitted and once it is
    /// void, the provider's status at the last poll while it runs, and, once collected, how
    /// it ended when that was not plainly (`expired, collected`, `cancelled, collected`).
    pub(crate) fn shown_status(&self) -> String {
        match self.state {
            BatchState::Intent | BatchState::Uploaded | BatchState::Void => {
                self.state.as_str().to_owned()
            }
            BatchState::Collected => match self.status.as_deref() {
                None | Some("completed") => "collected".to_owned(),
                Some(status) => format!("{status}, collected"),
            },
            BatchState::Submitted => self.status.as_deref().unwrap_or("submitted").to_owned(),
        }
    }

    /// When what [`BatchRow::shown_status`] says was last true (RFC 3339): its collection,
    /// the last poll, its submission, or its intent.
    pub(crate) fn status_at(&self) -> &str {
        let collected = match self.state {
            BatchState::Collected => self.collected_at.as_deref(),
            _ => None,
        };
        collected
            .or(self.last_polled_at.as_deref())
            .or(self.submitted_at.as_deref())
            .unwrap_or(&self.created_at)
    }
}

/// What became of one call of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOutcome {
    /// Waits in the batch.
    Pending,
    /// Its answer is stored.
    Answered,
    /// Its error is stored.
    Failed,
    /// It never ran (expired, cancelled, or the batch was never created): sent again.
    Unfinished,
}

impl KeyOutcome {
    /// The name stored.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Answered => "answered",
            Self::Failed => "failed",
            Self::Unfinished => "unfinished",
        }
    }

    fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "pending" => Self::Pending,
            "answered" => Self::Answered,
            "failed" => Self::Failed,
            "unfinished" => Self::Unfinished,
            other => {
                return Err(StoreError::Value(rusqlite::types::FromSqlError::Other(
                    format!("unknown batch call outcome `{other}`").into(),
                )));
            }
        })
    }
}

/// One call of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchKeyRow {
    pub cache_key: String,
    /// Its line in the payload, from 1.
    pub position: u64,
    pub outcome: KeyOutcome,
    /// Its stored answer or error.
    pub call_id: Option<i64>,
}

/// How many keys a query names at once.
const CHUNK: usize = 500;

/// The columns of a [`BatchRow`], in its order.
const BATCH_COLUMNS: &str = "id, tag, run_id, provider, api, base_url, key_fingerprint, model,
    payload_sha256, payload_bytes, request_count, created_at, state, file_id, batch_id,
    submitted_at, status, failures, total, processing, succeeded, errored, cancelled, expired,
    output_file_id, error_file_id, results_url, expires_at, polls, last_polled_at, ended_at,
    collected_at, note";

fn batch_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(BatchRow, String)> {
    let count = |i: usize| r.get::<_, i64>(i).map(|n| n.max(0) as u64);
    let state: String = r.get(12)?;
    let id = r.get(0)?;
    Ok((
        BatchRow {
            id,
            tag: r.get(1)?,
            run_id: r.get(2)?,
            provider: r.get(3)?,
            api: in_row(r, 4, "batches", id)?,
            base_url: r.get(5)?,
            key_fingerprint: r.get(6)?,
            model: r.get(7)?,
            payload_sha256: r.get(8)?,
            payload_bytes: count(9)?,
            request_count: count(10)?,
            created_at: r.get(11)?,
            // Set from the name below, where an unknown one can be an error.
            state: BatchState::Void,
            file_id: r.get(13)?,
            batch_id: r.get(14)?,
            submitted_at: r.get(15)?,
            status: r.get(16)?,
            failures: r.get(17)?,
            counts: BatchCountsRow {
                total: count(18)?,
                processing: count(19)?,
                succeeded: count(20)?,
                errored: count(21)?,
                cancelled: count(22)?,
                expired: count(23)?,
            },
            output_file_id: r.get(24)?,
            error_file_id: r.get(25)?,
            results_url: r.get(26)?,
            expires_at: r.get(27)?,
            polls: count(28)?,
            last_polled_at: r.get(29)?,
            ended_at: r.get(30)?,
            collected_at: r.get(31)?,
            note: r.get(32)?,
        },
        state,
    ))
}

/// The rows of `sql` (which selects [`BATCH_COLUMNS`]) with `params`.
fn batch_rows(
    conn: &rusqlite::Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<BatchRow>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let raw = stmt
        .query_map(params, batch_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raw.into_iter()
        .map(|(mut row, state)| {
            row.state = BatchState::parse(&state)?;
            Ok(row)
        })
        .collect()
}

impl ToSql for BatchApi {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(name(self.as_str()))
    }
}

impl FromSql for BatchApi {
    /// Strict: an unknown API is an error, never a batch skipped.
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        by_name(value, "batch API", BatchApi::from_name)
    }
}

/// A new random tag: unique across databases sharing a key, so a batch found by its tag in
/// the provider's listing is this intent's and no other.
fn new_tag() -> String {
    format!("track-{:032x}", rand::random::<u128>())
}

impl Store {
    /// Stores the intent of a batch and its keys, before anything is uploaded, and returns it.
    /// Refuses (and stores nothing) when one of the keys already waits in another batch, or
    /// another run claims it (`call_claims`, unexpired): a call is never in two batches at
    /// once, nor in a batch while a run sends it live. The batch's run's own claims on the
    /// keys end in the same transaction.
    pub fn create_batch(&mut self, batch: &NewBatch<'_>) -> Result<BatchRow> {
        let id = self.atomically(|tx| {
            for chunk in batch.keys.chunks(CHUNK) {
                let placeholders = vec!["?"; chunk.len()].join(",");
                let waiting: Option<(String, i64)> = tx
                    .prepare(&format!(
                        "SELECT cache_key, batch FROM batch_calls
                         WHERE outcome = 'pending' AND cache_key IN ({placeholders}) LIMIT 1"
                    ))?
                    .query_row(rusqlite::params_from_iter(chunk.iter()), |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()?;
                if let Some((key, batch)) = waiting {
                    return Err(StoreError::AlreadyBatched { key, batch });
                }
            }
            // A key another run claims (to send live, or for a batch of its own) is its to
            // send; this run's own claims end here, its pending rows holding the keys now.
            let owner = batch.run_id.map(|id| id.to_string()).unwrap_or_default();
            for key in batch.keys {
                if let Some(holder) = super::claims::claimed_by_other(tx, key, &owner)? {
                    return Err(StoreError::ClaimedLive {
                        key: key.clone(),
                        owner: holder,
                    });
                }
            }
            let mut release =
                tx.prepare_cached("DELETE FROM call_claims WHERE cache_key = ?1 AND owner = ?2")?;
            for key in batch.keys {
                release.execute(params![key, owner])?;
            }
            tx.prepare_cached(
                "INSERT INTO batches (tag, run_id, provider, api, base_url, key_fingerprint, model,
                    payload_sha256, payload_bytes, request_count, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?
            .execute(params![
                new_tag(),
                batch.run_id,
                batch.provider,
                batch.api,
                batch.base_url,
                batch.key_fingerprint,
                batch.model,
                batch.payload_sha256,
                batch.payload_bytes as i64,
                batch.keys.len() as i64,
                now_rfc3339(),
            ])?;
            let id = tx.last_insert_rowid();
            let mut insert = tx.prepare_cached(
                "INSERT INTO batch_calls (batch, cache_key, position) VALUES (?1, ?2, ?3)",
            )?;
            for (i, key) in batch.keys.iter().enumerate() {
                insert.execute(params![id, key, i as i64 + 1])?;
            }
            Ok(id)
        })?;
        self.batch(id)?.ok_or(StoreError::NoSuchBatch(id))
    }

    /// Stores the id of the uploaded input file (OpenAI), before the batch is created.
    pub fn set_batch_file(&mut self, id: i64, file_id: &str) -> Result<()> {
        self.update_batch(
            id,
            "UPDATE batches SET file_id = ?2, state = 'uploaded'
             WHERE id = ?1 AND state = 'intent'",
            params![id, file_id],
        )
    }

    /// Stores the provider's batch id and what the create's answer said of it, before the
    /// batch is polled.
    pub fn set_batch_submitted(
        &mut self,
        id: i64,
        batch_id: &str,
        poll: &BatchPoll<'_>,
    ) -> Result<()> {
        self.update_batch(
            id,
            "UPDATE batches SET batch_id = ?2, state = 'submitted', submitted_at = ?3
             WHERE id = ?1 AND state IN ('intent', 'uploaded')",
            params![id, batch_id, now_rfc3339()],
        )?;
        self.write_poll(id, poll, false)
    }

    /// Stores what a poll said of a submitted batch (status, counts, where its results are,
    /// when it ended), and counts the poll.
    pub fn record_batch_poll(&mut self, id: i64, poll: &BatchPoll<'_>) -> Result<()> {
        self.write_poll(id, poll, true)
    }

    fn write_poll(&mut self, id: i64, poll: &BatchPoll<'_>, counted: bool) -> Result<()> {
        let c = &poll.counts;
        self.update_batch(
            id,
            "UPDATE batches SET status = ?2, failures = ?3, total = ?4, processing = ?5,
                succeeded = ?6, errored = ?7, cancelled = ?8, expired = ?9,
                output_file_id = coalesce(?10, output_file_id),
                error_file_id = coalesce(?11, error_file_id),
                results_url = coalesce(?12, results_url),
                expires_at = coalesce(?13, expires_at), ended_at = coalesce(?14, ended_at),
                polls = polls + ?15, last_polled_at = CASE WHEN ?15 THEN ?16 ELSE last_polled_at END
             WHERE id = ?1",
            params![
                id,
                poll.status,
                poll.failures,
                c.total as i64,
                c.processing as i64,
                c.succeeded as i64,
                c.errored as i64,
                c.cancelled as i64,
                c.expired as i64,
                poll.output_file_id,
                poll.error_file_id,
                poll.results_url,
                poll.expires_at,
                poll.ended_at,
                i64::from(counted),
                now_rfc3339(),
            ],
        )
    }

    /// Runs an update of batch `id` that must change its row: none changed means there is no
    /// such batch, or it is past the step the update is for.
    fn update_batch(&mut self, id: i64, sql: &str, params: impl rusqlite::Params) -> Result<()> {
        let changed = self.conn.prepare_cached(sql)?.execute(params)?;
        if changed == 0 {
            return Err(match self.batch(id)? {
                None => StoreError::NoSuchBatch(id),
                Some(row) => StoreError::BatchState {
                    id,
                    state: row.state.as_str(),
                },
            });
        }
        Ok(())
    }

    /// Records a result of batch `id` as an ordinary call (answered at the batch rate: its
    /// prices are the halved ones), and what became of its key, in one transaction; returns
    /// the call's id. The key must be one of the batch's, still pending.
    pub fn insert_batch_call(&mut self, id: i64, call: &NewCall<'_>) -> Result<i64> {
        self.atomically(|tx| {
            let outcome: Option<String> = tx
                .prepare_cached(
                    "SELECT outcome FROM batch_calls WHERE batch = ?1 AND cache_key = ?2",
                )?
                .query_row(params![id, call.cache_key], |r| r.get(0))
                .optional()?;
            if outcome.as_deref() != Some(KeyOutcome::Pending.as_str()) {
                return Err(StoreError::NotPending {
                    key: call.cache_key.to_owned(),
                    batch: id,
                });
            }
            let call_id = insert_call_row(tx, call, Some(id))?;
            let outcome = match call.outcome {
                Ok(_) => KeyOutcome::Answered,
                Err(_) => KeyOutcome::Failed,
            };
            tx.prepare_cached(
                "UPDATE batch_calls SET outcome = ?3, call_id = ?4
                 WHERE batch = ?1 AND cache_key = ?2",
            )?
            .execute(params![id, call.cache_key, outcome.as_str(), call_id])?;
            Ok(call_id)
        })
    }

    /// Marks `keys` of batch `id` unfinished (they expired or were cancelled before they
    /// ran): they are sent again. Returns how many were pending.
    pub(crate) fn mark_batch_unfinished(&mut self, id: i64, keys: &[&str]) -> Result<u64> {
        self.atomically(|tx| {
            let mut changed = 0;
            let mut stmt = tx.prepare_cached(
                "UPDATE batch_calls SET outcome = 'unfinished'
                 WHERE batch = ?1 AND cache_key = ?2 AND outcome = 'pending'",
            )?;
            for key in keys {
                changed += stmt.execute(params![id, key])? as u64;
            }
            Ok(changed)
        })
    }

    /// Closes batch `id` once its results are stored: it is collected, and any key still
    /// pending (no line named it) is unfinished, to be sent again. Returns how many were.
    pub(crate) fn finish_batch(&mut self, id: i64) -> Result<u64> {
        self.close_batch(id, "collected", None)
    }

    /// Gives batch `id` up (never created, or not found again): its pending keys are
    /// unfinished, to be sent again, and `note` says why. Returns how many were.
    pub(crate) fn void_batch(&mut self, id: i64, note: &str) -> Result<u64> {
        self.close_batch(id, "void", Some(note))
    }

    fn close_batch(&mut self, id: i64, state: &str, note: Option<&str>) -> Result<u64> {
        let now = now_rfc3339();
        let closed = self.atomically(|tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE batches SET state = ?2, note = coalesce(?3, note),
                        collected_at = CASE WHEN ?2 = 'collected' THEN ?4 ELSE collected_at END
                     WHERE id = ?1 AND state IN ('intent', 'uploaded', 'submitted')",
                )?
                .execute(params![id, state, note, now])?;
            if changed == 0 {
                return Ok(None);
            }
            let left = tx
                .prepare_cached(
                    "UPDATE batch_calls SET outcome = 'unfinished'
                     WHERE batch = ?1 AND outcome = 'pending'",
                )?
                .execute([id])?;
            Ok(Some(left as u64))
        })?;
        match closed {
            Some(left) => Ok(left),
            None => Err(match self.batch(id)? {
                None => StoreError::NoSuchBatch(id),
                Some(row) => StoreError::BatchState {
                    id,
                    state: row.state.as_str(),
                },
            }),
        }
    }

    /// Batch `id`, if there is one.
    pub(crate) fn batch(&self, id: i64) -> Result<Option<BatchRow>> {
        Ok(batch_rows(
            &self.conn,
            &format!("SELECT {BATCH_COLUMNS} FROM batches WHERE id = ?1"),
            [id],
        )?
        .pop())
    }

    /// The batch of intent `tag`, if there is one.
    #[cfg(test)]
    pub(crate) fn batch_by_tag(&self, tag: &str) -> Result<Option<BatchRow>> {
        Ok(batch_rows(
            &self.conn,
            &format!("SELECT {BATCH_COLUMNS} FROM batches WHERE tag = ?1"),
            [tag],
        )?
        .pop())
    }

    /// The batches still to be followed (intent, uploaded, submitted), oldest first: what a
    /// run resumes before it sends anything.
    #[cfg(test)]
    pub(crate) fn open_batches(&self) -> Result<Vec<BatchRow>> {
        batch_rows(
            &self.conn,
            &format!(
                "SELECT {BATCH_COLUMNS} FROM batches
                 WHERE state IN ('intent', 'uploaded', 'submitted') ORDER BY id"
            ),
            [],
        )
    }

    /// The newest `limit` batches, of run `run` or of all; for `track batches`.
    pub(crate) fn list_batches(&self, run: Option<i64>, limit: usize) -> Result<Vec<BatchRow>> {
        batch_rows(
            &self.conn,
            &format!(
                "SELECT {BATCH_COLUMNS} FROM batches
                 WHERE ?1 IS NULL OR run_id = ?1 ORDER BY id DESC LIMIT ?2"
            ),
            params![run, limit.min(i64::MAX as usize) as i64],
        )
    }

    /// The batch the provider calls `batch_id` (`batch_…`, `msgbatch_…`), if one is stored; the
    /// newest when two providers gave the same id.
    pub(crate) fn batch_by_provider_id(&self, batch_id: &str) -> Result<Option<BatchRow>> {
        Ok(batch_rows(
            &self.conn,
            &format!(
                "SELECT {BATCH_COLUMNS} FROM batches WHERE batch_id = ?1 ORDER BY id DESC LIMIT 1"
            ),
            [batch_id],
        )?
        .pop())
    }

    /// What the answers of each of batches `ids` cost so far, in USD: the sum of `cost_usd`
    /// of the calls it answered (`calls.batch`), at the batch rate. A batch with none is
    /// absent. Read through `batch_calls`, whose key starts with the batch, so no scan of
    /// `calls` is needed.
    pub(crate) fn batch_costs(&self, ids: &[i64]) -> Result<HashMap<i64, f64>> {
        let mut costs = HashMap::new();
        for chunk in ids.chunks(CHUNK) {
            let placeholders = vec!["?"; chunk.len()].join(",");
            let mut stmt = self.conn.prepare(&format!(
                "SELECT bc.batch, sum(coalesce(c.cost_usd, 0)) FROM batch_calls bc
                 JOIN calls c ON c.id = bc.call_id AND c.batch = bc.batch
                 WHERE bc.batch IN ({placeholders}) GROUP BY bc.batch"
            ))?;
            let mut rows = stmt.query(rusqlite::params_from_iter(chunk.iter()))?;
            while let Some(row) = rows.next()? {
                costs.insert(row.get(0)?, row.get(1)?);
            }
        }
        Ok(costs)
    }

    /// What became of the calls of each of batches `ids`, as stored: (answered, failed,
    /// unfinished), counted from `batch_calls`. A batch with no call is absent.
    pub(crate) fn batch_outcomes(&self, ids: &[i64]) -> Result<HashMap<i64, (u64, u64, u64)>> {
        let mut counts: HashMap<i64, (u64, u64, u64)> = HashMap::new();
        for chunk in ids.chunks(CHUNK) {
            let placeholders = vec!["?"; chunk.len()].join(",");
            let mut stmt = self.conn.prepare(&format!(
                "SELECT batch, outcome, count(*) FROM batch_calls
                 WHERE batch IN ({placeholders}) GROUP BY batch, outcome"
            ))?;
            let mut rows = stmt.query(rusqlite::params_from_iter(chunk.iter()))?;
            while let Some(row) = rows.next()? {
                let (batch, outcome, n): (i64, String, i64) =
                    (row.get(0)?, row.get(1)?, row.get(2)?);
                let entry = counts.entry(batch).or_default();
                let n = n.max(0) as u64;
                match KeyOutcome::parse(&outcome)? {
                    KeyOutcome::Answered => entry.0 += n,
                    KeyOutcome::Failed => entry.1 += n,
                    KeyOutcome::Unfinished => entry.2 += n,
                    KeyOutcome::Pending => {}
                }
            }
        }
        Ok(counts)
    }

    /// The calls of batch `id`, in payload order.
    pub fn batch_keys(&self, id: i64) -> Result<Vec<BatchKeyRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT cache_key, position, outcome, call_id FROM batch_calls
             WHERE batch = ?1 ORDER BY position",
        )?;
        let raw = stmt
            .query_map([id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        raw.into_iter()
            .map(|(cache_key, position, outcome, call_id)| {
                Ok(BatchKeyRow {
                    cache_key,
                    position: position.max(0) as u64,
                    outcome: KeyOutcome::parse(&outcome)?,
                    call_id,
                })
            })
            .collect()
    }

    /// Which of `keys` wait in a batch, and in which: calls not to send live or in another
    /// batch, but to wait for.
    pub(crate) fn pending_in_batches<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<HashMap<String, i64>> {
        let mut found = HashMap::new();
        // Every stage of every run asks, batches or not: with none waiting, one probe of the
        // partial index answers instead of a look-up per key.
        let any: bool = self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM batch_calls WHERE outcome = 'pending')")?
            .query_row([], |r| r.get(0))?;
        if !any {
            return Ok(found);
        }
        let keys: Vec<&str> = keys.into_iter().collect();
        for chunk in keys.chunks(CHUNK) {
            let placeholders = vec!["?"; chunk.len()].join(",");
            let mut stmt = self.conn.prepare(&format!(
                "SELECT cache_key, batch FROM batch_calls
                 WHERE outcome = 'pending' AND cache_key IN ({placeholders})"
            ))?;
            let mut rows = stmt.query(rusqlite::params_from_iter(chunk.iter()))?;
            while let Some(row) = rows.next()? {
                found.insert(row.get(0)?, row.get(1)?);
            }
        }
        Ok(found)
    }

    /// Whether a stored batch already has the provider's id `batch_id` (a batch found by
    /// listing is adopted only when no other intent claims it).
    pub(crate) fn batch_id_known(&self, batch_id: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM batches WHERE batch_id = ?1 LIMIT 1")?
            .query_row([batch_id], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// The batch that answered call `call_id`, if it came from one (its prices are then the
    /// batch rate).
    #[cfg(test)]
    pub(crate) fn call_batch(&self, call_id: i64) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT batch FROM calls WHERE id = ?1")?
            .query_row([call_id], |r| r.get::<_, Option<i64>>(0))
            .optional()?
            .flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    fn intent<'a>(keys: &'a [String]) -> NewBatch<'a> {
        NewBatch {
            run_id: None,
            provider: "openai",
            api: BatchApi::Openai,
            base_url: "https://api.openai.com/v1",
            key_fingerprint: "0123456789abcdef",
            model: "gpt-4o-mini",
            payload_sha256: "ab12",
            payload_bytes: 1234,
            keys,
        }
    }

    fn call<'a>(key: &'a str, outcome: std::result::Result<&'a str, &'a str>) -> NewCall<'a> {
        NewCall {
            cache_key: key,
            canonical_request: "{\"v\":1}".into(),
            provider: "openai",
            model: "gpt-4o-mini",
            outcome,
            finish_reason: Some("stop"),
            input_tokens: Some(10),
            output_tokens: Some(2),
            tokens_estimated: false,
            latency_ms: 0.0,
            attempts: 1,
            // gpt-4o-mini's 0.15 / 0.60 at the batch rate.
            input_price_per_mtok: Some(0.075),
            output_price_per_mtok: Some(0.3),
            cost_usd: Some(0.00000135),
            http_status: Some(200),
        }
    }

    #[test]
    fn an_unknown_api_is_an_error_naming_its_batch_never_a_batch_skipped() {
        let mut store = Store::open_in_memory().unwrap();
        let batch = store.create_batch(&intent(&keys(&["k1"]))).unwrap();
        assert_eq!(batch.api, BatchApi::Openai);
        store
            .conn
            .execute_batch(
                "PRAGMA ignore_check_constraints = ON;
                 UPDATE batches SET api = 'gemini';
                 PRAGMA ignore_check_constraints = OFF;",
            )
            .unwrap();
        let reads = [
            store.open_batches(),
            store.list_batches(None, 10),
            store.batch(batch.id).map(|b| b.into_iter().collect()),
        ];
        for read in reads {
            let error = read.unwrap_err();
            let StoreError::UnknownInRow(unknown) = &error else {
                panic!("not an unknown value: {error:?}");
            };
            assert_eq!(
                (unknown.table, unknown.id, unknown.column.as_str()),
                ("batches", batch.id, "api")
            );
            assert_eq!(unknown.value, "gemini");
            assert!(error.to_string().contains("`gemini`"), "{error}");
        }
    }

    #[test]
    fn a_batch_shows_how_it_ended_and_when_its_status_was_seen() {
        let mut store = Store::open_in_memory().unwrap();
        let k = keys(&["a", "b", "c"]);
        let row = store.create_batch(&intent(&k)).unwrap();
        store
            .set_batch_submitted(row.id, "batch_1", &poll("validating"))
            .unwrap();
        let submitted = store.batch(row.id).unwrap().unwrap();
        assert_eq!(submitted.shown_status(), "validating");
        assert_eq!(
            Some(submitted.status_at()),
            submitted.submitted_at.as_deref()
        );
        // Given up while validating: void, not validating forever.
        store.void_batch(row.id, "given up").unwrap();
        assert_eq!(store.batch(row.id).unwrap().unwrap().shown_status(), "void");
        // Collected after an expiry: says so.
        let k2 = keys(&["d", "e"]);
        let row = store.create_batch(&intent(&k2)).unwrap();
        store
            .set_batch_submitted(row.id, "batch_2", &poll("expired"))
            .unwrap();
        let mut expired = BatchPoll {
            counts: BatchCountsRow {
                total: 2,
                succeeded: 1,
                expired: 1,
                ..Default::default()
            },
            ..poll("expired")
        };
        expired.ended_at = Some("2026-01-01T00:00:00Z");
        store.record_batch_poll(row.id, &expired).unwrap();
        store.finish_batch(row.id).unwrap();
        let collected = store.batch(row.id).unwrap().unwrap();
        assert_eq!(collected.shown_status(), "expired, collected");
        assert_eq!((collected.done(), collected.unrun()), (1, 1));
        assert_eq!(
            Some(collected.status_at()),
            collected.collected_at.as_deref()
        );
    }

    #[test]
    fn a_key_is_held_live_or_in_a_batch_by_one_run_at_once() {
        use std::time::Duration;
        let mut store = Store::open_in_memory().unwrap();
        let (one, two) = (
            store
                .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
                .unwrap(),
            store
                .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
                .unwrap(),
        );
        let lease = Duration::from_secs(60);
        let alive = |_: &str| false;
        // Run 1 claims `a` to send it live: run 2's batch claims only `b` and `c`.
        assert_eq!(
            store.claim("a", &one.to_string(), lease, false).unwrap(),
            crate::store::Claim::Mine
        );
        let claims = store
            .claim_many(&keys(&["a", "b", "c"]), &two.to_string(), lease, &alive)
            .unwrap();
        assert_eq!(
            claims,
            vec![
                crate::store::Claim::Busy(one.to_string()),
                crate::store::Claim::Mine,
                crate::store::Claim::Mine
            ]
        );
        // An intent holding a key run 1 claims is refused; one of run 2's keys is stored,
        // its claims ending with it.
        let held = keys(&["a", "b"]);
        let refused = store.create_batch(&NewBatch {
            run_id: Some(two),
            ..intent(&held)
        });
        assert!(
            matches!(refused, Err(StoreError::ClaimedLive { ref key, ref owner }) if key == "a" && *owner == one.to_string()),
            "{refused:?}"
        );
        let mine = keys(&["b", "c"]);
        let row = store
            .create_batch(&NewBatch {
                run_id: Some(two),
                ..intent(&mine)
            })
            .unwrap();
        let claims_left: i64 = store
            .conn
            .query_row(
                "SELECT count(*) FROM call_claims WHERE owner = ?1",
                [two.to_string()],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(claims_left, 0);
        // Run 1 now finds `b` in run 2's batch: it follows it, never sends it.
        assert_eq!(
            store.claim("b", &one.to_string(), lease, false).unwrap(),
            crate::store::Claim::Batched(row.id)
        );
        // A dead run's claim is taken over by a batch.
        let dead = |_: &str| true;
        assert_eq!(
            store
                .claim_many(&keys(&["a"]), &two.to_string(), lease, &dead)
                .unwrap(),
            vec![crate::store::Claim::Mine]
        );
    }

    fn poll(status: &str) -> BatchPoll<'_> {
        BatchPoll {
            status,
            counts: BatchCountsRow {
                total: 3,
                processing: 3,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn an_intent_is_stored_with_its_keys_before_anything_is_sent() {
        let mut store = Store::open_in_memory().unwrap();
        let k = keys(&["k1", "k2", "k3"]);
        let row = store.create_batch(&intent(&k)).unwrap();
        assert_eq!(row.state, BatchState::Intent);
        assert_eq!(row.request_count, 3);
        assert!(
            row.tag.starts_with("track-") && row.tag.len() > 30,
            "{}",
            row.tag
        );
        assert_eq!((row.file_id.as_ref(), row.batch_id.as_ref()), (None, None));
        assert_eq!(store.batch_by_tag(&row.tag).unwrap(), Some(row.clone()));
        let other = store.create_batch(&intent(&keys(&["k9"]))).unwrap();
        assert_ne!(row.tag, other.tag, "tags are unique");
        let stored = store.batch_keys(row.id).unwrap();
        let listed: Vec<(&str, u64, KeyOutcome)> = stored
            .iter()
            .map(|k| (k.cache_key.as_str(), k.position, k.outcome))
            .collect();
        assert_eq!(
            listed,
            [
                ("k1", 1, KeyOutcome::Pending),
                ("k2", 2, KeyOutcome::Pending),
                ("k3", 3, KeyOutcome::Pending)
            ]
        );
        let open: Vec<i64> = store.open_batches().unwrap().iter().map(|b| b.id).collect();
        assert_eq!(open, [row.id, other.id]);
    }

    #[test]
    fn a_call_never_waits_in_two_batches() {
        let mut store = Store::open_in_memory().unwrap();
        let first = store.create_batch(&intent(&keys(&["k1", "k2"]))).unwrap();
        let again = store.create_batch(&intent(&keys(&["k3", "k2"])));
        match again {
            Err(StoreError::AlreadyBatched { key, batch }) => {
                assert_eq!((key.as_str(), batch), ("k2", first.id));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            store.list_batches(None, 10).unwrap().len(),
            1,
            "nothing stored"
        );
        let waiting = store.pending_in_batches(["k1", "k2", "k3"]).unwrap();
        assert_eq!(waiting.len(), 2);
        assert_eq!(waiting["k1"], first.id);
        // Once the first batch is given up, its keys may go in another.
        assert_eq!(store.void_batch(first.id, "create refused").unwrap(), 2);
        assert!(store.pending_in_batches(["k1", "k2"]).unwrap().is_empty());
        let second = store.create_batch(&intent(&keys(&["k3", "k2"]))).unwrap();
        assert_eq!(store.pending_in_batches(["k2"]).unwrap()["k2"], second.id);
        let void = store.batch(first.id).unwrap().unwrap();
        assert_eq!(void.state, BatchState::Void);
        assert_eq!(void.note.as_deref(), Some("create refused"));
    }

    #[test]
    fn each_step_is_stored_in_order() {
        let mut store = Store::open_in_memory().unwrap();
        let id = store
            .create_batch(&intent(&keys(&["k1", "k2", "k3"])))
            .unwrap()
            .id;
        store.set_batch_file(id, "file-abc").unwrap();
        assert!(
            matches!(
                store.set_batch_file(id, "file-other"),
                Err(StoreError::BatchState {
                    state: "uploaded",
                    ..
                })
            ),
            "a file is stored once"
        );
        store
            .set_batch_submitted(id, "batch_abc", &poll("validating"))
            .unwrap();
        let row = store.batch(id).unwrap().unwrap();
        assert_eq!(row.state, BatchState::Submitted);
        assert_eq!(
            (
                row.file_id.as_deref(),
                row.batch_id.as_deref(),
                row.status.as_deref()
            ),
            (Some("file-abc"), Some("batch_abc"), Some("validating"))
        );
        assert_eq!((row.polls, row.last_polled_at.as_ref()), (0, None));
        assert!(row.submitted_at.is_some());
        store
            .record_batch_poll(
                id,
                &BatchPoll {
                    status: "completed",
                    counts: BatchCountsRow {
                        total: 3,
                        succeeded: 2,
                        errored: 1,
                        ..Default::default()
                    },
                    output_file_id: Some("file-out"),
                    error_file_id: Some("file-err"),
                    ended_at: Some("2026-11-23T12:00:00.000Z"),
                    ..Default::default()
                },
            )
            .unwrap();
        // A later poll that names no file keeps the ones stored.
        store.record_batch_poll(id, &poll("completed")).unwrap();
        let row = store.batch(id).unwrap().unwrap();
        assert_eq!(row.polls, 2);
        assert!(row.last_polled_at.is_some());
        assert_eq!(row.output_file_id.as_deref(), Some("file-out"));
        assert_eq!(row.error_file_id.as_deref(), Some("file-err"));
        assert_eq!(row.ended_at.as_deref(), Some("2026-11-23T12:00:00.000Z"));
        assert_eq!(row.counts.processing, 3, "the last poll's counts");
        assert!(matches!(
            store.record_batch_poll(999, &poll("completed")),
            Err(StoreError::NoSuchBatch(999))
        ));
    }

    #[test]
    fn results_are_ordinary_calls_marked_with_their_batch() {
        let mut store = Store::open_in_memory().unwrap();
        let id = store
            .create_batch(&intent(&keys(&["k1", "k2", "k3", "k4"])))
            .unwrap()
            .id;
        store
            .set_batch_submitted(id, "msgbatch_1", &poll("in_progress"))
            .unwrap();
        let answered = store.insert_batch_call(id, &call("k1", Ok("4"))).unwrap();
        let failed = store
            .insert_batch_call(id, &call("k2", Err("HTTP 400: bad")))
            .unwrap();
        assert!(
            matches!(
                store.insert_batch_call(id, &call("k1", Ok("again"))),
                Err(StoreError::NotPending { .. })
            ),
            "a result is stored once"
        );
        assert!(matches!(
            store.insert_batch_call(id, &call("stranger", Ok("x"))),
            Err(StoreError::NotPending { .. })
        ));
        assert_eq!(store.call_count("stranger").unwrap(), 0);
        assert_eq!(store.mark_batch_unfinished(id, &["k3", "k1"]).unwrap(), 1);
        // The answer is served from the cache like any other, at the price it was billed.
        let hit = &store.cached_calls(["k1"]).unwrap()["k1"];
        assert_eq!((hit.id, hit.text.as_str()), (answered, "4"));
        assert_eq!(hit.cost_usd, Some(0.00000135));
        assert_eq!(store.call_batch(answered).unwrap(), Some(id));
        assert!(store.cached_calls(["k2"]).unwrap().is_empty());
        // k4 had no line: collecting leaves it unfinished, to be sent again.
        assert_eq!(store.finish_batch(id).unwrap(), 1);
        let outcomes: Vec<(String, KeyOutcome, Option<i64>)> = store
            .batch_keys(id)
            .unwrap()
            .into_iter()
            .map(|k| (k.cache_key, k.outcome, k.call_id))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("k1".to_owned(), KeyOutcome::Answered, Some(answered)),
                ("k2".to_owned(), KeyOutcome::Failed, Some(failed)),
                ("k3".to_owned(), KeyOutcome::Unfinished, None),
                ("k4".to_owned(), KeyOutcome::Unfinished, None),
            ]
        );
        let row = store.batch(id).unwrap().unwrap();
        assert_eq!(row.state, BatchState::Collected);
        assert!(row.collected_at.is_some());
        assert!(store.open_batches().unwrap().is_empty());
        assert!(matches!(
            store.finish_batch(id),
            Err(StoreError::BatchState {
                state: "collected",
                ..
            })
        ));
        // A live call of another key is not from a batch.
        let live = store.insert_call(&call("k9", Ok("live"))).unwrap();
        assert_eq!(store.call_batch(live).unwrap(), None);
    }

    #[test]
    fn a_batch_is_found_by_the_providers_id_and_costs_what_its_answers_cost() {
        let mut store = Store::open_in_memory().unwrap();
        let id = store
            .create_batch(&intent(&keys(&["k1", "k2", "k3"])))
            .unwrap()
            .id;
        let other = store.create_batch(&intent(&keys(&["k9"]))).unwrap().id;
        assert_eq!(store.batch_by_provider_id("batch_abc").unwrap(), None);
        store
            .set_batch_submitted(id, "batch_abc", &poll("in_progress"))
            .unwrap();
        assert_eq!(
            store
                .batch_by_provider_id("batch_abc")
                .unwrap()
                .map(|b| b.id),
            Some(id)
        );
        assert!(store.batch_costs(&[id, other]).unwrap().is_empty());
        store.insert_batch_call(id, &call("k1", Ok("4"))).unwrap();
        store
            .insert_batch_call(id, &call("k2", Err("HTTP 400: bad")))
            .unwrap();
        // A live call of another key counts for no batch.
        store.insert_call(&call("k3", Ok("live"))).unwrap();
        let costs = store.batch_costs(&[id, other]).unwrap();
        assert_eq!(costs.len(), 1);
        assert!((costs[&id] - 2.0 * 0.00000135).abs() < 1e-12, "{costs:?}");
    }

    #[test]
    fn batches_are_listed_newest_first_by_run() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let k1 = keys(&["a"]);
        let mut of_run = intent(&k1);
        of_run.run_id = Some(run);
        let first = store.create_batch(&of_run).unwrap().id;
        let second = store.create_batch(&intent(&keys(&["b"]))).unwrap().id;
        let all: Vec<i64> = store
            .list_batches(None, 10)
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect();
        assert_eq!(all, [second, first]);
        let mine: Vec<i64> = store
            .list_batches(Some(run), 10)
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect();
        assert_eq!(mine, [first]);
        assert_eq!(store.list_batches(None, 1).unwrap().len(), 1);
    }
}
