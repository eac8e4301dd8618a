//! `track export csv` of benchmarks: `bench_results.csv` (one row per evaluation, with its run's
//! status), `bench_by_model.csv` and `bench_by_prompt.csv` (the summaries of `track query`, with
//! the selection's status), computed from stored results.

use super::columns as c;

use anyhow::Context as _;
use polars::prelude::Column;

use super::summary::BenchFrames;
use crate::kinds::{ExportOptions, ExportRuns};
use crate::output::write_csv_file;
use crate::store::Store;

/// Writes the benchmark CSV files of `runs` into `options.out` (`--out`, default `exports/`:
/// the registry entry's), each path on stdout once written.
pub fn write_csv(
    store: &Store,
    runs: &ExportRuns<'_>,
    options: &ExportOptions,
) -> anyhow::Result<()> {
    let mut frames = BenchFrames::from_columns(store.bench_columns(runs.ids, true)?)?;
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
    let out = &options.out;
    std::fs::create_dir_all(out)
        .with_context(|| format!("creating the export folder {}", out.display()))?;
    for (name, df) in [
        ("bench_results.csv", &frames.results),
        ("bench_by_model.csv", &frames.by_model),
        ("bench_by_prompt.csv", &frames.by_prompt),
    ] {
        let path = out.join(name);
        write_csv_file(df, &path).with_context(|| format!("writing {}", path.display()))?;
        crate::output::say(path.display());
    }
    Ok(())
}
