//! Frames as GitHub-flavoured Markdown tables (`--format markdown`), for a CI job's step
//! summary (`$GITHUB_STEP_SUMMARY`) and pull-request comments: the columns and headers of a
//! terminal table (compact, or every one with `--wide`) under their full headers (a page has
//! room for them), each cell's text as the terminal shows it ([`format_value`]), numbers
//! aligned right. A cell's `|` is escaped and its line
//! breaks become `<br>`, so no value can break the table; `<` and `&` are written as entities,
//! so an answer's text is shown, never read as HTML.

use std::io::{self, Write};

use polars::prelude::{AnyValue, DataFrame};

use super::{Columns, format_value, header};

/// Writes `df` to `out` as a Markdown table of the columns `columns` shows, followed by a
/// blank line. A frame without rows is its header and `(no rows)`.
pub(crate) fn write_markdown(
    df: &DataFrame,
    columns: Columns,
    out: &mut impl Write,
) -> io::Result<()> {
    let shown: Vec<_> = df
        .columns()
        .iter()
        .filter(|c| columns.shows(c.name()))
        .collect();
    if shown.is_empty() {
        return writeln!(out, "(no columns)\n");
    }
    let headers: Vec<String> = shown.iter().map(|c| cell(&header(c.name()))).collect();
    writeln!(out, "| {} |", headers.join(" | "))?;
    let rules: Vec<&str> = shown
        .iter()
        .map(|c| {
            if c.dtype().is_primitive_numeric() {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    writeln!(out, "|{}|", rules.join("|"))?;
    for row in 0..df.height() {
        let cells: Vec<String> = shown
            .iter()
            .map(|c| {
                let value = c.get(row).unwrap_or(AnyValue::Null);
                cell(&format_value(c.name(), &value))
            })
            .collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    if df.height() == 0 {
        writeln!(out, "\n(no rows)")?;
    }
    writeln!(out)
}

/// `text` made safe inside a Markdown table cell: `|` escaped, `&` and `<` as entities, line
/// breaks as `<br>`, spaces around trimmed.
pub(crate) fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.trim().lines().peekable();
    while let Some(line) = lines.next() {
        for c in line.chars() {
            match c {
                '|' => out.push_str("\\|"),
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                c => out.push(c),
            }
        }
        if lines.peek().is_some() {
            out.push_str("<br>");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::Column;

    fn markdown(df: &DataFrame, columns: Columns) -> String {
        let mut out = Vec::new();
        write_markdown(df, columns, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_frame_is_a_table_with_its_numbers_aligned_right_and_formatted_as_on_a_terminal() {
        let df = DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["openai:gpt-4o", "a|b\nc <d> & e"]),
            Column::new("success_pct".into(), [Some(75.0), None]),
            Column::new("success_low_pct".into(), [Some(30.0), None]),
        ])
        .unwrap();
        assert_eq!(
            markdown(&df, Columns::Compact),
            "| model | success % |\n\
             |---|---:|\n\
             | openai:gpt-4o | 75.0 |\n\
             | a\\|b<br>c &lt;d> &amp; e | – |\n\n"
        );
        // --wide: every column, under its full header.
        let wide = markdown(&df, Columns::Wide);
        assert!(
            wide.starts_with("| model | success % | success low % |\n|---|---:|---:|\n"),
            "{wide}"
        );
    }

    #[test]
    fn an_empty_frame_says_so_under_its_header() {
        let df =
            DataFrame::new_infer_height(vec![Column::new("model".into(), Vec::<String>::new())])
                .unwrap();
        assert_eq!(
            markdown(&df, Columns::Compact),
            "| model |\n|---|\n\n(no rows)\n\n"
        );
    }
}
