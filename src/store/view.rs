//! The queries of `track view`, the local web viewer: each answers one page and is bounded by
//! a LIMIT or by the few rows of one result or case, so no page reads a whole run.
//!
//! A benchmark's grid is paged by case (`prompt_index`): the page's cases are found through
//! the partial indexes of migration V22 (`template_index >= 0` in a query is what lets it use
//! them), then the results of those cases only. A search goes through `call_text`, the
//! full-text index of calls' requests and answers that V22's triggers keep up to date.

use rusqlite::OptionalExtension as _;
use rusqlite::types::Value;

use super::bench::ResultKey;
use super::{CheckRow, Outcome, Result, RunInfo, Store};

/// The most columns (model × template) a grid shows.
pub const MAX_GRID_COLUMNS: usize = 100;

/// The most results a case's side-by-side page shows.
pub const MAX_CASE_RESULTS: usize = 200;

/// Which runs the runs page lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// `bench`, `review`, `relevance`, `pairwise`…
    pub kind: Option<String>,
    /// As stored: `running`, `completed`…
    pub status: Option<String>,
    /// A part of a model's reference (`gpt-4o`).
    pub model: Option<String>,
}

/// Which results of a run a grid shows, and which of its cases.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ResultFilter {
    /// Every case.
    #[default]
    All,
    /// Cases with a failed result.
    Failures,
    /// Cases with an errored result.
    Errors,
    /// Cases with a passed result.
    Passes,
    /// Cases where one answer passed and another failed.
    Disagree,
    /// Cases whose check of this method did not pass.
    Check(String),
}

/// The order of a grid's cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CaseOrder {
    /// Case after case, as the benchmark gives them.
    #[default]
    Case,
    /// The slowest answer first.
    Latency,
    /// The dearest case first.
    Cost,
    /// The case using the most tokens first.
    Tokens,
}

/// What a grid shows: its filter, an optional full-text search, its order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GridQuery {
    pub filter: ResultFilter,
    /// Words every matched call's request or answer holds (FTS5; each word quoted).
    pub search: Option<String>,
    pub order: CaseOrder,
}

/// A column of a benchmark's grid: one model with one template.
#[derive(Debug, Clone, PartialEq)]
pub struct GridColumn {
    pub model_index: i64,
    pub template_index: i64,
    pub model_ref: String,
    /// `None`: the benchmark has no templates.
    pub template_name: Option<String>,
}

/// The outcomes of one column of a benchmark's grid (a model with a template): its pass rate
/// on the run page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ColumnOutcomes {
    pub model_index: i64,
    pub template_index: i64,
    pub passed: u64,
    pub failed: u64,
    pub errors: u64,
}

/// How many cases and results a grid's filter and search match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GridCount {
    pub cases: u64,
    pub results: u64,
    /// More cases match than were counted (`cases`, the results of which are `results`):
    /// the counts are lower bounds.
    pub more: bool,
}

/// A grid's count stops past this many cases (or past the page it is for, when further): a
/// count of more would cost a read of more of the run than the page does.
pub const COUNT_CASES: u64 = 10_000;

/// A search matching at most this many calls is read first, and its results sought by call;
/// one matching more is checked on a run's results as they are read.
const FEW_MATCHES: u64 = 20_000;

/// How a grid's search is applied to a run's results.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SearchPlan {
    /// No search.
    None,
    /// The calls matching these FTS5 words are read first, then their results, by call.
    FromMatches(String),
    /// The run's results are read, each kept if its call matches these words.
    InMatches(String),
}

/// The FROM, WHERE and HAVING of the results of a grid query, grouped by case.
#[derive(Debug)]
struct Matching {
    /// The results `r`, and what they are read from.
    from: String,
    /// On each result.
    condition: String,
    /// On each case (`HAVING …`), or empty.
    having: String,
}

/// `parts` joined by AND; `1` when there are none.
fn joined(parts: Vec<String>) -> String {
    if parts.is_empty() {
        "1".into()
    } else {
        parts.join(" AND ")
    }
}

/// One result in a grid's cell (a cell holds one per repeat).
#[derive(Debug, Clone, PartialEq)]
pub struct GridCell {
    pub id: i64,
    pub uid: Option<String>,
    pub prompt_index: i64,
    pub prompt_name: String,
    pub model_index: i64,
    pub template_index: i64,
    pub repeat_index: i64,
    pub outcome: Outcome,
    pub latency_ms: Option<f64>,
    pub cost_usd: Option<f64>,
    pub tokens: Option<i64>,
    pub cache_hit: bool,
    /// Whether it is one of the results the filter and search match (the others are shown
    /// dimmed beside them).
    pub matched: bool,
}

/// A result of a case with its answer, for the side-by-side page.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseAnswer {
    pub cell: GridCell,
    /// `None`: no answer (an error).
    pub answer: Option<String>,
    /// Why it failed, or the error.
    pub detail: Option<String>,
}

/// A result with everything its transcript page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub cell: GridCell,
    pub model_ref: String,
    pub model_id: String,
    pub template_name: Option<String>,
    pub method: String,
    pub expected: Option<String>,
    pub detail: Option<String>,
    pub score: Option<f64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub tokens_estimated: bool,
    pub paid_usd: Option<f64>,
    pub created_at: String,
    /// The call, when one was made or served.
    pub call: Option<CallText>,
    /// The checks of a result with several (one check is `method`, `expected`, `detail`).
    pub checks: Vec<CheckRow>,
    /// The tools the model called in a tool loop, in step order (empty: none).
    pub tool_calls: Vec<super::ToolCallRow>,
    pub judge_score: Option<i64>,
    /// The judge's answer: its score and justification.
    pub judge: Option<CallText>,
}

/// A stored call with its request and answer texts.
#[derive(Debug, Clone, PartialEq)]
pub struct CallText {
    pub id: i64,
    pub provider: String,
    pub model: String,
    /// The canonical request JSON (system, messages, parameters), as sent.
    pub request: Option<String>,
    /// The answer, or `None` for a failed call.
    pub answer: Option<String>,
    pub error: Option<String>,
    pub finish_reason: Option<String>,
    pub attempts: i64,
    pub latency_ms: Option<f64>,
    pub cost_usd: Option<f64>,
    pub http_status: Option<i64>,
    pub created_at: String,
}

/// A run's progress, as the live view shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Progress {
    pub id: i64,
    pub status: String,
    pub calls: i64,
    /// The calls it plans to make (0: not known yet).
    pub planned: i64,
    pub errors: i64,
    pub results: i64,
}

/// The WHERE of a query being built, with its parameters numbered as they are added.
#[derive(Debug, Default)]
struct Bound {
    params: Vec<Value>,
}

impl Bound {
    /// Adds `value` and returns its placeholder (`?N`).
    fn bind(&mut self, value: impl Into<Value>) -> String {
        self.params.push(value.into());
        format!("?{}", self.params.len())
    }
}

/// `words` as an FTS5 query every word of which must match: each word quoted, so no text a
/// user types is read as FTS5 syntax, and without control characters (a NUL ends an FTS5
/// string: the query would not parse). `None` when there is no word.
pub(crate) fn fts_query(words: &str) -> Option<String> {
    let quoted: Vec<String> = words
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" "))
}

impl Store {
    /// Readies this connection for the viewer, a reader that lives long and answers searches:
    /// its temporary tables (the calls a search matches, a sort's cases) go to a file once
    /// past the page cache, instead of growing in memory (the store keeps them in memory for
    /// a run's writes). A search matching a million answers then holds a page cache's worth,
    /// not a million row ids.
    pub fn prepare_for_viewing(&self) -> Result<()> {
        self.conn.pragma_update(None, "temp_store", "FILE")?;
        Ok(())
    }

    /// A page of the runs `filter` keeps, newest first, and how many it keeps.
    pub(crate) fn view_runs(
        &self,
        filter: &RunFilter,
        limit: u64,
        offset: u64,
    ) -> Result<(Vec<RunInfo>, u64)> {
        let condition = "WHERE merged_into IS NULL AND (?1 IS NULL OR kind = ?1)
             AND (?2 IS NULL OR status = ?2)
             AND (?3 IS NULL OR instr(lower(coalesce(models, '')), lower(?3)) > 0)";
        let args = (&filter.kind, &filter.status, &filter.model);
        let total: i64 = self.conn.query_row(
            &format!("SELECT count(*) FROM runs {condition}"),
            args,
            |r| r.get(0),
        )?;
        let runs = self.query_runs(
            &format!("{condition} ORDER BY started_at DESC, id DESC LIMIT ?4 OFFSET ?5"),
            (
                &filter.kind,
                &filter.status,
                &filter.model,
                limit as i64,
                offset as i64,
            ),
        )?;
        Ok((runs, total as u64))
    }

    /// The run `id`, if there is one.
    pub(crate) fn view_run(&self, id: i64) -> Result<Option<RunInfo>> {
        Ok(self.query_runs("WHERE id = ?1", [id])?.into_iter().next())
    }

    /// The kinds of runs in the database, for the runs page's filter.
    pub(crate) fn view_run_kinds(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT kind FROM runs ORDER BY kind")?;
        let kinds = stmt.query_map([], |r| r.get(0))?;
        Ok(kinds.collect::<rusqlite::Result<_>>()?)
    }

    /// The progress of runs `ids` (at most 100 of them).
    pub(crate) fn view_progress(&self, ids: &[i64]) -> Result<Vec<Progress>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, status, calls, coalesce(plan_calls, planned_calls, 0), errors,
                    (SELECT count(*) FROM bench_rows b WHERE b.run_id = runs.id
                     AND b.template_index >= 0)
             FROM runs WHERE id = ?1",
        )?;
        let mut found = Vec::new();
        for &id in ids.iter().take(100) {
            let row = stmt
                .query_row([id], |r| {
                    Ok(Progress {
                        id: r.get(0)?,
                        status: r.get(1)?,
                        calls: r.get(2)?,
                        planned: r.get(3)?,
                        errors: r.get(4)?,
                        results: r.get(5)?,
                    })
                })
                .optional()?;
            found.extend(row);
        }
        Ok(found)
    }

    /// The columns of a benchmark run's grid (model × template), in model then template
    /// order, at most [`MAX_GRID_COLUMNS`]: each found by a seek in the results' unique index,
    /// never by reading the run's results.
    pub(crate) fn grid_columns(&self, run_id: i64) -> Result<Vec<GridColumn>> {
        let mut next_model = self.conn.prepare_cached(
            "SELECT min(model_index) FROM bench_rows WHERE run_id = ?1 AND model_index > ?2",
        )?;
        let mut next_template = self.conn.prepare_cached(
            "SELECT min(template_index) FROM bench_rows
             WHERE run_id = ?1 AND model_index = ?2 AND template_index > ?3",
        )?;
        let mut label = self.conn.prepare_cached(
            "SELECT model_ref, template_name FROM bench_results
             WHERE run_id = ?1 AND model_index = ?2 AND template_index = ?3 LIMIT 1",
        )?;
        let mut columns = Vec::new();
        let mut model = -1i64;
        while let Some(m) = next_model.query_row((run_id, model), |r| r.get::<_, Option<i64>>(0))? {
            model = m;
            let mut template = -1i64;
            while let Some(t) =
                next_template.query_row((run_id, m, template), |r| r.get::<_, Option<i64>>(0))?
            {
                template = t;
                let (model_ref, template_name) =
                    label.query_row((run_id, m, t), |r| Ok((r.get(0)?, r.get(1)?)))?;
                columns.push(GridColumn {
                    model_index: m,
                    template_index: t,
                    model_ref,
                    template_name,
                });
                if columns.len() >= MAX_GRID_COLUMNS {
                    return Ok(columns);
                }
            }
        }
        Ok(columns)
    }

    /// The passed, failed and error results of each model and template of run `run_id`, in
    /// model then template order.
    pub(crate) fn grid_outcomes(&self, run_id: i64) -> Result<Vec<ColumnOutcomes>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT model_index, template_index, sum(status = 'passed'), sum(status = 'failed'),
                    sum(status = 'error')
             FROM bench_rows WHERE run_id = ?1
             GROUP BY model_index, template_index ORDER BY model_index, template_index",
        )?;
        let count = |r: &rusqlite::Row<'_>, i: usize| -> rusqlite::Result<u64> {
            Ok(r.get::<_, Option<i64>>(i)?.unwrap_or(0).max(0) as u64)
        };
        let rows = stmt.query_map([run_id], |r| {
            Ok(ColumnOutcomes {
                model_index: r.get(0)?,
                template_index: r.get(1)?,
                passed: count(r, 2)?,
                failed: count(r, 3)?,
                errors: count(r, 4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The index of the case named `name` (its id) in run `run_id`; `None` when it has none.
    pub(crate) fn case_index_named(&self, run_id: i64, name: &str) -> Result<Option<i64>> {
        use rusqlite::OptionalExtension as _;
        Ok(self
            .conn
            .prepare_cached(
                "SELECT idx FROM bench_labels WHERE run_id = ?1 AND kind = 'prompt' AND label = ?2
                 ORDER BY idx LIMIT 1",
            )?
            .query_row(rusqlite::params![run_id, name], |r| r.get(0))
            .optional()?)
    }

    /// The check methods a run's results were graded with (for the filter by check).
    pub(crate) fn grid_check_methods(&self, run_id: i64) -> Result<Vec<String>> {
        // A result with several checks names them in bench_checks; one with one check, in its
        // own row: the first result of each column tells those (a benchmark's checks are the
        // same for every case of a test).
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT method FROM bench_checks WHERE run_id = ?1
             UNION
             SELECT method FROM (SELECT method FROM bench_results WHERE run_id = ?1
                                 AND template_index >= 0 AND method != 'checks' LIMIT 10000)
             ORDER BY 1",
        )?;
        let methods = stmt.query_map([run_id], |r| r.get(0))?;
        Ok(methods.collect::<rusqlite::Result<_>>()?)
    }

    /// How `query`'s search, if any, is best applied to run `?1`'s results: a search that
    /// matches few calls is read first and its results sought by call; one that matches
    /// many is checked on the run's results as they are read in case order.
    fn search_plan(&self, query: &GridQuery) -> Result<SearchPlan> {
        let Some(words) = query.search.as_deref().and_then(fts_query) else {
            return Ok(SearchPlan::None);
        };
        let matches: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM (SELECT rowid FROM call_text WHERE call_text MATCH ?1
                                       LIMIT ?2)",
            )?
            .query_row((&words, FEW_MATCHES as i64 + 1), |r| r.get(0))?;
        Ok(if matches as u64 <= FEW_MATCHES {
            SearchPlan::FromMatches(words)
        } else {
            SearchPlan::InMatches(words)
        })
    }

    /// The FROM, WHERE and HAVING of the results `query` matches among run `?1`'s results
    /// `r`, grouped by case, searched as `plan` says.
    fn grid_matching(query: &GridQuery, plan: &SearchPlan, bound: &mut Bound) -> Matching {
        let from = match plan {
            SearchPlan::FromMatches(words) => {
                let q = bound.bind(words.clone());
                // CROSS JOIN: the matches first, whatever the planner guesses of the run.
                format!(
                    "(SELECT rowid AS call_id FROM call_text WHERE call_text MATCH {q}) m
                     CROSS JOIN bench_rows r ON r.call_id = m.call_id"
                )
            }
            SearchPlan::None | SearchPlan::InMatches(_) => "bench_rows r".to_owned(),
        };
        let (mut condition, having) = Self::filter_condition(&query.filter, bound);
        if let SearchPlan::InMatches(words) = plan {
            let q = bound.bind(words.clone());
            condition.push(format!(
                "r.call_id IN (SELECT rowid FROM call_text WHERE call_text MATCH {q})"
            ));
        }
        Matching {
            from,
            condition: joined(condition),
            having: having.map_or_else(String::new, |h| format!("HAVING {h}")),
        }
    }

    /// The condition on each result `r` of run `?1` of `filter`, and on each case (the
    /// results grouped by `prompt_index`), if any.
    fn filter_condition(filter: &ResultFilter, bound: &mut Bound) -> (Vec<String>, Option<String>) {
        // A case has a result of `status` (one seek in the index by case).
        let case_has = |status: &str| {
            format!(
                "EXISTS (SELECT 1 FROM bench_rows d WHERE d.run_id = ?1
                         AND d.prompt_index = r.prompt_index AND d.status = '{status}'
                         AND d.template_index >= 0)"
            )
        };
        match filter {
            ResultFilter::All => (Vec::new(), None),
            ResultFilter::Failures => (vec!["r.status = 'failed'".into()], None),
            ResultFilter::Errors => (vec!["r.status = 'error'".into()], None),
            ResultFilter::Passes => (vec!["r.status = 'passed'".into()], None),
            // One answer passed and another failed: asked once per case, not per result.
            ResultFilter::Disagree => (
                vec!["r.status != 'error'".into()],
                Some(format!("{} AND {}", case_has("passed"), case_has("failed"))),
            ),
            ResultFilter::Check(method) => {
                let m = bound.bind(method.clone());
                (
                    vec![format!(
                        "r.status != 'passed' AND (r.method = {m} OR EXISTS (
                            SELECT 1 FROM bench_checks k
                            WHERE k.run_id = ?1 AND k.model_index = r.model_index
                            AND k.template_index = r.template_index
                            AND k.prompt_index = r.prompt_index AND k.repeat_index = r.repeat_index
                            AND k.method = {m} AND k.status != 'passed'))"
                    )],
                    None,
                )
            }
        }
    }

    /// How many cases and results of run `run_id` `query` matches, counted to `enough` cases:
    /// past them, [`GridCount::more`] says more match (a run of a million results is not
    /// read whole to be counted; see [`COUNT_CASES`]).
    pub(crate) fn grid_count(
        &self,
        run_id: i64,
        query: &GridQuery,
        enough: u64,
    ) -> Result<GridCount> {
        let plan = self.search_plan(query)?;
        self.grid_count_as(run_id, query, enough, &plan)
    }

    /// [`Store::grid_count`], searching as `plan` says.
    fn grid_count_as(
        &self,
        run_id: i64,
        query: &GridQuery,
        enough: u64,
        plan: &SearchPlan,
    ) -> Result<GridCount> {
        let mut bound = Bound::default();
        bound.bind(run_id);
        let Matching {
            from,
            condition,
            having,
        } = Self::grid_matching(query, plan, &mut bound);
        let limit = bound.bind(enough.saturating_add(1).min(i64::MAX as u64) as i64);
        // Grouped in case order along the index, not counted distinct (which would sort),
        // and no further than one case past `enough`.
        let sql = format!(
            "SELECT count(*), coalesce(sum(n), 0) FROM (
                SELECT count(*) AS n FROM {from}
                WHERE r.run_id = ?1 AND r.template_index >= 0 AND {condition}
                GROUP BY r.prompt_index {having} LIMIT {limit})"
        );
        let (cases, results): (i64, i64) = self
            .conn
            .prepare_cached(&sql)?
            .query_row(rusqlite::params_from_iter(&bound.params), |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        let more = cases as u64 > enough;
        Ok(GridCount {
            cases: (cases as u64).min(enough),
            results: results as u64,
            more,
        })
    }

    /// The cases (prompt indexes) of one page of run `run_id`'s grid.
    pub(crate) fn grid_cases(
        &self,
        run_id: i64,
        query: &GridQuery,
        limit: u64,
        offset: u64,
    ) -> Result<Vec<i64>> {
        let plan = self.search_plan(query)?;
        self.grid_cases_as(run_id, query, limit, offset, &plan)
    }

    /// [`Store::grid_cases`], searching as `plan` says.
    fn grid_cases_as(
        &self,
        run_id: i64,
        query: &GridQuery,
        limit: u64,
        offset: u64,
        plan: &SearchPlan,
    ) -> Result<Vec<i64>> {
        let mut bound = Bound::default();
        bound.bind(run_id);
        let Matching {
            from,
            condition,
            having,
        } = Self::grid_matching(query, plan, &mut bound);
        let order = match query.order {
            CaseOrder::Case => "r.prompt_index",
            CaseOrder::Latency => "max(r.latency_ms) DESC, r.prompt_index",
            CaseOrder::Cost => "sum(r.cost_usd) DESC, r.prompt_index",
            CaseOrder::Tokens => {
                "sum(coalesce(r.input_tokens, 0) + coalesce(r.output_tokens, 0)) DESC, r.prompt_index"
            }
        };
        let limit = bound.bind(limit as i64);
        let offset = bound.bind(offset as i64);
        let sql = format!(
            "SELECT r.prompt_index FROM {from}
             WHERE r.run_id = ?1 AND r.template_index >= 0 AND {condition}
             GROUP BY r.prompt_index {having} ORDER BY {order} LIMIT {limit} OFFSET {offset}"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let cases = stmt.query_map(rusqlite::params_from_iter(&bound.params), |r| r.get(0))?;
        Ok(cases.collect::<rusqlite::Result<_>>()?)
    }

    /// Every result of run `run_id` in cases `cases` (a page's: each of them matched by
    /// `query` as a case), each marked matched or not by `query`.
    pub(crate) fn grid_cells(
        &self,
        run_id: i64,
        query: &GridQuery,
        cases: &[i64],
    ) -> Result<Vec<GridCell>> {
        if cases.is_empty() {
            return Ok(Vec::new());
        }
        let mut bound = Bound::default();
        bound.bind(run_id);
        // The cases are the page's: their condition (a HAVING) holds; each result's is asked.
        let (mut condition, _) = Self::filter_condition(&query.filter, &mut bound);
        if let Some(words) = query.search.as_deref().and_then(fts_query) {
            // A page's few results: each call looked up in the index.
            let q = bound.bind(words);
            condition.push(format!(
                "EXISTS (SELECT 1 FROM call_text WHERE call_text MATCH {q} AND rowid = r.call_id)"
            ));
        }
        let list: Vec<String> = cases.iter().map(|&c| bound.bind(c)).collect();
        let sql = cells_sql(&joined(condition), &list.join(", "));
        let mut stmt = self.conn.prepare(&sql)?;
        let cells = stmt.query_map(rusqlite::params_from_iter(&bound.params), |r| {
            let mut cell = grid_cell(r)?;
            cell.matched = r.get::<_, i64>(CELL_COLUMN_COUNT)? == 1;
            Ok(cell)
        })?;
        Ok(cells.collect::<rusqlite::Result<_>>()?)
    }

    /// Every result of run `run_id` for case `prompt_index` (at most [`MAX_CASE_RESULTS`]),
    /// with its answer, for the side-by-side page.
    pub(crate) fn case_results(&self, run_id: i64, prompt_index: i64) -> Result<Vec<CaseAnswer>> {
        let sql = format!(
            "SELECT {CELL_COLUMNS}, CAST(b.content AS TEXT), r.detail
             FROM bench_results r
             LEFT JOIN calls c ON c.id = r.call_id
             LEFT JOIN blobs b ON b.sha256 = c.response_sha256
             WHERE r.run_id = ?1 AND r.template_index >= 0 AND r.prompt_index = ?2
             ORDER BY r.model_index, r.template_index, r.repeat_index LIMIT ?3"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map((run_id, prompt_index, MAX_CASE_RESULTS as i64), |r| {
            let mut cell = grid_cell(r)?;
            cell.matched = true;
            Ok(CaseAnswer {
                cell,
                answer: r.get(CELL_COLUMN_COUNT)?,
                detail: r.get(CELL_COLUMN_COUNT + 1)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The result `result_id` of run `run_id` with its call, request, answer, checks and
    /// judge; `None` when the run has no such result.
    pub(crate) fn transcript(&self, run_id: i64, result_id: i64) -> Result<Option<Transcript>> {
        let sql = format!(
            "SELECT {CELL_COLUMNS}, r.model_ref, r.model_id, r.template_name, r.method,
                    r.expected, r.detail, r.score, r.input_tokens, r.output_tokens,
                    r.tokens_estimated, r.paid_usd, r.created_at, r.call_id, r.judge_score,
                    r.judge_call_id
             FROM bench_results r WHERE r.id = ?2 AND r.run_id = ?1"
        );
        let n = CELL_COLUMN_COUNT;
        let found = self
            .conn
            .prepare_cached(&sql)?
            .query_row((run_id, result_id), |r| {
                let mut cell = grid_cell(r)?;
                cell.matched = true;
                let transcript = Transcript {
                    cell,
                    model_ref: r.get(n)?,
                    model_id: r.get(n + 1)?,
                    template_name: r.get(n + 2)?,
                    method: r.get(n + 3)?,
                    expected: r.get(n + 4)?,
                    detail: r.get(n + 5)?,
                    score: r.get(n + 6)?,
                    input_tokens: r.get(n + 7)?,
                    output_tokens: r.get(n + 8)?,
                    tokens_estimated: r.get(n + 9)?,
                    paid_usd: r.get(n + 10)?,
                    created_at: r.get(n + 11)?,
                    call: None,
                    checks: Vec::new(),
                    tool_calls: Vec::new(),
                    judge_score: r.get(n + 13)?,
                    judge: None,
                };
                Ok((
                    transcript,
                    r.get::<_, Option<i64>>(n + 12)?,
                    r.get::<_, Option<i64>>(n + 14)?,
                ))
            })
            .optional()?;
        let Some((mut transcript, call_id, judge_call_id)) = found else {
            return Ok(None);
        };
        transcript.call = call_id.map(|id| self.call_text(id)).transpose()?.flatten();
        transcript.judge = judge_call_id
            .map(|id| self.call_text(id))
            .transpose()?
            .flatten();
        let cell = &transcript.cell;
        let key = ResultKey {
            run_id,
            model_index: cell.model_index as u32,
            template_index: cell.template_index as u32,
            prompt_index: cell.prompt_index as u32,
            repeat_index: cell.repeat_index as u32,
        };
        transcript.checks = self.bench_checks_of(&key)?;
        transcript.tool_calls = self.tool_calls_of(&key)?;
        Ok(Some(transcript))
    }

    /// The call `id` with its request and answer texts.
    pub(crate) fn call_text(&self, id: i64) -> Result<Option<CallText>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT c.id, c.provider, c.model, CAST(q.content AS TEXT), CAST(a.content AS TEXT),
                        c.error, c.finish_reason, c.attempts, c.latency_ms, c.cost_usd,
                        c.http_status, c.created_at
                 FROM calls c
                 LEFT JOIN blobs q ON q.sha256 = c.cache_key
                 LEFT JOIN blobs a ON a.sha256 = c.response_sha256
                 WHERE c.id = ?1",
            )?
            .query_row([id], |r| {
                Ok(CallText {
                    id: r.get(0)?,
                    provider: r.get(1)?,
                    model: r.get(2)?,
                    request: r.get(3)?,
                    answer: r.get(4)?,
                    error: r.get(5)?,
                    finish_reason: r.get(6)?,
                    attempts: r.get(7)?,
                    latency_ms: r.get(8)?,
                    cost_usd: r.get(9)?,
                    http_status: r.get(10)?,
                    created_at: r.get(11)?,
                })
            })
            .optional()?)
    }
}

/// One datasheet of a review run: what its reviewers reviewed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewedSheet {
    pub generated_sha256: String,
    pub brand: String,
    pub sensor: String,
    /// `provider:model` of the model that wrote it.
    pub generator: String,
}

/// One reviewer's score of one criterion of a datasheet (or, with no criterion, a review
/// that has no scores: skipped, failed, an error).
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewScoreCell {
    pub review_id: i64,
    pub generated_sha256: String,
    pub reviewer_ref: String,
    pub parse_status: String,
    pub overall_score: Option<i64>,
    pub overall_justification: Option<String>,
    pub criterion: Option<String>,
    pub score: Option<i64>,
    pub justification: Option<String>,
    pub na_reason: Option<String>,
}

/// A review's two datasheets, side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewSheets {
    pub brand: String,
    pub sensor: String,
    pub generator: String,
    pub reviewer_ref: String,
    pub generated: Option<String>,
    pub official_status: String,
    pub official: Option<String>,
    /// The reviewer's whole answer.
    pub answer: Option<String>,
}

/// One relevance prediction with the answer it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictionCell {
    pub id: i64,
    pub uid: Option<String>,
    pub image: String,
    pub model_ref: String,
    pub predicate: String,
    pub variant: String,
    pub trial: i64,
    pub score: Option<i64>,
    pub truth: bool,
    pub invalid_reason: Option<String>,
    pub call_id: Option<i64>,
    pub answer: Option<String>,
}

/// A count of relevance predictions of one variant, truth and score (`None`: invalid).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfusionCount {
    pub variant: String,
    pub truth: bool,
    pub score: Option<i64>,
    pub count: u64,
}

/// One pairwise verdict, as the viewer shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictCell {
    pub uid: Option<String>,
    pub judge: String,
    pub item: String,
    pub candidate_a: String,
    pub candidate_b: String,
    pub repeat_index: i64,
    pub shown_order: String,
    /// `A` (candidate_a), `B`, `tie`, `invalid`.
    pub winner: String,
    pub justification: Option<String>,
    pub invalid_reason: Option<String>,
}

/// How often the pair (a, b) had each winner.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCount {
    pub candidate_a: String,
    pub candidate_b: String,
    pub winner: String,
    pub count: u64,
}

/// A candidate's answer to an item of a pairwise run.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateAnswer {
    pub candidate: String,
    pub item: String,
    pub answer: Option<String>,
    pub error: Option<String>,
}

impl Store {
    /// A page of the datasheets a review run reviewed, and how many it reviewed.
    pub(crate) fn review_sheets(
        &self,
        run_id: i64,
        limit: u64,
        offset: u64,
    ) -> Result<(Vec<ReviewedSheet>, u64)> {
        let total: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(DISTINCT generated_sha256) FROM reviews WHERE run_id = ?1",
            )?
            .query_row([run_id], |r| r.get(0))?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT generated_sha256, min(brand), min(sensor),
                    min(generator_provider || ':' || generator_model)
             FROM reviews WHERE run_id = ?1 GROUP BY generated_sha256
             ORDER BY 2, 3, 4 LIMIT ?2 OFFSET ?3",
        )?;
        let sheets = stmt.query_map((run_id, limit as i64, offset as i64), |r| {
            Ok(ReviewedSheet {
                generated_sha256: r.get(0)?,
                brand: r.get(1)?,
                sensor: r.get(2)?,
                generator: r.get(3)?,
            })
        })?;
        Ok((sheets.collect::<rusqlite::Result<_>>()?, total as u64))
    }

    /// Every reviewer's scores of the datasheets `sheets` (by their generated sha256).
    pub(crate) fn review_scores(
        &self,
        run_id: i64,
        sheets: &[String],
    ) -> Result<Vec<ReviewScoreCell>> {
        if sheets.is_empty() {
            return Ok(Vec::new());
        }
        let mut bound = Bound::default();
        bound.bind(run_id);
        let list: Vec<String> = sheets.iter().map(|s| bound.bind(s.clone())).collect();
        let sql = format!(
            "SELECT r.id, r.generated_sha256, r.reviewer_ref, r.parse_status, r.overall_score,
                    r.overall_justification, s.criterion, s.score, s.justification, s.na_reason
             FROM reviews r LEFT JOIN review_scores s ON s.review_id = r.id
             WHERE r.run_id = ?1 AND r.generated_sha256 IN ({})
             ORDER BY r.generated_sha256, s.position, r.reviewer_ref",
            list.join(", ")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let cells = stmt.query_map(rusqlite::params_from_iter(&bound.params), |r| {
            Ok(ReviewScoreCell {
                review_id: r.get(0)?,
                generated_sha256: r.get(1)?,
                reviewer_ref: r.get(2)?,
                parse_status: r.get(3)?,
                overall_score: r.get(4)?,
                overall_justification: r.get(5)?,
                criterion: r.get(6)?,
                score: r.get(7)?,
                justification: r.get(8)?,
                na_reason: r.get(9)?,
            })
        })?;
        Ok(cells.collect::<rusqlite::Result<_>>()?)
    }

    /// The generated and official datasheets of review `review_id` of run `run_id`, with the
    /// reviewer's answer.
    pub(crate) fn review_texts(&self, run_id: i64, review_id: i64) -> Result<Option<ReviewSheets>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT r.brand, r.sensor, r.generator_provider || ':' || r.generator_model,
                        r.reviewer_ref, CAST(g.content AS TEXT), r.official_status,
                        CAST(o.content AS TEXT), CAST(a.content AS TEXT)
                 FROM reviews r
                 LEFT JOIN blobs g ON g.sha256 = r.generated_sha256
                 LEFT JOIN blobs o ON o.sha256 = r.official_sha256
                 LEFT JOIN calls c ON c.id = r.call_id
                 LEFT JOIN blobs a ON a.sha256 = c.response_sha256
                 WHERE r.id = ?2 AND r.run_id = ?1",
            )?
            .query_row((run_id, review_id), |r| {
                Ok(ReviewSheets {
                    brand: r.get(0)?,
                    sensor: r.get(1)?,
                    generator: r.get(2)?,
                    reviewer_ref: r.get(3)?,
                    generated: r.get(4)?,
                    official_status: r.get(5)?,
                    official: r.get(6)?,
                    answer: r.get(7)?,
                })
            })
            .optional()?)
    }

    /// A page of the images of a relevance run (name, sha256), and how many it has.
    pub(crate) fn relevance_images(
        &self,
        run_id: i64,
        limit: u64,
        offset: u64,
    ) -> Result<(Vec<(String, String)>, u64)> {
        let total: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(DISTINCT image) FROM relevance_predictions WHERE run_id = ?1",
            )?
            .query_row([run_id], |r| r.get(0))?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT image, min(image_sha256) FROM relevance_predictions WHERE run_id = ?1
             GROUP BY image ORDER BY image LIMIT ?2 OFFSET ?3",
        )?;
        let images = stmt.query_map((run_id, limit as i64, offset as i64), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        Ok((images.collect::<rusqlite::Result<_>>()?, total as u64))
    }

    /// The predictions about `images` of run `run_id`, with their answers.
    pub(crate) fn relevance_predictions(
        &self,
        run_id: i64,
        images: &[String],
    ) -> Result<Vec<PredictionCell>> {
        if images.is_empty() {
            return Ok(Vec::new());
        }
        let mut bound = Bound::default();
        bound.bind(run_id);
        let list: Vec<String> = images.iter().map(|s| bound.bind(s.clone())).collect();
        let sql = format!(
            "SELECT p.id, p.uid, p.image, p.model_ref, p.predicate, p.variant, p.trial, p.score,
                    p.truth, p.invalid_reason, p.call_id, CAST(b.content AS TEXT)
             FROM relevance_predictions p
             LEFT JOIN calls c ON c.id = p.call_id
             LEFT JOIN blobs b ON b.sha256 = c.response_sha256
             WHERE p.run_id = ?1 AND p.image IN ({})
             ORDER BY p.image, p.predicate, p.model_ref, p.trial, p.variant",
            list.join(", ")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let cells = stmt.query_map(rusqlite::params_from_iter(&bound.params), |r| {
            Ok(PredictionCell {
                id: r.get(0)?,
                uid: r.get(1)?,
                image: r.get(2)?,
                model_ref: r.get(3)?,
                predicate: r.get(4)?,
                variant: r.get(5)?,
                trial: r.get(6)?,
                score: r.get(7)?,
                truth: r.get(8)?,
                invalid_reason: r.get(9)?,
                call_id: r.get(10)?,
                answer: r.get(11)?,
            })
        })?;
        Ok(cells.collect::<rusqlite::Result<_>>()?)
    }

    /// The predictions of run `run_id` counted by variant, truth and score.
    pub(crate) fn relevance_confusion(&self, run_id: i64) -> Result<Vec<ConfusionCount>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT variant, truth, score, count(*) FROM relevance_predictions
             WHERE run_id = ?1 GROUP BY variant, truth, score ORDER BY variant DESC, truth DESC, score",
        )?;
        let counts = stmt.query_map([run_id], |r| {
            Ok(ConfusionCount {
                variant: r.get(0)?,
                truth: r.get(1)?,
                score: r.get(2)?,
                count: r.get::<_, i64>(3)? as u64,
            })
        })?;
        Ok(counts.collect::<rusqlite::Result<_>>()?)
    }

    /// The verdicts of pairwise run `run_id` counted by pair and winner (its win matrix).
    pub(crate) fn pairwise_counts(&self, run_id: i64) -> Result<Vec<PairCount>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT candidate_a, candidate_b, winner, count(*) FROM pairwise_verdicts
             WHERE run_id = ?1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        )?;
        let counts = stmt.query_map([run_id], |r| {
            Ok(PairCount {
                candidate_a: r.get(0)?,
                candidate_b: r.get(1)?,
                winner: r.get(2)?,
                count: r.get::<_, i64>(3)? as u64,
            })
        })?;
        Ok(counts.collect::<rusqlite::Result<_>>()?)
    }

    /// A page of the items of pairwise run `run_id`, and how many it has.
    pub(crate) fn pairwise_items(
        &self,
        run_id: i64,
        limit: u64,
        offset: u64,
    ) -> Result<(Vec<String>, u64)> {
        let total: i64 = self
            .conn
            .prepare_cached("SELECT count(DISTINCT item) FROM pairwise_verdicts WHERE run_id = ?1")?
            .query_row([run_id], |r| r.get(0))?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT item FROM pairwise_verdicts WHERE run_id = ?1
             ORDER BY item LIMIT ?2 OFFSET ?3",
        )?;
        let items = stmt.query_map((run_id, limit as i64, offset as i64), |r| r.get(0))?;
        Ok((items.collect::<rusqlite::Result<_>>()?, total as u64))
    }

    /// The verdicts about `items` of run `run_id`, both orders of a pair next to each other,
    /// and the candidates' answers to them.
    pub(crate) fn pairwise_verdicts_of(
        &self,
        run_id: i64,
        items: &[String],
    ) -> Result<(Vec<VerdictCell>, Vec<CandidateAnswer>)> {
        if items.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut bound = Bound::default();
        bound.bind(run_id);
        let list: Vec<String> = items.iter().map(|s| bound.bind(s.clone())).collect();
        let list = list.join(", ");
        let mut stmt = self.conn.prepare(&format!(
            "SELECT uid, judge, item, candidate_a, candidate_b, repeat_index, shown_order, winner,
                    justification, invalid_reason
             FROM pairwise_verdicts WHERE run_id = ?1 AND item IN ({list})
             ORDER BY item, judge, candidate_a, candidate_b, repeat_index, shown_order"
        ))?;
        let verdicts = stmt
            .query_map(rusqlite::params_from_iter(&bound.params), |r| {
                Ok(VerdictCell {
                    uid: r.get(0)?,
                    judge: r.get(1)?,
                    item: r.get(2)?,
                    candidate_a: r.get(3)?,
                    candidate_b: r.get(4)?,
                    repeat_index: r.get(5)?,
                    shown_order: r.get(6)?,
                    winner: r.get(7)?,
                    justification: r.get(8)?,
                    invalid_reason: r.get(9)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut stmt = self.conn.prepare(&format!(
            "SELECT a.candidate, a.item, CAST(b.content AS TEXT), a.error
             FROM pairwise_answers a
             LEFT JOIN calls c ON c.id = a.call_id
             LEFT JOIN blobs b ON b.sha256 = c.response_sha256
             WHERE a.run_id = ?1 AND a.item IN ({list}) ORDER BY a.item, a.candidate"
        ))?;
        let answers = stmt
            .query_map(rusqlite::params_from_iter(&bound.params), |r| {
                Ok(CandidateAnswer {
                    candidate: r.get(0)?,
                    item: r.get(1)?,
                    answer: r.get(2)?,
                    error: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok((verdicts, answers))
    }

    /// The image blob `sha256` and its media type, if it is an image (PNG, JPEG, GIF, WebP):
    /// the viewer serves no other blob as a file.
    pub(crate) fn view_image(&self, sha256: &str) -> Result<Option<(String, Vec<u8>)>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT media_type, content FROM blobs WHERE sha256 = ?1
                 AND media_type IN ('image/png', 'image/jpeg', 'image/gif', 'image/webp')",
            )?
            .query_row([sha256], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }
}

/// One model (and template) of two benchmark runs compared: its shared results and how
/// they changed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiffModelRow {
    pub model_ref: String,
    pub template_name: Option<String>,
    /// Results in both runs (same model, template, case and repeat).
    pub shared: u64,
    /// Shared results answered in both runs (neither an error).
    pub paired: u64,
    pub base_passed: u64,
    pub new_passed: u64,
    /// Passed in the base run, failed in the new one.
    pub regressions: u64,
    /// Failed in the base run, passed in the new one.
    pub fixes: u64,
    /// Answered in the base run, an error in the new one.
    pub new_errors: u64,
}

/// A shared result whose outcome changed between two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffItem {
    pub model_ref: String,
    pub template_name: Option<String>,
    pub prompt_name: String,
    pub repeat_index: i64,
    pub base_id: i64,
    pub new_id: i64,
    pub base: Outcome,
    pub new: Outcome,
    /// `regression`, `new error`, `fix`, `error resolved`.
    pub change: String,
}

/// The results of two benchmark runs paired by model, template, case and repeat (`b` the base
/// run `?1`'s, `n` the new run `?2`'s).
const PAIRED: &str = "FROM bench_results b JOIN bench_results n
     ON n.run_id = ?2 AND n.model_ref = b.model_ref
     AND coalesce(n.template_name, '') = coalesce(b.template_name, '')
     AND n.prompt_name = b.prompt_name AND n.repeat_index = b.repeat_index
     WHERE b.run_id = ?1";

/// The change of a pair, most serious first (its rank is its order on the page).
const CHANGE: &str = "CASE
     WHEN b.status = 'passed' AND n.status = 'failed' THEN 'regression'
     WHEN b.status != 'error' AND n.status = 'error' THEN 'new error'
     WHEN b.status = 'failed' AND n.status = 'passed' THEN 'fix'
     WHEN b.status = 'error' AND n.status != 'error' THEN 'error resolved' END";

impl Store {
    /// Benchmark runs `base` and `new` compared, model by model (and template).
    pub(crate) fn diff_models(&self, base: i64, new: i64) -> Result<Vec<DiffModelRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT b.model_ref, b.template_name, count(*),
                    sum(b.status != 'error' AND n.status != 'error'),
                    sum(b.status = 'passed' AND n.status != 'error'),
                    sum(n.status = 'passed' AND b.status != 'error'),
                    sum(b.status = 'passed' AND n.status = 'failed'),
                    sum(b.status = 'failed' AND n.status = 'passed'),
                    sum(b.status != 'error' AND n.status = 'error')
             {PAIRED} GROUP BY b.model_ref, b.template_name ORDER BY b.model_ref, b.template_name"
        ))?;
        let rows = stmt.query_map((base, new), |r| {
            let n = |i: usize| r.get::<_, i64>(i).map(|v| v as u64);
            Ok(DiffModelRow {
                model_ref: r.get(0)?,
                template_name: r.get(1)?,
                shared: n(2)?,
                paired: n(3)?,
                base_passed: n(4)?,
                new_passed: n(5)?,
                regressions: n(6)?,
                fixes: n(7)?,
                new_errors: n(8)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A page of the shared results whose outcome changed, regressions first, and how many
    /// changed.
    pub(crate) fn diff_items(
        &self,
        base: i64,
        new: i64,
        limit: u64,
        offset: u64,
    ) -> Result<(Vec<DiffItem>, u64)> {
        let total: i64 = self
            .conn
            .prepare_cached(&format!(
                "SELECT count(*) {PAIRED} AND b.status != n.status"
            ))?
            .query_row((base, new), |r| r.get(0))?;
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT b.model_ref, b.template_name, b.prompt_name, b.repeat_index, b.id, n.id,
                    b.status, n.status, {CHANGE} AS change
             {PAIRED} AND b.status != n.status
             ORDER BY CASE change WHEN 'regression' THEN 0 WHEN 'new error' THEN 1
                      WHEN 'fix' THEN 2 ELSE 3 END,
                      b.model_ref, b.template_name, b.prompt_index, b.repeat_index
             LIMIT ?3 OFFSET ?4"
        ))?;
        let rows = stmt.query_map((base, new, limit as i64, offset as i64), |r| {
            Ok(DiffItem {
                model_ref: r.get(0)?,
                template_name: r.get(1)?,
                prompt_name: r.get(2)?,
                repeat_index: r.get(3)?,
                base_id: r.get(4)?,
                new_id: r.get(5)?,
                base: r.get(6)?,
                new: r.get(7)?,
                change: r.get(8)?,
            })
        })?;
        Ok((rows.collect::<rusqlite::Result<_>>()?, total as u64))
    }
}

/// The columns of a result that a grid cell shows, on results aliased `r`.
const CELL_COLUMNS: &str = "r.id, r.uid, r.prompt_index, r.prompt_name, r.model_index,
    r.template_index, r.repeat_index, r.status, r.latency_ms, r.cost_usd,
    CASE WHEN r.input_tokens IS NULL AND r.output_tokens IS NULL THEN NULL
         ELSE coalesce(r.input_tokens, 0) + coalesce(r.output_tokens, 0) END,
    r.cache_hit";

/// The cells of the cases `list` (placeholders) of run `?1`, matched by `condition`.
fn cells_sql(condition: &str, list: &str) -> String {
    format!(
        "SELECT {CELL_COLUMNS}, CASE WHEN {condition} THEN 1 ELSE 0 END
         FROM bench_results r
         WHERE r.run_id = ?1 AND r.template_index >= 0 AND r.prompt_index IN ({list})
         ORDER BY r.prompt_index, r.model_index, r.template_index, r.repeat_index"
    )
}

/// How many columns [`CELL_COLUMNS`] has.
const CELL_COLUMN_COUNT: usize = 12;

/// A cell from a row starting with [`CELL_COLUMNS`] (not matched).
fn grid_cell(r: &rusqlite::Row<'_>) -> rusqlite::Result<GridCell> {
    Ok(GridCell {
        id: r.get(0)?,
        uid: r.get(1)?,
        prompt_index: r.get(2)?,
        prompt_name: r.get(3)?,
        model_index: r.get(4)?,
        template_index: r.get(5)?,
        repeat_index: r.get(6)?,
        outcome: r.get(7)?,
        latency_ms: r.get(8)?,
        cost_usd: r.get(9)?,
        tokens: r.get(10)?,
        cache_hit: r.get(11)?,
        matched: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BenchResultRow, NewCall};

    /// A count to the end.
    const ALL: u64 = u64::MAX;

    /// A result of `model` (with `template`) on case `prompt`, answered by call `call_id`.
    fn row(
        run_id: i64,
        model: u32,
        template: u32,
        prompt: u32,
        outcome: Outcome,
    ) -> BenchResultRow {
        BenchResultRow {
            run_id,
            model_index: model,
            prompt_index: prompt,
            repeat_index: 0,
            model_ref: format!("openai:m{model}"),
            provider: "openai".into(),
            model_id: format!("m{model}"),
            prompt_name: format!("case{prompt}"),
            method: "exact".into(),
            call_id: None,
            cache_hit: false,
            outcome,
            detail: None,
            latency_ms: Some(f64::from(100 * prompt + model)),
            input_tokens: Some(u64::from(prompt)),
            output_tokens: Some(1),
            tokens_estimated: false,
            cost_usd: Some(f64::from(prompt % 3)),
            paid_usd: None,
            energy_wh: None,
            energy_wh_min: None,
            energy_wh_max: None,
            energy_method: None,
            judge_call_id: None,
            judge_score: None,
            judge_cost_usd: None,
            expected: Some("4".into()),
            template_index: template,
            template_name: Some(format!("t{template}")),
            score: None,
            checks: Vec::new(),
        }
    }

    /// Stores a call asking `prompt` and answering `answer`; returns its id.
    fn call(store: &mut Store, prompt: &str, answer: &str) -> i64 {
        let request = serde_json::json!({
            "endpoint": "x", "model": "m", "provider": "openai", "repeat": 0, "v": 1,
            "params": {}, "system": "Be brief.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        })
        .to_string();
        let key = crate::hash::sha256_hex(request.as_bytes());
        let mut new = NewCall::answered(&key, answer);
        new.canonical_request = request.as_str().into();
        store.insert_call(&new).unwrap()
    }

    /// A run of 2 models x 2 templates on 60 cases: model 1 fails every third case, model 0
    /// errs on case 7; case 5's answers say `zebra`.
    fn filled() -> (Store, i64) {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let mut rows = Vec::new();
        for prompt in 0..60u32 {
            for model in 0..2u32 {
                for template in 0..2u32 {
                    let outcome = match (model, prompt) {
                        (0, 7) => Outcome::Error,
                        (1, p) if p % 3 == 0 => Outcome::Failed,
                        _ => Outcome::Passed,
                    };
                    let mut result = row(run, model, template, prompt, outcome);
                    let answer = if prompt == 5 { "a zebra" } else { "four" };
                    result.call_id = Some(call(
                        &mut store,
                        &format!("question {prompt} {model} {template}"),
                        answer,
                    ));
                    rows.push(result);
                }
            }
        }
        store.insert_bench_results(&rows).unwrap();
        (store, run)
    }

    #[test]
    fn columns_are_models_by_templates() {
        let (store, run) = filled();
        let columns = store.grid_columns(run).unwrap();
        let keys: Vec<(i64, i64, &str)> = columns
            .iter()
            .map(|c| (c.model_index, c.template_index, c.model_ref.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                (0, 0, "openai:m0"),
                (0, 1, "openai:m0"),
                (1, 0, "openai:m1"),
                (1, 1, "openai:m1")
            ]
        );
        assert_eq!(columns[1].template_name.as_deref(), Some("t1"));
        assert!(store.grid_columns(run + 1).unwrap().is_empty());
    }

    #[test]
    fn filters_count_cases_and_results_and_pages_split_them() {
        let (store, run) = filled();
        let query = |filter| GridQuery {
            filter,
            ..Default::default()
        };
        let all = query(ResultFilter::All);
        assert_eq!(
            store.grid_count(run, &all, ALL).unwrap(),
            GridCount {
                cases: 60,
                results: 240,
                more: false,
            }
        );
        let failures = query(ResultFilter::Failures);
        // Cases 0, 3, ..., 57: 20 cases, two templates each.
        assert_eq!(
            store.grid_count(run, &failures, ALL).unwrap(),
            GridCount {
                cases: 20,
                results: 40,
                more: false,
            }
        );
        let first = store.grid_cases(run, &failures, 15, 0).unwrap();
        let second = store.grid_cases(run, &failures, 15, 15).unwrap();
        assert_eq!(first.len(), 15);
        assert_eq!(second, [45, 48, 51, 54, 57]);
        let errors = query(ResultFilter::Errors);
        assert_eq!(store.grid_cases(run, &errors, 50, 0).unwrap(), [7]);
        // Disagree: model 1 failed where model 0 passed (case 7's error is left out: its
        // passes agree).
        let disagree = query(ResultFilter::Disagree);
        assert_eq!(store.grid_count(run, &disagree, ALL).unwrap().cases, 20);
        // By check: the single check `exact` of the failed results; none for another method.
        let exact = query(ResultFilter::Check("exact".into()));
        assert_eq!(store.grid_count(run, &exact, ALL).unwrap().results, 42);
        let other = query(ResultFilter::Check("contains".into()));
        assert_eq!(store.grid_count(run, &other, ALL).unwrap().results, 0);
    }

    #[test]
    fn a_count_stops_past_the_cases_it_needs_and_says_so() {
        let (store, run) = filled();
        let all = GridQuery::default();
        let stopped = store.grid_count(run, &all, 10).unwrap();
        assert_eq!(stopped.cases, 10);
        assert!(stopped.more);
        // A lower bound: the results of the cases it read (4 each).
        assert!((40..=44).contains(&stopped.results), "{stopped:?}");
        assert_eq!(
            store.grid_count(run, &all, 60).unwrap(),
            GridCount {
                cases: 60,
                results: 240,
                more: false
            }
        );
        assert!(store.grid_count(run, &all, 59).unwrap().more);
        // Filtered and grouped (models disagree: 20 cases), the same.
        let disagree = GridQuery {
            filter: ResultFilter::Disagree,
            ..Default::default()
        };
        let stopped = store.grid_count(run, &disagree, 5).unwrap();
        assert_eq!((stopped.cases, stopped.more), (5, true));
        assert!(!store.grid_count(run, &disagree, 20).unwrap().more);
    }

    #[test]
    fn a_search_read_from_its_matches_finds_what_one_checked_on_each_result_finds() {
        let (store, run) = filled();
        for words in ["zebra", "brief", "question 12", "four", "nothing-like-it"] {
            let fts = fts_query(words).unwrap();
            for filter in [
                ResultFilter::All,
                ResultFilter::Failures,
                ResultFilter::Disagree,
                ResultFilter::Check("exact".into()),
            ] {
                for order in [CaseOrder::Case, CaseOrder::Latency] {
                    let query = GridQuery {
                        filter: filter.clone(),
                        search: Some(words.into()),
                        order,
                    };
                    let from = SearchPlan::FromMatches(fts.clone());
                    let each = SearchPlan::InMatches(fts.clone());
                    let counted = store.grid_count_as(run, &query, ALL, &from).unwrap();
                    assert_eq!(
                        counted,
                        store.grid_count_as(run, &query, ALL, &each).unwrap(),
                        "{query:?}"
                    );
                    assert_eq!(counted, store.grid_count(run, &query, ALL).unwrap());
                    let cases = store.grid_cases_as(run, &query, 100, 0, &from).unwrap();
                    assert_eq!(
                        cases,
                        store.grid_cases_as(run, &query, 100, 0, &each).unwrap(),
                        "{query:?}"
                    );
                    // The page's cells: as many marked matched as were counted.
                    let cells = store.grid_cells(run, &query, &cases).unwrap();
                    let matched = cells.iter().filter(|c| c.matched).count() as u64;
                    assert_eq!(matched, counted.results, "{query:?}");
                    assert_eq!(cases.len() as u64, counted.cases, "{query:?}");
                }
            }
        }
        // Few matches are read first; many are checked on each result.
        let plan = |words: &str| {
            store
                .search_plan(&GridQuery {
                    search: Some(words.into()),
                    ..Default::default()
                })
                .unwrap()
        };
        assert!(matches!(plan("zebra"), SearchPlan::FromMatches(_)));
        assert_eq!(plan(" "), SearchPlan::None);
    }

    #[test]
    fn the_viewer_s_temporary_tables_go_to_a_file_not_to_memory() {
        let (store, _) = filled();
        let temp_store = |store: &Store| -> i64 {
            store
                .conn
                .query_row("PRAGMA temp_store", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(temp_store(&store), 2, "a run's writes: in memory");
        store.prepare_for_viewing().unwrap();
        assert_eq!(temp_store(&store), 1, "the viewer's: a file");
    }

    #[test]
    fn cells_of_a_page_are_marked_by_the_filter() {
        let (store, run) = filled();
        let failures = GridQuery {
            filter: ResultFilter::Failures,
            ..Default::default()
        };
        let cells = store.grid_cells(run, &failures, &[3, 4]).unwrap();
        assert_eq!(cells.len(), 8);
        let matched: Vec<(i64, i64)> = cells
            .iter()
            .filter(|c| c.matched)
            .map(|c| (c.prompt_index, c.model_index))
            .collect();
        assert_eq!(matched, [(3, 1), (3, 1)]);
        assert_eq!(cells[0].tokens, Some(4));
    }

    #[test]
    fn orders_put_the_slowest_and_dearest_first() {
        let (store, run) = filled();
        let by = |order| GridQuery {
            order,
            ..Default::default()
        };
        assert_eq!(
            store
                .grid_cases(run, &by(CaseOrder::Latency), 3, 0)
                .unwrap(),
            [59, 58, 57]
        );
        assert_eq!(
            store.grid_cases(run, &by(CaseOrder::Tokens), 2, 0).unwrap(),
            [59, 58]
        );
        // Cost is prompt % 3: the cases of cost 2 first, in case order.
        assert_eq!(
            store.grid_cases(run, &by(CaseOrder::Cost), 3, 0).unwrap(),
            [2, 5, 8]
        );
    }

    #[test]
    fn search_finds_answers_and_prompts_and_reads_no_syntax() {
        let (mut store, run) = filled();
        let search = |store: &Store, words: &str| {
            store
                .grid_count(
                    run,
                    &GridQuery {
                        search: Some(words.into()),
                        ..Default::default()
                    },
                    ALL,
                )
                .unwrap()
        };
        assert_eq!(
            search(&store, "zebra"),
            GridCount {
                cases: 1,
                results: 4,
                more: false,
            }
        );
        assert_eq!(
            search(&store, "question 12"),
            GridCount {
                cases: 1,
                results: 4,
                more: false,
            }
        );
        assert_eq!(search(&store, "brief").results, 240, "the system prompt");
        // FTS5 operators and quotes are words, not syntax.
        for odd in ["\"zebra", "zebra OR four", "NEAR(a b)", "col:x", "*"] {
            search(&store, odd);
        }
        // A call stored later is found at once (the trigger keeps the index).
        let later = call(&mut store, "a new question", "an okapi");
        let mut result = row(run, 0, 0, 60, Outcome::Passed);
        result.call_id = Some(later);
        store.insert_bench_results(&[result]).unwrap();
        assert_eq!(
            search(&store, "okapi"),
            GridCount {
                cases: 1,
                results: 1,
                more: false,
            }
        );
        assert_eq!(fts_query("  "), None);
        assert_eq!(fts_query("\0"), None, "a NUL is no word");
        assert_eq!(fts_query("ze\0bra"), Some("\"ze\" \"bra\"".into()));
        for odd in ["\0", "zebra\0", "\u{1}\u{7f}", "a\0\"b"] {
            search(&store, odd);
        }
        assert_eq!(fts_query("a \"b"), Some("\"a\" \"\"\"b\"".into()));
    }

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a test reads as one scenario (or table), top to bottom"
    )]
    fn a_transcript_has_the_request_answer_and_checks() {
        let (store, run) = filled();
        let id: i64 = store
            .conn
            .query_row(
                "SELECT id FROM bench_results WHERE prompt_index = 5 AND model_index = 1
                 AND template_index = 0",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let t = store.transcript(run, id).unwrap().unwrap();
        let answered = t.call.clone().unwrap();
        assert_eq!(answered.answer.as_deref(), Some("a zebra"));
        assert!(answered.request.unwrap().contains("question 5 1 0"));
        assert_eq!(t.model_ref, "openai:m1");
        assert_eq!(t.template_name.as_deref(), Some("t0"));
        assert!(
            store.transcript(run + 1, id).unwrap().is_none(),
            "another run's"
        );
        let side = store.case_results(run, 5).unwrap();
        assert_eq!(side.len(), 4);
        assert!(side.iter().all(|c| c.answer.as_deref() == Some("a zebra")));
        assert!(t.judge.is_none() && t.checks.is_empty());
        // A judged result with several checks: the judge's answer and every check.
        let mut store = store;
        let judge = call(
            &mut store,
            "judge this",
            "{\"score\": 4, \"justification\": \"close\"}",
        );
        let mut judged = row(run, 0, 0, 61, Outcome::Failed);
        judged.method = "checks".into();
        judged.judge_call_id = Some(judge);
        judged.judge_score = Some(4);
        judged.checks = vec![
            CheckRow {
                method: "contains".into(),
                expected: Some("x".into()),
                outcome: Outcome::Failed,
                score: None,
                weight: 1.0,
                reason: Some("no x".into()),
            },
            CheckRow {
                method: "judge".into(),
                expected: None,
                outcome: Outcome::Passed,
                score: Some(0.75),
                weight: 2.0,
                reason: Some("close".into()),
            },
        ];
        store.insert_bench_results(&[judged]).unwrap();
        let id: i64 = store
            .conn
            .query_row(
                "SELECT id FROM bench_results WHERE prompt_index = 61",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let t = store.transcript(run, id).unwrap().unwrap();
        assert_eq!(t.judge_score, Some(4));
        assert!(t.judge.unwrap().answer.unwrap().contains("close"));
        let methods: Vec<&str> = t.checks.iter().map(|c| c.method.as_str()).collect();
        assert_eq!(methods, ["contains", "judge"]);
        // The filter by check finds it by its failed check, not by its passed one.
        let by = |method: &str| GridQuery {
            filter: ResultFilter::Check(method.into()),
            ..Default::default()
        };
        assert_eq!(
            store.grid_count(run, &by("contains"), ALL).unwrap().results,
            1
        );
        assert_eq!(store.grid_count(run, &by("judge"), ALL).unwrap().results, 0);
        assert!(
            store
                .grid_check_methods(run)
                .unwrap()
                .contains(&"judge".to_owned())
        );
        assert!(t.call.is_none(), "no answer call was recorded");
    }

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a test reads as one scenario (or table), top to bottom"
    )]
    fn pages_are_read_through_indexes_not_by_scanning_the_run() {
        let (store, run) = filled();
        let plan = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> String {
            let mut stmt = store
                .conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap();
            let rows = stmt
                .query_map(params, |r| r.get::<_, String>(3))
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            rows.join("\n")
        };
        let failures = plan(
            "SELECT r.prompt_index FROM bench_rows r
             WHERE r.run_id = ?1 AND r.template_index >= 0 AND r.status = 'failed'
             GROUP BY r.prompt_index ORDER BY r.prompt_index LIMIT 50",
            &[&run],
        );
        assert!(failures.contains("bench_results_by_status"), "{failures}");
        assert!(!failures.contains("TEMP B-TREE"), "{failures}");
        let all = plan(
            "SELECT r.prompt_index FROM bench_rows r
             WHERE r.run_id = ?1 AND r.template_index >= 0 AND 1
             GROUP BY r.prompt_index ORDER BY r.prompt_index LIMIT 50",
            &[&run],
        );
        assert!(
            all.contains("COVERING INDEX bench_results_by_case"),
            "{all}"
        );
        // A page's cells: the cases of its list, each sought, not a range read to the end.
        let cells = plan(&cells_sql("1", "3, 4, 5"), &[&run]);
        assert!(
            cells.contains("bench_results_by_case (run_id=? AND prompt_index=?)"),
            "{cells}"
        );
        // A search of few matches reads them first, then their results by call.
        let mut bound = Bound::default();
        bound.bind(run);
        let query = GridQuery {
            search: Some("zebra".into()),
            ..Default::default()
        };
        let plan_of = |query: &GridQuery, search: &SearchPlan, bound: &mut Bound| {
            let Matching {
                from,
                condition,
                having,
            } = Store::grid_matching(query, search, bound);
            format!(
                "SELECT r.prompt_index FROM {from}
                 WHERE r.run_id = ?1 AND r.template_index >= 0 AND {condition}
                 GROUP BY r.prompt_index {having} LIMIT 50"
            )
        };
        let sql = plan_of(
            &query,
            &SearchPlan::FromMatches("\"zebra\"".into()),
            &mut bound,
        );
        let params: Vec<&dyn rusqlite::ToSql> = bound
            .params
            .iter()
            .map(|p| p as &dyn rusqlite::ToSql)
            .collect();
        let searched = plan(&sql, &params);
        let first = searched.lines().next().unwrap_or_default();
        assert!(first.contains("VIRTUAL TABLE INDEX"), "{searched}");
        assert!(searched.contains("bench_results_by_call"), "{searched}");
        // Models disagree: asked of each case along the index, not of a list of the run's.
        let mut bound = Bound::default();
        bound.bind(run);
        let disagree = GridQuery {
            filter: ResultFilter::Disagree,
            ..Default::default()
        };
        let sql = plan_of(&disagree, &SearchPlan::None, &mut bound);
        let disagreeing = plan(&sql, &[&run]);
        assert!(!disagreeing.contains("LIST SUBQUERY"), "{disagreeing}");
        assert!(!disagreeing.contains("TEMP B-TREE"), "{disagreeing}");
        // Other queries of a run keep their plans (and row orders): the partial indexes are
        // not theirs.
        let export = plan("SELECT * FROM bench_results t WHERE t.run_id = ?1", &[&run]);
        assert!(
            !export.contains("by_case") && !export.contains("by_status"),
            "{export}"
        );
    }
}
