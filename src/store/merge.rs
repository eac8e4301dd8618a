//! Merging databases (`track merge OUT IN…`): the shards of a plan into one run, or any two
//! track databases into one (a teammate's cache shared).
//!
//! Every input is validated before OUT is touched: the shards of a plan must all be there,
//! once each, of one plan, and finished (`allow_partial` merges anyway and marks the merged
//! run `partial`). Then OUT is copied to a file beside it, each input is copied in by global
//! id (`uid`, migration V17) in one transaction, and the file replaces OUT: a kill mid-merge
//! leaves OUT as it was. Copying by uid makes merging idempotent and order-independent. The
//! shards of a plan become one run (`merged_into` points each at it) that owns their rows, so
//! statistics are computed from the rows of the whole plan, never averaged over shards.
//! Pacing buckets and claims are this machine's: they are not copied.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use super::stored::in_row;
use super::{Result as StoreResult, RunStatus, Store, StoreError, merged_run_uid};
use crate::kind::ExperimentKind;

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

/// A shard run as an input holds it.
#[derive(Debug, Clone)]
struct ShardRun {
    id: i64,
    uid: String,
    plan: String,
    index: u32,
    count: u32,
    status: RunStatus,
}

/// One input, opened and read.
struct Input {
    path: PathBuf,
    /// Its shard runs to merge: the newest of each (plan, k).
    shards: Vec<ShardRun>,
    /// Older runs of the same shard (a run interrupted, then run again): copied with what
    /// they paid, but not their result rows, which the newest run's replace.
    superseded: Vec<ShardRun>,
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
    Ok(Input {
        path: path.to_path_buf(),
        shards,
        superseded,
    })
}

/// The shard runs of a database, the newest of each (plan, k), and the older ones.
fn shard_runs(conn: &Connection) -> StoreResult<(Vec<ShardRun>, Vec<ShardRun>)> {
    let mut stmt = conn.prepare(
        "SELECT id, uid, plan_sha256, shard_index, shard_count, status FROM runs
         WHERE shard_index IS NOT NULL AND uid IS NOT NULL AND plan_sha256 IS NOT NULL
         ORDER BY started_at DESC, uid DESC",
    )?;
    let rows = stmt.query_map([], |r| {
        let id = r.get(0)?;
        Ok(ShardRun {
            id,
            uid: r.get(1)?,
            plan: r.get(2)?,
            index: r.get(3)?,
            count: r.get(4)?,
            status: in_row(r, 5, "runs", id)?,
        })
    })?;
    let mut newest: BTreeMap<(String, u32, u32), ShardRun> = BTreeMap::new();
    let mut superseded = Vec::new();
    for run in rows {
        let run = run?;
        let key = (run.plan.clone(), run.count, run.index);
        match newest.entry(key) {
            std::collections::btree_map::Entry::Occupied(_) => superseded.push(run),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(run);
            }
        }
    }
    Ok((newest.into_values().collect(), superseded))
}

/// The plan whose shards are merged, and the shards of it in OUT afterwards.
#[derive(Debug, Clone)]
struct Joined {
    plan: String,
    count: u32,
    partial: bool,
}

/// Refuses what must not be merged; returns the plan whose shards are joined.
fn validate(
    inputs: &[Input],
    existing: &[ShardRun],
    allow_partial: bool,
) -> Result<Option<Joined>, MergeError> {
    let Some(plan) = one_plan(inputs)? else {
        return Ok(None);
    };
    let count = shard_count(inputs, existing, plan)?;
    let (present, mut partial) = join_shards(inputs, existing, (plan, count), allow_partial)?;
    let missing: Vec<String> = (0..count)
        .filter(|k| !present.contains(k))
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        if !allow_partial {
            return Err(MergeError::Missing {
                plan: short(plan),
                count,
                missing: missing.join(", "),
            });
        }
        partial = true;
    }
    Ok(Some(Joined {
        plan: plan.to_owned(),
        count,
        partial,
    }))
}

/// A plan's sha256 as messages show it: its first 12 digits.
fn short(plan: &str) -> String {
    plan.chars().take(12).collect()
}

/// The plan the inputs' shards are of (`None`: they hold no shard); shards of two plans are
/// refused, naming each input's.
fn one_plan(inputs: &[Input]) -> Result<Option<&str>, MergeError> {
    let plans: BTreeSet<&str> = inputs
        .iter()
        .flat_map(|i| i.shards.iter().map(|s| s.plan.as_str()))
        .collect();
    if plans.len() > 1 {
        let described: Vec<String> = inputs
            .iter()
            .filter_map(|i| {
                let plans: BTreeSet<String> = i.shards.iter().map(|s| short(&s.plan)).collect();
                (!plans.is_empty()).then(|| {
                    format!(
                        "{} has plan {}",
                        i.path.display(),
                        plans.into_iter().collect::<Vec<_>>().join(" and ")
                    )
                })
            })
            .collect();
        return Err(MergeError::DifferentPlans(described.join(", ")));
    }
    Ok(plans.into_iter().next())
}

/// How many shards `plan` has, as every input and OUT (`existing`) agree; two counts are
/// refused.
fn shard_count(inputs: &[Input], existing: &[ShardRun], plan: &str) -> Result<u32, MergeError> {
    let of_plan = |s: &&ShardRun| s.plan == plan;
    let mut counts: BTreeSet<u32> = inputs
        .iter()
        .flat_map(|i| i.shards.iter().filter(of_plan).map(|s| s.count))
        .collect();
    counts.extend(existing.iter().filter(of_plan).map(|s| s.count));
    if counts.len() > 1 {
        let list: Vec<String> = counts.iter().map(|c| format!("N = {c}")).collect();
        return Err(MergeError::Counts {
            plan: short(plan),
            counts: list.join(" and "),
        });
    }
    Ok(counts.into_iter().next().unwrap_or(1))
}

/// The shards of `plan` (of `count`) in OUT once the inputs' join OUT's (`existing`), and
/// whether one of them is unfinished (refused unless `allow_partial`). Two runs of one shard
/// are refused, unless one is an older attempt of the other.
fn join_shards(
    inputs: &[Input],
    existing: &[ShardRun],
    (plan, count): (&str, u32),
    allow_partial: bool,
) -> Result<(BTreeSet<u32>, bool), MergeError> {
    let of_plan = |s: &&ShardRun| s.plan == plan;
    let mut owners: BTreeMap<u32, &ShardRun> = BTreeMap::new();
    for shard in existing.iter().filter(of_plan) {
        owners.insert(shard.index, shard);
    }
    let mut partial = false;
    for input in inputs {
        for shard in input.shards.iter().filter(of_plan) {
            // A newer attempt of the shard than OUT's (its input holds OUT's as an older
            // one: the shard was run again to finish it) replaces it.
            let replaces = |other: &ShardRun| input.superseded.iter().any(|s| s.uid == other.uid);
            if let Some(other) = owners.get(&shard.index)
                && other.uid != shard.uid
                && !replaces(other)
            {
                return Err(MergeError::RepeatedShard {
                    plan: short(plan),
                    index: shard.index,
                    count,
                    first: other.uid.clone(),
                    second: shard.uid.clone(),
                });
            }
            owners.insert(shard.index, shard);
            if shard.status != RunStatus::Completed {
                if !allow_partial {
                    return Err(MergeError::Unfinished {
                        index: shard.index,
                        count,
                        source_db: input.path.display().to_string(),
                        status: shard.status,
                    });
                }
                partial = true;
            }
        }
    }
    Ok((owners.keys().copied().collect(), partial))
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
    let mut store = Store::open(staging)?;
    let mut report = MergeReport::default();
    for input in inputs {
        report
            .inputs
            .push(copy_input(&mut store.conn, input, joined)?);
    }
    if let Some(joined) = joined {
        report.plan = Some(settle_merged_run(&store.conn, joined)?);
    }
    // One file, no write-ahead log: what replaces OUT is complete on its own.
    store.conn.pragma_update(None, "journal_mode", "DELETE")?;
    drop(store);
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
    Ok(report)
}

/// Counts the rows of `table` in the main database.
fn count(conn: &Connection, table: &str) -> rusqlite::Result<u64> {
    conn.query_row(&format!("SELECT count(*) FROM main.{table}"), [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n as u64)
}

/// The result tables, copied by uid with their run and calls mapped.
const ROW_TABLES: &[&str] = &[
    "bench_results",
    "generated_datasheets",
    "reviews",
    "relevance_predictions",
    "pairwise_answers",
    "pairwise_verdicts",
    "run_errors",
];

/// Copies one input into the staging database, in one transaction.
fn copy_input(
    conn: &mut Connection,
    input: &Input,
    joined: Option<&Joined>,
) -> Result<InputAdded, MergeError> {
    conn.execute("ATTACH DATABASE ?1 AS src", [input.path.to_string_lossy()])?;
    let result = copy_attached(conn, input, joined);
    let detached = conn.execute("DETACH DATABASE src", []);
    let added = result?;
    detached?;
    Ok(added)
}

fn copy_attached(
    conn: &mut Connection,
    input: &Input,
    joined: Option<&Joined>,
) -> Result<InputAdded, MergeError> {
    let tx = conn.transaction()?;
    let before_calls = count(&tx, "calls")?;
    let mut before_rows = 0;
    for table in ROW_TABLES {
        before_rows += count(&tx, table)?;
    }
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS skip_runs (id INTEGER PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS joined_runs (id INTEGER PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS attempt_runs (id INTEGER PRIMARY KEY);
         DELETE FROM skip_runs; DELETE FROM joined_runs; DELETE FROM attempt_runs;",
    )?;
    for map in ["run_map", "batch_map", "call_map", "review_map"] {
        tx.execute_batch(&format!(
            "CREATE TEMP TABLE IF NOT EXISTS {map} (src INTEGER PRIMARY KEY, dst INTEGER);
             DELETE FROM {map};"
        ))?;
    }
    for run in &input.superseded {
        tx.execute("INSERT OR IGNORE INTO skip_runs (id) VALUES (?1)", [run.id])?;
    }
    let merged_id = match joined {
        Some(j) => {
            for shard in input.shards.iter().filter(|s| s.plan == j.plan) {
                tx.execute(
                    "INSERT OR IGNORE INTO joined_runs (id) VALUES (?1)",
                    [shard.id],
                )?;
            }
            for attempt in input.superseded.iter().filter(|s| s.plan == j.plan) {
                tx.execute(
                    "INSERT OR IGNORE INTO attempt_runs (id) VALUES (?1)",
                    [attempt.id],
                )?;
            }
            match input.shards.iter().find(|s| s.plan == j.plan) {
                Some(first) => Some(ensure_merged_run(&tx, first, j)?),
                None => None,
            }
        }
        None => None,
    };
    // The merged run is not the input's: counted from here.
    let before_runs = count(&tx, "runs")?;
    tx.execute_batch(&copy_sql(&tx, "blobs", &[], "")?)?;
    copy_runs(&tx, merged_id)?;
    copy_calls(&tx)?;
    drop_superseded_rows(&tx)?;
    copy_rows(&tx)?;
    let mut after_rows = 0;
    for table in ROW_TABLES {
        after_rows += count(&tx, table)?;
    }
    let added = InputAdded {
        path: input.path.clone(),
        runs: count(&tx, "runs")? - before_runs,
        calls: count(&tx, "calls")? - before_calls,
        rows: after_rows - before_rows,
    };
    tx.commit()?;
    Ok(added)
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

/// Copies batches (by tag), calls (by uid: the cache) and the calls of each batch.
fn copy_calls(tx: &Connection) -> rusqlite::Result<()> {
    let run = ("run_id", remap("run_map", "run_id"));
    tx.execute_batch(&copy_sql(tx, "batches", &[run], "")?)?;
    build_map(tx, "batch_map", "batches", "tag")?;
    let batch = ("batch", remap("batch_map", "batch"));
    tx.execute_batch(&copy_sql(tx, "calls", std::slice::from_ref(&batch), "")?)?;
    build_map(tx, "call_map", "calls", "uid")?;
    let call = ("call_id", remap("call_map", "call_id"));
    tx.execute_batch(&copy_sql(tx, "batch_calls", &[batch, call], "")?)
}

/// Removes from OUT the result rows of the input's superseded runs: an older attempt of a
/// shard merged before the shard was run again (its newest run's rows replace them).
fn drop_superseded_rows(tx: &Connection) -> rusqlite::Result<()> {
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
    // A result's checks are keyed by the result's key.
    tx.execute_batch(&format!(
        "DELETE FROM main.bench_checks
         WHERE (run_id, model_index, template_index, prompt_index, repeat_index) IN (
             SELECT run_id, model_index, template_index, prompt_index, repeat_index
             FROM main.bench_results WHERE uid IN ({}));",
        of("bench_results")
    ))?;
    for table in ROW_TABLES {
        tx.execute_batch(&format!(
            "DELETE FROM main.{table} WHERE uid IN ({});",
            of(table)
        ))?;
    }
    Ok(())
}

/// Copies every kind's rows of the runs copied (by uid) but superseded ones, their run and
/// calls mapped.
fn copy_rows(tx: &Connection) -> rusqlite::Result<()> {
    let run = ("run_id", remap("run_map", "run_id"));
    let call = ("call_id", remap("call_map", "call_id"));
    let of_runs = "WHERE s.run_id IN (SELECT src FROM temp.run_map)
                   AND s.run_id NOT IN (SELECT id FROM temp.skip_runs)";
    let judge = ("judge_call_id", remap("call_map", "judge_call_id"));
    let bench = [run.clone(), call.clone(), judge];
    tx.execute_batch(&copy_sql(tx, "bench_results", &bench, of_runs)?)?;
    tx.execute_batch(&copy_sql(
        tx,
        "bench_labels",
        std::slice::from_ref(&run),
        of_runs,
    )?)?;
    // Each check of a result that has several, by the result's key and its index.
    tx.execute_batch(&copy_sql(
        tx,
        "bench_checks",
        std::slice::from_ref(&run),
        of_runs,
    )?)?;
    // A datasheet written by another tool has no run.
    let generated = "WHERE s.run_id IS NULL OR (s.run_id IN (SELECT src FROM temp.run_map)
                     AND s.run_id NOT IN (SELECT id FROM temp.skip_runs))";
    let pair = [run.clone(), call];
    tx.execute_batch(&copy_sql(tx, "generated_datasheets", &pair, generated)?)?;
    for table in [
        "reviews",
        "relevance_predictions",
        "pairwise_answers",
        "pairwise_verdicts",
        "run_errors",
    ] {
        tx.execute_batch(&copy_sql(tx, table, &pair, of_runs)?)?;
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
    tx.execute_batch(&copy_sql(tx, "review_scores", &[review], reviewed)?)
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
        .filter(|name| !(rowid_id && *name == "id"))
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
        "INSERT OR IGNORE INTO main.{table} ({}) SELECT {} FROM src.{table} s {filter};",
        kept.join(", "),
        exprs.join(", ")
    ))
}

/// The run a plan's shards are merged into: made from `first` (of the plan) if OUT has none.
fn ensure_merged_run(
    tx: &Connection,
    first: &ShardRun,
    joined: &Joined,
) -> Result<i64, MergeError> {
    let uid = merged_run_uid(&joined.plan, joined.count);
    tx.execute(
        "INSERT OR IGNORE INTO main.runs (uid, kind, file, spec_sha256, options_json, started_at,
             finished_at, status, models, command, plan_sha256, shard_count, plan_calls)
         SELECT ?1, kind, file, spec_sha256, options_json, started_at, finished_at, 'running',
             models, command, plan_sha256, shard_count, plan_calls
         FROM src.runs WHERE id = ?2",
        params![uid, first.id],
    )?;
    let id: Option<i64> = tx
        .query_row("SELECT id FROM main.runs WHERE uid = ?1", [&uid], |r| {
            r.get(0)
        })
        .optional()?;
    id.ok_or_else(|| MergeError::Store(StoreError::NoSuchRun(uid)))
}

/// Sets the merged run's tally, times and status from its shards in OUT (each shard's newest
/// attempt; what was paid from every attempt): `completed` when every shard is there and
/// completed, else `partial`.
fn settle_merged_run(conn: &Connection, joined: &Joined) -> Result<PlanMerged, MergeError> {
    let uid = merged_run_uid(&joined.plan, joined.count);
    let (id, kind): (i64, ExperimentKind) =
        conn.query_row("SELECT id, kind FROM runs WHERE uid = ?1", [&uid], |r| {
            let id = r.get(0)?;
            Ok((id, in_row(r, 1, "runs", id)?))
        })?;
    // Each shard's newest attempt is the shard; the older ones only paid.
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp.kept_shards;
         CREATE TEMP TABLE kept_shards AS SELECT k.* FROM main.runs k
         WHERE k.merged_into = {id} AND NOT EXISTS (
             SELECT 1 FROM main.runs n WHERE n.merged_into = {id}
             AND n.shard_index = k.shard_index
             AND (n.started_at > k.started_at OR (n.started_at = k.started_at AND n.uid > k.uid)));"
    ))?;
    let (present, completed): (i64, i64) = conn.query_row(
        "SELECT count(DISTINCT shard_index),
                count(DISTINCT CASE WHEN status = 'completed' THEN shard_index END)
         FROM temp.kept_shards",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let whole = present == i64::from(joined.count) && completed == present && !joined.partial;
    let status = if whole {
        RunStatus::Completed
    } else {
        RunStatus::Partial
    };
    conn.execute(
        "UPDATE runs SET
             plan_calls = (SELECT max(plan_calls) FROM runs s WHERE s.merged_into = ?1),
             planned_calls = coalesce(
                 (SELECT max(plan_calls) FROM runs s WHERE s.merged_into = ?1),
                 (SELECT sum(planned_calls) FROM temp.kept_shards)),
             calls = (SELECT sum(calls) FROM temp.kept_shards),
             cache_hits = (SELECT sum(cache_hits) FROM temp.kept_shards),
             failed_calls = (SELECT sum(failed_calls) FROM temp.kept_shards),
             errors = (SELECT sum(errors) FROM temp.kept_shards),
             cost_usd = (SELECT sum(cost_usd) FROM temp.kept_shards),
             paid_usd = (SELECT sum(paid_usd) FROM runs s WHERE s.merged_into = ?1),
             started_at = (SELECT min(started_at) FROM runs s WHERE s.merged_into = ?1),
             finished_at = (SELECT max(finished_at) FROM runs s WHERE s.merged_into = ?1),
             status = ?2, shard_index = NULL, shard_count = ?3, pid = NULL
         WHERE id = ?1",
        params![id, status, joined.count],
    )?;
    let mut stmt =
        conn.prepare("SELECT DISTINCT shard_index FROM runs WHERE merged_into = ?1 ORDER BY 1")?;
    let present: Vec<u32> = stmt
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(PlanMerged {
        plan_sha256: joined.plan.clone(),
        kind,
        run_id: id,
        run_uid: uid,
        shards: joined.count,
        present,
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
