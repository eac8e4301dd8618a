//! The registry of experiment kinds: the one match that names them, and what the commands
//! derive from their entries (`track run`, `query`, `export`, `diff`, `report` and `runs
//! --errors` dispatch through it). It is the commands' own: below them, the runtime
//! (`experiment`), `analysis`, `report`, `output` and `store` name no kind, and each kind's
//! folder holds everything that varies by kind, behind the trait [`Kind`] of `crate::kinds`.
//!
//! Adding a kind: its folder with a `pub static` that implements [`Kind`], one line in
//! `kind.rs`'s `kinds!`, and one arm in [`kind`]. There is no `_ =>` over kinds anywhere, so
//! the compiler names every place a new kind must fill.

use crate::analysis::diff::{DiffError, RunDiff};
use crate::experiment::ExperimentKind;
use crate::kinds::{Grouping, Kind, QueryFlag, QueryOption};
use crate::store::{RunErrorRow, RunSelector, Store, StoreError};

/// The registry's entry of `kind`.
pub(crate) fn kind(kind: ExperimentKind) -> &'static dyn Kind {
    match kind {
        ExperimentKind::Bench => &crate::bench::KIND,
        ExperimentKind::Review => &crate::review::KIND,
        ExperimentKind::Generate => &crate::review::GENERATE,
        ExperimentKind::Relevance => &crate::relevance::KIND,
        ExperimentKind::Pairwise => &crate::pairwise::KIND,
    }
}

/// The kind of an experiment file (its `kind:` line; none: a benchmark), or why it names no
/// kind: `unknown `kind: poetry`; use bench (the default), review or relevance`.
pub(crate) fn of_file(text: &str) -> Result<ExperimentKind, String> {
    ExperimentKind::of_file(text).map_err(|e| format!("{e}; use {}", file_kinds()))
}

/// Names of the kinds that have experiment files, for messages: `bench (the default), review
/// or relevance`.
fn file_kinds() -> String {
    let names: Vec<String> = ExperimentKind::ALL
        .iter()
        .filter(|&&k| kind(k).loader().is_some())
        .map(|&k| {
            if k == ExperimentKind::FILE_DEFAULT {
                format!("{} (the default)", k.as_str())
            } else {
                k.as_str().to_owned()
            }
        })
        .collect();
    one_of(&names)
}

/// The kinds that have a report section, in the report's order (that of
/// [`ExperimentKind::ALL`]).
pub(crate) fn reported() -> impl Iterator<Item = ExperimentKind> {
    ExperimentKind::ALL
        .iter()
        .copied()
        .filter(|&k| kind(k).section().is_some())
}

/// The nouns of the kinds that have a report section: `benchmark, review or relevance`.
pub(crate) fn reported_nouns() -> String {
    let nouns: Vec<String> = reported().map(|k| k.noun().to_owned()).collect();
    one_of(&nouns)
}

/// Every kind's `--by` values of `track query`, kind by kind in the order of
/// [`ExperimentKind::ALL`].
pub(crate) fn groupings() -> impl Iterator<Item = (ExperimentKind, &'static Grouping)> {
    ExperimentKind::ALL
        .iter()
        .flat_map(|&k| kind(k).groupings().iter().map(move |g| (k, g)))
}

/// Compares run `new` with run `base` (`track diff`, and a report's comparison): both must
/// exist and be of one kind whose runs can be compared.
pub(crate) fn diff(store: &Store, base: i64, new: i64) -> Result<RunDiff, DiffError> {
    let of_both = RunDiff::kind_of(store, base, new)?;
    let unsupported = || {
        let nouns: Vec<String> = ExperimentKind::ALL
            .iter()
            .filter(|&&k| kind(k).diff().is_some())
            .map(|k| k.noun().to_owned())
            .collect();
        DiffError::Unsupported {
            run: base,
            kind: of_both,
            comparable: all_of(&nouns),
        }
    };
    let Some(runs) = kind(of_both).diff() else {
        return Err(unsupported());
    };
    let compared = (runs.compare)(store, base, new)?;
    Ok(RunDiff::new(base, new, of_both, runs.layout, compared))
}

/// What run `run_id` counts as its errors (`track runs --errors`): the calls that got no answer,
/// in the order they failed, then the answers its kind could not use (an unparsable review, a
/// judge's garbage verdict). Empty for a run that does not exist.
pub(crate) fn run_errors(store: &Store, run_id: i64) -> Result<Vec<RunErrorRow>, StoreError> {
    let run = store.existing_run(run_id)?;
    let mut errors = store.run_errors(run_id)?;
    if let Some(answer_errors) = kind(run.kind).answer_errors() {
        errors.extend(answer_errors(store, run_id)?);
    }
    Ok(errors)
}

/// The runs each kind that `offers` takes without `--run`, for `--help`: `the latest
/// benchmark, all reviews, the latest relevance run`.
pub(crate) fn default_runs_help(offers: impl Fn(&dyn Kind) -> bool) -> String {
    let words: Vec<String> = ExperimentKind::ALL
        .iter()
        .map(|&k| kind(k))
        .filter(|&k| offers(k))
        .map(|k| {
            let noun = k.report_noun();
            match k.default_runs() {
                RunSelector::Latest => format!("the latest {noun}"),
                RunSelector::All => format!("all {noun}s"),
                RunSelector::Id(id) => format!("{noun} {id}"),
            }
        })
        .collect();
    words.join(", ")
}

/// The one rule of the commands that read runs without `--run` (`query`, `report`, `export
/// csv`, `export parquet`), for their `--help`: `each kind's default runs, as every command
/// takes them: the latest benchmark, all reviews, …`.
pub(crate) fn default_rule_help() -> String {
    format!(
        "each kind's default runs, as query, report and export take them: {}",
        default_runs_help(|_| true)
    )
}

/// The runs of `kinds` that `which` keeps, named by kind: `bench runs 1, 2`, one entry a kind
/// that has some; what `track export` says on stderr it exported and left out.
pub(crate) fn runs_by_kind(
    store: &Store,
    kinds: &[ExperimentKind],
    which: impl Fn(i64) -> bool,
) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for &k in kinds {
        let all = match store.select_runs(k, RunSelector::All) {
            Ok(all) => all,
            Err(StoreError::NoSuchRun(_)) => continue,
            Err(e) => return Err(e),
        };
        let kept: Vec<String> = all
            .into_iter()
            .filter(|&id| which(id))
            .map(|id| id.to_string())
            .collect();
        match kept.as_slice() {
            [] => {}
            [one] => out.push(format!("{} run {one}", k.as_str())),
            many => out.push(format!("{} runs {}", k.as_str(), many.join(", "))),
        }
    }
    Ok(out)
}

/// Every kind's [`QueryFlag`]s of `track query`, in the order of [`groupings`], a name several
/// groupings declare once (as its first declaration): the flags `--help` lists.
pub(crate) fn query_flags() -> Vec<QueryFlag> {
    let mut flags: Vec<QueryFlag> = Vec::new();
    for (_, grouping) in groupings() {
        for flag in grouping.flags {
            if !flags.iter().any(|f| f.name == flag.name) {
                flags.push(*flag);
            }
        }
    }
    flags
}

/// Every kind's [`QueryOption`]s of `track query`, kind by kind in the order of
/// [`ExperimentKind::ALL`], a name several kinds declare once (as its first declaration).
pub(crate) fn query_options() -> Vec<QueryOption> {
    let mut options: Vec<QueryOption> = Vec::new();
    for &k in ExperimentKind::ALL {
        for option in kind(k).query_options() {
            if !options.iter().any(|o| o.name == option.name) {
                options.push(*option);
            }
        }
    }
    options
}

/// The `--by` values that the flag named `flag` goes with: `--by criterion`.
pub(crate) fn flag_homes(flag: &str) -> String {
    let homes: Vec<String> = groupings()
        .filter(|(_, g)| g.flags.iter().any(|f| f.name == flag))
        .map(|(_, g)| format!("--by {}", g.name))
        .collect();
    one_of(&homes)
}

/// `a`, `a or b`, `a, b or c`.
fn one_of(names: &[String]) -> String {
    listed(names, "or")
}

/// `a`, `a and b`, `a, b and c`.
fn all_of(names: &[String]) -> String {
    listed(names, "and")
}

/// `names` joined by commas, the last by `last_word`.
fn listed(names: &[String], last_word: &str) -> String {
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} {last_word} {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::diff::DiffCounts;

    #[test]
    fn files_name_the_kinds_that_have_them() {
        assert_eq!(of_file("models: [a:b]\n"), Ok(ExperimentKind::Bench));
        assert_eq!(
            of_file("kind: poetry\n").unwrap_err(),
            "unknown `kind: poetry`; use bench (the default), review, relevance or pairwise"
        );
        assert_eq!(reported_nouns(), "benchmark, review, relevance or pairwise");
    }

    #[test]
    fn every_grouping_has_one_name_and_its_flags_one_home() {
        // A name two kinds share (`human`) goes to the kind of the run chosen: unique per kind.
        let names: Vec<(&str, &str)> = groupings().map(|(k, g)| (k.as_str(), g.name)).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "{names:?}");
        let flags: Vec<&str> = query_flags().iter().map(|f| f.name).collect();
        assert_eq!(flags, ["agreement", "per-predicate"]);
        let options: Vec<&str> = query_options().iter().map(|o| o.name).collect();
        assert_eq!(options, ["reviewer"]);
        for flag in flags {
            let homes = groupings()
                .filter(|(_, g)| g.flags.iter().any(|f| f.name == flag))
                .count();
            assert_eq!(homes, 1, "{flag}");
        }
    }

    #[test]
    fn help_texts_are_written_from_the_entries() {
        assert_eq!(
            default_runs_help(|k| k.export_csv().is_some()),
            "the latest benchmark, all reviews, the latest relevance run, the latest pairwise run"
        );
        assert_eq!(flag_homes("agreement"), "--by criterion");
        assert_eq!(flag_homes("per-predicate"), "--by variant");
    }

    #[test]
    fn missing_and_mismatched_runs_are_named() {
        let store = Store::open_in_memory().unwrap();
        let bench = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        let review = store
            .create_run(crate::experiment::ExperimentKind::Review, None, None, "{}")
            .unwrap();
        let generate = store
            .create_run(
                crate::experiment::ExperimentKind::Generate,
                None,
                None,
                "{}",
            )
            .unwrap();
        let missing = diff(&store, bench, 42).unwrap_err();
        assert_eq!(
            missing.to_string(),
            format!(
                "no run 42 in this database; the latest are run {generate} (generate), run \
                 {review} (review), run {bench} (bench): `track runs` lists them all"
            )
        );
        assert_eq!(
            store
                .select_runs(ExperimentKind::Bench, RunSelector::Id(review))
                .unwrap_err()
                .to_string(),
            format!("run {review} is a review run, not a bench run; `track runs` lists the runs")
        );
        let empty = Store::open_in_memory().unwrap();
        assert_eq!(
            empty.no_run(7).to_string(),
            "no run 7 in this database; it has no run yet: `track run FILE.yaml` records one"
        );
        let mismatch = diff(&store, bench, review).unwrap_err();
        assert_eq!(
            mismatch.to_string(),
            format!(
                "run {bench} is a benchmark run and run {review} a review run: only runs of \
                 the same kind can be compared"
            )
        );
        let unsupported = diff(&store, generate, generate).unwrap_err();
        assert_eq!(
            unsupported.to_string(),
            format!(
                "run {generate} is a generation run: track diff compares benchmark, review, \
                 relevance and pairwise runs"
            )
        );
        let empty = diff(&store, bench, bench).unwrap();
        assert_eq!(empty.counts, DiffCounts::default());
        assert_eq!(
            empty.headline(),
            format!(
                "run {bench} → run {bench} (benchmark): 0 items shared, 0 regressions, 0 fixes, \
                 0 new errors; 0 only in run {bench}, 0 only in run {bench}"
            )
        );
    }
}
