//! `--fail-under` and `--fail-on-errors`: the bar of `track run` and `track query`, checked
//! on the results once they are recorded. Each miss is said on stderr, and the command exits
//! [`crate::exit::BELOW_BAR`]; the results are recorded and printed as without a bar.

use crate::experiment::ExperimentKind;
use crate::gate::{Bar, Gate};
use crate::store::Store;

/// The options that set a bar.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct GateArgs {
    /// Exit with status 3 (below the bar) when a model's pass rate is under PCT percent: passed
    /// / (passed + failed), errors left out, as `success_pct`; a model without any answered
    /// result is under any bar above 0. `overall:PCT` compares all the models' results
    /// together. With `track query --by template`, each template and model pair is held to
    /// it. Benchmarks only. `track run` takes the file's `fail_under:` without it.
    #[arg(long, value_name = "PCT|overall:PCT", value_parser = Bar::parse)]
    pub fail_under: Option<Bar>,
    /// Exit with status 3 (below the bar) when any result is an error: a benchmark's error rows
    /// (a failed call, a judge that failed), each model's counted; for other kinds, any error
    /// the run counts (`track runs --errors ID`). `track run` takes the file's
    /// `fail_on_errors: true` without it.
    #[arg(long)]
    pub fail_on_errors: bool,
}

impl GateArgs {
    /// The bar these flags set alone.
    pub(crate) fn gate(self) -> Gate {
        Gate {
            fail_under: self.fail_under,
            fail_on_errors: self.fail_on_errors,
            from_file: false,
        }
    }
}

/// Refuses a bar that runs of `kind` cannot be measured against: only benchmarks have a pass
/// rate.
pub(crate) fn check_applies(kind: ExperimentKind, gate: &Gate) -> anyhow::Result<()> {
    if let Some(bar) = gate.fail_under
        && kind != ExperimentKind::Bench
    {
        anyhow::bail!(
            "--fail-under {bar} needs a pass rate, which only benchmarks have; {} runs have \
             none: use --fail-on-errors, or compare two runs with `track diff BASE NEW \
             --fail-on-regression`",
            kind.noun()
        );
    }
    Ok(())
}

/// Checks the runs `run_ids` of `kind` against `gate`: says each miss on stderr and returns
/// [`crate::exit::BELOW_BAR`], or [`crate::exit::SUCCESS`] when the bar is met.
pub(crate) fn judge(
    store: &Store,
    kind: ExperimentKind,
    run_ids: &[i64],
    gate: &Gate,
) -> anyhow::Result<u8> {
    judge_rows(store, (kind, run_ids), gate, None)
}

/// [`judge`], a benchmark's bar held to `rows` when given (the rows `track query --by
/// template` printed, each a template and model pair) instead of to each model.
pub(crate) fn judge_rows(
    store: &Store,
    (kind, run_ids): (ExperimentKind, &[i64]),
    gate: &Gate,
    rows: Option<Vec<crate::store::ModelOutcomes>>,
) -> anyhow::Result<u8> {
    if !gate.is_set() {
        return Ok(crate::exit::SUCCESS);
    }
    check_applies(kind, gate)?;
    let misses = if kind == ExperimentKind::Bench {
        match rows {
            Some(rows) => gate.misses(&rows),
            None => gate.misses(&store.bench_model_outcomes(run_ids)?),
        }
    } else {
        counted_errors(store, run_ids, gate)?
    };
    if misses.is_empty() {
        return Ok(crate::exit::SUCCESS);
    }
    for miss in &misses {
        crate::output::tell(format_args!("track: below the bar: {miss}"));
    }
    crate::output::tell(format_args!(
        "track: exit status {}: below the bar ({})",
        crate::exit::BELOW_BAR,
        crate::output::count(misses.len() as u64, "miss")
    ));
    Ok(crate::exit::BELOW_BAR)
}

/// Runs of a kind without error rows: under `--fail-on-errors`, each run that counted errors.
fn counted_errors(store: &Store, run_ids: &[i64], gate: &Gate) -> anyhow::Result<Vec<String>> {
    if !gate.fail_on_errors {
        return Ok(Vec::new());
    }
    Ok(store
        .runs_by_id(run_ids)?
        .iter()
        .filter(|run| run.tally.errors > 0)
        .map(|run| {
            format!(
                "run {}: {} (--fail-on-errors); `track runs --errors {}` lists them",
                run.id,
                crate::output::count(run.tally.errors, "error"),
                run.id
            )
        })
        .collect())
}
