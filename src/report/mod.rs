//! `track report`: one self-contained HTML file of the selected runs, with charts drawn as
//! inline SVG on this side. No script, font, stylesheet or image is fetched: the file opens
//! from disk in any browser, prints, and survives being sent by email.
//!
//! The numbers come from the same polars summaries as `track query` and are printed by the
//! same function as its tables, so the two agree to the last digit.
//!
//! A report is a header (the runs, their status and totals) and [`Section`]s: with `--run
//! BASE,NEW` (two runs of one kind), first their comparison, as `track diff` makes it; then one
//! per kind of experiment in the selection. This module holds the document and its
//! primitives, and names no kind: `commands/report.rs` chooses the runs, asks each kind for
//! its section through the registry and hands them in (`Report::new`).

pub mod charts;
pub mod columns;
pub mod comparison;
mod header;
pub mod html;
mod selection;
pub mod svg;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use polars::prelude::PolarsError;

pub use comparison::ComparisonSection;
pub use header::Energy;
pub use selection::{SelectedRun, Selection};

use crate::store::StoreError;
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

impl Report {
    /// The report of `selection`, read from the database at `db`: its header, with `energy`,
    /// the kinds' energy together, then `sections` in their order (a comparison first, then
    /// kind by kind), drawn. A column a section reads that its frame lacks is an error.
    pub(crate) fn new(
        selection: Selection,
        energy: Option<Energy>,
        db: &Path,
        sections: &[Box<dyn Section>],
    ) -> Result<Self, ReportError> {
        let sections = sections
            .iter()
            .map(|section| Drawn::draw(section.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            header: header::Header::new(selection, energy, db),
            sections,
        })
    }
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
