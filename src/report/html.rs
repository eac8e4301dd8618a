//! HTML text: escaping of anything that came from a user or a model, number cells formatted as
//! the terminal tables format them, and tables of polars frames.
//!
//! The markup is also well-formed XML (every element closed, attributes quoted, no named
//! entities), so a strict XML parser can read the report back.

use std::fmt::Write as _;

use polars::prelude::{AnyValue, DataFrame};

use crate::output::{format_value, header, thousands};

/// `text` safe inside an element or a quoted attribute: `& < > " '` become character
/// references, and control characters that neither HTML nor XML allows become U+FFFD.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A number as a terminal table prints a value of `column` (`success_pct`: one decimal).
pub(crate) fn number(column: &str, value: f64) -> String {
    format_value(column, &AnyValue::Float64(value))
}

/// An optional number as [`number`] prints it; `–` when absent.
pub(crate) fn maybe_number(column: &str, value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| number(column, v))
}

/// Options of [`frame_table`].
#[derive(Debug, Clone, Copy)]
pub struct TableOptions<'a> {
    /// The table's `id`, for links and tests.
    pub id: &'a str,
    /// What the table holds, shown above it.
    pub caption: &'a str,
    /// At most this many rows; a note says how many were left out.
    pub max_rows: usize,
}

/// Tables longer than this are folded under a summary line (their charts come first).
const FOLDED_ROWS: usize = 20;

/// `df` as an HTML table: headers and cells as the terminal table writes them (confidence
/// bounds included), numbers right-aligned, each cell tagged with its column's name. A long
/// table is folded in a `<details>` that opens on a click (and in print).
pub(crate) fn frame_table(df: &DataFrame, options: TableOptions<'_>) -> String {
    let table = table_of(df, options);
    if df.height().min(options.max_rows) <= FOLDED_ROWS {
        return table;
    }
    format!(
        "<details class=\"numbers\"><summary>{}: the numbers ({} rows)</summary>{table}</details>",
        escape(options.caption),
        thousands(df.height().min(options.max_rows) as u64)
    )
}

fn table_of(df: &DataFrame, options: TableOptions<'_>) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<div class=\"scroll\"><table id=\"{}\"><caption>{}</caption><thead><tr>",
        escape(options.id),
        escape(options.caption)
    );
    for name in df.get_column_names() {
        let _ = write!(
            out,
            "<th scope=\"col\" data-column=\"{}\">{}</th>",
            escape(name),
            escape(&header(name))
        );
    }
    out.push_str("</tr></thead><tbody>");
    let shown = df.height().min(options.max_rows);
    for row in 0..shown {
        out.push_str("<tr>");
        for (i, column) in df.columns().iter().enumerate() {
            let value = column.get(row).unwrap_or(AnyValue::Null);
            let text = format_value(column.name(), &value);
            let tag = if i == 0 { "th scope=\"row\"" } else { "td" };
            let class = if column.dtype().is_primitive_numeric() {
                " class=\"num\""
            } else {
                ""
            };
            let close = if i == 0 { "th" } else { "td" };
            let _ = write!(
                out,
                "<{tag}{class} data-column=\"{}\">{}</{close}>",
                escape(column.name()),
                escape(&text)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    if df.height() > shown {
        let _ = write!(
            out,
            "<p class=\"note\">The first {} of {} rows.</p>",
            thousands(shown as u64),
            thousands(df.height() as u64)
        );
    }
    out
}

/// A small table of text cells: a header row and rows, every cell escaped and tagged with its
/// header. The first cell of each row is its header.
pub(crate) fn text_table(
    id: &str,
    caption: &str,
    headers: &[&str],
    rows: &[Vec<String>],
) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<div class=\"scroll\"><table id=\"{}\"><caption>{}</caption><thead><tr>",
        escape(id),
        escape(caption)
    );
    for h in headers {
        let _ = write!(out, "<th scope=\"col\">{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let column = escape(headers.get(i).copied().unwrap_or_default());
            let (tag, class) = match (i, looks_numeric(cell)) {
                (0, _) => ("th scope=\"row\"", ""),
                (_, true) => ("td", " class=\"num\""),
                _ => ("td", ""),
            };
            let close = if i == 0 { "th" } else { "td" };
            let _ = write!(
                out,
                "<{tag}{class} data-column=\"{column}\">{}</{close}>",
                escape(cell)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// Whether a cell reads as a number (aligned right).
fn looks_numeric(cell: &str) -> bool {
    !cell.is_empty()
        && cell
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-' | '+' | '–' | '%' | ' '))
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn hostile_text_is_inert() {
        let hostile = "</script><img src=x onerror=alert('x')>&amp;\"\u{0}";
        let safe = escape(hostile);
        assert_eq!(
            safe,
            "&lt;/script&gt;&lt;img src=x onerror=alert(&#39;x&#39;)&gt;&amp;amp;&quot;\u{FFFD}"
        );
        assert!(!safe.contains('<') && !safe.contains('>'));
    }

    #[test]
    fn numbers_read_as_the_terminal_prints_them() {
        assert_eq!(number("success_pct", 66.666), "66.7");
        assert_eq!(number("total_cost_usd", 0.1), "0.100000");
        assert_eq!(maybe_number("success_pct", None), "–");
        assert_eq!(truncate("abcdef", 3), "abc…");
        assert_eq!(truncate("abc", 3), "abc");
    }

    #[test]
    fn frame_tables_are_well_formed_and_bounded() {
        let df = DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["<b>a</b>", "b", "c"]),
            Column::new("success_pct".into(), [Some(50.0), None, Some(1.0)]),
        ])
        .unwrap();
        let html = frame_table(
            &df,
            TableOptions {
                id: "t",
                caption: "Per model",
                max_rows: 2,
            },
        );
        let wrapped = format!("<body>{html}</body>");
        let doc = roxmltree::Document::parse(&wrapped).unwrap();
        let cells: Vec<&str> = doc
            .descendants()
            .filter(|n| n.attribute("data-column") == Some("success_pct"))
            .filter_map(|n| n.text())
            .collect();
        assert_eq!(cells, ["success %", "50.0", "–"]);
        assert!(html.contains("&lt;b&gt;a&lt;/b&gt;"));
        assert!(html.contains("The first 2 of 3 rows."));
    }

    #[test]
    fn long_tables_fold_under_a_summary() {
        let df = DataFrame::new_infer_height(vec![Column::new(
            "criterion".into(),
            (0..25).map(|i| format!("P{i}")).collect::<Vec<_>>(),
        )])
        .unwrap();
        let options = TableOptions {
            id: "t",
            caption: "Per criterion",
            max_rows: usize::MAX,
        };
        let folded = frame_table(&df, options);
        assert!(folded.starts_with(
            "<details class=\"numbers\"><summary>Per criterion: the numbers (25 rows)"
        ));
        roxmltree::Document::parse(&folded).unwrap();
        let short = frame_table(&df.head(Some(3)), options);
        assert!(short.starts_with("<div"));
    }

    #[test]
    fn text_tables_align_numbers() {
        let html = text_table("x", "c", &["a", "b"], &[vec!["r".into(), "1,234.5".into()]]);
        assert!(
            html.contains("<td class=\"num\" data-column=\"b\">1,234.5</td>"),
            "{html}"
        );
        roxmltree::Document::parse(&html).unwrap();
    }
}
