//! Reading a summary frame's columns as plain vectors for charts: a missing column or a value
//! of another type reads as absent, never as a panic (the report draws what there is).

use polars::prelude::{DataFrame, DataType};

/// The text values of column `name` (empty strings where absent).
pub fn texts(df: &DataFrame, name: &str) -> Vec<String> {
    let Ok(column) = df.column(name) else {
        return vec![String::new(); df.height()];
    };
    match column.str() {
        Ok(values) => values
            .iter()
            .map(|v| v.unwrap_or_default().to_owned())
            .collect(),
        Err(_) => vec![String::new(); df.height()],
    }
}

/// The numbers of column `name` as floats (`None` where absent).
pub fn floats(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    let cast = df
        .column(name)
        .and_then(|c| c.cast(&DataType::Float64))
        .ok();
    match cast.as_ref().and_then(|c| c.f64().ok()) {
        Some(values) => values.iter().collect(),
        None => vec![None; df.height()],
    }
}

/// The numbers of column `name` as counts (0 where absent).
pub fn counts(df: &DataFrame, name: &str) -> Vec<u64> {
    floats(df, name)
        .into_iter()
        .map(|v| v.map_or(0, |v| v.max(0.0) as u64))
        .collect()
}

/// The sum of the counts of column `name`.
pub fn total(df: &DataFrame, name: &str) -> u64 {
    counts(df, name).iter().sum()
}

/// The float sum of column `name` over the rows that have a value; `None` when none has.
pub fn sum(df: &DataFrame, name: &str) -> Option<f64> {
    let values: Vec<f64> = floats(df, name).into_iter().flatten().collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::{counts, floats, sum, texts, total};
    use polars::prelude::{Column, DataFrame};

    #[test]
    fn columns_read_forgivingly() {
        let df = DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["a", "b"]),
            Column::new("n".into(), [Some(2u64), None]),
        ])
        .unwrap();
        assert_eq!(texts(&df, "model"), ["a", "b"]);
        assert_eq!(texts(&df, "missing"), ["", ""]);
        assert_eq!(floats(&df, "n"), [Some(2.0), None]);
        assert_eq!(counts(&df, "n"), [2, 0]);
        assert_eq!(total(&df, "n"), 2);
        assert_eq!(sum(&df, "n"), Some(2.0));
        assert_eq!(sum(&df, "missing"), None);
        assert_eq!(floats(&df, "model"), [None, None], "text is not a number");
    }
}
