//! Parquet files of table rows, for `track export parquet`: one file of some columns, written
//! one row group a batch with the `parquet` crate's column writers (no Arrow), zstd-compressed.
//!
//! Types, from each column's SQLite affinity: INTEGER → INT64, REAL (and NUMERIC) → DOUBLE,
//! TEXT → BYTE_ARRAY annotated STRING (UTF-8). Every column is OPTIONAL (nullable): SQLite's
//! NOT NULL is a property of today's rows, not a promise about a later column. BLOB columns
//! are not written.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{Type, TypePtr};

use crate::store::{Affinity, ColumnBatch, ColumnValues, ExportColumn};

/// Rows in a row group: each batch read from SQLite is one row group, at most this long.
/// 64 Ki rows keeps a batch of even wide rows (a benchmark result's ~35 columns) within a few
/// tens of MB, and row groups large enough for readers to skip by their statistics.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// The zstd level: zstd's own default, a good ratio at hundreds of MB/s.
pub const ZSTD_LEVEL: i32 = 3;

/// Why a Parquet file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ParquetWriteError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path} as Parquet: {source}")]
    Parquet {
        path: PathBuf,
        #[source]
        source: ParquetError,
    },
    #[error("a batch has {got} columns, the file {expected}")]
    Columns { got: usize, expected: usize },
}

/// The Parquet type of a column of `affinity`: its physical type and annotation; `None` for
/// BLOB, which is not written.
pub(crate) fn parquet_type(affinity: Affinity) -> Option<(PhysicalType, Option<LogicalType>)> {
    match affinity {
        Affinity::Integer => Some((PhysicalType::INT64, None)),
        Affinity::Real | Affinity::Numeric => Some((PhysicalType::DOUBLE, None)),
        Affinity::Text => Some((PhysicalType::BYTE_ARRAY, Some(LogicalType::String))),
        Affinity::Blob => None,
    }
}

/// The schema of a file of `columns` (BLOB columns left out), every field OPTIONAL.
pub(crate) fn schema(columns: &[ExportColumn]) -> Result<TypePtr, ParquetError> {
    let mut fields = Vec::with_capacity(columns.len());
    for column in columns {
        let Some((physical, logical)) = parquet_type(column.affinity) else {
            continue;
        };
        let field = Type::primitive_type_builder(&column.name, physical)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(logical)
            .build()?;
        fields.push(Arc::new(field));
    }
    Ok(Arc::new(
        Type::group_type_builder("schema")
            .with_fields(fields)
            .build()?,
    ))
}

/// The properties every file is written with: zstd, row groups of [`ROW_GROUP_ROWS`].
fn properties() -> Result<WriterProperties, ParquetError> {
    Ok(WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("track {} (parquet-rs)", env!("CARGO_PKG_VERSION")))
        .build())
}

/// What a finished file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartWritten {
    pub rows: u64,
    pub row_groups: usize,
    pub bytes: u64,
}

/// A Parquet file being written: into a hidden file beside `path`, renamed to `path` by
/// [`PartWriter::finish`]. Dropped unfinished, the hidden file is removed, so a reader of
/// `*.parquet` never sees half a file.
pub struct PartWriter {
    writer: Option<SerializedFileWriter<File>>,
    path: PathBuf,
    temp: PathBuf,
    columns: usize,
    rows: u64,
    row_groups: usize,
}

impl PartWriter {
    /// Starts the file `path` of `columns` (none of them BLOB). Its folder must exist.
    pub(crate) fn create(path: &Path, columns: &[ExportColumn]) -> Result<Self, ParquetWriteError> {
        let name = path
            .file_name()
            .map_or_else(|| "part".into(), |n| n.to_string_lossy().into_owned());
        let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let parquet_error = |source| ParquetWriteError::Parquet {
            path: path.to_path_buf(),
            source,
        };
        let file = File::create(&temp).map_err(|source| ParquetWriteError::Io {
            path: temp.clone(),
            source,
        })?;
        // The writer buffers what it writes (a `BufWriter` of its own).
        let writer = SerializedFileWriter::new(
            file,
            schema(columns).map_err(parquet_error)?,
            Arc::new(properties().map_err(parquet_error)?),
        );
        let writer = match writer {
            Ok(w) => w,
            Err(source) => {
                let _ = std::fs::remove_file(&temp);
                return Err(parquet_error(source));
            }
        };
        Ok(Self {
            writer: Some(writer),
            path: path.to_path_buf(),
            temp,
            columns: columns
                .iter()
                .filter(|c| parquet_type(c.affinity).is_some())
                .count(),
            rows: 0,
            row_groups: 0,
        })
    }

    fn parquet_error(&self, source: ParquetError) -> ParquetWriteError {
        ParquetWriteError::Parquet {
            path: self.path.clone(),
            source,
        }
    }

    /// Writes `batch` as one row group (a longer batch as several, of [`ROW_GROUP_ROWS`]).
    pub(crate) fn write(&mut self, batch: ColumnBatch) -> Result<(), ParquetWriteError> {
        if batch.columns.len() != self.columns {
            return Err(ParquetWriteError::Columns {
                got: batch.columns.len(),
                expected: self.columns,
            });
        }
        if batch.rows == 0 {
            return Ok(());
        }
        if batch.rows > ROW_GROUP_ROWS {
            for part in split(batch, ROW_GROUP_ROWS) {
                self.write(part)?;
            }
            return Ok(());
        }
        let rows = batch.rows;
        let result = self.write_row_group(batch);
        result.map_err(|e| self.parquet_error(e))?;
        self.rows += rows as u64;
        self.row_groups += 1;
        Ok(())
    }

    fn write_row_group(&mut self, batch: ColumnBatch) -> Result<(), ParquetError> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(ParquetError::General("the file is closed".into()));
        };
        let mut group = writer.next_row_group()?;
        for values in batch.columns {
            let Some(mut column) = group.next_column()? else {
                return Err(ParquetError::General("more columns than the schema".into()));
            };
            match values {
                ColumnValues::Integer { values, present } => {
                    column.typed::<Int64Type>().write_batch(
                        &values,
                        Some(&levels(&present)),
                        None,
                    )?;
                }
                ColumnValues::Real { values, present } => {
                    column.typed::<DoubleType>().write_batch(
                        &values,
                        Some(&levels(&present)),
                        None,
                    )?;
                }
                ColumnValues::Text {
                    bytes,
                    ends,
                    present,
                } => {
                    // One buffer, sliced: no copy of the texts.
                    let bytes = Bytes::from(bytes);
                    let mut start = 0;
                    let values: Vec<ByteArray> = ends
                        .iter()
                        .map(|&end| {
                            let value = ByteArray::from(bytes.slice(start..end));
                            start = end;
                            value
                        })
                        .collect();
                    column.typed::<ByteArrayType>().write_batch(
                        &values,
                        Some(&levels(&present)),
                        None,
                    )?;
                }
            }
            column.close()?;
        }
        if group.next_column()?.is_some() {
            return Err(ParquetError::General(
                "fewer columns than the schema".into(),
            ));
        }
        group.close()?;
        Ok(())
    }

    /// Ends the file and puts it at its path (replacing a file there).
    pub(crate) fn finish(mut self) -> Result<PartWritten, ParquetWriteError> {
        let Some(writer) = self.writer.take() else {
            return Err(self.parquet_error(ParquetError::General("the file is closed".into())));
        };
        let io_error = |path: &Path, source| ParquetWriteError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = writer.into_inner().map_err(|e| self.parquet_error(e))?;
        let bytes = file.metadata().map_err(|e| io_error(&self.temp, e))?.len();
        drop(file);
        std::fs::rename(&self.temp, &self.path).map_err(|e| io_error(&self.path, e))?;
        Ok(PartWritten {
            rows: self.rows,
            row_groups: self.row_groups,
            bytes,
        })
    }
}

impl Drop for PartWriter {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Definition levels of an OPTIONAL column: 1 where a value is present, 0 for NULL.
fn levels(present: &[bool]) -> Vec<i16> {
    present.iter().map(|&p| i16::from(p)).collect()
}

/// `batch` cut into batches of at most `rows` rows.
fn split(batch: ColumnBatch, rows: usize) -> Vec<ColumnBatch> {
    let mut parts: Vec<ColumnBatch> = Vec::new();
    let mut from = 0;
    while from < batch.rows {
        let to = (from + rows).min(batch.rows);
        parts.push(ColumnBatch {
            rows: to - from,
            columns: batch
                .columns
                .iter()
                .map(|c| slice_rows(c, from, to))
                .collect(),
        });
        from = to;
    }
    parts
}

/// Rows `from..to` of a column.
fn slice_rows(column: &ColumnValues, from: usize, to: usize) -> ColumnValues {
    fn present_before(present: &[bool], row: usize) -> usize {
        present[..row].iter().filter(|&&p| p).count()
    }
    match column {
        ColumnValues::Integer { values, present } => {
            let (a, b) = (present_before(present, from), present_before(present, to));
            ColumnValues::Integer {
                values: values[a..b].to_vec(),
                present: present[from..to].to_vec(),
            }
        }
        ColumnValues::Real { values, present } => {
            let (a, b) = (present_before(present, from), present_before(present, to));
            ColumnValues::Real {
                values: values[a..b].to_vec(),
                present: present[from..to].to_vec(),
            }
        }
        ColumnValues::Text {
            bytes,
            ends,
            present,
        } => {
            let (a, b) = (present_before(present, from), present_before(present, to));
            let start = if a == 0 { 0 } else { ends[a - 1] };
            let end = if b == 0 { 0 } else { ends[b - 1] };
            ColumnValues::Text {
                bytes: bytes[start..end].to_vec(),
                ends: ends[a..b].iter().map(|e| e - start).collect(),
                present: present[from..to].to_vec(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use parquet::basic::ConvertedType;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    use super::*;

    fn columns() -> Vec<ExportColumn> {
        vec![
            ExportColumn::new("id", Affinity::Integer),
            ExportColumn::new("latency_ms", Affinity::Real),
            ExportColumn::new("model", Affinity::Text),
            ExportColumn::new("score", Affinity::Numeric),
        ]
    }

    fn batch(from: i64, rows: usize) -> ColumnBatch {
        let ids: Vec<i64> = (from..from + rows as i64).collect();
        // Every third latency is NULL, every other model.
        let latency_present: Vec<bool> = ids.iter().map(|i| i % 3 != 0).collect();
        let latencies: Vec<f64> = ids
            .iter()
            .filter(|i| *i % 3 != 0)
            .map(|&i| i as f64 / 2.0)
            .collect();
        let model_present: Vec<bool> = ids.iter().map(|i| i % 2 == 0).collect();
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for i in ids.iter().filter(|i| *i % 2 == 0) {
            bytes.extend_from_slice(format!("modèle-{i}").as_bytes());
            ends.push(bytes.len());
        }
        ColumnBatch {
            rows,
            columns: vec![
                ColumnValues::Integer {
                    values: ids.clone(),
                    present: vec![true; rows],
                },
                ColumnValues::Real {
                    values: latencies,
                    present: latency_present,
                },
                ColumnValues::Text {
                    bytes,
                    ends,
                    present: model_present,
                },
                ColumnValues::Real {
                    values: vec![],
                    present: vec![false; rows],
                },
            ],
        }
    }

    #[test]
    fn sqlite_affinities_map_to_parquet_types() {
        assert_eq!(
            parquet_type(Affinity::Integer),
            Some((PhysicalType::INT64, None))
        );
        assert_eq!(
            parquet_type(Affinity::Real),
            Some((PhysicalType::DOUBLE, None))
        );
        assert_eq!(
            parquet_type(Affinity::Numeric),
            Some((PhysicalType::DOUBLE, None))
        );
        assert_eq!(
            parquet_type(Affinity::Text),
            Some((PhysicalType::BYTE_ARRAY, Some(LogicalType::String)))
        );
        assert_eq!(parquet_type(Affinity::Blob), None);

        let mut with_blob = columns();
        with_blob.insert(1, ExportColumn::new("content", Affinity::Blob));
        let schema = schema(&with_blob).unwrap();
        let fields = schema.get_fields();
        let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["id", "latency_ms", "model", "score"], "no blob");
        for field in fields {
            assert_eq!(
                field.get_basic_info().repetition(),
                Repetition::OPTIONAL,
                "{} is nullable",
                field.name()
            );
        }
        assert_eq!(
            fields[2].get_basic_info().converted_type(),
            ConvertedType::UTF8
        );
    }

    #[test]
    fn a_file_reads_back_with_its_nulls_row_groups_and_zstd() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part-00000.parquet");
        let mut writer = PartWriter::create(&path, &columns()).unwrap();
        assert!(!path.exists(), "hidden until finished");
        writer.write(batch(0, 5)).unwrap();
        writer.write(batch(5, 3)).unwrap();
        writer
            .write(ColumnBatch {
                rows: 0,
                columns: batch(0, 0).columns,
            })
            .unwrap();
        let written = writer.finish().unwrap();
        assert_eq!((written.rows, written.row_groups), (8, 2));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, ["part-00000.parquet"]);

        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), 8);
        assert_eq!(meta.num_row_groups(), 2);
        for group in meta.row_groups() {
            for column in group.columns() {
                assert!(
                    matches!(column.compression(), Compression::ZSTD(_)),
                    "{:?}",
                    column.compression()
                );
            }
        }
        let rows: Vec<Vec<(String, Field)>> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().into_columns())
            .collect();
        assert_eq!(rows.len(), 8);
        assert_eq!(rows[0][0], ("id".into(), Field::Long(0)));
        assert_eq!(rows[0][1].1, Field::Null, "0 % 3 == 0: NULL");
        assert_eq!(rows[0][2].1, Field::Str("modèle-0".into()));
        assert_eq!(rows[1][1].1, Field::Double(0.5));
        assert_eq!(rows[1][2].1, Field::Null);
        assert_eq!(rows[6][0].1, Field::Long(6), "second row group");
        assert_eq!(rows[6][2].1, Field::Str("modèle-6".into()));
        assert_eq!(rows[7][1].1, Field::Double(3.5));
        assert!(rows.iter().all(|r| r[3].1 == Field::Null));
    }

    #[test]
    fn a_long_batch_is_cut_into_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.parquet");
        let mut writer = PartWriter::create(&path, &columns()).unwrap();
        let rows = ROW_GROUP_ROWS * 2 + 7;
        writer.write(batch(0, rows)).unwrap();
        let written = writer.finish().unwrap();
        assert_eq!((written.rows, written.row_groups), (rows as u64, 3));
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let last: Vec<(String, Field)> = reader
            .get_row_iter(None)
            .unwrap()
            .last()
            .unwrap()
            .unwrap()
            .into_columns();
        let id = rows as i64 - 1;
        assert_eq!(last[0].1, Field::Long(id));
        assert_eq!(last[1].1, Field::Double(id as f64 / 2.0));
        assert_eq!(last[2].1, Field::Str(format!("modèle-{id}")));
    }

    #[test]
    fn a_file_dropped_unfinished_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part.parquet");
        let mut writer = PartWriter::create(&path, &columns()).unwrap();
        writer.write(batch(0, 4)).unwrap();
        let wrong = ColumnBatch {
            rows: 1,
            columns: vec![],
        };
        assert!(matches!(
            writer.write(wrong),
            Err(ParquetWriteError::Columns {
                got: 0,
                expected: 4
            })
        ));
        drop(writer);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
