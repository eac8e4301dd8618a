//! JSONL files: one JSON object a line; blank lines are skipped, and a line that is not an
//! object is refused with its file, line and the parser's message.

use super::error::CasesError;
use super::read::{RawRow, at, kind_of, strip_bom};
use serde_json::Value;

/// The rows of a JSONL file.
pub(crate) fn read(bytes: &[u8], file: &str) -> Result<Vec<RawRow>, CasesError> {
    let mut rows = Vec::new();
    for (index, line) in strip_bom(bytes).split(|b| *b == b'\n').enumerate() {
        let line_number = index as u64 + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: Value = serde_json::from_slice(line).map_err(|e| CasesError::Row {
            at: at(file, line_number),
            message: format!("not a JSON object: {e}; each line of a .jsonl file is one object"),
        })?;
        match value {
            Value::Object(values) => rows.push(RawRow {
                values,
                line: line_number,
            }),
            other => {
                return Err(CasesError::Row {
                    at: at(file, line_number),
                    message: format!(
                        "{} where a JSON object was expected; each line of a .jsonl file is one object ({{\"column\": value, ...}})",
                        kind_of(&other)
                    ),
                });
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_are_read_and_blank_lines_skipped() {
        let rows = read(
            b"{\"a\": 1}\n\n  \r\n{\"a\": \"x\", \"b\": [1]}\r\n",
            "d.jsonl",
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].line, 1);
        assert_eq!(rows[1].line, 4);
        assert_eq!(
            Value::Object(rows[1].values.clone()),
            json!({"a": "x", "b": [1]})
        );
    }

    #[test]
    fn a_bad_line_is_named_with_the_parsers_message() {
        let e = read(b"{\"a\": 1}\n{\"a\": 2,}\n", "d.jsonl")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("d.jsonl:2: not a JSON object: trailing comma"),
            "{e}"
        );
        let e = read(b"[1, 2]\n", "d.jsonl").unwrap_err().to_string();
        assert!(
            e.starts_with("d.jsonl:1: an array where a JSON object was expected"),
            "{e}"
        );
    }
}
