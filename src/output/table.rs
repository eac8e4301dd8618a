//! Frames as terminal tables (comfy-table) that fit the terminal's width, printed in parts
//! when too wide; which columns and headers is `columns.rs`, cell text is `cell.rs`.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use polars::prelude::*;

use super::{Columns, format_value};

/// The width terminal tables must fit: `COLUMNS` when set, else the terminal's when stdout is
/// one; `None` (no limit) for a pipe or a file.
pub fn terminal_width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c >= 20)
    {
        return Some(columns);
    }
    use std::io::IsTerminal as _;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    terminal_size::terminal_size().map(|(w, _)| usize::from(w.0))
}

/// A frame as terminal text that fits [`terminal_width`]: see [`render_width`].
pub fn render(df: &DataFrame, columns: Columns) -> String {
    render_width(df, terminal_width(), columns)
}

/// A frame as terminal text no wider than `width`: cells are never wrapped; a table too wide
/// is printed in parts of as many columns as fit, each part repeating the key columns (the
/// first column, and the second too when both are text: model and prompt).
pub fn render_width(df: &DataFrame, width: Option<usize>, columns: Columns) -> String {
    let names: Vec<PlSmallStr> = df
        .get_column_names()
        .into_iter()
        .filter(|n| columns.shows(n))
        .cloned()
        .collect();
    let shown = df.select(names.clone()).unwrap_or_else(|_| df.clone());
    let df = &shown;
    let whole = table(df, columns).to_string();
    let Some(width) = width.filter(|&w| widest_line(&whole) > w && df.width() > 2) else {
        return whole;
    };
    let is_text = |name: &PlSmallStr| {
        df.column(name)
            .is_ok_and(|c| matches!(c.dtype(), DataType::String))
    };
    let keys = if names.len() > 3 && is_text(&names[0]) && is_text(&names[1]) {
        2
    } else {
        1
    };
    let (key, rest) = names.split_at(keys.min(names.len()));
    let render_part = |part: &[PlSmallStr]| -> String {
        let mut selected = key.to_vec();
        selected.extend_from_slice(part);
        df.select(selected)
            .map(|d| table(&d, columns).to_string())
            .unwrap_or_default()
    };
    let mut parts: Vec<String> = Vec::new();
    let mut start = 0;
    while start < rest.len() {
        // The most columns from `start` on that fit (at least one: a cell is never cut).
        let mut end = start + 1;
        let mut text = render_part(&rest[start..end]);
        while end < rest.len() {
            let wider = render_part(&rest[start..=end]);
            if widest_line(&wider) > width {
                break;
            }
            text = wider;
            end += 1;
        }
        parts.push(text);
        start = end;
    }
    let count = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| format!("(part {} of {count})\n{part}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The widest line of `text`, in characters (the table's box drawing is one column each).
fn widest_line(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Renders the columns of a frame `columns` shows as a terminal table, formatting numbers by
/// what their column holds.
pub fn table(df: &DataFrame, columns: Columns) -> Table {
    let shown: Vec<PlSmallStr> = df
        .get_column_names()
        .into_iter()
        .filter(|n| columns.shows(n))
        .cloned()
        .collect();
    let selected;
    let df = if shown.len() < df.width() {
        selected = df.select(shown).unwrap_or_else(|_| df.clone());
        &selected
    } else {
        df
    };
    let mut table = Table::new();
    // Cells are never wrapped (a number split over lines misleads); a table wider than the
    // terminal is printed in parts by `render`.
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(df.get_column_names().iter().map(|n| columns.header(n)));
    for row in 0..df.height() {
        let cells = df.columns().iter().map(|c| {
            let value = c.get(row).unwrap_or(AnyValue::Null);
            let text = format_value(c.name(), &value);
            let cell = Cell::new(text);
            if c.dtype().is_primitive_numeric() {
                cell.set_alignment(CellAlignment::Right)
            } else {
                cell
            }
        });
        table.add_row(cells);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::header;

    fn frame() -> DataFrame {
        DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["a,b", "c\"d"]),
            Column::new("success_pct".into(), [Some(50.0), None]),
            Column::new("total_cost_usd".into(), [0.0123456789, 0.0]),
        ])
        .unwrap()
    }

    #[test]
    fn tables_format_cells_by_column() {
        assert_eq!(header("total_cost_usd"), "total cost ($)");
        assert_eq!(header("success_pct[openai:gpt-4o]"), "openai:gpt-4o %");
        assert_eq!(header("energy_wh_min"), "energy min (Wh)");
        assert_eq!(header("success_pct_all"), "success all %");
        assert_eq!(header("input_usd_per_mtok"), "input ($/Mtok)");
        assert_eq!(
            format_value("p_value", &AnyValue::Float64(0.000488)),
            "4.9e-4"
        );
        assert_eq!(format_value("p_value", &AnyValue::Float64(0.0312)), "0.031");
        let text = table(&frame(), Columns::Wide).to_string();
        assert!(
            text.contains("50.0") && text.contains("0.012346") && text.contains('–'),
            "{text}"
        );
    }
}
