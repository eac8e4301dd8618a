//! The format of an output command (`--format table|csv|json`) and printing a frame to
//! stdout in it; what each format looks like is in its own file.

use std::io::Write;

use polars::prelude::DataFrame;

use super::{Columns, render, to_json, write_csv};

/// Output formats of `track query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    #[default]
    Table,
    Csv,
    Json,
}

/// Prints `df` to stdout in `format` (a table shows `columns`; CSV and JSON, all).
pub fn print_frame(df: &DataFrame, format: Format, columns: Columns) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match format {
        Format::Table => writeln!(out, "{}", render(df, columns))?,
        Format::Csv => write_csv(df, &mut out)?,
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &to_json(df))?;
            writeln!(out)?;
        }
    }
    Ok(())
}
