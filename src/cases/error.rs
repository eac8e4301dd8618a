//! Why cases could not be loaded: each message names the file (or address), the line when
//! there is one, and what to do about it. Nothing here reads files or the network.

use crate::store::StoreError;

/// An error of [`super::load`].
#[derive(Debug, thiserror::Error)]
pub enum CasesError {
    /// A data file could not be read.
    #[error("cannot read {file}: {source}; check the path (relative to the benchmark file)")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// A glob that matches no file, or that is not a valid pattern.
    #[error("{pattern} {problem}")]
    Pattern { pattern: String, problem: String },
    /// A file whose format cannot be told from its name.
    #[error(
        "{file}: cannot tell the format from its name; name it .csv, .tsv, .jsonl, .json or .parquet, or say `format:` (csv, tsv, jsonl, json, parquet, openai-evals, promptfoo)"
    )]
    UnknownFormat { file: String },
    /// A file that does not parse as its format, as a whole (no line to name).
    #[error("{file}: {message}")]
    File { file: String, message: String },
    /// A row that cannot be read or converted, at its place (`file:line`, or `file, row N`).
    #[error("{at}: {message}")]
    Row { at: String, message: String },
    /// A row without a value in the `id:` column.
    #[error(
        "{at}: no value in the id column `{column}`; give every row one, or name another column in `id:` (columns: {columns})"
    )]
    MissingId {
        at: String,
        column: String,
        columns: String,
    },
    /// `id:` names a column that no row has.
    #[error("{from}: `id: {column}` names no column of the cases;{suggestion} columns: {columns}")]
    UnknownIdColumn {
        from: String,
        column: String,
        /// ` did you mean `qid`?`, or empty.
        suggestion: String,
        columns: String,
    },
    /// Two rows with one id.
    #[error("duplicate id `{id}`: {first} and {second}; {fix}")]
    DuplicateId {
        id: String,
        first: String,
        second: String,
        fix: &'static str,
    },
    /// The files hold no row at all.
    #[error("{from} holds no cases; add rows to it, or point `from:` at the file that has them")]
    Empty { from: String },
    /// An `hf://` address that does not parse.
    #[error(
        "{address}: {problem}; an address is hf://datasets/OWNER/NAME@REVISION/PATH (@REVISION optional, default main)"
    )]
    HfAddress { address: String, problem: String },
    /// An `hf://` file that could not be fetched.
    #[error("cannot fetch {address}: {message}")]
    HfFetch { address: String, message: String },
    /// `--offline` and an `hf://` file never fetched.
    #[error(
        "{address} is not stored yet and the run is offline; run once online to fetch and keep it (it is then read from the database, also offline)"
    )]
    Offline { address: String },
    /// The database failed while reading or keeping a fetched file.
    #[error("database error while loading {address}: {source}")]
    Store {
        address: String,
        #[source]
        source: StoreError,
    },
}
