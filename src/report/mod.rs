//! `track report`: one self-contained HTML file of the selected runs, with charts drawn as
//! inline SVG on this side. No script, font, stylesheet or image is fetched: the file opens
//! from disk in any browser, prints, and survives being sent by email.
//!
//! The numbers come from the same polars summaries as `track query` and are printed by the
//! same function as its tables, so the two agree to the last digit.
//!
//! A report is a header (the runs, their status and totals) and [`Section`]s: with `--run
//! BASE,NEW` (two runs of one kind), first their comparison, as `track diff` makes it; then one
//! per kind of experiment in the selection. The sections come from the kinds, through the
//! registry (`crate::kinds`); this module holds the document and its primitives.

pub mod charts;
pub mod columns;
mod comparison;
mod header;
pub mod html;
mod selection;
pub mod svg;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use polars::prelude::PolarsError;

pub use header::Energy;
pub use selection::{RunChoice, SelectedRun, Selection};

use crate::kinds;
use crate::store::{Store, StoreError};
use html::escape;

/// What stops a report from being made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A summary could not be computed.
    #[error("cannot summarise the results: {0}")]
    Summary(#[from] PolarsError),
    /// The benchmark measures could not be read.
    #[error("cannot read the benchmark results: {0:#}")]
    Measures(anyhow::Error),
    /// Two runs that cannot be compared.
    #[error(transparent)]
    Comparison(#[from] crate::analysis::diff::DiffError),
    /// A run id that names no run.
    #[error("no run {0} in this database; `track runs` lists them")]
    NoSuchRun(i64),
    /// Nothing to report on.
    #[error(
        "the database {} has no {what} yet: run an experiment first (`track run FILE.yaml`), \
         or pick runs with --run (`track runs` lists them)",
        path.display()
    )]
    Empty { path: PathBuf, what: String },
    /// A section read a column its summary does not have: a chart would have been drawn
    /// empty.
    #[error("the report's {table} has no column `{column}` to read (a bug in track)")]
    MissingColumn { column: String, table: String },
}

/// One part of the report after its header: a kind's results, or a comparison.
pub trait Section {
    /// The `id` of the section's element (`bench`): the contents link to it.
    fn anchor(&self) -> &'static str;
    /// The heading shown above it and listed in the contents.
    fn heading(&self) -> String;
    /// Its HTML, without the heading; an error when a summary it draws lacks a column it
    /// reads ([`ReportError::MissingColumn`]): a chart is never drawn empty in its place.
    fn body(&self) -> Result<String, ReportError>;
}

/// What a kind adds to a report: its section, and the energy its runs used (for the header).
pub struct ReportPart {
    /// Placed after the comparison, kind by kind in the order of `ExperimentKind::ALL`.
    pub section: Box<dyn Section>,
    /// `None` when the kind estimates no energy.
    pub energy: Option<Energy>,
}

/// A report ready to be written: the header and the sections, in order, drawn.
pub struct Report {
    header: header::Header,
    sections: Vec<Drawn>,
}

/// A section drawn: what the document needs of it.
struct Drawn {
    anchor: &'static str,
    heading: String,
    body: String,
}

impl Drawn {
    /// Draws `section`; a column it reads that its frame lacks is an error, not an empty chart.
    fn draw(section: &dyn Section) -> Result<Self, ReportError> {
        Ok(Self {
            anchor: section.anchor(),
            heading: section.heading(),
            body: section.body()?,
        })
    }
}

/// Builds the report of the runs `choice` names in the database at `db`.
pub(crate) fn build(store: &Store, db: &Path, choice: &RunChoice) -> Result<Report, ReportError> {
    let selection = Selection::resolve(store, db, choice)?;
    let mut sections = comparison_sections(store, &selection)?;
    let mut energy = None;
    for kind in kinds::reported() {
        let Some(load) = kinds::kind(kind).section() else {
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
    let sections = sections
        .iter()
        .map(|section| Drawn::draw(section.as_ref()))
        .collect::<Result<_, _>>()?;
    Ok(Report {
        header: header::Header::new(selection, energy, db),
        sections,
    })
}

/// The sections that compare two runs of one kind, placed before the per-kind sections:
/// `track report --run BASE,NEW` shows what `track diff BASE NEW` shows.
pub(crate) fn comparison_sections(
    store: &Store,
    selection: &Selection,
) -> Result<Vec<Box<dyn Section>>, ReportError> {
    let Some((base, new)) = selection.comparison() else {
        return Ok(Vec::new());
    };
    let section = comparison::ComparisonSection::load(store, base.info.id, new.info.id)?;
    Ok(vec![Box::new(section)])
}

/// The stylesheet: light and dark themes, print, and the charts' colours.
const STYLE: &str = include_str!("report.css");

impl Report {
    /// The whole document: one HTML file with its style and charts inline.
    pub(crate) fn to_html(&self) -> String {
        let mut out = String::with_capacity(64 * 1024);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\
             <meta name=\"color-scheme\" content=\"light dark\"/>\
             <meta name=\"generator\" content=\"track {}\"/><title>{}</title><style>{STYLE}</style>\
             </head><body>",
            env!("CARGO_PKG_VERSION"),
            escape(&self.header.title())
        );
        out.push_str(&self.header.html());
        out.push_str("<nav aria-label=\"Contents\"><ol>");
        for section in &self.sections {
            let _ = write!(
                out,
                "<li><a href=\"#{}\">{}</a></li>",
                section.anchor,
                escape(&section.heading)
            );
        }
        out.push_str("</ol></nav><main>");
        for section in &self.sections {
            let anchor = section.anchor;
            let _ = write!(
                out,
                "<section id=\"{anchor}\" aria-labelledby=\"{anchor}-heading\">\
                 <h2 id=\"{anchor}-heading\">{}</h2>{}</section>",
                escape(&section.heading),
                section.body
            );
        }
        let _ = writeln!(
            out,
            "</main><footer><p>Written by track {} on {}. Every number is computed as \
             <code>track query</code> computes it and printed as its tables print it.</p>\
             </footer></body></html>",
            env!("CARGO_PKG_VERSION"),
            escape(&crate::store::now_rfc3339())
        );
        out
    }
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
}
