//! Parquet files, read with the `parquet` crate's record API (no Arrow): each row an object of
//! its columns. Numbers and booleans stay JSON numbers and booleans, strings strings, lists
//! arrays, structs and maps objects; dates, times, timestamps and decimals become the text the
//! crate prints for them; bytes become text when UTF-8, else base64. A row's "line" is its
//! 1-based row number.

use bytes::Bytes;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::{Number, Value};

use super::error::CasesError;
use super::read::RawRow;
use super::template::Values;

/// The rows of a Parquet file.
pub(crate) fn read(bytes: &[u8], file: &str) -> Result<Vec<RawRow>, CasesError> {
    let file_error = |e: parquet::errors::ParquetError| CasesError::File {
        file: file.to_owned(),
        message: format!("not a readable Parquet file: {e}"),
    };
    let reader = SerializedFileReader::new(Bytes::copy_from_slice(bytes)).map_err(file_error)?;
    let rows_in_file = usize::try_from(reader.metadata().file_metadata().num_rows()).unwrap_or(0);
    let mut rows = Vec::with_capacity(rows_in_file);
    for (index, row) in reader.get_row_iter(None).map_err(file_error)?.enumerate() {
        let number = index as u64 + 1;
        let row = row.map_err(|e| CasesError::Row {
            at: format!("{file}, row {number}"),
            message: format!("cannot be read: {e}"),
        })?;
        let mut values = Values::new();
        for (name, field) in row.get_column_iter() {
            values.insert(name.clone(), json(field));
        }
        rows.push(RawRow {
            values,
            line: number,
        });
    }
    Ok(rows)
}

/// A Parquet field as a JSON value.
fn json(field: &Field) -> Value {
    let float = |v: f64| Number::from_f64(v).map_or(Value::Null, Value::Number);
    match field {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(n) => Value::from(*n),
        Field::Short(n) => Value::from(*n),
        Field::Int(n) => Value::from(*n),
        Field::Long(n) => Value::from(*n),
        Field::UByte(n) => Value::from(*n),
        Field::UShort(n) => Value::from(*n),
        Field::UInt(n) => Value::from(*n),
        Field::ULong(n) => Value::from(*n),
        Field::Float16(n) => float(f64::from(*n)),
        Field::Float(n) => float(f64::from(*n)),
        Field::Double(n) => float(*n),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => match std::str::from_utf8(b.data()) {
            Ok(text) => Value::String(text.to_owned()),
            Err(_) => {
                use base64::Engine as _;
                Value::String(base64::engine::general_purpose::STANDARD.encode(b.data()))
            }
        },
        Field::Group(row) => Value::Object(
            row.get_column_iter()
                .map(|(name, field)| (name.clone(), json(field)))
                .collect(),
        ),
        Field::ListInternal(list) => Value::Array(list.elements().iter().map(json).collect()),
        Field::MapInternal(map) => Value::Object(
            map.entries()
                .iter()
                .map(|(key, value)| {
                    let key = match json(key) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, json(value))
                })
                .collect(),
        ),
        // Dates, times, timestamps and decimals: as the crate prints them.
        Field::Decimal(_)
        | Field::Date(_)
        | Field::TimeMillis(_)
        | Field::TimeMicros(_)
        | Field::TimestampMillis(_)
        | Field::TimestampMicros(_) => Value::String(field.to_string()),
    }
}

/// A Parquet file of rows for tests: `columns` of (name, values), each an OPTIONAL INT64
/// when its values are numbers, else an OPTIONAL UTF-8 string (a `None` is a null).
#[cfg(test)]
pub(crate) fn write_for_test(columns: &[(&str, Vec<Option<Value>>)]) -> Vec<u8> {
    use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::types::Type;
    use std::sync::Arc;

    let numeric = |values: &[Option<Value>]| values.iter().flatten().all(Value::is_i64);
    let fields = columns
        .iter()
        .map(|(name, values)| {
            let builder = if numeric(values) {
                Type::primitive_type_builder(name, PhysicalType::INT64)
            } else {
                Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
                    .with_logical_type(Some(LogicalType::String))
            };
            Arc::new(
                builder
                    .with_repetition(Repetition::OPTIONAL)
                    .build()
                    .unwrap(),
            )
        })
        .collect();
    let schema = Arc::new(
        Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .unwrap(),
    );
    let mut out = Vec::new();
    let mut writer =
        SerializedFileWriter::new(&mut out, schema, Arc::new(WriterProperties::default())).unwrap();
    let mut group = writer.next_row_group().unwrap();
    for (_, values) in columns {
        let levels: Vec<i16> = values.iter().map(|v| i16::from(v.is_some())).collect();
        let mut column = group.next_column().unwrap().unwrap();
        if numeric(values) {
            let data: Vec<i64> = values.iter().flatten().filter_map(Value::as_i64).collect();
            column
                .typed::<Int64Type>()
                .write_batch(&data, Some(&levels), None)
                .unwrap();
        } else {
            let data: Vec<ByteArray> = values
                .iter()
                .flatten()
                .map(|v| ByteArray::from(v.as_str().unwrap_or_default()))
                .collect();
            column
                .typed::<ByteArrayType>()
                .write_batch(&data, Some(&levels), None)
                .unwrap();
        }
        column.close().unwrap();
    }
    group.close().unwrap();
    writer.close().unwrap();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_are_read_with_their_types_and_numbers() {
        let bytes = write_for_test(&[
            (
                "qid",
                vec![Some(json!("q1")), Some(json!("q2")), Some(json!("q3"))],
            ),
            ("a", vec![Some(json!(6)), None, Some(json!(-2))]),
            ("text", vec![Some(json!("héllo, ☃")), Some(json!("")), None]),
        ]);
        let rows = read(&bytes, "d.parquet").unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(
            Value::Object(rows[0].values.clone()),
            json!({"qid": "q1", "a": 6, "text": "héllo, ☃"})
        );
        assert_eq!(
            Value::Object(rows[1].values.clone()),
            json!({"qid": "q2", "a": null, "text": ""})
        );
        assert_eq!(rows[2].values["text"], Value::Null);
    }

    #[test]
    fn bytes_that_are_not_parquet_are_refused() {
        let e = read(b"{\"a\": 1}\n", "d.parquet").unwrap_err().to_string();
        assert!(
            e.starts_with("d.parquet: not a readable Parquet file"),
            "{e}"
        );
    }
}
