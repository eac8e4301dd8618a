//! Merging databases (`track merge OUT IN…`): the shards of a plan into one run, or any two
//! track databases into one (a teammate's cache shared).
//!
//! Every input is validated before OUT is touched: the shards of a plan must all be there,
//! once each, of one plan, and finished (`allow_partial` merges anyway and marks the merged
//! run `partial`). Then OUT is copied to a file beside it, each input is copied in by global
//! id (`uid`, migration V17) with `INSERT … SELECT` from the attached input, and the file
//! replaces OUT whole: a kill or an error mid-merge leaves OUT as it was (the file is this
//! merge's alone, so it is written without a journal; see `for_bulk_copy`, `SetAside`,
//! `calls` and `words` for how a large merge is made fast, and `plan` for the checks of the
//! shards). Copying by uid makes merging idempotent and order-independent. The shards of a
//! plan become one run (`merged_into` points each at it) that owns their rows, so statistics
//! are computed from the rows of the whole plan, never averaged over shards. Pacing buckets
//! and claims are this machine's: they are not copied.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::{RunStatus, Store, StoreError};
use crate::kind::ExperimentKind;

mod calls;
mod plan;
mod words;

use calls::{CallIds, CallKeys};
use plan::{Joined, ShardRun, ensure_merged_run, settle_merged_run, shard_runs, validate};

/// Why a merge was refused or failed; OUT is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{0} is given twice; give each database once")]
    GivenTwice(PathBuf),
    #[error("{0} is both the output and an input; name another output file")]
    OutIsInput(PathBuf),
    #[error("nothing to merge: give at least one database after OUT")]
    NoInputs,
    #[error("{0}: no such database file; give the files the shards' runs wrote (their --db)")]
    NoSuchFile(PathBuf),
    #[error(
        "{0} is not a track database (not SQLite at all); give the databases runs wrote (--db)"
    )]
    NotADatabase(PathBuf),
    #[error("{path}: {source}")]
    Input {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error(
        "shards of different plans: {0}; merge the shards of one plan at a time (a plan changes with its file, models or options)"
    )]
    DifferentPlans(String),
    #[error("the shards read {address} as different data: {described}; {fix}")]
    DataDiffers {
        address: String,
        described: String,
        fix: String,
    },
    #[error(
        "the shards of plan {plan} do not agree on their number: {counts}; merge the shards of one launch"
    )]
    Counts { plan: String, counts: String },
    #[error(
        "shard {index}/{count} of plan {plan} is given twice, by different runs: {first} and {second}; keep one of them"
    )]
    RepeatedShard {
        plan: String,
        index: u32,
        count: u32,
        first: String,
        second: String,
    },
    #[error(
        "missing shard{s} {missing} of plan {plan} ({count} shards); give {them} too, or --allow-partial to merge what is here and mark the result partial",
        s = if missing.contains(',') { "s" } else { "" },
        them = if missing.contains(',') { "them" } else { "it" }
    )]
    Missing {
        plan: String,
        count: u32,
        missing: String,
    },
    #[error(
        "shard {index}/{count} in {source_db} is {status}, not completed: run its command again to finish it, or --allow-partial to merge it as it is and mark the result partial"
    )]
    Unfinished {
        index: u32,
        count: u32,
        source_db: String,
        status: RunStatus,
    },
    #[error(
        "{0} is in use by another process (its write-ahead log is not empty); stop it, then merge again"
    )]
    OutInUse(PathBuf),
    #[error("another track merge is writing the same output ({0} is locked); wait for it to end")]
    Busy(PathBuf),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for MergeError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Store(StoreError::from(e))
    }
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MergeReport {
    /// Per input: its path and what it added (runs, calls, rows).
    pub inputs: Vec<InputAdded>,
    /// The plan whose shards were joined, if any.
    pub plan: Option<PlanMerged>,
}

/// What one input added to OUT.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputAdded {
    pub path: PathBuf,
    pub runs: u64,
    pub calls: u64,
    pub rows: u64,
}

/// The run a plan's shards became.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanMerged {
    pub plan_sha256: String,
    pub kind: ExperimentKind,
    pub run_id: i64,
    pub run_uid: String,
    pub shards: u32,
    /// The shards in OUT now.
    pub present: Vec<u32>,
    pub status: RunStatus,
}

/// One input, opened and read.
struct Input {
    path: PathBuf,
    /// Its shard runs to merge: the newest of each (plan, k).
    shards: Vec<ShardRun>,
    /// Older runs of the same shard (a run interrupted, then run again): copied with what
    /// they paid, but not their result rows, which the newest run's replace.
    superseded: Vec<ShardRun>,
    /// How many calls it holds.
    calls: u64,
}

/// Merges `inputs` into `out`, as the module says.
pub fn merge(
    out: &Path,
    inputs: &[PathBuf],
    allow_partial: bool,
) -> Result<MergeReport, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::NoInputs);
    }
    let out_real = std::fs::canonicalize(out).ok();
    let mut seen = BTreeSet::new();
    for path in inputs {
        let real = std::fs::canonicalize(path).map_err(|_| MergeError::NoSuchFile(path.clone()))?;
        if out_real.as_ref() == Some(&real) {
            return Err(MergeError::OutIsInput(path.clone()));
        }
        if !seen.insert(real) {
            return Err(MergeError::GivenTwice(path.clone()));
        }
    }
    let read = inputs
        .iter()
        .map(|path| read_input(path))
        .collect::<Result<Vec<_>, _>>()?;
    let existing = if out.exists() {
        let store = Store::open(out)?;
        Some(shard_runs(&store.conn)?.0)
    } else {
        None
    };
    let plan = validate(
        &read,
        existing.as_deref().unwrap_or_default(),
        allow_partial,
    )?;
    let staging = staging_path(out);
    // One merge into OUT at a time: they would share the staging file.
    let (turn, turn_path) = merge_lock(&staging)?;
    remove_database(&staging);
    let result = write(out, &staging, &read, plan.as_ref());
    if result.is_err() {
        remove_database(&staging);
    }
    // Removed while held: a merge waiting for it finds it gone and makes its own.
    let _ = std::fs::remove_file(turn_path);
    drop(turn);
    result
}

/// Opens an input (migrating it, as any command does) and reads its shard runs.
fn read_input(path: &Path) -> Result<Input, MergeError> {
    let input_error = |source| MergeError::Input {
        path: path.to_path_buf(),
        source,
    };
    if !path.is_file() {
        return Err(MergeError::NoSuchFile(path.to_path_buf()));
    }
    // Not opened (nor a lock file made beside it) unless it is a SQLite database.
    let mut magic = [0u8; 16];
    let is_sqlite = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && &magic == b"SQLite format 3\0";
    if !is_sqlite {
        return Err(MergeError::NotADatabase(path.to_path_buf()));
    }
    let store = Store::open(path).map_err(input_error)?;
    let (shards, superseded) = shard_runs(&store.conn).map_err(input_error)?;
    let calls = count(&store.conn, "calls").map_err(|e| input_error(StoreError::from(e)))?;
    Ok(Input {
        path: path.to_path_buf(),
        shards,
        superseded,
        calls,
    })
}

/// The file a merge is written into before it replaces OUT.
fn staging_path(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".merging");
    PathBuf::from(name)
}

/// Takes the lock of merges into one OUT (`<OUT>.merging-turn`), held until dropped.
fn merge_lock(staging: &Path) -> Result<(std::fs::File, PathBuf), MergeError> {
    let mut name = staging.as_os_str().to_owned();
    name.push("-turn");
    let path = PathBuf::from(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| MergeError::Io {
            path: path.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok((file, path)),
        Err(std::fs::TryLockError::WouldBlock) => Err(MergeError::Busy(path)),
        // A filesystem without locks: go on, as track does elsewhere.
        Err(std::fs::TryLockError::Error(_)) => Ok((file, path)),
    }
}

/// Removes a database file and its companions, ignoring what is not there.
fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal", "-lock"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// Copies OUT (if any) to `staging`, merges every input into it, and puts it in OUT's place.
fn write(
    out: &Path,
    staging: &Path,
    inputs: &[Input],
    joined: Option<&Joined>,
) -> Result<MergeReport, MergeError> {
    if out.exists() {
        let store = Store::open(out)?;
        store
            .conn
            .execute("VACUUM INTO ?1", [staging.to_string_lossy()])?;
    }
    let store = Store::open(staging)?;
    for_bulk_copy(&store.conn)?;
    let mut bulk = match bulk_worth(&store.conn, inputs)? {
        true => Some(Bulk::start(&store.conn, staging, inputs)?),
        false => None,
    };
    let mut report = MergeReport::default();
    for input in inputs {
        report
            .inputs
            .push(copy_input(&store.conn, input, joined, bulk.as_mut())?);
    }
    if let Some(bulk) = bulk {
        bulk.finish(&store.conn)?;
    }
    if let Some(joined) = joined {
        report.plan = Some(settle_merged_run(&store.conn, joined)?);
    }
    // One file, no write-ahead log: what replaces OUT is complete on its own.
    store.conn.pragma_update(None, "journal_mode", "DELETE")?;
    drop(store);
    replace_out(out, staging)?;
    Ok(report)
}

/// Puts the finished staging file in OUT's place: synced first, then renamed (refused while
/// another process holds OUT's write-ahead log).
fn replace_out(out: &Path, staging: &Path) -> Result<(), MergeError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MergeError::Io { path, source }
    };
    std::fs::File::open(staging)
        .and_then(|f| f.sync_all())
        .map_err(io(staging))?;
    let mut wal = out.as_os_str().to_owned();
    wal.push("-wal");
    let wal = PathBuf::from(wal);
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        return Err(MergeError::OutInUse(out.to_path_buf()));
    }
    for suffix in ["-wal", "-shm"] {
        let mut name = out.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
    std::fs::rename(staging, out).map_err(io(out))?;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    let mut lock = staging.as_os_str().to_owned();
    lock.push("-lock");
    let _ = std::fs::remove_file(PathBuf::from(lock));
    Ok(())
}

/// Sets the staging database up for copying in bulk. It is this merge's own file until it
/// replaces OUT whole (a failed or killed merge leaves OUT as it was and the file is removed),
/// so it needs no journal, no syncing but the one before it replaces OUT, and no transaction
/// around each input: with them, every statement that copies an input's rows kept the pages
/// it changed in a journal (2 to 3 times the time, and 230 MB of memory for 8 shards of
/// 125,000 results). Foreign keys are not checked again: every row copied comes from a track
/// database that checked them, and its references are mapped to rows copied before it (blobs
/// before calls, runs and calls before the rows that name them).
fn for_bulk_copy(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_mode", "OFF")?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // The sorting of indexes made again can outgrow memory: in temporary files, up to 8 MB
    // of their pages in memory, with no journal either.
    conn.pragma_update(None, "temp_store", "FILE")?;
    conn.execute_batch(
        "CREATE TEMP TABLE new_calls (id INTEGER PRIMARY KEY, dst INTEGER);
         CREATE TEMP TABLE borrowed_requests (sha256 TEXT PRIMARY KEY, content BLOB);",
    )?;
    conn.pragma_update(Some("temp"), "cache_size", TEMP_CACHE_KIB)?;
    conn.pragma_update(Some("temp"), "journal_mode", "OFF")
}

/// The page cache of the temporary database in bulk, in KiB as `PRAGMA cache_size` takes it.
const TEMP_CACHE_KIB: i64 = -8_000;

/// Whether the inputs bring at least as many calls as OUT holds: then the indexes a copy
/// would update at random places are set aside and made again afterwards (see [`SetAside`]);
/// a few calls merged into a large OUT keep them.
fn bulk_worth(conn: &Connection, inputs: &[Input]) -> rusqlite::Result<bool> {
    let held = count(conn, "calls")?;
    let coming = inputs.iter().map(|i| i.calls).sum::<u64>();
    Ok(coming >= held && CallKeys::fits(conn, coming)?)
}

/// A merge in bulk (see [`bulk_worth`]): OUT's indexes set aside, its calls held in memory,
/// and the words of the calls copied indexed input by input. Without it, the calls are found
/// through OUT's indexes and their words indexed by the trigger, call by call.
struct Bulk {
    set_aside: SetAside,
    /// OUT's calls by their uid (see [`calls`]).
    calls: CallKeys,
    words: Words,
}

/// How the words of the calls copied in bulk are indexed for search (see [`words`]).
enum Words {
    /// Input after input into OUT's index; OUT's blobs by their key, for the requests an
    /// input lacks.
    InPlace(words::BlobKeys),
    /// On a thread of its own, into an index that replaces OUT's, empty, at the end.
    Beside(words::Indexer),
}

impl Bulk {
    /// Sets OUT's indexes aside and holds its calls, for `inputs`.
    fn start(conn: &Connection, staging: &Path, inputs: &[Input]) -> Result<Self, MergeError> {
        let set_aside = SetAside::take(conn)?;
        let words = match words::Indexer::fits(conn)? {
            true => Words::Beside(words::Indexer::start(conn, staging)?),
            false => Words::InPlace(words::BlobKeys::load(conn)?),
        };
        let coming = inputs.iter().map(|i| i.calls).sum();
        let calls = CallKeys::load(conn, coming)?;
        Ok(Self {
            set_aside,
            calls,
            words,
        })
    }

    /// Makes the indexes again while the thread indexing words (if any) ends its last input;
    /// then it writes its index into OUT, idle.
    fn finish(self, conn: &Connection) -> Result<(), MergeError> {
        drop(self.calls);
        self.set_aside.restore(conn)?;
        tracing::debug!("indexes made again");
        if let Words::Beside(indexer) = self.words {
            indexer.finish()?;
            tracing::debug!("words indexed");
        }
        Ok(())
    }
}

/// The indexes of `calls` and `bench_rows` other than their natural keys, and the trigger
/// that indexes each stored call's words, set aside while inputs are copied in bulk and made
/// again from their own SQL afterwards. Their keys (uids, hashes) come in no order: each
/// copied row updated them at a random place, a read and a write of a page each once they
/// outgrew the page cache (most of the time of a merge of 8 shards of 125,000 results).
/// Made again, each is sorted once, on two threads (`PRAGMA threads`: 2.9 s instead of 4.3 s
/// for 8 shards). The index of results by call is kept: the calls a result names are mostly
/// the ones copied just before it, appended, so it grows at its end.
/// Meanwhile calls are found by a key of their uid held in memory (see [`calls`]), and words
/// are indexed per input in call order (see [`words`]).
/// A result's uid names its run and its key, which the table's own unique key holds: a
/// result merged twice is still copied once, and the unique index made again would fail the
/// merge (OUT untouched) if that ever did not hold.
struct SetAside {
    /// The `CREATE` statements of what was dropped, in the order to run them.
    sql: Vec<String>,
}

impl SetAside {
    /// Drops them.
    fn take(conn: &Connection) -> rusqlite::Result<Self> {
        let mut stmt = conn.prepare(
            "SELECT type, name, sql FROM main.sqlite_master
             WHERE (type = 'index' AND tbl_name IN ('calls', 'bench_rows') AND sql IS NOT NULL
                    AND name != 'bench_results_by_call')
                OR (type = 'trigger' AND name = 'call_text_insert')
             ORDER BY type = 'trigger', name",
        )?;
        let dropped: Vec<(String, String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (kind, name, _) in &dropped {
            conn.execute_batch(&format!("DROP {} main.\"{name}\"", kind.to_uppercase()))?;
        }
        Ok(Self {
            sql: dropped.into_iter().map(|(_, _, sql)| sql).collect(),
        })
    }

    /// Makes them again.
    fn restore(self, conn: &Connection) -> rusqlite::Result<()> {
        conn.pragma_update(None, "threads", 2)?;
        self.sql.iter().try_for_each(|sql| conn.execute_batch(sql))
    }
}

/// Counts the rows of `table` in the main database.
fn count(conn: &Connection, table: &str) -> rusqlite::Result<u64> {
    conn.query_row(&format!("SELECT count(*) FROM main.{table}"), [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n as u64)
}

/// The page cache of an attached input, in KiB as `PRAGMA cache_size` takes it (negative).
const INPUT_CACHE_KIB: i64 = -20_000;

/// The result tables, copied by uid with their run and calls mapped.
const ROW_TABLES: &[&str] = &[
    "bench_rows",
    "generated_datasheets",
    "reviews",
    "relevance_predictions",
    "pairwise_answers",
    "pairwise_verdicts",
    "run_errors",
];

/// Copies one input into the staging database.
fn copy_input(
    conn: &Connection,
    input: &Input,
    joined: Option<&Joined>,
    bulk: Option<&mut Bulk>,
) -> Result<InputAdded, MergeError> {
    conn.execute("ATTACH DATABASE ?1 AS src", [input.path.to_string_lossy()])?;
    if let Some(Bulk {
        words: Words::InPlace(_),
        ..
    }) = bulk
    {
        // The input's blobs are read at random (each new call's request and answer, for its
        // words): kept in memory once read, up to 20 MB (all of a shard of 125,000 short
        // answers), rather than read from the file again at each call.
        conn.pragma_update(Some("src"), "cache_size", INPUT_CACHE_KIB)?;
    }
    let result = copy_attached(conn, input, joined, bulk);
    let detached = conn.execute("DETACH DATABASE src", []);
    let added = result?;
    detached?;
    Ok(added)
}

fn copy_attached(
    conn: &Connection,
    input: &Input,
    joined: Option<&Joined>,
    bulk: Option<&mut Bulk>,
) -> Result<InputAdded, MergeError> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS skip_runs (id INTEGER PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS joined_runs (id INTEGER PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS attempt_runs (id INTEGER PRIMARY KEY);
         DELETE FROM skip_runs; DELETE FROM joined_runs; DELETE FROM attempt_runs;",
    )?;
    for map in ["run_map", "batch_map", "call_map", "review_map"] {
        conn.execute_batch(&format!(
            "CREATE TEMP TABLE IF NOT EXISTS {map} (src INTEGER PRIMARY KEY, dst INTEGER);
             DELETE FROM {map};"
        ))?;
    }
    for run in &input.superseded {
        conn.execute("INSERT OR IGNORE INTO skip_runs (id) VALUES (?1)", [run.id])?;
    }
    let merged_id = match joined {
        Some(j) => {
            for shard in input.shards.iter().filter(|s| s.plan == j.plan) {
                conn.execute(
                    "INSERT OR IGNORE INTO joined_runs (id) VALUES (?1)",
                    [shard.id],
                )?;
            }
            for attempt in input.superseded.iter().filter(|s| s.plan == j.plan) {
                conn.execute(
                    "INSERT OR IGNORE INTO attempt_runs (id) VALUES (?1)",
                    [attempt.id],
                )?;
            }
            match input.shards.iter().find(|s| s.plan == j.plan) {
                Some(first) => Some(ensure_merged_run(conn, first, j)?),
                None => None,
            }
        }
        None => None,
    };
    // The merged run is not the input's: counted from here.
    let before_runs = count(conn, "runs")?;
    conn.execute(&copy_sql(conn, "blobs", &[], "")?, [])?;
    tracing::debug!(input = %input.path.display(), "blobs copied");
    copy_runs(conn, merged_id)?;
    let (calls, ids) = copy_calls(conn, &input.path, bulk)?;
    tracing::debug!(calls, "calls copied");
    let dropped = match input.superseded.is_empty() {
        true => 0,
        false => drop_superseded_rows(conn)?,
    };
    let rows = copy_rows(conn, &ids)?;
    tracing::debug!(rows, "rows copied");
    Ok(InputAdded {
        path: input.path.clone(),
        runs: count(conn, "runs")? - before_runs,
        calls,
        rows: rows - dropped,
    })
}

/// The expression of `column` of a source row mapped to OUT's id through `map`.
fn remap(map: &str, column: &str) -> String {
    format!("(SELECT dst FROM temp.{map} WHERE src = s.{column})")
}

/// Fills `map` with each source row of `table` and OUT's row of the same `key`.
fn build_map(tx: &Connection, map: &str, table: &str, key: &str) -> rusqlite::Result<()> {
    tx.execute_batch(&format!(
        "INSERT INTO temp.{map} (src, dst)
         SELECT s.id, m.id FROM src.{table} s JOIN main.{table} m ON m.{key} = s.{key};"
    ))
}

/// Copies the input's runs by uid, superseded shard runs too (what they paid stays in OUT),
/// and maps them: the shards of the joined plan to its merged run (`merged_id`), the others
/// to their copies. A shard, and each older attempt of it, points at the run it was merged
/// into; one merged elsewhere keeps pointing at its own.
fn copy_runs(tx: &Connection, merged_id: Option<i64>) -> rusqlite::Result<()> {
    tx.execute_batch(&copy_sql(
        tx,
        "runs",
        &[("merged_into", "NULL".into())],
        "",
    )?)?;
    tx.execute(
        "INSERT INTO temp.run_map (src, dst)
         SELECT s.id, CASE WHEN s.id IN (SELECT id FROM temp.joined_runs) THEN ?1 ELSE m.id END
         FROM src.runs s JOIN main.runs m ON m.uid = s.uid",
        [merged_id],
    )?;
    tx.execute(
        "UPDATE main.runs SET merged_into = ?1
         WHERE uid IN (SELECT uid FROM src.runs WHERE id IN (SELECT id FROM temp.joined_runs)
                                                  OR id IN (SELECT id FROM temp.attempt_runs))",
        [merged_id],
    )?;
    tx.execute_batch(
        "UPDATE main.runs SET merged_into = (
             SELECT mp.id FROM src.runs s JOIN src.runs sp ON sp.id = s.merged_into
             JOIN main.runs mp ON mp.uid = sp.uid WHERE s.uid = main.runs.uid)
         WHERE merged_into IS NULL AND uid IN (
             SELECT s.uid FROM src.runs s WHERE s.merged_into IS NOT NULL);",
    )
}

/// Copies batches (by tag), calls (by uid: the cache) and the calls of each batch; returns
/// how many calls were new, and where the input's calls are in OUT. Calls are looked up by
/// uid in uid order, so that OUT's index of uids is read in order, once (in bulk, in memory:
/// see [`calls`]); the new ones are copied in the input's order, which is their order in OUT,
/// and their words indexed.
fn copy_calls(
    tx: &Connection,
    input: &Path,
    bulk: Option<&mut Bulk>,
) -> Result<(u64, CallIds), MergeError> {
    let run = ("run_id", remap("run_map", "run_id"));
    tx.execute(&copy_sql(tx, "batches", &[run], "")?, [])?;
    build_map(tx, "batch_map", "batches", "tag")?;
    let before: i64 = tx.query_row("SELECT coalesce(max(id), 0) FROM main.calls", [], |r| {
        r.get(0)
    })?;
    let batch = ("batch", remap("batch_map", "batch"));
    let (added, ids) = match bulk {
        Some(bulk) => {
            let copied = calls::copy_in_bulk(tx, before, batch.clone(), &mut bulk.calls)?;
            let added = copied.new.len();
            match &mut bulk.words {
                Words::InPlace(blobs) => {
                    words::index_in_place(tx, before, blobs)?;
                    tracing::debug!("words indexed");
                }
                Words::Beside(indexer) => {
                    indexer.send(tx, input, copied.new)?;
                    tracing::debug!("words handed over");
                }
            }
            (added, copied.ids)
        }
        None => (copy_calls_keyed(tx, &batch)?, CallIds::Mapped),
    };
    let call = ("call_id", ids.of("call_id"));
    tx.execute(&copy_sql(tx, "batch_calls", &[batch, call], "")?, [])?;
    Ok((added as u64, ids))
}

/// Copies the attached input's new calls with OUT's indexes of calls in place (their words
/// indexed by the trigger) and maps every call in `temp.call_map`; returns how many were new.
fn copy_calls_keyed(tx: &Connection, batch: &(&str, String)) -> rusqlite::Result<usize> {
    tx.execute_batch(
        "DELETE FROM temp.new_calls;
         INSERT INTO temp.new_calls (id) SELECT s.id FROM src.calls s
         WHERE NOT EXISTS (SELECT 1 FROM main.calls m WHERE m.uid = s.uid) ORDER BY s.uid;",
    )?;
    let added = tx.execute(
        &copy_sql(
            tx,
            "calls",
            std::slice::from_ref(batch),
            "WHERE s.id IN (SELECT id FROM temp.new_calls) ORDER BY s.id",
        )?,
        [],
    )?;
    tx.execute_batch(
        "INSERT INTO temp.call_map (src, dst)
         SELECT s.id, m.id FROM src.calls s JOIN main.calls m ON m.uid = s.uid
         ORDER BY s.uid;",
    )?;
    Ok(added)
}

/// Removes from OUT the result rows of the input's superseded runs: an older attempt of a
/// shard merged before the shard was run again (its newest run's rows replace them).
fn drop_superseded_rows(tx: &Connection) -> rusqlite::Result<u64> {
    let of = |table: &str| {
        format!(
            "SELECT uid FROM src.{table}
             WHERE run_id IN (SELECT id FROM temp.skip_runs) AND uid IS NOT NULL"
        )
    };
    tx.execute_batch(&format!(
        "DELETE FROM main.review_scores WHERE review_id IN
             (SELECT id FROM main.reviews WHERE uid IN ({}));",
        of("reviews")
    ))?;
    // A result's checks are keyed by its id, its tool calls by its key.
    tx.execute_batch(&format!(
        "DELETE FROM main.bench_check_rows
         WHERE result_id IN (SELECT id FROM main.bench_rows WHERE uid IN ({}));
         DELETE FROM main.tool_calls
         WHERE (run_id, model_index, template_index, prompt_index, repeat_index) IN (
             SELECT run_id, model_index, template_index, prompt_index, repeat_index
             FROM main.bench_rows WHERE uid IN ({0}));",
        of("bench_rows")
    ))?;
    let mut dropped = 0;
    for table in ROW_TABLES {
        dropped += tx.execute(
            &format!("DELETE FROM main.{table} WHERE uid IN ({})", of(table)),
            [],
        )?;
    }
    Ok(dropped as u64)
}

/// Copies every kind's rows of the runs copied (by uid) but superseded ones, their run and
/// calls mapped; returns how many rows of [`ROW_TABLES`] were new.
fn copy_rows(tx: &Connection, calls: &CallIds) -> rusqlite::Result<u64> {
    let run = ("run_id", remap("run_map", "run_id"));
    let call = ("call_id", calls.of("call_id"));
    let of_runs = "WHERE s.run_id IN (SELECT src FROM temp.run_map)
                   AND s.run_id NOT IN (SELECT id FROM temp.skip_runs)";
    let mut added = copy_bench_rows(tx, calls)?;
    // The names of each run's models and cases (the rows hold their indices).
    for table in ["bench_models", "bench_labels"] {
        tx.execute_batch(&copy_sql(tx, table, std::slice::from_ref(&run), of_runs)?)?;
    }
    // Each check of a result that has several, by the id of its result here (found by its
    // run and key), and each tool call of a tool loop, by the result's key and its index.
    // Driven from the checks (none in most inputs), not from the input's results.
    let checked: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM src.bench_check_rows)",
        [],
        |r| r.get(0),
    )?;
    if checked {
        tx.execute_batch(&format!(
            "INSERT OR IGNORE INTO main.bench_check_rows (result_id, check_index, method,
                 expected, status, score, weight, reason)
             SELECT m.id, k.check_index, k.method, k.expected, k.status, k.score, k.weight,
                 k.reason
             FROM src.bench_check_rows k
             CROSS JOIN src.bench_rows s ON s.id = k.result_id
             CROSS JOIN temp.run_map r ON r.src = s.run_id
             CROSS JOIN main.bench_rows m ON m.run_id = r.dst AND m.model_index = s.model_index
                 AND m.template_index = s.template_index AND m.prompt_index = s.prompt_index
                 AND m.repeat_index = s.repeat_index
             {of_runs}"
        ))?;
    }
    tx.execute_batch(&copy_sql(
        tx,
        "tool_calls",
        std::slice::from_ref(&run),
        of_runs,
    )?)?;
    // A datasheet written by another tool has no run.
    let generated = "WHERE s.run_id IS NULL OR (s.run_id IN (SELECT src FROM temp.run_map)
                     AND s.run_id NOT IN (SELECT id FROM temp.skip_runs))";
    let pair = [run.clone(), call];
    added += tx.execute(&copy_sql(tx, "generated_datasheets", &pair, generated)?, [])?;
    for table in [
        "reviews",
        "relevance_predictions",
        "pairwise_answers",
        "pairwise_verdicts",
        "run_errors",
    ] {
        added += tx.execute(&copy_sql(tx, table, &pair, of_runs)?, [])?;
    }
    // Human ratings, by uid: each copied once, whatever the merges.
    tx.execute_batch(&copy_sql(
        tx,
        "ratings",
        std::slice::from_ref(&run),
        of_runs,
    )?)?;
    build_map(tx, "review_map", "reviews", "uid")?;
    let review = ("review_id", remap("review_map", "review_id"));
    let reviewed = "WHERE s.review_id IN (SELECT src FROM temp.review_map)";
    tx.execute(&copy_sql(tx, "review_scores", &[review], reviewed)?, [])?;
    Ok(added as u64)
}

/// Copies the benchmark results of the runs copied but superseded ones, by joins (the most
/// rows of any kind: a subquery for each row's run and calls took a fifth of the time).
fn copy_bench_rows(tx: &Connection, calls: &CallIds) -> rusqlite::Result<usize> {
    let (call_join, call) = calls.joined("call_id", "mc");
    let (judge_join, judge) = calls.joined("judge_call_id", "mj");
    let mapped = [
        ("run_id", "r.dst".to_owned()),
        ("call_id", call),
        ("judge_call_id", judge),
    ];
    let filter = format!(
        "CROSS JOIN temp.run_map r ON r.src = s.run_id{call_join}{judge_join}
         WHERE s.run_id NOT IN (SELECT id FROM temp.skip_runs)"
    );
    tx.execute(&copy_sql(tx, "bench_rows", &mapped, &filter)?, [])
}

/// `INSERT OR IGNORE INTO main.T (cols) SELECT exprs FROM src.T s filter`: every column but
/// a rowid `id`, each copied as is unless `mapped` gives its expression.
fn copy_sql(
    conn: &Connection,
    table: &str,
    mapped: &[(&str, String)],
    filter: &str,
) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(&format!("PRAGMA main.table_info({table})"))?;
    let columns: Vec<(String, bool)> = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(1)?, r.get::<_, i64>(5)? > 0))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let rowid_id = columns.iter().any(|(name, pk)| name == "id" && *pk)
        && columns.iter().filter(|(_, pk)| *pk).count() == 1;
    let kept: Vec<&str> = columns
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| {
            !(rowid_id && *name == "id") || mapped.iter().any(|(column, _)| column == name)
        })
        .collect();
    let exprs: Vec<String> = kept
        .iter()
        .map(|name| {
            mapped
                .iter()
                .find(|(column, _)| column == name)
                .map_or_else(|| format!("s.{name}"), |(_, expr)| expr.clone())
        })
        .collect();
    Ok(format!(
        "INSERT OR IGNORE INTO main.{table} ({}) SELECT {} FROM src.{table} s {filter}",
        kept.join(", "),
        exprs.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BenchResultRow, CheckRow, NewCall, Outcome, RunTally};
    use rusqlite::params;

    const PLAN: &str = "plan-of-the-merge-tests";

    /// A finished (or not) shard `k`/`n` of `plan` in its own database at `path`: `results`
    /// benchmark results, each with an answered call of its own (its text unique to the shard
    /// and result) and every third with a judge's call too and two checks. `padding` calls
    /// stored first make the shard's call ids differ from every other database's.
    #[allow(
        clippy::too_many_lines,
        reason = "one shard database written whole, as the other test builders"
    )]
    fn shard(path: &Path, plan: &str, (k, n): (u32, u32), results: u32, padding: u32) {
        let mut store = Store::open(path).unwrap();
        let run = store
            .create_run(
                ExperimentKind::Bench,
                Some("sharded.yaml"),
                Some("spec"),
                "{}",
            )
            .unwrap();
        store.set_run_plan(run, plan, Some((k, n))).unwrap();
        let mut call = |what: &str, answer: &str| {
            let request = format!(r#"{{"messages":[{{"text":"{what}"}}]}}"#);
            let key = crate::hash::sha256_hex(request.as_bytes());
            store
                .insert_call(&NewCall {
                    cache_key: &key,
                    canonical_request: request.clone().into(),
                    provider: "openai",
                    model: "m",
                    outcome: Ok(answer),
                    finish_reason: None,
                    input_tokens: Some(3),
                    output_tokens: Some(4),
                    tokens_estimated: false,
                    latency_ms: 1.0,
                    attempts: 1,
                    input_price_per_mtok: Some(0.0),
                    output_price_per_mtok: Some(0.0),
                    cost_usd: Some(0.0),
                    http_status: None,
                })
                .unwrap()
        };
        for p in 0..padding {
            call(&format!("padding {p} of {path:?}"), &format!("pad{p}"));
        }
        let mut rows = Vec::new();
        for i in 0..results {
            let prompt = i * n + k;
            let answer = call(
                &format!("asked{prompt}word"),
                &format!("answer{prompt}word shard{k}of{n}"),
            );
            let judge = (i % 3 == 0).then(|| call(&format!("judge {prompt}"), "judged"));
            rows.push(BenchResultRow {
                run_id: run,
                model_index: 0,
                prompt_index: prompt,
                repeat_index: 0,
                model_ref: "openai:m".into(),
                provider: "openai".into(),
                model_id: "m".into(),
                prompt_name: format!("prompt_{prompt}"),
                method: "exact".into(),
                call_id: Some(answer),
                cache_hit: false,
                outcome: Outcome::of_test(prompt % 2 == 0),
                detail: None,
                latency_ms: Some(f64::from(prompt)),
                input_tokens: Some(3),
                output_tokens: Some(4),
                tokens_estimated: false,
                cost_usd: Some(0.0),
                paid_usd: Some(0.0),
                energy_wh: None,
                energy_wh_min: None,
                energy_wh_max: None,
                energy_method: None,
                judge_call_id: judge,
                judge_score: judge.map(|_| 4),
                judge_cost_usd: None,
                expected: Some(String::new()),
                template_index: 0,
                template_name: None,
                score: None,
                checks: match judge {
                    Some(_) => ["contains", "judge"]
                        .iter()
                        .map(|method| CheckRow {
                            method: (*method).into(),
                            expected: Some(format!("{method} {prompt}")),
                            outcome: Outcome::Passed,
                            score: Some(1.0),
                            weight: 1.0,
                            reason: None,
                        })
                        .collect(),
                    None => Vec::new(),
                },
            });
        }
        store.insert_bench_results(&rows).unwrap();
        let tally = RunTally {
            planned_calls: u64::from(results),
            calls: u64::from(results),
            ..RunTally::default()
        };
        store.update_run_tally(run, &tally).unwrap();
        store.finish_run(run, RunStatus::Completed).unwrap();
    }

    /// Each result of a database by its uid, with its calls' uids (answer and judge) and its
    /// values, and the uids of the calls the words of its answer, and of its request, find.
    fn results(path: &Path) -> BTreeSet<Vec<Option<String>>> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT r.uid, c.uid, j.uid, r.prompt_index, r.status,
                     r.latency_ms, r.judge_score,
                     (SELECT group_concat(x.uid) FROM call_text t JOIN calls x ON x.id = t.rowid
                      WHERE call_text MATCH 'answer' || r.prompt_index || 'word'),
                     (SELECT group_concat(x.uid) FROM call_text t JOIN calls x ON x.id = t.rowid
                      WHERE call_text MATCH 'request : asked' || r.prompt_index || 'word')
                 FROM bench_results r
                 LEFT JOIN calls c ON c.id = r.call_id LEFT JOIN calls j ON j.id = r.judge_call_id",
            )
            .unwrap();
        stmt.query_map([], |r| {
            (0..9)
                .map(|i| {
                    let value: rusqlite::types::Value = r.get(i)?;
                    Ok(match value {
                        rusqlite::types::Value::Null => None,
                        other => Some(format!("{other:?}")),
                    })
                })
                .collect()
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    /// The checks of a database's results: result uid, check index, method, expected.
    fn checks(path: &Path) -> BTreeSet<(String, i64, String, String)> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT r.uid, k.check_index, k.method, k.expected FROM bench_checks k
                 JOIN bench_results r ON r.run_id = k.run_id AND r.model_index = k.model_index
                     AND r.template_index = k.template_index AND r.prompt_index = k.prompt_index
                     AND r.repeat_index = k.repeat_index",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// Every row of every table of a database (but the migrations' history), in rowid order,
    /// as text: two databases of equal dumps hold the same.
    fn dump(path: &Path) -> Vec<String> {
        let conn = Connection::open(path).unwrap();
        let tables: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table'
                 AND name NOT IN ('refinery_schema_history') AND name NOT LIKE 'sqlite_%'
                 AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let mut out = Vec::new();
        for table in tables {
            let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
            let width = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    (0..width)
                        .map(|i| {
                            r.get::<_, rusqlite::types::Value>(i)
                                .map(|v| format!("{v:?}"))
                        })
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .unwrap();
            for row in rows {
                out.push(format!("{table}: {}", row.unwrap().join(" | ")));
            }
        }
        out
    }

    /// A folder of its own, and in it the paths of two inputs and of OUT.
    fn two_inputs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let (a, b, out) = (path("a.db"), path("b.db"), path("out.db"));
        (dir, a, b, out)
    }

    fn count_in(path: &Path, sql: &str) -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn the_shards_rows_are_copied_to_the_merged_run_with_their_own_calls() {
        let (_dir, a, b, out) = two_inputs();
        // Call ids overlap between the shards, shifted by the padding: copied as they are, a
        // result would point at another's call.
        shard(&a, PLAN, (0, 2), 30, 0);
        shard(&b, PLAN, (1, 2), 20, 7);
        let report = merge(&out, &[a.clone(), b.clone()], false).unwrap();
        let mut expected = results(&a);
        expected.extend(results(&b));
        // Each result in OUT: of the merged run, its calls the same (by uid) as in its shard,
        // and its answer found by its words (the search index follows the copied calls).
        let merged = results(&out);
        assert_eq!(merged.len(), 50);
        assert_eq!(merged, expected);
        let plan = report.plan.unwrap();
        assert_eq!(plan.status, RunStatus::Completed);
        assert_eq!(plan.present, vec![0, 1]);
        let owned = count_in(
            &out,
            &format!(
                "SELECT count(*) FROM bench_results WHERE run_id = {}",
                plan.run_id
            ),
        );
        assert_eq!(owned, 50);
        let mut expected_checks = checks(&a);
        expected_checks.extend(checks(&b));
        assert_eq!(checks(&out), expected_checks);
        assert_eq!(expected_checks.len(), 2 * (10 + 7));
        // 30 + 10 judge calls, 20 + 7 + 7 padding.
        assert_eq!(report.inputs[0].calls, 40);
        assert_eq!(report.inputs[1].calls, 34);
        assert_eq!(report.inputs[0].rows, 30);
        assert_eq!(report.inputs[1].rows, 20);
        assert_eq!(count_in(&out, "SELECT count(*) FROM calls"), 74);
    }

    #[test]
    fn calls_of_an_input_whose_ids_have_gaps_are_each_found_by_their_uid() {
        let (_dir, a, b, out) = two_inputs();
        shard(&a, PLAN, (0, 2), 10, 0);
        shard(&b, PLAN, (1, 2), 10, 4);
        // Two of b's padding calls removed: its ids are no longer one run without a gap, so
        // its calls cannot be shifted as a's are.
        Connection::open(&b)
            .unwrap()
            .execute_batch("DELETE FROM calls WHERE id IN (2, 3)")
            .unwrap();
        let report = merge(&out, &[a.clone(), b.clone()], false).unwrap();
        let mut expected = results(&a);
        expected.extend(results(&b));
        assert_eq!(results(&out), expected);
        assert_eq!(report.inputs[1].calls, 10 + 4 + 2);
        // The words of a padding call after the gap are found under its id here.
        let padded: String = Connection::open(&out)
            .unwrap()
            .query_row(
                "SELECT c.uid FROM call_text t JOIN calls c ON c.id = t.rowid
                 WHERE call_text MATCH 'answer : pad3'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let in_b: String = Connection::open(&b)
            .unwrap()
            .query_row("SELECT uid FROM calls WHERE id = 4", [], |r| r.get(0))
            .unwrap();
        assert_eq!(padded, in_b);
    }

    #[test]
    fn a_plan_merged_again_changes_nothing_and_adds_nothing() {
        let (_dir, a, b, out) = two_inputs();
        shard(&a, PLAN, (0, 2), 12, 2);
        shard(&b, PLAN, (1, 2), 9, 0);
        merge(&out, &[a.clone(), b.clone()], false).unwrap();
        let once = dump(&out);
        // In another order, and each shard alone: the same database.
        let again = merge(&out, &[b.clone(), a.clone()], false).unwrap();
        merge(&out, &[a], false).unwrap();
        assert_eq!(dump(&out), once);
        for input in &again.inputs {
            assert_eq!(
                (input.runs, input.calls, input.rows),
                (0, 0, 0),
                "{input:?}"
            );
        }
        assert_eq!(again.plan.unwrap().status, RunStatus::Completed);
    }

    #[test]
    fn a_shard_run_twice_by_different_runs_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let (a, a2, b, out) = (
            dir.path().join("a.db"),
            dir.path().join("a2.db"),
            dir.path().join("b.db"),
            dir.path().join("out.db"),
        );
        shard(&a, PLAN, (0, 2), 3, 0);
        shard(&a2, PLAN, (0, 2), 3, 0);
        shard(&b, PLAN, (1, 2), 3, 0);
        let error = merge(&out, &[a, a2, b], false).unwrap_err();
        assert!(
            matches!(
                &error,
                MergeError::RepeatedShard {
                    index: 0,
                    count: 2,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("shard 0/2 of plan plan-of-the-"),
            "{error}"
        );
        assert!(!out.exists());
    }

    #[test]
    fn a_shard_of_another_plan_is_refused_with_its_message_and_out_is_not_made() {
        let (_dir, a, b, out) = two_inputs();
        shard(&a, PLAN, (0, 2), 3, 0);
        shard(&b, "another-plan-entirely", (1, 2), 3, 0);
        let error = merge(&out, &[a.clone(), b.clone()], false).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "shards of different plans: {} has plan plan-of-the-, {} has plan another-plan; \
                 merge the shards of one plan at a time (a plan changes with its file, models or options)",
                a.display(),
                b.display()
            )
        );
        assert!(!out.exists());
        assert!(!staging_path(&out).exists());
    }

    #[test]
    fn a_merge_failing_midway_leaves_out_as_it_was_and_no_staging_file() {
        let (dir, a, b, out) = two_inputs();
        shard(&a, PLAN, (0, 2), 10, 0);
        shard(&b, PLAN, (1, 2), 10, 3);
        merge(&out, std::slice::from_ref(&a), true).unwrap();
        let before = dump(&out);
        // The second shard's results cannot be copied: its blobs, run and calls are by then.
        Connection::open(&b)
            .unwrap()
            .execute_batch("DROP VIEW bench_results; ALTER TABLE bench_rows DROP COLUMN expected")
            .unwrap();
        let error = merge(&out, &[a.clone(), b.clone()], false).unwrap_err();
        assert!(error.to_string().contains("expected"), "{error}");
        assert_eq!(dump(&out), before);
        assert!(!staging_path(&out).exists());
        // Into a new OUT, whose words are indexed on a thread into a file of its own: neither
        // OUT nor any file of the merge is left.
        let new = dir.path().join("new.db");
        merge(&new, &[a, b], false).unwrap_err();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("new.db"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(
            count_in(&out, "SELECT count(*) FROM calls WHERE model = 'm'"),
            10 + 4
        );
    }

    #[test]
    fn a_shard_of_an_unknown_status_is_an_error_naming_its_row_never_a_status_taken_as_another() {
        let store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        store
            .conn
            .execute(
                "UPDATE runs SET plan_sha256 = 'p', shard_index = 0, shard_count = 2,
                     status = 'completed' WHERE id = ?1",
                [run],
            )
            .unwrap();
        let (shards, _) = shard_runs(&store.conn).unwrap();
        assert_eq!(shards[0].status, RunStatus::Completed);
        store
            .conn
            .execute_batch(
                "PRAGMA ignore_check_constraints = ON;
                 UPDATE runs SET status = 'paused';
                 PRAGMA ignore_check_constraints = OFF;",
            )
            .unwrap();
        let error = shard_runs(&store.conn).unwrap_err();
        assert!(
            matches!(&error, StoreError::UnknownInRow(u)
                if u.table == "runs" && u.id == run && u.column == "status" && u.value == "paused"),
            "{error:?}"
        );
    }

    /// The schema of a database: every table, index and trigger as SQLite keeps it.
    fn schema(conn: &Connection) -> Vec<(String, String)> {
        conn.prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_merge_in_bulk_leaves_the_schema_of_a_new_database() {
        let (_dir, a, b, out) = two_inputs();
        shard(&a, PLAN, (0, 2), 5, 0);
        shard(&b, PLAN, (1, 2), 5, 0);
        merge(&out, &[a, b], false).unwrap();
        let fresh = Store::open_in_memory().unwrap();
        let merged = Connection::open(&out).unwrap();
        assert_eq!(schema(&merged), schema(&fresh.conn));
        // The words of a call stored later are indexed, by the trigger made again.
        let mut store = Store::open(&out).unwrap();
        let id = store
            .insert_call(&NewCall {
                cache_key: "k",
                canonical_request: "{}".into(),
                provider: "openai",
                model: "m",
                outcome: Ok("laterword"),
                finish_reason: None,
                input_tokens: None,
                output_tokens: None,
                tokens_estimated: false,
                latency_ms: 1.0,
                attempts: 1,
                input_price_per_mtok: Some(0.0),
                output_price_per_mtok: Some(0.0),
                cost_usd: None,
                http_status: None,
            })
            .unwrap();
        let found: i64 = store
            .conn
            .query_row(
                "SELECT rowid FROM call_text WHERE call_text MATCH 'laterword'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(found, id);
    }

    #[test]
    fn calls_whose_uids_share_their_key_are_told_apart_by_the_whole_uid() {
        // Into a new OUT (shard 1 after shard 0), and into one holding shard 0 already: both
        // find calls by the first 16 digits of their uid, then compare the uid whole.
        for one_by_one in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let (a, b, out) = (
                dir.path().join("a.db"),
                dir.path().join("b.db"),
                dir.path().join("out.db"),
            );
            shard(&a, PLAN, (0, 2), 4, 0);
            shard(&b, PLAN, (1, 2), 4, 2);
            let theirs: Vec<String> = Connection::open(&a)
                .unwrap()
                .prepare(
                    "SELECT c.uid FROM bench_rows r JOIN calls c ON c.id = r.call_id ORDER BY r.id",
                )
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            // Shard 1's first result's call: a uid of the same key as one of shard 0's, not
            // the same; its second's: the very uid of another of shard 0's (the same call).
            let alike = format!("{}{}", &theirs[0][..16], "0".repeat(48));
            assert_ne!(alike, theirs[0]);
            let conn = Connection::open(&b).unwrap();
            for (row, uid) in [(1, &alike), (2, &theirs[1])] {
                conn.execute(
                    "UPDATE calls SET uid = ?1 WHERE id = (SELECT call_id FROM bench_rows WHERE id = ?2)",
                    params![uid, row],
                )
                .unwrap();
            }
            let mine: Vec<String> = conn
                .prepare("SELECT uid FROM bench_rows ORDER BY id LIMIT 2")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            drop(conn);
            let calls = |path: &Path| count_in(path, "SELECT count(*) FROM calls");
            let expected = calls(&a) + calls(&b) - 1;
            if one_by_one {
                merge(&out, std::slice::from_ref(&a), true).unwrap();
                merge(&out, std::slice::from_ref(&b), false).unwrap();
            } else {
                merge(&out, &[a, b], false).unwrap();
            }
            assert_eq!(calls(&out), expected, "one by one: {one_by_one}");
            let call_of = |result: &str| -> (String, i64) {
                Connection::open(&out)
                    .unwrap()
                    .query_row(
                        "SELECT c.uid, count(*) OVER () FROM bench_rows r
                         JOIN calls c ON c.id = r.call_id WHERE r.uid = ?1",
                        [result],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .unwrap()
            };
            assert_eq!(
                call_of(&mine[0]),
                (alike.clone(), 1),
                "one by one: {one_by_one}"
            );
            assert_eq!(
                call_of(&mine[1]),
                (theirs[1].clone(), 1),
                "one by one: {one_by_one}"
            );
            let copies = count_in(
                &out,
                &format!(
                    "SELECT count(*) FROM calls WHERE uid IN ('{alike}', '{}')",
                    theirs[0]
                ),
            );
            assert_eq!(copies, 2);
        }
    }

    #[test]
    fn a_shard_merged_into_a_larger_database_keeps_its_indexes_and_copies_alike() {
        let dir = tempfile::tempdir().unwrap();
        let (big, a, out) = (
            dir.path().join("big.db"),
            dir.path().join("a.db"),
            dir.path().join("out.db"),
        );
        // Prompts 100, 201, ...: none of the shard's, whose words would find both.
        shard(&big, "a-larger-plan", (100, 101), 40, 5);
        shard(&a, PLAN, (0, 2), 10, 3);
        merge(&out, std::slice::from_ref(&big), true).unwrap();
        // 17 calls into OUT's 59: copied with OUT's indexes in place.
        let report = merge(&out, std::slice::from_ref(&a), true).unwrap();
        assert_eq!((report.inputs[0].calls, report.inputs[0].rows), (17, 10));
        let mut expected = results(&big);
        expected.extend(results(&a));
        assert_eq!(results(&out), expected);
        let fresh = Store::open_in_memory().unwrap();
        assert_eq!(
            schema(&Connection::open(&out).unwrap()),
            schema(&fresh.conn)
        );
    }

    #[test]
    fn a_request_the_input_lacks_is_indexed_from_out_as_the_trigger_does() {
        let (_dir, a, b, out) = two_inputs();
        // Shard 1 asks for prompt 1 too (prompts i * 2 + 1), and has lost that request's text.
        shard(&a, PLAN, (0, 2), 3, 0);
        shard(&b, PLAN, (1, 2), 3, 0);
        let request = r#"{"messages":[{"text":"asked1word"}]}"#;
        let key = crate::hash::sha256_hex(request.as_bytes());
        let mut store = Store::open(&a).unwrap();
        store
            .insert_call(&NewCall {
                cache_key: &key,
                canonical_request: request.into(),
                provider: "openai",
                model: "m",
                outcome: Ok("another answer"),
                finish_reason: None,
                input_tokens: None,
                output_tokens: None,
                tokens_estimated: false,
                latency_ms: 1.0,
                attempts: 1,
                input_price_per_mtok: Some(0.0),
                output_price_per_mtok: Some(0.0),
                cost_usd: None,
                http_status: None,
            })
            .unwrap();
        drop(store);
        let removed = Connection::open(&b)
            .unwrap()
            .execute("DELETE FROM blobs WHERE sha256 = ?1", [&key])
            .unwrap();
        assert_eq!(removed, 1);
        merge(&out, &[a, b], false).unwrap();
        let found = count_in(
            &out,
            "SELECT count(*) FROM call_text WHERE call_text MATCH 'request : asked1word'",
        );
        assert_eq!(found, 2);
    }

    /// Every word the search index holds, where: (term, call, column, position).
    fn words(conn: &Connection) -> Vec<(String, i64, String, i64)> {
        conn.execute_batch(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.words USING fts5vocab(main, call_text, instance)",
        )
        .unwrap();
        conn.prepare("SELECT term, doc, col, offset FROM temp.words ORDER BY 1, 2, 3, 4")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// Two shards whose calls ask and answer in every way the words' index meets.
    fn shards_of_every_request(dir: &Path) -> (PathBuf, PathBuf) {
        let (a, b) = (dir.join("a.db"), dir.join("b.db"));
        shard(&a, PLAN, (0, 2), 6, 2);
        shard(&b, PLAN, (1, 2), 6, 0);
        // Requests of every shape: a system prompt and several texts, nested; no text; not
        // JSON at all; each answered, and failed (no words).
        let mut store = Store::open(&b).unwrap();
        let requests = [
            r#"{"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"first part"},{"type":"text","text":"second part"}]}]}"#,
            r#"{"model":"m","max_tokens":5}"#,
            "not json at all {",
            r#"{"messages":[{"text":"asks for what shard 0 answered"}]}"#,
        ];
        for (i, request) in requests.iter().enumerate() {
            let key = crate::hash::sha256_hex(request.as_bytes());
            // The last one answers what a call of shard 0 answered.
            let answer = match i {
                3 => "answer0word shard0of2".to_owned(),
                _ => format!("odd answer {i}"),
            };
            for outcome in [Ok(answer.as_str()), Err("overloaded")] {
                store
                    .insert_call(&NewCall {
                        cache_key: &key,
                        canonical_request: (*request).into(),
                        provider: "openai",
                        model: "m",
                        outcome,
                        finish_reason: None,
                        input_tokens: None,
                        output_tokens: None,
                        tokens_estimated: false,
                        latency_ms: 1.0,
                        attempts: 1,
                        input_price_per_mtok: Some(0.0),
                        output_price_per_mtok: Some(0.0),
                        cost_usd: None,
                        http_status: None,
                    })
                    .unwrap();
            }
        }
        drop(store);
        // ... and shard 1 has lost that answer's text, which OUT has from shard 0.
        let answer = crate::hash::sha256_hex(b"answer0word shard0of2");
        let conn = Connection::open(&b).unwrap();
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let removed = conn
            .execute("DELETE FROM blobs WHERE sha256 = ?1", [&answer])
            .unwrap();
        assert_eq!(removed, 1);
        (a, b)
    }

    #[test]
    fn the_words_indexed_in_bulk_are_those_the_trigger_indexes() {
        // Into a new OUT (indexed beside it, on a thread), and into one holding a few calls
        // (indexed into its own index).
        for calls_before in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let (a, b) = shards_of_every_request(dir.path());
            let out = dir.path().join("out.db");
            if calls_before {
                let few = dir.path().join("few.db");
                shard(&few, "another-plan", (0, 9), 2, 0);
                merge(&out, std::slice::from_ref(&few), true).unwrap();
            }
            merge(&out, &[a, b], false).unwrap();
            let mut words_file = staging_path(&out).into_os_string();
            words_file.push("-words");
            assert!(!Path::new(&words_file).exists());
            let conn = Connection::open(&out).unwrap();
            let merged = words(&conn);
            for word in ["brief", "second", "asks", "overloaded"] {
                assert_eq!(
                    merged.iter().any(|(term, _, _, _)| term == word),
                    word != "overloaded",
                    "{word}"
                );
            }
            let shared = "SELECT count(*) FROM call_text WHERE call_text MATCH 'answer : (answer0word shard0of2)'";
            assert_eq!(count_in(&out, shared), 2);
            // Indexed again from OUT's calls and blobs as the migration that made the index
            // does, with the trigger's expressions: the same words of the same calls.
            conn.execute_batch(
                "INSERT INTO call_text (call_text) VALUES ('delete-all');
                 INSERT INTO call_text (rowid, request, answer)
                 SELECT c.id,
                     (SELECT group_concat(t.value, char(10))
                      FROM blobs b, json_tree(CASE WHEN json_valid(CAST(b.content AS TEXT))
                                                   THEN CAST(b.content AS TEXT) ELSE '{}' END) t
                      WHERE b.sha256 = c.cache_key AND t.key IN ('system', 'text')
                        AND t.type = 'text'),
                     (SELECT CAST(content AS TEXT) FROM blobs WHERE sha256 = c.response_sha256)
                 FROM calls c WHERE c.status = 'ok';",
            )
            .unwrap();
            assert_eq!(merged, words(&conn), "calls before: {calls_before}");
        }
    }
}
