//! Output: frames as terminal tables (comfy-table), CSV (polars) and JSON, with a stable
//! column schema, and the number formatting they share; table rows as Parquet files
//! (`parquet`). Results go to stdout; nothing here
//! decides what to show. One file per concept, re-exported here so callers write
//! `crate::output::render`.

mod cell;
pub(crate) mod columns;
mod csv;
mod excerpt;
mod fit;
mod format;
mod json;
mod markdown;
mod numbers;
pub mod parquet;
mod pipe;
mod progress;
mod table;

pub(crate) use cell::format_value;
pub use columns::Columns;
pub(crate) use columns::header;
pub(crate) use csv::{write_csv, write_csv_file, write_csv_file_in_slices};
pub use excerpt::{ANSWER_START_BYTES, ANSWER_START_CHARS, answer_start, reason_line};
pub(crate) use fit::fit_line;
pub use format::Format;
pub(crate) use format::print_frame;
#[cfg(test)]
pub(crate) use json::to_json;
pub(crate) use json::write_json_pretty;
pub(crate) use markdown::{cell as markdown_cell, write_markdown};
pub use numbers::{count, counted, dollars};
pub(crate) use numbers::{thousands, tidy_float, usd_text};
pub use pipe::{is_closed_pipe, is_quiet, note, say, set_quiet, tell};
pub(crate) use progress::progress_bar;
pub use table::{render, table};
pub(crate) use table::{terminal_width, write_render};

/// Readies polars on a thread of its own, for a report that comes later: the first column of
/// nulls polars makes (a summary's unknown energy, a model with no success rate) zeroes the
/// 8 MiB buffer all of them share, page by page, about 6 ms on the reference machine. A run
/// does it while it waits for answers instead of before its report.
pub(crate) fn prepare_in_background() {
    let _ = std::thread::Builder::new()
        .name("track-warm".into())
        .spawn(|| {
            use polars::prelude::{ChunkFullNull, Float64Chunked, PlSmallStr};
            drop(Float64Chunked::full_null(PlSmallStr::EMPTY, 1));
        });
}
