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

use super::{INPUT_CACHE_KIB, MergeError, remove_database};

/// The words of a request (`request`, an SQL expression of its text): those the trigger
/// indexes, none (NULL) unless it is JSON, as the trigger's json_tree of '{}' yields no text.
fn request_words(request: &str) -> String {
    format!(
        "CASE WHEN json_valid({request}) THEN
             (SELECT group_concat(t.value, char(10)) FROM json_tree({request}) t
              WHERE t.key IN ('system', 'text') AND t.type = 'text') END"
    )
}

/// Fills `temp.borrowed_requests` with the requests of the attached input's new answered
/// calls that it lacks, from OUT, looked up in the order of the keys (OUT's blobs are read in
/// order, once).
fn borrow_requests(tx: &Connection, all_new: bool) -> rusqlite::Result<()> {
    // When every call of the input is new, none is looked up in `temp.new_calls` (a third of
    // this statement's time).
    let new = match all_new {
        true => "",
        false => "AND s.id IN (SELECT id FROM temp.new_calls)",
    };
    tx.execute_batch(&format!(
        "DELETE FROM temp.borrowed_requests;
         INSERT OR IGNORE INTO temp.borrowed_requests (sha256, content)
         SELECT b.sha256, b.content FROM src.calls s INDEXED BY calls_by_key CROSS JOIN main.blobs b
         WHERE b.sha256 = s.cache_key AND s.status = 'ok' {new}
           AND NOT EXISTS (SELECT 1 FROM src.blobs x WHERE x.sha256 = s.cache_key)
         ORDER BY s.cache_key;",
    ))
}

/// Indexes into OUT's index the words of the calls copied after `before` from the attached
/// input. Each request is looked up once (joined); an answer always is in the input, whose
/// calls name it by a foreign key (OUT's is read only if it is not).
pub(super) fn index_in_place(tx: &Connection, before: i64, all_new: bool) -> rusqlite::Result<()> {
    borrow_requests(tx, all_new)?;
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
        })
    }

    /// Hands the new `calls` of the attached input at `input` (each with its id there and in
    /// OUT, in the order of both; also in `temp.new_calls` unless `all_new`, all of its calls)
    /// over to the thread, with the requests it lacks that OUT has.
    pub(super) fn send(
        &mut self,
        tx: &Connection,
        input: &Path,
        all_new: bool,
        calls: Vec<(i64, i64)>,
    ) -> Result<(), MergeError> {
        borrow_requests(tx, all_new)?;
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
    // The input's blobs are read at random: in memory once read, up to a bound.
    conn.pragma_update(Some("src"), "cache_size", INPUT_CACHE_KIB)?;
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
