//! Cases from data: the files a benchmark reads its cases from (CSV, TSV, JSONL, JSON,
//! Parquet, `hf://`), each case with a stable id, and the `{{name}}` templates filled from
//! them. No calls and no SQL here beyond what the store offers for fetched files.

pub mod template;

pub use template::{MissingValue, Template, Values};

/// How cases may be read: where fetched files are kept, and whether the network may be used.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The database whose blob store keeps `hf://` files (`None`: fetch, keep nothing).
    pub db: Option<std::path::PathBuf>,
    /// Read `hf://` files only from the database (`--offline`).
    pub offline: bool,
}
