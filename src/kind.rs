//! The kinds of experiment as a leaf enum: their stored names, their nouns, and which kind a
//! file is. It must not name what a kind does: that is its folder's, reached through the
//! registry (`commands/registry.rs`), so the runtime depends on no kind.
//!
//! Adding a kind: one line in `kinds!` below; the compiler then names the registry's match.

use std::fmt;
use std::str::FromStr;

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $noun:literal;)*) => {
        /// A kind of experiment; its name is stored with every run.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ExperimentKind {
            $($(#[$doc])* $variant,)*
        }

        impl ExperimentKind {
            /// Every kind, in the order `track runs` explains them.
            pub const ALL: &'static [Self] = &[$(Self::$variant),*];

            /// The name stored in the database and written as `kind:` in files.
            pub(crate) fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// The word for it in messages ("benchmark experiments").
            pub(crate) fn noun(self) -> &'static str {
                match self {
                    $(Self::$variant => $noun,)*
                }
            }
        }
    };
}

kinds! {
    /// Every prompt against every model, each answer tested (`track run bench.yaml`).
    Bench = "bench", "benchmark";
    /// A reviewer model scores generated datasheets (`kind: review`, `review-datasheets`).
    Review = "review", "review";
    /// A model writes datasheets (`generate-datasheets`).
    Generate = "generate", "generation";
    /// A vision model scores predicates with and without "uncertain" (`kind: relevance`).
    Relevance = "relevance", "relevance";
    /// Judges compare candidates two by two, in both orders (`kind: pairwise`).
    Pairwise = "pairwise", "pairwise";
}

impl ExperimentKind {
    /// The kind of an experiment file without a `kind:` line.
    pub const FILE_DEFAULT: Self = Self::Bench;

    /// The `kind:` of an experiment file: a top-level `kind:` line, read without parsing the
    /// whole file (benchmark files can be huge); a file without one is a benchmark.
    pub(crate) fn of_file(text: &str) -> Result<Self, UnknownKind> {
        let written = text
            .lines()
            .find_map(|line| line.strip_prefix("kind:"))
            .map(|rest| {
                let value = rest.split('#').next().unwrap_or_default().trim();
                value.trim_matches(|c| c == '"' || c == '\'').to_owned()
            })
            .filter(|kind| !kind.is_empty());
        match written {
            None => Ok(Self::FILE_DEFAULT),
            Some(name) => name.parse(),
        }
    }

    /// The kind whose stored name is exactly `stored` (as `runs.kind` holds it).
    pub(crate) fn from_stored(stored: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.as_str() == stored)
    }
}

/// A `kind:` that names no kind. The registry (`commands/registry.rs`, `of_file`) says which kinds
/// a file may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKind(pub String);

impl fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown `kind: {}`", self.0)
    }
}

impl std::error::Error for UnknownKind {}

impl FromStr for ExperimentKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Self::ALL
            .iter()
            .copied()
            .find(|k| s.eq_ignore_ascii_case(k.as_str()) || s.eq_ignore_ascii_case(k.noun()))
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

impl fmt::Display for ExperimentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.noun())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_files() {
        assert_eq!(
            ExperimentKind::of_file("models: [a:b]\n"),
            Ok(ExperimentKind::Bench)
        );
        assert_eq!(
            ExperimentKind::of_file("kind: review\nother: 1\n"),
            Ok(ExperimentKind::Review)
        );
        assert_eq!(
            ExperimentKind::of_file("# x\nkind: \"relevance\" # a comment\n"),
            Ok(ExperimentKind::Relevance)
        );
        assert_eq!(
            ExperimentKind::of_file("kind: benchmark\n"),
            Ok(ExperimentKind::Bench)
        );
        assert_eq!(
            ExperimentKind::of_file("prompts:\n  - kind:\n    prompt: x\n"),
            Ok(ExperimentKind::Bench),
            "only top-level keys"
        );
        let e = ExperimentKind::of_file("kind: poetry\n").unwrap_err();
        assert_eq!(e, UnknownKind("poetry".into()));
        assert_eq!(
            ExperimentKind::from_stored("bench"),
            Some(ExperimentKind::Bench)
        );
        assert_eq!(ExperimentKind::from_stored("benchmark"), None);
        for kind in ExperimentKind::ALL {
            assert_eq!(kind.as_str().parse::<ExperimentKind>(), Ok(*kind));
        }
    }
}
