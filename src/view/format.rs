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
        Some(v) if v.abs() < 0.01 => format!("${v:.6}"),
        Some(v) => format!("${v:.2}"),
    }
}

/// A count, `–` when unknown.
pub fn count(value: Option<i64>) -> String {
    value.map_or_else(|| "–".into(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

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
