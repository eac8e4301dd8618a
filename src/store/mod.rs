//! The SQLite store: opening, pragmas and migrations, and every SQL query of track.
//!
//! Nothing outside this module writes SQL. The store knows tables, not providers or experiments:
//! callers hand it plain rows and get plain rows back. Batch state (intents, their keys,
//! polls) is in `batches`.

mod batches;
mod bench;
mod blobs;
mod calls;
mod ci;
mod claims;
mod datasets;
mod export;
mod ids;
mod merge;
mod pacing;
mod pairwise;
mod ratings;
mod relevance;
mod review;
mod runs;
mod stored;
mod tools;
mod view;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::Connection;

pub use batches::{
    BatchCountsRow, BatchKeyRow, BatchPoll, BatchRow, BatchState, KeyOutcome, NewBatch,
};
pub use bench::{
    BenchColumns, BenchResultRow, CheckExportRow, CheckRow, FailureRow, Labels, MeasureRow,
    NO_TEMPLATE, Outcome, ResultKey, UnusableVerdictRow,
};
pub use calls::{NewCall, StoredCall};
pub use ci::{CaseRow, ModelOutcomes, SuiteRow};
pub use claims::Claim;
pub use datasets::DatasetFile;
pub use export::{
    Affinity, CallRefs, ColumnBatch, ColumnValues, ExportColumn, NOT_EXPORTED, RESULT_TABLES,
    ResultTable, RowSource, RunPartition, Snapshot,
};
pub use ids::{Part, uid};
pub(crate) use ids::{merged_run_uid, new_run_uid};
pub use merge::{InputAdded, MergeError, MergeReport, PlanMerged, merge};
pub use pacing::{BucketRow, PacingRow};
pub use pairwise::{AnswerPrints, AnswerRow, Shown, UnknownPairwise, VerdictRow, Winner};
pub use ratings::columns as rating_columns;
pub use ratings::{
    NewRating, RATED_TABLES, RatedBenchResult, Rating, RatingError, RatingField, Verdict,
};
pub use relevance::{PredictionRow, UnknownVariant, Variant};
pub use review::{
    NewGenerated, ParseStatus, ReviewColumns, ReviewNotes, ReviewRow, ScoreColumns, ScoreRow,
    UnknownStatus, UnparsableReviewRow,
};
pub use runs::{RunErrorRow, RunInfo, RunSelector, RunStatus, RunTally, UNPRICED_OPTION};
pub use stored::{UnknownInRow, UnknownName};
pub use tools::{ExportedToolCall, TOOL_CALL_COLUMNS, ToolCallRow};
pub use view::{
    COUNT_CASES, CallText, CandidateAnswer, CaseAnswer, CaseOrder, ColumnOutcomes, ConfusionCount,
    DiffItem, DiffModelRow, GridCell, GridColumn, GridCount, GridQuery, MAX_CASE_RESULTS,
    MAX_GRID_COLUMNS, PairCount, PredictionCell, Progress, ResultFilter, ReviewScoreCell,
    ReviewSheets, ReviewedSheet, RunFilter, Transcript, VerdictCell,
};
pub use writer::Writer;

refinery::embed_migrations!("migrations");

/// Errors from the database layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file could not be opened or created.
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The folder for the database could not be created.
    #[error("cannot create the folder {path} for the database: {source}")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A schema migration failed.
    #[error("cannot migrate the database schema: {0}")]
    Migrate(#[from] refinery::Error),
    /// A query failed.
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
    /// A row holds a name (a run's kind or status, a batch's API) this track does not know.
    #[error(transparent)]
    UnknownInRow(stored::UnknownInRow),
    /// A stored value had an unexpected type (a damaged or foreign database).
    #[error("unexpected value in the database: {0}")]
    Value(#[from] rusqlite::types::FromSqlError),
    /// A read-only database from an older track: it would need migrating.
    #[error(
        "{0} was made by an older track and needs its schema updated, but it cannot be written; run track once where it can"
    )]
    ReadOnlyOutdated(PathBuf),
    /// The file is a SQLite database of another application.
    #[error(
        "{0} is not a track database: it has tables and no track history; give another file with --db or TRACK_DB"
    )]
    Foreign(PathBuf),
    /// The writer's transaction did not commit: what it held is not stored.
    #[error("could not commit to the database: {0}")]
    Commit(String),
    /// The writer thread is gone (the process is ending).
    #[error("the database writer has stopped")]
    WriterGone,
    /// A call already waits in another batch: it would be paid twice.
    #[error("the call {key} already waits in batch {batch}; a call is never in two batches")]
    AlreadyBatched { key: String, batch: i64 },
    /// A call another run is sending live: a batch would pay for it a second time.
    #[error("the call {key} is being sent by run {owner}; a batch never takes a call a run claims")]
    ClaimedLive { key: String, owner: String },
    /// No batch has this id.
    #[error("no batch {0} in the database")]
    NoSuchBatch(i64),
    /// A batch is past the step asked of it.
    #[error("batch {id} is {state}: that step is done or can no longer be taken")]
    BatchState { id: i64, state: &'static str },
    /// A result for a key that is not pending in the batch.
    #[error(
        "the call {key} is not pending in batch {batch}: its result is stored already, or it is not one of the batch's"
    )]
    NotPending { key: String, batch: i64 },
    /// A value that cannot be exported as its column's type (a damaged or foreign database).
    #[error("cannot export {table}.{column}: {detail}")]
    ExportValue {
        table: String,
        column: String,
        detail: String,
    },
    /// A run selector named no run of the kind asked: the sentence that says so (`no bench run
    /// is recorded yet`, `run 3 is a review run, not a bench run`).
    #[error("{0}; `track runs` lists the runs")]
    NoSuchRun(String),
    /// A run id that names no run at all, with the latest runs (`run 12 (bench), run 11
    /// (review)`), or `None` when the database has none: see `Store::no_run`.
    #[error(
        "no run {id} in this database; {}",
        match latest {
            Some(latest) => format!("the latest are {latest}: `track runs` lists them all"),
            None => "it has no run yet: `track run FILE.yaml` records one".to_owned(),
        }
    )]
    RunNotFound { id: i64, latest: Option<String> },
    /// A rating that cannot be stored, and why.
    #[error(transparent)]
    Rating(ratings::RatingError),
}

impl From<rusqlite::Error> for StoreError {
    /// A query's error; an unknown name in a row ([`stored::in_row`]) is shown as it is.
    fn from(error: rusqlite::Error) -> Self {
        match error {
            rusqlite::Error::FromSqlConversionFailure(i, ty, source) => {
                match source.downcast::<stored::UnknownInRow>() {
                    Ok(unknown) => Self::UnknownInRow(*unknown),
                    Err(source) => {
                        Self::Sqlite(rusqlite::Error::FromSqlConversionFailure(i, ty, source))
                    }
                }
            }
            other => Self::Sqlite(other),
        }
    }
}

/// Result alias of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A connection to track's database. Not `Sync`: share it behind a mutex.
pub struct Store {
    conn: Connection,
    /// Opened as immutable (read-only, no locks): other connections must not be opened.
    immutable: bool,
    /// The checkpoint started after a bulk write, copying its pages from the log while the
    /// run goes on (see [`Store::checkpoint_after_bulk_write`]).
    checkpoint: Option<Checkpoint>,
}

impl Store {
    /// The connection, for tests elsewhere in the crate that check what was stored.
    #[cfg(test)]
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The database's file, for readers on connections and threads of their own; `None` for
    /// a database in memory, and for an immutable one (read on its one connection).
    fn path_for_readers(&self) -> Option<std::path::PathBuf> {
        self.conn
            .path()
            .filter(|p| !p.is_empty() && !self.immutable)
            .map(std::path::PathBuf::from)
    }

    /// Readies the connection for bulk writes (a cached run's thousands of results at once),
    /// for the rest of its life: SQLite copies the log into the database at a commit once it
    /// holds 1,000 pages, with two fsyncs, before the next part can be written. From now on
    /// it does so only from 256 MB (a long run's live writes keep the log bounded), and
    /// [`Store::checkpoint_after_bulk_write`] copies it on a thread of its own meanwhile.
    fn prepare_bulk_writes(&mut self) -> Result<()> {
        /// Pages of the log from which this connection checkpoints by itself.
        const LOG_PAGES: i64 = 65_536;
        if self.path_for_readers().is_some() {
            self.conn
                .pragma_update(None, "wal_autocheckpoint", LOG_PAGES)?;
        }
        Ok(())
    }

    /// Leaves the pages a bulk write just added to the log to a checkpoint on a thread of its
    /// own, which copies them into the database while the run goes on, unless the one before
    /// still runs. A database in memory, or an immutable one, has no log to copy.
    fn checkpoint_after_bulk_write(&mut self) {
        let Some(path) = self.path_for_readers() else {
            return;
        };
        let running = self
            .checkpoint
            .as_ref()
            .and_then(|c| c.0.as_ref())
            .is_some_and(|thread| !thread.is_finished());
        if !running {
            self.checkpoint = Some(copy_log_in_background(&path, false));
        }
    }

    /// Opens (creating if needed) the database at `path`, sets the pragmas and migrates it.
    /// Processes opening one database at once take turns (`<db>-lock`), so a new database is
    /// set up once; a database of another application is refused, never added to.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Folder {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let _turn = open_lock(path);
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        refuse_foreign(&conn, path)?;
        Self::setup(conn)
    }

    /// Opens `path` for reading only, for queries and exports where the database (or its
    /// folder) cannot be written: plainly, else as immutable (no locks, no `-shm` file; the
    /// file must not change meanwhile). Its schema must be current: it cannot be migrated.
    pub(crate) fn open_read_only(path: &Path) -> Result<Self> {
        use rusqlite::OpenFlags;
        let open_error = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let version = |conn: &Connection| -> rusqlite::Result<Option<i64>> {
            conn.query_row(
                "SELECT max(version) FROM refinery_schema_history",
                [],
                |r| r.get(0),
            )
        };
        let plain = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| version(&c).map(|_| c));
        let (conn, immutable) = match plain {
            Ok(conn) => (conn, false),
            Err(_) => {
                let uri = format!("file:{}?immutable=1", path.display());
                let conn = Connection::open_with_flags(
                    uri,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
                )
                .map_err(open_error)?;
                (conn, true)
            }
        };
        refuse_foreign(&conn, path)?;
        stable_plans(&conn)?;
        ids::register(&conn)?;
        let applied = version(&conn).map_err(open_error)?;
        let current = migrations::runner()
            .get_migrations()
            .iter()
            .map(|m| i64::from(m.version()))
            .max();
        if applied != current {
            return Err(StoreError::ReadOnlyOutdated(path.to_path_buf()));
        }
        Ok(Self {
            conn,
            immutable,
            checkpoint: None,
        })
    }

    /// Opens a private in-memory database, migrated; for tests and dry runs.
    pub(crate) fn open_in_memory() -> Result<Self> {
        Self::setup(Connection::open_in_memory()?)
    }

    fn setup(mut conn: Connection) -> Result<Self> {
        // WAL lets `track query` read while a run writes; NORMAL is durable across process
        // crashes (only an OS crash can lose the last commits); the busy timeout avoids
        // "database is locked" when two track processes share a file.
        conn.busy_timeout(Duration::from_secs(30))?;
        stable_plans(&conn)?;
        // A run uses about twenty statements over and over (claims, stored calls, results,
        // tallies, pacing): all of them stay compiled.
        conn.set_prepared_statement_cache_capacity(64);
        // A statement that writes many rows at once (64 results, say) keeps what it changed
        // in a statement journal until it ends; in memory, not in a temporary file: writing
        // that file was a tenth of the time of a cached run of 400,000 results.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        ids::register(&conn)?;
        if conn.query_row("PRAGMA page_count", [], |r| r.get::<_, i64>(0))? == 0 {
            // A new file is made without waiting for the disk: switching it to WAL took four
            // fsyncs (a rollback journal, its folder, the file) and its first WAL write two
            // more, 5 to 20 ms on a busy disk before a run could start. Nothing that was there
            // before can be lost; a crash of the OS before the file's first checkpoint leaves
            // it empty or without its schema, and the next open makes it again. From that
            // checkpoint on (synced as always) it is as durable as any other.
            conn.pragma_update(None, "synchronous", "OFF")?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "foreign_keys", "ON")?;
            create_schema(&mut conn)?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
        } else {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.pragma_update(None, "foreign_keys", "ON")?;
            migrations::runner().run(&mut conn)?;
        }
        Ok(Self {
            conn,
            immutable: false,
            checkpoint: None,
        })
    }
}

/// The schema the migrations make, for a new database (`schema.sql`).
const SCHEMA: &str = include_str!("schema.sql");

/// Gives a new database the schema of the last migration in one transaction, and records
/// every migration as applied. Running the 17 migrations took about 10 ms, most of it in
/// their ALTER TABLEs (each parses and checks the whole schema again); the result is the
/// same (a test compares them), and a database made before the last migration still goes
/// through the migrations it lacks.
fn create_schema(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(SCHEMA)?;
    tx.commit()?;
    migrations::runner()
        .set_target(refinery::Target::Fake)
        .run(conn)?;
    Ok(())
}

/// Plans statements once, whatever values are bound to them (SQLite's query planner
/// stability guarantee). Without it, SQLite re-prepares a statement each time a new value is
/// bound to a parameter its plan looked at: the lookups of a key's newest call (`WHERE
/// cache_key = ?1 ... ORDER BY id DESC LIMIT 1`) were compiled again at every claim, about
/// 100,000 instructions each, two per call sent. track runs no ANALYZE, so the values had
/// nothing to tell the planner anyway.
fn stable_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// Waits for this process's turn to set up `db` (pragmas, migrations): an exclusive lock on
/// `<db>-lock`, released when dropped. Without one (a filesystem without locks) processes go
/// on together, as before.
fn open_lock(db: &Path) -> Option<std::fs::File> {
    let mut name = db.as_os_str().to_owned();
    name.push("-lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(name))
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

/// Refuses a database that has tables but no track migration history: another application's.
fn refuse_foreign(conn: &Connection, path: &Path) -> Result<()> {
    let tables: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
        [],
        |r| r.get(0),
    )?;
    let ours: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'refinery_schema_history'",
        [],
        |r| r.get(0),
    )?;
    if tables > 0 && ours == 0 {
        return Err(StoreError::Foreign(path.to_path_buf()));
    }
    Ok(())
}

/// Sets the page cache of `conn` to `kib` KiB if it is smaller. Pages are taken as they are
/// read, so a small database never fills it.
fn enlarge_page_cache(conn: &Connection, kib: i64) -> rusqlite::Result<()> {
    let size: i64 = conn.query_row("PRAGMA cache_size", [], |r| r.get(0))?;
    // A positive size counts pages, a negative one KiB.
    let current_kib = if size < 0 { -size } else { size * 4 };
    if current_kib < kib {
        conn.pragma_update(None, "cache_size", -kib)?;
    }
    Ok(())
}

/// A checkpoint of a database's write-ahead log running on a thread of its own; dropping it
/// waits for it to end.
pub struct Checkpoint(Option<std::thread::JoinHandle<()>>);

impl Drop for Checkpoint {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// Copies what the write-ahead log of the database at `path` holds into the database and
/// empties the log, on a connection and thread of its own, while this process goes on (reads
/// included): the checkpoint SQLite makes when the last connection closes would otherwise be
/// made then, with its two fsyncs, after a run's report. Keep the returned handle until the
/// store's own connection closes (that one then finds the log empty). A failure only leaves
/// the checkpoint to that close.
pub(crate) fn checkpoint_in_background(path: &Path) -> Checkpoint {
    copy_log_in_background(path, true)
}

/// Copies what the write-ahead log of the database at `path` holds into the database on a
/// connection and thread of its own, never blocking this process's writer; then, when
/// `truncate`, empties the log (which waits for readers and blocks new writers meanwhile).
fn copy_log_in_background(path: &Path, truncate: bool) -> Checkpoint {
    let path = path.to_path_buf();
    let checkpoint = move || -> rusqlite::Result<()> {
        let mut conn = Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // The copy goes on beside readers (the report's); emptying the log waits for them to
        // leave it, looking again every millisecond (SQLite's own busy wait sleeps 1, 2, 5,
        // 10 ms... in turn), for 5 s at most.
        conn.busy_handler(Some(|attempts| {
            std::thread::sleep(Duration::from_millis(1));
            attempts < 5_000
        }))?;
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        if truncate {
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        }
        Ok(())
    };
    let thread = std::thread::Builder::new()
        .name("track-checkpoint".into())
        .spawn(move || {
            if let Err(e) = checkpoint() {
                tracing::debug!("the checkpoint after the run did not end: {e}");
            }
        });
    Checkpoint(thread.ok())
}

/// Locks the store; a panic elsewhere never poisons it for good (SQLite keeps it consistent).
pub(crate) fn lock(store: &Mutex<Store>) -> MutexGuard<'_, Store> {
    store
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Current UTC time as RFC 3339 with milliseconds, the format of every timestamp column.
pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_and_migrates_a_file_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/track.db");
        drop(Store::open(&path).unwrap());
        let store = Store::open(&path).unwrap();
        let mode: String = store
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    /// A schema object: type, name and SQL.
    type Object = (String, String, Option<String>);

    /// Every object of a database's schema, and its migration history.
    fn schema_of(conn: &Connection) -> (Vec<Object>, Vec<String>) {
        let mut objects = conn
            .prepare(
                "SELECT type, name, sql FROM sqlite_master
                 WHERE name != 'refinery_schema_history' ORDER BY type, name",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        objects.sort();
        let history = conn
            .prepare("SELECT version, name, checksum FROM refinery_schema_history ORDER BY version")
            .unwrap()
            .query_map([], |r| {
                Ok(format!(
                    "{} {} {}",
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        (objects, history)
    }

    #[test]
    fn the_schema_of_a_new_database_is_that_of_its_migrations() {
        let mut migrated = Connection::open_in_memory().unwrap();
        ids::register(&migrated).unwrap();
        migrations::runner().run(&mut migrated).unwrap();
        let mut created = Connection::open_in_memory().unwrap();
        ids::register(&created).unwrap();
        create_schema(&mut created).unwrap();
        let expected = schema_of(&migrated);
        if schema_of(&created) != expected {
            // What src/store/schema.sql should hold after its three lines of comment (without
            // the tables a virtual table makes for itself: quoted, as `CREATE TABLE 'x_data'`).
            let sql: Vec<String> = migrated
                .prepare(
                    "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL
                     AND name NOT LIKE 'sqlite_%' AND name != 'refinery_schema_history'
                     AND sql NOT LIKE 'CREATE TABLE ''%'
                     ORDER BY rowid",
                )
                .unwrap()
                .query_map([], |r| r.get::<_, String>(0))
                .unwrap()
                .map(|s| format!("{};", s.unwrap()))
                .collect();
            println!("{}", sql.join("\n"));
            panic!(
                "src/store/schema.sql is not what the migrations make: replace it (printed above)"
            );
        }
        // And a database made so opens as any other: nothing left to migrate.
        migrations::runner().run(&mut created).unwrap();
        assert_eq!(schema_of(&created), expected);
    }

    #[test]
    fn statements_are_not_compiled_again_for_new_values() {
        let mut store = Store::open_in_memory().unwrap();
        let lease = Duration::from_secs(60);
        for i in 0..10 {
            let key = format!("k{i}");
            store.claim(&key, "run", lease, false).unwrap();
            store.last_failure_attempts(&key).unwrap();
        }
        let statement = store
            .conn
            .prepare_cached(calls::LAST_OUTCOME_OF_KEY)
            .unwrap();
        assert_eq!(
            statement.get_status(rusqlite::StatementStatus::RePrepare),
            0,
            "re-prepared at each new key"
        );
    }

    #[test]
    fn a_database_can_be_read_without_writing_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("track.db");
        let store = Store::open(&path).unwrap();
        store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        drop(store);
        let read = Store::open_read_only(&path).unwrap();
        assert_eq!(read.list_runs().unwrap().len(), 1);
        assert!(
            read.create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
                .is_err(),
            "writes fail"
        );
    }

    #[test]
    fn another_applications_database_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sqlite");
        let other = Connection::open(&path).unwrap();
        other
            .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);")
            .unwrap();
        drop(other);
        let e = Store::open(&path).err().unwrap().to_string();
        assert!(e.contains("is not a track database"), "{e}");
        let check = Connection::open(&path).unwrap();
        let tables: i64 = check
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 1, "no track table was added");
    }

    #[test]
    fn processes_racing_to_open_a_new_database_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        // Without turns, one race in a few fails (`table blobs already exists`, `database is
        // locked`); ten rounds of eight make a regression show.
        for round in 0..10 {
            let path = dir.path().join(format!("new{round}.db"));
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let path = path.clone();
                    std::thread::spawn(move || Store::open(&path).map(drop))
                })
                .collect();
            for h in handles {
                h.join().unwrap().unwrap();
            }
        }
    }
}
