//! The format of an output command (`--format table|csv|json|markdown`) and printing a frame to
//! stdout in it; what each format looks like is in its own file.

use std::io::Write;

use polars::prelude::DataFrame;

use super::{Columns, terminal_width, write_csv, write_json_pretty, write_markdown, write_render};

/// Output formats of `track query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    #[default]
    Table,
    Csv,
    Json,
    /// GitHub-flavoured Markdown tables, for a CI job's step summary and pull-request
    /// comments: the table's columns and cells.
    Markdown,
}

impl Format {
    /// Whether this format is read by people (a terminal table, Markdown): it shows the main
    /// columns and the notes a table has; CSV and JSON are read by programs.
    pub(crate) fn for_people(self) -> bool {
        matches!(self, Self::Table | Self::Markdown)
    }
}

/// Prints `df` to stdout in `format` (a table and Markdown show `columns`; CSV and JSON, all).
pub(crate) fn print_frame(df: &DataFrame, format: Format, columns: Columns) -> anyhow::Result<()> {
    // Buffered: stdout alone writes at every line, and JSON is written in small pieces.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match format {
        Format::Table => {
            // Written as it is drawn, not kept.
            write_render(df, terminal_width(), columns, &mut out)?;
            writeln!(out)?;
        }
        Format::Csv => write_csv(df, &mut out)?,
        Format::Json => {
            // As an io::Error, a closed pipe is known as one.
            write_json_pretty(df, &mut out).map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
        Format::Markdown => write_markdown(df, columns, &mut out)?,
    }
    out.flush()?;
    Ok(())
}
