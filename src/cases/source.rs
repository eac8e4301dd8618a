//! The files `from:` names: a path, a glob or an `hf://` address, or a list of them, read in
//! the order written; a glob's files in sorted order. Paths are relative to the benchmark
//! file's folder (`file://path` is the path). A glob that matches no file is an error. Also: [`Source`], what the loader
//! reports of each file it read.

use std::path::{Path, PathBuf};

use super::error::CasesError;
use super::hf::{HfAddress, is_hf};
use super::spec::FileFormat;

/// One file a load read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file as messages name it: the path as written (or as a glob matched it, relative
    /// to the benchmark file's folder), or the `hf://` address as written.
    pub address: String,
    /// Where its bytes came from.
    pub resolved: Resolved,
    /// How it was read.
    pub format: FileFormat,
    /// The sha256 (hex) of its bytes, stored with the run.
    pub sha256: String,
    /// The rows it held (before `limit:` or `sample:`).
    pub rows: usize,
}

/// Where a source's bytes came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// A local file, at this path (the benchmark file's folder joined).
    File(PathBuf),
    /// An `hf://` file: the commit its revision resolved to at the first fetch, and whether
    /// this load fetched it (else it was read from the database).
    Hf { commit: String, fetched: bool },
}

/// A file to read, before reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// A local file: how messages name it, and its path.
    File { address: String, path: PathBuf },
    /// An `hf://` file.
    Hf(HfAddress),
}

impl Located {
    /// How messages name the file.
    pub(crate) fn address(&self) -> &str {
        match self {
            Self::File { address, .. } => address,
            Self::Hf(a) => &a.written,
        }
    }

    /// The file's name, for its extension.
    pub(crate) fn name(&self) -> &str {
        match self {
            Self::File { address, .. } => address,
            Self::Hf(a) => &a.path,
        }
    }
}

/// The files of `from`, in order, paths joined to `base_dir`.
pub(crate) fn locate(from: &[String], base_dir: &Path) -> Result<Vec<Located>, CasesError> {
    let mut files = Vec::new();
    for entry in from {
        // promptfoo names files `file://path`: the same path.
        let entry = entry.trim();
        let entry = entry.strip_prefix("file://").unwrap_or(entry);
        if is_hf(entry) {
            files.push(Located::Hf(HfAddress::parse(entry)?));
        } else if entry.contains(['*', '?', '[']) {
            files.extend(glob_files(entry, base_dir)?);
        } else {
            files.push(Located::File {
                address: entry.to_owned(),
                path: base_dir.join(entry),
            });
        }
    }
    Ok(files)
}

/// The files a glob matches, sorted; an error when it matches none.
fn glob_files(pattern: &str, base_dir: &Path) -> Result<Vec<Located>, CasesError> {
    let full = if Path::new(pattern).is_absolute() {
        pattern.to_owned()
    } else {
        let base = glob::Pattern::escape(&base_dir.to_string_lossy());
        if base.is_empty() {
            pattern.to_owned()
        } else {
            format!("{}/{pattern}", base.trim_end_matches('/'))
        }
    };
    let paths = glob::glob(&full).map_err(|e| CasesError::Pattern {
        pattern: pattern.to_owned(),
        problem: format!("is not a valid glob ({e}); fix the pattern"),
    })?;
    let mut found: Vec<PathBuf> = Vec::new();
    for path in paths {
        let path = path.map_err(|e| CasesError::Read {
            file: e.path().display().to_string(),
            source: e.into(),
        })?;
        if path.is_file() {
            found.push(path);
        }
    }
    if found.is_empty() {
        return Err(CasesError::Pattern {
            pattern: pattern.to_owned(),
            problem: format!(
                "matches no file (looked in {}); check the pattern, which is relative to the benchmark file",
                if base_dir.as_os_str().is_empty() {
                    ".".to_owned()
                } else {
                    base_dir.display().to_string()
                }
            ),
        });
    }
    found.sort();
    Ok(found
        .into_iter()
        .map(|path| {
            let address = path
                .strip_prefix(base_dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            Located::File { address, path }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_globs_and_addresses_are_located_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        for name in ["b.jsonl", "a.jsonl", "c.csv"] {
            std::fs::write(dir.path().join("data").join(name), "{}").unwrap();
        }
        std::fs::create_dir(dir.path().join("data/d.jsonl")).unwrap();
        let from = [
            "x.csv".to_owned(),
            "data/*.jsonl".to_owned(),
            "hf://datasets/o/n/t.parquet".to_owned(),
        ];
        let files = locate(&from, dir.path()).unwrap();
        let addresses: Vec<&str> = files.iter().map(Located::address).collect();
        assert_eq!(
            addresses,
            [
                "x.csv",
                "data/a.jsonl",
                "data/b.jsonl",
                "hf://datasets/o/n/t.parquet"
            ]
        );
        assert_eq!(
            files[1],
            Located::File {
                address: "data/a.jsonl".into(),
                path: dir.path().join("data/a.jsonl")
            }
        );
        assert_eq!(files[3].name(), "t.parquet");
    }

    #[test]
    fn a_glob_matching_nothing_or_malformed_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = locate(&["data/*.jsonl".to_owned()], dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("data/*.jsonl matches no file (looked in "),
            "{e}"
        );
        let e = locate(&["data/[.jsonl".to_owned()], dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a valid glob"), "{e}");
    }
}
