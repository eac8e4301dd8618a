//! `track export csv` of benchmarks: `bench_results.csv` (one row per evaluation, with its
//! template, score, run's status, human rating and whole answer), `bench_by_model.csv` and `bench_by_prompt.csv` (the
//! summaries of `track query`, with the selection's status), computed from stored results, and
//! `bench_checks.csv` (one row per check of the results that have several) and `tool_calls.csv`
//! (one row per tool call of the tool loops) when there are any.

use super::columns as c;

use anyhow::Context as _;
use polars::prelude::{Column, DataFrame, PolarsResult};

use super::summary::BenchFrames;
use crate::kinds::{ExportOptions, ExportRuns};
use crate::output::{write_csv_file, write_csv_file_in_slices};
use crate::rating::{ANSWER, human_columns};
use crate::store::{CheckExportRow, Store};

/// Writes the benchmark CSV files of `runs` into `options.out` (`--out`, default `exports/`:
/// the registry entry's), each path on stdout once written.
pub(crate) fn write_csv(
    store: &Store,
    runs: &ExportRuns<'_>,
    options: &ExportOptions,
) -> anyhow::Result<()> {
    let mut columns = store.bench_columns(runs.ids, true)?;
    // Read again a slice at a time while writing: a run's answers are never all held.
    let call_ids = std::mem::take(&mut columns.call_id);
    let uids = std::mem::take(&mut columns.uid);
    let ratings = store.current_ratings(runs.ids)?;
    let mut frames = BenchFrames::from_columns(columns)?;
    for column in human_columns(uids.iter().map(Option::as_deref), &ratings) {
        frames.results.with_column(column)?;
    }
    let per_row: Vec<&str> = frames
        .results
        .column(c::RUN_ID)?
        .as_materialized_series()
        .i64()?
        .iter()
        .map(|id| {
            id.and_then(|id| runs.run_status.get(&id).copied())
                .unwrap_or("")
        })
        .collect();
    frames
        .results
        .with_column(Column::new(c::RUN_STATUS.into(), per_row))?;
    for df in [&mut frames.by_model, &mut frames.by_prompt] {
        let rows = df.height();
        df.with_column(Column::new(c::RUNS_STATUS.into(), vec![runs.status; rows]))?;
    }
    let checks = store.bench_check_rows(runs.ids)?;
    let checks = (!checks.is_empty())
        .then(|| checks_frame(&checks))
        .transpose()?;
    let out = &options.out;
    std::fs::create_dir_all(out)
        .with_context(|| format!("creating the export folder {}", out.display()))?;
    let results = out.join("bench_results.csv");
    write_csv_file_in_slices(&frames.results, &results, ANSWER_SLICE, |offset, most| {
        // Answers until the slice holds ANSWER_SLICE_BYTES of them (one at least).
        let (mut answers, mut bytes) = (Vec::new(), 0);
        for id in &call_ids[offset..offset + most] {
            let answer = match id {
                Some(id) => store.answer_text(*id)?,
                None => None,
            };
            bytes += answer.as_ref().map_or(0, String::len);
            answers.push(answer);
            if bytes >= ANSWER_SLICE_BYTES {
                break;
            }
        }
        Ok(vec![Column::new(ANSWER.into(), answers)])
    })
    .with_context(|| format!("writing {}", results.display()))?;
    crate::output::say(results.display());
    let mut files = vec![
        ("bench_by_model.csv", &frames.by_model),
        ("bench_by_prompt.csv", &frames.by_prompt),
    ];
    if let Some(checks) = &checks {
        files.push(("bench_checks.csv", checks));
    }
    let tool_calls = super::tools::tool_calls_frame(store, runs.ids)?;
    if let Some(tool_calls) = &tool_calls {
        files.push(("tool_calls.csv", tool_calls));
    }
    for (name, df) in files {
        let path = out.join(name);
        write_csv_file(df, &path).with_context(|| format!("writing {}", path.display()))?;
        crate::output::say(path.display());
    }
    Ok(())
}

/// The most results whose answers are held at once while `bench_results.csv` is written...
const ANSWER_SLICE: usize = 4096;
/// ...and the most bytes of answers, past which a slice ends (long answers).
const ANSWER_SLICE_BYTES: usize = 4 << 20;

/// `bench_checks.csv`: one row per check, with its result's key (run, model, template, case,
/// repeat) and the check's index, method, expected value, status, score, weight and reason.
fn checks_frame(rows: &[CheckExportRow]) -> PolarsResult<DataFrame> {
    let of = |f: fn(&CheckExportRow) -> Option<&str>| rows.iter().map(f).collect::<Vec<_>>();
    DataFrame::new_infer_height(vec![
        Column::new(
            c::RUN_ID.into(),
            rows.iter().map(|r| r.run_id).collect::<Vec<_>>(),
        ),
        Column::new(c::MODEL.into(), of(|r| Some(&r.model_ref))),
        Column::new(c::TEMPLATE.into(), of(|r| r.template.as_deref())),
        Column::new(c::CASE.into(), of(|r| Some(&r.prompt_name))),
        Column::new(
            c::REPEAT.into(),
            rows.iter().map(|r| r.repeat_index).collect::<Vec<_>>(),
        ),
        Column::new(
            c::CHECK_INDEX.into(),
            rows.iter().map(|r| r.check_index).collect::<Vec<_>>(),
        ),
        Column::new(c::METHOD.into(), of(|r| Some(&r.check.method))),
        Column::new(c::EXPECTED.into(), of(|r| r.check.expected.as_deref())),
        Column::new(c::STATUS.into(), of(|r| Some(r.check.outcome.as_str()))),
        Column::new(
            c::SCORE.into(),
            rows.iter().map(|r| r.check.score).collect::<Vec<_>>(),
        ),
        Column::new(
            c::WEIGHT.into(),
            rows.iter().map(|r| r.check.weight).collect::<Vec<_>>(),
        ),
        Column::new(c::REASON.into(), of(|r| r.check.reason.as_deref())),
    ])
}
