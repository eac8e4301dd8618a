//! The start of a model's answer and the reason a result failed, as one line each for a
//! terminal: what the run's end, `track query --by result` and `track runs --errors` show of a
//! failure (the report and the viewer show the whole of both).

use unicode_width::UnicodeWidthChar;

/// Characters of an answer the terminal shows by default: enough to see what the model said,
/// short enough to keep a row on a line or two.
pub const ANSWER_START_CHARS: usize = 60;

/// Bytes of an answer to read from the database to show [`ANSWER_START_CHARS`] of it: four
/// bytes a character at most, and a little more to see that it goes on.
pub const ANSWER_START_BYTES: usize = ANSWER_START_CHARS * 4 + 8;

/// The start of `answer` on one line, at most `width` terminal columns: its whitespace (new
/// lines, tabs, runs of spaces) made single spaces, cut with `…` when longer; `(empty answer)`
/// when it is only whitespace. A cut character (a byte excerpt of UTF-8) is dropped.
pub fn answer_start(answer: &str, width: usize) -> String {
    let answer = answer.trim_end_matches('\u{FFFD}');
    let words: Vec<&str> = answer.split_whitespace().collect();
    if words.is_empty() {
        return "(empty answer)".to_owned();
    }
    one_line(&words.join(" "), width)
}

/// The reason a result did not pass, on one line of at most `width` terminal columns (its
/// whitespace made single spaces, cut with `…`); `–` when it has none.
pub fn reason_line(reason: Option<&str>, width: usize) -> String {
    match reason.map(|r| r.split_whitespace().collect::<Vec<_>>().join(" ")) {
        Some(reason) if !reason.is_empty() => one_line(&reason, width),
        _ => "–".to_owned(),
    }
}

/// `text` cut to `width` terminal columns, its end replaced by `…` when cut.
fn one_line(text: &str, width: usize) -> String {
    let width = width.max(2);
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > width - 1 {
            // Does the rest fit whole in the last column?
            let rest = &text[i..];
            let rest_width: usize = rest.chars().map(|c| c.width().unwrap_or(0)).sum();
            if used + rest_width <= width {
                return text.to_owned();
            }
            return format!("{}…", text[..i].trim_end());
        }
        used += w;
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_start_is_one_line_cut_to_its_width() {
        assert_eq!(answer_start("  42\n", 10), "42");
        assert_eq!(
            answer_start("The answer\n\nis\t42.", 40),
            "The answer is 42."
        );
        assert_eq!(answer_start("abcdefghij", 10), "abcdefghij");
        assert_eq!(answer_start("abcdefghijk", 10), "abcdefghi…");
        assert_eq!(answer_start("one two three", 9), "one two…");
        assert_eq!(answer_start(" \n ", 10), "(empty answer)");
        // A byte excerpt that cut a character leaves a replacement character: dropped.
        assert_eq!(answer_start("caf\u{FFFD}", 10), "caf");
        // Wide characters count two columns.
        assert_eq!(answer_start("プロンプト", 6), "プロ…");
    }

    #[test]
    fn a_reason_is_one_line_or_a_dash() {
        assert_eq!(reason_line(None, 20), "–");
        assert_eq!(reason_line(Some("  "), 20), "–");
        assert_eq!(
            reason_line(Some("expected `4`,\ngot `five`"), 40),
            "expected `4`, got `five`"
        );
        assert_eq!(
            reason_line(Some("expected `4`, got `five`"), 12),
            "expected `4…"
        );
    }
}
