//! Frames as CSV (polars-io), header included, floats without binary noise.

use std::io::Write;
use std::path::Path;

use polars::prelude::*;
use polars_io::SerWriter;
use polars_io::csv::write::CsvWriter;

use super::tidy_float;

/// Writes a frame as CSV (header included) to `out`.
pub(crate) fn write_csv(df: &DataFrame, out: &mut impl Write) -> PolarsResult<()> {
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
pub(crate) fn write_csv_file(df: &DataFrame, path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut writer = std::io::BufWriter::new(file);
    write_csv(df, &mut writer).map_err(std::io::Error::other)?;
    writer.flush()
}

/// Writes `df` as CSV to the file at `path` a slice at a time, each slice with the columns
/// `more(offset, most_rows)` makes for it added last: columns too large to hold for every row
/// at once (a run's answers) are only ever held for one slice. `more` decides how long the
/// slice is (its columns' length: 1 to `most_rows`, `most_rows` at most `chunk_rows`), so that
/// it can stop at a number of bytes.
pub(crate) fn write_csv_file_in_slices(
    df: &DataFrame,
    path: &Path,
    chunk_rows: usize,
    mut more: impl FnMut(usize, usize) -> anyhow::Result<Vec<Column>>,
) -> anyhow::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut writer = std::io::BufWriter::new(file);
    let chunk_rows = chunk_rows.max(1);
    let mut offset = 0;
    loop {
        let most = chunk_rows.min(df.height() - offset);
        let columns = more(offset, most)?;
        let rows = match columns.first() {
            Some(c) if (1..=most).contains(&c.len()) || most == 0 => c.len(),
            Some(c) => anyhow::bail!("a slice of {} rows, not 1 to {most}", c.len()),
            None => most,
        };
        let mut slice = df.slice(offset as i64, rows);
        for column in columns {
            slice.with_column(column)?;
        }
        let mut slice = without_float_noise(&slice)?;
        CsvWriter::new(&mut writer)
            .include_header(offset == 0)
            .finish(&mut slice)?;
        offset += rows;
        if offset >= df.height() {
            break;
        }
    }
    writer.flush()?;
    Ok(())
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
    fn a_frame_written_in_slices_is_the_frame_with_its_added_columns() {
        let dir = tempfile::tempdir().unwrap();
        let df = DataFrame::new_infer_height(vec![Column::new("n".into(), [1i64, 2, 3])]).unwrap();
        let path = dir.path().join("x.csv");
        let mut asked = Vec::new();
        write_csv_file_in_slices(&df, &path, 2, |offset, rows| {
            asked.push((offset, rows));
            // The first slice stops at one row (as at a number of bytes).
            let rows = if offset == 0 { 1 } else { rows };
            let texts: Vec<String> = (offset..offset + rows).map(|i| format!("a,{i}")).collect();
            Ok(vec![Column::new("answer".into(), texts)])
        })
        .unwrap();
        assert_eq!(asked, [(0, 2), (1, 2)]);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "n,answer\n1,\"a,0\"\n2,\"a,1\"\n3,\"a,2\"\n"
        );
        // No row: the header alone.
        let empty = df.head(Some(0));
        write_csv_file_in_slices(&empty, &path, 2, |_, rows| {
            Ok(vec![Column::new("answer".into(), vec![""; rows])])
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "n,answer\n");
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
