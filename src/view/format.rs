//! How numbers read in the viewer's pages.

/// Milliseconds: `850 ms`, `1.2 s`; `–` when unknown.
pub(crate) fn latency(ms: Option<f64>) -> String {
    match ms {
        None => "–".into(),
        Some(ms) if ms < 1000.0 => format!("{ms:.0} ms"),
        Some(ms) => format!("{:.1} s", ms / 1000.0),
    }
}

/// US dollars with as many digits as small amounts need: `$0.0012`, `$1.25`.
pub(crate) fn usd(value: Option<f64>) -> String {
    match value {
        None => "–".into(),
        Some(0.0) => "$0".into(),
        Some(v) if v.abs() < 0.01 => format!("${}", crate::output::usd_text(v)),
        Some(v) => format!("${v:.2}"),
    }
}

/// A count, `–` when unknown.
pub fn count(value: Option<i64>) -> String {
    value.map_or_else(|| "–".into(), |v| v.to_string())
}

/// A stored time (RFC 3339, `2026-11-27T08:03:46.964Z`) as a person reads it, to the second
/// and in UTC: `2026-11-27 08:03:46 UTC`. A value that is not RFC 3339 is shown as stored.
pub(crate) fn when(stored: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(stored).map_or_else(
        |_| stored.to_owned(),
        |t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M:%S UTC")
                .to_string()
        },
    )
}

/// A run's models as stored (comma-separated references) as a list that reads:
/// `openai:gpt-4o, anthropic:sonnet 3.5`; `–` when there are none.
pub(crate) fn models(stored: Option<&str>) -> String {
    let names: Vec<&str> = stored
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .collect();
    if names.is_empty() {
        "–".into()
    } else {
        names.join(", ")
    }
}

/// `n` and the noun, plural but for one: `1 run`, `3 runs`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What the pages' header names the database by: its file's name (the whole path, which may
/// be long or private, is the header's tooltip).
pub(crate) fn database_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_models_and_counts_read_well() {
        assert_eq!(when("2026-11-27T08:03:46.964Z"), "2026-11-27 08:03:46 UTC");
        assert_eq!(when("2026-11-27T09:03:46+01:00"), "2026-11-27 08:03:46 UTC");
        assert_eq!(when("yesterday"), "yesterday");
        assert_eq!(
            models(Some("openai:gpt-4o,anthropic:sonnet 3.5")),
            "openai:gpt-4o, anthropic:sonnet 3.5"
        );
        assert_eq!(models(Some("")), "–");
        assert_eq!(models(None), "–");
        assert_eq!(counted(1, "run", "runs"), "1 run");
        assert_eq!(counted(0, "run", "runs"), "0 runs");
        assert_eq!(
            database_name(std::path::Path::new("/tmp/.tmpw9ItAF/track.db")),
            "track.db"
        );
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(latency(Some(850.4)), "850 ms");
        assert_eq!(latency(Some(1250.0)), "1.2 s");
        assert_eq!(latency(None), "–");
        assert_eq!(usd(Some(0.0012)), "$0.001200");
        assert_eq!(usd(Some(1.254)), "$1.25");
        assert_eq!(usd(Some(0.0)), "$0");
    }
}
