//! Cases from data: the files a benchmark reads its cases from (CSV, TSV, JSONL, JSON,
//! Parquet, `hf://`), each case with a stable id, and the `{{name}}` templates filled from
//! them. No calls and no SQL here beyond what the store offers for fetched files.
//!
//! [`load`] turns a [`CasesSpec`] (`cases:` of a benchmark file) into [`LoadedCases`]:
//! [`source`] finds the files, [`read`] picks a reader per format ([`csv`], [`jsonl`],
//! [`json`], [`parquet`]; [`hf`] fetches and keeps `hf://` files), [`openai_evals`] and
//! [`promptfoo`] convert those tools' rows, [`ids`] gives each case its id, and [`select`]
//! takes `limit:` or `sample:`.

pub mod case;
pub mod csv;
pub mod error;
pub mod hf;
pub mod ids;
pub mod json;
pub mod jsonl;
pub mod openai_evals;
pub mod parquet;
pub mod promptfoo;
pub mod read;
pub mod select;
pub mod source;
pub mod spec;
pub mod template;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;

pub use case::{Case, CaseMessage, Origin};
pub use error::CasesError;
pub use hf::HfAccess;
pub use source::{Resolved, Source};
pub use spec::{CasesSpec, FileFormat, Format, Sample};
pub use template::{MissingValue, Template, Values};

use crate::output::{counted, thousands};
use crate::store::Store;
use case::RowCase;
use source::Located;

/// How cases may be read: where fetched files are kept, and whether the network may be used.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The database whose blob store keeps `hf://` files (`None`: fetch, keep nothing). It is
    /// opened only when `from:` names an `hf://` file.
    pub db: Option<std::path::PathBuf>,
    /// Read `hf://` files only from the database (`--offline`).
    pub offline: bool,
    /// Fetch `hf://` files kept in the database again, for a branch or tag that may have moved
    /// (`--refresh-data`); an address pinned to a commit is read from the database still.
    pub refresh: bool,
    /// Keep every case's values with its test, not only those a script check reads: a target
    /// (the user's application) is sent them.
    pub keep_values: bool,
}

/// The cases a benchmark read, with what it read them from.
#[derive(Debug, Clone)]
pub struct LoadedCases {
    /// The cases taken (after `limit:` or `sample:`), in file order, ids unique.
    pub cases: Vec<Case>,
    /// The columns of the cases' values, each once, in the order first seen.
    pub columns: Vec<String>,
    /// Every file read, in order; a case's [`Origin::source`] indexes it.
    pub sources: Vec<Source>,
    /// `from:` as written, for the summary.
    pub from: Vec<String>,
    /// The rows read from all files, before `limit:` or `sample:`.
    pub rows: usize,
    /// `sample:` when it took the cases.
    pub sample: Option<Sample>,
    /// The columns that describe a case rather than feed a template (promptfoo's
    /// `__description` and `__metadata:KEY`): kept with the case, never warned unused.
    pub metadata: Vec<String>,
}

impl LoadedCases {
    /// Where a case's row is: `data/math.jsonl:12`, or `data/t.parquet, row 12`.
    pub(crate) fn place(&self, origin: Origin) -> String {
        match self.sources.get(origin.source) {
            Some(source) => place(&source.address, source.format, origin.line),
            None => format!("row {}", origin.line),
        }
    }

    /// `loaded 2,000 cases from data/math.jsonl (columns: qid, a, b, answer)`: what was read,
    /// for stderr and the dry run's plan.
    pub(crate) fn summary(&self) -> String {
        let taken = self.cases.len() as u64;
        let count = if self.cases.len() == self.rows {
            counted(taken, "case")
        } else {
            let how = match self.sample {
                Some(sample) => format!(" (sample, seed {})", sample.seed),
                None => " (limit)".to_owned(),
            };
            format!(
                "{} of {}{how}",
                thousands(taken),
                counted(self.rows as u64, "case")
            )
        };
        let mut from = self.from.join(", ");
        if self.sources.len() != self.from.len() {
            from.push_str(&format!(
                " ({})",
                counted(self.sources.len() as u64, "file")
            ));
        }
        let columns = if self.columns.is_empty() {
            "no columns".to_owned()
        } else {
            format!("columns: {}", self.columns.join(", "))
        };
        format!("loaded {count} from {from} ({columns})")
    }
}

/// `file:line`, or `file, row N` for a format without lines.
fn place(address: &str, format: FileFormat, line: u64) -> String {
    if format.has_lines() {
        read::at(address, line)
    } else {
        format!("{address}, row {line}")
    }
}

/// How a row is turned into a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convert {
    Plain,
    OpenaiEvals,
    Promptfoo,
}

/// Reads the cases `spec` names. Paths are relative to `base_dir` (the benchmark file's
/// folder). Synchronous: an `hf://` file not kept yet is fetched (from `HF_ENDPOINT`, with
/// `HF_TOKEN`) on a thread of its own, so it may be called inside or outside a runtime.
pub(crate) fn load(
    spec: &CasesSpec,
    base_dir: &Path,
    options: &LoadOptions,
) -> Result<LoadedCases, CasesError> {
    load_with(spec, base_dir, options, &HfAccess::from_env())
}

/// [`load`] with the Hub's endpoint and token given rather than read from the environment.
pub(crate) fn load_with(
    spec: &CasesSpec,
    base_dir: &Path,
    options: &LoadOptions,
    hf_access: &HfAccess,
) -> Result<LoadedCases, CasesError> {
    let files = source::locate(&spec.from, base_dir)?;
    // The database, opened at the first hf:// file.
    let mut store: Option<Store> = None;
    let mut sources = Vec::with_capacity(files.len());
    let mut cases: Vec<Case> = Vec::new();
    let mut metadata: Vec<String> = Vec::new();
    // Whether every file is promptfoo's with a `__description` column: the ids then.
    let mut described = true;
    for (index, file) in files.iter().enumerate() {
        let address = file.address().to_owned();
        let format = spec
            .format
            .and_then(Format::file_format)
            .or_else(|| FileFormat::from_name(file.name()))
            .ok_or_else(|| CasesError::UnknownFormat {
                file: address.clone(),
            })?;
        let (bytes, resolved, sha256) = file_bytes(file, format, &mut store, options, hf_access)?;
        let rows = read::read_rows(format, &bytes, &address)?;
        drop(bytes);
        let convert = Convert::of(spec.format, format, &rows);
        described &= promptfoo_columns(convert, &rows, &mut metadata);
        sources.push(Source {
            address: address.clone(),
            resolved,
            format,
            sha256,
            rows: rows.len(),
        });
        cases.reserve(rows.len());
        for row in rows {
            cases.push(case_of_row(row, convert, (index, &address, format))?);
        }
    }
    let total = cases.len();
    if total == 0 {
        return Err(CasesError::Empty {
            from: spec.from.join(", "),
        });
    }
    let place_of = |origin: Origin| {
        let source = &sources[origin.source];
        place(&source.address, source.format, origin.line)
    };
    give_ids(&mut cases, spec, described, &place_of)?;
    keep_selected(&mut cases, spec);
    let columns = columns_of(&cases);
    Ok(LoadedCases {
        cases,
        columns,
        sources,
        from: spec.from.clone(),
        rows: total,
        sample: spec.sample.filter(|_| spec.limit.is_none()),
        metadata,
    })
}

/// The case of one row of the file `source` (its index, address and format), converted from
/// its tool's form; its id is given later, when every row is read.
fn case_of_row(
    row: read::RawRow,
    convert: Convert,
    (index, address, format): (usize, &str, FileFormat),
) -> Result<Case, CasesError> {
    let converted = match convert {
        Convert::Plain => case::plain(row.values),
        Convert::OpenaiEvals => openai_evals::convert(row.values),
        Convert::Promptfoo => promptfoo::convert(row.values),
    };
    let RowCase {
        values,
        messages,
        checks,
    } = converted.map_err(|message| CasesError::Row {
        at: place(address, format, row.line),
        message,
    })?;
    Ok(Case {
        id: String::new(),
        values,
        origin: Origin {
            source: index,
            line: row.line,
        },
        messages,
        checks,
    })
}

/// For a promptfoo file: adds its metadata columns to `metadata`, and says whether it has a
/// `__description` column (false for any other file).
fn promptfoo_columns(convert: Convert, rows: &[read::RawRow], metadata: &mut Vec<String>) -> bool {
    let Some(first) = rows.first().filter(|_| convert == Convert::Promptfoo) else {
        return false;
    };
    for column in promptfoo::metadata_columns(first.values.keys()) {
        if !metadata.contains(&column) {
            metadata.push(column);
        }
    }
    first.values.contains_key("__description")
}

/// Gives every case its id: the descriptions of promptfoo files that all have one
/// ([`description_ids`]), else as [`assign_ids`] does; an `id:` column no case has is refused.
fn give_ids(
    cases: &mut [Case],
    spec: &CasesSpec,
    described: bool,
    place_of: &dyn Fn(Origin) -> String,
) -> Result<(), CasesError> {
    if let Some(column) = spec.id.as_deref() {
        id_column_exists(cases, column, &spec.from)?;
    }
    if described && spec.id.is_none() && description_ids(cases) {
        return Ok(());
    }
    assign_ids(cases, spec.id.as_deref(), place_of)
}

/// Gives every case its description as its id (promptfoo's `__description`, which its users
/// name their tests by) when every case has one, they are all different and none has an `id`
/// value; says whether it did. Like a hash, a description does not move when rows are
/// inserted around it.
fn description_ids(cases: &mut [Case]) -> bool {
    let description = |case: &Case| match case.values.get("description") {
        Some(serde_json::Value::String(text)) if !text.trim().is_empty() => {
            Some(text.trim().to_owned())
        }
        _ => None,
    };
    let mut seen = std::collections::HashSet::with_capacity(cases.len());
    let all = cases.iter().all(|case| {
        !case.values.contains_key("id") && description(case).is_some_and(|d| seen.insert(d))
    });
    if all {
        for case in cases.iter_mut() {
            case.id = description(case).unwrap_or_default();
        }
    }
    all
}

/// The bytes of `file` (read, or fetched from the Hub through `store`, opened at the first
/// `hf://` file), where they were resolved to, and their sha256.
fn file_bytes(
    file: &Located,
    format: FileFormat,
    store: &mut Option<Store>,
    options: &LoadOptions,
    hf_access: &HfAccess,
) -> Result<(Vec<u8>, Resolved, String), CasesError> {
    let address = file.address().to_owned();
    Ok(match file {
        Located::File { path, .. } => {
            let bytes = std::fs::read(path).map_err(|source| CasesError::Read {
                file: address.clone(),
                source,
            })?;
            let sha256 = crate::hash::sha256_hex(&bytes);
            (bytes, Resolved::File(path.clone()), sha256)
        }
        Located::Hf(hf_address) => {
            if store.is_none()
                && let Some(db) = &options.db
            {
                *store = Some(Store::open(db).map_err(|source| CasesError::Store {
                    address: hf_address.written.clone(),
                    source,
                })?);
            }
            let got = hf::open(
                hf_address,
                media_type(format),
                store.as_ref(),
                hf::Fetch::of(options),
                hf_access,
            )?;
            let resolved = Resolved::Hf {
                commit: got.commit,
                fetched: got.fetched,
            };
            (got.bytes, resolved, got.sha256)
        }
    })
}

impl Convert {
    /// How the rows of a file of `format` become cases: as `spec_format` says, else as
    /// promptfoo's when a CSV's header is theirs, else plainly.
    fn of(spec_format: Option<Format>, format: FileFormat, rows: &[read::RawRow]) -> Self {
        match spec_format {
            Some(Format::OpenaiEvals) => Convert::OpenaiEvals,
            Some(Format::Promptfoo) => Convert::Promptfoo,
            _ if matches!(format, FileFormat::Csv | FileFormat::Tsv)
                && rows
                    .first()
                    .is_some_and(|r| promptfoo::is_promptfoo(r.values.keys())) =>
            {
                Convert::Promptfoo
            }
            _ => Convert::Plain,
        }
    }
}

/// Keeps the cases `spec` selects: its first `limit`, or its `sample`.
fn keep_selected(cases: &mut Vec<Case>, spec: &CasesSpec) {
    if let Some(limit) = spec.limit {
        cases.truncate(limit);
    } else if let Some(sample) = spec.sample {
        let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        let chosen = select::sample(&ids, sample.n, sample.seed);
        let mut keep = vec![false; cases.len()];
        for i in chosen {
            keep[i] = true;
        }
        let mut flags = keep.into_iter();
        cases.retain(|_| flags.next().unwrap_or(false));
    }
}

/// Gives every case its id (the `column`'s value; without one, an `id` column's; else the hash
/// of its values) and refuses two cases with one id, naming both rows.
fn assign_ids(
    cases: &mut [Case],
    column: Option<&str>,
    place_of: &dyn Fn(Origin) -> String,
) -> Result<(), CasesError> {
    let mut seen: HashMap<String, Origin> = HashMap::with_capacity(cases.len());
    for case in cases.iter_mut() {
        let id = ids::case_id(&case.values, column).ok_or_else(|| CasesError::MissingId {
            at: place_of(case.origin),
            column: column.unwrap_or("id").to_owned(),
            columns: case
                .values
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        let by_column = column.is_some() || case.values.contains_key("id");
        match seen.entry(id) {
            Entry::Occupied(first) => {
                return Err(CasesError::DuplicateId {
                    id: first.key().clone(),
                    first: place_of(*first.get()),
                    second: place_of(case.origin),
                    fix: if by_column {
                        "ids must be unique: give one row another id, or remove the repeated row"
                    } else {
                        "the two rows hold the same values (their id is a hash of them): remove one, or give the rows an id column and name it in `id:`"
                    },
                });
            }
            Entry::Vacant(slot) => {
                case.id = slot.key().clone();
                slot.insert(case.origin);
            }
        }
    }
    Ok(())
}

/// Refuses an `id:` column that no case has, naming the columns there are (and the closest).
fn id_column_exists(cases: &[Case], column: &str, from: &[String]) -> Result<(), CasesError> {
    if cases.iter().any(|c| c.values.contains_key(column)) {
        return Ok(());
    }
    let columns = columns_of(cases);
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    Err(CasesError::UnknownIdColumn {
        from: from.join(", "),
        column: column.to_owned(),
        suggestion: crate::yaml::closest(column, &names)
            .map(|c| format!(" did you mean `{c}`?"))
            .unwrap_or_default(),
        columns: names.join(", "),
    })
}

/// The columns of `cases`' values, each once, in the order first seen.
fn columns_of(cases: &[Case]) -> Vec<String> {
    let mut columns: Vec<String> = Vec::new();
    let mut known: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for case in cases {
        for key in case.values.keys() {
            if known.insert(key.as_str()) {
                columns.push(key.clone());
            }
        }
    }
    columns
}

/// The media type a fetched file's blob is stored as.
fn media_type(format: FileFormat) -> &'static str {
    match format {
        FileFormat::Csv => "text/csv",
        FileFormat::Tsv => "text/tab-separated-values",
        FileFormat::Jsonl => "application/jsonl",
        FileFormat::Json => "application/json",
        FileFormat::Parquet => "application/vnd.apache.parquet",
    }
}

#[cfg(test)]
mod tests;
