//! YAML errors as people read them: `file:line:col: message`, on one line, without the
//! parser's source excerpt (the file is open in the user's editor).

use std::path::Path;

/// `path:line:col: message` for an error of serde-saphyr (`path: message` when it knows no
/// position).
pub fn describe(path: &Path, error: &serde_saphyr::Error) -> String {
    let rendered = error.without_snippet().to_string();
    let first = rendered.lines().next().unwrap_or_default().trim();
    let message = strip_position(first.trim_start_matches("error:").trim());
    // Some messages repeat the position at their end.
    let message = match message.rfind(" at line ") {
        Some(at) if message[at..].contains("column") => &message[..at],
        _ => message,
    };
    match error.location() {
        Some(at) => format!(
            "{}:{}:{}: {message}",
            path.display(),
            at.line(),
            at.column()
        ),
        None => format!("{}: {message}", path.display()),
    }
}

/// `line 5 column 5: invalid indentation` without its `line 5 column 5: ` prefix.
fn strip_position(message: &str) -> &str {
    let Some(rest) = message.strip_prefix("line ") else {
        return message;
    };
    match rest.split_once(": ") {
        Some((position, text)) if position.contains("column") => text,
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_are_one_line_with_file_line_and_column() {
        let text = "models: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: \"unterminated\n    output: x\n";
        let error = serde_saphyr::from_str::<serde_json::Value>(text).unwrap_err();
        let line = describe(Path::new("bad.yaml"), &error);
        assert!(line.starts_with("bad.yaml:5:5: "), "{line}");
        assert!(!line.contains("-->") && !line.contains('\n'), "{line}");
        assert!(!line.contains("at line"), "{line}");
    }
}
