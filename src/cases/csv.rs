//! CSV and TSV files, read with the `csv` crate: quoted fields (with the delimiter, quotes
//! doubled, newlines inside), a UTF-8 BOM, CRLF. The first line is the header; every row must
//! have as many fields as it (a ragged row is refused, naming its line). Every value is text.

use super::error::CasesError;
use super::read::{RawRow, at, strip_bom};
use super::template::Values;
use serde_json::Value;

/// The rows of a CSV (`delimiter` `,`) or TSV (`\t`) file.
pub(crate) fn read(bytes: &[u8], delimiter: u8, file: &str) -> Result<Vec<RawRow>, CasesError> {
    let bytes = strip_bom(bytes);
    let mut reader = ::csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(false)
        .has_headers(true)
        .from_reader(bytes);
    let mut lines = LineCounter::default();
    let headers = reader
        .headers()
        .map_err(|e| error(file, bytes, &e, None))?
        .clone();
    if headers.is_empty() {
        return Err(CasesError::File {
            file: file.to_owned(),
            message: "is empty: the first line must name the columns".into(),
        });
    }
    let names: Vec<String> = headers.iter().map(|h| h.trim().to_owned()).collect();
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(CasesError::Row {
                at: at(file, 1),
                message: format!("column {} of the header has no name; name it", i + 1),
            });
        }
        if names[..i].contains(name) {
            return Err(CasesError::Row {
                at: at(file, 1),
                message: format!("the header names `{name}` twice; rename one of them"),
            });
        }
    }
    let mut rows = Vec::new();
    let mut record = ::csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                let line = lines.line_of(bytes, record.position().map_or(0, |p| p.byte()));
                let mut values = Values::with_capacity(names.len());
                for (name, field) in names.iter().zip(record.iter()) {
                    values.insert(name.clone(), Value::String(field.to_owned()));
                }
                rows.push(RawRow { values, line });
            }
            Err(e) => return Err(error(file, bytes, &e, Some(names.len()))),
        }
    }
    Ok(rows)
}

/// The line a record starts on, from its byte offset: the reader's own line count is one
/// short after a CRLF (it starts the record before the LF), so lines are counted here, past
/// the line break the offset may point into. Offsets only grow: counting goes on from the
/// last one.
#[derive(Default)]
struct LineCounter {
    pos: usize,
    newlines: u64,
}

impl LineCounter {
    fn line_of(&mut self, bytes: &[u8], offset: u64) -> u64 {
        let mut start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        while matches!(bytes.get(start), Some(b'\r' | b'\n')) {
            start += 1;
        }
        let start = start.max(self.pos);
        self.newlines += bytes[self.pos..start]
            .iter()
            .filter(|b| **b == b'\n')
            .count() as u64;
        self.pos = start;
        self.newlines + 1
    }
}

/// A reader's error at its line, with what to do.
fn error(file: &str, bytes: &[u8], e: &::csv::Error, columns: Option<usize>) -> CasesError {
    let line = e
        .position()
        .map_or(1, |p| LineCounter::default().line_of(bytes, p.byte()));
    let message = match e.kind() {
        ::csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!(
            "this row has {len} fields, the header {}; quote a field that holds the delimiter or a newline (\"a, b\"), or add the missing fields",
            columns.map_or(*expected_len, |c| c as u64)
        ),
        ::csv::ErrorKind::Utf8 { .. } => "not UTF-8 text; save the file as UTF-8".to_owned(),
        _ => e.to_string(),
    };
    CasesError::Row {
        at: at(file, line),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows(text: &str, delimiter: u8) -> Vec<RawRow> {
        read(text.as_bytes(), delimiter, "d.csv").unwrap()
    }

    #[test]
    fn quoted_commas_newlines_quotes_unicode_and_a_bom_are_read() {
        let text = "\u{feff}id,question,answer\r\n1,\"Paris, France?\",\"yes\nno\"\r\n2,\"say \"\"hi\"\"\",héllo ☃\r\n";
        let rows = rows(text, b',');
        assert_eq!(rows.len(), 2);
        assert_eq!(
            Value::Object(rows[0].values.clone()),
            json!({"id": "1", "question": "Paris, France?", "answer": "yes\nno"})
        );
        // The header's first name has no BOM; the row after a newline in a field starts on line 4.
        assert_eq!(rows[0].values.keys().next().unwrap(), "id");
        assert_eq!((rows[0].line, rows[1].line), (2, 4));
        assert_eq!(rows[1].values["question"], json!("say \"hi\""));
        assert_eq!(rows[1].values["answer"], json!("héllo ☃"));
    }

    #[test]
    fn tsv_is_read_with_tabs() {
        let rows = rows("a\tb\nx, y\t2\n", b'\t');
        assert_eq!(
            Value::Object(rows[0].values.clone()),
            json!({"a": "x, y", "b": "2"})
        );
    }

    #[test]
    fn a_ragged_row_is_refused_naming_its_line() {
        let e = read(b"a,b\n1,2\n3,4,5\n", b',', "d.csv")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("d.csv:3: this row has 3 fields, the header 2;"),
            "{e}"
        );
        let e = read(b"a,b\r\n1,2\r\n3,4,5\r\n", b',', "d.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("d.csv:3: this row has 3 fields"), "{e}");
        let e = read(b"a,b\n1\n", b',', "d.csv").unwrap_err().to_string();
        assert!(e.starts_with("d.csv:2: this row has 1 fields"), "{e}");
    }

    #[test]
    fn a_bad_header_is_refused() {
        let e = read(b"a,a\n1,2\n", b',', "d.csv").unwrap_err().to_string();
        assert_eq!(e, "d.csv:1: the header names `a` twice; rename one of them");
        let e = read(b"a,\n1,2\n", b',', "d.csv").unwrap_err().to_string();
        assert!(e.contains("column 2 of the header has no name"), "{e}");
        let e = read(b"a\n\xff\n", b',', "d.csv").unwrap_err().to_string();
        assert!(e.starts_with("d.csv:2: not UTF-8"), "{e}");
    }
}
