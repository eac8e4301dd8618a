//! `.env`: keys and base URLs read into the environment before anything else. A malformed line
//! is reported by its file, line number and variable name only: its text may hold a key.

use std::path::{Path, PathBuf};

/// Loads the nearest `.env` (this folder or a parent), as dotenvy does. Returns a warning
/// to print when the file exists but cannot be read whole; the lines before the bad one are
/// loaded.
pub fn load() -> Option<String> {
    let path = find(&std::env::current_dir().ok()?)?;
    match dotenvy::from_path(&path) {
        Ok(()) => None,
        Err(dotenvy::Error::LineParse(rest, _)) => Some(describe_bad_line(&path, &rest)),
        Err(e) => Some(format!("ignoring {}: {e}", path.display())),
    }
}

fn find(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(".env"))
        .find(|path| path.is_file())
}

/// `ignoring .env from line 3 (OPENAI_API_KEY) on: it cannot be read; check its quotes`,
/// found from dotenvy's error text (the bad line and what follows, never printed).
fn describe_bad_line(path: &Path, rest: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let first_line = rest.lines().next().unwrap_or_default();
    let line = text
        .lines()
        .position(|l| !first_line.is_empty() && (l == first_line || l.ends_with(first_line)))
        .map(|i| i + 1);
    let variable = first_line
        .trim_start()
        .trim_start_matches("export ")
        .split(['=', ' '])
        .next()
        .filter(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    format!(
        "ignoring {}{}{} and the lines after it: it cannot be read; check its quotes",
        path.display(),
        line.map(|n| format!(" from line {n}")).unwrap_or_default(),
        variable.map(|v| format!(" ({v})")).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_env_line_is_named_without_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env");
        let text = "A=1\nOPENAI_API_KEY=\"sk-secret-unterminated\nB=2\n";
        std::fs::write(&path, text).unwrap();
        let Err(dotenvy::Error::LineParse(rest, _)) = dotenvy::from_path_iter(&path)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
        else {
            panic!("dotenvy accepted the file");
        };
        let message = describe_bad_line(&path, &rest);
        assert!(
            message.contains("from line 2 (OPENAI_API_KEY)"),
            "{message}"
        );
        assert!(!message.contains("sk-secret"), "{message}");
    }
}
