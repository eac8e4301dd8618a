//! A run's life: its row is created `running` with a lock file held for as long as the
//! process works on it, and ends `completed`, `interrupted`, `budget`, `waiting` or `failed`.
//! A run still `running` whose lock is free has lost its process (SIGKILL, a crash, a
//! reboot): it is `abandoned`, whoever looks. A `waiting` run has no process by design (its
//! batches work at the provider), so it is never seen as abandoned.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use super::{ExperimentError, ExperimentKind, RunHeader, Target};
use crate::store::{RunStatus, Store};

/// Where the lock files of a database's running runs live: `<db>-runs/`, beside SQLite's own
/// `<db>-wal` and `<db>-shm`.
pub(crate) fn run_lock_dir(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-runs");
    PathBuf::from(name)
}

fn lock_path(db: &Path, run_id: i64) -> PathBuf {
    run_lock_dir(db).join(format!("{run_id}.lock"))
}

/// The status of a run as it is now: a stored `running` becomes `abandoned` when no process
/// holds its lock; every other status (`waiting` among them) is as stored.
pub(crate) fn observed_status(db: &Path, run_id: i64, stored: RunStatus) -> RunStatus {
    if stored != RunStatus::Running {
        return stored;
    }
    let Ok(file) = File::open(lock_path(db, run_id)) else {
        return RunStatus::Abandoned;
    };
    match file.try_lock() {
        Ok(()) => {
            // Nobody holds it: the process that did is gone.
            let _ = file.unlock();
            RunStatus::Abandoned
        }
        Err(TryLockError::WouldBlock) => RunStatus::Running,
        // A filesystem without locks cannot tell: believe the stored status.
        Err(TryLockError::Error(_)) => RunStatus::Running,
    }
}

/// The unfinished run a new run of the same plan resumes ("run the same command again").
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed {
    /// The newest run of the plan, and how it ended.
    pub run_id: i64,
    pub status: RunStatus,
    /// When the first of the unfinished runs it continues began (RFC 3339): every answer
    /// stored since was paid for this plan.
    pub since: String,
}

/// The run a new run of the plan `plan_sha256` (its part `shard`) resumes: the newest run of
/// that plan and part, when it did not finish (interrupted, stopped by its budget, failed or
/// abandoned), with the start of the unbroken series of unfinished runs it ends (a run
/// interrupted twice is resumed from the first). `None` when the newest finished, waits for
/// batches, or still runs.
pub(crate) fn resumed_run(
    store: &Store,
    db: Option<&Path>,
    plan_sha256: &str,
    shard: Option<(u32, u32)>,
) -> Result<Option<Resumed>, ExperimentError> {
    let mut resumed: Option<Resumed> = None;
    for run in store.runs_of_plan(plan_sha256)? {
        if run.shard != shard {
            continue;
        }
        let status = match db {
            Some(db) => observed_status(db, run.id, run.status),
            None => run.status,
        };
        let unfinished = matches!(
            status,
            RunStatus::Interrupted | RunStatus::Budget | RunStatus::Failed | RunStatus::Abandoned
        );
        if !unfinished {
            break;
        }
        match &mut resumed {
            Some(resumed) => resumed.since = run.started_at,
            None => {
                resumed = Some(Resumed {
                    run_id: run.id,
                    status,
                    since: run.started_at,
                });
            }
        }
    }
    Ok(resumed)
}

/// A started run: its id and the lock that says its process is alive.
#[derive(Debug)]
pub(crate) struct RunGuard {
    pub run_id: i64,
    lock: Option<(PathBuf, File)>,
}

impl RunGuard {
    /// Creates the run row and takes its lock (none for a database in memory).
    pub(crate) fn start(
        store: &Store,
        db: Option<&Path>,
        kind: ExperimentKind,
        (header, models, command): (&RunHeader, &[Target], Option<&str>),
    ) -> Result<Self, ExperimentError> {
        let run_id = store.create_run(
            kind,
            header.file.as_deref(),
            header.spec_sha256.as_deref(),
            &header.options.to_string(),
        )?;
        let mut references: Vec<&str> = Vec::new();
        for target in models {
            if !references.contains(&target.reference.as_str()) {
                references.push(&target.reference);
            }
        }
        store.set_run_identity(run_id, &references.join(","), command)?;
        let lock = match db {
            Some(db) => take_lock(db, run_id),
            None => None,
        };
        Ok(Self { run_id, lock })
    }

    /// The lock file's path, for a handler that must end the run from elsewhere.
    pub(crate) fn lock_path(&self) -> Option<PathBuf> {
        self.lock.as_ref().map(|(path, _)| path.clone())
    }

    /// Ends the run with `status` and lets its lock go.
    pub(crate) fn finish(self, store: &Store, status: RunStatus) -> Result<(), ExperimentError> {
        store.finish_run(self.run_id, status)?;
        if let Some((path, file)) = self.lock {
            drop(file);
            let _ = std::fs::remove_file(&path);
            // The folder goes too once no run of this database is running.
            if let Some(dir) = path.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        }
        Ok(())
    }
}

/// Creates and locks `<db>-runs/<id>.lock`. A run without a lock is still recorded; it will
/// only be seen as abandoned by others, so say why.
fn take_lock(db: &Path, run_id: i64) -> Option<(PathBuf, File)> {
    let path = lock_path(db, run_id);
    let attempt = || -> std::io::Result<File> {
        std::fs::create_dir_all(run_lock_dir(db))?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)?;
        file.lock()?;
        Ok(file)
    };
    match attempt() {
        Ok(file) => Some((path, file)),
        Err(e) => {
            tracing::warn!(
                "cannot lock {}: {e}; other track processes will see run {run_id} as abandoned",
                path.display()
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_resumes_the_unfinished_runs_of_its_plan_back_to_the_last_finished_one() {
        let store = Store::open_in_memory().unwrap();
        let run = |status: RunStatus, plan: &str, shard: Option<(u32, u32)>| {
            let id = store
                .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
                .unwrap();
            store.set_run_plan(id, plan, shard).unwrap();
            store.finish_run(id, status).unwrap();
            id
        };
        let started = |id: i64| store.runs_by_id(&[id]).unwrap()[0].started_at.clone();
        assert_eq!(resumed_run(&store, None, "p", None).unwrap(), None);
        run(RunStatus::Interrupted, "p", None);
        run(RunStatus::Completed, "p", None);
        assert_eq!(
            resumed_run(&store, None, "p", None).unwrap(),
            None,
            "it finished"
        );
        let first = run(RunStatus::Interrupted, "p", None);
        run(RunStatus::Interrupted, "other plan", None);
        run(RunStatus::Interrupted, "p", Some((0, 2)));
        let last = run(RunStatus::Budget, "p", None);
        assert_eq!(
            resumed_run(&store, None, "p", None).unwrap(),
            Some(Resumed {
                run_id: last,
                status: RunStatus::Budget,
                since: started(first),
            })
        );
        let shard = resumed_run(&store, None, "p", Some((0, 2)))
            .unwrap()
            .unwrap();
        assert_eq!(shard.run_id, last - 1, "a shard resumes its own part");
        run(RunStatus::Waiting, "p", None);
        assert_eq!(
            resumed_run(&store, None, "p", None).unwrap(),
            None,
            "it waits"
        );
    }

    #[test]
    fn a_run_is_running_while_its_lock_is_held_and_abandoned_after() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("track.db");
        let store = Store::open(&db).unwrap();
        let guard = RunGuard::start(
            &store,
            Some(&db),
            ExperimentKind::Bench,
            (&RunHeader::default(), &[], None),
        )
        .unwrap();
        let id = guard.run_id;
        assert_eq!(
            observed_status(&db, id, RunStatus::Running),
            RunStatus::Running
        );
        // The process dies: its lock goes, the row stays `running`.
        drop(guard);
        assert_eq!(
            observed_status(&db, id, RunStatus::Running),
            RunStatus::Abandoned
        );
        // A run without a lock file at all (older track, another machine) is abandoned too.
        assert_eq!(
            observed_status(&db, id + 1, RunStatus::Running),
            RunStatus::Abandoned
        );
        let guard = RunGuard::start(
            &store,
            Some(&db),
            ExperimentKind::Bench,
            (&RunHeader::default(), &[], None),
        )
        .unwrap();
        let path = guard.lock_path().unwrap();
        guard.finish(&store, RunStatus::Completed).unwrap();
        assert!(!path.exists(), "the lock file is removed when the run ends");
        assert_eq!(
            observed_status(&db, id, RunStatus::Completed),
            RunStatus::Completed
        );
        // A run waiting for its batches left its process on purpose: not abandoned.
        assert_eq!(
            observed_status(&db, id, RunStatus::Waiting),
            RunStatus::Waiting
        );
        assert_eq!(
            observed_status(&db, id + 7, RunStatus::Waiting),
            RunStatus::Waiting
        );
    }
}
