//! The words of the calls a merge in bulk copies, for the search index (`call_text`,
//! migration V22), indexed as the trigger set aside meanwhile does for each stored call: what
//! an answered call asked (system prompt and messages' text) and what it answered. The texts
//! are read from the input (a blob is stored under its hash, the same in every database), one
//! call after another in the order of their ids in OUT, as the index takes them best.
//!
//! Into OUT's index, input after input ([`index_in_place`]); or, when OUT's index is empty at
//! the start (a new OUT, as merging shards makes), on a thread of its own ([`Indexer`]) into
//! an index of its own in a file beside the staging file, which then replaces OUT's: the
//! merge copies the next input meanwhile (indexing words was a third of its time).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::Connection;

use super::calls::{key_of, merge_sorted};
use super::{MergeError, remove_database};

/// The words of a request (`request`, an SQL expression of its text): those the trigger
/// indexes, none (NULL) unless it is JSON, as the trigger's json_tree of '{}' yields no text.
fn request_words(request: &str) -> String {
    format!(
        "CASE WHEN json_valid({request}) THEN
             (SELECT group_concat(t.value, char(10)) FROM json_tree({request}) t
              WHERE t.key IN ('system', 'text') AND t.type = 'text') END"
    )
}

/// The keys of OUT's blobs (see [`key_of`]: 4 bytes a hash), sorted, while a merge copies in
/// bulk: a request an input lacks is looked up in OUT only if OUT may hold it. Looking each
/// one up took 1 s of 8 merging 8 shards whose calls' requests were in none of them.
pub(super) struct BlobKeys {
    keys: Vec<u32>,
}

impl BlobKeys {
    /// OUT's blobs.
    pub(super) fn load(conn: &Connection) -> rusqlite::Result<Self> {
        let mut keys = Vec::new();
        let mut stmt = conn.prepare("SELECT sha256 FROM main.blobs")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            keys.push(key_of(&row.get::<_, String>(0)?));
        }
        keys.sort_unstable();
        Ok(Self { keys })
    }

    /// Whether OUT may hold a blob whose hash has `key`.
    fn may_hold(&self, key: u32) -> bool {
        self.keys.binary_search(&key).is_ok()
    }
}

/// The next text of a column read in order: `Err(())` for a value that is not text.
fn next_text(rows: &mut rusqlite::Rows<'_>) -> rusqlite::Result<Option<Result<String, ()>>> {
    Ok(rows.next()?.map(|row| match row.get_ref(0) {
        Ok(rusqlite::types::ValueRef::Text(text)) => {
            std::str::from_utf8(text).map(str::to_owned).map_err(drop)
        }
        _ => Err(()),
    }))
}

/// The keys of the attached input's answered calls whose request it lacks, if OUT may hold
/// them; and the keys of its blobs. Its calls in the order of their keys and its blobs in
/// the order of their hashes are read side by side, once each; `None` if a key or hash is
/// not text (then each call is looked up, as SQL orders such values otherwise).
fn lacking_requests(
    tx: &Connection,
    blobs: &BlobKeys,
) -> rusqlite::Result<Option<(Vec<String>, Vec<u32>)>> {
    let mut calls = tx.prepare(
        "SELECT cache_key FROM src.calls INDEXED BY calls_by_key WHERE status = 'ok'
         ORDER BY cache_key",
    )?;
    let mut held = tx.prepare("SELECT sha256 FROM src.blobs ORDER BY sha256")?;
    let (mut calls, mut held) = (calls.query([])?, held.query([])?);
    let (mut lacking, mut input_keys) = (Vec::new(), Vec::new());
    let mut blob = next_text(&mut held)?;
    while let Some(call) = next_text(&mut calls)? {
        let Ok(key) = call else { return Ok(None) };
        loop {
            match &blob {
                Some(Ok(hash)) if *hash < key => input_keys.push(key_of(hash)),
                Some(Err(())) => return Ok(None),
                _ => break,
            }
            blob = next_text(&mut held)?;
        }
        let in_input = matches!(&blob, Some(Ok(hash)) if *hash == key);
        if !in_input && blobs.may_hold(key_of(&key)) {
            lacking.push(key);
        }
    }
    while let Some(rest) = blob {
        let Ok(hash) = rest else { return Ok(None) };
        input_keys.push(key_of(&hash));
        blob = next_text(&mut held)?;
    }
    Ok(Some((lacking, input_keys)))
}

/// Fills `temp.borrowed_requests` with the requests of the attached input's answered calls
/// that it lacks and OUT holds, and adds the input's blobs (copied into OUT) to `blobs`.
fn borrow_requests(tx: &Connection, blobs: &mut BlobKeys) -> rusqlite::Result<()> {
    tx.execute_batch("DELETE FROM temp.borrowed_requests")?;
    let Some((lacking, input_keys)) = lacking_requests(tx, blobs)? else {
        tx.execute_batch(
            "INSERT OR IGNORE INTO temp.borrowed_requests (sha256, content)
             SELECT b.sha256, b.content FROM src.calls s CROSS JOIN main.blobs b
             WHERE b.sha256 = s.cache_key AND s.status = 'ok'
               AND NOT EXISTS (SELECT 1 FROM src.blobs x WHERE x.sha256 = s.cache_key);",
        )?;
        *blobs = BlobKeys::load(tx)?;
        return Ok(());
    };
    let mut borrow = tx.prepare(
        "INSERT OR IGNORE INTO temp.borrowed_requests (sha256, content)
         SELECT sha256, content FROM main.blobs WHERE sha256 = ?1",
    )?;
    for key in &lacking {
        borrow.execute([key])?;
    }
    merge_sorted(&mut blobs.keys, input_keys);
    Ok(())
}

/// Indexes into OUT's index the words of the calls copied after `before` from the attached
/// input. Each request is looked up once (joined); an answer always is in the input, whose
/// calls name it by a foreign key (OUT's is read only if it is not).
pub(super) fn index_in_place(
    tx: &Connection,
    before: i64,
    blobs: &mut BlobKeys,
) -> rusqlite::Result<()> {
    borrow_requests(tx, blobs)?;
    let request = request_words("CAST(coalesce(r.content, w.content) AS TEXT)");
    tx.execute(
        &format!(
            "INSERT INTO call_text (rowid, request, answer)
             SELECT c.id, {request},
                 CAST(coalesce((SELECT content FROM src.blobs WHERE sha256 = c.response_sha256),
                               (SELECT content FROM main.blobs WHERE sha256 = c.response_sha256))
                      AS TEXT)
             FROM main.calls c
             LEFT JOIN src.blobs r ON r.sha256 = c.cache_key
             LEFT JOIN temp.borrowed_requests w ON r.sha256 IS NULL AND w.sha256 = c.cache_key
             WHERE c.id > ?1 AND c.status = 'ok' ORDER BY c.id"
        ),
        [before],
    )?;
    Ok(())
}

/// The page cache of an input attached by the thread indexing words beside the merge, in KiB
/// as `PRAGMA cache_size` takes it (negative).
const WORDS_INPUT_CACHE_KIB: i64 = -8_000;

/// What the merge hands over to the thread that indexes words.
enum Message {
    /// An input's new calls.
    Input(Job),
    /// Every input is copied: put the index in OUT's place (OUT is idle meanwhile).
    Finish,
}

/// One input's new calls, for the thread that indexes their words.
struct Job {
    input: PathBuf,
    /// Each new call: its id in the input and in OUT, in the order of both.
    calls: Vec<(i64, i64)>,
    /// The requests the input lacks, from OUT: key and content (see [`borrow_requests`]).
    borrowed: Vec<(String, Vec<u8>)>,
}

/// Indexes the words of the calls merged on a thread of its own, into a file beside the
/// staging database, whose index then replaces the staging database's own (empty) index.
pub(super) struct Indexer {
    messages: Option<mpsc::Sender<Message>>,
    thread: Option<JoinHandle<rusqlite::Result<()>>>,
    path: PathBuf,
    /// OUT's blobs, for the requests an input lacks.
    blobs: BlobKeys,
}

impl Indexer {
    /// Whether OUT's index can be replaced by one made beside it: OUT holds no calls, and no
    /// words.
    pub(super) fn fits(conn: &Connection) -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM main.calls)
                AND NOT EXISTS (SELECT 1 FROM main.call_text_docsize)",
            [],
            |r| r.get(0),
        )
    }

    /// Starts the thread, its index made as OUT's is (`conn`, the staging database at
    /// `staging`).
    pub(super) fn start(conn: &Connection, staging: &Path) -> Result<Self, MergeError> {
        let blobs = BlobKeys::load(conn)?;
        let definition: String = conn.query_row(
            "SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = 'call_text'",
            [],
            |r| r.get(0),
        )?;
        let mut name = staging.as_os_str().to_owned();
        name.push("-words");
        let path = PathBuf::from(name);
        remove_database(&path);
        let (messages, received) = mpsc::channel();
        let (words, out) = (path.clone(), staging.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("merge-words".into())
            .spawn(move || index_beside(&words, &definition, &out, &received))
            .map_err(|source| MergeError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(Self {
            messages: Some(messages),
            thread: Some(thread),
            path,
            blobs,
        })
    }

    /// Hands the new `calls` of the attached input at `input` (each with its id there and in
    /// OUT, in the order of both) over to the thread, with the requests it lacks that OUT has.
    pub(super) fn send(
        &mut self,
        tx: &Connection,
        input: &Path,
        calls: Vec<(i64, i64)>,
    ) -> Result<(), MergeError> {
        borrow_requests(tx, &mut self.blobs)?;
        let borrowed = tx
            .prepare("SELECT sha256, content FROM temp.borrowed_requests")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let job = Job {
            input: input.to_path_buf(),
            calls,
            borrowed,
        };
        let sent = self
            .messages
            .as_ref()
            .is_some_and(|m| m.send(Message::Input(job)).is_ok());
        match sent {
            true => Ok(()),
            // The thread ended early: on an error, which it returns.
            false => self.join(),
        }
    }

    /// Waits for the thread to index every input's words and put its index in OUT's place.
    pub(super) fn finish(mut self) -> Result<(), MergeError> {
        if let Some(messages) = self.messages.take() {
            // A thread ended early returns its error below.
            let _ = messages.send(Message::Finish);
        }
        self.join()
    }

    /// Waits for the thread and removes its file; its error, if any (a panic goes on).
    fn join(&mut self) -> Result<(), MergeError> {
        drop(self.messages.take());
        let ended = self.thread.take().map(JoinHandle::join);
        remove_database(&self.path);
        match ended {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e.into()),
            Some(Err(panic)) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for Indexer {
    /// A merge that fails stops the thread (without touching OUT) before its files are
    /// removed.
    fn drop(&mut self) {
        drop(self.messages.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        remove_database(&self.path);
    }
}

/// The thread: indexes each input's new calls into the file at `path`, then, when told to
/// finish, puts that index in place of the (empty) one of the staging database at `out`.
fn index_beside(
    path: &Path,
    definition: &str,
    out: &Path,
    messages: &mpsc::Receiver<Message>,
) -> rusqlite::Result<()> {
    let conn = Connection::open(path)?;
    // This merge's own file, removed when it ends.
    conn.pragma_update(None, "journal_mode", "OFF")?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "temp_store", "FILE")?;
    conn.execute_batch(definition)?;
    conn.execute_batch(
        "CREATE TEMP TABLE ids (src INTEGER PRIMARY KEY, dst INTEGER NOT NULL);
         CREATE TEMP TABLE borrowed_requests (sha256 TEXT PRIMARY KEY, content BLOB);
         CREATE TEMP TABLE left_calls (id INTEGER PRIMARY KEY);",
    )?;
    for message in messages {
        match message {
            Message::Input(job) => {
                conn.execute("ATTACH DATABASE ?1 AS src", [job.input.to_string_lossy()])?;
                let indexed = index_input(&conn, &job);
                let detached = conn.execute("DETACH DATABASE src", []);
                indexed?;
                detached?;
            }
            Message::Finish => return replace_index(&conn, out),
        }
    }
    // The merge failed: OUT is left alone.
    Ok(())
}

/// Indexes the words of one input's new calls (attached as `src`), under their ids in OUT. A
/// call whose answer the input lacks is left for the end, read from OUT.
fn index_input(conn: &Connection, job: &Job) -> rusqlite::Result<()> {
    // The input's blobs are read at random: in memory once read, up to a bound, the rest
    // from the system's cache (this thread has time to spare: 20 MB took 8 MB more of the
    // merge's peak for no time saved).
    conn.pragma_update(Some("src"), "cache_size", WORDS_INPUT_CACHE_KIB)?;
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch("DELETE FROM temp.ids; DELETE FROM temp.borrowed_requests;")?;
    {
        let mut id = tx.prepare("INSERT INTO temp.ids (src, dst) VALUES (?1, ?2)")?;
        for (src, dst) in &job.calls {
            id.execute([src, dst])?;
        }
        let mut borrowed =
            tx.prepare("INSERT INTO temp.borrowed_requests (sha256, content) VALUES (?1, ?2)")?;
        for (key, content) in &job.borrowed {
            borrowed.execute(rusqlite::params![key, content])?;
        }
    }
    tx.commit()?;
    let request = request_words("CAST(coalesce(r.content, w.content) AS TEXT)");
    let indexed = conn.execute(
        &format!(
            "INSERT INTO call_text (rowid, request, answer)
             SELECT i.dst, {request}, CAST(a.content AS TEXT)
             FROM temp.ids i CROSS JOIN src.calls c ON c.id = i.src
             LEFT JOIN src.blobs r ON r.sha256 = c.cache_key
             LEFT JOIN temp.borrowed_requests w ON r.sha256 IS NULL AND w.sha256 = c.cache_key
             LEFT JOIN src.blobs a ON a.sha256 = c.response_sha256
             WHERE c.status = 'ok' AND (a.sha256 IS NOT NULL OR c.response_sha256 IS NULL)
             ORDER BY i.src"
        ),
        [],
    )?;
    let answered: i64 = conn.query_row(
        "SELECT count(*) FROM temp.ids i CROSS JOIN src.calls c ON c.id = i.src
         WHERE c.status = 'ok'",
        [],
        |r| r.get(0),
    )?;
    if usize::try_from(answered).ok() != Some(indexed) {
        conn.execute_batch(
            "INSERT INTO temp.left_calls (id)
             SELECT i.dst FROM temp.ids i CROSS JOIN src.calls c ON c.id = i.src
             WHERE c.status = 'ok' AND c.response_sha256 IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM src.blobs a WHERE a.sha256 = c.response_sha256);",
        )?;
    }
    Ok(())
}

/// The tables of an FTS5 index (its "shadow tables"), which hold all of it.
const INDEX_TABLES: [&str; 4] = [
    "call_text_data",
    "call_text_idx",
    "call_text_docsize",
    "call_text_config",
];

/// Indexes the calls left for the end from OUT (the staging database at `out`) with the
/// trigger's expressions, then copies the index into OUT's place, whose index is empty. OUT's
/// connection sees the change as another connection's (and reads the index anew).
fn replace_index(conn: &Connection, out: &Path) -> rusqlite::Result<()> {
    conn.execute("ATTACH DATABASE ?1 AS out", [out.to_string_lossy()])?;
    conn.pragma_update(Some("out"), "journal_mode", "OFF")?;
    conn.pragma_update(Some("out"), "synchronous", "OFF")?;
    let replaced = conn
        .execute(
            "INSERT INTO main.call_text (rowid, request, answer)
             SELECT c.id,
                 (SELECT group_concat(t.value, char(10))
                  FROM out.blobs b, json_tree(CASE WHEN json_valid(CAST(b.content AS TEXT))
                                                   THEN CAST(b.content AS TEXT) ELSE '{}' END) t
                  WHERE b.sha256 = c.cache_key AND t.key IN ('system', 'text')
                    AND t.type = 'text'),
                 (SELECT CAST(content AS TEXT) FROM out.blobs WHERE sha256 = c.response_sha256)
             FROM temp.left_calls l CROSS JOIN out.calls c ON c.id = l.id ORDER BY l.id",
            [],
        )
        .and_then(|_| {
            for table in INDEX_TABLES {
                conn.execute_batch(&format!(
                    "DELETE FROM out.{table}; INSERT INTO out.{table} SELECT * FROM main.{table};"
                ))?;
            }
            Ok(())
        });
    let detached = conn.execute("DETACH DATABASE out", []);
    replaced?;
    detached.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OUT holding blobs `out`, and an input attached as `src` whose answered calls ask
    /// `asked` (with one failed call asking `failed`) and which holds blobs `held`.
    fn attached(out: &[&str], asked: &[&str], failed: &str, held: &[&str]) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE blobs (sha256 TEXT PRIMARY KEY, content BLOB) WITHOUT ROWID;
             ATTACH ':memory:' AS src;
             CREATE TABLE src.blobs (sha256 TEXT PRIMARY KEY, content BLOB) WITHOUT ROWID;
             CREATE TABLE src.calls (id INTEGER PRIMARY KEY, cache_key TEXT, status TEXT);
             CREATE INDEX src.calls_by_key ON calls (cache_key, status);",
        )
        .unwrap();
        for hash in out {
            conn.execute("INSERT INTO main.blobs VALUES (?1, 'x')", [hash])
                .unwrap();
        }
        for hash in held {
            conn.execute("INSERT INTO src.blobs VALUES (?1, 'x')", [hash])
                .unwrap();
        }
        for key in asked {
            conn.execute(
                "INSERT INTO src.calls (cache_key, status) VALUES (?1, 'ok')",
                [key],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO src.calls (cache_key, status) VALUES (?1, 'error')",
            [failed],
        )
        .unwrap();
        conn
    }

    #[test]
    fn only_requests_the_input_lacks_and_out_may_hold_are_looked_up() {
        let hash = |c: char| c.to_string().repeat(64);
        let (a, b, c, d, e) = (hash('a'), hash('b'), hash('c'), hash('d'), hash('e'));
        // a is the input's own; b (asked twice) and d (by a failed call) are OUT's; c is
        // nowhere; e is a blob of the input no call asks for.
        let conn = attached(&[&b, &d], &[&c, &b, &a, &b], &d, &[&a, &e]);
        let blobs = BlobKeys::load(&conn).unwrap();
        let (lacking, input_keys) = lacking_requests(&conn, &blobs).unwrap().unwrap();
        assert_eq!(lacking, vec![b.clone(), b.clone()]);
        assert_eq!(input_keys, vec![key_of(&a), key_of(&e)]);
    }

    #[test]
    fn a_key_that_is_not_text_has_every_request_looked_up_in_sql() {
        let b = "b".repeat(64);
        let conn = attached(&[&b], &[&b], "f", &[]);
        conn.execute_batch(
            "INSERT INTO src.calls (cache_key, status) VALUES (X'00', 'ok');
             CREATE TEMP TABLE borrowed_requests (sha256 TEXT PRIMARY KEY, content BLOB);",
        )
        .unwrap();
        let mut blobs = BlobKeys::load(&conn).unwrap();
        assert!(lacking_requests(&conn, &blobs).unwrap().is_none());
        borrow_requests(&conn, &mut blobs).unwrap();
        let borrowed: Vec<String> = conn
            .prepare("SELECT sha256 FROM temp.borrowed_requests")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(borrowed, vec![b]);
    }
}
