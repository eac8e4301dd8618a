//! Which shards a merge joins: the shard runs of each database, and the checks that refuse
//! what must not be merged (shards of two plans, of two counts, a shard run twice, one
//! missing or unfinished) before OUT is touched.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{Connection, OptionalExtension, params};

use super::{Input, MergeError, PlanMerged};
use crate::kind::ExperimentKind;
use crate::store::stored::in_row;
use crate::store::{Result as StoreResult, RunStatus, StoreError, merged_run_uid};

/// A shard run as an input holds it.
#[derive(Debug, Clone)]
pub(super) struct ShardRun {
    pub(super) id: i64,
    pub(super) uid: String,
    pub(super) plan: String,
    pub(super) index: u32,
    pub(super) count: u32,
    pub(super) status: RunStatus,
    /// The data files it read (a benchmark's `cases: {from: …}`), from its options.
    pub(super) data: Vec<DataRead>,
}

/// A data file a shard run read: its address as written, the sha256 of its bytes, and the
/// commit an `hf://` address resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DataRead {
    pub(super) address: String,
    pub(super) sha256: String,
    pub(super) revision: Option<String>,
}

/// The data files of a run's `options_json` (its `inputs` of kind `data`).
fn data_read(options: Option<&str>) -> Vec<DataRead> {
    let Some(options) = options.and_then(|o| serde_json::from_str::<serde_json::Value>(o).ok())
    else {
        return Vec::new();
    };
    let text =
        |v: &serde_json::Value, key: &str| v.get(key).and_then(|x| x.as_str()).map(str::to_owned);
    options
        .get("inputs")
        .and_then(|i| i.as_array())
        .into_iter()
        .flatten()
        .filter(|i| i.get("kind").and_then(|k| k.as_str()) == Some("data"))
        .filter_map(|i| {
            Some(DataRead {
                address: text(i, "name")?,
                sha256: text(i, "sha256")?,
                revision: text(i, "revision"),
            })
        })
        .collect()
}

/// The shard runs of a database, the newest of each (plan, k), and the older ones.
pub(super) fn shard_runs(conn: &Connection) -> StoreResult<(Vec<ShardRun>, Vec<ShardRun>)> {
    let mut stmt = conn.prepare(
        "SELECT id, uid, plan_sha256, shard_index, shard_count, status, options_json FROM runs
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
            data: data_read(r.get::<_, Option<String>>(6)?.as_deref()),
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
pub(super) struct Joined {
    pub(super) plan: String,
    pub(super) count: u32,
    pub(super) partial: bool,
}

/// Refuses what must not be merged; returns the plan whose shards are joined.
pub(super) fn validate(
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
pub(super) fn short(plan: &str) -> String {
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
        if let Some(differs) = data_differs(inputs) {
            return Err(differs);
        }
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

/// When shards of two plans read one data file as different bytes (an `hf://` branch that
/// moved between them, a local file edited): the file, what each input read, and the fix.
fn data_differs(inputs: &[Input]) -> Option<MergeError> {
    let mut read: BTreeMap<&str, Vec<(&Input, &DataRead)>> = BTreeMap::new();
    for input in inputs {
        for data in input.shards.iter().flat_map(|s| &s.data) {
            let seen = read.entry(data.address.as_str()).or_default();
            if !seen
                .iter()
                .any(|(i, d)| std::ptr::eq(*i, input) && d.sha256 == data.sha256)
            {
                seen.push((input, data));
            }
        }
    }
    let (address, seen) = read
        .into_iter()
        .find(|(_, seen)| seen.iter().any(|(_, d)| d.sha256 != seen[0].1.sha256))?;
    let (first, other) = (
        seen[0].1,
        seen.iter().find(|(_, d)| d.sha256 != seen[0].1.sha256)?,
    );
    let what = |input: &Input, data: &DataRead| match &data.revision {
        Some(commit) => format!("{} read commit {commit}", input.path.display()),
        None => format!(
            "{} read sha256 {}",
            input.path.display(),
            short(&data.sha256)
        ),
    };
    let described = format!("{} and {}", what(seen[0].0, first), what(other.0, other.1));
    let fix = match (&first.revision, hf_pinned(address, first.revision.as_deref())) {
        (Some(_), Some(pinned)) => format!(
            "its revision moved between the shards; pin a commit in the address ({pinned}) so that every shard reads the same bytes, and run the shards again"
        ),
        _ => "the file changed between the shards; give every shard the same file, and run the shards again".to_owned(),
    };
    Some(MergeError::DataDiffers {
        address: address.to_owned(),
        described,
        fix,
    })
}

/// `address` (`hf://datasets/OWNER/NAME[@REVISION]/PATH`) pinned to `commit`, when it is an
/// `hf://` address not pinned to it already. The one place the store reads an address: the
/// merge's advice names the address to write.
fn hf_pinned(address: &str, commit: Option<&str>) -> Option<String> {
    let commit = commit?;
    let rest = address.strip_prefix("hf://datasets/")?;
    let (owner, rest) = rest.split_once('/')?;
    let (name, path) = match rest.split_once('@') {
        Some((name, after)) if !name.contains('/') => {
            // A special ref keeps its slashes (refs/convert/parquet, refs/pr/3).
            let steps = if after.starts_with("refs/convert/") || after.starts_with("refs/pr/") {
                3
            } else {
                1
            };
            (name, after.splitn(steps + 1, '/').nth(steps)?)
        }
        _ => rest.split_once('/')?,
    };
    Some(format!("hf://datasets/{owner}/{name}@{commit}/{path}"))
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

/// The run a plan's shards are merged into: made from `first` (of the plan) if OUT has none.
pub(super) fn ensure_merged_run(
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
    id.ok_or_else(|| MergeError::Store(StoreError::NoSuchRun(format!("no run has the uid {uid}"))))
}

/// Sets the merged run's tally, times and status from its shards in OUT (each shard's newest
/// attempt; what was paid from every attempt): `completed` when every shard is there and
/// completed, else `partial`.
pub(super) fn settle_merged_run(
    conn: &Connection,
    joined: &Joined,
) -> Result<PlanMerged, MergeError> {
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
    fn an_hf_address_is_pinned_to_a_commit_whatever_its_revision() {
        let c = "0123456789abcdef0123456789abcdef01234567";
        for (address, pinned) in [
            (
                "hf://datasets/o/n/d/t.jsonl",
                "hf://datasets/o/n@C/d/t.jsonl",
            ),
            ("hf://datasets/o/n@main/t.csv", "hf://datasets/o/n@C/t.csv"),
            (
                "hf://datasets/o/n@refs/convert/parquet/default/train/0.parquet",
                "hf://datasets/o/n@C/default/train/0.parquet",
            ),
            (
                "hf://datasets/o/n@refs%2Fpr%2F3/a.csv",
                "hf://datasets/o/n@C/a.csv",
            ),
        ] {
            assert_eq!(
                hf_pinned(address, Some(c)),
                Some(pinned.replace('C', c)),
                "{address}"
            );
        }
        assert_eq!(hf_pinned("data/t.csv", Some(c)), None);
        assert_eq!(hf_pinned("hf://datasets/o/n/t.csv", None), None);
    }

    #[test]
    fn the_data_a_run_read_is_its_options_inputs_of_kind_data() {
        let options = r#"{"inputs": [
            {"kind": "template", "name": "t", "sha256": "aa"},
            {"kind": "data", "name": "hf://datasets/o/n/t.csv", "sha256": "bb", "revision": "c1"},
            {"kind": "data", "name": "local.csv", "sha256": "cc", "revision": null}
        ]}"#;
        assert_eq!(
            data_read(Some(options)),
            [
                DataRead {
                    address: "hf://datasets/o/n/t.csv".into(),
                    sha256: "bb".into(),
                    revision: Some("c1".into()),
                },
                DataRead {
                    address: "local.csv".into(),
                    sha256: "cc".into(),
                    revision: None,
                },
            ]
        );
        assert!(data_read(None).is_empty());
        assert!(data_read(Some("not json")).is_empty());
    }
}
