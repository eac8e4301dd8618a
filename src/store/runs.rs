//! Runs: one row per invocation of an experiment, with its options and status.

use std::fmt;
use std::str::FromStr;

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{OptionalExtension, params};

use super::stored::{by_name, in_row, name};
use super::{Result, Store, StoreError, now_rfc3339};
use crate::kind::ExperimentKind;

/// How a run ended (or that it has not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Completed,
    Failed,
    Interrupted,
    /// Stopped by its budget (`--budget`): a call's worst case did not fit what was left.
    /// Resumable as `interrupted` is: the same command with a larger budget finishes it.
    Budget,
    /// Its calls wait in batches submitted to a provider's batch API and not yet collected
    /// (`--detach`, or stopped while polling). Not abandoned when its process is gone: it
    /// waits by design. Resumable as `interrupted` is: the same command collects what has
    /// finished and submits nothing twice.
    Waiting,
    /// A run merged from the shards of one plan (`track merge --allow-partial`) some of
    /// whose shards were missing or unfinished: its statistics cover only what was merged.
    Partial,
    /// Recorded `running`, but its process is gone (killed, or the machine stopped). Never
    /// stored: seen by whoever looks (`experiment::observed_status`).
    Abandoned,
}

impl RunStatus {
    /// The name stored and shown.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
            Self::Budget => "budget",
            Self::Waiting => "waiting",
            Self::Partial => "partial",
            Self::Abandoned => "abandoned",
        }
    }
}

impl RunStatus {
    /// Every status, each once.
    const ALL: [Self; 8] = [
        Self::Running,
        Self::Completed,
        Self::Failed,
        Self::Interrupted,
        Self::Budget,
        Self::Waiting,
        Self::Partial,
        Self::Abandoned,
    ];

    /// The status named `name`, exactly as [`RunStatus::as_str`] writes it.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl FromStr for RunStatus {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| format!("unknown run status `{s}`"))
    }
}

impl ToSql for RunStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(name(self.as_str()))
    }
}

impl FromSql for RunStatus {
    /// Strict: an unknown status is an error, never read as another.
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        by_name(value, "run status", Self::from_name)
    }
}

impl ToSql for ExperimentKind {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(name(self.as_str()))
    }
}

impl FromSql for ExperimentKind {
    /// Strict: the stored name exactly (`bench`, not `benchmark`); an unknown kind is an error.
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        by_name(value, "experiment kind", Self::from_stored)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a run has done so far, kept in its row as outcomes land.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunTally {
    /// Calls the run planned (known when it starts; later stages may add some).
    pub planned_calls: u64,
    /// Calls with an outcome: answered, served from the cache, or failed.
    pub calls: u64,
    pub cache_hits: u64,
    /// Calls that got no answer (failed, refused for a missing key, not cached offline).
    pub failed_calls: u64,
    /// Failed calls plus the problems found in answers (unparsable, a garbage verdict).
    pub errors: u64,
    pub cost_usd: f64,
    pub paid_usd: f64,
}

/// A call of a run that got no answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RunErrorRow {
    pub stage: String,
    pub model_ref: String,
    pub item: String,
    pub error: String,
    pub call_id: Option<i64>,
    pub attempts: u32,
}

/// Which runs a query or export covers: `latest`, `all` or a run id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunSelector {
    #[default]
    Latest,
    All,
    Id(i64),
}

impl FromStr for RunSelector {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "latest" | "last" => Ok(Self::Latest),
            "all" => Ok(Self::All),
            other => other
                .parse::<i64>()
                .map(Self::Id)
                .map_err(|_| format!("`{s}` is not a run: use a run id, `latest` or `all`")),
        }
    }
}

impl fmt::Display for RunSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Latest => f.write_str("latest"),
            Self::All => f.write_str("all"),
            Self::Id(id) => write!(f, "{id}"),
        }
    }
}

/// A run with its tally, as `track runs` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    pub id: i64,
    pub kind: ExperimentKind,
    pub file: Option<String>,
    /// The canonical references of the models it calls, comma-separated.
    pub models: Option<String>,
    /// The command line that started it, after `track`.
    pub command: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// As stored: `running` may be a run whose process is gone.
    pub status: RunStatus,
    pub tally: RunTally,
    /// The most it was allowed to spend, in USD (`--budget`, `budget:`); `None`: no cap.
    pub budget_usd: Option<f64>,
    /// For one shard of a plan not merged into its plan's run: `(k, N)` of `--shard k/N`.
    pub shard: Option<(u32, u32)>,
    /// For the run a plan's shards were merged into: how many shards the plan has.
    pub merged_shards: Option<u32>,
    /// How many calls its whole plan makes, all shards' (migration V19); `None`: not
    /// recorded (a run before V19, or a shard of a plan whose later stages it cannot know).
    pub plan_calls: Option<u64>,
    /// Its models without a price, comma-separated, as its options record them
    /// ([`UNPRICED_OPTION`]): the cost and paid of their answers are unknown, so its tally's
    /// are not the whole. `None`: every model had a price.
    pub unpriced: Option<String>,
    /// The run that resumed it (the same command run again, after it did not finish): the
    /// first, when several did.
    pub resumed_by: Option<i64>,
}

/// The key of a run's options (`runs.options_json`) listing its models without a price.
pub const UNPRICED_OPTION: &str = "unpriced";

/// The models without a price an options JSON lists ([`UNPRICED_OPTION`]), comma-separated;
/// `None` when it lists none.
fn unpriced_models(options_json: Option<&str>) -> Option<String> {
    let options: serde_json::Value = serde_json::from_str(options_json?).ok()?;
    let models: Vec<String> = serde_json::from_value(options.get(UNPRICED_OPTION)?.clone()).ok()?;
    (!models.is_empty()).then(|| models.join(", "))
}

impl Store {
    /// Starts a run and returns its id.
    pub fn create_run(
        &self,
        kind: ExperimentKind,
        file: Option<&str>,
        spec_sha256: Option<&str>,
        options_json: &str,
    ) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO runs (kind, file, spec_sha256, options_json, started_at, status, pid, uid)
             VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7)",
            params![
                kind,
                file,
                spec_sha256,
                options_json,
                now_rfc3339(),
                std::process::id(),
                super::new_run_uid(),
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records what names a run besides its file: the models it calls and the command line.
    pub fn set_run_identity(&self, run_id: i64, models: &str, command: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET models = ?2, command = ?3 WHERE id = ?1",
            params![run_id, models, command],
        )?;
        Ok(())
    }

    /// Records how many calls a run's whole plan makes (all its shards'; `None`: not known).
    pub(crate) fn set_run_plan_calls(&self, run_id: i64, plan_calls: Option<u64>) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET plan_calls = ?2 WHERE id = ?1",
            params![run_id, plan_calls.map(|n| n as i64)],
        )?;
        Ok(())
    }

    /// Records that run `run_id` resumed run `resumed`: the newest unfinished run of its plan
    /// (and shard) when it started, whose `track runs` row then says `resumed by`.
    pub(crate) fn set_run_resumes(&self, run_id: i64, resumed: i64) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET resumes = ?2 WHERE id = ?1",
            params![run_id, resumed],
        )?;
        Ok(())
    }

    /// Records a run's plan (its sha256) and, for a shard (`--shard k/N`), which: `(k, N)`.
    pub fn set_run_plan(
        &self,
        run_id: i64,
        plan_sha256: &str,
        shard: Option<(u32, u32)>,
    ) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET plan_sha256 = ?2, shard_index = ?3, shard_count = ?4 WHERE id = ?1",
            params![run_id, plan_sha256, shard.map(|s| s.0), shard.map(|s| s.1)],
        )?;
        Ok(())
    }

    /// Records the most a run may spend, in USD (`None`: no cap).
    pub(crate) fn set_run_budget(&self, run_id: i64, budget_usd: Option<f64>) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET budget_usd = ?2 WHERE id = ?1",
            params![run_id, budget_usd],
        )?;
        Ok(())
    }

    /// Writes a run's tally.
    pub fn update_run_tally(&self, run_id: i64, t: &RunTally) -> Result<()> {
        self.conn.prepare_cached(
            "UPDATE runs SET planned_calls = ?2, calls = ?3, cache_hits = ?4, failed_calls = ?5,
                 errors = ?6, cost_usd = ?7, paid_usd = ?8
             WHERE id = ?1",
        )?
        .execute(params![
                run_id,
                t.planned_calls as i64,
                t.calls as i64,
                t.cache_hits as i64,
                t.failed_calls as i64,
                t.errors as i64,
                t.cost_usd,
                t.paid_usd
            ])?;
        Ok(())
    }

    /// Records calls of a run that got no answer, in one transaction.
    pub(crate) fn insert_run_errors(&mut self, run_id: i64, rows: &[RunErrorRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO run_errors (run_id, stage, model_ref, item, error, call_id, attempts, created_at, uid)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            let now = now_rfc3339();
            let run_uid = super::ids::run_uid(&tx, run_id)?;
            for r in rows {
                let uid = super::uid(&[
                    "run_error".into(),
                    run_uid.as_ref().into(),
                    (&r.stage).into(),
                    (&r.model_ref).into(),
                    (&r.item).into(),
                    (&r.error).into(),
                    (&now).into(),
                    super::ids::salt().into(),
                ]);
                stmt.execute(params![
                    run_id,
                    r.stage,
                    r.model_ref,
                    r.item,
                    r.error,
                    r.call_id,
                    r.attempts,
                    now,
                    uid
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The calls of a run that got no answer, oldest first.
    pub(crate) fn run_errors(&self, run_id: i64) -> Result<Vec<RunErrorRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT stage, model_ref, item, error, call_id, attempts FROM run_errors
             WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok(RunErrorRow {
                stage: r.get(0)?,
                model_ref: r.get(1)?,
                item: r.get(2)?,
                error: r.get(3)?,
                call_id: r.get(4)?,
                attempts: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Ends, as `interrupted`, every `waiting` run other than `run_id` none of whose batches
    /// is still open: another run (`run_id`) collected or gave up what it waited for, and
    /// holds the results. Returns their ids.
    pub(crate) fn end_runs_waiting_for_nothing(&self, run_id: i64) -> Result<Vec<i64>> {
        let mut stmt = self.conn.prepare(
            "UPDATE runs SET status = 'interrupted', finished_at = ?2
             WHERE status = 'waiting' AND id != ?1 AND NOT EXISTS (
                 SELECT 1 FROM batches b WHERE b.run_id = runs.id
                 AND b.state IN ('intent', 'uploaded', 'submitted'))
             RETURNING id",
        )?;
        let mut ended = stmt
            .query_map(params![run_id, now_rfc3339()], |r| r.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        ended.sort_unstable();
        Ok(ended)
    }

    /// Marks a run as ended with `status`.
    /// The options JSON of each run of `run_ids` that has one (`runs.options_json`, from the
    /// kind's `RunHeader.options`), by run id.
    pub(crate) fn runs_options_json(
        &self,
        run_ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT options_json FROM runs WHERE id = ?1")?;
        let mut options = std::collections::HashMap::new();
        for &id in run_ids {
            let json: Option<Option<String>> = stmt.query_row([id], |r| r.get(0)).optional()?;
            if let Some(Some(json)) = json {
                options.insert(id, json);
            }
        }
        Ok(options)
    }

    pub fn finish_run(&self, run_id: i64, status: RunStatus) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1",
            params![run_id, status, now_rfc3339()],
        )?;
        Ok(())
    }

    /// The ids of the runs of `kind` that `selector` names, oldest first. A shard merged into
    /// its plan's run is that run: `latest` and `all` name the merged run, and so does the
    /// shard's own id.
    pub(crate) fn select_runs(
        &self,
        kind: ExperimentKind,
        selector: RunSelector,
    ) -> Result<Vec<i64>> {
        let ids = match selector {
            // The newest run to start (the merged run of a plan starts with its first shard).
            RunSelector::Latest => self
                .conn
                .query_row(
                    "SELECT id FROM runs WHERE kind = ?1 AND merged_into IS NULL
                     ORDER BY started_at DESC, id DESC LIMIT 1",
                    [kind],
                    |r| r.get::<_, i64>(0),
                )
                .optional()?
                .into_iter()
                .collect(),
            RunSelector::All => {
                let mut stmt = self.conn.prepare(
                    "SELECT id FROM runs WHERE kind = ?1 AND merged_into IS NULL ORDER BY id",
                )?;
                stmt.query_map([kind], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<i64>>>()?
            }
            RunSelector::Id(id) => self
                .conn
                .query_row(
                    "SELECT coalesce(merged_into, id) FROM runs WHERE id = ?1 AND kind = ?2",
                    params![id, kind],
                    |r| r.get(0),
                )
                .optional()?
                .into_iter()
                .collect(),
        };
        if ids.is_empty() {
            return Err(match selector {
                RunSelector::Id(id) => match self.runs_by_id(&[id])?.first() {
                    Some(run) => StoreError::NoSuchRun(format!(
                        "run {id} is a {} run, not a {} run",
                        run.kind.as_str(),
                        kind.as_str()
                    )),
                    None => self.no_run(id),
                },
                other => StoreError::NoSuchRun(format!(
                    "no run matches `{other}`: no {} run is recorded yet",
                    kind.as_str()
                )),
            });
        }
        Ok(ids)
    }

    /// The error of a run id `id` that names no run: it names the latest runs (ids and kinds),
    /// or says the database has none. What every command says of a `--run` (or run argument)
    /// that does not exist.
    pub(crate) fn no_run(&self, id: i64) -> StoreError {
        const SHOWN: usize = 3;
        let latest: Vec<String> = match self.list_runs() {
            Ok(runs) => runs
                .iter()
                .take(SHOWN)
                .map(|r| format!("run {} ({})", r.id, r.kind.as_str()))
                .collect(),
            Err(e) => return e,
        };
        StoreError::RunNotFound {
            id,
            latest: (!latest.is_empty()).then(|| latest.join(", ")),
        }
    }

    /// The run `id`, or the error of [`Store::no_run`] when there is none.
    pub(crate) fn existing_run(&self, id: i64) -> Result<RunInfo> {
        match self.runs_by_id(&[id])?.into_iter().next() {
            Some(run) => Ok(run),
            None => Err(self.no_run(id)),
        }
    }

    /// The run `run_id` reads as: the run its plan's shards were merged into, for a merged
    /// shard; itself otherwise (a run not in the database included).
    pub(crate) fn merged_run_of(&self, run_id: i64) -> Result<i64> {
        Ok(self
            .conn
            .query_row(
                "SELECT coalesce(merged_into, id) FROM runs WHERE id = ?1",
                [run_id],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(run_id))
    }

    /// Every run, newest first by the time it started (in a merged database a teammate's
    /// older run has a newer id), with its tally; a shard merged into its plan's run is that
    /// run.
    pub fn list_runs(&self) -> Result<Vec<RunInfo>> {
        self.query_runs(
            "WHERE merged_into IS NULL ORDER BY started_at DESC, id DESC",
            [],
        )
    }

    /// The runs of the plan `plan_sha256` (every shard of it), newest first.
    pub(crate) fn runs_of_plan(&self, plan_sha256: &str) -> Result<Vec<RunInfo>> {
        self.query_runs("WHERE plan_sha256 = ?1 ORDER BY id DESC", [plan_sha256])
    }

    /// The runs `ids` names, in id order.
    pub(crate) fn runs_by_id(&self, ids: &[i64]) -> Result<Vec<RunInfo>> {
        let mut runs = Vec::with_capacity(ids.len());
        for &id in ids {
            runs.extend(self.query_runs("WHERE id = ?1", [id])?);
        }
        Ok(runs)
    }

    pub(super) fn query_runs(
        &self,
        filter: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<RunInfo>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT id, kind, file, started_at, finished_at, status, coalesce(planned_calls, 0),
                    calls, cache_hits, failed_calls, errors, cost_usd, paid_usd, models, command,
                    budget_usd, shard_index, shard_count, plan_calls, options_json,
                    (SELECT min(s.id) FROM runs s WHERE s.resumes = runs.id)
             FROM runs {filter}"
        ))?;
        let rows = stmt.query_map(args, |r| {
            let id = r.get(0)?;
            Ok(RunInfo {
                id,
                kind: in_row(r, 1, "runs", id)?,
                file: r.get(2)?,
                models: r.get(13)?,
                command: r.get(14)?,
                started_at: r.get(3)?,
                finished_at: r.get(4)?,
                status: in_row(r, 5, "runs", id)?,
                tally: RunTally {
                    planned_calls: r.get::<_, i64>(6)? as u64,
                    calls: r.get::<_, i64>(7)? as u64,
                    cache_hits: r.get::<_, i64>(8)? as u64,
                    failed_calls: r.get::<_, i64>(9)? as u64,
                    errors: r.get::<_, i64>(10)? as u64,
                    cost_usd: r.get(11)?,
                    paid_usd: r.get(12)?,
                },
                budget_usd: r.get(15)?,
                shard: match (r.get::<_, Option<u32>>(16)?, r.get::<_, Option<u32>>(17)?) {
                    (Some(k), Some(n)) => Some((k, n)),
                    _ => None,
                },
                merged_shards: match (r.get::<_, Option<u32>>(16)?, r.get::<_, Option<u32>>(17)?) {
                    (None, Some(n)) => Some(n),
                    _ => None,
                },
                plan_calls: r.get::<_, Option<i64>>(18)?.map(|n| n as u64),
                unpriced: unpriced_models(r.get::<_, Option<String>>(19)?.as_deref()),
                resumed_by: r.get(20)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run 1 of a fresh database, its `column` then set to `value` past the CHECK that
    /// lists the values this track knows (as a newer track's database could hold it).
    fn run_holding(column: &str, value: &str) -> Store {
        let store = Store::open_in_memory().unwrap();
        store
            .create_run(ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        store
            .conn
            .execute_batch(&format!(
                "PRAGMA ignore_check_constraints = ON;
                 UPDATE runs SET {column} = '{value}' WHERE id = 1;
                 PRAGMA ignore_check_constraints = OFF;"
            ))
            .unwrap();
        store
    }

    #[test]
    fn an_unknown_status_is_an_error_naming_its_row_never_a_failed_run() {
        let store = run_holding("status", "paused");
        for read in [store.list_runs(), store.runs_by_id(&[1])] {
            let error = read.unwrap_err();
            let StoreError::UnknownInRow(unknown) = &error else {
                panic!("not an unknown value: {error:?}");
            };
            assert_eq!(
                (unknown.table, unknown.id, unknown.column.as_str()),
                ("runs", 1, "status")
            );
            assert_eq!(unknown.value, "paused");
            let message = error.to_string();
            assert!(
                message.contains("row 1 of table `runs`") && message.contains("`paused`"),
                "{message}"
            );
        }
    }

    #[test]
    fn an_unknown_kind_is_an_error_naming_its_row() {
        let store = run_holding("kind", "sweep");
        let error = store.list_runs().unwrap_err();
        assert!(
            matches!(&error, StoreError::UnknownInRow(u)
                if u.table == "runs" && u.id == 1 && u.column == "kind" && u.value == "sweep"),
            "{error:?}"
        );
        // Strict: a kind's noun or another case is not its stored name.
        let store = run_holding("kind", "benchmark");
        assert!(matches!(
            store.list_runs(),
            Err(StoreError::UnknownInRow(_))
        ));
    }

    #[test]
    fn kinds_and_statuses_are_stored_by_name_and_read_back() {
        let store = Store::open_in_memory().unwrap();
        for &kind in ExperimentKind::ALL {
            let id = store.create_run(kind, None, None, "{}").unwrap();
            let stored: String = store
                .conn
                .query_row("SELECT kind FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .unwrap();
            assert_eq!(stored, kind.as_str());
            assert_eq!(store.runs_by_id(&[id]).unwrap()[0].kind, kind);
        }
        // `abandoned` is never stored (the CHECK refuses it): seen, not written.
        for status in RunStatus::ALL
            .into_iter()
            .filter(|s| *s != RunStatus::Abandoned)
        {
            store.finish_run(1, status).unwrap();
            let stored: String = store
                .conn
                .query_row("SELECT status FROM runs WHERE id = 1", [], |r| r.get(0))
                .unwrap();
            assert_eq!(stored, status.as_str());
            assert_eq!(store.runs_by_id(&[1]).unwrap()[0].status, status);
            assert_eq!(status.as_str().parse(), Ok(status));
        }
    }

    #[test]
    fn selectors_parse() {
        assert_eq!("latest".parse(), Ok(RunSelector::Latest));
        assert_eq!("ALL".parse(), Ok(RunSelector::All));
        assert_eq!("12".parse(), Ok(RunSelector::Id(12)));
        assert!("twelve".parse::<RunSelector>().is_err());
    }

    #[test]
    fn runs_are_listed_newest_first_by_the_time_they_started_not_by_id() {
        let store = Store::open_in_memory().unwrap();
        // As `track merge` leaves them: a teammate's older run copied in after ours.
        let ours = store
            .create_run(
                crate::kind::ExperimentKind::Bench,
                Some("ours.yaml"),
                None,
                "{}",
            )
            .unwrap();
        let theirs = store
            .create_run(
                crate::kind::ExperimentKind::Bench,
                Some("theirs.yaml"),
                None,
                "{}",
            )
            .unwrap();
        let later = store
            .create_run(crate::kind::ExperimentKind::Review, None, None, "{}")
            .unwrap();
        for (id, started) in [
            (ours, "2026-11-20T10:00:00.000Z"),
            (theirs, "2026-11-19T09:00:00.000Z"),
            (later, "2026-11-21T08:00:00.000Z"),
        ] {
            store
                .conn
                .execute(
                    "UPDATE runs SET started_at = ?2 WHERE id = ?1",
                    params![id, started],
                )
                .unwrap();
        }
        let listed: Vec<i64> = store.list_runs().unwrap().iter().map(|r| r.id).collect();
        assert_eq!(listed, vec![later, ours, theirs]);
    }

    #[test]
    fn selecting_runs() {
        let store = Store::open_in_memory().unwrap();
        assert!(matches!(
            store.select_runs(ExperimentKind::Bench, RunSelector::Latest),
            Err(StoreError::NoSuchRun(_))
        ));
        let a = store
            .create_run(
                crate::kind::ExperimentKind::Bench,
                Some("a.yaml"),
                None,
                "{}",
            )
            .unwrap();
        let b = store
            .create_run(
                crate::kind::ExperimentKind::Bench,
                Some("b.yaml"),
                None,
                "{}",
            )
            .unwrap();
        store.finish_run(a, RunStatus::Completed).unwrap();
        assert_eq!(
            store
                .select_runs(ExperimentKind::Bench, RunSelector::Latest)
                .unwrap(),
            vec![b]
        );
        assert_eq!(
            store
                .select_runs(ExperimentKind::Bench, RunSelector::All)
                .unwrap(),
            vec![a, b]
        );
        assert_eq!(
            store
                .select_runs(ExperimentKind::Bench, RunSelector::Id(a))
                .unwrap(),
            vec![a]
        );
        assert!(
            store
                .select_runs(ExperimentKind::Bench, RunSelector::Id(99))
                .is_err()
        );
        let runs = store.list_runs().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1].status, RunStatus::Completed);
        assert_eq!(runs[0].status, RunStatus::Running);
        let tally = RunTally {
            planned_calls: 4,
            calls: 3,
            cache_hits: 1,
            failed_calls: 1,
            errors: 2,
            cost_usd: 0.5,
            paid_usd: 0.25,
        };
        store.update_run_tally(b, &tally).unwrap();
        assert_eq!(store.runs_by_id(&[b]).unwrap()[0].tally, tally);
        assert_eq!("abandoned".parse(), Ok(RunStatus::Abandoned));
        assert_eq!(store.runs_by_id(&[b]).unwrap()[0].budget_usd, None);
        store.set_run_budget(b, Some(0.05)).unwrap();
        store.finish_run(b, RunStatus::Budget).unwrap();
        let run = &store.runs_by_id(&[b]).unwrap()[0];
        assert_eq!(run.budget_usd, Some(0.05));
        assert_eq!(run.status, RunStatus::Budget);
        assert_eq!("budget".parse(), Ok(RunStatus::Budget));
    }

    #[test]
    fn migrating_to_waiting_keeps_every_run_and_what_refers_to_it() {
        let store = migrated_from(14, "budget", Some("waiting"));
        assert_eq!(store.run_errors(1).unwrap().len(), 1, "nothing cascaded");
        assert_eq!(store.runs_by_id(&[1]).unwrap()[0].status, RunStatus::Budget);
        store.finish_run(1, RunStatus::Waiting).unwrap();
        assert_eq!(
            store.runs_by_id(&[1]).unwrap()[0].status,
            RunStatus::Waiting
        );
        assert_eq!("waiting".parse(), Ok(RunStatus::Waiting));
        assert_eq!(RunStatus::Waiting.to_string(), "waiting");
        for status in ["running", "completed", "failed", "interrupted", "budget"] {
            store
                .conn
                .execute("UPDATE runs SET status = ?1 WHERE id = 1", [status])
                .unwrap();
        }
        assert_still_checked(&store);
    }

    /// A database at migration `version` holding run 1 with `status` and an error of it (where
    /// `refused`, when given, is checked to be an unknown status), migrated to the newest schema.
    fn migrated_from(version: i32, status: &str, refused: Option<&str>) -> Store {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        super::super::ids::register(&conn).unwrap();
        super::super::migrations::runner()
            .set_target(refinery::Target::Version(version))
            .run(&mut conn)
            .unwrap();
        conn.execute_batch(&format!(
            "INSERT INTO runs (id, kind, started_at, status) VALUES (1, 'bench', 'now', '{status}');
             INSERT INTO run_errors (run_id, stage, model_ref, item, error, attempts, created_at)
             VALUES (1, 'answers', 'openai:gpt-4o', 'p1', 'boom', 1, 'now');"
        ))
        .unwrap();
        if let Some(refused) = refused {
            assert!(
                conn.execute("UPDATE runs SET status = ?1 WHERE id = 1", [refused])
                    .is_err(),
                "V{version} does not know `{refused}`"
            );
        }
        super::super::migrations::runner().run(&mut conn).unwrap();
        Store {
            conn,
            immutable: false,
            checkpoint: None,
        }
    }

    /// The runs table still refuses unknown statuses, and the database is sound.
    fn assert_still_checked(store: &Store) {
        let bogus = store
            .conn
            .execute("UPDATE runs SET status = 'bogus' WHERE id = 1", []);
        assert!(bogus.is_err(), "the CHECK still refuses unknown statuses");
        let check: String = store
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }

    #[test]
    fn migrating_to_budgets_keeps_every_run_and_what_refers_to_it() {
        let store = migrated_from(10, "interrupted", None);
        assert_eq!(store.run_errors(1).unwrap().len(), 1, "nothing cascaded");
        store.finish_run(1, RunStatus::Budget).unwrap();
        assert_eq!(store.runs_by_id(&[1]).unwrap()[0].status, RunStatus::Budget);
        assert_still_checked(&store);
    }

    #[test]
    fn migrating_to_global_ids_backfills_every_uid_and_knows_partial() {
        let store = migrated_from(16, "completed", Some("partial"));
        let (uid, plan): (String, String) = store
            .conn
            .query_row("SELECT uid, plan_sha256 FROM runs WHERE id = 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(uuid::Uuid::parse_str(&uid).unwrap().get_version_num(), 7);
        assert_eq!(plan.len(), 64);
        let error_uid: Option<String> = store
            .conn
            .query_row("SELECT uid FROM run_errors WHERE run_id = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(error_uid.map(|u| u.len()), Some(64));
        store.finish_run(1, RunStatus::Partial).unwrap();
        assert_eq!(
            store.runs_by_id(&[1]).unwrap()[0].status,
            RunStatus::Partial
        );
        assert_still_checked(&store);
    }
}
