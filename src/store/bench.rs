//! Benchmark results: one row per run x model x prompt x repeat, and their bulk loading.

use std::borrow::Cow;
use std::collections::HashMap;

use rusqlite::params;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};

use super::{Result, Store, now_rfc3339};

/// What a benchmark result came to. Stored as the text of `bench_results.status` (`passed`,
/// `failed`, `error`), counted by the summaries as a nullable boolean (see [`Outcome::passed`]),
/// shown by its name: the one place these meanings are mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The answer passed its test.
    Passed,
    /// The answer failed its test.
    Failed,
    /// No answer to test: the call failed, or the judge did.
    Error,
}

impl Outcome {
    /// The outcome of a tested answer.
    pub const fn of_test(passed: bool) -> Self {
        if passed { Self::Passed } else { Self::Failed }
    }

    /// Its stored and shown name: `passed`, `failed` or `error`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Error => "error",
        }
    }

    /// As the summaries count it: `Some(true)` passed, `Some(false)` failed, `None` an error
    /// (no answer: neither a pass nor a failure).
    pub const fn passed(self) -> Option<bool> {
        match self {
            Self::Passed => Some(true),
            Self::Failed => Some(false),
            Self::Error => None,
        }
    }

    /// The outcome named `name`, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Passed, Self::Failed, Self::Error]
            .into_iter()
            .find(|o| o.as_str() == name)
    }
}

impl Outcome {
    /// Its code in a bulk write's statement, which [`status_of_code`] names: an integer binds
    /// without the copy SQLite makes of a bound text.
    const fn code(self) -> i64 {
        match self {
            Self::Passed => 0,
            Self::Failed => 1,
            Self::Error => 2,
        }
    }
}

/// The stored name of an [`Outcome::code`] bound as `?{n}`; another code is NULL, which the
/// column refuses.
fn status_of_code(n: usize) -> String {
    format!("CASE ?{n} WHEN 0 THEN 'passed' WHEN 1 THEN 'failed' WHEN 2 THEN 'error' END")
}

/// The text of each statement of one bulk write, made once: prepared statements are cached
/// by their text, and making the text of 64 rows again for each chunk was a third of the
/// writer's time.
#[derive(Default)]
struct BulkSql(HashMap<(&'static str, usize, bool), String>);

impl BulkSql {
    /// The statement of `rows` rows into `table` (`fresh` as [`conflict`] takes it), made by
    /// `make` the first time.
    fn get(
        &mut self,
        (table, rows, fresh): (&'static str, usize, bool),
        make: impl FnOnce() -> String,
    ) -> &str {
        self.0.entry((table, rows, fresh)).or_insert_with(make)
    }
}

/// `INSERT OR {FAIL|REPLACE} INTO table (columns) VALUES ...` of `rows` rows, each value
/// bound as `?n` but the status, named from its code through [`status_of_code`], and a
/// `created_at` column, bound once as `?1` for every row.
fn bulk_insert_sql(table: &str, columns: &[&str], rows: usize, fresh: bool) -> String {
    let mut n = if columns.contains(&"created_at") {
        2
    } else {
        1
    };
    let mut cells = Vec::with_capacity(columns.len());
    let mut values = Vec::with_capacity(rows);
    for _ in 0..rows {
        cells.clear();
        for &column in columns {
            cells.push(match column {
                "created_at" => "?1".to_owned(),
                "status" => status_of_code(n),
                _ => format!("?{n}"),
            });
            n += usize::from(column != "created_at");
        }
        values.push(format!("({})", cells.join(",")));
    }
    format!(
        "INSERT OR {} INTO {table} ({}) VALUES {}",
        conflict(fresh),
        columns.join(", "),
        values.join(",")
    )
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl rusqlite::ToSql for Outcome {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for Outcome {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let name = value.as_str()?;
        Self::parse(name).ok_or_else(|| {
            FromSqlError::Other(format!("`{name}` is not a benchmark outcome").into())
        })
    }
}

/// A benchmark result recorded as an error although its judge answered: the verdict could not
/// be used (a judge answering garbage).
#[derive(Debug, Clone, PartialEq)]
pub struct UnusableVerdictRow {
    /// The model whose answer was judged.
    pub model_ref: String,
    /// The test's name in the benchmark file.
    pub prompt_name: String,
    /// From 0.
    pub repeat_index: u32,
    /// Whether the run repeats its evaluations (its labels then number the repeats).
    pub repeated: bool,
    /// `provider:model` of the judge's call.
    pub judge: String,
    /// Why the verdict could not be used.
    pub detail: Option<String>,
    /// The judge's call.
    pub call_id: i64,
    /// The attempts of the judge's call.
    pub attempts: u32,
}

/// A benchmark result recorded as an error although its calls answered (and its judge's
/// verdict, if any, could be used): a script check that crashed, `max_steps` reached, a tool
/// that failed, a check that could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultErrorRow {
    /// The model that answered.
    pub model_ref: String,
    /// The test's name in the benchmark file.
    pub prompt_name: String,
    /// From 0.
    pub repeat_index: u32,
    /// Whether the run repeats its evaluations (its labels then number the repeats).
    pub repeated: bool,
    /// Why it is an error.
    pub detail: Option<String>,
    /// The answer's call (the last of a conversation or a tool loop).
    pub call_id: i64,
    /// The attempts of that call.
    pub attempts: u32,
}

/// One benchmark evaluation, as written by a run.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResultRow {
    pub run_id: i64,
    pub model_index: u32,
    pub prompt_index: u32,
    pub repeat_index: u32,
    pub model_ref: String,
    pub provider: String,
    pub model_id: String,
    pub prompt_name: String,
    pub method: String,
    pub call_id: Option<i64>,
    pub cache_hit: bool,
    pub outcome: Outcome,
    pub detail: Option<String>,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub tokens_estimated: bool,
    pub cost_usd: Option<f64>,
    pub paid_usd: Option<f64>,
    pub energy_wh: Option<f64>,
    pub energy_wh_min: Option<f64>,
    pub energy_wh_max: Option<f64>,
    pub energy_method: Option<String>,
    /// `method: judge`: the judge's call, score and cost (also counted in `cost_usd`).
    pub judge_call_id: Option<i64>,
    pub judge_score: Option<i64>,
    pub judge_cost_usd: Option<f64>,
    /// The expected output the answer was tested against (`''` for a test without one);
    /// `None` only in rows recorded before it was stored (migration V14).
    pub expected: Option<String>,
    /// The prompt template the request was rendered from: its index among the run's templates
    /// (0 when the benchmark has none) and its name (`None`: no templates).
    pub template_index: u32,
    pub template_name: Option<String>,
    /// The weighted score of the checks, 0-1, when the benchmark passes cases at a threshold
    /// (`pass: {threshold: 0.8}`).
    pub score: Option<f64>,
    /// Every check's outcome, when the case has several; a single check's is the row itself
    /// (`method`, `expected`, `outcome`, `detail`).
    pub checks: Vec<CheckRow>,
}

/// The outcome of one check of a result that has several (a row of `bench_checks`).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    /// The check's method (`contains`, `script`, ...).
    pub method: String,
    /// The value the answer was compared with, rendered for the case.
    pub expected: Option<String>,
    pub outcome: Outcome,
    /// 0-1, where the method gives a score (`similar`, `script`, `judge`).
    pub score: Option<f64>,
    pub weight: f64,
    /// Why it failed, or what the script or judge said.
    pub reason: Option<String>,
}

/// One check of a result, with the result's key: a row of `bench_checks.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckExportRow {
    pub run_id: i64,
    pub model_ref: String,
    /// `None`: the benchmark has no templates.
    pub template: Option<String>,
    /// The case's id (the test's name for a benchmark with inline prompts).
    pub prompt_name: String,
    pub repeat_index: u32,
    /// In the order the file gives the checks, from 0.
    pub check_index: u32,
    pub check: CheckRow,
}

/// Benchmark results as columns, ready to become a polars frame.
#[derive(Debug, Default, Clone)]
pub struct BenchColumns {
    pub run_id: Vec<i64>,
    pub model_index: Vec<u32>,
    pub prompt_index: Vec<u32>,
    pub repeat_index: Vec<u32>,
    pub model_ref: Vec<String>,
    pub prompt_name: Vec<String>,
    pub outcome: Vec<Outcome>,
    pub cache_hit: Vec<bool>,
    pub latency_ms: Vec<Option<f64>>,
    pub input_tokens: Vec<Option<u64>>,
    pub output_tokens: Vec<Option<u64>>,
    pub cost_usd: Vec<Option<f64>>,
    pub paid_usd: Vec<Option<f64>>,
    pub energy_wh: Vec<Option<f64>>,
    pub energy_wh_min: Vec<Option<f64>>,
    pub energy_wh_max: Vec<Option<f64>>,
    /// Filled only when loaded with detail: method, detail, model id, tokens estimated, energy method.
    pub method: Vec<String>,
    pub detail: Vec<Option<String>>,
    pub model_id: Vec<String>,
    pub provider: Vec<String>,
    pub tokens_estimated: Vec<bool>,
    pub energy_method: Vec<Option<String>>,
    pub judge_score: Vec<Option<i64>>,
    pub judge_cost_usd: Vec<Option<f64>>,
    /// The template of each result: its index and its name (`None`: the benchmark has no
    /// templates). Columns built by hand may leave them empty: no templates.
    pub template_index: Vec<u32>,
    pub template: Vec<Option<String>>,
    /// The weighted score of the checks (`pass: {threshold}`), when the benchmark gives one.
    pub score: Vec<Option<f64>>,
    /// The call that answered each result (`None`: none was stored). Columns built by hand
    /// may leave it empty.
    pub call_id: Vec<Option<i64>>,
    /// Each result's uid (what ratings point at); filled only when loaded with detail.
    pub uid: Vec<Option<String>>,
}

/// The names behind the model, prompt and template keys of [`MeasureRow`]s.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Labels {
    pub models: Vec<String>,
    pub prompts: Vec<String>,
    /// The prompt templates' names, across the runs; empty when no run has templates.
    pub templates: Vec<String>,
    /// Whether some run has no templates: its results have the key [`NO_TEMPLATE`].
    pub untemplated: bool,
}

/// The template key of a result of a benchmark without templates: no label.
pub const NO_TEMPLATE: u32 = u32::MAX;

impl Labels {
    /// Whether the results come from more than one template (a run without templates counting
    /// as one): the summaries then tell templates apart.
    pub fn several_templates(&self) -> bool {
        self.templates.len() + usize::from(self.untemplated) > 1
    }

    /// The template keys of the results, in label order ([`NO_TEMPLATE`] last, when some run
    /// has no templates).
    pub fn template_keys(&self) -> Vec<u32> {
        let mut keys: Vec<u32> = (0..self.templates.len() as u32).collect();
        if self.untemplated {
            keys.push(NO_TEMPLATE);
        }
        keys
    }

    /// The name of template key `key`, `None` for [`NO_TEMPLATE`].
    pub fn template(&self, key: u32) -> Option<&str> {
        self.templates.get(key as usize).map(String::as_str)
    }
}

/// The measures of one result, with its model, prompt and template as keys into [`Labels`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasureRow {
    pub model: u32,
    pub prompt: u32,
    /// [`NO_TEMPLATE`] for a benchmark without templates.
    pub template: u32,
    pub outcome: Outcome,
    pub cache_hit: bool,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cost_usd: Option<f64>,
    pub paid_usd: Option<f64>,
    pub energy_wh: Option<f64>,
    pub energy_wh_min: Option<f64>,
    pub energy_wh_max: Option<f64>,
}

impl BenchColumns {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.run_id.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.run_id.is_empty()
    }
}

/// A benchmark result that did not pass (failed its test, or got no answer), with what the
/// model answered.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureRow {
    pub run_id: i64,
    pub model_ref: String,
    pub prompt_name: String,
    pub repeat_index: u32,
    pub method: String,
    /// Failed or error.
    pub status: Outcome,
    /// Why the test failed (`expected `4`, got `five``), or the error.
    pub detail: Option<String>,
    /// The expected output stored with the result; `None` for a result recorded before
    /// expected outputs were stored (migration V14).
    pub expected: Option<String>,
    /// The answer's first bytes (as many as asked for), when there was one.
    pub answer: Option<String>,
    /// The prompt template the request was rendered from; `None` without templates.
    pub template: Option<String>,
    /// Every check of a result that has several (`bench_checks`), in the file's order; empty
    /// for a result with one check: `method`, `status` and `detail` are that check's.
    pub checks: Vec<CheckRow>,
    /// Its current human rating, if someone rated it.
    pub rating: Option<super::Rating>,
}

/// Frees a written part of a bulk write on a thread of its own: freeing 32,768 graded rows
/// (their names, answers' excerpts and checks) took the writer 0.8 s of a cached run of
/// 400,000 results, which the writer is the bound of. A small part is freed here.
fn free_beside(rows: Cow<'_, [BenchResultRow]>) {
    /// From this many rows on, a thread is worth its start.
    const BESIDE: usize = 1024;
    if let Cow::Owned(rows) = rows
        && rows.len() >= BESIDE
    {
        // A thread that cannot start drops the rows here, as the closure goes.
        let _ = std::thread::Builder::new()
            .name("free-rows".into())
            .spawn(move || drop(rows));
    }
}

/// The kinds of names `bench_labels` holds, each a run's index of its own.
const LABEL_KINDS: [&str; 3] = ["model", "template", "prompt"];

/// The label keys written earlier in one write, per run and kind, by index: a cached run's
/// parts name each case again for every model and template (300,000 of its 400,000 labels),
/// and a flag looked up by index costs less than a key hashed, sorted and found in the table
/// by `INSERT OR IGNORE`.
#[derive(Default)]
struct Labelled {
    runs: HashMap<i64, [Vec<bool>; 3]>,
}

impl Labelled {
    /// Whether `(run, kind, index)` is new to this write, marking it written.
    fn first(&mut self, run: i64, kind: usize, index: u32) -> bool {
        let seen = &mut self.runs.entry(run).or_default()[kind];
        let i = index as usize;
        if seen.len() <= i {
            seen.resize(i + 1, false);
        }
        !std::mem::replace(&mut seen[i], true)
    }
}

/// Names each run's model, template and prompt indices in `bench_labels` (once per run and
/// index), 64 labels to a statement, a statement per kind: a cached run names 100,000 cases
/// at once. Each run's models are described once in `bench_models` (migration V25): the rows
/// hold none of it. `written` holds the keys labelled earlier in the same write.
fn insert_bench_labels(
    tx: &rusqlite::Transaction<'_>,
    rows: &[BenchResultRow],
    written: &mut Labelled,
    sql: &mut BulkSql,
) -> Result<()> {
    /// Labels written by one statement.
    const PER_STATEMENT: usize = 64;
    insert_bench_models(tx, rows)?;
    let mut labels: [Vec<(i64, u32, &str)>; 3] = Default::default();
    for row in rows {
        let names = [
            Some((row.model_index, row.model_ref.as_str())),
            row.template_name
                .as_deref()
                .map(|name| (row.template_index, name)),
            Some((row.prompt_index, row.prompt_name.as_str())),
        ];
        for (kind, name) in names.into_iter().enumerate() {
            // The first name given to a key is kept, as `INSERT OR IGNORE` one by one kept it.
            if let Some((index, name)) = name
                && written.first(row.run_id, kind, index)
            {
                labels[kind].push((row.run_id, index, name));
            }
        }
    }
    for (kind, mut labels) in LABEL_KINDS.into_iter().zip(labels) {
        labels.sort_unstable_by_key(|&(run, index, _)| (run, index));
        let full = labels.len() - labels.len() % PER_STATEMENT;
        for chunk in labels[..full]
            .chunks(PER_STATEMENT)
            .chain(labels[full..].chunks(1))
        {
            let text = sql.get((kind, chunk.len(), false), || {
                format!(
                    "INSERT OR IGNORE INTO bench_labels (run_id, kind, idx, label) VALUES {}",
                    vec![format!("(?, '{kind}', ?, ?)"); chunk.len()].join(", ")
                )
            });
            let mut insert = tx.prepare_cached(text)?;
            let values = chunk
                .iter()
                .flat_map(|(run, index, label)| [run as &dyn rusqlite::ToSql, index, label]);
            insert.execute(rusqlite::params_from_iter(values))?;
        }
    }
    Ok(())
}

/// Describes each run's models of `rows` in `bench_models`, once per run and model: the first
/// description kept. A model's energy method is that of its first row that has one (a row
/// without an energy estimate has none), so a later row may still give it.
fn insert_bench_models(tx: &rusqlite::Transaction<'_>, rows: &[BenchResultRow]) -> Result<()> {
    let mut models: Vec<&BenchResultRow> = Vec::new();
    for row in rows {
        let seen = models
            .iter_mut()
            .find(|m| m.run_id == row.run_id && m.model_index == row.model_index);
        match seen {
            None => models.push(row),
            Some(first) if first.energy_method.is_none() && row.energy_method.is_some() => {
                *first = row
            }
            Some(_) => {}
        }
    }
    let mut insert = tx.prepare_cached(
        "INSERT INTO bench_models (run_id, model_index, model_ref, provider, model_id,
             energy_method)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (run_id, model_index)
         DO UPDATE SET energy_method = excluded.energy_method
         WHERE energy_method IS NULL AND excluded.energy_method IS NOT NULL",
    )?;
    for row in models {
        insert.execute(rusqlite::params![
            row.run_id,
            row.model_index,
            row.model_ref,
            row.provider,
            row.model_id,
            row.energy_method,
        ])?;
    }
    Ok(())
}

/// What `bench_models` says of a run's model.
#[derive(Debug, Default, Clone)]
struct ModelNames {
    model_ref: String,
    provider: String,
    model_id: String,
    energy_method: Option<String>,
}

/// A run's names by index: its models' and its cases'.
#[derive(Debug, Default)]
struct RunNames {
    models: Vec<ModelNames>,
    prompts: Vec<String>,
}

impl RunNames {
    /// Model `index`'s names (empty if the run never named it).
    fn model(&self, index: u32) -> &ModelNames {
        static NONE: ModelNames = ModelNames {
            model_ref: String::new(),
            provider: String::new(),
            model_id: String::new(),
            energy_method: None,
        };
        self.models.get(index as usize).unwrap_or(&NONE)
    }

    /// Case `index`'s name ('' if the run never named it).
    fn prompt(&self, index: u32) -> &str {
        self.prompts.get(index as usize).map_or("", String::as_str)
    }
}

/// The uids of results, with the uid of their run looked up and hashed once per run.
#[derive(Default)]
struct ResultUids {
    run: Option<(i64, super::ids::UidPrefix)>,
}

impl ResultUids {
    /// The uid of `row`: its run's uid and its indices, hashed. Template 0 keeps the key rows
    /// had before templates (migration V20).
    fn of(
        &mut self,
        tx: &rusqlite::Transaction<'_>,
        row: &BenchResultRow,
    ) -> Result<super::ids::UidHex> {
        let prefix = match &self.run {
            Some((id, prefix)) if *id == row.run_id => prefix,
            _ => {
                let of_run = super::ids::run_uid(tx, row.run_id)?;
                let prefix =
                    super::ids::UidPrefix::new(&["bench_result".into(), of_run.as_ref().into()]);
                &self.run.insert((row.run_id, prefix)).1
            }
        };
        let indices = [
            i64::from(row.model_index),
            i64::from(row.prompt_index),
            i64::from(row.repeat_index),
            i64::from(row.template_index),
        ];
        let with_template = if row.template_index > 0 { 4 } else { 3 };
        Ok(prefix.with_ints(&indices[..with_template]))
    }
}

/// The columns of a bulk write of results, in the order their values are bound.
const RESULT_COLUMNS: [&str; 27] = [
    "id",
    "run_id",
    "model_index",
    "prompt_index",
    "repeat_index",
    "method",
    "call_id",
    "cache_hit",
    "status",
    "detail",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "tokens_estimated",
    "cost_usd",
    "paid_usd",
    "energy_wh",
    "energy_wh_min",
    "energy_wh_max",
    "created_at",
    "judge_call_id",
    "judge_score",
    "judge_cost_usd",
    "expected",
    "uid",
    "template_index",
    "score",
];

/// Writes `chunk` (with its `uids`) in one statement, as rows `first_id` on; a row for the
/// same run, model, template, prompt and repeat replaces the earlier one (none can be there
/// when `fresh`).
fn insert_result_chunk(
    tx: &rusqlite::Transaction<'_>,
    chunk: &[BenchResultRow],
    first_id: i64,
    uids: &[super::ids::UidHex],
    (now, fresh): (&str, bool),
    sql: &mut BulkSql,
) -> Result<()> {
    // The time is bound once, as ?1, for every row of the statement.
    let key = ("bench_rows", chunk.len(), fresh);
    let text = sql.get(key, || {
        bulk_insert_sql("bench_rows", &RESULT_COLUMNS, chunk.len(), fresh)
    });
    let mut stmt = tx.prepare_cached(text)?;
    let tokens: Vec<[Option<i64>; 2]> = chunk
        .iter()
        .map(|r| {
            [
                r.input_tokens.map(|n| n as i64),
                r.output_tokens.map(|n| n as i64),
            ]
        })
        .collect();
    let codes: Vec<i64> = chunk.iter().map(|r| r.outcome.code()).collect();
    let ids: Vec<i64> = (first_id..).take(chunk.len()).collect();
    let uids: Vec<&str> = uids.iter().map(super::ids::uid_text).collect();
    let mut values: Vec<&dyn rusqlite::ToSql> =
        Vec::with_capacity(1 + chunk.len() * RESULT_COLUMNS.len());
    values.push(&now);
    let each = chunk.iter().zip(&tokens).zip(&uids).zip(&ids).zip(&codes);
    for ((((row, tokens), uid), id), code) in each {
        values.extend([
            id as &dyn rusqlite::ToSql,
            &row.run_id,
            &row.model_index,
            &row.prompt_index,
            &row.repeat_index,
            &row.method,
            &row.call_id,
            &row.cache_hit,
            code,
            &row.detail,
            &row.latency_ms,
            &tokens[0],
            &tokens[1],
            &row.tokens_estimated,
            &row.cost_usd,
            &row.paid_usd,
            &row.energy_wh,
            &row.energy_wh_min,
            &row.energy_wh_max,
            &row.judge_call_id,
            &row.judge_score,
            &row.judge_cost_usd,
            &row.expected,
            uid,
            &row.template_index,
            &row.score,
        ]);
    }
    stmt.execute(rusqlite::params_from_iter(values))?;
    Ok(())
}

/// Deletes the checks of the results stored under the keys of `rows` (a result recorded
/// again, as a resumed run does, replaces its checks with its own).
fn delete_checks(tx: &rusqlite::Transaction<'_>, rows: &[BenchResultRow]) -> Result<()> {
    let mut delete = tx.prepare_cached(
        "DELETE FROM bench_check_rows WHERE result_id = (SELECT id FROM bench_rows
             WHERE run_id = ?1 AND model_index = ?2 AND template_index = ?3
             AND prompt_index = ?4 AND repeat_index = ?5)",
    )?;
    for row in rows {
        delete.execute(ResultKey::of(row).params())?;
    }
    Ok(())
}

/// The check rows of `rows`, written as results `first_id` on (keyed by the result's id,
/// migration V25).
fn insert_checks(
    tx: &rusqlite::Transaction<'_>,
    rows: &[BenchResultRow],
    first_id: i64,
    fresh: bool,
    sql: &mut BulkSql,
) -> Result<()> {
    /// Check rows written by one statement.
    const PER_STATEMENT: usize = 64;
    let checks: Vec<(i64, i64, &CheckRow)> = (first_id..)
        .zip(rows)
        .flat_map(|(id, row)| (0..).zip(&row.checks).map(move |(i, check)| (id, i, check)))
        .collect();
    let full = checks.len() - checks.len() % PER_STATEMENT;
    for chunk in checks[..full]
        .chunks(PER_STATEMENT)
        .chain(checks[full..].chunks(1))
    {
        const COLUMNS: [&str; 8] = [
            "result_id",
            "check_index",
            "method",
            "expected",
            "status",
            "score",
            "weight",
            "reason",
        ];
        let key = ("bench_check_rows", chunk.len(), fresh);
        let text = sql.get(key, || {
            bulk_insert_sql("bench_check_rows", &COLUMNS, chunk.len(), fresh)
        });
        let mut insert = tx.prepare_cached(text)?;
        let codes: Vec<i64> = chunk.iter().map(|(_, _, c)| c.outcome.code()).collect();
        let values = chunk
            .iter()
            .zip(&codes)
            .flat_map(|((id, index, check), code)| {
                [
                    id as &dyn rusqlite::ToSql,
                    index,
                    &check.method,
                    &check.expected,
                    code,
                    &check.score,
                    &check.weight,
                    &check.reason,
                ]
            });
        insert.execute(rusqlite::params_from_iter(values))?;
    }
    Ok(())
}

/// The conflict clause of an insert of many rows: `FAIL` where no row can be there already
/// (`fresh`), `REPLACE` where one may. A statement of many rows that may `ABORT` (`REPLACE`
/// does, on a failed CHECK) copies each page it changes to a statement journal first, to undo
/// its own rows; one that may only `FAIL` leaves that to the transaction, which an error
/// rolls back whole: 5 % of a cached run's CPU.
const fn conflict(fresh: bool) -> &'static str {
    if fresh { "FAIL" } else { "REPLACE" }
}

/// Whether a result may already be stored in the range of keys of `rows` (one statement's
/// chunk, of one run or more): one seek in the key's index, where a list of the keys would
/// make SQLite build a table of them for every chunk. A first recording finds none.
fn any_recorded(tx: &rusqlite::Transaction<'_>, rows: &[BenchResultRow]) -> Result<bool> {
    let keys = rows.iter().map(|r| ResultKey::of(r).params());
    let (Some(first), Some(last)) = (keys.clone().min(), keys.max()) else {
        return Ok(false);
    };
    let mut stmt = tx.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM bench_rows
             WHERE (run_id, model_index, template_index, prompt_index, repeat_index)
                   BETWEEN (?1, ?2, ?3, ?4, ?5) AND (?6, ?7, ?8, ?9, ?10))",
    )?;
    let bounds = first.into_iter().chain(last);
    Ok(stmt.query_row(rusqlite::params_from_iter(bounds), |r| r.get(0))?)
}

/// The key of a benchmark result: its run and its model, template, case and repeat indices
/// (the key of `bench_results` and of its checks in `bench_checks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultKey {
    pub run_id: i64,
    pub model_index: u32,
    pub template_index: u32,
    pub prompt_index: u32,
    pub repeat_index: u32,
}

impl ResultKey {
    fn of(row: &BenchResultRow) -> Self {
        Self {
            run_id: row.run_id,
            model_index: row.model_index,
            template_index: row.template_index,
            prompt_index: row.prompt_index,
            repeat_index: row.repeat_index,
        }
    }

    fn params(&self) -> [i64; 5] {
        [
            self.run_id,
            i64::from(self.model_index),
            i64::from(self.template_index),
            i64::from(self.prompt_index),
            i64::from(self.repeat_index),
        ]
    }
}

/// Per run, the label key of each model, prompt and template index: `[models, prompts,
/// templates]` (no templates: empty, the run's one template 0 has no label).
type LocalKeys = [Vec<u32>; 3];

/// The number of templates of a run of `local` keys: 1 without templates.
fn template_count(local: &LocalKeys) -> i64 {
    local[2].len().max(1) as i64
}

/// Slice bounds: `parts` ranges of the positions of each run's results in storage order
/// ((model x templates + template) x prompts + prompt), as (model, template, prompt) triples,
/// from the run's label counts; the last bound is past the end.
fn slice_bounds(local_keys: &[LocalKeys], parts: usize) -> Vec<Vec<[i64; 3]>> {
    local_keys
        .iter()
        .map(|local| {
            let (models, prompts) = (local[0].len().max(1) as i64, local[1].len().max(1) as i64);
            let templates = template_count(local);
            let cells = models * templates * prompts;
            (0..=parts as i64)
                .map(|k| {
                    let position = cells * k / parts as i64;
                    if k == parts as i64 {
                        [i64::MAX, 0, 0]
                    } else {
                        let (pair, prompt) = (position / prompts, position % prompts);
                        [pair / templates, pair % templates, prompt]
                    }
                })
                .collect()
        })
        .collect()
}

/// The runs of a measures scan, cut into slices by [`slice_bounds`].
struct Slices<'a> {
    run_ids: &'a [i64],
    local_keys: &'a [LocalKeys],
    bounds: Vec<Vec<[i64; 3]>>,
}

/// The rows of one run in one slice: a range of the result key's index (run, model, template,
/// prompt, repeat), so that SQLite seeks to its first row and reads on.
const SLICE_RANGE: &str = "run_id = ?1 \
     AND (model_index, template_index, prompt_index) >= (?2, ?3, ?4) \
     AND (model_index, template_index, prompt_index) < (?5, ?6, ?7)";

/// The columns of a measures scan, read by [`measure_row`].
const MEASURE_COLUMNS: &str = "model_index, prompt_index, status, cache_hit, latency_ms, \
     input_tokens, output_tokens, cost_usd, paid_usd, energy_wh, energy_wh_min, energy_wh_max, \
     template_index";

impl Slices<'_> {
    /// The bounds of slice `part` of run number `run` (its position in `run_ids`).
    fn range(&self, run: usize, part: usize) -> [i64; 7] {
        let ([m0, t0, p0], [m1, t1, p1]) = (self.bounds[run][part], self.bounds[run][part + 1]);
        [self.run_ids[run], m0, t0, p0, m1, t1, p1]
    }

    /// Reads slice `part` on `conn`: counts its rows for `init`, then gives each to `each`.
    fn scan<S>(
        &self,
        conn: &rusqlite::Connection,
        part: usize,
        init: &impl Fn(usize) -> S,
        each: &impl Fn(&mut S, &MeasureRow),
    ) -> Result<S> {
        let mut count = conn.prepare(&format!(
            "SELECT count(*) FROM bench_rows WHERE {SLICE_RANGE}"
        ))?;
        let mut rows_in_slice = 0usize;
        for run in 0..self.run_ids.len() {
            let range = self.range(run, part);
            rows_in_slice += count.query_row(range, |r| r.get::<_, i64>(0))? as usize;
        }
        let mut state = init(rows_in_slice);
        let mut stmt = conn.prepare(&format!(
            "SELECT {MEASURE_COLUMNS} FROM bench_rows WHERE {SLICE_RANGE}"
        ))?;
        for run in 0..self.run_ids.len() {
            let local = &self.local_keys[run];
            let mut rows = stmt.query(self.range(run, part))?;
            while let Some(r) = rows.next()? {
                each(&mut state, &measure_row(r, local)?);
            }
        }
        Ok(state)
    }
}

/// One row of a measures scan, its indices turned into label keys by `local`.
fn measure_row(r: &rusqlite::Row<'_>, local: &LocalKeys) -> rusqlite::Result<MeasureRow> {
    let model = r.get::<_, u32>(0)? as usize;
    let prompt = r.get::<_, u32>(1)? as usize;
    let template = r.get::<_, u32>(12)? as usize;
    Ok(MeasureRow {
        model: local[0].get(model).copied().unwrap_or(u32::MAX),
        prompt: local[1].get(prompt).copied().unwrap_or(u32::MAX),
        template: local[2].get(template).copied().unwrap_or(NO_TEMPLATE),
        outcome: r.get(2)?,
        cache_hit: r.get(3)?,
        latency_ms: r.get(4)?,
        input_tokens: r.get(5)?,
        output_tokens: r.get(6)?,
        cost_usd: r.get(7)?,
        paid_usd: r.get(8)?,
        energy_wh: r.get(9)?,
        energy_wh_min: r.get(10)?,
        energy_wh_max: r.get(11)?,
    })
}

/// A read-only connection to `path` for one thread of a parallel scan.
fn open_reader(path: &std::path::Path) -> Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    Ok(conn)
}

/// Runs `scan` on `parts` slices at once, each on its own read-only connection to `path`.
pub(super) fn scan_in_parallel<S: Send>(
    path: &std::path::Path,
    parts: usize,
    scan: &(impl Fn(&rusqlite::Connection, usize) -> Result<S> + Sync),
) -> Result<Vec<S>> {
    scan_ranges_in_parallel(path, parts, parts, scan)
}

/// Runs `scan` on each of `ranges` ranges with `workers` threads, each on its own read-only
/// connection to `path` taking the next range left until none is; the results in range order.
fn scan_ranges_in_parallel<R: Send>(
    path: &std::path::Path,
    workers: usize,
    ranges: usize,
    scan: &(impl Fn(&rusqlite::Connection, usize) -> Result<R> + Sync),
) -> Result<Vec<R>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let next = &next;
    let done = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.clamp(1, ranges.max(1)))
            .map(|_| {
                scope.spawn(move || -> Result<Vec<(usize, R)>> {
                    let conn = open_reader(path)?;
                    let mut done = Vec::new();
                    loop {
                        let range = next.fetch_add(1, Ordering::Relaxed);
                        if range >= ranges {
                            return Ok(done);
                        }
                        match scan(&conn, range) {
                            Ok(r) => done.push((range, r)),
                            Err(e) => {
                                // The others stop after their range: the scan has failed.
                                next.store(ranges, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let mut done: Vec<(usize, R)> = done.into_iter().flatten().collect();
    done.sort_by_key(|(range, _)| *range);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}

/// The runs of a measures scan by prompt, cut into ranges of prompt keys.
struct PromptRanges<'a> {
    run_ids: &'a [i64],
    local_keys: &'a [LocalKeys],
    /// Range `k` holds the prompt keys from `bounds[k]` up to `bounds[k + 1]` (excluded).
    bounds: Vec<u32>,
}

/// The rows of one model and template of one run whose prompt indices are in a span: a range
/// of the result key's index.
const MODEL_PROMPTS: &str = "run_id = ?1 AND model_index = ?2 AND template_index = ?3 \
                             AND prompt_index BETWEEN ?4 AND ?5";

impl<'a> PromptRanges<'a> {
    /// Cuts `prompts` prompt keys into ranges of as many keys each, as many ranges as it takes
    /// for about `rows_per_range` of the `rows` rows each, but two prompts a range at least:
    /// polars divides a column of one value by a number as it is, and a longer one by
    /// multiplying by its inverse (`avg_time_s`, a mean / 1000, then differs in its last bit),
    /// so a range of one prompt would not be summed as the whole is.
    fn new(
        run_ids: &'a [i64],
        local_keys: &'a [LocalKeys],
        prompts: usize,
        rows: usize,
        rows_per_range: usize,
    ) -> Self {
        let ranges = rows
            .div_ceil(rows_per_range.max(1))
            .clamp(1, (prompts / 2).max(1));
        let bounds = (0..=ranges)
            .map(|k| (prompts * k / ranges) as u32)
            .collect();
        Self {
            run_ids,
            local_keys,
            bounds,
        }
    }

    fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The keys of range `range`.
    fn keys(&self, range: usize) -> std::ops::Range<u32> {
        self.bounds[range]..self.bounds[range + 1]
    }

    /// The span of prompt indices of run number `run` (its position in `run_ids`) holding the
    /// keys of range `range`, if it has any: the first and the last such index.
    fn span(&self, run: usize, range: usize) -> Option<(u32, u32)> {
        let keys = self.keys(range);
        let prompts = &self.local_keys[run][1];
        let first = prompts.iter().position(|key| keys.contains(key))?;
        let last = prompts
            .iter()
            .rposition(|key| keys.contains(key))
            .unwrap_or(first);
        Some((first as u32, last as u32))
    }

    /// Reads range `range` on `conn`: counts its rows for `init`, then gives each to `each`,
    /// run by run, model by model, template by template, in prompt and repeat order: a
    /// prompt's rows come in the order of a scan of the whole runs.
    fn scan<S>(
        &self,
        conn: &rusqlite::Connection,
        range: usize,
        init: &impl Fn(usize) -> S,
        each: &impl Fn(&mut S, &MeasureRow),
    ) -> Result<S> {
        let keys = self.keys(range);
        // Per run: its position, the span of its prompt indices, and each of its (model,
        // template) pairs in storage order.
        let spans: Vec<(usize, u32, u32, Vec<[u32; 2]>)> = (0..self.run_ids.len())
            .filter_map(|run| {
                let (first, last) = self.span(run, range)?;
                let local = &self.local_keys[run];
                let templates = template_count(local) as u32;
                let pairs = (0..local[0].len() as u32)
                    .flat_map(|m| (0..templates).map(move |t| [m, t]))
                    .collect();
                Some((run, first, last, pairs))
            })
            .collect();
        let mut count = conn.prepare(&format!(
            "SELECT count(*) FROM bench_rows WHERE {MODEL_PROMPTS}"
        ))?;
        let mut rows_in_range = 0usize;
        for (run, first, last, pairs) in &spans {
            for [model, template] in pairs {
                let bounds = params![self.run_ids[*run], model, template, first, last];
                rows_in_range += count.query_row(bounds, |r| r.get::<_, i64>(0))? as usize;
            }
        }
        let mut state = init(rows_in_range);
        let mut stmt = conn.prepare(&format!(
            "SELECT {MEASURE_COLUMNS} FROM bench_rows WHERE {MODEL_PROMPTS}
             ORDER BY prompt_index, repeat_index"
        ))?;
        for (run, first, last, pairs) in &spans {
            let local = &self.local_keys[*run];
            for [model, template] in pairs {
                let bounds = params![self.run_ids[*run], model, template, first, last];
                let mut rows = stmt.query(bounds)?;
                while let Some(r) = rows.next()? {
                    let row = measure_row(r, local)?;
                    // A run whose prompts are numbered in another order than the keys has
                    // indices of other ranges in its span.
                    if keys.contains(&row.prompt) {
                        each(&mut state, &row);
                    }
                }
            }
        }
        Ok(state)
    }
}

impl Store {
    /// Writes benchmark results in one transaction; a row for the same run, model, prompt and
    /// repeat replaces the earlier one.
    pub fn insert_bench_results(&mut self, rows: &[BenchResultRow]) -> Result<()> {
        self.insert_bench_results_in_parts(rows.len(), std::iter::once(Cow::Borrowed(rows)))
    }

    /// [`Store::insert_bench_results`] of `rows` results in all, in the parts `parts` gives as
    /// they come (graded on another thread while the part before is written), in one
    /// transaction. A part that does not come (the sender stopped) ends the write there.
    pub fn insert_bench_results_in_parts<'r>(
        &mut self,
        rows: usize,
        parts: impl IntoIterator<Item = Cow<'r, [BenchResultRow]>>,
    ) -> Result<()> {
        /// From this many rows on (a cached run's thousands of answers at once), the page cache
        /// is enlarged, and stays so for the connection's life: the uid index takes rows at
        /// random places, and a cache smaller than it spills dirty pages to the WAL again and
        /// again (2.7 s of system time of 7.4 s for 400,000 rows with SQLite's default of 2 MB;
        /// 0.3 s with 128 MB). Kept, not restored after each write: a cached run writes its
        /// rows 32,768 at a time, and each slice found the index's pages gone (400,000 cached
        /// results: 0.7 s for the first slice, up to 1.5 s for the last; about 5 % more CPU).
        const BULK_ROWS: usize = 4096;
        const BULK_CACHE_KIB: i64 = 128 * 1024;
        if rows < BULK_ROWS {
            return self.write_bench_results(parts);
        }
        super::enlarge_page_cache(&self.conn, BULK_CACHE_KIB)?;
        self.prepare_bulk_writes()?;
        // A statement of many rows that checks foreign keys may abort after its first rows,
        // so SQLite copies each page it changes to a statement journal first (5 % of a cached
        // run's CPU). These rows point at their run and at calls just read from this store.
        let foreign_keys: bool = self
            .conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
        self.conn.pragma_update(None, "foreign_keys", false)?;
        let written = self.write_bench_results(parts);
        self.conn
            .pragma_update(None, "foreign_keys", foreign_keys)?;
        written?;
        self.checkpoint_after_bulk_write();
        Ok(())
    }

    /// Writes `parts` in one transaction: see [`Store::insert_bench_results_in_parts`].
    fn write_bench_results<'r>(
        &mut self,
        parts: impl IntoIterator<Item = Cow<'r, [BenchResultRow]>>,
    ) -> Result<()> {
        /// Rows written by one statement: cached runs write tens of thousands at once.
        const ROWS_PER_STATEMENT: usize = 64;
        // Immediate: the rows are numbered from the largest id now, which no other process may
        // take before they are written (a deferred transaction reading it first could not
        // write after another's commit).
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let now = now_rfc3339();
        let mut uids = ResultUids::default();
        // Rows are numbered here, so that their checks can name them as they are written.
        let mut next_id: i64 =
            tx.query_row("SELECT coalesce(max(id), 0) + 1 FROM bench_rows", [], |r| {
                r.get(0)
            })?;
        let mut labelled = Labelled::default();
        let mut sql = BulkSql::default();
        for rows in parts {
            insert_bench_labels(&tx, &rows, &mut labelled, &mut sql)?;
            // Two statements only, of 64 rows and of one: a statement for each length (the
            // executor hands over batches of 1 to 64 answers) would not stay in the cache of
            // prepared statements, and each would be compiled again and again.
            let full = rows.len() - rows.len() % ROWS_PER_STATEMENT;
            let chunks = rows[..full]
                .chunks(ROWS_PER_STATEMENT)
                .chain(rows[full..].chunks(1));
            for chunk in chunks {
                let fresh = !any_recorded(&tx, chunk)?;
                if !fresh {
                    delete_checks(&tx, chunk)?;
                }
                let chunk_uids = chunk
                    .iter()
                    .map(|r| uids.of(&tx, r))
                    .collect::<Result<Vec<_>>>()?;
                let at = (now.as_str(), fresh);
                insert_result_chunk(&tx, chunk, next_id, &chunk_uids, at, &mut sql)?;
                insert_checks(&tx, chunk, next_id, fresh, &mut sql)?;
                next_id += chunk.len() as i64;
            }
            free_beside(rows);
        }
        tx.commit()?;
        Ok(())
    }

    /// Reads the measures of the results of `run_ids` in `parts` slices at once (one thread and
    /// connection each, for files; one slice in memory), giving each row to `each` with the
    /// slice's own state from `init` (given the slice's row count). Slices are ranges of the
    /// (run, model, prompt) index, so each reads its rows in storage order. Models and prompts
    /// come as keys into the returned labels (one key per distinct name across the runs,
    /// numbered in run, then index, order). Reads numbers only: summaries over millions of rows
    /// are bound by decoding them.
    pub fn scan_bench_measures<S: Send>(
        &self,
        run_ids: &[i64],
        parts: usize,
        init: impl Fn(usize) -> S + Sync,
        each: impl Fn(&mut S, &MeasureRow) + Sync,
    ) -> Result<(Labels, Vec<S>)> {
        let (labels, local_keys) = self.bench_label_keys(run_ids)?;
        let path = self.path_for_readers();
        let parts = if path.is_some() { parts.max(1) } else { 1 };
        let slices = Slices {
            run_ids,
            local_keys: &local_keys,
            bounds: slice_bounds(&local_keys, parts),
        };
        let scan = |conn: &rusqlite::Connection, part: usize| slices.scan(conn, part, &init, &each);
        let states = match path {
            Some(path) if parts > 1 => scan_in_parallel(&path, parts, &scan)?,
            _ => vec![scan(&self.conn, 0)?],
        };
        Ok((labels, states))
    }

    /// Reads the measures of the results of `run_ids` in ranges of prompts, about
    /// `rows_per_range` results each (every result of a prompt in the same range), `workers`
    /// ranges at once (one thread and connection each, for files; one range at a time in
    /// memory). Each range's rows go to `each` with the range's own state from `init` (given
    /// its row count), which `finish` turns into the range's result, on the same thread: only
    /// the ranges being read are held, never all the rows. A prompt's rows come in run, model
    /// and repeat order. Models and prompts come as keys into the returned labels, as in
    /// [`Self::scan_bench_measures`]; the ranges are ranges of prompt keys, in order.
    pub fn scan_bench_measures_by_prompt<S, R: Send>(
        &self,
        run_ids: &[i64],
        (workers, rows_per_range): (usize, usize),
        init: impl Fn(usize) -> S + Sync,
        each: impl Fn(&mut S, &MeasureRow) + Sync,
        finish: impl Fn(S, &Labels) -> R + Sync,
    ) -> Result<(Labels, Vec<R>)> {
        let (labels, local_keys) = self.bench_label_keys(run_ids)?;
        let mut count = self
            .conn
            .prepare("SELECT count(*) FROM bench_rows WHERE run_id = ?1")?;
        let mut rows = 0usize;
        for &run_id in run_ids {
            rows += count.query_row([run_id], |r| r.get::<_, i64>(0))? as usize;
        }
        let ranges = PromptRanges::new(
            run_ids,
            &local_keys,
            labels.prompts.len(),
            rows,
            rows_per_range,
        );
        let scan = |conn: &rusqlite::Connection, range: usize| {
            let state = ranges.scan(conn, range, &init, &each)?;
            Ok(finish(state, &labels))
        };
        let results = match self.path_for_readers() {
            Some(path) if workers > 1 && ranges.len() > 1 => {
                scan_ranges_in_parallel(&path, workers, ranges.len(), &scan)?
            }
            _ => (0..ranges.len())
                .map(|range| scan(&self.conn, range))
                .collect::<Result<Vec<R>>>()?,
        };
        Ok((labels, results))
    }

    /// The labels of `run_ids`' models, prompts and templates, one key per distinct name, and
    /// per run the key of each index: `[models, prompts, templates]`.
    fn bench_label_keys(&self, run_ids: &[i64]) -> Result<(Labels, Vec<LocalKeys>)> {
        let mut labels = Labels::default();
        let mut keys: [HashMap<String, u32>; 3] = Default::default();
        let mut local_keys = Vec::with_capacity(run_ids.len());
        let mut label_stmt = self.conn.prepare(
            "SELECT kind, idx, label FROM bench_labels WHERE run_id = ?1 ORDER BY kind, idx",
        )?;
        for &run_id in run_ids {
            let mut local: LocalKeys = Default::default();
            let mut rows = label_stmt.query([run_id])?;
            while let Some(r) = rows.next()? {
                let (kind, names) = match r.get_ref(0)?.as_str()? {
                    "prompt" => (1, &mut labels.prompts),
                    "template" => (2, &mut labels.templates),
                    _ => (0, &mut labels.models),
                };
                let idx = r.get::<_, u32>(1)? as usize;
                let label = r.get_ref(2)?.as_str()?;
                let key = *keys[kind].entry(label.to_owned()).or_insert_with(|| {
                    names.push(label.to_owned());
                    (names.len() - 1) as u32
                });
                if local[kind].len() <= idx {
                    local[kind].resize(idx + 1, u32::MAX);
                }
                local[kind][idx] = key;
            }
            labels.untemplated |= local[2].is_empty();
            local_keys.push(local);
        }
        Ok((labels, local_keys))
    }

    /// The results of `run_id` recorded as errors although their judge answered: the verdict
    /// could not be used. In model, prompt and repeat order.
    pub fn unusable_verdicts(&self, run_id: i64) -> Result<Vec<UnusableVerdictRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT b.model_ref, b.prompt_name, b.repeat_index,
                    EXISTS (SELECT 1 FROM bench_results r
                            WHERE r.run_id = b.run_id AND r.repeat_index > 0),
                    c.provider || ':' || c.model, b.detail, c.id, c.attempts
             FROM bench_results b JOIN calls c ON c.id = b.judge_call_id
             WHERE b.run_id = ?1 AND b.status = ?2 AND c.status = 'ok' AND b.judge_score IS NULL
             ORDER BY b.model_index, b.template_index, b.prompt_index, b.repeat_index",
        )?;
        let rows = stmt.query_map(params![run_id, Outcome::Error], |r| {
            Ok(UnusableVerdictRow {
                model_ref: r.get(0)?,
                prompt_name: r.get(1)?,
                repeat_index: r.get(2)?,
                repeated: r.get(3)?,
                judge: r.get(4)?,
                detail: r.get(5)?,
                call_id: r.get(6)?,
                attempts: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The results of `run_id` recorded as errors although every call of theirs answered and
    /// their judge's verdict (if any) could be used: what their checks or tool loop made an
    /// error of. In model, template, prompt and repeat order.
    pub fn result_errors(&self, run_id: i64) -> Result<Vec<ResultErrorRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT b.model_ref, b.prompt_name, b.repeat_index,
                    EXISTS (SELECT 1 FROM bench_results r
                            WHERE r.run_id = b.run_id AND r.repeat_index > 0),
                    b.detail, c.id, c.attempts
             FROM bench_results b JOIN calls c ON c.id = b.call_id
                  LEFT JOIN calls j ON j.id = b.judge_call_id
             WHERE b.run_id = ?1 AND b.status = ?2 AND c.status = 'ok'
               AND (b.judge_call_id IS NULL OR (j.status = 'ok' AND b.judge_score IS NOT NULL))
             ORDER BY b.model_index, b.template_index, b.prompt_index, b.repeat_index",
        )?;
        let rows = stmt.query_map(params![run_id, Outcome::Error], |r| {
            Ok(ResultErrorRow {
                model_ref: r.get(0)?,
                prompt_name: r.get(1)?,
                repeat_index: r.get(2)?,
                repeated: r.get(3)?,
                detail: r.get(4)?,
                call_id: r.get(5)?,
                attempts: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The first `limit` results of `run_ids` that did not pass, in run, model, template,
    /// prompt and repeat order, each with the first `answer_bytes` bytes of its answer, its
    /// template and its checks (when it has several).
    pub fn bench_failures(
        &self,
        run_ids: &[i64],
        limit: usize,
        answer_bytes: usize,
    ) -> Result<Vec<FailureRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT b.run_id, b.model_ref, b.prompt_name, b.repeat_index, b.method, b.status, b.detail,
                    substr(bl.content, 1, ?2), b.expected, b.template_index, b.model_index,
                    b.prompt_index, b.uid
             FROM bench_results b
                  LEFT JOIN calls c ON c.id = b.call_id
                  LEFT JOIN blobs bl ON bl.sha256 = c.response_sha256
             WHERE b.run_id = ?1 AND b.status != ?4
             ORDER BY b.model_index, b.template_index, b.prompt_index, b.repeat_index
             LIMIT ?3",
        )?;
        let mut failures = Vec::new();
        for &run_id in run_ids {
            let left = limit.saturating_sub(failures.len());
            if left == 0 {
                break;
            }
            let templates = self.bench_template_names(run_id)?;
            let mut rows = stmt.query(params![
                run_id,
                answer_bytes as i64,
                left as i64,
                Outcome::Passed
            ])?;
            while let Some(r) = rows.next()? {
                let answer = match r.get_ref(7)? {
                    rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                        Some(String::from_utf8_lossy(b).into_owned())
                    }
                    _ => None,
                };
                let uid: Option<String> = r.get(12)?;
                let key = ResultKey {
                    run_id,
                    model_index: r.get(10)?,
                    template_index: r.get(9)?,
                    prompt_index: r.get(11)?,
                    repeat_index: r.get(3)?,
                };
                failures.push(FailureRow {
                    run_id: r.get(0)?,
                    model_ref: r.get(1)?,
                    prompt_name: r.get(2)?,
                    repeat_index: r.get(3)?,
                    method: r.get(4)?,
                    status: r.get(5)?,
                    detail: r.get(6)?,
                    expected: r.get(8)?,
                    answer,
                    template: templates.get(r.get::<_, u32>(9)? as usize).cloned(),
                    checks: self.bench_checks_of(&key)?,
                    rating: match &uid {
                        Some(uid) => self.rating_for(uid)?,
                        None => None,
                    },
                });
            }
        }
        Ok(failures)
    }

    /// The check rows of the result `key`, in the file's order (none for a result with one
    /// check).
    pub fn bench_checks_of(&self, key: &ResultKey) -> Result<Vec<CheckRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT method, expected, status, score, weight, reason FROM bench_checks
             WHERE run_id = ?1 AND model_index = ?2 AND template_index = ?3
               AND prompt_index = ?4 AND repeat_index = ?5
             ORDER BY check_index",
        )?;
        let rows = stmt.query_map(key.params(), |r| {
            Ok(CheckRow {
                method: r.get(0)?,
                expected: r.get(1)?,
                outcome: r.get(2)?,
                score: r.get(3)?,
                weight: r.get(4)?,
                reason: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every check row of `run_ids` (results with several checks), in run, model, template,
    /// prompt, repeat and check order, with its result's key (`track export csv`).
    pub fn bench_check_rows(&self, run_ids: &[i64]) -> Result<Vec<CheckExportRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT b.model_ref, b.template_index, b.prompt_name, b.repeat_index, k.check_index,
                    k.method, k.expected, k.status, k.score, k.weight, k.reason
             FROM bench_checks k JOIN bench_results b USING (run_id, model_index,
                  template_index, prompt_index, repeat_index)
             WHERE k.run_id = ?1
             ORDER BY b.model_index, b.template_index, b.prompt_index, b.repeat_index,
                      k.check_index",
        )?;
        let mut out = Vec::new();
        for &run_id in run_ids {
            let templates = self.bench_template_names(run_id)?;
            let mut rows = stmt.query([run_id])?;
            while let Some(r) = rows.next()? {
                out.push(CheckExportRow {
                    run_id,
                    model_ref: r.get(0)?,
                    template: templates.get(r.get::<_, u32>(1)? as usize).cloned(),
                    prompt_name: r.get(2)?,
                    repeat_index: r.get(3)?,
                    check_index: r.get(4)?,
                    check: CheckRow {
                        method: r.get(5)?,
                        expected: r.get(6)?,
                        outcome: r.get(7)?,
                        score: r.get(8)?,
                        weight: r.get(9)?,
                        reason: r.get(10)?,
                    },
                });
            }
        }
        Ok(out)
    }

    /// Whether any run of `run_ids` has prompt templates (labels of kind `template`): without
    /// any, the summaries read no template column.
    pub fn bench_has_templates(&self, run_ids: &[i64]) -> Result<bool> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM bench_labels WHERE run_id = ?1 AND kind = 'template')",
        )?;
        for &run_id in run_ids {
            if stmt.query_row([run_id], |r| r.get::<_, bool>(0))? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The names of run `run_id`'s templates, by index; empty when it has none.
    pub fn bench_template_names(&self, run_id: i64) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, label FROM bench_labels WHERE run_id = ?1 AND kind = 'template'
             ORDER BY idx",
        )?;
        let mut names = Vec::new();
        let mut rows = stmt.query([run_id])?;
        while let Some(r) = rows.next()? {
            let idx = r.get::<_, u32>(0)? as usize;
            if names.len() <= idx {
                names.resize(idx + 1, String::new());
            }
            names[idx] = r.get(1)?;
        }
        Ok(names)
    }

    /// The names of `run_id`'s models (`bench_models`) and cases (`bench_labels`), by index.
    fn bench_run_names(&self, run_id: i64) -> Result<RunNames> {
        let mut names = RunNames::default();
        let mut stmt = self.conn.prepare_cached(
            "SELECT model_index, model_ref, provider, model_id, energy_method FROM bench_models
             WHERE run_id = ?1 ORDER BY model_index",
        )?;
        let mut rows = stmt.query([run_id])?;
        while let Some(r) = rows.next()? {
            let index = r.get::<_, u32>(0)? as usize;
            if names.models.len() <= index {
                names.models.resize(index + 1, ModelNames::default());
            }
            names.models[index] = ModelNames {
                model_ref: r.get(1)?,
                provider: r.get(2)?,
                model_id: r.get(3)?,
                energy_method: r.get(4)?,
            };
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, label FROM bench_labels WHERE run_id = ?1 AND kind = 'prompt'
             ORDER BY idx",
        )?;
        let mut rows = stmt.query([run_id])?;
        while let Some(r) = rows.next()? {
            let index = r.get::<_, u32>(0)? as usize;
            if names.prompts.len() <= index {
                names.prompts.resize(index + 1, String::new());
            }
            names.prompts[index] = r.get(1)?;
        }
        Ok(names)
    }

    /// Loads the results of `run_ids` as columns, ordered by run, model, template, prompt and
    /// repeat. Without `with_detail` the text columns used only by the detail table are left
    /// empty, which keeps summaries over millions of rows lean.
    pub fn bench_columns(&self, run_ids: &[i64], with_detail: bool) -> Result<BenchColumns> {
        let mut cols = BenchColumns::default();
        let detail_sql = if with_detail {
            "method, detail, tokens_estimated, judge_score, judge_cost_usd, uid"
        } else {
            "NULL, NULL, NULL, NULL, NULL, NULL"
        };
        // The rows hold numbers; their names are each run's, read once (migration V25).
        let sql = format!(
            "SELECT model_index, prompt_index, repeat_index, status, cache_hit, latency_ms,
                    input_tokens, output_tokens, cost_usd, paid_usd, energy_wh, energy_wh_min,
                    energy_wh_max, template_index, score, call_id, {detail_sql}
             FROM bench_rows WHERE run_id = ?1
             ORDER BY model_index, template_index, prompt_index, repeat_index"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        for &run_id in run_ids {
            let templates = self.bench_template_names(run_id)?;
            let names = self.bench_run_names(run_id)?;
            let mut rows = stmt.query([run_id])?;
            while let Some(r) = rows.next()? {
                let model_index: u32 = r.get(0)?;
                let prompt_index: u32 = r.get(1)?;
                let model = names.model(model_index);
                cols.run_id.push(run_id);
                cols.model_index.push(model_index);
                cols.prompt_index.push(prompt_index);
                cols.repeat_index.push(r.get(2)?);
                cols.model_ref.push(model.model_ref.clone());
                cols.prompt_name.push(names.prompt(prompt_index).to_owned());
                cols.outcome.push(r.get(3)?);
                cols.cache_hit.push(r.get(4)?);
                cols.latency_ms.push(r.get(5)?);
                cols.input_tokens
                    .push(r.get::<_, Option<i64>>(6)?.map(|n| n as u64));
                cols.output_tokens
                    .push(r.get::<_, Option<i64>>(7)?.map(|n| n as u64));
                cols.cost_usd.push(r.get(8)?);
                cols.paid_usd.push(r.get(9)?);
                let energy_wh: Option<f64> = r.get(10)?;
                cols.energy_wh.push(energy_wh);
                cols.energy_wh_min.push(r.get(11)?);
                cols.energy_wh_max.push(r.get(12)?);
                let template: u32 = r.get(13)?;
                cols.template_index.push(template);
                cols.template
                    .push(templates.get(template as usize).cloned());
                cols.score.push(r.get(14)?);
                cols.call_id.push(r.get(15)?);
                if with_detail {
                    cols.method.push(r.get(16)?);
                    cols.detail.push(r.get(17)?);
                    cols.model_id.push(model.model_id.clone());
                    cols.provider.push(model.provider.clone());
                    cols.tokens_estimated.push(r.get(18)?);
                    // As the view says: no estimate, no method.
                    cols.energy_method
                        .push(energy_wh.and(model.energy_method.clone()));
                    cols.judge_score.push(r.get(19)?);
                    cols.judge_cost_usd.push(r.get(20)?);
                    cols.uid.push(r.get(21)?);
                }
            }
        }
        Ok(cols)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn row(run_id: i64, model: u32, prompt: u32, outcome: Outcome) -> BenchResultRow {
        BenchResultRow {
            run_id,
            model_index: model,
            prompt_index: prompt,
            repeat_index: 0,
            model_ref: format!("openai:m{model}"),
            provider: "openai".into(),
            model_id: format!("m{model}"),
            prompt_name: format!("p{prompt}"),
            method: "exact".into(),
            call_id: None,
            cache_hit: false,
            outcome,
            detail: None,
            latency_ms: Some(100.0),
            input_tokens: Some(10),
            output_tokens: Some(20),
            tokens_estimated: false,
            cost_usd: Some(0.5),
            paid_usd: Some(0.5),
            energy_wh: Some(1.0),
            energy_wh_min: Some(0.5),
            energy_wh_max: Some(1.5),
            energy_method: Some("ecologits-0.9".into()),
            judge_call_id: None,
            judge_score: None,
            judge_cost_usd: None,
            expected: Some("4".into()),
            template_index: 0,
            template_name: None,
            score: None,
            checks: Vec::new(),
        }
    }

    #[test]
    fn narrow_rows_read_through_the_view_as_the_table_they_replace_did() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        super::super::ids::register(&conn).unwrap();
        super::super::migrations::runner()
            .set_target(refinery::Target::Version(24))
            .run(&mut conn)
            .unwrap();
        // Two models (one without an energy estimate on its error row), two templates, a
        // row of an older run without labels (written by hand).
        conn.execute_batch(
            "INSERT INTO runs (id, kind, started_at, status) VALUES (7, 'bench', 'now', 'completed');
             INSERT INTO bench_labels (run_id, kind, idx, label)
             VALUES (7, 'model', 0, 'openai:a'), (7, 'prompt', 3, 'q3');
             INSERT INTO bench_results (run_id, model_index, prompt_index, repeat_index, model_ref,
                 provider, model_id, prompt_name, method, cache_hit, status, created_at, uid,
                 template_index, template_name, energy_wh, energy_method, latency_ms, expected)
             VALUES (7, 0, 3, 0, 'openai:a', 'openai', 'gpt-a', 'q3', 'exact', 1, 'passed', 't1',
                     'u1', 0, 'terse', 0.5, 'ecologits', 12.5, '4'),
                    (7, 0, 3, 0, 'openai:a', 'openai', 'gpt-a', 'q3', 'exact', 0, 'error', 't2',
                     'u2', 1, 'steps', NULL, NULL, NULL, '4'),
                    (7, 1, 3, 1, 'ollama:b', 'ollama', 'llama', 'q3', 'checks', 0, 'failed',
                     't3', 'u3', 1, 'steps', 0.1, 'ecologits', 3.0, NULL);",
        )
        .unwrap();
        let all = |conn: &rusqlite::Connection| -> Vec<Vec<String>> {
            let mut stmt = conn
                .prepare("SELECT * FROM bench_results ORDER BY id")
                .unwrap();
            let width = stmt.column_count();
            stmt.query_map([], |r| {
                Ok((0..width)
                    .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                    .collect())
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
        };
        let columns = |conn: &rusqlite::Connection| -> Vec<(String, String)> {
            conn.prepare("SELECT name, type FROM pragma_table_info('bench_results')")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        let (before, declared) = (all(&conn), columns(&conn));
        super::super::migrations::runner().run(&mut conn).unwrap();
        assert_eq!(all(&conn), before, "every column of every row, as it was");
        assert_eq!(
            columns(&conn),
            declared,
            "the same columns, of the same types"
        );
        let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(count("SELECT count(*) FROM bench_models"), 2);
        assert_eq!(
            count(
                "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%(uid)%' AND tbl_name = 'bench_rows'"
            ),
            0,
            "no index of uids"
        );
        // The view takes writes as the table did.
        conn.execute_batch(
            "INSERT INTO runs (id, kind, started_at, status) VALUES (8, 'bench', 'now', 'completed');
             INSERT INTO bench_results (run_id, model_index, prompt_index, repeat_index, model_ref,
                 provider, model_id, prompt_name, method, cache_hit, status, created_at)
             VALUES (8, 2, 9, 0, 'openai:c', 'openai', 'gpt-c', 'q9', 'exact', 0, 'passed', 't4');
             UPDATE bench_results SET detail = 'why' WHERE prompt_index = 9;
             DELETE FROM bench_results WHERE uid = 'u2';",
        )
        .unwrap();
        let row: (String, String, Option<String>, String) = conn
            .query_row(
                "SELECT model_ref, prompt_name, template_name, detail FROM bench_results
                 WHERE prompt_index = 9",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(row, ("openai:c".into(), "q9".into(), None, "why".into()));
        assert_eq!(count("SELECT count(*) FROM bench_rows"), 3);
    }

    #[test]
    fn migrating_checks_to_the_result_key_keeps_each_with_its_result() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        super::super::ids::register(&conn).unwrap();
        super::super::migrations::runner()
            .set_target(refinery::Target::Version(20))
            .run(&mut conn)
            .unwrap();
        conn.execute_batch(
            "INSERT INTO runs (id, kind, started_at, status) VALUES (7, 'bench', 'now', 'completed');
             INSERT INTO bench_results (run_id, model_index, prompt_index, repeat_index, model_ref,
                 provider, model_id, prompt_name, method, cache_hit, status, created_at, uid,
                 template_index)
             VALUES (7, 1, 2, 0, 'openai:m', 'openai', 'm', 'q2', 'checks', 0, 'failed', 'now',
                     'u1', 1),
                    (7, 0, 0, 0, 'openai:m', 'openai', 'm', 'q0', 'checks', 0, 'passed', 'now',
                     'u2', 0);
             INSERT INTO bench_checks (result_uid, check_index, run_id, method, status, reason)
             VALUES ('u1', 0, 7, 'contains', 'passed', NULL),
                    ('u1', 1, 7, 'not-contains', 'failed', 'said sorry'),
                    ('u2', 0, 7, 'exact', 'passed', NULL);",
        )
        .unwrap();
        super::super::migrations::runner().run(&mut conn).unwrap();
        let store = Store {
            conn,
            immutable: false,
            checkpoint: None,
        };
        let key = ResultKey {
            run_id: 7,
            model_index: 1,
            template_index: 1,
            prompt_index: 2,
            repeat_index: 0,
        };
        let checks = store.bench_checks_of(&key).unwrap();
        let seen: Vec<(&str, String)> = checks
            .iter()
            .map(|c| (c.method.as_str(), c.outcome.to_string()))
            .collect();
        assert_eq!(
            seen,
            [
                ("contains", "passed".to_owned()),
                ("not-contains", "failed".to_owned())
            ]
        );
        assert_eq!(checks[1].reason.as_deref(), Some("said sorry"));
        let other = ResultKey {
            model_index: 0,
            template_index: 0,
            prompt_index: 0,
            ..key
        };
        assert_eq!(store.bench_checks_of(&other).unwrap().len(), 1);
        // Deleting the run takes its checks with it.
        store
            .conn
            .execute("DELETE FROM runs WHERE id = 7", [])
            .unwrap();
        let left: i64 = store
            .conn
            .query_row("SELECT count(*) FROM bench_checks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }

    #[test]
    fn two_templates_of_one_case_are_two_results_and_several_checks_are_rows() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let check = |method: &str, outcome| CheckRow {
            method: method.into(),
            expected: Some("4".into()),
            outcome,
            score: None,
            weight: 1.0,
            reason: None,
        };
        let mut terse = row(run, 0, 0, Outcome::Passed);
        terse.template_name = Some("terse".into());
        terse.checks = vec![
            check("exact", Outcome::Passed),
            check("not-contains", Outcome::Passed),
        ];
        let mut steps = row(run, 0, 0, Outcome::Failed);
        steps.template_index = 1;
        steps.template_name = Some("steps".into());
        steps.checks = vec![
            check("exact", Outcome::Failed),
            check("not-contains", Outcome::Passed),
        ];
        store
            .insert_bench_results(&[terse.clone(), steps.clone()])
            .unwrap();
        let count = |store: &Store, sql: &str| -> i64 {
            store.conn.query_row(sql, [], |r| r.get(0)).unwrap()
        };
        assert_eq!(count(&store, "SELECT count(*) FROM bench_results"), 2);
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM bench_results WHERE template_name = 'steps' AND template_index = 1"
            ),
            1,
            "a row names its template, for exports that read rows alone (Parquet)"
        );
        assert_eq!(
            count(&store, "SELECT count(DISTINCT uid) FROM bench_results"),
            2
        );
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM bench_labels WHERE kind = 'template'"
            ),
            2
        );
        assert_eq!(count(&store, "SELECT count(*) FROM bench_checks"), 4);
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM bench_checks WHERE status = 'failed'"
            ),
            1
        );
        // Written again (a resumed run), a result's checks replace its earlier ones.
        steps.checks.truncate(1);
        store.insert_bench_results(&[steps]).unwrap();
        assert_eq!(count(&store, "SELECT count(*) FROM bench_checks"), 3);
        // Template 0 keeps the uid a result had before templates.
        let plain: String = store
            .conn
            .query_row(
                "SELECT uid FROM bench_results WHERE template_index = 0",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let run_uid = super::super::ids::run_uid(&store.conn, run).unwrap();
        let before = super::super::uid(&[
            "bench_result".into(),
            run_uid.as_ref().into(),
            0i64.into(),
            0i64.into(),
            0i64.into(),
        ]);
        assert_eq!(plain, before);
    }

    #[test]
    fn outcomes_keep_their_stored_names() {
        let store = Store::open_in_memory().unwrap();
        for outcome in [Outcome::Passed, Outcome::Failed, Outcome::Error] {
            let (text, back): (String, Outcome) = store
                .conn
                .query_row("SELECT ?1, ?1", [outcome], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            assert_eq!(text, outcome.as_str());
            assert_eq!(back, outcome);
        }
        assert_eq!(Outcome::Passed.passed(), Some(true));
        assert_eq!(Outcome::Failed.passed(), Some(false));
        assert_eq!(Outcome::Error.passed(), None);
        let wrong: rusqlite::Result<Outcome> =
            store.conn.query_row("SELECT 'maybe'", [], |r| r.get(0));
        assert!(wrong.unwrap_err().to_string().contains("`maybe`"));
    }

    #[test]
    fn measures_scan_in_parallel_slices_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("t.db")).unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let rows: Vec<BenchResultRow> = (0..3)
            .flat_map(|m| (0..5).map(move |p| row(run, m, p, Outcome::of_test(p % 2 == 0))))
            .collect();
        store.insert_bench_results(&rows).unwrap();
        for parts in [1, 3] {
            let (labels, slices) = store
                .scan_bench_measures(
                    &[run],
                    parts,
                    Vec::with_capacity,
                    |v: &mut Vec<(u32, u32)>, r| v.push((r.model, r.prompt)),
                )
                .unwrap();
            assert_eq!(slices.len(), parts);
            let mut all: Vec<(u32, u32)> = slices.into_iter().flatten().collect();
            all.sort_unstable();
            assert_eq!(all.len(), 15);
            assert_eq!(all[0], (0, 0));
            assert_eq!(labels.models, ["openai:m0", "openai:m1", "openai:m2"]);
            assert_eq!(labels.prompts.len(), 5);
        }
    }

    #[test]
    fn measures_of_several_templates_scan_in_slices_and_prompt_ranges_with_their_keys() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("t.db")).unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let plain = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let mut rows = Vec::new();
        for m in 0..2 {
            for (t, name) in ["terse", "steps", "json"].iter().enumerate() {
                for p in 0..5 {
                    let mut r = row(run, m, p, Outcome::Passed);
                    r.template_index = t as u32;
                    r.template_name = Some((*name).into());
                    rows.push(r);
                }
            }
        }
        rows.push(row(plain, 0, 0, Outcome::Passed));
        store.insert_bench_results(&rows).unwrap();
        let expected: Vec<(u32, u32, u32)> = {
            let mut all: Vec<_> = (0..2)
                .flat_map(|m| (0..3).flat_map(move |t| (0..5).map(move |p| (m, t, p))))
                .chain([(0, NO_TEMPLATE, 0)])
                .collect();
            all.sort_unstable();
            all
        };
        for parts in [1, 2, 3, 7] {
            let (labels, slices) = store
                .scan_bench_measures(
                    &[run, plain],
                    parts,
                    Vec::with_capacity,
                    |v: &mut Vec<(u32, u32, u32)>, r| v.push((r.model, r.template, r.prompt)),
                )
                .unwrap();
            assert_eq!(labels.templates, ["terse", "steps", "json"]);
            assert!(labels.untemplated && labels.several_templates());
            let mut all: Vec<_> = slices.into_iter().flatten().collect();
            all.sort_unstable();
            assert_eq!(all, expected, "{parts} slices");
        }
        for rows_per_range in [1, 4, 1000] {
            let (_, ranges) = store
                .scan_bench_measures_by_prompt(
                    &[run, plain],
                    (2, rows_per_range),
                    Vec::with_capacity,
                    |v: &mut Vec<(u32, u32, u32)>, r| v.push((r.model, r.template, r.prompt)),
                    |v, _| v,
                )
                .unwrap();
            let mut all: Vec<_> = ranges.into_iter().flatten().collect();
            all.sort_unstable();
            assert_eq!(all, expected, "{rows_per_range} rows a range");
        }
    }

    #[test]
    fn failures_come_bounded_in_model_major_order() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let mut failed = row(run, 1, 0, Outcome::Failed);
        failed.detail = Some("expected `4`, got `five`".into());
        store
            .insert_bench_results(&[
                failed,
                row(run, 0, 1, Outcome::Error),
                row(run, 0, 0, Outcome::Passed),
                row(run, 0, 2, Outcome::Failed),
            ])
            .unwrap();
        let all = store.bench_failures(&[run], 10, 100).unwrap();
        let order: Vec<(&str, Outcome)> = all
            .iter()
            .map(|f| (f.prompt_name.as_str(), f.status))
            .collect();
        assert_eq!(
            order,
            [
                ("p1", Outcome::Error),
                ("p2", Outcome::Failed),
                ("p0", Outcome::Failed)
            ]
        );
        assert_eq!(all[2].detail.as_deref(), Some("expected `4`, got `five`"));
        assert_eq!(all[2].answer, None, "no call, no answer");
        assert_eq!(store.bench_failures(&[run, run], 2, 100).unwrap().len(), 2);
    }

    #[test]
    fn a_bulk_write_and_a_resumed_one_keep_every_label_once_and_foreign_keys_on() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let rows = |models: u32, prompts: u32| -> Vec<BenchResultRow> {
            (0..models)
                .flat_map(|m| (0..prompts).map(move |p| row(run, m, p, Outcome::Passed)))
                .collect()
        };
        // More rows than a bulk write's threshold, then the same keys again (a resume)
        // with a third model.
        store.insert_bench_results(&rows(2, 2100)).unwrap();
        store.insert_bench_results(&rows(3, 2100)).unwrap();
        let count = |sql: &str| -> i64 { store.conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(count("SELECT count(*) FROM bench_results"), 6300);
        assert_eq!(
            count("SELECT count(*) FROM bench_labels WHERE kind = 'model'"),
            3
        );
        assert_eq!(
            count("SELECT count(*) FROM bench_labels WHERE kind = 'prompt'"),
            2100
        );
        assert_eq!(count("PRAGMA foreign_keys"), 1);
        let cols = store.bench_columns(&[run], false).unwrap();
        assert_eq!(cols.len(), 6300);
    }

    #[test]
    fn a_bulk_write_to_a_file_leaves_its_log_to_a_checkpoint_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("t.db")).unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let rows: Vec<BenchResultRow> =
            (0..5000).map(|p| row(run, 0, p, Outcome::Passed)).collect();
        store.insert_bench_results(&rows).unwrap();
        let pragma = |store: &Store, sql: &str| -> Vec<i64> {
            store
                .conn
                .query_row(sql, [], |r| (0..3).map(|i| r.get(i)).collect())
                .unwrap_or_else(|_| vec![store.conn.query_row(sql, [], |r| r.get(0)).unwrap()])
        };
        assert_eq!(pragma(&store, "PRAGMA wal_autocheckpoint"), [65_536]);
        // Wait for the checkpoint: every page of the log is then in the database.
        drop(store.checkpoint.take());
        let [busy, log, copied] = pragma(&store, "PRAGMA wal_checkpoint(NOOP)")[..] else {
            panic!("three columns")
        };
        assert_eq!(busy, 0);
        assert!(log > 100, "the write went through the log: {log} pages");
        assert_eq!(copied, log, "all of it copied by the thread");
        assert_eq!(store.bench_columns(&[run], false).unwrap().len(), 5000);
    }

    #[test]
    fn results_round_trip_in_model_major_order() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        store
            .insert_bench_results(&[
                row(run, 1, 0, Outcome::Passed),
                row(run, 0, 1, Outcome::Error),
                row(run, 0, 0, Outcome::Failed),
            ])
            .unwrap();
        let cols = store.bench_columns(&[run], true).unwrap();
        assert_eq!(cols.len(), 3);
        assert_eq!(cols.model_index, vec![0, 0, 1]);
        assert_eq!(cols.prompt_index, vec![0, 1, 0]);
        assert_eq!(
            cols.outcome,
            vec![Outcome::Failed, Outcome::Error, Outcome::Passed]
        );
        assert_eq!(cols.method.len(), 3);
        let lean = store.bench_columns(&[run], false).unwrap();
        assert!(lean.method.is_empty());
    }
}
