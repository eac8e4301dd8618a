//! What a CI gate and report read of benchmark results: each model's passed, failed and error
//! counts (`--fail-under`, `--fail-on-errors`), and every result as a test case (`track export
//! junit`). Only SELECTs, on `bench_results`, `bench_checks`, `bench_labels` and `runs`.

use rusqlite::params;

use super::{CheckRow, Outcome, Result, ResultKey, Store};

/// One model's outcomes over some benchmark runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelOutcomes {
    /// The model's reference as the benchmark file wrote it (`openai:gpt-4o`).
    pub model: String,
    pub passed: u64,
    pub failed: u64,
    /// Results with no answer to test: the call failed, or its judge did.
    pub errors: u64,
}

impl ModelOutcomes {
    /// Passed plus failed: the results a pass rate is computed on.
    pub fn decided(&self) -> u64 {
        self.passed + self.failed
    }
}

/// One benchmark result as a test case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRow {
    pub model_ref: String,
    /// The test's name, or the case's id.
    pub prompt_name: String,
    /// The prompt template it was rendered from; `None` without templates.
    pub template: Option<String>,
    pub repeat_index: u32,
    /// The check's method; `checks` when several.
    pub method: String,
    pub outcome: Outcome,
    /// Why it failed, or the error.
    pub detail: Option<String>,
    /// The call's latency (of the run that paid for it when served from the cache).
    pub latency_ms: Option<f64>,
    /// Its checks, when it has several and did not pass (none otherwise).
    pub checks: Vec<CheckRow>,
}

/// What a run's test cases are gathered under: its file and counts.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteRow {
    pub run_id: i64,
    /// The benchmark file, or `None` for a run without one.
    pub file: Option<String>,
    pub started_at: String,
    pub passed: u64,
    pub failed: u64,
    pub errors: u64,
    /// The sum of the results' latencies.
    pub latency_ms: f64,
    /// Whether any result has a repeat index above 0 (several samples of each call).
    pub repeats: bool,
}

/// The count in column `i` of `row` (a SQL `sum`, never negative).
fn count(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<u64> {
    Ok(row.get::<_, i64>(i)?.max(0).unsigned_abs())
}

impl Store {
    /// Each model's passed, failed and error counts over the benchmark runs `run_ids`, in the
    /// order the models first appear (run, then the file's order).
    pub fn bench_model_outcomes(&self, run_ids: &[i64]) -> Result<Vec<ModelOutcomes>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT model_ref,
                    sum(status = 'passed'), sum(status = 'failed'), sum(status = 'error')
             FROM bench_results WHERE run_id = ?1
             GROUP BY model_index, model_ref ORDER BY model_index",
        )?;
        let mut out: Vec<ModelOutcomes> = Vec::new();
        for &run_id in run_ids {
            let rows = stmt.query_map([run_id], |r| {
                Ok(ModelOutcomes {
                    model: r.get(0)?,
                    passed: count(r, 1)?,
                    failed: count(r, 2)?,
                    errors: count(r, 3)?,
                })
            })?;
            for row in rows {
                let row = row?;
                match out.iter_mut().find(|m| m.model == row.model) {
                    Some(seen) => {
                        seen.passed += row.passed;
                        seen.failed += row.failed;
                        seen.errors += row.errors;
                    }
                    None => out.push(row),
                }
            }
        }
        Ok(out)
    }

    /// The suite of the benchmark run `run_id`: its file, start and counts.
    pub fn bench_suite(&self, run_id: i64) -> Result<SuiteRow> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT r.id, r.file, r.started_at,
                    coalesce(sum(b.status = 'passed'), 0), coalesce(sum(b.status = 'failed'), 0),
                    coalesce(sum(b.status = 'error'), 0), coalesce(sum(b.latency_ms), 0),
                    coalesce(max(b.repeat_index), 0) > 0
             FROM runs r LEFT JOIN bench_results b ON b.run_id = r.id
             WHERE r.id = ?1 GROUP BY r.id",
            )?
            .query_row([run_id], |r| {
                Ok(SuiteRow {
                    run_id: r.get(0)?,
                    file: r.get(1)?,
                    started_at: r.get(2)?,
                    passed: count(r, 3)?,
                    failed: count(r, 4)?,
                    errors: count(r, 5)?,
                    latency_ms: r.get(6)?,
                    repeats: r.get(7)?,
                })
            })?)
    }

    /// Gives `each` every result of the benchmark run `run_id` as a test case, in model,
    /// template, prompt and repeat order: one row at a time, so a large run is never all in
    /// memory.
    pub fn for_each_bench_case(
        &self,
        run_id: i64,
        mut each: impl FnMut(CaseRow) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let templates = self.bench_template_names(run_id)?;
        let mut stmt = self.conn.prepare(
            "SELECT model_ref, prompt_name, template_index, repeat_index, method, status, detail,
                    latency_ms, model_index, prompt_index
             FROM bench_results WHERE run_id = ?1
             ORDER BY model_index, template_index, prompt_index, repeat_index",
        )?;
        let mut rows = stmt.query(params![run_id])?;
        while let Some(r) = rows.next()? {
            let outcome: Outcome = r.get(5)?;
            let method: String = r.get(4)?;
            let template_index: u32 = r.get(2)?;
            let key = ResultKey {
                run_id,
                model_index: r.get(8)?,
                template_index,
                prompt_index: r.get(9)?,
                repeat_index: r.get(3)?,
            };
            let checks = if outcome == Outcome::Passed {
                Vec::new()
            } else {
                self.bench_checks_of(&key)?
            };
            each(CaseRow {
                model_ref: r.get(0)?,
                prompt_name: r.get(1)?,
                template: templates.get(template_index as usize).cloned(),
                repeat_index: key.repeat_index,
                method,
                outcome,
                detail: r.get(6)?,
                latency_ms: r.get(7)?,
                checks,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::BenchResultRow;

    fn result(model: u32, prompt: u32, outcome: Outcome) -> BenchResultRow {
        let mut row = crate::store::bench::tests::row(1, model, prompt, outcome);
        row.model_ref = format!("m{model}");
        row
    }

    #[test]
    fn each_model_s_outcomes_are_counted_over_runs_in_file_order() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        assert_eq!(run, 1);
        let rows = [
            result(1, 0, Outcome::Passed),
            result(1, 1, Outcome::Error),
            result(0, 0, Outcome::Passed),
            result(0, 1, Outcome::Failed),
            result(0, 2, Outcome::Failed),
        ];
        store.insert_bench_results(&rows).unwrap();
        let outcomes = store.bench_model_outcomes(&[run]).unwrap();
        let counts: Vec<(&str, u64, u64, u64)> = outcomes
            .iter()
            .map(|m| (m.model.as_str(), m.passed, m.failed, m.errors))
            .collect();
        assert_eq!(counts, [("m0", 1, 2, 0), ("m1", 1, 0, 1)]);
        // The same run twice counts twice: the counts add up per model.
        let twice = store.bench_model_outcomes(&[run, run]).unwrap();
        assert_eq!(twice[0].failed, 4);
        let suite = store.bench_suite(run).unwrap();
        assert_eq!((suite.passed, suite.failed, suite.errors), (2, 2, 1));
        let mut names = Vec::new();
        store
            .for_each_bench_case(run, |case| {
                names.push(format!(
                    "{} {} {:?}",
                    case.model_ref, case.prompt_name, case.outcome
                ));
                Ok(())
            })
            .unwrap();
        assert_eq!(names.len(), 5);
        assert!(names[0].starts_with("m0 "), "{names:?}");
    }
}
