//! Parquet files, read with the `parquet` crate's record API (no Arrow): each row an object of
//! its columns. Every compression the format defines but LZO is read (snappy, gzip, brotli,
//! LZ4 in both its deprecated Hadoop framing and LZ4_RAW, zstd, none); a column compressed
//! with LZO, or of a type the reader has no value for (INTERVAL), is refused before any row is
//! read, naming the file, the column and the fix.
//!
//! Values: numbers and booleans stay JSON numbers and booleans (a NaN or infinite float becomes
//! the text `NaN`, `inf`, `-inf`: JSON has no such number, and a null would read as a missing
//! value); strings stay strings, lists arrays, structs and maps objects (a null struct is
//! null); decimals become their text; dates `2024-01-02`; times `03:04:05.123`; timestamps
//! `2024-01-02 03:04:05.123` when zone-less (`isAdjustedToUTC = false`, as pandas, polars and
//! DuckDB write a timestamp without a zone; INT96 too) and `2024-01-02 03:04:05.123+00:00`
//! when an instant in UTC, at the precision stored (milli-, micro- or nanoseconds, trailing
//! zeros left out); UUIDs their hyphenated text; bytes text when UTF-8, else base64. A row's
//! "line" is its 1-based row number.

use bytes::Bytes;
use chrono::{DateTime, NaiveDate, NaiveTime};
use parquet::basic::{
    Compression, ConvertedType, LogicalType, Repetition, TimeUnit, Type as PhysicalType,
};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use parquet::schema::types::{ColumnDescriptor, Type};
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
    check_codecs(reader.metadata(), file)?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    for column in schema.columns() {
        check_column(column, file)?;
    }
    let root = schema.root_schema();
    let rows_in_file = usize::try_from(reader.metadata().file_metadata().num_rows()).unwrap_or(0);
    let mut rows = Vec::with_capacity(rows_in_file);
    for (index, row) in reader.get_row_iter(None).map_err(file_error)?.enumerate() {
        let number = index as u64 + 1;
        let row = row.map_err(|e| CasesError::Row {
            at: format!("{file}, row {number}"),
            message: format!(
                "cannot be read: {e}; check that another reader (DuckDB, pyarrow) reads the file, and write it again"
            ),
        })?;
        let mut values = Values::new();
        for (name, field) in row.get_column_iter() {
            values.insert(name.clone(), json(field, child(root, name)));
        }
        rows.push(RawRow {
            values,
            line: number,
        });
    }
    Ok(rows)
}

/// What to write a file with instead of a compression or a type that cannot be read.
const REWRITE: &str = "pyarrow's `pq.write_table(table, path, compression=\"zstd\")`, or DuckDB's `COPY (…) TO 'file.parquet' (FORMAT parquet, COMPRESSION zstd)`";

/// Refuses a column chunk compressed with a codec the reader lacks (LZO), naming it.
fn check_codecs(metadata: &ParquetMetaData, file: &str) -> Result<(), CasesError> {
    for group in metadata.row_groups() {
        for column in group.columns() {
            if column.compression() == Compression::LZO {
                return Err(CasesError::File {
                    file: file.to_owned(),
                    message: format!(
                        "column `{}` is compressed with LZO, which track cannot read (snappy, gzip, brotli, LZ4, LZ4_RAW, zstd and none are read); write the file again with another compression: {REWRITE}",
                        column.column_path().string()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Refuses a column whose values the record reader cannot convert (it would panic): the
/// (physical, converted) pairs it handles are those below.
fn check_column(column: &ColumnDescriptor, file: &str) -> Result<(), CasesError> {
    use ConvertedType as C;
    let converted = column.converted_type();
    let readable = match column.physical_type() {
        PhysicalType::BOOLEAN
        | PhysicalType::INT96
        | PhysicalType::FLOAT
        | PhysicalType::DOUBLE => true,
        PhysicalType::INT32 => matches!(
            converted,
            C::NONE
                | C::INT_8
                | C::INT_16
                | C::INT_32
                | C::UINT_8
                | C::UINT_16
                | C::UINT_32
                | C::DATE
                | C::TIME_MILLIS
                | C::DECIMAL
        ),
        PhysicalType::INT64 => matches!(
            converted,
            C::NONE
                | C::INT_64
                | C::UINT_64
                | C::TIME_MICROS
                | C::TIMESTAMP_MILLIS
                | C::TIMESTAMP_MICROS
                | C::DECIMAL
        ),
        PhysicalType::BYTE_ARRAY => matches!(
            converted,
            C::NONE | C::UTF8 | C::ENUM | C::JSON | C::BSON | C::DECIMAL
        ),
        PhysicalType::FIXED_LEN_BYTE_ARRAY => matches!(converted, C::NONE | C::DECIMAL),
    };
    if readable {
        return Ok(());
    }
    let name = column.path().string();
    Err(CasesError::File {
        file: file.to_owned(),
        message: format!(
            "column `{name}` holds {converted} values ({}), which track cannot read; leave the column out, or write it as text (DuckDB: `CAST({name} AS VARCHAR)`)",
            column.physical_type()
        ),
    })
}

/// The field `name` of a group type.
fn child<'a>(group: &'a Type, name: &str) -> Option<&'a Type> {
    if !group.is_group() {
        return None;
    }
    group
        .get_fields()
        .iter()
        .find(|f| f.name() == name)
        .map(AsRef::as_ref)
}

/// Whether a type is a repeated field.
fn is_repeated(ty: &Type) -> bool {
    let info = ty.get_basic_info();
    info.has_repetition() && info.repetition() == Repetition::REPEATED
}

/// The type of a list's elements, by the format's rules for lists (and their older forms).
fn element_type(list: &Type) -> Option<&Type> {
    if is_repeated(list) {
        return Some(list);
    }
    let repeated = list.get_fields().first()?;
    if repeated.is_primitive() {
        return Some(repeated);
    }
    match repeated.get_fields() {
        [element] if repeated.name() != "array" && !repeated.name().ends_with("_tuple") => {
            Some(element)
        }
        _ => Some(repeated),
    }
}

/// The types of a map's keys and values.
fn key_value_types(map: &Type) -> (Option<&Type>, Option<&Type>) {
    let key_value = if is_repeated(map) {
        Some(map)
    } else {
        map.get_fields().first().map(AsRef::as_ref)
    };
    let fields = key_value.filter(|t| t.is_group()).map(|t| t.get_fields());
    (
        fields.and_then(|f| f.first()).map(AsRef::as_ref),
        fields.and_then(|f| f.get(1)).map(AsRef::as_ref),
    )
}

/// The logical type of a primitive column.
fn logical(ty: Option<&Type>) -> Option<&LogicalType> {
    ty.filter(|t| t.is_primitive())
        .and_then(|t| t.get_basic_info().logical_type_ref())
}

/// A Parquet field as a JSON value, its column's type `ty` telling how to show it.
fn json(field: &Field, ty: Option<&Type>) -> Value {
    match field {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(n) => Value::from(*n),
        Field::Short(n) => Value::from(*n),
        Field::Int(n) => temporal(i64::from(*n), ty).unwrap_or_else(|| Value::from(*n)),
        Field::Long(n) => temporal(*n, ty).unwrap_or_else(|| Value::from(*n)),
        Field::UByte(n) => Value::from(*n),
        Field::UShort(n) => Value::from(*n),
        Field::UInt(n) => Value::from(*n),
        Field::ULong(n) => Value::from(*n),
        Field::Float16(n) => float(f64::from(*n)),
        Field::Float(n) => float(f64::from(*n)),
        Field::Double(n) => float(*n),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => bytes(b.data(), ty),
        Field::Group(row) => Value::Object(
            row.get_column_iter()
                .map(|(name, field)| (name.clone(), json(field, ty.and_then(|t| child(t, name)))))
                .collect(),
        ),
        Field::ListInternal(list) => {
            let element = ty.and_then(element_type);
            Value::Array(list.elements().iter().map(|f| json(f, element)).collect())
        }
        Field::MapInternal(map) => {
            let (key_type, value_type) = ty.map_or((None, None), key_value_types);
            Value::Object(
                map.entries()
                    .iter()
                    .map(|(key, value)| {
                        let key = match json(key, key_type) {
                            Value::String(s) => s,
                            other => other.to_string(),
                        };
                        (key, json(value, value_type))
                    })
                    .collect(),
            )
        }
        Field::Decimal(_) => Value::String(field.to_string()),
        Field::Date(days) => date(*days),
        Field::TimeMillis(ms) => time(i64::from(*ms), 1_000),
        Field::TimeMicros(us) => time(*us, 1_000_000),
        Field::TimestampMillis(ms) => timestamp(*ms, 1_000, in_utc(ty)),
        Field::TimestampMicros(us) => timestamp(*us, 1_000_000, in_utc(ty)),
    }
}

/// A float as a JSON number; NaN and the infinities, which JSON has not, as text.
fn float(v: f64) -> Value {
    match Number::from_f64(v) {
        Some(n) => Value::Number(n),
        None if v.is_nan() => Value::String("NaN".into()),
        None if v > 0.0 => Value::String("inf".into()),
        None => Value::String("-inf".into()),
    }
}

/// Bytes: a UUID's text, else the text when UTF-8, else base64.
fn bytes(data: &[u8], ty: Option<&Type>) -> Value {
    if matches!(logical(ty), Some(LogicalType::Uuid))
        && let Ok(id) = <[u8; 16]>::try_from(data)
    {
        let hex = hex::encode(id);
        return Value::String(format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        ));
    }
    match std::str::from_utf8(data) {
        Ok(text) => Value::String(text.to_owned()),
        Err(_) => {
            use base64::Engine as _;
            Value::String(base64::engine::general_purpose::STANDARD.encode(data))
        }
    }
}

/// Units of a time unit in a second.
fn per_second(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::MILLIS => 1_000,
        TimeUnit::MICROS => 1_000_000,
        TimeUnit::NANOS => 1_000_000_000,
    }
}

/// An integer that a logical type makes a time or a timestamp (written without the converted
/// type the record reader goes by: zone-less timestamps, nanoseconds).
fn temporal(value: i64, ty: Option<&Type>) -> Option<Value> {
    match logical(ty)? {
        LogicalType::Timestamp(t) => Some(timestamp(
            value,
            per_second(&t.unit),
            t.is_adjusted_to_u_t_c,
        )),
        LogicalType::Time(t) => Some(time(value, per_second(&t.unit))),
        LogicalType::Date => i32::try_from(value).ok().map(date),
        _ => None,
    }
}

/// Whether a timestamp column holds instants in UTC: as its logical type says; INT96 (Spark's,
/// Impala's) is zone-less, as DuckDB and pyarrow read it; the old converted types are UTC.
fn in_utc(ty: Option<&Type>) -> bool {
    match logical(ty) {
        Some(LogicalType::Timestamp(t)) => t.is_adjusted_to_u_t_c,
        _ => !ty.is_some_and(|t| t.is_primitive() && t.get_physical_type() == PhysicalType::INT96),
    }
}

/// `value` units (`per_second` to a second) since 1970-01-01 00:00:00: `2024-01-02
/// 03:04:05.123`, with `+00:00` when `utc`; out of range, the number as stored.
fn timestamp(value: i64, per_second: i64, utc: bool) -> Value {
    let seconds = value.div_euclid(per_second);
    let nanos = value.rem_euclid(per_second) * (1_000_000_000 / per_second);
    match u32::try_from(nanos)
        .ok()
        .and_then(|n| DateTime::from_timestamp(seconds, n))
    {
        Some(t) => {
            let text = t.naive_utc().format("%Y-%m-%d %H:%M:%S%.f").to_string();
            Value::String(if utc { text + "+00:00" } else { text })
        }
        None => Value::from(value),
    }
}

/// A time of day, `value` units (`per_second` to a second) since midnight: `03:04:05.123`.
fn time(value: i64, per_second: i64) -> Value {
    let seconds = value.div_euclid(per_second);
    let nanos = value.rem_euclid(per_second) * (1_000_000_000 / per_second);
    match (u32::try_from(seconds), u32::try_from(nanos)) {
        (Ok(s), Ok(n)) => match NaiveTime::from_num_seconds_from_midnight_opt(s, n) {
            Some(t) => Value::String(t.format("%H:%M:%S%.f").to_string()),
            None => Value::from(value),
        },
        _ => Value::from(value),
    }
}

/// A date, `days` since 1970-01-01: `2024-01-02`; out of range, the number as stored.
fn date(days: i32) -> Value {
    NaiveDate::from_ymd_opt(1970, 1, 1)
        .and_then(|epoch| epoch.checked_add_signed(chrono::TimeDelta::days(i64::from(days))))
        .map_or_else(
            || Value::from(days),
            |d| Value::String(d.format("%Y-%m-%d").to_string()),
        )
}

/// A Parquet file of rows for tests: `columns` of (name, values), each an OPTIONAL INT64
/// when its values are numbers, else an OPTIONAL UTF-8 string (a `None` is a null).
#[cfg(test)]
pub(crate) fn write_for_test(columns: &[(&str, Vec<Option<Value>>)]) -> Vec<u8> {
    write_compressed_for_test(columns, parquet::basic::Compression::UNCOMPRESSED)
}

/// [`write_for_test`] with every column compressed with `codec`.
#[cfg(test)]
pub(crate) fn write_compressed_for_test(
    columns: &[(&str, Vec<Option<Value>>)],
    codec: parquet::basic::Compression,
) -> Vec<u8> {
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
    let properties = WriterProperties::builder().set_compression(codec).build();
    let mut writer = SerializedFileWriter::new(&mut out, schema, Arc::new(properties)).unwrap();
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
    fn every_compression_but_lzo_is_read() {
        use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
        let columns = [
            ("qid", vec![Some(json!("q1")), Some(json!("q2"))]),
            ("a", vec![Some(json!(6)), None]),
        ];
        for codec in [
            Compression::UNCOMPRESSED,
            Compression::SNAPPY,
            Compression::GZIP(GzipLevel::default()),
            Compression::BROTLI(BrotliLevel::default()),
            Compression::LZ4,
            Compression::LZ4_RAW,
            Compression::ZSTD(ZstdLevel::default()),
        ] {
            let bytes = write_compressed_for_test(&columns, codec);
            let rows = read(&bytes, "d.parquet").unwrap_or_else(|e| panic!("{codec}: {e}"));
            assert_eq!(
                Value::Object(rows[0].values.clone()),
                json!({"qid": "q1", "a": 6}),
                "{codec}"
            );
            assert_eq!(rows[1].values["a"], Value::Null, "{codec}");
        }
    }

    /// A file of `schema` (the format's message syntax) written by `write`, one row group.
    fn written(
        schema: &str,
        write: impl FnOnce(&mut parquet::file::writer::SerializedRowGroupWriter<'_, &mut Vec<u8>>),
    ) -> Vec<u8> {
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        let schema =
            std::sync::Arc::new(parquet::schema::parser::parse_message_type(schema).unwrap());
        let mut out = Vec::new();
        let properties = std::sync::Arc::new(WriterProperties::default());
        let mut writer = SerializedFileWriter::new(&mut out, schema, properties).unwrap();
        let mut group = writer.next_row_group().unwrap();
        write(&mut group);
        group.close().unwrap();
        writer.close().unwrap();
        out
    }

    /// Writes the next column of a row group: `values` of type `T`, with `def` levels.
    fn column<T: parquet::data_type::DataType>(
        group: &mut parquet::file::writer::SerializedRowGroupWriter<'_, &mut Vec<u8>>,
        values: &[T::T],
        def: Option<&[i16]>,
    ) {
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<T>().write_batch(values, def, None).unwrap();
        column.close().unwrap();
    }

    #[test]
    fn timestamps_show_their_zone_only_when_they_have_one_at_their_precision() {
        use parquet::data_type::{Int32Type, Int64Type};
        // 2024-01-02 03:04:05 UTC, and .123 / .123456 / .123456789 after it.
        const AT: i64 = 1_704_164_645;
        let bytes = written(
            "message m {
                required int64 naive_us (TIMESTAMP(MICROS, false));
                required int64 utc_ms (TIMESTAMP(MILLIS, true));
                required int64 naive_ns (TIMESTAMP(NANOS, false));
                required int64 utc_ns (TIMESTAMP(NANOS, true));
                required int64 legacy (TIMESTAMP_MILLIS);
                required int32 day (DATE);
                required int64 t_us (TIME(MICROS, false));
            }",
            |g| {
                column::<Int64Type>(g, &[AT * 1_000_000, AT * 1_000_000 + 123_456], None);
                column::<Int64Type>(g, &[AT * 1_000, AT * 1_000 + 123], None);
                column::<Int64Type>(
                    g,
                    &[AT * 1_000_000_000, AT * 1_000_000_000 + 123_456_789],
                    None,
                );
                column::<Int64Type>(g, &[AT * 1_000_000_000, -1], None);
                column::<Int64Type>(g, &[AT * 1_000, 0], None);
                column::<Int32Type>(g, &[19_724, -1], None);
                column::<Int64Type>(g, &[(3 * 3600 + 4 * 60 + 5) * 1_000_000, 1], None);
            },
        );
        let rows = read(&bytes, "t.parquet").unwrap();
        assert_eq!(
            Value::Object(rows[0].values.clone()),
            json!({
                "naive_us": "2024-01-02 03:04:05",
                "utc_ms": "2024-01-02 03:04:05+00:00",
                "naive_ns": "2024-01-02 03:04:05",
                "utc_ns": "2024-01-02 03:04:05+00:00",
                "legacy": "2024-01-02 03:04:05+00:00",
                "day": "2024-01-02",
                "t_us": "03:04:05",
            })
        );
        assert_eq!(
            Value::Object(rows[1].values.clone()),
            json!({
                "naive_us": "2024-01-02 03:04:05.123456",
                "utc_ms": "2024-01-02 03:04:05.123+00:00",
                "naive_ns": "2024-01-02 03:04:05.123456789",
                "utc_ns": "1969-12-31 23:59:59.999999999+00:00",
                "legacy": "1970-01-01 00:00:00+00:00",
                "day": "1969-12-31",
                "t_us": "00:00:00.000001",
            })
        );
    }

    #[test]
    fn nan_and_infinities_are_text_and_a_null_struct_is_null() {
        use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, FloatType, Int64Type};
        let bytes = written(
            "message m {
                optional double x;
                optional float y;
                optional group s {
                    optional int64 a;
                    required binary b (UTF8);
                }
            }",
            |g| {
                column::<DoubleType>(g, &[f64::NAN, f64::INFINITY, 1.5], Some(&[1, 1, 1, 0]));
                column::<FloatType>(g, &[f32::NEG_INFINITY, 0.25], Some(&[1, 0, 1, 0]));
                // s: {a: 1, b: "x"}, null, {a: null, b: "y"}, null.
                column::<Int64Type>(g, &[1], Some(&[2, 0, 1, 0]));
                column::<ByteArrayType>(
                    g,
                    &[ByteArray::from("x"), ByteArray::from("y")],
                    Some(&[1, 0, 1, 0]),
                );
            },
        );
        let rows = read(&bytes, "n.parquet").unwrap();
        let values: Vec<Value> = rows
            .iter()
            .map(|r| Value::Object(r.values.clone()))
            .collect();
        assert_eq!(
            values,
            [
                json!({"x": "NaN", "y": "-inf", "s": {"a": 1, "b": "x"}}),
                json!({"x": "inf", "y": null, "s": null}),
                json!({"x": 1.5, "y": 0.25, "s": {"a": null, "b": "y"}}),
                json!({"x": null, "y": null, "s": null}),
            ]
        );
    }

    #[test]
    fn a_column_of_a_type_without_a_value_is_refused_naming_it() {
        use parquet::data_type::{FixedLenByteArray, FixedLenByteArrayType};
        let bytes = written(
            "message m { required fixed_len_byte_array(12) wait (INTERVAL); }",
            |g| {
                column::<FixedLenByteArrayType>(g, &[FixedLenByteArray::from(vec![0u8; 12])], None);
            },
        );
        let e = read(&bytes, "i.parquet").unwrap_err().to_string();
        assert_eq!(
            e,
            "i.parquet: column `wait` holds INTERVAL values (FIXED_LEN_BYTE_ARRAY), which track cannot read; leave the column out, or write it as text (DuckDB: `CAST(wait AS VARCHAR)`)"
        );
    }

    #[test]
    fn a_column_compressed_with_lzo_is_refused_naming_it() {
        use parquet::file::metadata::{
            ColumnChunkMetaData, FileMetaData, ParquetMetaData, RowGroupMetaData,
        };
        use parquet::schema::types::SchemaDescriptor;
        use std::sync::Arc;
        // No writer writes LZO: the metadata of a file that would hold it.
        let schema = parquet::schema::parser::parse_message_type(
            "message m { optional binary q (UTF8); optional int64 a; }",
        )
        .unwrap();
        let schema = Arc::new(SchemaDescriptor::new(Arc::new(schema)));
        let chunk = |i: usize, codec| {
            ColumnChunkMetaData::builder(schema.column(i))
                .set_compression(codec)
                .build()
                .unwrap()
        };
        let group = |codecs: [Compression; 2]| {
            RowGroupMetaData::builder(schema.clone())
                .set_num_rows(1)
                .set_column_metadata(vec![chunk(0, codecs[0]), chunk(1, codecs[1])])
                .build()
                .unwrap()
        };
        let file = FileMetaData::new(1, 2, None, None, schema.clone(), None);
        let snappy = [Compression::SNAPPY, Compression::SNAPPY];
        let metadata = ParquetMetaData::new(
            file,
            vec![
                group(snappy),
                group([Compression::SNAPPY, Compression::LZO]),
            ],
        );
        let e = check_codecs(&metadata, "z.parquet")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "z.parquet: column `a` is compressed with LZO, which track cannot read (snappy, gzip, brotli, LZ4, LZ4_RAW, zstd and none are read); write the file again with another compression: pyarrow's"
            ),
            "{e}"
        );
        let file = FileMetaData::new(1, 1, None, None, schema.clone(), None);
        assert!(check_codecs(&ParquetMetaData::new(file, vec![group(snappy)]), "z").is_ok());
    }

    #[test]
    fn a_uuid_is_its_text() {
        use parquet::data_type::{FixedLenByteArray, FixedLenByteArrayType};
        let bytes = written(
            "message m { required fixed_len_byte_array(16) id (UUID); }",
            |g| {
                let id: Vec<u8> = (0u8..16).collect();
                column::<FixedLenByteArrayType>(g, &[FixedLenByteArray::from(id)], None);
            },
        );
        let rows = read(&bytes, "u.parquet").unwrap();
        assert_eq!(
            rows[0].values["id"],
            json!("00010203-0405-0607-0809-0a0b0c0d0e0f")
        );
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
