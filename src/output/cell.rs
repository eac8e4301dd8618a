//! One cell's text, formatted by what its column holds: the one function terminal tables and
//! the HTML report print numbers through.

use polars::prelude::AnyValue;

/// One cell's text, formatted by what its column holds: terminal tables and the HTML report
/// print numbers through this one function, so they agree to the last digit.
pub(crate) fn format_value(column: &str, value: &AnyValue<'_>) -> String {
    let number = match value {
        AnyValue::Null => return "–".into(),
        AnyValue::Boolean(b) => return if *b { "yes" } else { "no" }.into(),
        AnyValue::String(s) => return (*s).to_owned(),
        AnyValue::StringOwned(s) => return s.to_string(),
        AnyValue::Float64(v) => *v,
        AnyValue::Float32(v) => f64::from(*v),
        other => return other.to_string(),
    };
    if column == "p_value" {
        // A small p-value keeps its magnitude: 0.0005 is not 0.000.
        if number != 0.0 && number < 0.001 {
            format!("{number:.1e}")
        } else {
            format!("{number:.3}")
        }
    } else if column.contains("_pct") {
        format!("{number:.1}")
    } else if column.ends_with("_usd") {
        super::numbers::usd_text(number)
    } else if column.contains("_wh") {
        format!("{number:.4}")
    } else if column.ends_with("_s") {
        format!("{number:.2}")
    } else if column.contains("tokens") {
        format!("{number:.1}")
    } else {
        format!("{number:.3}")
    }
}
