//! Reading a summary frame's columns as plain vectors for charts. A column the frame does not
//! have is an error naming it and the frame ([`ReportError::MissingColumn`]), never an empty
//! chart: a summary that renamed a column must not turn a figure blank without a word. A value
//! of another type (text where a number is read) reads as absent.
//!
//! Every reader is fallible and sections return their errors ([`super::Section::body`] is a
//! `Result`): nothing is noted on the side.

use polars::prelude::{Column, DataFrame, DataType};

use super::ReportError;

/// The column `name` of `df`, the frame of `table` (named in the error).
pub(crate) fn column<'a>(
    df: &'a DataFrame,
    table: &str,
    name: &str,
) -> Result<&'a Column, ReportError> {
    df.column(name).map_err(|_| ReportError::MissingColumn {
        column: name.to_owned(),
        table: table.to_owned(),
    })
}

/// The text values of column `name` (empty strings where absent or not text).
pub(crate) fn try_texts(
    df: &DataFrame,
    table: &str,
    name: &str,
) -> Result<Vec<String>, ReportError> {
    let column = column(df, table, name)?;
    Ok(match column.str() {
        Ok(values) => values
            .iter()
            .map(|v| v.unwrap_or_default().to_owned())
            .collect(),
        Err(_) => vec![String::new(); df.height()],
    })
}

/// The numbers of column `name` as floats (`None` where absent or not a number).
pub(crate) fn try_floats(
    df: &DataFrame,
    table: &str,
    name: &str,
) -> Result<Vec<Option<f64>>, ReportError> {
    let cast = column(df, table, name)?.cast(&DataType::Float64).ok();
    Ok(match cast.as_ref().and_then(|c| c.f64().ok()) {
        Some(values) => values.iter().collect(),
        None => vec![None; df.height()],
    })
}

/// The numbers of column `name` as counts (0 where absent).
pub(crate) fn try_counts(df: &DataFrame, table: &str, name: &str) -> Result<Vec<u64>, ReportError> {
    Ok(try_floats(df, table, name)?
        .into_iter()
        .map(|v| v.map_or(0, |v| v.max(0.0) as u64))
        .collect())
}

/// The sum of the counts of column `name`.
pub(crate) fn try_total(df: &DataFrame, table: &str, name: &str) -> Result<u64, ReportError> {
    Ok(try_counts(df, table, name)?.iter().sum())
}

/// The float sum of column `name` over the rows that have a value; `None` when none has.
pub(crate) fn try_sum(df: &DataFrame, table: &str, name: &str) -> Result<Option<f64>, ReportError> {
    let values: Vec<f64> = try_floats(df, table, name)?.into_iter().flatten().collect();
    Ok((!values.is_empty()).then(|| values.iter().sum()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> DataFrame {
        DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["a", "b"]),
            Column::new("n".into(), [Some(2u64), None]),
        ])
        .unwrap()
    }

    #[test]
    fn columns_read_as_vectors() {
        let df = frame();
        let t = "t";
        assert_eq!(try_texts(&df, t, "model").unwrap(), ["a", "b"]);
        assert_eq!(try_floats(&df, t, "n").unwrap(), [Some(2.0), None]);
        assert_eq!(try_counts(&df, t, "n").unwrap(), [2, 0]);
        assert_eq!(try_total(&df, t, "n").unwrap(), 2);
        assert_eq!(try_sum(&df, t, "n").unwrap(), Some(2.0));
        assert_eq!(
            try_floats(&df, t, "model").unwrap(),
            [None, None],
            "text is not a number"
        );
        assert_eq!(
            try_texts(&df, t, "n").unwrap(),
            ["", ""],
            "a number is not text"
        );
    }

    #[test]
    fn a_missing_column_is_an_error_naming_it() {
        let df = frame();
        let error = try_floats(&df, "by model", "success_pct").unwrap_err();
        assert!(
            matches!(
                &error,
                ReportError::MissingColumn { column, table }
                    if column == "success_pct" && table == "by model"
            ),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains("success_pct") && message.contains("by model"),
            "{message}"
        );
        assert!(try_texts(&df, "by model", "model").is_ok());
        assert!(try_sum(&df, "by model", "missing").is_err());
    }
}
