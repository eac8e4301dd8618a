//! JSON files: an array of objects. Each object is parsed on its own, so its line is known
//! (for messages and a case's origin) and a bad item is named by its line.

use super::error::CasesError;
use super::read::{RawRow, at, kind_of, strip_bom};
use serde_json::Value;

/// The rows of a JSON file holding an array of objects.
pub(crate) fn read(bytes: &[u8], file: &str) -> Result<Vec<RawRow>, CasesError> {
    let bytes = strip_bom(bytes);
    let mut lines = LineCounter::default();
    let mut pos = skip_space(bytes, 0);
    let not_array = |found: &str| CasesError::File {
        file: file.to_owned(),
        message: format!(
            "{found} where an array of objects was expected ([{{\"column\": value, ...}}, ...])"
        ),
    };
    if bytes.get(pos) != Some(&b'[') {
        return Err(not_array(&match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => kind_of(&v).to_owned(),
            Err(e) => format!("not JSON ({e})"),
        }));
    }
    pos = skip_space(bytes, pos + 1);
    let mut rows = Vec::new();
    if bytes.get(pos) == Some(&b']') {
        return trailing(bytes, pos + 1, file, rows);
    }
    loop {
        let line = lines.line_at(bytes, pos);
        let mut stream = serde_json::Deserializer::from_slice(&bytes[pos..]).into_iter::<Value>();
        let value = match stream.next() {
            Some(Ok(value)) => value,
            Some(Err(e)) => {
                return Err(CasesError::Row {
                    at: at(file, line + e.line() as u64 - 1),
                    message: format!("not JSON: {e}"),
                });
            }
            None => {
                return Err(CasesError::Row {
                    at: at(file, line),
                    message: "the array is not closed; end it with `]`".into(),
                });
            }
        };
        pos += stream.byte_offset();
        match value {
            Value::Object(values) => rows.push(RawRow { values, line }),
            other => {
                return Err(CasesError::Row {
                    at: at(file, line),
                    message: format!(
                        "item {} is {}, not an object; the array holds one object per case",
                        rows.len() + 1,
                        kind_of(&other)
                    ),
                });
            }
        }
        pos = skip_space(bytes, pos);
        match bytes.get(pos) {
            Some(b',') => pos = skip_space(bytes, pos + 1),
            Some(b']') => return trailing(bytes, pos + 1, file, rows),
            _ => {
                return Err(CasesError::Row {
                    at: at(file, lines.line_at(bytes, pos)),
                    message: "expected `,` or `]` after an item".into(),
                });
            }
        }
    }
}

/// The rows, when nothing but white space follows the array at `pos`.
fn trailing(
    bytes: &[u8],
    pos: usize,
    file: &str,
    rows: Vec<RawRow>,
) -> Result<Vec<RawRow>, CasesError> {
    let end = skip_space(bytes, pos);
    if end < bytes.len() {
        return Err(CasesError::Row {
            at: at(file, LineCounter::default().line_at(bytes, end)),
            message: "text after the array's closing `]`; a .json file holds one array".into(),
        });
    }
    Ok(rows)
}

fn skip_space(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(u8::is_ascii_whitespace) {
        pos += 1;
    }
    pos
}

/// The line of a byte offset, counted forward from the last one asked (offsets only grow).
#[derive(Default)]
struct LineCounter {
    pos: usize,
    line: u64,
}

impl LineCounter {
    fn line_at(&mut self, bytes: &[u8], pos: usize) -> u64 {
        let pos = pos.min(bytes.len());
        self.line += bytes[self.pos..pos].iter().filter(|b| **b == b'\n').count() as u64;
        self.pos = pos;
        self.line + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_array_of_objects_is_read_with_each_items_line() {
        let text = "\u{feff}[\n  {\"a\": 1},\n  {\"a\": \"x\",\n   \"b\": {\"c\": [1, 2]}}\n]\n";
        let rows = read(text.as_bytes(), "d.json").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].line, rows[1].line), (2, 3));
        assert_eq!(
            Value::Object(rows[1].values.clone()),
            json!({"a": "x", "b": {"c": [1, 2]}})
        );
        assert!(read(b" [ ] ", "d.json").unwrap().is_empty());
    }

    #[test]
    fn what_is_not_an_array_of_objects_is_refused_with_its_line() {
        let e = read(b"{\"a\": 1}", "d.json").unwrap_err().to_string();
        assert!(
            e.starts_with("d.json: an object where an array of objects was expected"),
            "{e}"
        );
        let e = read(b"[\n{\"a\": 1},\n2\n]", "d.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("d.json:3: item 2 is a number, not an object"),
            "{e}"
        );
        let e = read(b"[\n{\"a\": 1},\n{\"a\":\n}\n]", "d.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("d.json:4: not JSON"), "{e}");
        let e = read(b"[{\"a\": 1}\n{\"a\": 2}]", "d.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("d.json:2: expected `,` or `]`"), "{e}");
        let e = read(b"[{\"a\": 1}] x", "d.json").unwrap_err().to_string();
        assert!(e.contains("text after the array"), "{e}");
        let e = read(b"[{\"a\": 1}", "d.json").unwrap_err().to_string();
        assert!(e.contains("expected `,` or `]`"), "{e}");
    }
}
