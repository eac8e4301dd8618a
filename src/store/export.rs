//! Whole tables, read for `track export parquet`: the rows a run made in each result table, the
//! calls they reference and the run itself, streamed in batches of columns.
//!
//! Schema-generic: the columns are read from the table's definition (`PRAGMA table_info`), each
//! typed by its declared type as SQLite types it (its affinity), so that a column a migration
//! adds is exported without a change here. The calls a row references are found the same way,
//! from the table's foreign keys to `calls`.

use rusqlite::types::ValueRef;

use super::{Result, Store, StoreError};

/// A table whose rows belong to runs, exported one dataset per table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultTable {
    /// Its name, which is also the dataset's.
    pub name: &'static str,
    /// How its rows belong to a run: `None`, by its own `run_id`; `Some((column, parent))`, by
    /// the parent row whose `id` its `column` holds (and that row's `run_id`).
    pub via: Option<(&'static str, &'static str)>,
}

/// The tables of results, in the order they are exported. A run has rows in some of them only
/// (a benchmark in `bench_results` and, where a case has several checks, `bench_checks`; a review in `reviews`, `review_scores` and, when it
/// generated first, `generated_datasheets`; a pairwise comparison in `pairwise_verdicts` and,
/// when its candidates are models, `pairwise_answers`).
pub const RESULT_TABLES: &[ResultTable] = &[
    ResultTable::of_run("bench_results"),
    ResultTable::of_run("bench_checks"),
    ResultTable::of_run("generated_datasheets"),
    ResultTable::of_run("reviews"),
    ResultTable {
        name: "review_scores",
        via: Some(("review_id", "reviews")),
    },
    ResultTable::of_run("relevance_predictions"),
    ResultTable::of_run("pairwise_answers"),
    ResultTable::of_run("pairwise_verdicts"),
    ResultTable::of_run("ratings"),
    ResultTable::of_run("tool_calls"),
];

/// The tables `track export parquet` leaves out, each with why; every table of the schema is
/// either here or exported (a test holds it to that, so a new table is a decision).
pub const NOT_EXPORTED: &[(&str, &str)] = &[
    (
        "blobs",
        "texts and images by content hash: bytes, not rows to analyse",
    ),
    (
        "bench_labels",
        "names by index, in each row of bench_results",
    ),
    (
        "bench_rows",
        "exported as bench_results, the view that names its models and cases",
    ),
    (
        "bench_check_rows",
        "exported as bench_checks, the view that gives each its result's key",
    ),
    (
        "bench_models",
        "each run's models, in each row of bench_results",
    ),
    (
        "dataset_files",
        "which commit an hf:// address resolved to; the bytes are in blobs",
    ),
    ("run_errors", "what `track runs --errors` lists"),
    ("call_claims", "calls in flight: gone when they land"),
    ("pacing_buckets", "the pacer's state"),
    ("pacing_scopes", "the pacer's state"),
    ("batches", "batch bookkeeping"),
    ("batch_calls", "batch bookkeeping"),
    ("refinery_schema_history", "the migrations applied"),
    (
        "call_text",
        "the viewer's search index of calls' texts (in blobs)",
    ),
    ("call_text_config", "the viewer's search index"),
    ("call_text_data", "the viewer's search index"),
    ("call_text_docsize", "the viewer's search index"),
    ("call_text_idx", "the viewer's search index"),
];

impl ResultTable {
    const fn of_run(name: &'static str) -> Self {
        Self { name, via: None }
    }

    /// `FROM ... WHERE ...` of its rows of run `?1`, the table aliased `t`.
    fn rows_of_run(&self) -> String {
        match self.via {
            None => format!("FROM {} t WHERE t.run_id = ?1", quoted(self.name)),
            Some((column, parent)) => format!(
                "FROM {parent} p JOIN {table} t ON t.{column} = p.id WHERE p.run_id = ?1",
                parent = quoted(parent),
                table = quoted(self.name),
                column = quoted(column),
            ),
        }
    }
}

/// What a dataset's rows are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSource {
    /// A result table's rows of the run.
    Results(ResultTable),
    /// The calls the run's result rows reference, each once.
    Calls,
    /// The run's own row.
    Runs,
}

impl RowSource {
    /// The table read.
    pub fn table(&self) -> &'static str {
        match self {
            Self::Results(t) => t.name,
            Self::Calls => "calls",
            Self::Runs => "runs",
        }
    }
}

/// How SQLite types a column's values, by its declared type: the rules of
/// <https://www.sqlite.org/datatype3.html#determination_of_column_affinity>, in their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affinity {
    /// `INTEGER`, `INT`, `BIGINT`...: whole numbers.
    Integer,
    /// `TEXT`, `VARCHAR(n)`, `CLOB`...
    Text,
    /// `BLOB`, or no declared type: bytes, which are not exported.
    Blob,
    /// `REAL`, `DOUBLE`, `FLOAT`...
    Real,
    /// Anything else (`NUMERIC`, `DECIMAL`, `BOOLEAN`, `DATE`...): numbers, read as reals.
    Numeric,
}

impl Affinity {
    /// The affinity of a column declared `declared` (case-insensitive).
    pub(crate) fn of_declared(declared: &str) -> Self {
        let d = declared.to_ascii_uppercase();
        if d.contains("INT") {
            Self::Integer
        } else if ["CHAR", "CLOB", "TEXT"].iter().any(|s| d.contains(s)) {
            Self::Text
        } else if d.contains("BLOB") || d.trim().is_empty() {
            Self::Blob
        } else if ["REAL", "FLOA", "DOUB"].iter().any(|s| d.contains(s)) {
            Self::Real
        } else {
            Self::Numeric
        }
    }
}

/// A column of a table, as exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportColumn {
    pub name: String,
    /// As the table declares it (`INTEGER`, `TEXT`...).
    pub declared: String,
    pub affinity: Affinity,
    /// `None`: the table's column of that name. `Some(sql)`: a column the export adds, read by
    /// this expression over the row (aliased `t`): a call's request and answer texts, a
    /// row's answer and human rating ([`derived_columns`]).
    pub expr: Option<String>,
    /// Whether `expr` reads `ratings`: a run no one rated reads NULL instead, four lookups
    /// a row fewer.
    pub from_ratings: bool,
}

impl ExportColumn {
    /// A column of `affinity`, declared as that affinity's name; for tests and callers that
    /// build batches themselves.
    pub(crate) fn new(name: &str, affinity: Affinity) -> Self {
        let declared = match affinity {
            Affinity::Integer => "INTEGER",
            Affinity::Text => "TEXT",
            Affinity::Blob => "BLOB",
            Affinity::Real => "REAL",
            Affinity::Numeric => "NUMERIC",
        };
        Self {
            name: name.to_owned(),
            declared: declared.to_owned(),
            affinity,
            expr: None,
            from_ratings: false,
        }
    }

    /// A column the export adds, of `affinity`, read by `expr` over the row `t`.
    fn derived(name: &str, affinity: Affinity, expr: String) -> Self {
        Self {
            expr: Some(expr),
            ..Self::new(name, affinity)
        }
    }

    /// What the SELECT list reads for it: `t."name"`, or its expression (NULL for one that
    /// reads ratings, of a run no one `rated`).
    fn select(&self, rated: bool) -> String {
        match &self.expr {
            Some(_) if self.from_ratings && !rated => format!("NULL AS {}", quoted(&self.name)),
            Some(expr) => format!("({expr}) AS {}", quoted(&self.name)),
            None => format!("t.{}", quoted(&self.name)),
        }
    }
}

/// The text of the blob whose sha256 is `sha` (an SQL expression).
fn blob_text(sha: &str) -> String {
    format!("SELECT CAST(b.content AS TEXT) FROM blobs b WHERE b.sha256 = {sha}")
}

/// The columns the export adds to `table` after its own (`names` are its columns' names):
/// - `calls`: `request` (the canonical request, as its cache key hashes it) and `answer` (the
///   response), whole texts from the blob store;
/// - a result table with a `call_id`: `answer`, the whole answer of that call (a model's, or
///   the judge's for a verdict);
/// - a table whose rows can be rated: `human_verdict`, `human_score`, `human_comment` and
///   `rater` of its current rating (the newest), null where no one rated it.
pub(crate) fn derived_columns(table: &str, names: &[String]) -> Vec<ExportColumn> {
    use super::rating_columns::{ANSWER, HUMAN_COMMENT, HUMAN_SCORE, HUMAN_VERDICT, RATER};
    let has = |name: &str| names.iter().any(|n| n == name);
    let mut derived = Vec::new();
    if table == "calls" {
        derived.push(ExportColumn::derived(
            "request",
            Affinity::Text,
            blob_text("t.cache_key"),
        ));
        derived.push(ExportColumn::derived(
            ANSWER,
            Affinity::Text,
            blob_text("t.response_sha256"),
        ));
        return derived;
    }
    if !RESULT_TABLES.iter().any(|t| t.name == table) {
        return derived;
    }
    if has("call_id") && !has(ANSWER) {
        derived.push(ExportColumn::derived(
            ANSWER,
            Affinity::Text,
            "SELECT CAST(b.content AS TEXT) FROM calls c JOIN blobs b \
             ON b.sha256 = c.response_sha256 WHERE c.id = t.call_id"
                .to_owned(),
        ));
    }
    if has("uid") && super::RATED_TABLES.contains(&table) {
        for (name, column, affinity) in [
            (HUMAN_VERDICT, "verdict", Affinity::Text),
            (HUMAN_SCORE, "score", Affinity::Integer),
            (HUMAN_COMMENT, "comment", Affinity::Text),
            (RATER, "rater", Affinity::Text),
        ] {
            derived.push(ExportColumn {
                from_ratings: true,
                ..ExportColumn::derived(
                    name,
                    affinity,
                    format!(
                        "SELECT r.{column} FROM ratings r WHERE r.result_uid = t.uid AND {} \
                         ORDER BY r.id DESC LIMIT 1",
                        super::ratings::CURRENT
                    ),
                )
            });
        }
    }
    derived
}

/// Some rows of a table, column by column, in the order of the columns asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnBatch {
    pub rows: usize,
    pub columns: Vec<ColumnValues>,
}

/// One column's values of a batch. `present` has one entry a row (false: NULL); the values
/// are those of the rows present only, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValues {
    Integer {
        values: Vec<i64>,
        present: Vec<bool>,
    },
    Real {
        values: Vec<f64>,
        present: Vec<bool>,
    },
    /// UTF-8 texts end to end in `bytes`; the `n`th present value ends at `ends[n]`.
    Text {
        bytes: Vec<u8>,
        ends: Vec<usize>,
        present: Vec<bool>,
    },
}

impl ColumnValues {
    /// An empty column of `affinity`, with room for `rows`; `None` for a BLOB column.
    fn with_capacity(affinity: Affinity, rows: usize) -> Option<Self> {
        Some(match affinity {
            Affinity::Integer => Self::Integer {
                values: Vec::with_capacity(rows),
                present: Vec::with_capacity(rows),
            },
            Affinity::Real | Affinity::Numeric => Self::Real {
                values: Vec::with_capacity(rows),
                present: Vec::with_capacity(rows),
            },
            Affinity::Text => Self::Text {
                bytes: Vec::new(),
                ends: Vec::with_capacity(rows),
                present: Vec::with_capacity(rows),
            },
            Affinity::Blob => return None,
        })
    }

    /// Appends one value, converted to the column's type; `Err` says why it cannot be.
    fn push(&mut self, value: ValueRef<'_>) -> std::result::Result<(), String> {
        match (self, value) {
            (
                Self::Integer { present, .. }
                | Self::Real { present, .. }
                | Self::Text { present, .. },
                ValueRef::Null,
            ) => present.push(false),
            (Self::Integer { values, present }, v) => {
                values.push(match v {
                    ValueRef::Integer(i) => i,
                    // A whole REAL in an INTEGER column (SQLite keeps 2.0 as 2 there).
                    ValueRef::Real(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => f as i64,
                    ValueRef::Text(t) => std::str::from_utf8(t)
                        .ok()
                        .and_then(|s| s.trim().parse().ok())
                        .ok_or_else(|| format!("the text {:?} is not a whole number", lossy(t)))?,
                    other => return Err(format!("{} is not a whole number", described(other))),
                });
                present.push(true);
            }
            (Self::Real { values, present }, v) => {
                values.push(match v {
                    ValueRef::Integer(i) => i as f64,
                    ValueRef::Real(f) => f,
                    ValueRef::Text(t) => std::str::from_utf8(t)
                        .ok()
                        .and_then(|s| s.trim().parse().ok())
                        .ok_or_else(|| format!("the text {:?} is not a number", lossy(t)))?,
                    other => return Err(format!("{} is not a number", described(other))),
                });
                present.push(true);
            }
            (
                Self::Text {
                    bytes,
                    ends,
                    present,
                },
                v,
            ) => {
                match v {
                    ValueRef::Text(t) => match std::str::from_utf8(t) {
                        Ok(s) => bytes.extend_from_slice(s.as_bytes()),
                        // Not UTF-8 (written by another program): readers refuse such a
                        // string column, so the bytes that are not become U+FFFD.
                        Err(_) => bytes.extend_from_slice(lossy(t).as_bytes()),
                    },
                    ValueRef::Integer(i) => bytes.extend_from_slice(i.to_string().as_bytes()),
                    ValueRef::Real(f) => bytes.extend_from_slice(f.to_string().as_bytes()),
                    other => return Err(format!("{} is not a text", described(other))),
                }
                ends.push(bytes.len());
                present.push(true);
            }
        }
        Ok(())
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn described(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Blob(b) => format!("a blob of {} bytes", b.len()),
        other => format!("{other:?}"),
    }
}

/// `"name"`, an identifier quoted for SQL.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A run as a partition of the export: its id, kind and the value of `run=` in paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPartition {
    pub id: i64,
    pub kind: String,
    /// The run's `uid`, or its id should it have none.
    pub value: String,
}

/// A read transaction: everything read through the store until it is dropped sees one state
/// of the database, whatever other processes commit meanwhile.
#[must_use = "the snapshot ends when dropped"]
pub struct Snapshot<'a> {
    store: &'a Store,
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        // Nothing was written: ending it cannot lose anything.
        let _ = self.store.conn.execute_batch("COMMIT");
    }
}

impl Store {
    /// Starts a read transaction that lasts as long as the returned snapshot.
    pub(crate) fn read_snapshot(&self) -> Result<Snapshot<'_>> {
        self.conn.execute_batch("BEGIN DEFERRED")?;
        // A read transaction starts at its first read: make it now.
        self.conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        Ok(Snapshot { store: self })
    }

    /// The columns of `table` as exported, in the table's order then those the export adds
    /// ([`derived_columns`]), and the names of those left out (BLOB columns: bytes). `None`
    /// when the database has no such table.
    pub(crate) fn export_columns(
        &self,
        table: &str,
    ) -> Result<Option<(Vec<ExportColumn>, Vec<String>)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, type FROM pragma_table_info(?1) ORDER BY cid")?;
        let all = stmt
            .query_map([table], |r| {
                let name: String = r.get(0)?;
                let declared: String = r.get(1)?;
                Ok(ExportColumn {
                    affinity: Affinity::of_declared(&declared),
                    name,
                    declared,
                    expr: None,
                    from_ratings: false,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if all.is_empty() {
            return Ok(None);
        }
        let names: Vec<String> = all.iter().map(|c| c.name.clone()).collect();
        let mut all = all;
        all.extend(derived_columns(table, &names));
        let (kept, skipped): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|c| c.affinity != Affinity::Blob);
        Ok(Some((kept, skipped.into_iter().map(|c| c.name).collect())))
    }

    /// The names of the database's tables, sorted.
    #[cfg(test)]
    pub(crate) fn table_names(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
             ORDER BY name",
        )?;
        Ok(stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?)
    }

    /// The partitions of runs `ids`, in the order given; an id with no run is left out.
    pub(crate) fn run_partitions(&self, ids: &[i64]) -> Result<Vec<RunPartition>> {
        // Every run has a uid since V17 (backfilled); the id stands in should one be missing.
        let sql = "SELECT id, kind, coalesce(uid, CAST(id AS TEXT)) FROM runs WHERE id = ?1";
        let mut stmt = self.conn.prepare(sql)?;
        let mut partitions = Vec::with_capacity(ids.len());
        for &id in ids {
            let mut rows = stmt.query([id])?;
            if let Some(r) = rows.next()? {
                partitions.push(RunPartition {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    value: r.get(2)?,
                });
            }
        }
        Ok(partitions)
    }

    /// The columns of a result table that hold a call's id (its foreign keys to `calls`; those
    /// of `bench_rows` for its view `bench_results`, whose columns keep their names).
    fn call_columns(&self, table: &str) -> Result<Vec<String>> {
        let physical = match table {
            "bench_results" => "bench_rows",
            other => other,
        };
        let mut stmt = self.conn.prepare(
            "SELECT \"from\" FROM pragma_foreign_key_list(?1) WHERE \"table\" = 'calls'",
        )?;
        Ok(stmt
            .query_map([physical], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?)
    }

    /// The SQL of the calls run `?1`'s result rows reference, each once, in id order: the way
    /// that needs no memory of the ids, taken when [`CallRefs`] gave up gathering them.
    fn referenced_calls_query(&self, list: &str) -> Result<String> {
        let mut referenced = Vec::new();
        for table in RESULT_TABLES {
            if self.export_columns(table.name)?.is_none() {
                continue;
            }
            for column in self.call_columns(table.name)? {
                referenced.push(format!(
                    "SELECT t.{} {}",
                    quoted(&column),
                    table.rows_of_run()
                ));
            }
        }
        Ok(if referenced.is_empty() {
            format!("SELECT {list} FROM calls t WHERE 0")
        } else {
            format!(
                "SELECT {list} FROM calls t WHERE t.id IN ({}) ORDER BY t.id",
                referenced.join(" UNION ")
            )
        })
    }

    /// Reads `source`'s rows of run `run_id`, `columns` of them (none a BLOB column), and hands
    /// them to `sink` in batches of `batch_rows` rows (the last one shorter; none when there is
    /// no row). Only one batch is held at a time. Returns how many rows it read.
    ///
    /// `calls` carries the run's call references from its result tables to its calls: reading
    /// a result table adds the ids in its columns that reference `calls`; reading the calls
    /// takes them (so read the result tables first, with the same `calls`). Results are read
    /// in the order of the table's index on the run; calls and runs by id.
    pub(crate) fn export_rows<E: From<StoreError>>(
        &self,
        source: RowSource,
        run_id: i64,
        columns: &[ExportColumn],
        batch_rows: usize,
        calls: &mut CallRefs,
        mut sink: impl FnMut(ColumnBatch) -> std::result::Result<(), E>,
    ) -> std::result::Result<u64, E> {
        if let Some(blob) = columns.iter().find(|c| c.affinity == Affinity::Blob) {
            return Err(StoreError::ExportValue {
                table: source.table().to_owned(),
                column: blob.name.clone(),
                detail: "a BLOB column is not exported".to_owned(),
            }
            .into());
        }
        let rated = columns.iter().any(|c| c.from_ratings)
            && self
                .conn
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM ratings WHERE run_id = ?1)")
                .and_then(|mut s| s.query_row([run_id], |r| r.get::<_, bool>(0)))
                .map_err(StoreError::from)?;
        let list = columns
            .iter()
            .map(|c| c.select(rated))
            .collect::<Vec<_>>()
            .join(", ");
        let mut reader = BatchReader::new(source.table(), columns, batch_rows);
        match source {
            RowSource::Results(table) => {
                // Where the call ids are among the columns read; a call column not read
                // (never so today) leaves the calls to the query that finds them itself.
                let mut positions = Vec::new();
                for name in self.call_columns(table.name)? {
                    match columns.iter().position(|c| c.name == name) {
                        Some(i) => positions.push(i),
                        None => calls.give_up(),
                    }
                }
                let sql = format!("SELECT {list} {}", table.rows_of_run());
                let mut stmt = self.conn.prepare(&sql).map_err(StoreError::from)?;
                let mut rows = stmt.query([run_id]).map_err(StoreError::from)?;
                while let Some(row) = rows.next().map_err(StoreError::from)? {
                    for &i in &positions {
                        if let ValueRef::Integer(id) = row.get_ref(i).map_err(StoreError::from)? {
                            calls.add(id);
                        }
                    }
                    reader.push(row, 0, &mut sink)?;
                }
            }
            RowSource::Runs => {
                let sql = format!("SELECT {list} FROM runs t WHERE t.id = ?1");
                let mut stmt = self.conn.prepare(&sql).map_err(StoreError::from)?;
                let mut rows = stmt.query([run_id]).map_err(StoreError::from)?;
                while let Some(row) = rows.next().map_err(StoreError::from)? {
                    reader.push(row, 0, &mut sink)?;
                }
            }
            RowSource::Calls => self.read_calls(run_id, &list, calls, &mut reader, &mut sink)?,
        }
        reader.finish(&mut sink)
    }

    /// The calls of [`Store::export_rows`]: those `calls` gathered from the result tables,
    /// else those a query finds referenced by the run's rows.
    fn read_calls<E: From<StoreError>>(
        &self,
        run_id: i64,
        list: &str,
        calls: &mut CallRefs,
        reader: &mut BatchReader<'_>,
        sink: &mut impl FnMut(ColumnBatch) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        match calls.take() {
            Some(ids) => {
                // The calls of a run are mostly neighbours: each cluster of ids is read in one
                // pass over its id range, the ids not referenced skipped.
                let sql =
                    format!("SELECT t.rowid, {list} FROM calls t WHERE t.rowid BETWEEN ?1 AND ?2");
                let mut stmt = self.conn.prepare(&sql).map_err(StoreError::from)?;
                let mut next = 0;
                for (low, high) in clusters(&ids) {
                    let mut rows = stmt.query([low, high]).map_err(StoreError::from)?;
                    while let Some(row) = rows.next().map_err(StoreError::from)? {
                        let id: i64 = row.get(0).map_err(StoreError::from)?;
                        while next < ids.len() && ids[next] < id {
                            next += 1;
                        }
                        if ids.get(next) == Some(&id) {
                            reader.push(row, 1, sink)?;
                        }
                    }
                }
            }
            None => {
                let sql = self.referenced_calls_query(list)?;
                let mut stmt = self.conn.prepare(&sql).map_err(StoreError::from)?;
                let mut rows = stmt.query([run_id]).map_err(StoreError::from)?;
                while let Some(row) = rows.next().map_err(StoreError::from)? {
                    reader.push(row, 0, sink)?;
                }
            }
        }
        Ok(())
    }
}

/// The ids of the calls a run's result rows reference, gathered as the rows are read, up to a
/// cap: past it they are dropped, and the calls are found by a query instead (slower, but its
/// memory is SQLite's, which spills to disk).
#[derive(Debug)]
pub struct CallRefs {
    ids: Vec<i64>,
    cap: usize,
    gave_up: bool,
}

impl CallRefs {
    /// At most `cap` references held (8 bytes each).
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            ids: Vec::new(),
            cap,
            gave_up: false,
        }
    }

    fn add(&mut self, id: i64) {
        if self.gave_up {
            return;
        }
        if self.ids.len() == self.cap {
            self.give_up();
            return;
        }
        self.ids.push(id);
    }

    fn give_up(&mut self) {
        self.gave_up = true;
        self.ids = Vec::new();
    }

    /// The ids gathered, sorted, each once; `None` when they were given up.
    fn take(&mut self) -> Option<Vec<i64>> {
        if self.gave_up {
            return None;
        }
        let mut ids = std::mem::take(&mut self.ids);
        ids.sort_unstable();
        ids.dedup();
        Some(ids)
    }
}

/// Sorted ids as ranges to read: ids closer than [`CLUSTER_GAP`] share a range, so a dense run
/// of calls is one pass and a lone id one lookup.
fn clusters(ids: &[i64]) -> Vec<(i64, i64)> {
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    for &id in ids {
        match ranges.last_mut() {
            Some((_, high)) if id - *high <= CLUSTER_GAP => *high = id,
            _ => ranges.push((id, id)),
        }
    }
    ranges
}

/// The most bytes of text a batch holds before it is handed on, however few its rows: the
/// answers and requests of a run's calls can be long, and a batch of 65,536 of them would
/// hold hundreds of MB.
pub const BATCH_TEXT_BYTES: usize = 32 << 20;

impl ColumnBatch {
    /// The bytes of its text columns' values.
    pub(crate) fn text_bytes(&self) -> usize {
        self.columns
            .iter()
            .map(|c| match c {
                ColumnValues::Text { bytes, .. } => bytes.len(),
                _ => 0,
            })
            .sum()
    }
}

/// Read rather than skipped: a new range costs about as much as reading this many rows.
const CLUSTER_GAP: i64 = 32;

/// Rows read into batches of columns, each full batch handed on.
struct BatchReader<'a> {
    table: &'a str,
    columns: &'a [ExportColumn],
    batch_rows: usize,
    batch: ColumnBatch,
    total: u64,
}

impl<'a> BatchReader<'a> {
    fn new(table: &'a str, columns: &'a [ExportColumn], batch_rows: usize) -> Self {
        let batch_rows = batch_rows.max(1);
        Self {
            table,
            columns,
            batch_rows,
            batch: Self::empty(columns, batch_rows),
            total: 0,
        }
    }

    fn empty(columns: &[ExportColumn], rows: usize) -> ColumnBatch {
        ColumnBatch {
            rows: 0,
            columns: columns
                .iter()
                .filter_map(|c| ColumnValues::with_capacity(c.affinity, rows))
                .collect(),
        }
    }

    /// Appends `row`, whose columns start at `first`; hands the batch on when it is full.
    fn push<E: From<StoreError>>(
        &mut self,
        row: &rusqlite::Row<'_>,
        first: usize,
        sink: &mut impl FnMut(ColumnBatch) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        for (i, values) in self.batch.columns.iter_mut().enumerate() {
            let value = row.get_ref(first + i).map_err(StoreError::from)?;
            values
                .push(value)
                .map_err(|detail| StoreError::ExportValue {
                    table: self.table.to_owned(),
                    column: self.columns[i].name.clone(),
                    detail,
                })?;
        }
        self.batch.rows += 1;
        self.total += 1;
        if self.batch.rows == self.batch_rows || self.batch.text_bytes() >= BATCH_TEXT_BYTES {
            let full =
                std::mem::replace(&mut self.batch, Self::empty(self.columns, self.batch_rows));
            sink(full)?;
        }
        Ok(())
    }

    /// Hands on the last, shorter batch; returns how many rows were read.
    fn finish<E>(
        self,
        sink: &mut impl FnMut(ColumnBatch) -> std::result::Result<(), E>,
    ) -> std::result::Result<u64, E> {
        if self.batch.rows > 0 {
            sink(self.batch)?;
        }
        Ok(self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_follows_sqlites_rules_in_their_order() {
        for (declared, affinity) in [
            ("INTEGER", Affinity::Integer),
            ("bigint", Affinity::Integer),
            ("TEXT", Affinity::Text),
            ("VARCHAR(36)", Affinity::Text),
            // Rule 1 comes first: INT wins over CHAR.
            ("CHARINT", Affinity::Integer),
            ("BLOB", Affinity::Blob),
            ("", Affinity::Blob),
            ("REAL", Affinity::Real),
            ("DOUBLE PRECISION", Affinity::Real),
            ("FLOAT", Affinity::Real),
            ("NUMERIC", Affinity::Numeric),
            ("BOOLEAN", Affinity::Numeric),
        ] {
            assert_eq!(Affinity::of_declared(declared), affinity, "{declared}");
        }
    }

    #[test]
    fn every_table_is_exported_or_left_out_with_a_reason() {
        let store = Store::open_in_memory().unwrap();
        let exported = RESULT_TABLES
            .iter()
            .map(|t| t.name)
            .chain(["calls", "runs"]);
        let mut known: Vec<&str> = exported
            .chain(NOT_EXPORTED.iter().map(|(t, _)| *t))
            .collect();
        known.sort_unstable();
        let tables = store.table_names().unwrap();
        let unknown: Vec<&String> = tables
            .iter()
            .filter(|t| !known.contains(&t.as_str()))
            .collect();
        assert!(
            unknown.is_empty(),
            "tables neither exported nor in NOT_EXPORTED: {unknown:?}"
        );
        for table in RESULT_TABLES {
            assert!(
                store.export_columns(table.name).unwrap().is_some(),
                "{} is not in the schema",
                table.name
            );
        }
    }

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a test reads as one scenario (or table), top to bottom"
    )]
    fn rows_come_in_batches_with_their_nulls_and_the_calls_they_reference() {
        let store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let other = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        store
            .conn
            .execute_batch(&format!(
                "INSERT INTO calls (id, cache_key, provider, model, status, attempts, created_at, latency_ms)
                 VALUES (1, 'k1', 'openai', 'm', 'ok', 1, 't', 12.5),
                        (2, 'k2', 'openai', 'm', 'ok', 1, 't', NULL),
                        (3, 'k3', 'openai', 'm', 'error', 2, 't', 3);
                 INSERT INTO bench_results (run_id, model_index, prompt_index, repeat_index, model_ref,
                        provider, model_id, prompt_name, method, call_id, cache_hit, status, detail,
                        created_at, judge_call_id)
                 VALUES ({run}, 0, 0, 0, 'openai:m', 'openai', 'm', 'p0', 'exact', 1, 0, 'passed', NULL, 't', 2),
                        ({run}, 0, 1, 0, 'openai:m', 'openai', 'm', 'p1', 'exact', 1, 1, 'failed', 'no', 't', NULL),
                        ({run}, 0, 2, 0, 'openai:m', 'openai', 'm', 'p2', 'exact', NULL, 0, 'error', 'é', 't', NULL),
                        ({other}, 0, 0, 0, 'openai:m', 'openai', 'm', 'p0', 'exact', 3, 0, 'passed', NULL, 't', NULL);"
            ))
            .unwrap();
        let bench = RowSource::Results(RESULT_TABLES[0]);
        let (columns, skipped) = store.export_columns("bench_results").unwrap().unwrap();
        assert!(skipped.is_empty());
        let wanted: Vec<ExportColumn> = columns
            .into_iter()
            .filter(|c| ["prompt_index", "detail", "latency_ms"].contains(&c.name.as_str()))
            .collect();
        let mut batches = Vec::new();
        let n = store
            .export_rows::<StoreError>(bench, run, &wanted, 2, &mut CallRefs::new(10), |b| {
                batches.push(b);
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            batches.iter().map(|b| b.rows).collect::<Vec<_>>(),
            [2, 1],
            "batches of 2"
        );
        assert_eq!(
            batches[0].columns[0],
            ColumnValues::Integer {
                values: vec![0, 1],
                present: vec![true, true]
            }
        );
        assert_eq!(
            batches[0].columns[1],
            ColumnValues::Text {
                bytes: b"no".to_vec(),
                ends: vec![2],
                present: vec![false, true]
            }
        );
        assert_eq!(
            batches[1].columns[1],
            ColumnValues::Text {
                bytes: "é".as_bytes().to_vec(),
                ends: vec![2],
                present: vec![true]
            }
        );
        assert_eq!(
            batches[1].columns[2],
            ColumnValues::Real {
                values: vec![],
                present: vec![false]
            }
        );

        // The run's calls: 1 (twice referenced, once exported) and its judge's 2; not 3. The
        // same whether the ids were gathered while reading the results (a cap of 10) or
        // found by the query (a cap of 1, exceeded; or a call column not read).
        let (all_results, _) = store.export_columns("bench_results").unwrap().unwrap();
        let (call_columns, _) = store.export_columns("calls").unwrap().unwrap();
        let ids: Vec<ExportColumn> = call_columns
            .into_iter()
            .filter(|c| c.name == "id" || c.name == "latency_ms")
            .collect();
        for (cap, results) in [(10, &all_results), (1, &all_results), (10, &wanted)] {
            let mut refs = CallRefs::new(cap);
            store
                .export_rows::<StoreError>(bench, run, results, 2, &mut refs, |_| Ok(()))
                .unwrap();
            assert_eq!(refs.gave_up, cap == 1 || results == &wanted, "cap {cap}");
            let mut calls = Vec::new();
            store
                .export_rows::<StoreError>(RowSource::Calls, run, &ids, 100, &mut refs, |b| {
                    calls.push(b);
                    Ok(())
                })
                .unwrap();
            assert_eq!(calls.len(), 1);
            assert_eq!(
                calls[0].columns,
                [
                    ColumnValues::Integer {
                        values: vec![1, 2],
                        present: vec![true, true]
                    },
                    ColumnValues::Real {
                        values: vec![12.5],
                        present: vec![true, false]
                    }
                ],
                "cap {cap}"
            );
        }

        // A run without rows: no batch at all.
        let empty = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let mut none = 0;
        store
            .export_rows::<StoreError>(bench, empty, &wanted, 2, &mut CallRefs::new(10), |_| {
                none += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(none, 0);
    }

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a test reads as one scenario (or table), top to bottom"
    )]
    fn the_export_adds_answers_requests_and_the_current_human_rating() {
        use crate::store::{NewRating, Outcome, Verdict};
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let unrated = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let call = store
            .insert_answered("k1", "the whole answer\nof two lines")
            .id;
        let mut rows = vec![
            crate::store::bench::tests::row(run, 0, 0, Outcome::Passed),
            crate::store::bench::tests::row(run, 0, 1, Outcome::Failed),
            crate::store::bench::tests::row(unrated, 0, 0, Outcome::Passed),
        ];
        rows[0].call_id = Some(call);
        rows[2].call_id = Some(call);
        store.insert_bench_results(&rows).unwrap();
        let uid: String = store
            .conn
            .query_row(
                "SELECT uid FROM bench_results WHERE run_id = ?1 AND prompt_index = 0",
                [run],
                |r| r.get(0),
            )
            .unwrap();
        for verdict in [Verdict::Fail, Verdict::Pass] {
            store
                .add_rating(&NewRating {
                    run_id: run,
                    result_uid: uid.clone(),
                    verdict: Some(verdict),
                    score: Some(4),
                    comment: None,
                    rater: "ann".into(),
                    ..NewRating::default()
                })
                .unwrap();
        }
        let (columns, _) = store.export_columns("bench_results").unwrap().unwrap();
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names[names.len() - 5..],
            [
                "answer",
                "human_verdict",
                "human_score",
                "human_comment",
                "rater"
            ]
        );
        let wanted: Vec<ExportColumn> = columns
            .into_iter()
            .filter(|c| ["answer", "human_verdict", "human_score"].contains(&c.name.as_str()))
            .collect();
        let read = |run_id: i64| {
            let mut batches = Vec::new();
            store
                .export_rows::<StoreError>(
                    RowSource::Results(RESULT_TABLES[0]),
                    run_id,
                    &wanted,
                    10,
                    &mut CallRefs::new(10),
                    |b| {
                        batches.push(b);
                        Ok(())
                    },
                )
                .unwrap();
            batches.remove(0).columns
        };
        let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).unwrap();
        let rated = read(run);
        let ColumnValues::Text { bytes, present, .. } = &rated[0] else {
            panic!("{rated:?}")
        };
        assert_eq!(text(bytes), "the whole answer\nof two lines");
        assert_eq!(present, &[true, false], "the second result has no call");
        let ColumnValues::Text { bytes, present, .. } = &rated[1] else {
            panic!("{rated:?}")
        };
        assert_eq!(
            (text(bytes), present.clone()),
            ("pass".to_owned(), vec![true, false])
        );
        assert_eq!(
            rated[2],
            ColumnValues::Integer {
                values: vec![4],
                present: vec![true, false]
            }
        );
        // A run no one rated: its answer, and no rating.
        let other = read(unrated);
        assert!(matches!(&other[0], ColumnValues::Text { present, .. } if present == &[true]));
        assert!(matches!(&other[1], ColumnValues::Text { present, .. } if present == &[false]));

        // The calls: their request and answer.
        let (calls, _) = store.export_columns("calls").unwrap().unwrap();
        let texts: Vec<ExportColumn> = calls
            .into_iter()
            .filter(|c| c.name == "request" || c.name == "answer")
            .collect();
        let mut refs = CallRefs::new(10);
        store
            .export_rows::<StoreError>(
                RowSource::Results(RESULT_TABLES[0]),
                run,
                &wanted,
                10,
                &mut refs,
                |_| Ok(()),
            )
            .unwrap();
        let mut got = Vec::new();
        store
            .export_rows::<StoreError>(RowSource::Calls, run, &texts, 10, &mut refs, |b| {
                got.push(b);
                Ok(())
            })
            .unwrap();
        let ColumnValues::Text { bytes, ends, .. } = &got[0].columns[0] else {
            panic!()
        };
        assert_eq!(text(&bytes[..ends[0]]), "{}", "the request as stored");
        let ColumnValues::Text { bytes, .. } = &got[0].columns[1] else {
            panic!()
        };
        assert_eq!(text(bytes), "the whole answer\nof two lines");
    }

    #[test]
    fn a_batch_is_handed_on_when_its_texts_are_large() {
        let columns = [ExportColumn::new("t", Affinity::Text)];
        let store = Store::open_in_memory().unwrap();
        let big = "x".repeat(BATCH_TEXT_BYTES / 2 + 1);
        let mut stmt = store
            .conn
            .prepare("SELECT ?1 UNION ALL SELECT ?1 UNION ALL SELECT ?1")
            .unwrap();
        let mut rows = stmt.query([&big]).unwrap();
        let mut reader = BatchReader::new("t", &columns, 1000);
        let mut sizes = Vec::new();
        let mut sink = |b: ColumnBatch| -> Result<()> {
            sizes.push(b.rows);
            Ok(())
        };
        while let Some(row) = rows.next().unwrap() {
            reader.push(row, 0, &mut sink).unwrap();
        }
        reader.finish(&mut sink).unwrap();
        assert_eq!(sizes, [2, 1], "two halves and more reach the cap");
    }

    #[test]
    fn close_ids_share_a_range_and_far_ones_do_not() {
        assert_eq!(clusters(&[]), []);
        assert_eq!(
            clusters(&[1, 2, 5, 33, 34, 100, 1_000_000]),
            [(1, 34), (100, 100), (1_000_000, 1_000_000)]
        );
    }

    #[test]
    fn calls_are_read_in_ranges_skipping_the_ids_not_referenced() {
        let store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let mut sql = String::from("BEGIN;");
        for id in 1..=200 {
            sql.push_str(&format!(
                "INSERT INTO calls (id, cache_key, provider, model, status, attempts, created_at)
                 VALUES ({id}, 'k{id}', 'p', 'm', 'ok', 1, 't');"
            ));
        }
        // Every third call of 1..=90, and 200: two ranges, with calls between to skip.
        for (i, call) in (1..=90).step_by(3).chain([200]).enumerate() {
            sql.push_str(&format!(
                "INSERT INTO bench_results (run_id, model_index, prompt_index, repeat_index,
                        model_ref, provider, model_id, prompt_name, method, call_id, cache_hit,
                        status, created_at)
                 VALUES ({run}, 0, {i}, 0, 'p:m', 'p', 'm', 'x', 'exact', {call}, 0, 'passed', 't');"
            ));
        }
        sql.push_str("COMMIT;");
        store.conn.execute_batch(&sql).unwrap();
        let (results, _) = store.export_columns("bench_results").unwrap().unwrap();
        let id = [ExportColumn::new("id", Affinity::Integer)];
        let read = |cap: usize| {
            let mut refs = CallRefs::new(cap);
            store
                .export_rows::<StoreError>(
                    RowSource::Results(RESULT_TABLES[0]),
                    run,
                    &results,
                    1000,
                    &mut refs,
                    |_| Ok(()),
                )
                .unwrap();
            let mut got = Vec::new();
            store
                .export_rows::<StoreError>(RowSource::Calls, run, &id, 7, &mut refs, |b| {
                    if let ColumnValues::Integer { values, .. } = &b.columns[0] {
                        got.extend(values.iter().copied());
                    }
                    Ok(())
                })
                .unwrap();
            got
        };
        let expected: Vec<i64> = (1..=90).step_by(3).chain([200]).collect();
        assert_eq!(read(1000), expected, "gathered ids");
        assert_eq!(read(5), expected, "past the cap: the query");
    }

    #[test]
    fn a_value_of_the_wrong_type_names_its_table_and_column() {
        let store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        store
            .conn
            .execute("UPDATE runs SET pid = 'not a pid' WHERE id = ?1", [run])
            .unwrap();
        let (columns, _) = store.export_columns("runs").unwrap().unwrap();
        let e = store
            .export_rows::<StoreError>(
                RowSource::Runs,
                run,
                &columns,
                10,
                &mut CallRefs::new(10),
                |_| Ok(()),
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runs.pid") && e.contains("not a whole number"),
            "{e}"
        );
    }

    #[test]
    fn a_run_is_partitioned_by_its_uid() {
        let store = Store::open_in_memory().unwrap();
        let a = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let b = store
            .create_run(crate::kind::ExperimentKind::Review, None, None, "{}")
            .unwrap();
        let uid = |id: i64| -> String {
            store
                .conn
                .query_row("SELECT uid FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .unwrap()
        };
        let parts = store.run_partitions(&[a, 999, b]).unwrap();
        assert_eq!(
            parts,
            [
                RunPartition {
                    id: a,
                    kind: "bench".into(),
                    value: uid(a)
                },
                RunPartition {
                    id: b,
                    kind: "review".into(),
                    value: uid(b)
                }
            ]
        );
        assert_ne!(uid(a), uid(b));
        assert_eq!(uid(a).len(), 36, "a UUID");
    }
}
