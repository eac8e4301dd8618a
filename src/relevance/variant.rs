//! The two prompt variants of a relevance experiment, WITH and WITHOUT the "uncertain" option:
//! their names (stored, and as the specification spells them) and the scores each allows.
//! Every part of the kind (prompts, answers, rows, summaries, diffs) reads variants from here.

use super::metrics::UnknownName;

/// The two prompt variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// Scores 2 / 1 / 0: 1 means uncertain.
    With,
    /// Scores 2 / 0 only.
    Without,
}

impl Variant {
    /// Both variants, in the order of every table.
    pub const ALL: [Self; 2] = [Self::With, Self::Without];

    /// The name stored in the database (`WITH`, `WITHOUT`) and shown in the console block.
    pub fn name(self) -> &'static str {
        match self {
            Self::With => "WITH",
            Self::Without => "WITHOUT",
        }
    }

    /// The specification's spelling, in every CSV, query and export: `with_uncertain`.
    pub fn spec_name(self) -> &'static str {
        match self {
            Self::With => "with_uncertain",
            Self::Without => "without_uncertain",
        }
    }

    /// Whether `score` is an answer this variant allows.
    pub fn allows(self, score: i64) -> bool {
        match self {
            Self::With => (0..=2).contains(&score),
            Self::Without => score == 0 || score == 2,
        }
    }
}

/// The stored name (`WITH`).
impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// From the stored name (`WITH`, `WITHOUT`) or the specification's (`with_uncertain`).
impl std::str::FromStr for Variant {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.name() == name || v.spec_name() == name)
            .ok_or_else(|| UnknownName {
                what: "variant",
                name: name.to_owned(),
                expected: "WITH or WITHOUT",
            })
    }
}

impl rusqlite::types::ToSql for Variant {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.name().into())
    }
}

impl rusqlite::types::FromSql for Variant {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        value
            .as_str()?
            .parse()
            .map_err(|e: UnknownName| rusqlite::types::FromSqlError::Other(Box::new(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::metrics::{Class, Metric};
    use super::*;

    #[test]
    fn every_name_reads_back_and_an_unknown_one_is_an_error_naming_it() {
        for v in Variant::ALL {
            assert_eq!(v.name().parse(), Ok(v));
            assert_eq!(v.spec_name().parse(), Ok(v));
        }
        for c in Class::ALL {
            assert_eq!(c.name().parse(), Ok(c));
        }
        for m in Metric::ALL {
            assert_eq!(m.to_string().parse(), Ok(m));
        }
        for (err, name) in [
            ("WITHIN".parse::<Variant>().unwrap_err(), "WITHIN"),
            ("neutral".parse::<Class>().unwrap_err(), "neutral"),
            ("f2".parse::<Metric>().unwrap_err(), "f2"),
        ] {
            assert!(err.to_string().contains(&format!("{name:?}")), "{err}");
        }
    }
}
