//! Which runs a report covers: `--run` parsed, then resolved against the database into runs
//! with the status they have now (a `running` run whose process is gone is `abandoned`).

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use super::ReportError;
use crate::experiment::{ExperimentKind, observed_status};
use crate::kinds;
use crate::store::{RunInfo, RunSelector, RunStatus, Store, StoreError};

/// Which runs `--run` names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RunChoice {
    /// No `--run`: what `track query` takes by default, each kind's own (`Kind::default_runs`):
    /// the latest benchmark and relevance runs, and every review run.
    #[default]
    Default,
    /// The newest run of each kind.
    Latest,
    /// Every run of each kind.
    All,
    /// These runs, of any kinds (`3` or `3,5`).
    Ids(Vec<i64>),
}

impl FromStr for RunChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a run: use run ids (`3` or `3,5`), `latest` or `all`");
        match s.trim().to_ascii_lowercase().as_str() {
            "latest" | "last" => Ok(Self::Latest),
            "all" => Ok(Self::All),
            other => {
                let ids = other
                    .split(',')
                    .map(|id| id.trim().parse::<i64>().map_err(|_| bad()))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Self::Ids(ids))
            }
        }
    }
}

impl fmt::Display for RunChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::Latest => f.write_str("latest"),
            Self::All => f.write_str("all"),
            Self::Ids(ids) => {
                let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                f.write_str(&ids.join(","))
            }
        }
    }
}

/// A run of the report with its status as observed now.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedRun {
    pub info: RunInfo,
    pub status: RunStatus,
}

/// The runs a report covers, by id.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub runs: Vec<SelectedRun>,
    /// Whether the runs were named by id (`--run 3,5`), not found by `latest` or `all`.
    pub named: bool,
}

impl Selection {
    /// The runs `choice` names in `store` (whose file is `db`, for run locks). An id that
    /// names no run is an error, and so is a selection with no run at all.
    pub(crate) fn resolve(
        store: &Store,
        db: &Path,
        choice: &RunChoice,
    ) -> Result<Self, ReportError> {
        let mut ids = Vec::new();
        match choice {
            RunChoice::Ids(named) => {
                for &id in named {
                    // A shard merged into its plan's run is that run.
                    let id = store.merged_run_of(id)?;
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
            RunChoice::Default | RunChoice::Latest | RunChoice::All => {
                for kind in kinds::reported() {
                    let selector = match choice {
                        RunChoice::All => RunSelector::All,
                        RunChoice::Default => kinds::kind(kind).default_runs(),
                        RunChoice::Latest | RunChoice::Ids(_) => RunSelector::Latest,
                    };
                    match store.select_runs(kind, selector) {
                        Ok(found) => ids.extend(found),
                        Err(StoreError::NoSuchRun(_)) => {}
                        Err(other) => return Err(other.into()),
                    }
                }
            }
        }
        let infos = store.runs_by_id(&ids)?;
        if let Some(missing) = ids.iter().find(|id| !infos.iter().any(|r| r.id == **id)) {
            return Err(ReportError::NoSuchRun(*missing));
        }
        if infos.is_empty() {
            return Err(ReportError::Empty {
                path: db.to_path_buf(),
                what: format!("{} run", kinds::reported_nouns()),
            });
        }
        let mut runs: Vec<SelectedRun> = infos
            .into_iter()
            .map(|info| SelectedRun {
                status: observed_status(db, info.id, info.status),
                info,
            })
            .collect();
        runs.sort_by_key(|r| r.info.id);
        Ok(Self {
            runs,
            named: matches!(choice, RunChoice::Ids(_)),
        })
    }

    /// The ids of the selected runs of `kind`, oldest first.
    pub(crate) fn ids_of(&self, kind: ExperimentKind) -> Vec<i64> {
        self.runs
            .iter()
            .filter(|r| r.info.kind == kind)
            .map(|r| r.info.id)
            .collect()
    }

    /// The pair to compare when exactly two runs of one kind were named (`--run BASE,NEW`):
    /// (base, new), the older run as the base.
    pub(crate) fn comparison(&self) -> Option<(&SelectedRun, &SelectedRun)> {
        match self.runs.as_slice() {
            [base, new] if self.named && base.info.kind == new.info.kind => Some((base, new)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse() {
        assert_eq!("latest".parse(), Ok(RunChoice::Latest));
        assert_eq!(" ALL ".parse(), Ok(RunChoice::All));
        assert_eq!("3".parse(), Ok(RunChoice::Ids(vec![3])));
        assert_eq!("3, 5".parse(), Ok(RunChoice::Ids(vec![3, 5])));
        let e = "3,x".parse::<RunChoice>().unwrap_err();
        assert!(e.contains("`3,x` is not a run"), "{e}");
        assert!("".parse::<RunChoice>().is_err());
        assert_eq!(RunChoice::Ids(vec![3, 5]).to_string(), "3,5");
    }

    #[test]
    fn resolving_runs() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let store = Store::open(&db).unwrap();
        let empty = Selection::resolve(&store, &db, &RunChoice::Default).unwrap_err();
        assert!(matches!(empty, ReportError::Empty { .. }), "{empty}");
        let bench_old = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let review_a = store
            .create_run(crate::experiment::ExperimentKind::Review, None, None, "{}")
            .unwrap();
        let bench_new = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let review_b = store
            .create_run(crate::experiment::ExperimentKind::Review, None, None, "{}")
            .unwrap();
        store.finish_run(bench_new, RunStatus::Completed).unwrap();
        let ids = |choice: RunChoice| -> Vec<i64> {
            let s = Selection::resolve(&store, &db, &choice).unwrap();
            s.runs.iter().map(|r| r.info.id).collect()
        };
        assert_eq!(ids(RunChoice::Default), [review_a, bench_new, review_b]);
        assert_eq!(ids(RunChoice::Latest), [bench_new, review_b]);
        assert_eq!(ids(RunChoice::All).len(), 4);
        assert_eq!(
            ids(RunChoice::Ids(vec![bench_new, bench_old])),
            [bench_old, bench_new]
        );
        let missing = Selection::resolve(&store, &db, &RunChoice::Ids(vec![99])).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "no run 99 in this database; `track runs` lists them"
        );
        let s = Selection::resolve(&store, &db, &RunChoice::Ids(vec![bench_old])).unwrap();
        assert_eq!(
            s.runs[0].status,
            RunStatus::Abandoned,
            "no process holds it"
        );
        let pair =
            Selection::resolve(&store, &db, &RunChoice::Ids(vec![bench_old, bench_new])).unwrap();
        assert!(pair.comparison().is_some());
        let mixed =
            Selection::resolve(&store, &db, &RunChoice::Ids(vec![bench_old, review_a])).unwrap();
        assert!(mixed.comparison().is_none());
    }
}
