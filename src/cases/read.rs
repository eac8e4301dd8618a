//! Rows out of a file's bytes: the format's reader picked, each row an object of values with
//! its line (its row number in Parquet). The readers are in their own files; what they share
//! is here. No ids, no selection, no conversion: those come after.

use super::error::CasesError;
use super::spec::FileFormat;
use super::template::Values;

/// One row as a file holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct RawRow {
    /// The row's values by column, in the file's order.
    pub values: Values,
    /// The 1-based line the row starts on (a CSV header is line 1, so its first row is 2);
    /// in Parquet, the 1-based row number.
    pub line: u64,
}

/// The rows of `bytes` read as `format`; `file` names the file in messages.
pub(crate) fn read_rows(
    format: FileFormat,
    bytes: &[u8],
    file: &str,
) -> Result<Vec<RawRow>, CasesError> {
    match format {
        FileFormat::Csv => super::csv::read(bytes, b',', file),
        FileFormat::Tsv => super::csv::read(bytes, b'\t', file),
        FileFormat::Jsonl => super::jsonl::read(bytes, file),
        FileFormat::Json => super::json::read(bytes, file),
        FileFormat::Parquet => super::parquet::read(bytes, file),
    }
}

/// `bytes` without a leading UTF-8 byte order mark (spreadsheets write one).
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// What a JSON value is, for messages: `an array`, `a string`.
pub(crate) fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// `file:line`.
pub(crate) fn at(file: &str, line: u64) -> String {
    format!("{file}:{line}")
}
