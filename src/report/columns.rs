//! Reading a summary frame's columns as plain vectors for charts. A column the frame does not
//! have is an error naming it ([`ReportError::MissingColumn`]), never an empty chart: a
//! summary that renamed a column must not turn a figure blank without a word. A value of
//! another type (text where a number is read) reads as absent.
//!
//! Two ways in: the fallible readers ([`column`], [`try_texts`], [`try_floats`], …) return the
//! error; the plain ones ([`texts`], [`floats`], …), which sections call while they draw (a
//! [`super::Section`]'s body cannot fail), note the missing column, and [`watch`], around a
//! section's loading and drawing in [`super::build`], turns the note into the error.

use std::cell::RefCell;

use polars::prelude::{Column, DataFrame, DataType};

use super::ReportError;

/// The column `name` of `df`, the frame of `table` (named in the error).
pub fn column<'a>(df: &'a DataFrame, table: &str, name: &str) -> Result<&'a Column, ReportError> {
    df.column(name).map_err(|_| ReportError::MissingColumn {
        column: name.to_owned(),
        table: table.to_owned(),
    })
}

/// The text values of column `name` (empty strings where absent or not text).
pub fn try_texts(df: &DataFrame, table: &str, name: &str) -> Result<Vec<String>, ReportError> {
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
pub fn try_floats(
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
pub fn try_counts(df: &DataFrame, table: &str, name: &str) -> Result<Vec<u64>, ReportError> {
    Ok(try_floats(df, table, name)?
        .into_iter()
        .map(|v| v.map_or(0, |v| v.max(0.0) as u64))
        .collect())
}

/// The sum of the counts of column `name`.
pub fn try_total(df: &DataFrame, table: &str, name: &str) -> Result<u64, ReportError> {
    Ok(try_counts(df, table, name)?.iter().sum())
}

/// The float sum of column `name` over the rows that have a value; `None` when none has.
pub fn try_sum(df: &DataFrame, table: &str, name: &str) -> Result<Option<f64>, ReportError> {
    let values: Vec<f64> = try_floats(df, table, name)?.into_iter().flatten().collect();
    Ok((!values.is_empty()).then(|| values.iter().sum()))
}

thread_local! {
    /// The columns read and missing since [`watch`] began on this thread; `None` outside it.
    static MISSING: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Runs `draw` (a section's loading or drawing), and fails with the first column it read that
/// its frame did not have, naming `table` (the section) and the column.
pub fn watch<T>(table: &str, draw: impl FnOnce() -> T) -> Result<T, ReportError> {
    let outer = MISSING.with(|m| m.replace(Some(Vec::new())));
    let drawn = draw();
    let missing = MISSING.with(|m| m.replace(outer)).unwrap_or_default();
    match missing.into_iter().next() {
        Some(column) => Err(ReportError::MissingColumn {
            column,
            table: table.to_owned(),
        }),
        None => Ok(drawn),
    }
}

/// `read`'s value, or `absent` after noting the missing column for [`watch`].
fn noted<T>(read: Result<T, ReportError>, absent: impl FnOnce() -> T) -> T {
    read.unwrap_or_else(|error| {
        if let ReportError::MissingColumn { column, .. } = error {
            MISSING.with(|m| {
                if let Some(missing) = m.borrow_mut().as_mut() {
                    missing.push(column);
                }
            });
        }
        absent()
    })
}

/// [`try_texts`] while drawing: a missing column is noted for [`watch`].
pub fn texts(df: &DataFrame, name: &str) -> Vec<String> {
    noted(try_texts(df, "", name), || vec![String::new(); df.height()])
}

/// [`try_floats`] while drawing: a missing column is noted for [`watch`].
pub fn floats(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    noted(try_floats(df, "", name), || vec![None; df.height()])
}

/// [`try_counts`] while drawing: a missing column is noted for [`watch`].
pub fn counts(df: &DataFrame, name: &str) -> Vec<u64> {
    noted(try_counts(df, "", name), || vec![0; df.height()])
}

/// [`try_total`] while drawing: a missing column is noted for [`watch`].
pub fn total(df: &DataFrame, name: &str) -> u64 {
    noted(try_total(df, "", name), || 0)
}

/// [`try_sum`] while drawing: a missing column is noted for [`watch`].
pub fn sum(df: &DataFrame, name: &str) -> Option<f64> {
    noted(try_sum(df, "", name), || None)
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
        assert_eq!(texts(&df, "model"), ["a", "b"]);
        assert_eq!(floats(&df, "n"), [Some(2.0), None]);
        assert_eq!(counts(&df, "n"), [2, 0]);
        assert_eq!(total(&df, "n"), 2);
        assert_eq!(sum(&df, "n"), Some(2.0));
        assert_eq!(floats(&df, "model"), [None, None], "text is not a number");
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

    #[test]
    fn a_section_that_reads_a_missing_column_fails_instead_of_drawing_nothing() {
        let df = frame();
        let drawn = watch("bench", || (texts(&df, "model"), total(&df, "n")));
        assert_eq!(drawn.unwrap(), (vec!["a".to_owned(), "b".to_owned()], 2));
        let error = watch("bench", || floats(&df, "energy_wh")).unwrap_err();
        assert!(
            matches!(
                &error,
                ReportError::MissingColumn { column, table }
                    if column == "energy_wh" && table == "bench"
            ),
            "{error:?}"
        );
        // Outside a watch nothing is noted, and the next watch starts clean.
        assert_eq!(counts(&df, "missing"), [0, 0]);
        assert!(watch("bench", || texts(&df, "model")).is_ok());
    }
}
