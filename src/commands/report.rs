//! `track report`: one self-contained HTML file of the selected runs, charts inline. The
//! command chooses the runs (`--run`) and assembles the report: the comparison of two runs,
//! then each kind's section, asked of the kind through the registry and handed to `report`,
//! which names no kind.

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;

use super::registry;
use super::{Context, shown};
use crate::experiment::observed_status;
use crate::report::{
    ComparisonSection, Energy, Report, ReportError, Section, SelectedRun, Selection,
};
use crate::store::{RunSelector, Store, StoreError};

/// Write one self-contained HTML report with charts.
///
/// Write one self-contained HTML report with charts (no server, no network: it opens from
/// disk and can be sent by email), e.g. `track report --run all --out report.html`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    // Its help names each kind's default, from the registry.
    #[arg(long, value_name = "ID|latest|all|ID,ID…", help = run_help())]
    run: Option<RunChoice>,
    /// The HTML file to write; `-` writes to stdout.
    #[arg(long, default_value = "report.html", value_name = "FILE")]
    out: PathBuf,
}

/// `--run`'s help, with the rule every command that reads runs follows without it.
fn run_help() -> String {
    format!(
        "Which runs: a run id, several (`3,5`), `latest` (the newest of each kind) or `all` \
         [default: {}]",
        registry::default_rule_help()
    )
}

/// Builds the report of the selected runs and writes it to `--out` (its path on stdout), or to
/// stdout with `--out -`.
pub(crate) fn run(context: &Context, args: ReportArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let report = build(&store, &context.db, &args.run.unwrap_or_default())?;
    let html = report.to_html();
    if args.out.as_os_str() == "-" {
        write_stdout(html.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::write(&args.out, &html)
        .map_err(|e| anyhow::anyhow!("cannot write the report to {}: {e}", shown(&args.out)))?;
    crate::output::say(format_args!("{}", shown(&args.out)));
    context.note(format!(
        "{} KB; open it in any browser",
        html.len().div_ceil(1024)
    ));
    Ok(ExitCode::SUCCESS)
}

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

/// The runs `choice` names in `store` (whose file is `db`, for run locks), each with the
/// status it has now. An id that names no run is an error, and so is a selection with no run
/// at all.
fn select(store: &Store, db: &Path, choice: &RunChoice) -> Result<Selection, ReportError> {
    let ids = match choice {
        RunChoice::Ids(named) => named_runs(store, named)?,
        RunChoice::Default | RunChoice::Latest | RunChoice::All => default_runs(store, choice)?,
    };
    let infos = store.runs_by_id(&ids)?;
    if let Some(missing) = ids.iter().find(|id| !infos.iter().any(|r| r.id == **id)) {
        return Err(store.no_run(*missing).into());
    }
    if infos.is_empty() {
        return Err(ReportError::Empty {
            path: db.to_path_buf(),
            what: format!("{} run", registry::reported_nouns()),
        });
    }
    let mut runs: Vec<SelectedRun> = infos
        .into_iter()
        .map(|info| SelectedRun {
            status: observed_status(db, info.id, info.status),
            noun: registry::kind(info.kind).report_noun(),
            info,
        })
        .collect();
    runs.sort_by_key(|r| r.info.id);
    Ok(Selection {
        runs,
        named: matches!(choice, RunChoice::Ids(_)),
    })
}

/// The runs named by id, once each; a shard merged into its plan's run is that run.
fn named_runs(store: &Store, named: &[i64]) -> Result<Vec<i64>, ReportError> {
    let mut ids = Vec::new();
    for &id in named {
        let id = store.merged_run_of(id)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// The runs of every kind that has a report section that `choice` (not ids) takes: each
/// kind's default runs, its latest, or all of them.
fn default_runs(store: &Store, choice: &RunChoice) -> Result<Vec<i64>, ReportError> {
    let mut ids = Vec::new();
    for kind in registry::reported() {
        let selector = match choice {
            RunChoice::All => RunSelector::All,
            RunChoice::Default => registry::kind(kind).default_runs(),
            RunChoice::Latest | RunChoice::Ids(_) => RunSelector::Latest,
        };
        match store.select_runs(kind, selector) {
            Ok(found) => ids.extend(found),
            Err(StoreError::NoSuchRun(_)) => {}
            Err(other) => return Err(other.into()),
        }
    }
    Ok(ids)
}

/// Builds the report of the runs `choice` names in the database at `db`: with `--run
/// BASE,NEW`, their comparison first (what `track diff BASE NEW` shows), then each kind's
/// section, in the order of `ExperimentKind::ALL`, and the energy of them all.
fn build(store: &Store, db: &Path, choice: &RunChoice) -> Result<Report, ReportError> {
    let selection = select(store, db, choice)?;
    let mut sections: Vec<Box<dyn Section>> = Vec::new();
    if let Some((base, new)) = selection.comparison() {
        let diff = registry::diff(store, base.info.id, new.info.id)?;
        sections.push(Box::new(ComparisonSection::new(diff)?));
    }
    let mut energy = None;
    for kind in registry::reported() {
        let Some(load) = registry::kind(kind).section() else {
            continue;
        };
        let runs = selection.ids_of(kind);
        if runs.is_empty() {
            continue;
        }
        let part = load(store, &runs)?;
        energy = Energy::total(energy, part.energy);
        sections.push(part.section);
    }
    Report::new(selection, energy, db, &sections)
}

/// Writes the report to stdout. A pipe its reader closed (`track report --out - | head`) ends
/// the command quietly with status 0, as for every command: the reader took what it wanted,
/// as with any Unix tool; the error keeps its `io::Error` so `main` knows it for one.
fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .context("cannot write the report to stdout")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BenchResultRow, RunStatus};

    const HOSTILE: &str = "</script><img src=x onerror=alert(1)>";

    fn result(run_id: i64, prompt: u32, passed: Option<bool>) -> BenchResultRow {
        BenchResultRow {
            run_id,
            model_index: 0,
            prompt_index: prompt,
            repeat_index: 0,
            model_ref: format!("openai:{HOSTILE}"),
            provider: "openai".into(),
            model_id: "m".into(),
            prompt_name: format!("{HOSTILE}{prompt}"),
            method: "exact".into(),
            call_id: None,
            cache_hit: false,
            outcome: passed.map_or(crate::store::Outcome::Error, crate::store::Outcome::of_test),
            detail: Some(format!("expected `4`, got `{HOSTILE}`")),
            latency_ms: Some(100.0 + f64::from(prompt)),
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
    fn a_report_of_hostile_names_is_well_formed_and_inert() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(
                crate::experiment::ExperimentKind::Bench,
                Some(HOSTILE),
                None,
                "{}",
            )
            .unwrap();
        let rows: Vec<BenchResultRow> = (0..3)
            .map(|p| result(run, p, [Some(true), Some(false), None][p as usize]))
            .collect();
        store.insert_bench_results(&rows).unwrap();
        store.finish_run(run, RunStatus::Completed).unwrap();
        let report = build(&store, Path::new("memory.db"), &RunChoice::All).unwrap();
        let html = report.to_html();
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let doc = roxmltree::Document::parse_with_options(&html, options).unwrap();
        for node in doc.descendants() {
            assert!(
                !matches!(node.tag_name().name(), "script" | "img"),
                "{html}"
            );
            assert!(node.attributes().all(|a| !a.name().starts_with("on")));
        }
        let text: String = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(
            text.contains(&format!("{HOSTILE}1")),
            "names are kept, as text"
        );
        // The contents link to every section.
        let links: Vec<&str> = doc
            .descendants()
            .filter_map(|n| n.attribute("href"))
            .collect();
        assert_eq!(links, ["#bench"]);
        assert!(
            doc.descendants()
                .any(|n| n.attribute("id") == Some("bench"))
        );
    }

    #[test]
    fn a_run_without_results_says_so() {
        let store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(
                crate::experiment::ExperimentKind::Relevance,
                None,
                None,
                "{}",
            )
            .unwrap();
        store.finish_run(run, RunStatus::Completed).unwrap();
        let html = build(&store, Path::new("memory.db"), &RunChoice::Latest)
            .unwrap()
            .to_html();
        assert!(
            html.contains("These runs recorded no predictions yet."),
            "{html}"
        );
    }

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
        let empty = select(&store, &db, &RunChoice::Default).unwrap_err();
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
            let s = select(&store, &db, &choice).unwrap();
            s.runs.iter().map(|r| r.info.id).collect()
        };
        assert_eq!(ids(RunChoice::Default), [review_a, bench_new, review_b]);
        assert_eq!(ids(RunChoice::Latest), [bench_new, review_b]);
        assert_eq!(ids(RunChoice::All).len(), 4);
        assert_eq!(
            ids(RunChoice::Ids(vec![bench_new, bench_old])),
            [bench_old, bench_new]
        );
        let missing = select(&store, &db, &RunChoice::Ids(vec![99])).unwrap_err();
        assert!(
            missing.to_string().starts_with(&format!(
                "no run 99 in this database; the latest are run {review_b} (review)"
            )),
            "{missing}"
        );
        let s = select(&store, &db, &RunChoice::Ids(vec![bench_old])).unwrap();
        assert_eq!(
            s.runs[0].status,
            RunStatus::Abandoned,
            "no process holds it"
        );
        let pair = select(&store, &db, &RunChoice::Ids(vec![bench_old, bench_new])).unwrap();
        assert!(pair.comparison().is_some());
        let mixed = select(&store, &db, &RunChoice::Ids(vec![bench_old, review_a])).unwrap();
        assert!(mixed.comparison().is_none());
    }
}
