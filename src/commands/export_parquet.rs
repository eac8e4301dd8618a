//! `track export parquet`: the selected runs' rows as Parquet datasets, for DuckDB, polars or
//! Spark.
//!
//! One dataset (a folder) per table: each result table, `calls` and `runs`. Each is
//! hive-partitioned by the run's kind and the run, one file a partition:
//! `DIR/bench_results/kind=bench/run=<run>/part-00000.parquet`, where `<run>` is the run's
//! `uid` (global, the same after a merge). A run's calls are those its rows reference,
//! under that run (a call two runs share is in both). `DIR/manifest.json` counts the rows of
//! each dataset and partition. Rows are read from SQLite and written a row group at a time:
//! memory does not grow with the table.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::experiment::{ExperimentKind, Interruption, Signal};
use crate::output::count;
use crate::output::parquet::{PartWriter, ROW_GROUP_ROWS, ZSTD_LEVEL, parquet_type};
use crate::store::{
    CallRefs, ExportColumn, RESULT_TABLES, RowSource, RunPartition, RunSelector, Store, StoreError,
};

/// The columns of the hive partitions, in path order. A table column of the same name (the
/// `kind` of `runs`) is not written into the files: its value is in the path, and readers
/// refuse or shadow a column that is in both.
pub const PARTITION_KEYS: [&str; 2] = ["kind", "run"];

/// The manifest's name in the export folder.
pub const MANIFEST: &str = "manifest.json";

/// The most call references of one run held in memory (8 bytes each: 64 MB). A run whose
/// rows reference more has its calls found by a query, slower but with SQLite's memory.
const CALL_REFS_CAP: usize = 8 << 20;

/// The file of each partition (one a partition; its row groups hold the batches).
const PART_FILE: &str = "part-00000.parquet";

/// What was asked: the runs' kind (`None`: every kind) and which runs (`None`: each kind's
/// default, as `track query` takes them).
#[derive(Debug, Clone, Copy)]
pub struct Selection {
    pub kind: Option<ExperimentKind>,
    pub runs: Option<RunSelector>,
}

/// The runs `selection` names, oldest first; an error that says what was missing when none.
pub(crate) fn select_runs(
    store: &Store,
    db: &Path,
    selection: Selection,
) -> anyhow::Result<Vec<i64>> {
    let kinds: Vec<ExperimentKind> = match selection.kind {
        Some(k) => vec![k],
        None => ExperimentKind::ALL.to_vec(),
    };
    let mut ids = Vec::new();
    for kind in kinds {
        let runs = selection
            .runs
            .unwrap_or_else(|| super::registry::kind(kind).default_runs());
        match store.select_runs(kind, runs) {
            Ok(found) => ids.extend(found),
            Err(StoreError::NoSuchRun(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    ids.sort_unstable();
    ids.dedup();
    if !ids.is_empty() {
        return Ok(ids);
    }
    let db = db.display();
    Err(match (selection.runs, selection.kind) {
        (Some(RunSelector::Id(id)), kind) => {
            match (store.runs_by_id(&[id])?.into_iter().next(), kind) {
                (Some(run), Some(kind)) => anyhow::anyhow!(
                    "run {id} is a {} run, not {}: leave out --kind, or give --kind {}",
                    run.kind.as_str(),
                    kind.as_str(),
                    run.kind.as_str()
                ),
                _ => anyhow::anyhow!("no run {id} in {db}; `track runs` lists the runs"),
            }
        }
        (_, Some(kind)) => anyhow::anyhow!(
            "no {} run in {db}: nothing to export; `track runs` lists the runs",
            kind.as_str()
        ),
        (_, None) => anyhow::anyhow!("no run in {db} yet: nothing to export"),
    })
}

/// The manifest: what the folder holds, dataset by dataset and partition by partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// `track parquet export`.
    pub format: String,
    pub version: u32,
    /// The track that wrote it last.
    pub written_by: String,
    pub written_at: String,
    pub compression: String,
    pub row_group_rows: usize,
    /// The hive partition keys, in path order.
    pub partitioning: Vec<String>,
    pub datasets: BTreeMap<String, Dataset>,
}

/// One dataset (table) of the export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// The rows of all its partitions.
    pub rows: u64,
    /// Its columns as written, with their Parquet and SQLite types.
    pub columns: Vec<ManifestColumn>,
    /// Columns of the table not written: BLOB columns (bytes) and those the path holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    pub partitions: Vec<Partition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestColumn {
    pub name: String,
    /// INT64, DOUBLE or STRING.
    #[serde(rename = "type")]
    pub parquet: String,
    /// As declared in SQLite.
    pub sqlite: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partition {
    pub kind: String,
    /// The value of `run=` in the path.
    pub run: String,
    pub run_id: i64,
    /// From the export folder.
    pub path: String,
    pub rows: u64,
    pub row_groups: usize,
    pub bytes: u64,
}

const FORMAT: &str = "track parquet export";

/// The export stopped by a signal between two row groups: the files it finished are whole,
/// the one it was writing is removed, and the manifest is as it was.
#[derive(Debug, thiserror::Error)]
#[error("the export was stopped by {}", .0.name())]
pub struct Interrupted(pub Signal);

/// Writes the datasets of runs `ids` into `out` and its manifest (merged with the manifest an
/// earlier export left there: partitions written again replace theirs, others stay while
/// their files do). Prints each dataset's folder and row count, then the manifest's path.
/// A signal stops it between two row groups with [`Interrupted`].
pub(crate) fn export(
    store: &Store,
    ids: &[i64],
    out: &Path,
    interruption: &Interruption,
) -> anyhow::Result<Manifest> {
    writable_folder(out)?;
    // One state of the database for every table: a run writing meanwhile does not make the
    // calls disagree with the results.
    let _snapshot = store.read_snapshot()?;
    let runs = store.run_partitions(ids)?;
    // Results first: reading them gathers the ids of the calls they reference.
    let mut sources: Vec<RowSource> = RESULT_TABLES
        .iter()
        .map(|&t| RowSource::Results(t))
        .collect();
    sources.extend([RowSource::Calls, RowSource::Runs]);
    let mut tables = Vec::new();
    let mut datasets = BTreeMap::new();
    for source in sources {
        let name = source.table();
        let Some((columns, blobs)) = store.export_columns(name)? else {
            continue;
        };
        let (columns, in_path): (Vec<ExportColumn>, Vec<ExportColumn>) = columns
            .into_iter()
            .partition(|c| !PARTITION_KEYS.contains(&c.name.as_str()));
        let dataset = Dataset {
            rows: 0,
            columns: columns.iter().map(manifest_column).collect(),
            left_out: blobs
                .into_iter()
                .chain(in_path.into_iter().map(|c| c.name))
                .collect(),
            partitions: Vec::new(),
        };
        datasets.insert(name.to_owned(), dataset);
        tables.push((source, columns));
    }

    // Run by run: only one run's call references are held at a time.
    let mut written_paths = BTreeSet::new();
    for run in &runs {
        let mut calls = CallRefs::new(CALL_REFS_CAP);
        for (source, columns) in &tables {
            let name = source.table();
            let relative = partition_path(name, run);
            let written = write_partition(
                store,
                *source,
                run,
                columns,
                &mut calls,
                &out.join(&relative),
                interruption,
            )?;
            written_paths.insert(relative.clone());
            if let Some((rows, row_groups, bytes)) = written
                && let Some(dataset) = datasets.get_mut(name)
            {
                dataset.partitions.push(Partition {
                    kind: run.kind.clone(),
                    run: run.value.clone(),
                    run_id: run.id,
                    path: relative,
                    rows,
                    row_groups,
                    bytes,
                });
            }
        }
    }
    datasets.retain(|_, d| !d.partitions.is_empty());

    let manifest = merged(read_manifest(out), datasets, &written_paths, out);
    write_manifest(out, &manifest)?;
    for (name, dataset) in &manifest.datasets {
        let runs: BTreeSet<i64> = dataset.partitions.iter().map(|p| p.run_id).collect();
        crate::output::say(format_args!(
            "{}: {}, {}",
            out.join(name).display(),
            count(dataset.rows, "row"),
            count(runs.len() as u64, "run")
        ));
    }
    crate::output::say(out.join(MANIFEST).display());
    Ok(manifest)
}

/// Creates `out` when needed and checks that a file can be made in it, before anything is read.
fn writable_folder(out: &Path) -> anyhow::Result<()> {
    if out.exists() && !out.is_dir() {
        anyhow::bail!(
            "--out {} is a file, not a folder: give a folder for the datasets",
            out.display()
        );
    }
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create the folder {}", out.display()))?;
    let probe = out.join(format!(".track-probe-{}", std::process::id()));
    std::fs::File::create(&probe)
        .with_context(|| format!("cannot write into {}", out.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// `bench_results/kind=bench/run=7/part-00000.parquet`.
fn partition_path(dataset: &str, run: &RunPartition) -> String {
    format!(
        "{dataset}/kind={}/run={}/{PART_FILE}",
        hive_escaped(&run.kind),
        hive_escaped(&run.value)
    )
}

/// A partition value as Hive writes it in a path: bytes other than letters, digits, `-`, `_`
/// and `.` as `%XX`.
fn hive_escaped(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
            escaped.push(char::from(b));
        } else {
            escaped.push_str(&format!("%{b:02X}"));
        }
    }
    if escaped.is_empty() || escaped == "." || escaped == ".." {
        // Hive's name for an empty value; `.`/`..` would not be a folder of its own.
        return "__HIVE_DEFAULT_PARTITION__".to_owned();
    }
    escaped
}

/// Writes one partition's file; `None` when the run has no row there (and no file is left
/// there from before).
fn write_partition(
    store: &Store,
    source: RowSource,
    run: &RunPartition,
    columns: &[ExportColumn],
    calls: &mut CallRefs,
    path: &Path,
    interruption: &Interruption,
) -> anyhow::Result<Option<(u64, usize, u64)>> {
    let mut writer: Option<PartWriter> = None;
    store.export_rows::<anyhow::Error>(
        source,
        run.id,
        columns,
        ROW_GROUP_ROWS,
        calls,
        |batch| {
            if let Some(signal) = interruption.received() {
                return Err(Interrupted(signal).into());
            }
            let writer = match &mut writer {
                Some(w) => w,
                None => {
                    if let Some(folder) = path.parent() {
                        std::fs::create_dir_all(folder).with_context(|| {
                            format!("cannot create the folder {}", folder.display())
                        })?;
                    }
                    writer.insert(PartWriter::create(path, columns)?)
                }
            };
            writer.write(batch)?;
            Ok(())
        },
    )?;
    match writer {
        Some(w) => {
            let written = w.finish()?;
            Ok(Some((written.rows, written.row_groups, written.bytes)))
        }
        None => {
            remove_stale(path)?;
            Ok(None)
        }
    }
}

/// Removes the file an earlier export left for a partition that now has no row, and its
/// folders when they are left empty.
fn remove_stale(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot remove {}", path.display())),
    }
    let mut folder = path.parent();
    for _ in 0..2 {
        let Some(f) = folder else { break };
        if std::fs::remove_dir(f).is_err() {
            break;
        }
        folder = f.parent();
    }
    Ok(())
}

fn manifest_column(column: &ExportColumn) -> ManifestColumn {
    let parquet = match parquet_type(column.affinity) {
        Some((_, Some(_))) => "STRING".to_owned(),
        Some((physical, None)) => physical.to_string(),
        None => "none".to_owned(),
    };
    ManifestColumn {
        name: column.name.clone(),
        parquet,
        sqlite: column.declared.clone(),
    }
}

/// The manifest an earlier export left in `out`, if it is one of ours.
fn read_manifest(out: &Path) -> Option<Manifest> {
    let text = std::fs::read_to_string(out.join(MANIFEST)).ok()?;
    let manifest: Manifest = serde_json::from_str(&text).ok()?;
    (manifest.format == FORMAT && manifest.version == 1).then_some(manifest)
}

/// This export's datasets, with the partitions of an earlier manifest that this export did not
/// write and whose files are still there.
fn merged(
    earlier: Option<Manifest>,
    mut datasets: BTreeMap<String, Dataset>,
    written: &BTreeSet<String>,
    out: &Path,
) -> Manifest {
    if let Some(earlier) = earlier {
        for (name, old) in earlier.datasets {
            let kept: Vec<Partition> = old
                .partitions
                .iter()
                .filter(|p| !written.contains(&p.path) && out.join(&p.path).is_file())
                .cloned()
                .collect();
            if kept.is_empty() {
                continue;
            }
            let dataset = datasets.entry(name).or_insert_with(|| Dataset {
                rows: 0,
                partitions: Vec::new(),
                ..old
            });
            dataset.partitions.extend(kept);
        }
    }
    for dataset in datasets.values_mut() {
        dataset
            .partitions
            .sort_by(|a, b| (&a.kind, a.run_id, &a.path).cmp(&(&b.kind, b.run_id, &b.path)));
        dataset.rows = dataset.partitions.iter().map(|p| p.rows).sum();
    }
    Manifest {
        format: FORMAT.to_owned(),
        version: 1,
        written_by: format!("track {}", env!("CARGO_PKG_VERSION")),
        written_at: crate::store::now_rfc3339(),
        compression: format!("zstd (level {ZSTD_LEVEL})"),
        row_group_rows: ROW_GROUP_ROWS,
        partitioning: PARTITION_KEYS.iter().map(|k| (*k).to_owned()).collect(),
        datasets,
    }
}

/// Writes the manifest beside the datasets, whole or not at all (a temp file renamed).
fn write_manifest(out: &Path, manifest: &Manifest) -> anyhow::Result<()> {
    let path = out.join(MANIFEST);
    let temp: PathBuf = out.join(format!(".{MANIFEST}.{}.tmp", std::process::id()));
    let text = serde_json::to_string_pretty(manifest)?;
    std::fs::write(&temp, text + "\n")
        .with_context(|| format!("cannot write {}", temp.display()))?;
    std::fs::rename(&temp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_are_escaped_as_hive_does() {
        assert_eq!(hive_escaped("0193a1b2-7c3d-7e4f"), "0193a1b2-7c3d-7e4f");
        assert_eq!(hive_escaped("a/b=c d"), "a%2Fb%3Dc%20d");
        assert_eq!(hive_escaped(""), "__HIVE_DEFAULT_PARTITION__");
        let run = RunPartition {
            id: 7,
            kind: "bench".into(),
            value: "7".into(),
        };
        assert_eq!(
            partition_path("bench_results", &run),
            "bench_results/kind=bench/run=7/part-00000.parquet"
        );
    }

    fn partition(run_id: i64, rows: u64) -> Partition {
        Partition {
            kind: "bench".into(),
            run: run_id.to_string(),
            run_id,
            path: format!("bench_results/kind=bench/run={run_id}/{PART_FILE}"),
            rows,
            row_groups: 1,
            bytes: 10,
        }
    }

    #[test]
    fn a_later_export_keeps_the_partitions_it_did_not_write_while_their_files_are_there() {
        let dir = tempfile::tempdir().unwrap();
        for run in [1, 2, 3] {
            let p = dir.path().join(partition(run, 0).path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"x").unwrap();
        }
        let dataset = |partitions: Vec<Partition>| Dataset {
            rows: 0,
            columns: vec![],
            left_out: vec![],
            partitions,
        };
        let earlier = merged(
            None,
            BTreeMap::from([(
                "bench_results".to_owned(),
                dataset(vec![partition(1, 10), partition(2, 20), partition(4, 40)]),
            )]),
            &BTreeSet::new(),
            dir.path(),
        );
        assert_eq!(earlier.datasets["bench_results"].rows, 70);
        // Now runs 2 (again, 25 rows) and 3.
        let now = BTreeMap::from([(
            "bench_results".to_owned(),
            dataset(vec![partition(2, 25), partition(3, 30)]),
        )]);
        let written = BTreeSet::from([partition(2, 0).path, partition(3, 0).path]);
        let manifest = merged(Some(earlier), now, &written, dir.path());
        let bench = &manifest.datasets["bench_results"];
        let runs: Vec<(i64, u64)> = bench
            .partitions
            .iter()
            .map(|p| (p.run_id, p.rows))
            .collect();
        // Run 4's file is gone: it is not listed.
        assert_eq!(runs, [(1, 10), (2, 25), (3, 30)]);
        assert_eq!(bench.rows, 65);
    }
}
