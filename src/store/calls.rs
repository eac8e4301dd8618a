//! The call cache: every LLM call with its canonical request, response, usage, price and errors.

use std::collections::HashMap;

use rusqlite::params;

use super::blobs::insert_blob;
use super::{Result, Store, now_rfc3339};

/// A finished call to be recorded: either a response or an error.
#[derive(Debug, Clone)]
pub struct NewCall<'a> {
    /// sha256 hex of `canonical_request`.
    pub cache_key: &'a str,
    /// The canonical JSON the key was computed from; stored as a blob under the key.
    pub canonical_request: std::borrow::Cow<'a, str>,
    pub provider: &'a str,
    pub model: &'a str,
    /// `Ok(response text)` or `Err(error message)`.
    pub outcome: Result<&'a str, &'a str>,
    pub finish_reason: Option<&'a str>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub tokens_estimated: bool,
    pub latency_ms: f64,
    pub attempts: u32,
    /// USD per million tokens, as used for `cost_usd`; `None`: unknown (stored NULL).
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
    pub cost_usd: Option<f64>,
    pub http_status: Option<u16>,
}

/// A successful call as read back from the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCall {
    pub id: i64,
    pub text: String,
    pub finish_reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub tokens_estimated: bool,
    pub latency_ms: f64,
    pub attempts: u32,
    /// What it cost when it was made; `None`: unknown (its model had no price).
    pub cost_usd: Option<f64>,
    /// When the answer arrived (RFC 3339).
    pub created_at: String,
}

impl Store {
    /// Records one call in its own transaction (request blob, response blob, call row, and the
    /// end of any claim on its key) and returns its id. Called the moment a response arrives, so a killed run loses nothing.
    pub fn insert_call(&mut self, call: &NewCall<'_>) -> Result<i64> {
        self.atomically(|tx| insert_call_row(tx, call, None))
    }

    /// The newest successful call for each of `keys` that has one. Errors are never returned.
    /// Looks keys up in batches, so a cached run of many thousands of calls is quick.
    pub(crate) fn cached_calls<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<HashMap<String, StoredCall>> {
        self.cached_calls_since(keys, None)
    }

    /// [`Self::cached_calls`] among the calls answered at or after `since` (RFC 3339, as
    /// stored) when it is given.
    pub(crate) fn cached_calls_since<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
        since: Option<&str>,
    ) -> Result<HashMap<String, StoredCall>> {
        const BATCH: usize = 500;
        let mut unique: Vec<&str> = keys.into_iter().collect();
        unique.sort_unstable();
        unique.dedup();
        // Grown as answers are found: a plan of 400,000 new calls finds none, and a map
        // sized for all of them would hold about 60 MB for nothing.
        let mut found = HashMap::new();
        if self.worth_a_scan(unique.len())? {
            return self.cached_calls_scanned(&unique, since, found);
        }
        for chunk in unique.chunks(BATCH) {
            let placeholders = vec!["?"; chunk.len()].join(",");
            let newer = if since.is_some() {
                " AND c.created_at >= ?"
            } else {
                ""
            };
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT c.cache_key, {STORED_COLUMNS}
                 FROM calls c JOIN blobs b ON b.sha256 = c.response_sha256
                 WHERE c.status = 'ok' AND c.cache_key IN ({placeholders}){newer}
                 ORDER BY c.id"
            ))?;
            let mut rows = stmt.query(rusqlite::params_from_iter(chunk.iter().chain(&since)))?;
            while let Some(row) = rows.next()? {
                // Rows come oldest first: the newest call of a key is the one kept.
                found.insert(row.get::<_, String>(0)?, stored_call(row)?);
            }
        }
        Ok(found)
    }

    /// Whether `keys` keys are better found by reading every stored call in order than by
    /// looking each up: from a few thousand keys, when they are at least half as many as the
    /// calls stored. Looked up one by one, 400,000 keys read as many pages of `calls` at random
    /// places (3 to 5 s); read in order, the table takes about half a second.
    fn worth_a_scan(&self, keys: usize) -> Result<bool> {
        const FEWEST: usize = 4096;
        if keys < FEWEST {
            return Ok(false);
        }
        // The highest id bounds the number of calls (none is ever deleted but by a merge).
        let stored: Option<i64> = self
            .conn
            .query_row("SELECT max(id) FROM calls", [], |r| r.get(0))?;
        Ok(stored.is_some_and(|n| n as usize <= keys.saturating_mul(2)))
    }

    /// [`Self::cached_calls_since`] by reading every answered call in id order and keeping
    /// those of `keys`: the newest call of a key is the one kept. A database file is read in
    /// two halves of the ids at once, each on a connection and thread of its own (400,000
    /// keys: 1.2 s of a cached run's plan on one).
    fn cached_calls_scanned(
        &self,
        keys: &[&str],
        since: Option<&str>,
        mut found: HashMap<String, StoredCall>,
    ) -> Result<HashMap<String, StoredCall>> {
        /// The halves the ids are read in.
        const PARTS: usize = 2;
        // Hashed: a binary search among 400,000 keys compared 64-byte strings scattered in
        // memory 19 times a row, a third of a cached plan's time.
        let wanted: std::collections::HashSet<&str> = keys.iter().copied().collect();
        let highest: i64 =
            self.conn
                .query_row("SELECT coalesce(max(id), 0) FROM calls", [], |r| r.get(0))?;
        let bounds: Vec<i64> = (0..=PARTS as i64)
            .map(|k| highest * k / PARTS as i64)
            .collect();
        let scan = |conn: &rusqlite::Connection, part: usize| {
            scan_answered(conn, &wanted, since, [bounds[part], bounds[part + 1]])
        };
        let parts = match self.path_for_readers() {
            Some(path) => super::bench::scan_in_parallel(&path, PARTS, &scan)?,
            None => vec![scan_answered(&self.conn, &wanted, since, [0, highest])?],
        };
        // In id order: a key's newest call, in a later part, replaces an older one.
        for part in parts {
            found.extend(part);
        }
        Ok(found)
    }

    /// The attempts of the newest call of `key` when that call failed; `None` when it did not
    /// fail or there is none.
    pub(crate) fn last_failure_attempts(&self, key: &str) -> Result<Option<u32>> {
        use rusqlite::OptionalExtension as _;
        Ok(self
            .conn
            .prepare_cached(LAST_OUTCOME_OF_KEY)?
            .query_row([key], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?)))
            .optional()?
            .and_then(|(status, attempts)| (status == "error").then_some(attempts)))
    }

    /// The HTTP status and error of the last call stored under `key`, when it failed with a
    /// status.
    pub(crate) fn last_failure_status(&self, key: &str) -> Result<Option<(u16, String)>> {
        use rusqlite::OptionalExtension as _;
        Ok(self
            .conn
            .prepare_cached(
                "SELECT status, http_status, coalesce(error, '') FROM calls \
                 WHERE id = (SELECT max(id) FROM calls WHERE cache_key = ?1)",
            )?
            .query_row([key], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<u16>>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .optional()?
            .and_then(|(status, http, error)| {
                (status == "error")
                    .then_some(http.map(|h| (h, error)))
                    .flatten()
            }))
    }

    /// The answer of call `call_id`: its response text, whole; `None` when the call got none
    /// (an error) or there is no such call.
    pub(crate) fn answer_text(&self, call_id: i64) -> Result<Option<String>> {
        use rusqlite::OptionalExtension as _;
        let bytes: Option<Vec<u8>> = self
            .conn
            .prepare_cached(
                "SELECT b.content FROM calls c JOIN blobs b ON b.sha256 = c.response_sha256
                 WHERE c.id = ?1",
            )?
            .query_row([call_id], |r| r.get(0))
            .optional()?;
        Ok(bytes.map(|b| {
            String::from_utf8(b)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        }))
    }

    /// The first `bytes` bytes of the answer of each call of `call_ids`, in their order (`None`
    /// for no call, or a call that got no answer): what `track query --by result` shows of
    /// each answer. A character cut by the excerpt becomes U+FFFD.
    pub(crate) fn answer_starts(
        &self,
        call_ids: &[Option<i64>],
        bytes: usize,
    ) -> Result<Vec<Option<String>>> {
        use rusqlite::OptionalExtension as _;
        let mut stmt = self.conn.prepare_cached(
            "SELECT substr(b.content, 1, ?2) FROM calls c JOIN blobs b ON b.sha256 = c.response_sha256
             WHERE c.id = ?1",
        )?;
        call_ids
            .iter()
            .map(|id| {
                let Some(id) = id else { return Ok(None) };
                let text: Option<Vec<u8>> = stmt
                    .query_row(rusqlite::params![id, bytes as i64], |r| {
                        Ok(match r.get_ref(0)? {
                            rusqlite::types::ValueRef::Text(b)
                            | rusqlite::types::ValueRef::Blob(b) => Some(b.to_vec()),
                            _ => None,
                        })
                    })
                    .optional()?
                    .flatten();
                Ok(text.map(|b| String::from_utf8_lossy(&b).into_owned()))
            })
            .collect()
    }

    /// How many calls (of any status) were recorded under `key`; for tests and diagnostics.
    #[cfg(test)]
    pub(crate) fn call_count(&self, key: &str) -> Result<u64> {
        Ok(self
            .conn
            .prepare_cached("SELECT count(*) FROM calls WHERE cache_key = ?1")?
            .query_row([key], |r| r.get::<_, i64>(0))? as u64)
    }
}

/// The status and attempts of the newest call of a key. `max(id)` rather than `ORDER BY id
/// DESC LIMIT 1`: the index on (cache_key, status) does not give a key's calls in id order, so
/// the latter sorts them in a temporary b-tree, made and dropped at every call sent.
pub(super) const LAST_OUTCOME_OF_KEY: &str = "SELECT status, attempts FROM calls WHERE id = (SELECT max(id) FROM calls WHERE cache_key = ?1)";

/// Inserts `call` on `tx` (its blobs, its row, the end of any claim on its key), answered in
/// `batch` when it came from one; returns its id.
pub(super) fn insert_call_row(
    tx: &rusqlite::Connection,
    call: &NewCall<'_>,
    batch: Option<i64>,
) -> Result<i64> {
    insert_blob(
        tx,
        call.cache_key,
        "application/json",
        call.canonical_request.as_bytes(),
    )?;
    let (status, response_sha, error) = match call.outcome {
        Ok(text) => {
            let sha = crate::hash::sha256_hex(text.as_bytes());
            insert_blob(tx, &sha, "text/plain; charset=utf-8", text.as_bytes())?;
            ("ok", Some(sha), None)
        }
        Err(message) => ("error", None, Some(message)),
    };
    let created_at = now_rfc3339();
    // The same wherever it is copied: its content, and a salt so that two alike stay two.
    let uid = super::uid(&[
        "call".into(),
        call.cache_key.into(),
        status.into(),
        response_sha.as_deref().into(),
        (&created_at).into(),
        i64::from(call.attempts).into(),
        error.into(),
        super::ids::salt().into(),
    ]);
    tx.prepare_cached(
        "INSERT INTO calls (cache_key, provider, model, status, response_sha256, finish_reason,
            input_tokens, output_tokens, tokens_estimated, latency_ms, attempts,
            input_price_per_mtok, output_price_per_mtok, cost_usd, http_status, error, created_at,
            batch, uid)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
    )?
    .execute(params![
        call.cache_key,
        call.provider,
        call.model,
        status,
        response_sha,
        call.finish_reason,
        call.input_tokens.map(|n| n as i64),
        call.output_tokens.map(|n| n as i64),
        call.tokens_estimated,
        call.latency_ms,
        call.attempts,
        call.input_price_per_mtok,
        call.output_price_per_mtok,
        call.cost_usd,
        call.http_status,
        error,
        created_at,
        batch,
        uid,
    ])?;
    let id = tx.last_insert_rowid();
    // A stored outcome ends the claim on its key, in the same transaction: a run
    // waiting for it sees the answer (or, after an error, claims the key itself).
    tx.prepare_cached("DELETE FROM call_claims WHERE cache_key = ?1")?
        .execute([call.cache_key])?;
    Ok(id)
}

/// The columns every cached-call query selects, after the key.
const STORED_COLUMNS: &str = "c.id, b.content, c.finish_reason, c.input_tokens, c.output_tokens,
    c.tokens_estimated, c.latency_ms, c.attempts, c.cost_usd, c.created_at";

/// The answered calls of `keys` whose ids are above `ids[0]` and at most `ids[1]` (answered at
/// or after `since` when given), read in id order: a key's newest call is the one kept.
fn scan_answered(
    conn: &rusqlite::Connection,
    wanted: &std::collections::HashSet<&str>,
    since: Option<&str>,
    ids: [i64; 2],
) -> Result<HashMap<String, StoredCall>> {
    let newer = if since.is_some() {
        " AND c.created_at >= ?3"
    } else {
        ""
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT c.cache_key, {STORED_COLUMNS}
         FROM calls c JOIN blobs b ON b.sha256 = c.response_sha256
         WHERE c.id > ?1 AND c.id <= ?2 AND c.status = 'ok'{newer}
         ORDER BY c.id"
    ))?;
    let mut found = HashMap::new();
    let bounds = ids.iter().map(|id| id as &dyn rusqlite::ToSql);
    let since = since.iter().map(|s| s as &dyn rusqlite::ToSql);
    let mut rows = stmt.query(rusqlite::params_from_iter(bounds.chain(since)))?;
    while let Some(row) = rows.next()? {
        let key = row.get_ref(0)?.as_str()?;
        if wanted.contains(key) {
            found.insert(key.to_owned(), stored_call(row)?);
        }
    }
    Ok(found)
}

/// A cached call from a row of `cache_key, STORED_COLUMNS`.
fn stored_call(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredCall> {
    let content: Vec<u8> = row.get(2)?;
    let text = String::from_utf8(content)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(StoredCall {
        id: row.get(1)?,
        text,
        finish_reason: row.get(3)?,
        input_tokens: row.get::<_, Option<i64>>(4)?.unwrap_or(0) as u64,
        output_tokens: row.get::<_, Option<i64>>(5)?.unwrap_or(0) as u64,
        tokens_estimated: row.get(6)?,
        latency_ms: row.get::<_, Option<f64>>(7)?.unwrap_or(0.0),
        attempts: row.get(8)?,
        cost_usd: row.get(9)?,
        created_at: row.get(10)?,
    })
}

/// The newest successful call of `key`, if any, on `conn` (a transaction too).
pub(super) fn cached_call(conn: &rusqlite::Connection, key: &str) -> Result<Option<StoredCall>> {
    use rusqlite::OptionalExtension as _;
    Ok(conn
        .prepare_cached(&format!(
            "SELECT c.cache_key, {STORED_COLUMNS}
             FROM calls c JOIN blobs b ON b.sha256 = c.response_sha256
             WHERE c.status = 'ok' AND c.cache_key = ?1
             ORDER BY c.id DESC LIMIT 1"
        ))?
        .query_row([key], stored_call)
        .optional()?)
}

#[cfg(test)]
impl<'a> NewCall<'a> {
    /// A call to `openai:gpt-4o` under `key` answered `text` (one token in, one out, free):
    /// what the executor would have stored, for tests.
    pub(crate) fn answered(key: &'a str, text: &'a str) -> Self {
        NewCall {
            cache_key: key,
            canonical_request: "{}".into(),
            provider: "openai",
            model: "gpt-4o",
            outcome: Ok(text),
            finish_reason: Some("stop"),
            input_tokens: Some(1),
            output_tokens: Some(1),
            tokens_estimated: false,
            latency_ms: 1.0,
            attempts: 1,
            input_price_per_mtok: Some(0.0),
            output_price_per_mtok: Some(0.0),
            cost_usd: Some(0.0),
            http_status: Some(200),
        }
    }
}

#[cfg(test)]
impl Store {
    /// Stores [`NewCall::answered`] and returns it as the cache serves it, for tests.
    pub(crate) fn insert_answered(&mut self, key: &str, text: &str) -> StoredCall {
        self.insert_call(&NewCall::answered(key, text))
            .expect("store a call");
        self.cached_calls([key])
            .expect("read the cache")
            .remove(key)
            .expect("the call just stored")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(key: &'a str, outcome: Result<&'a str, &'a str>) -> NewCall<'a> {
        NewCall {
            cache_key: key,
            canonical_request: "{\"v\":1}".into(),
            provider: "openai",
            model: "gpt-4o",
            outcome,
            finish_reason: Some("stop"),
            input_tokens: Some(3),
            output_tokens: Some(5),
            tokens_estimated: false,
            latency_ms: 12.5,
            attempts: 1,
            input_price_per_mtok: Some(2.5),
            output_price_per_mtok: Some(10.0),
            cost_usd: Some(0.0000575),
            http_status: Some(200),
        }
    }

    #[test]
    fn errors_are_stored_but_never_served() {
        let mut store = Store::open_in_memory().unwrap();
        store.insert_call(&call("k1", Err("HTTP 500"))).unwrap();
        assert!(store.cached_calls(["k1"]).unwrap().is_empty());
        assert_eq!(store.call_count("k1").unwrap(), 1);
    }

    #[test]
    fn the_last_failure_is_that_of_the_newest_call() {
        let mut store = Store::open_in_memory().unwrap();
        assert_eq!(store.last_failure_attempts("k1").unwrap(), None);
        store.insert_call(&call("k1", Err("HTTP 500"))).unwrap();
        let mut failed = call("k1", Err("HTTP 503"));
        failed.attempts = 6;
        failed.http_status = Some(503);
        store.insert_call(&failed).unwrap();
        assert_eq!(store.last_failure_attempts("k1").unwrap(), Some(6));
        assert_eq!(
            store.last_failure_status("k1").unwrap(),
            Some((503, "HTTP 503".to_owned()))
        );
        store.insert_call(&call("k1", Ok("fine"))).unwrap();
        assert_eq!(store.last_failure_attempts("k1").unwrap(), None);
        assert_eq!(store.last_failure_status("k1").unwrap(), None);
        assert_eq!(store.last_failure_attempts("k2").unwrap(), None);
    }

    #[test]
    fn the_newest_ok_call_is_served() {
        let mut store = Store::open_in_memory().unwrap();
        store.insert_call(&call("k1", Ok("old"))).unwrap();
        let newest = store.insert_call(&call("k1", Ok("new"))).unwrap();
        store.insert_call(&call("k1", Err("boom"))).unwrap();
        let found = store.cached_calls(["k1", "k2", "k1"]).unwrap();
        let many: Vec<String> = (0..1200)
            .map(|i| format!("absent{i}"))
            .chain(["k1".into()])
            .collect();
        assert_eq!(
            store
                .cached_calls(many.iter().map(String::as_str))
                .unwrap()
                .len(),
            1,
            "batches"
        );
        assert_eq!(found.len(), 1);
        let hit = &found["k1"];
        assert_eq!((hit.id, hit.text.as_str()), (newest, "new"));
        assert_eq!((hit.input_tokens, hit.output_tokens), (3, 5));
    }

    #[test]
    fn many_keys_are_found_by_reading_the_calls_in_order_as_one_by_one() {
        // In memory (one connection), and in a file (read in halves, on threads).
        let dir = tempfile::tempdir().unwrap();
        let file = Store::open(&dir.path().join("t.db")).unwrap();
        for store in [Store::open_in_memory().unwrap(), file] {
            many_keys_found_in(store);
        }
    }

    fn many_keys_found_in(mut store: Store) {
        let keys: Vec<String> = (0..5000).map(|i| format!("key{i:05}")).collect();
        for (i, key) in keys.iter().enumerate() {
            let text = format!("answer {i}");
            let outcome = if i % 7 == 0 {
                Err("HTTP 500")
            } else {
                Ok(text.as_str())
            };
            store.insert_call(&call(key, outcome)).unwrap();
        }
        // An older answer of key 1, answered again since: the newer one is served.
        let newest = store.insert_call(&call(&keys[1], Ok("again"))).unwrap();
        let wanted: Vec<&str> = keys.iter().map(String::as_str).skip(1).collect();
        assert!(store.worth_a_scan(wanted.len()).unwrap(), "read in order");
        let scanned = store.cached_calls(wanted.iter().copied()).unwrap();
        assert!(!store.worth_a_scan(100).unwrap(), "few: looked up");
        let mut one_by_one = HashMap::new();
        for chunk in wanted.chunks(100) {
            one_by_one.extend(store.cached_calls(chunk.iter().copied()).unwrap());
        }
        assert_eq!(
            scanned.len(),
            5000 - 1 - 714,
            "the failed calls are not served"
        );
        assert_eq!(scanned.len(), one_by_one.len());
        for (key, call) in &one_by_one {
            let other = &scanned[key];
            assert_eq!((other.id, &other.text), (call.id, &call.text), "{key}");
        }
        assert_eq!(scanned["key00001"].id, newest);
        assert!(!scanned.contains_key("key00000"), "not asked for");
        let since = store
            .cached_calls_since(wanted.iter().copied(), Some("9999"))
            .unwrap();
        assert!(since.is_empty(), "none answered since");
        let since = store
            .cached_calls_since(wanted.iter().copied(), Some("2000"))
            .unwrap();
        assert_eq!(since.len(), scanned.len(), "all answered since 2000");
    }
}
