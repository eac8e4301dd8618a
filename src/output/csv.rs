//! Frames as CSV (polars-io), header included, floats without binary noise.

use std::io::Write;
use std::path::Path;

use polars::prelude::*;
use polars_io::SerWriter;
use polars_io::csv::write::CsvWriter;

use super::tidy_float;

/// Writes a frame as CSV (header included) to `out`.
pub fn write_csv(df: &DataFrame, out: &mut impl Write) -> PolarsResult<()> {
    let mut df = without_float_noise(df)?;
    CsvWriter::new(out).include_header(true).finish(&mut df)
}

/// A copy of `df` whose float columns are [`tidy_float`]ed, for CSV and JSON.
fn without_float_noise(df: &DataFrame) -> PolarsResult<DataFrame> {
    let mut df = df.clone();
    let floats: Vec<PlSmallStr> = df
        .columns()
        .iter()
        .filter(|c| c.dtype() == &DataType::Float64)
        .map(|c| c.name().clone())
        .collect();
    for name in floats {
        let tidy: Float64Chunked = df
            .column(&name)?
            .f64()?
            .apply_values(tidy_float)
            .with_name(name.clone());
        df.with_column(tidy.into_column())?;
    }
    Ok(df)
}

/// Writes a frame as CSV to the file at `path`.
pub fn write_csv_file(df: &DataFrame, path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut writer = std::io::BufWriter::new(file);
    write_csv(df, &mut writer).map_err(std::io::Error::other)?;
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::to_json;
    use serde_json::Value;

    #[test]
    fn csv_floats_lose_their_binary_noise() {
        let noisy = 0.1 + 0.2;
        let mut csv = Vec::new();
        let df = DataFrame::new_infer_height(vec![Column::new("x".into(), vec![noisy])]).unwrap();
        write_csv(&df, &mut csv).unwrap();
        assert_eq!(String::from_utf8(csv).unwrap(), "x\n0.3\n");
    }

    fn frame() -> DataFrame {
        DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["a,b", "c\"d"]),
            Column::new("success_pct".into(), [Some(50.0), None]),
            Column::new("total_cost_usd".into(), [0.0123456789, 0.0]),
        ])
        .unwrap()
    }

    #[test]
    fn csv_quotes_and_json_nulls() {
        let mut out = Vec::new();
        write_csv(&frame(), &mut out).unwrap();
        let csv = String::from_utf8(out).unwrap();
        assert!(
            csv.starts_with("model,success_pct,total_cost_usd\n"),
            "{csv}"
        );
        assert!(
            csv.contains("\"a,b\"") && csv.contains("\"c\"\"d\""),
            "{csv}"
        );
        let json = to_json(&frame());
        assert_eq!(json[1]["success_pct"], Value::Null);
        assert_eq!(json[0]["model"], "a,b");
    }
}
