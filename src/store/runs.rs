//! Runs: one row per invocation of an experiment, with its options and status.

use std::fmt;
use std::str::FromStr;

use rusqlite::{OptionalExtension, params};

use super::{Result, Store, StoreError, now_rfc3339};

/// How a run ended (or that it has not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Completed,
    Failed,
    Interrupted,
}

impl RunStatus {
    fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
        }
    }
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

/// A run with the totals of its results, as `track runs` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    pub id: i64,
    pub kind: String,
    pub file: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: String,
    pub results: u64,
    pub cache_hits: u64,
    pub errors: u64,
    pub cost_usd: f64,
    pub paid_usd: f64,
}

impl Store {
    /// Starts a run and returns its id.
    pub fn create_run(
        &self,
        kind: &str,
        file: Option<&str>,
        spec_sha256: Option<&str>,
        options_json: &str,
    ) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO runs (kind, file, spec_sha256, options_json, started_at, status)
             VALUES (?1, ?2, ?3, ?4, ?5, 'running')",
            params![kind, file, spec_sha256, options_json, now_rfc3339()],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Marks a run as ended with `status`.
    pub fn finish_run(&self, run_id: i64, status: RunStatus) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1",
            params![run_id, status.as_str(), now_rfc3339()],
        )?;
        Ok(())
    }

    /// The ids of the runs of `kind` that `selector` names, oldest first.
    pub fn select_runs(&self, kind: &str, selector: RunSelector) -> Result<Vec<i64>> {
        let ids = match selector {
            RunSelector::Latest => self
                .conn
                .query_row("SELECT max(id) FROM runs WHERE kind = ?1", [kind], |r| {
                    r.get::<_, Option<i64>>(0)
                })?
                .into_iter()
                .collect(),
            RunSelector::All => {
                let mut stmt = self
                    .conn
                    .prepare("SELECT id FROM runs WHERE kind = ?1 ORDER BY id")?;
                stmt.query_map([kind], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<i64>>>()?
            }
            RunSelector::Id(id) => self
                .conn
                .query_row(
                    "SELECT id FROM runs WHERE id = ?1 AND kind = ?2",
                    params![id, kind],
                    |r| r.get(0),
                )
                .optional()?
                .into_iter()
                .collect(),
        };
        if ids.is_empty() {
            return Err(StoreError::NoSuchRun(match selector {
                RunSelector::Id(id) => format!("{id} (of kind {kind})"),
                other => format!("{other} (no {kind} run recorded yet)"),
            }));
        }
        Ok(ids)
    }

    /// Every run, newest first, with the totals of its results.
    pub fn list_runs(&self) -> Result<Vec<RunInfo>> {
        let mut stmt = self.conn.prepare(
            "WITH totals (run_id, n, hits, errors, cost, paid) AS (
                 SELECT run_id, count(*), sum(cache_hit), sum(status = 'error'), sum(cost_usd), sum(paid_usd)
                 FROM bench_results GROUP BY run_id
                 UNION ALL
                 SELECT run_id, count(*), sum(cache_hit), sum(parse_status IN ('error', 'failed')),
                        sum(cost_usd), sum(paid_usd)
                 FROM reviews GROUP BY run_id
                 UNION ALL
                 SELECT run_id, count(*), sum(cache_hit), 0, sum(cost_usd), sum(paid_usd)
                 FROM generated_datasheets WHERE run_id IS NOT NULL GROUP BY run_id
                 UNION ALL
                 SELECT p.run_id, count(*), sum(p.cache_hit), sum(p.score IS NULL),
                        (SELECT sum(c.cost_usd) FROM calls c WHERE c.id IN
                            (SELECT call_id FROM relevance_predictions q WHERE q.run_id = p.run_id)),
                        (SELECT sum(c.cost_usd) FROM calls c WHERE c.id IN
                            (SELECT call_id FROM relevance_predictions q WHERE q.run_id = p.run_id AND q.cache_hit = 0))
                 FROM relevance_predictions p GROUP BY p.run_id)
             SELECT r.id, r.kind, r.file, r.started_at, r.finished_at, r.status,
                    coalesce(sum(t.n), 0), coalesce(sum(t.hits), 0), coalesce(sum(t.errors), 0),
                    coalesce(sum(t.cost), 0.0), coalesce(sum(t.paid), 0.0)
             FROM runs r LEFT JOIN totals t ON t.run_id = r.id
             GROUP BY r.id ORDER BY r.id DESC",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(RunInfo {
                id: r.get(0)?,
                kind: r.get(1)?,
                file: r.get(2)?,
                started_at: r.get(3)?,
                finished_at: r.get(4)?,
                status: r.get(5)?,
                results: r.get::<_, i64>(6)? as u64,
                cache_hits: r.get::<_, i64>(7)? as u64,
                errors: r.get::<_, i64>(8)? as u64,
                cost_usd: r.get(9)?,
                paid_usd: r.get(10)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse() {
        assert_eq!("latest".parse(), Ok(RunSelector::Latest));
        assert_eq!("ALL".parse(), Ok(RunSelector::All));
        assert_eq!("12".parse(), Ok(RunSelector::Id(12)));
        assert!("twelve".parse::<RunSelector>().is_err());
    }

    #[test]
    fn selecting_runs() {
        let store = Store::open_in_memory().unwrap();
        assert!(matches!(
            store.select_runs("bench", RunSelector::Latest),
            Err(StoreError::NoSuchRun(_))
        ));
        let a = store
            .create_run("bench", Some("a.yaml"), None, "{}")
            .unwrap();
        let b = store
            .create_run("bench", Some("b.yaml"), None, "{}")
            .unwrap();
        store.finish_run(a, RunStatus::Completed).unwrap();
        assert_eq!(
            store.select_runs("bench", RunSelector::Latest).unwrap(),
            vec![b]
        );
        assert_eq!(
            store.select_runs("bench", RunSelector::All).unwrap(),
            vec![a, b]
        );
        assert_eq!(
            store.select_runs("bench", RunSelector::Id(a)).unwrap(),
            vec![a]
        );
        assert!(store.select_runs("bench", RunSelector::Id(99)).is_err());
        let runs = store.list_runs().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1].status, "completed");
        assert_eq!(runs[0].status, "running");
    }
}
