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
}

/// The shard runs of a database, the newest of each (plan, k), and the older ones.
pub(super) fn shard_runs(conn: &Connection) -> StoreResult<(Vec<ShardRun>, Vec<ShardRun>)> {
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
