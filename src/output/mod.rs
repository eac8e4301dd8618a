//! Output: frames as terminal tables (comfy-table), CSV (polars) and JSON, with a stable
//! column schema. Results go to stdout; nothing here decides what to show.

use std::io::Write;
use std::path::Path;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use polars::prelude::*;
use polars_io::SerWriter;
use polars_io::csv::write::CsvWriter;
use serde_json::{Map, Value};

/// Output formats of `track query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    #[default]
    Table,
    Csv,
    Json,
}

/// `1 call`, `2 calls`: a count with its noun, singular or plural (`plural` is the noun + s).
pub fn count(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ if noun.ends_with('y') && !noun.ends_with("ey") => {
            format!("{n} {}ies", &noun[..noun.len() - 1])
        }
        _ => format!("{n} {noun}s"),
    }
}

/// Whether `error` is a closed pipe (`track … | head`): not a failure, the reader has what it
/// wanted.
pub fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// An amount of dollars to the micro-dollar, without trailing zeros: `$0`, `$0.0125`.
pub fn dollars(usd: f64) -> String {
    let text = format!("{usd:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("${text}")
}

/// Which columns a terminal table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Columns {
    /// The main columns under short headers: what a terminal has room for.
    #[default]
    Compact,
    /// Every column under its full header (`--wide`), as CSV and JSON always have.
    Wide,
}

impl Columns {
    /// `Wide` when `wide` is set.
    pub fn wide_if(wide: bool) -> Self {
        if wide { Self::Wide } else { Self::Compact }
    }

    /// Whether a compact table shows the column `name`: it leaves out confidence bounds,
    /// counts and totals that the columns it keeps imply (failed = n - passed - errors; paid
    /// <= cost), and breakdowns (tokens in and out, energy bounds).
    fn shows(self, name: &str) -> bool {
        self == Self::Wide
            || !(name.ends_with("_low_pct")
                || name.ends_with("_high_pct")
                || WIDE_ONLY.contains(&name))
    }

    /// The header of the column `name`.
    fn header(self, name: &str) -> String {
        match self {
            Self::Wide => header(name),
            Self::Compact => short_header(name),
        }
    }
}

/// Columns only `--wide` tables show (CSV and JSON always have them).
const WIDE_ONLY: &[&str] = &[
    "passed",
    "failed",
    "paid_usd",
    "input_tokens",
    "output_tokens",
    "avg_input_tokens",
    "avg_output_tokens",
    "tokens_in",
    "tokens_out",
    "energy_wh_min",
    "energy_wh_max",
    "command",
    "provider",
    "alias",
    "model_id",
    "active_b",
    "total_b",
    "pue",
];

/// Short headers of compact tables, for columns whose full header is long.
const SHORT_HEADERS: &[(&str, &str)] = &[
    ("results", "n"),
    ("passed", "pass"),
    ("errors", "err"),
    ("success_pct", "pass %"),
    ("success_pct_all", "all %"),
    ("total_time_s", "time s"),
    ("time_s", "time s"),
    ("total_cost_usd", "cost $"),
    ("cost_usd", "cost $"),
    ("paid_usd", "paid $"),
    // `track runs`' compact table, where paid stays beside the budget.
    ("run_paid_usd", "paid $"),
    ("budget_usd", "budget $"),
    ("max_cost_usd", "max $"),
    ("energy_wh", "Wh"),
    ("cache_hits", "hits"),
    ("avg_time_s", "avg s"),
    ("avg_cost_usd", "avg $"),
    ("avg_energy_wh", "avg Wh"),
    ("to_call", "to call"),
    ("input_usd_per_mtok", "in $/Mtok"),
    ("output_usd_per_mtok", "out $/Mtok"),
    ("parameters_b", "params B"),
    ("parse_failures", "unparsable"),
    ("parse_failure_pct", "unparsable %"),
    ("no_official", "no official"),
    ("na_scores", "N/A"),
    ("with_na", "with N/A"),
    ("mean_overall", "overall"),
    ("mean_average_pn", "mean P"),
];

/// The header of a compact table: a short form when there is one, else the full header.
fn short_header(name: &str) -> String {
    SHORT_HEADERS
        .iter()
        .find(|(column, _)| *column == name)
        .map_or_else(|| header(name), |(_, short)| (*short).to_owned())
}

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

/// A header a person reads: `total_cost_usd` becomes `total cost ($)`, units last.
pub(crate) fn header(name: &str) -> String {
    if let Some((_, model)) = name.split_once('[') {
        // `success_pct[openai:gpt-4o]` -> `openai:gpt-4o %`
        return format!("{} %", model.trim_end_matches(']'));
    }
    let name = name.replace("_usd_per_mtok", "_perMtok");
    let mut words = Vec::new();
    let mut unit = "";
    for word in name.split('_') {
        match word {
            "usd" => unit = " ($)",
            "perMtok" => unit = " ($/Mtok)",
            "pct" => unit = " %",
            "wh" => unit = " (Wh)",
            "s" => unit = " (s)",
            "ms" => unit = " (ms)",
            "b" => unit = " (B)",
            other => words.push(other),
        }
    }
    format!("{}{unit}", words.join(" "))
}

/// One cell's text, formatted by what its column holds: terminal tables and the HTML report
/// print numbers through this one function, so they agree to the last digit.
pub(crate) fn format_value(column: &str, value: &AnyValue<'_>) -> String {
    let number = match value {
        AnyValue::Null => return "–".into(),
        AnyValue::Boolean(b) => return if *b { "yes" } else { "no" }.into(),
        AnyValue::String(s) => return (*s).to_owned(),
        AnyValue::StringOwned(s) => return s.to_string(),
        AnyValue::Float64(v) => *v,
        AnyValue::Float32(v) => f64::from(*v),
        other => return other.to_string(),
    };
    if column == "p_value" {
        // A small p-value keeps its magnitude: 0.0005 is not 0.000.
        if number != 0.0 && number < 0.001 {
            format!("{number:.1e}")
        } else {
            format!("{number:.3}")
        }
    } else if column.contains("_pct") {
        format!("{number:.1}")
    } else if column.ends_with("_usd") {
        format!("{number:.6}")
    } else if column.contains("_wh") {
        format!("{number:.4}")
    } else if column.ends_with("_s") {
        format!("{number:.2}")
    } else if column.contains("tokens") {
        format!("{number:.1}")
    } else {
        format!("{number:.3}")
    }
}

/// Writes a frame as CSV (header included) to `out`.
pub fn write_csv(df: &DataFrame, out: &mut impl Write) -> PolarsResult<()> {
    let mut df = without_float_noise(df)?;
    CsvWriter::new(out).include_header(true).finish(&mut df)
}

/// `v` at the 15 significant digits a double holds exactly: what binary arithmetic adds beyond
/// them (`0.38598899999999997` for a sum of `0.385989`) is noise, not precision.
pub fn tidy_float(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let digits = 14 - v.abs().log10().floor() as i32;
    if !(0..=22).contains(&digits) {
        // Outside the range of exact powers of ten: round through text.
        return format!("{v:.14e}").parse().unwrap_or(v);
    }
    // 10^digits is exact, so the division gives the double nearest the decimal.
    let scale = 10f64.powi(digits);
    (v * scale).round() / scale
}

/// A copy of `df` whose float columns are [`tidy_float`]ed, for CSV and JSON.
fn without_float_noise(df: &DataFrame) -> PolarsResult<DataFrame> {
    let mut df = df.clone();
    let floats: Vec<PlSmallStr> = df
        .columns()
        .iter()
        .filter(|c| c.dtype() == &DataType::Float64)
        .map(|c| c.name().clone())
        .collect();
    for name in floats {
        let tidy: Float64Chunked = df
            .column(&name)?
            .f64()?
            .apply_values(tidy_float)
            .with_name(name.clone());
        df.with_column(tidy.into_column())?;
    }
    Ok(df)
}

/// Writes a frame as CSV to the file at `path`.
pub fn write_csv_file(df: &DataFrame, path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut writer = std::io::BufWriter::new(file);
    write_csv(df, &mut writer).map_err(std::io::Error::other)?;
    writer.flush()
}

/// A frame as a JSON array of objects, one per row, keys in column order.
pub fn to_json(df: &DataFrame) -> Value {
    let columns = df.columns();
    let rows = (0..df.height())
        .map(|row| {
            let mut object = Map::new();
            for c in columns {
                let value = c.get(row).unwrap_or(AnyValue::Null);
                object.insert(c.name().to_string(), json_value(&value));
            }
            Value::Object(object)
        })
        .collect();
    Value::Array(rows)
}

fn json_value(value: &AnyValue<'_>) -> Value {
    match value {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::String(s) => Value::String((*s).to_owned()),
        AnyValue::StringOwned(s) => Value::String(s.to_string()),
        AnyValue::Float64(v) => {
            serde_json::Number::from_f64(tidy_float(*v)).map_or(Value::Null, Value::Number)
        }
        AnyValue::Float32(v) => {
            serde_json::Number::from_f64(f64::from(*v)).map_or(Value::Null, Value::Number)
        }
        AnyValue::Int64(v) => Value::from(*v),
        AnyValue::Int32(v) => Value::from(*v),
        AnyValue::UInt64(v) => Value::from(*v),
        AnyValue::UInt32(v) => Value::from(*v),
        other => Value::String(other.to_string()),
    }
}

/// A progress bar on stderr of the calls sent (sent/to send, elapsed, a message, ETA): no
/// wider than the terminal, the bar taking what the text leaves; hidden when `show` is false,
/// and by indicatif itself when stderr is not a terminal.
pub fn progress_bar(len: usize, show: bool) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} {elapsed} {wide_bar} {pos}/{len} sent · {msg} · ETA {eta}",
    ) {
        bar.set_style(style);
    }
    bar
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_drop_trailing_zeros() {
        assert_eq!(dollars(0.0), "$0");
        assert_eq!(dollars(0.0125), "$0.0125");
        assert_eq!(dollars(12.0), "$12");
        assert_eq!(dollars(0.0000004), "$0");
        assert_eq!(dollars(1.2345678), "$1.234568");
    }

    #[test]
    fn counts_read_as_english() {
        assert_eq!(count(1, "error"), "1 error");
        assert_eq!(count(0, "error"), "0 errors");
        assert_eq!(count(2, "cache hit"), "2 cache hits");
        assert_eq!(count(3, "reply"), "3 replies");
        assert_eq!(count(3, "key"), "3 keys");
    }

    #[test]
    fn floats_lose_their_binary_noise_not_their_digits() {
        let noisy = 0.1 + 0.2;
        assert_eq!(noisy.to_string(), "0.30000000000000004");
        assert_eq!(tidy_float(noisy).to_string(), "0.3");
        let sum: f64 = [0.128663, 0.128663, 0.128663].iter().sum();
        assert_eq!(tidy_float(sum).to_string(), "0.385989");
        assert_eq!(tidy_float(2.0 / 3.0).to_string(), "0.666666666666667");
        assert_eq!(tidy_float(1234567.891).to_string(), "1234567.891");
        assert_eq!(
            tidy_float(1e-30 / 3.0).to_string(),
            "0.000000000000000000000000000000333333333333333"
        );
        assert_eq!(tidy_float(0.0), 0.0);
        let mut csv = Vec::new();
        let df = DataFrame::new_infer_height(vec![Column::new("x".into(), vec![noisy])]).unwrap();
        write_csv(&df, &mut csv).unwrap();
        assert_eq!(String::from_utf8(csv).unwrap(), "x\n0.3\n");
    }

    fn frame() -> DataFrame {
        DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["a,b", "c\"d"]),
            Column::new("success_pct".into(), [Some(50.0), None]),
            Column::new("total_cost_usd".into(), [0.0123456789, 0.0]),
        ])
        .unwrap()
    }

    #[test]
    fn headers_and_cells_are_readable() {
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
    fn csv_quotes_and_json_nulls() {
        let mut out = Vec::new();
        write_csv(&frame(), &mut out).unwrap();
        let csv = String::from_utf8(out).unwrap();
        assert!(
            csv.starts_with("model,success_pct,total_cost_usd\n"),
            "{csv}"
        );
        assert!(
            csv.contains("\"a,b\"") && csv.contains("\"c\"\"d\""),
            "{csv}"
        );
        let json = to_json(&frame());
        assert_eq!(json[1]["success_pct"], Value::Null);
        assert_eq!(json[0]["model"], "a,b");
    }
}
