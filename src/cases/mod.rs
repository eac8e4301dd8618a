//! Cases from data: the files a benchmark reads its cases from (CSV, TSV, JSONL, JSON,
//! Parquet, `hf://`), each case with a stable id, and the `{{name}}` templates filled from
//! them. No calls and no SQL here beyond what the store offers for fetched files.

pub mod template;

pub use template::{MissingValue, Template, Values};
