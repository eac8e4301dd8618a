//! `cases:` of a benchmark file, as written: where the rows come from, which column is the
//! id, how many rows to take and in what format they are. Parsed (serde, unknown keys refused
//! with the valid ones) and checked for contradictions here; nothing is read here.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

/// `cases:` of a benchmark file.
///
/// ```yaml
/// cases:
///   from: data/math.jsonl      # a path, a glob, an hf:// address, or a list of them
///   id: qid                    # optional: else the sha256 of each row's values
///   limit: 200                 # optional: the first 200 rows; or sample: {n: 200, seed: 1}
///   format: openai-evals       # optional: else told by each file's extension
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawCasesSpec")]
pub struct CasesSpec {
    /// The sources as written, in order: paths and globs (relative to the benchmark file's
    /// folder) and `hf://` addresses. Never empty.
    pub from: Vec<String>,
    /// The column whose value is each case's id.
    pub id: Option<String>,
    /// Take the first `limit` rows (in file order, across the sources).
    pub limit: Option<usize>,
    /// Take a sample of the rows, stable under insertion ([`super::select`]).
    pub sample: Option<Sample>,
    /// The format of every source; `None`: each file's extension says.
    pub format: Option<Format>,
}

/// `sample: {n, seed}`: the `n` rows whose sha256 of (seed, id) is smallest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// How many rows (all of them when there are fewer).
    pub n: usize,
    /// Another seed draws another sample; 0 when not written.
    #[serde(default)]
    pub seed: u64,
}

/// `format:` of `cases:`: a file format, or a tool's format the rows are converted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Csv,
    Tsv,
    Jsonl,
    Json,
    Parquet,
    /// openai/evals registry samples (JSONL of `{"input", "ideal"}`), [`super::openai_evals`].
    OpenaiEvals,
    /// promptfoo test files (CSV with `__expected` columns), [`super::promptfoo`].
    Promptfoo,
}

/// How a file's bytes are read into rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Csv,
    Tsv,
    Jsonl,
    Json,
    Parquet,
}

impl FileFormat {
    /// The format a file name's extension says (`.csv`, `.tsv`, `.jsonl`/`.ndjson`, `.json`,
    /// `.parquet`, case ignored), if any.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match extension.as_str() {
            "csv" => Self::Csv,
            "tsv" | "tab" => Self::Tsv,
            "jsonl" | "ndjson" => Self::Jsonl,
            "json" => Self::Json,
            "parquet" | "pq" => Self::Parquet,
            _ => return None,
        })
    }

    /// Whether rows are counted by line (text formats) rather than by row number (Parquet).
    pub(crate) fn has_lines(self) -> bool {
        !matches!(self, Self::Parquet)
    }
}

impl Format {
    /// The file format this `format:` imposes on every file, if it imposes one.
    pub(crate) fn file_format(self) -> Option<FileFormat> {
        match self {
            Self::Csv => Some(FileFormat::Csv),
            Self::Tsv => Some(FileFormat::Tsv),
            Self::Jsonl => Some(FileFormat::Jsonl),
            Self::Json => Some(FileFormat::Json),
            Self::Parquet => Some(FileFormat::Parquet),
            // Converters read any file format, by extension.
            Self::OpenaiEvals | Self::Promptfoo => None,
        }
    }
}

/// The keys of `cases:`, as its messages list them.
pub const KEYS: [&str; 5] = ["from", "id", "limit", "sample", "format"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCasesSpec {
    from: Sources,
    id: Option<String>,
    limit: Option<usize>,
    sample: Option<Sample>,
    format: Option<Format>,
}

impl TryFrom<RawCasesSpec> for CasesSpec {
    type Error = String;

    fn try_from(raw: RawCasesSpec) -> Result<Self, String> {
        if raw.from.0.is_empty() {
            return Err("`from:` lists no file; name a file, a glob or an hf:// address".into());
        }
        if let Some(blank) = raw.from.0.iter().find(|s| s.trim().is_empty()) {
            return Err(format!(
                "`from:` has an empty entry `{blank}`; name a file, a glob or an hf:// address"
            ));
        }
        if raw.limit.is_some() && raw.sample.is_some() {
            return Err(
                "`limit:` and `sample:` both given; keep one (the first N rows, or a sample of N)"
                    .into(),
            );
        }
        if raw.limit == Some(0) {
            return Err("`limit: 0` takes no case; give at least 1, or drop `limit:`".into());
        }
        if raw.sample.is_some_and(|s| s.n == 0) {
            return Err("`sample: {n: 0}` takes no case; give n at least 1".into());
        }
        if raw.id.as_deref().is_some_and(|id| id.trim().is_empty()) {
            return Err("`id:` is empty; name a column, or drop `id:` to use the sha256 of each row's values".into());
        }
        Ok(Self {
            from: raw.from.0,
            id: raw.id,
            limit: raw.limit,
            sample: raw.sample,
            format: raw.format,
        })
    }
}

impl CasesSpec {
    /// `cases:` read from a JSON value (a benchmark file's mapping already parsed), with
    /// the messages [`crate::yaml`] gives: an unknown key named with the valid ones and the
    /// closest.
    pub(crate) fn from_value(value: serde_json::Value) -> Result<Self, String> {
        if let serde_json::Value::Object(fields) = &value {
            if let Some(key) = fields.keys().find(|k| !KEYS.contains(&k.as_str())) {
                return Err(format!("cases: {}", crate::yaml::unknown_key(key, &KEYS)));
            }
            if let Some(serde_json::Value::Object(sample)) = fields.get("sample")
                && let Some(key) = sample.keys().find(|k| !["n", "seed"].contains(&k.as_str()))
            {
                return Err(format!(
                    "cases: sample: {}",
                    crate::yaml::unknown_key(key, &["n", "seed"])
                ));
            }
        }
        serde_json::from_value(value).map_err(|e| format!("cases: {e}"))
    }
}

/// `from:`: one string or a list of them.
struct Sources(Vec<String>);

impl<'de> Deserialize<'de> for Sources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SourcesVisitor;
        impl<'de> Visitor<'de> for SourcesVisitor {
            type Value = Sources;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a path, a glob, an hf:// address, or a list of them")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Sources, E> {
                Ok(Sources(vec![v.to_owned()]))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Sources, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    out.push(item);
                }
                Ok(Sources(out))
            }
        }
        deserializer.deserialize_any(SourcesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<CasesSpec, String> {
        serde_saphyr::from_str::<CasesSpec>(text)
            .map_err(|e| crate::yaml::describe(Path::new("b.yaml"), text, &e))
    }

    #[test]
    fn a_full_spec_and_a_list_of_sources_parse() {
        let spec = parse(
            "from: data/math.jsonl\nid: qid\nsample: {n: 5, seed: 3}\nformat: openai-evals\n",
        )
        .unwrap();
        assert_eq!(spec.from, ["data/math.jsonl"]);
        assert_eq!(spec.id.as_deref(), Some("qid"));
        assert_eq!(spec.sample, Some(Sample { n: 5, seed: 3 }));
        assert_eq!(spec.format, Some(Format::OpenaiEvals));
        let spec = parse("from: [a.csv, 'data/*.jsonl', hf://datasets/o/n/x.parquet]\nlimit: 2\n")
            .unwrap();
        assert_eq!(spec.from.len(), 3);
        assert_eq!(spec.limit, Some(2));
        assert_eq!(spec.format, None);
    }

    #[test]
    fn an_unknown_key_is_named_with_the_valid_ones() {
        let e = parse("from: a.csv\nlimt: 3\n").unwrap_err();
        assert!(e.contains("unknown key `limt`"), "{e}");
        assert!(e.contains("did you mean `limit`?"), "{e}");
        for key in KEYS {
            assert!(e.contains(key), "{e}");
        }
        let e = parse("from: a.csv\nsample: {n: 3, sed: 1}\n").unwrap_err();
        assert!(e.contains("unknown key `sed`"), "{e}");
    }

    #[test]
    fn contradictions_and_empty_values_are_refused() {
        let e = parse("from: a.csv\nlimit: 3\nsample: {n: 2}\n").unwrap_err();
        assert!(e.contains("`limit:` and `sample:` both given"), "{e}");
        let e = parse("from: []\n").unwrap_err();
        assert!(e.contains("lists no file"), "{e}");
        let e = parse("from: a.csv\nlimit: 0\n").unwrap_err();
        assert!(e.contains("`limit: 0`"), "{e}");
        let e = parse("from: a.csv\nformat: yaml\n").unwrap_err();
        assert!(e.contains("yaml"), "{e}");
        let e = parse("id: x\n").unwrap_err();
        assert!(e.contains("from"), "{e}");
    }

    #[test]
    fn a_json_value_parses_with_the_same_messages() {
        let spec = CasesSpec::from_value(serde_json::json!({"from": "a.csv", "id": "q"})).unwrap();
        assert_eq!(
            (spec.from.as_slice(), spec.id.as_deref()),
            (&["a.csv".to_owned()][..], Some("q"))
        );
        let e = CasesSpec::from_value(serde_json::json!({"from": "a.csv", "limt": 3})).unwrap_err();
        assert_eq!(
            e,
            "cases: unknown key `limt`; did you mean `limit`? valid keys: from, id, limit, sample, format"
        );
        let e =
            CasesSpec::from_value(serde_json::json!({"from": "a", "sample": {"n": 1, "sed": 2}}))
                .unwrap_err();
        assert!(
            e.starts_with("cases: sample: unknown key `sed`; did you mean `seed`?"),
            "{e}"
        );
        let e =
            CasesSpec::from_value(serde_json::json!({"from": "a", "limit": 1, "sample": {"n": 1}}))
                .unwrap_err();
        assert!(e.contains("`limit:` and `sample:` both given"), "{e}");
        let e = CasesSpec::from_value(serde_json::json!({"from": 3})).unwrap_err();
        assert!(e.starts_with("cases: "), "{e}");
    }

    #[test]
    fn formats_are_told_by_extension() {
        assert_eq!(FileFormat::from_name("a/B.CSV"), Some(FileFormat::Csv));
        assert_eq!(FileFormat::from_name("x.ndjson"), Some(FileFormat::Jsonl));
        assert_eq!(
            FileFormat::from_name("x.parquet"),
            Some(FileFormat::Parquet)
        );
        assert_eq!(FileFormat::from_name("x.txt"), None);
        assert_eq!(FileFormat::from_name("noext"), None);
    }
}
