//! CSV and TSV files, read with the `csv` crate: quoted fields (with the delimiter, quotes
//! doubled, newlines inside), a UTF-8 BOM, CRLF. The first line is the header; every row must
//! have as many fields as it (a ragged row is refused, naming its line). Every value is text.
//!
//! The crate reads a quote that never closes as a field running to the end of the file, and
//! text after a closing quote as part of the field: a stray quote would swallow the rows after
//! it without a word. So the quoting is checked first ([`check_quotes`]), and a quote that
//! never closes, or text after a closing quote, is refused naming the line the quote opened
//! on. UTF-16 text (Excel's "Unicode Text") and NUL bytes are refused too.

use super::error::CasesError;
use super::read::{RawRow, at, strip_bom};
use super::template::Values;
use serde_json::Value;

/// The rows of a CSV (`delimiter` `,`) or TSV (`\t`) file.
pub(crate) fn read(bytes: &[u8], delimiter: u8, file: &str) -> Result<Vec<RawRow>, CasesError> {
    let bytes = strip_bom(bytes);
    check_text(bytes, file)?;
    check_quotes(bytes, delimiter, file)?;
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
    if let [only] = names.as_slice() {
        check_separator(only, delimiter, file)?;
    }
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
            Err(e) => return Err(error(file, bytes, &e, Some((names.len(), delimiter)))),
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
        self.newlines += line_breaks(bytes, self.pos, start);
        self.pos = start;
        self.newlines + 1
    }
}

/// Refuses bytes that are not UTF-8 text the reader can split: UTF-16 (its BOM) and NUL bytes
/// (UTF-16 without a BOM, or not text at all).
fn check_text(bytes: &[u8], file: &str) -> Result<(), CasesError> {
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return Err(CasesError::File {
            file: file.to_owned(),
            message: "is UTF-16 text (Excel's \"Unicode Text\"), not UTF-8; save it as UTF-8 (Excel: \"CSV UTF-8\")".into(),
        });
    }
    if let Some(at_byte) = bytes.iter().position(|b| *b == 0) {
        let line = line_breaks(bytes, 0, at_byte) + 1;
        return Err(CasesError::Row {
            at: at(file, line),
            message: "holds a NUL byte: not UTF-8 text (UTF-16, or not text at all); save the file as UTF-8 text".into(),
        });
    }
    Ok(())
}

/// Refuses a header read as one column that another separator would split (`id;question`, as
/// Excel writes CSV in locales with a decimal comma; a TSV named .csv; a CSV named .tsv).
fn check_separator(only: &str, delimiter: u8, file: &str) -> Result<(), CasesError> {
    let found = [
        (
            b';',
            "`;`",
            "save it with commas (Excel: \"CSV UTF-8 (Comma delimited)\")",
        ),
        (b'\t', "tabs", "name it .tsv, or say `format: tsv`"),
        (b',', "commas", "name it .csv, or say `format: csv`"),
        (b'|', "`|`", "save it with commas"),
    ]
    .into_iter()
    .find(|(separator, ..)| *separator != delimiter && only.as_bytes().contains(separator));
    let Some((_, separated, fix)) = found else {
        return Ok(());
    };
    let own = if delimiter == b'\t' { "tabs" } else { "commas" };
    Err(CasesError::Row {
        at: at(file, 1),
        message: format!(
            "the header is one column, `{only}`: the file seems separated by {separated}, not {own}; {fix}"
        ),
    })
}

/// Where the quote check is within a field.
#[derive(Clone, Copy)]
enum Quoting {
    /// At the start of a field, where a quote opens a quoted field.
    Start,
    /// In a field that did not start with a quote (a quote there is text).
    Plain,
    /// In a quoted field, opened on this line at this byte.
    Quoted { line: u64, byte: usize },
    /// Just after a quote in a quoted field: the field's end, or the first of two quotes.
    AfterQuote { line: u64, byte: usize },
}

/// Refuses what the reader would read silently wrong: a quote that opens a field and never
/// closes (the rest of the file would be one field), and text after a field's closing quote
/// (the quote was stray, or the field's quotes are not doubled). Both name the line the quote
/// opened on. Quoting as the reader does it: a quote opens a field only at its start, and two
/// quotes in a quoted field are one.
fn check_quotes(bytes: &[u8], delimiter: u8, file: &str) -> Result<(), CasesError> {
    let mut state = Quoting::Start;
    let mut line: u64 = 1;
    for (i, &b) in bytes.iter().enumerate() {
        state = match state {
            Quoting::Start | Quoting::Plain if b == delimiter => Quoting::Start,
            Quoting::Start if b == b'"' => Quoting::Quoted { line, byte: i },
            Quoting::Start | Quoting::Plain if b == b'\n' || b == b'\r' => Quoting::Start,
            Quoting::Start | Quoting::Plain => Quoting::Plain,
            Quoting::Quoted { line, byte } if b == b'"' => Quoting::AfterQuote { line, byte },
            quoted @ Quoting::Quoted { .. } => quoted,
            Quoting::AfterQuote { line, byte } if b == b'"' => Quoting::Quoted { line, byte },
            Quoting::AfterQuote { .. } if b == delimiter || b == b'\n' || b == b'\r' => {
                Quoting::Start
            }
            Quoting::AfterQuote {
                line: opened,
                byte: start,
            } => {
                return Err(text_after_quote(file, (opened, line), &bytes[start..]));
            }
        };
        if is_break(bytes, i) {
            line += 1;
        }
    }
    if let Quoting::Quoted { line: opened, byte } = state {
        let lines = line - opened + 1 - u64::from(bytes.ends_with(b"\n") || bytes.ends_with(b"\r"));
        return Err(CasesError::Row {
            at: at(file, opened),
            message: format!(
                "the quote that opens a field here ({}) never closes, so the rest of the file ({}) would be read as one value; close the quote, or if it is part of the text, quote the whole field and double the quotes in it (\"say \"\"hi\"\"\")",
                excerpt(&bytes[byte..]),
                crate::output::counted(lines, "line"),
            ),
        });
    }
    Ok(())
}

/// The error of text after a closing quote: the field opened on `opened`, closed on `closed`.
fn text_after_quote(file: &str, (opened, closed): (u64, u64), field: &[u8]) -> CasesError {
    let message = if opened == closed {
        format!(
            "text follows the closing quote of the field {}; quote the whole field and double the quotes in it (\"\"\"Hi\"\" she said\"), or remove the quote that starts it",
            excerpt(field)
        )
    } else {
        format!(
            "the quote that opens a field here ({}) closes only on line {closed}, where text follows it, so lines {opened}-{closed} would be read as one value: a stray quote? remove it, or quote the whole field and double the quotes in it (\"say \"\"hi\"\"\")",
            excerpt(field)
        )
    };
    CasesError::Row {
        at: at(file, opened),
        message,
    }
}

/// The start of a field, for a message: up to its first line's end, at most 30 characters, in
/// backquotes.
fn excerpt(field: &[u8]) -> String {
    let line = field
        .split(|b| *b == b'\n' || *b == b'\r')
        .next()
        .unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    let mut chars = text.chars();
    let mut shown: String = chars.by_ref().take(30).collect();
    if chars.next().is_some() {
        shown.push('…');
    }
    format!("`{shown}`")
}

/// Whether the line at `offset` has a quote after a delimiter and spaces (`a, "b, c"`): the
/// reader takes such a quote as text, so the field's delimiter splits it.
fn space_before_quote(bytes: &[u8], offset: u64, delimiter: u8) -> bool {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    let line = bytes[start..]
        .split(|b| *b == b'\n' || *b == b'\r')
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    line.windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] == delimiter && (w[1] == b' ' || w[1] == b'\t'))
        .any(|(i, _)| {
            line[i + 1..]
                .iter()
                .find(|b| **b != b' ' && **b != b'\t')
                .is_some_and(|b| *b == b'"')
        })
}

/// Whether the byte at `i` ends a line: a LF, or a CR not followed by a LF (the old Mac's line
/// end, which the reader takes as one too).
fn is_break(bytes: &[u8], i: usize) -> bool {
    match bytes.get(i) {
        Some(b'\n') => true,
        Some(b'\r') => bytes.get(i + 1) != Some(&b'\n'),
        _ => false,
    }
}

/// The line ends in `bytes[from..to]`.
fn line_breaks(bytes: &[u8], from: usize, to: usize) -> u64 {
    (from..to).filter(|&i| is_break(bytes, i)).count() as u64
}

/// A reader's error at its line, with what to do.
fn error(file: &str, bytes: &[u8], e: &::csv::Error, columns: Option<(usize, u8)>) -> CasesError {
    let line = e
        .position()
        .map_or(1, |p| LineCounter::default().line_of(bytes, p.byte()));
    let message = match e.kind() {
        ::csv::ErrorKind::UnequalLengths {
            expected_len,
            len,
            pos,
        } => {
            let header = columns.map_or(*expected_len, |(c, _)| c as u64);
            let offset = pos.as_ref().map_or(0, ::csv::Position::byte);
            let delimiter = columns.map_or(b',', |(_, d)| d);
            let fix = if space_before_quote(bytes, offset, delimiter) {
                "a quote after a space is text, not the start of a quoted field: remove the space between the delimiter and the quote"
            } else if *len > header {
                "quote a field that holds the delimiter or a newline (\"a, b\"), or remove the extra fields"
            } else {
                "add the missing fields (empty ones too: `a,,c`), or quote a field that holds the delimiter or a newline (\"a, b\")"
            };
            format!(
                "this row has {}, the header {header}; {fix}",
                crate::output::counted(*len, "field")
            )
        }
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
        assert_eq!(
            e,
            "d.csv:2: this row has 1 field, the header 2; add the missing fields (empty ones too: `a,,c`), or quote a field that holds the delimiter or a newline (\"a, b\")"
        );
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

    /// `n` rows `i,question i,i` under `id,question,answer`, with `row` replaced at its index.
    fn rows_with(n: usize, at_row: usize, row: &str) -> String {
        let mut text = "id,question,answer\n".to_owned();
        for i in 1..=n {
            if i == at_row {
                text.push_str(row);
            } else {
                text.push_str(&format!("{i},question {i},{i}"));
            }
            text.push('\n');
        }
        text
    }

    #[test]
    fn a_quote_that_never_closes_is_refused_at_the_line_it_opened_on() {
        // Row 3 is on line 4; without the check the file reads as 3 rows.
        let text = rows_with(1000, 3, "3,\"What is 2+2?,4");
        let e = read(text.as_bytes(), b',', "q.csv")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "q.csv:4: the quote that opens a field here (`\"What is 2+2?,4`) never closes, so the rest of the file (998 lines) would be read as one value; close the quote, or if it is part of the text, quote the whole field and double the quotes in it (\"say \"\"hi\"\"\")"
        );
        // In a TSV, in the header, and with CRLF line ends.
        let e = read(b"a\tb\n1\t\"x\n2\ty\n", b'\t', "q.tsv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("q.tsv:2: the quote that opens a field here (`\"x`) never closes, so the rest of the file (2 lines)"), "{e}");
        let e = read(b"a,\"b\r\n1,2\r\n", b',', "q.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("q.csv:1: the quote that opens"), "{e}");
    }

    #[test]
    fn text_after_a_closing_quote_is_refused_naming_where_the_quote_opened() {
        // A stray quote on line 4 closed by the quoted field of line 9: rows 3-8 would vanish.
        let text = rows_with(20, 3, "3,\"stray,4").replace("8,question 8,8", "8,\"a, b\",8");
        let e = read(text.as_bytes(), b',', "q.csv")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "q.csv:4: the quote that opens a field here (`\"stray,4`) closes only on line 9, where text follows it, so lines 4-9 would be read as one value: a stray quote?"
            ),
            "{e}"
        );
        let e = read(b"id,q\n1,\"Hi\" she said\n", b',', "q.csv")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "q.csv:2: text follows the closing quote of the field `\"Hi\" she said`;"
            ),
            "{e}"
        );
        // Quotes as the format writes them are read.
        let rows = rows("id,q\n1,\"say \"\"hi\"\"\"\n2,5\" tall\n3,\"\"\n", b',');
        let q: Vec<&Value> = rows.iter().map(|r| &r.values["q"]).collect();
        assert_eq!(q, [&json!("say \"hi\""), &json!("5\" tall"), &json!("")]);
    }

    #[test]
    fn lines_ended_by_a_lone_cr_are_counted() {
        let rows = rows("a,b\r1,2\r3,4\r", b',');
        assert_eq!(rows.iter().map(|r| r.line).collect::<Vec<_>>(), [2, 3]);
        let e = read(b"a,b\r1,2\r3,\"x\r4,5\r", b',', "m.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.csv:3: the quote that opens a field here (`\"x`) never closes, so the rest of the file (2 lines)"), "{e}");
        let e = read(b"a,b\r1,2,3\r", b',', "m.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.csv:2: this row has 3 fields"), "{e}");
    }

    #[test]
    fn a_file_of_another_separator_is_refused_naming_it() {
        let e = read(b"id;question;answer\n1;a;b\n", b',', "q.csv")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "q.csv:1: the header is one column, `id;question;answer`: the file seems separated by `;`, not commas; save it with commas (Excel: \"CSV UTF-8 (Comma delimited)\")"
        );
        let e = read(b"id\tq\n1\ta\n", b',', "q.csv")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("separated by tabs, not commas; name it .tsv, or say `format: tsv`"),
            "{e}"
        );
        let e = read(b"id,q\n1,a\n", b'\t', "q.tsv")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("separated by commas, not tabs; name it .csv, or say `format: csv`"),
            "{e}"
        );
        // One column of plain text is a file of one column.
        assert_eq!(rows("question\nWhy?\n", b',').len(), 1);
    }

    #[test]
    fn utf16_and_nul_bytes_are_refused_as_not_utf8() {
        let utf16: Vec<u8> = "\u{feff}a,b\n1,2\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let e = read(&utf16, b',', "x.csv").unwrap_err().to_string();
        assert!(e.starts_with("x.csv: is UTF-16 text"), "{e}");
        let e = read(b"a,b\n1,2\n3,\x004\n", b',', "x.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.csv:3: holds a NUL byte"), "{e}");
    }

    #[test]
    fn a_ragged_row_from_a_space_before_a_quote_says_so() {
        let e = read(b"id,q\n1, \"Paris, France\"\n", b',', "q.csv")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "q.csv:2: this row has 3 fields, the header 2; a quote after a space is text, not the start of a quoted field: remove the space between the delimiter and the quote"
        );
    }
}
