//! Fitting a table wider than the terminal into its width: a table of one row becomes a vertical
//! `key: value` list; a longer one is laid out in parts of as many columns as fit, each repeating
//! the key columns, its long text cells wrapped where their column allows ([`Wrap`]: an error
//! at its spaces, a list of models after its commas), or cut with `…` when even a part of their
//! own is too narrow; a header of several words may take two lines (`latency` over `sum s`).
//! Numbers are never wrapped nor cut.

use polars::prelude::*;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::columns::{Wrap, identifies, wrap};
use super::{Columns, format_value};

/// The narrowest a wrapped column is made to share a part with others (or its widest word,
/// when wider): narrower, a sentence reads a word a line.
const NARROWEST_WRAP: usize = 24;

/// The least room the key columns leave a part's other columns; keys wider than that are cut
/// to a share of the width.
const LEAST_ROOM: usize = 12;

/// A column of a table to fit, as measured.
struct Fit {
    name: PlSmallStr,
    /// Its header, and its widest cell, in terminal columns.
    header: String,
    cells: usize,
    /// Its widest cell or header, in terminal columns (one at least).
    natural: usize,
    /// The narrowest it may be drawn while sharing a part: its header over several lines, and
    /// its cells too when they wrap.
    narrowest: usize,
    /// Whether it holds text (numbers are drawn whole).
    text: bool,
    wrap: Wrap,
}

/// The width of a table whose columns' content is `widths` wide: each column padded by a space
/// each side, with a border between and around them.
fn drawn(widths: impl IntoIterator<Item = usize>) -> usize {
    let (sum, count) = widths
        .into_iter()
        .fold((0, 0), |(sum, count), w| (sum + w, count + 1));
    sum + 3 * count + 1
}

/// The width of `text` as a terminal shows it: its widest line.
fn text_width(text: &str) -> usize {
    text.split('\n')
        .map(UnicodeWidthStr::width)
        .max()
        .unwrap_or(0)
}

/// The words of a line as `wrap` breaks it: at spaces (the spaces dropped), or after commas
/// (kept). A unit stays with the number before it (`2.51 s`, never `s` alone on a line).
fn words(line: &str, wrap: Wrap) -> Vec<&str> {
    match wrap {
        Wrap::Commas => line.split_inclusive(',').collect(),
        Wrap::Spaces | Wrap::Never => {
            let mut words: Vec<&str> = Vec::new();
            let mut at = 0;
            for word in line.split(' ') {
                let start = at;
                at += word.len() + 1;
                if word.is_empty() {
                    continue;
                }
                match words.last_mut() {
                    Some(last) if is_unit(word) => {
                        let from = last.as_ptr() as usize - line.as_ptr() as usize;
                        *last = &line[from..start + word.len()];
                    }
                    _ => words.push(word),
                }
            }
            words
        }
    }
}

/// Whether `word` is a unit written after its number.
fn is_unit(word: &str) -> bool {
    let word = word.trim_end_matches([',', ';', '.', ')']);
    matches!(word, "s" | "ms" | "%" | "Wh" | "KB" | "MB" | "GB")
}

/// Measures each column of `df` (all of them shown).
fn measure(df: &DataFrame, columns: Columns) -> Vec<Fit> {
    df.columns()
        .iter()
        .map(|c| {
            let text = matches!(c.dtype(), DataType::String);
            let wrap = if text { wrap(c.name()) } else { Wrap::Never };
            let header_text = columns.header(c.name());
            let header = text_width(&header_text);
            // A compact table's short header may break at its spaces, never in a word nor
            // before its unit; a full header (`--wide`) is whole.
            let header_word = match columns {
                Columns::Compact => header_words(&header_text)
                    .iter()
                    .map(|w| w.width())
                    .max()
                    .unwrap_or(0)
                    .max(1),
                Columns::Wide => header,
            };
            let mut cells = 0;
            let mut widest_word = 0;
            for row in 0..df.height() {
                let cell = format_value(c.name(), &c.get(row).unwrap_or(AnyValue::Null));
                cells = cells.max(text_width(&cell));
                if wrap != Wrap::Never {
                    for line in cell.split('\n') {
                        for word in words(line, wrap) {
                            widest_word = widest_word.max(word.trim().width());
                        }
                    }
                }
            }
            let natural = cells.max(header).max(1);
            let narrowest = if wrap == Wrap::Never {
                cells.max(header_word)
            } else {
                cells.min(NARROWEST_WRAP.max(widest_word)).max(header_word)
            };
            Fit {
                name: c.name().clone(),
                header: header_text,
                cells,
                natural,
                narrowest,
                text,
                wrap,
            }
        })
        .collect()
}

/// `df` (all of whose columns are shown) laid out in parts no wider than `width`: each part a
/// frame of the key columns and as many others as fit, its text cells wrapped or cut to the
/// width they are given, with its headers (over two lines when narrower than one). One part
/// when wrapping makes the whole table fit.
pub(super) fn parts(
    df: &DataFrame,
    columns: Columns,
    width: usize,
) -> Vec<(DataFrame, Vec<String>)> {
    let fits = measure(df, columns);
    let keys = key_count(&fits);
    let (key, rest) = fits.split_at(keys);
    // A key that wraps (an error's item) at its narrowest, to leave the others room.
    let mut key_widths: Vec<usize> = key
        .iter()
        .map(|f| match f.wrap {
            Wrap::Never => f.natural,
            Wrap::Spaces | Wrap::Commas => f.narrowest,
        })
        .collect();
    if keys > 0 && width.saturating_sub(drawn(key_widths.iter().copied()) + 3) < LEAST_ROOM {
        // Keys so wide they leave no room: each text key gets a share of half the width.
        let share = ((width / 2).saturating_sub(3 * keys + 1) / keys).max(1);
        for (w, f) in key_widths.iter_mut().zip(key) {
            if f.text {
                *w = (*w).min(share);
            }
        }
    }
    let mut ranges = Vec::new();
    let mut start = 0;
    while start < rest.len() {
        // The most columns from `start` on that fit at their narrowest (one at least).
        let mut end = start + 1;
        while end < rest.len() {
            let widths = key_widths
                .iter()
                .copied()
                .chain(rest[start..=end].iter().map(|f| f.narrowest));
            if drawn(widths) > width {
                break;
            }
            end += 1;
        }
        ranges.push(start..end);
        start = end;
    }
    ranges
        .into_iter()
        .filter_map(|range| -> Option<(DataFrame, Vec<String>)> {
            let part = &rest[range];
            let budget = width.saturating_sub(drawn(
                key_widths
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, part.len())),
            ));
            let widths = part_widths(part, budget);
            let cells = key.iter().zip(key_widths.iter().copied());
            fitted(df, cells.chain(part.iter().zip(widths)))
        })
        .collect()
}

/// How many of a table's first columns every part repeats: those that name its row (model,
/// template, case, repeat: [`identifies`]), so that each part says whose its cells are; the
/// first column at least, and one column always left to the parts.
fn key_count(fits: &[Fit]) -> usize {
    if fits.len() < 2 {
        return 0;
    }
    let named = fits
        .iter()
        .take_while(|f| identifies(f.name.as_str()))
        .count();
    named.clamp(1, fits.len() - 1)
}

/// The content widths of a part's columns, `budget` wide in all: each between its narrowest
/// and its natural width, the widest narrowed first (a long text before a header); a column
/// alone in its part is cut to the budget when text, its header broken when a number.
fn part_widths(part: &[Fit], budget: usize) -> Vec<usize> {
    if let [alone] = part {
        return vec![if alone.natural <= budget {
            alone.natural
        } else if alone.text {
            budget.max(1)
        } else {
            alone.narrowest.max(budget)
        }];
    }
    let at = |cap: usize| -> usize {
        part.iter()
            .map(|f| cap.clamp(f.narrowest, f.natural.max(f.narrowest)))
            .sum()
    };
    // The largest cap at which the columns fit the budget.
    let widest = part.iter().map(|f| f.natural).max().unwrap_or(0);
    let (mut low, mut high) = (0, widest);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if at(mid) <= budget {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    part.iter()
        .map(|f| low.clamp(f.narrowest, f.natural.max(f.narrowest)))
        .collect()
}

/// The frame of `columns` (each with the width it is given), their text cells wider than it
/// wrapped or cut to it, and their headers, broken at their spaces when wider.
fn fitted<'a>(
    df: &DataFrame,
    columns: impl Iterator<Item = (&'a Fit, usize)>,
) -> Option<(DataFrame, Vec<String>)> {
    let mut out = Vec::new();
    let mut headers = Vec::new();
    for (fit, width) in columns {
        headers.push(if fit.header.width() > width {
            fit_header(&fit.header, width)
        } else {
            fit.header.clone()
        });
        let column = df.column(&fit.name).ok()?;
        if !fit.text || width >= fit.cells {
            out.push(column.clone());
            continue;
        }
        let cells: Vec<Option<String>> = column
            .str()
            .ok()?
            .iter()
            .map(|cell| cell.map(|text| fit_text(text, width, fit.wrap)))
            .collect();
        out.push(Column::new(fit.name.clone(), cells));
    }
    Some((DataFrame::new_infer_height(out).ok()?, headers))
}

/// The pieces a header may be broken into: its words, a unit (`s`, `%`, `$`, `(ms)`) kept
/// with the word before it (`latency` over `sum s`, never `s` alone).
fn header_words(header: &str) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    for word in header.split(' ').filter(|w| !w.is_empty()) {
        match pieces.last_mut() {
            Some(last) if word.chars().count() <= 2 || word.starts_with('(') => {
                last.push(' ');
                last.push_str(word);
            }
            _ => pieces.push(word.to_owned()),
        }
    }
    pieces
}

/// `header` over as few lines as fit `width`, broken between its [`header_words`].
fn fit_header(header: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for piece in header_words(header) {
        match lines.last_mut() {
            Some(line) if line.width() + 1 + piece.width() <= width => {
                line.push(' ');
                line.push_str(&piece);
            }
            _ => lines.push(piece),
        }
    }
    lines.join("\n")
}

/// `text` no wider than `width`: broken over lines where `wrap` allows (a word wider than the
/// width is broken where it must), or, for a column that never wraps, each line cut with `…`.
pub(super) fn fit_text(text: &str, width: usize, wrap: Wrap) -> String {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    for line in text.split('\n') {
        if line.width() <= width {
            lines.push(line.to_owned());
            continue;
        }
        if wrap == Wrap::Never {
            lines.push(elide(line, width));
            continue;
        }
        let separator = if wrap == Wrap::Spaces { " " } else { "" };
        let mut current = String::new();
        for word in words(line, wrap) {
            let candidate = if current.is_empty() {
                word.trim_start().to_owned()
            } else {
                format!("{current}{separator}{word}")
            };
            if candidate.width() <= width {
                current = candidate;
                continue;
            }
            if !current.is_empty() {
                lines.push(std::mem::take(&mut current).trim_end().to_owned());
            }
            current = word.trim_start().to_owned();
            while current.width() > width {
                let (head, tail) = split_at_width(&current, width);
                lines.push(head.to_owned());
                current = tail.to_owned();
            }
        }
        lines.push(current.trim_end().to_owned());
    }
    lines.join("\n")
}

/// A line of prose broken at its spaces to fit the terminal ([`super::terminal_width`]): as
/// it is when there is no limit (a pipe, a file).
pub(crate) fn fit_line(text: &str) -> String {
    match super::terminal_width() {
        Some(width) => fit_text(text, width, Wrap::Spaces),
        None => text.to_owned(),
    }
}

/// `text` split where its head is as wide as fits in `width` (one character at least).
fn split_at_width(text: &str, width: usize) -> (&str, &str) {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > width && i > 0 {
            return text.split_at(i);
        }
        used += w;
    }
    (text, "")
}

/// `line` cut to `width` columns, its end replaced by `…`.
fn elide(line: &str, width: usize) -> String {
    let (head, _) = split_at_width(line, width.saturating_sub(1));
    if width <= 1 {
        return "…".to_owned();
    }
    format!("{head}…")
}

/// The `header: value` pairs of a table of one row, each with whether it is text and how it
/// wraps.
fn vertical(df: &DataFrame, columns: Columns) -> Vec<(String, String, bool, Wrap)> {
    df.columns()
        .iter()
        .map(|c| {
            let text = matches!(c.dtype(), DataType::String);
            let value = format_value(c.name(), &c.get(0).unwrap_or(AnyValue::Null));
            let wrap = if text { wrap(c.name()) } else { Wrap::Never };
            (columns.header(c.name()), value, text, wrap)
        })
        .collect()
}

/// A table of one row as a vertical list, one `header: value` line per column, the values
/// aligned and wrapped (or cut) to fit `width`.
pub(super) fn vertical_text(df: &DataFrame, columns: Columns, width: usize) -> String {
    let rows = vertical(df, columns);
    let label = rows.iter().map(|(h, ..)| h.width() + 1).max().unwrap_or(0);
    let room = width.saturating_sub(label + 1).max(8);
    let mut lines = Vec::new();
    for (header, value, text, wrap) in rows {
        let value = if text {
            fit_text(&value, room, wrap)
        } else {
            value
        };
        let pad = label - header.width() - 1;
        for (i, line) in value.split('\n').enumerate() {
            if i == 0 {
                lines.push(format!("{header}:{} {line}", " ".repeat(pad)));
            } else {
                lines.push(format!("{} {line}", " ".repeat(label)));
            }
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_wraps_where_its_column_allows_and_is_cut_where_it_never_wraps() {
        let command = "review-datasheets --reviewer 'openai:gpt-4o-mini,anthropic:haiku 3.5' \
                       --max-tokens 1000 --no-cache";
        let wrapped = fit_text(command, 40, Wrap::Spaces);
        assert!(wrapped.lines().all(|l| l.width() <= 40), "{wrapped}");
        assert_eq!(wrapped.replace('\n', " "), command);
        let models = "openai:gpt-4o,anthropic:sonnet 3.5,ollama:qwen2.5-coder";
        let wrapped = fit_text(models, 25, Wrap::Commas);
        assert_eq!(
            wrapped,
            "openai:gpt-4o,\nanthropic:sonnet 3.5,\nollama:qwen2.5-coder"
        );
        assert_eq!(wrapped.replace('\n', ""), models);
        assert_eq!(
            fit_text("anthropic:sonnet 3.5", 10, Wrap::Never),
            "anthropic…"
        );
        assert_eq!(fit_text("short", 10, Wrap::Never), "short");
        // A word wider than the width is broken where it must.
        assert_eq!(
            fit_text("abcdefghij kl", 4, Wrap::Spaces),
            "abcd\nefgh\nij\nkl"
        );
        // Wide characters count two columns.
        assert_eq!(fit_text("プロンプト", 5, Wrap::Never), "プロ…");
    }

    #[test]
    fn prose_never_leaves_a_unit_alone_on_a_line() {
        let line = "latency sum: calls overlap: this run took 2.51 s";
        assert_eq!(
            fit_text(line, 46, Wrap::Spaces),
            "latency sum: calls overlap: this run took\n2.51 s"
        );
        assert_eq!(
            fit_text("at 97 %, then", 6, Wrap::Spaces),
            "at\n97 %,\nthen"
        );
    }

    #[test]
    fn a_header_breaks_between_words_and_keeps_its_unit() {
        assert_eq!(fit_header("latency sum s", 7), "latency\nsum s");
        assert_eq!(
            fit_header("delta mean latency (ms)", 12),
            "delta mean\nlatency (ms)"
        );
        assert_eq!(fit_header("time s", 4), "time s", "never a unit alone");
        assert_eq!(fit_header("pass %", 4), "pass %");
    }

    #[test]
    fn a_row_becomes_a_vertical_list_of_aligned_values() {
        let df = DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["openai:gpt-4o"]),
            Column::new("success_pct".into(), [92.85714]),
            Column::new("error".into(), ["one two three four five six seven"]),
        ])
        .unwrap();
        assert_eq!(
            vertical_text(&df, Columns::Wide, 26),
            "model:     openai:gpt-4o\n\
             success %: 92.9\n\
             error:     one two three\n           four five six\n           seven"
        );
    }

    /// Issue 45: a table split at 80 columns repeated the model (and the template) but not
    /// the case: each part now repeats every leading column that names the row.
    #[test]
    fn every_part_repeats_the_columns_that_name_its_row() {
        let df = DataFrame::new_infer_height(vec![
            Column::new("run_id".into(), [1i64, 1]),
            Column::new("model".into(), ["openai:gpt-4o", "anthropic:sonnet 3.5"]),
            Column::new("template".into(), ["terse", "worded"]),
            Column::new("case".into(), ["m01", "m02"]),
            Column::new("repeat".into(), [0u32, 1]),
            Column::new("result".into(), ["failed", "passed"]),
            Column::new(
                "reason".into(),
                [
                    "contains: expected to contain `1002`, got `mock reply to: What is 1 * 2?`",
                    "",
                ],
            ),
            Column::new("human_comment".into(), ["a long comment of a person", ""]),
            Column::new(
                "uid".into(),
                ["1da0d1e4ba57bac4642e1e0c5f0f4a", "dfff5b7fd49c86a3"],
            ),
        ])
        .unwrap();
        let parts = parts(&df, Columns::Compact, 80);
        assert!(parts.len() > 1, "{}", parts.len());
        for (part, headers) in &parts {
            assert_eq!(
                headers[..5],
                ["run id", "model", "template", "case", "repeat"],
                "{headers:?}"
            );
            let text = super::super::table(part, Columns::Compact).to_string();
            assert!(
                text.contains("m02") && text.contains("sonnet 3.5"),
                "{text}"
            );
            assert!(text.lines().all(|l| l.width() <= 80), "{text}");
        }
        // A table whose first column names nothing keeps it alone as its key.
        let plain = DataFrame::new_infer_height(vec![
            Column::new("file".into(), ["a.yaml"]),
            Column::new("model".into(), ["m"]),
        ])
        .unwrap();
        assert_eq!(key_count(&measure(&plain, Columns::Compact)), 1);
    }

    #[test]
    fn parts_wrap_text_to_share_the_width_and_never_touch_numbers() {
        let df = DataFrame::new_infer_height(vec![
            Column::new("id".into(), [1i64, 22]),
            Column::new(
                "command".into(),
                [
                    "review-datasheets --reviewer 'openai:gpt-4o-mini,anthropic:haiku 3.5' \
                     --max-tokens 1000 --no-cache",
                    "bench.yaml",
                ],
            ),
            Column::new("cost_usd".into(), [0.123456789, 1.5]),
        ])
        .unwrap();
        let parts = parts(&df, Columns::Wide, 60);
        assert_eq!(parts.len(), 1);
        let text = super::super::table(&parts[0].0, Columns::Wide).to_string();
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
        assert!(
            text.contains("0.123457") && text.contains("--no-cache"),
            "{text}"
        );
    }
}
