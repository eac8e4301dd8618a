//! Frames as terminal tables (comfy-table) that fit the terminal's width, printed in parts
//! when too wide; which columns and headers is `columns.rs`, cell text is `cell.rs`.

use std::convert::Infallible;
use std::io::{self, Write};
use std::ops::Range;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width};
use polars::prelude::*;
use unicode_width::UnicodeWidthStr;

use super::{Columns, format_value};

/// The width terminal tables must fit: `COLUMNS` when set, else the terminal's when stdout is
/// one; `None` (no limit) for a pipe or a file.
pub(crate) fn terminal_width() -> Option<usize> {
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

/// A frame as terminal text no wider than `width`: a table too wide is printed in parts of as
/// many columns as fit, each part repeating the key columns (the first column, and the second
/// too when both are text: model and prompt); long text cells are wrapped where their column
/// allows, or cut with `…` when even a part of their own cannot hold them; numbers are never
/// touched. A table of one row too wide becomes a vertical `key: value` list (`fit.rs`).
pub(crate) fn render_width(df: &DataFrame, width: Option<usize>, columns: Columns) -> String {
    let mut text = String::new();
    let rendered: Result<(), Infallible> = render_into(df, width, columns, &mut |piece| {
        text.push_str(piece);
        Ok(())
    });
    match rendered {
        Ok(()) => text,
    }
}

/// Writes the text of [`render_width`] to `out` as it is drawn: a table of 50,000 rows is never
/// all in memory, not even as text.
pub(crate) fn write_render(
    df: &DataFrame,
    width: Option<usize>,
    columns: Columns,
    out: &mut impl Write,
) -> io::Result<()> {
    render_into(df, width, columns, &mut |piece| {
        out.write_all(piece.as_bytes())
    })
}

/// Gives the text of [`render_width`] to `emit`, piece by piece. Whether a table fits, and how
/// many columns a part has, is measured by drawing it without keeping its text.
fn render_into<E>(
    df: &DataFrame,
    width: Option<usize>,
    columns: Columns,
    emit: &mut impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let names: Vec<PlSmallStr> = df
        .get_column_names()
        .into_iter()
        .filter(|n| columns.shows(n))
        .cloned()
        .collect();
    let shown = df.select(names).unwrap_or_else(|_| df.clone());
    let df = &shown;
    let Some(width) = width.filter(|&w| widest_drawn(df, columns) > w) else {
        return draw_table(df, columns, emit);
    };
    if df.height() == 1 {
        // A summary of one row reads better as a list than split into parts.
        return emit(&super::fit::vertical_text(df, columns, width));
    }
    let parts = super::fit::parts(df, columns, width);
    if let [(whole, headers)] = parts.as_slice() {
        return draw_headed(whole, headers, emit);
    }
    let count = parts.len();
    for (i, (part, headers)) in parts.iter().enumerate() {
        if i > 0 {
            emit("\n")?;
        }
        emit(&format!("(part {} of {count})\n", i + 1))?;
        draw_headed(part, headers, emit)?;
    }
    Ok(())
}

/// The widest line of the table of `df`, in characters, as [`widest_line`] counts them in its
/// text: measured as it is drawn.
fn widest_drawn(df: &DataFrame, columns: Columns) -> usize {
    let mut widest = WidestLine::default();
    let drawn: Result<(), Infallible> = draw_table(df, columns, &mut |piece| {
        widest.add(piece);
        Ok(())
    });
    match drawn {
        Ok(()) => widest.finish(),
    }
}

/// [`widest_line`] of a text given in pieces.
#[derive(Default)]
struct WidestLine {
    widest: usize,
    /// Characters of the line so far, and whether the last one is a carriage return (a line
    /// ending in `\r\n` ends before it).
    line: usize,
    after_cr: bool,
}

impl WidestLine {
    fn add(&mut self, piece: &str) {
        for c in piece.chars() {
            if c == '\n' {
                self.widest = self.widest.max(self.line - usize::from(self.after_cr));
                self.line = 0;
                self.after_cr = false;
            } else {
                self.line += 1;
                self.after_cr = c == '\r';
            }
        }
    }

    fn finish(self) -> usize {
        self.widest.max(self.line)
    }
}

/// The widest line of `text`, in characters (the table's box drawing is one column each).
#[cfg(test)]
fn widest_line(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Rows of a table laid out at once: a longer table is laid out in blocks of as many rows.
const BLOCK_ROWS: usize = 2_048;

/// The text of [`table`]`(df, columns)`: see [`draw_table`].
#[cfg(test)]
fn table_text(df: &DataFrame, columns: Columns) -> String {
    let mut text = String::new();
    let drawn: Result<(), Infallible> = draw_table(df, columns, &mut |piece| {
        text.push_str(piece);
        Ok(())
    });
    match drawn {
        Ok(()) => text,
    }
}

/// Gives the text of [`table`]`(df, columns)` to `emit`, piece by piece, laid out in blocks of
/// [`BLOCK_ROWS`] rows, each with the column widths of the whole table, so that the cells of a
/// long table are never all in memory (the 50,000 prompts of `track query --by prompt` made
/// 1.3 million cells, about 200 MB). The text is the same: a block after the first is drawn
/// without the header, and the blocks are joined where their borders would be.
fn draw_table<E>(
    df: &DataFrame,
    columns: Columns,
    emit: &mut impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let df = &shown_columns(df, columns);
    draw_headed(df, &headers(df, columns), emit)
}

/// The headers of `df`'s columns, as `columns` names them.
fn headers(df: &DataFrame, columns: Columns) -> Vec<String> {
    df.get_column_names()
        .iter()
        .map(|n| columns.header(n))
        .collect()
}

/// [`draw_table`] of `df`, all of whose columns are shown, under `headers` (one a column).
fn draw_headed<E>(
    df: &DataFrame,
    headers: &[String],
    emit: &mut impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let blocks: Vec<Range<usize>> = (0..df.height())
        .step_by(BLOCK_ROWS)
        .map(|start| start..(start + BLOCK_ROWS).min(df.height()))
        .collect();
    if blocks.len() <= 1 {
        return emit(&rows_table(df, 0..df.height(), Some(headers)).to_string());
    }
    // The widest content of each column, its header included, as comfy-table measures it: its
    // widest line in terminal columns, one at least.
    let widths = df.columns().iter().zip(headers).map(|(c, header)| {
        let header = content_width(header);
        (0..df.height())
            .map(|row| {
                content_width(&format_value(
                    c.name(),
                    &c.get(row).unwrap_or(AnyValue::Null),
                ))
            })
            .fold(header, usize::max)
            .max(1)
    });
    // Each column's width with its padding of one space each side; beyond what comfy-table can
    // set, the whole table at once.
    let Some(fixed) = widths
        .map(|w| u16::try_from(w + 2).ok())
        .collect::<Option<Vec<u16>>>()
    else {
        return emit(&rows_table(df, 0..df.height(), Some(headers)).to_string());
    };
    let mut first = true;
    for (i, block) in blocks.iter().enumerate() {
        let mut part = rows_table(df, block.clone(), (i == 0).then_some(headers));
        for (column, width) in part.column_iter_mut().zip(&fixed) {
            column.set_constraint(ColumnConstraint::Absolute(Width::Fixed(*width)));
        }
        let drawn: Vec<String> = part.lines().collect();
        // The top border only before the first block, the bottom border only after the last.
        let top = usize::from(i > 0);
        let end = drawn
            .len()
            .saturating_sub(usize::from(i + 1 < blocks.len()));
        for line in drawn.get(top..end).unwrap_or_default() {
            if !first {
                emit("\n")?;
            }
            emit(line)?;
            first = false;
        }
    }
    Ok(())
}

/// The width comfy-table gives a cell's text: its widest line, in terminal columns.
fn content_width(text: &str) -> usize {
    text.split('\n')
        .map(UnicodeWidthStr::width)
        .max()
        .unwrap_or(0)
}

/// The columns of `df` that `columns` shows.
fn shown_columns(df: &DataFrame, columns: Columns) -> DataFrame {
    let shown: Vec<PlSmallStr> = df
        .get_column_names()
        .into_iter()
        .filter(|n| columns.shows(n))
        .cloned()
        .collect();
    if shown.len() < df.width() {
        df.select(shown).unwrap_or_else(|_| df.clone())
    } else {
        df.clone()
    }
}

/// Renders the columns of a frame `columns` shows as a terminal table, formatting numbers by
/// what their column holds.
pub fn table(df: &DataFrame, columns: Columns) -> Table {
    let df = shown_columns(df, columns);
    rows_table(&df, 0..df.height(), Some(&headers(&df, columns)))
}

/// The terminal table of `rows` of `df` (all of whose columns are shown), under `headers` or
/// without a header.
fn rows_table(df: &DataFrame, rows: Range<usize>, headers: Option<&[String]>) -> Table {
    let mut table = Table::new();
    // Cells are never wrapped (a number split over lines misleads); a table wider than the
    // terminal is printed in parts by `render`.
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    if let Some(headers) = headers {
        table.set_header(headers);
    }
    for row in rows {
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

    #[test]
    fn long_tables_drawn_in_blocks_as_at_once() {
        // Widths that only a late block reaches, a cell over two lines, wide characters, nulls.
        let n = BLOCK_ROWS * 2 + 5;
        let names: Vec<String> = (0..n)
            .map(|i| match i {
                7 => "two\nlines".to_owned(),
                9 => "プロンプト".to_owned(),
                _ if i == n - 1 => "the longest prompt name of all".to_owned(),
                _ => format!("p{i}"),
            })
            .collect();
        let pct: Vec<Option<f64>> = (0..n)
            .map(|i| (i % 7 != 0).then_some(i as f64 / 3.0))
            .collect();
        let cost: Vec<f64> = (0..n).map(|i| i as f64 * 1e-3).collect();
        let df = DataFrame::new_infer_height(vec![
            Column::new("prompt".into(), names),
            Column::new("success_pct".into(), pct),
            Column::new("total_cost_usd".into(), cost),
            Column::new("results".into(), (0..n as u64).collect::<Vec<_>>()),
        ])
        .unwrap();
        for columns in [Columns::Compact, Columns::Wide] {
            let whole = table(&df, columns).to_string();
            assert_eq!(table_text(&df, columns), whole);
            assert_eq!(render_width(&df, None, columns), whole);
            let mut written = Vec::new();
            write_render(&df, None, columns, &mut written).unwrap();
            assert_eq!(String::from_utf8(written).unwrap(), whole);
        }
        for width in [20, 40, 60, 100, 1000] {
            let parts = render_width(&df, Some(width), Columns::Wide);
            if width >= 100 {
                assert_eq!(parts, render_at_once(&df, Some(width), Columns::Wide));
            } else if width == 60 {
                // Parts as before, but a header of several words may take two lines.
                assert!(
                    widest_line(&parts) <= width,
                    "{width}: {}",
                    widest_line(&parts)
                );
                assert!(parts.contains("the longest prompt name of all"));
            } else if width == 40 {
                // Narrower than the key column and one other: the key is cut to fit (at 20,
                // a word of a header beside the cut key cannot: words and numbers are whole).
                assert!(
                    widest_line(&parts) <= width,
                    "{width}: {}",
                    widest_line(&parts)
                );
                assert!(parts.contains("the l") && parts.contains('…'), "{width}");
            }
            let mut written = Vec::new();
            write_render(&df, Some(width), Columns::Wide, &mut written).unwrap();
            assert_eq!(String::from_utf8(written).unwrap(), parts);
            assert_eq!(parts.starts_with("(part 1 of "), width < 100, "{width}");
        }
    }

    /// [`render_width`] as it was before tables were drawn in blocks: each table at once.
    fn render_at_once(df: &DataFrame, width: Option<usize>, columns: Columns) -> String {
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

    #[test]
    fn widest_lines_counted_in_pieces_as_in_the_whole() {
        for text in [
            "",
            "ab",
            "a\nabc\n",
            "abc\r\nab",
            "ab\r",
            "a\r\n\r\nabcd\r",
            "é\nxy",
        ] {
            for cut in 0..=text.len() {
                let Some((head, tail)) = text.split_at_checked(cut) else {
                    continue;
                };
                let mut widest = WidestLine::default();
                widest.add(head);
                widest.add(tail);
                assert_eq!(widest.finish(), widest_line(text), "{text:?}");
            }
        }
    }
}
