//! The kinds of experiment: their stored names, and how a file of each kind is loaded.
//!
//! Adding a kind: write its folder (spec → stages of calls, answers → rows, report) with a
//! `from_file` loader if it has an experiment file, then add one line to `kinds!` below.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use super::{Experiment, ExperimentError, Overrides};
use crate::config::Config;

/// Loads an experiment file of one kind: its path (for messages), its text, the config and
/// the command line's overrides.
pub type Loader =
    fn(&Path, &str, &Config, &Overrides) -> Result<Box<dyn Experiment>, ExperimentError>;

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $noun:literal, $loader:expr;)*) => {
        /// A kind of experiment; its name is stored with every run.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ExperimentKind {
            $($(#[$doc])* $variant,)*
        }

        impl ExperimentKind {
            /// Every kind, in the order `track runs` explains them.
            pub const ALL: &'static [Self] = &[$(Self::$variant),*];

            /// The name stored in the database and written as `kind:` in files.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// The word for it in messages ("benchmark experiments").
            pub fn noun(self) -> &'static str {
                match self {
                    $(Self::$variant => $noun,)*
                }
            }

            /// How an experiment file of this kind is loaded; `None` for kinds that only
            /// have a command.
            pub fn loader(self) -> Option<Loader> {
                match self {
                    $(Self::$variant => $loader,)*
                }
            }
        }
    };
}

kinds! {
    /// Every prompt against every model, each answer tested (`track run bench.yaml`).
    Bench = "bench", "benchmark", Some(crate::bench::from_file);
    /// A reviewer model scores generated datasheets (`kind: review`, `review-datasheets`).
    Review = "review", "review", Some(crate::review::from_file);
    /// A model writes datasheets (`generate-datasheets`).
    Generate = "generate", "generation", None;
    /// A vision model scores predicates with and without "uncertain" (`kind: relevance`).
    Relevance = "relevance", "relevance", Some(crate::relevance::from_file);
}

impl ExperimentKind {
    /// The `kind:` of an experiment file: a top-level `kind:` line, read without parsing the
    /// whole file (benchmark files can be huge); a file without one is a benchmark.
    pub fn of_file(text: &str) -> Result<Self, String> {
        let written = text
            .lines()
            .find_map(|line| line.strip_prefix("kind:"))
            .map(|rest| {
                let value = rest.split('#').next().unwrap_or_default().trim();
                value.trim_matches(|c| c == '"' || c == '\'').to_owned()
            })
            .filter(|kind| !kind.is_empty());
        match written {
            None => Ok(Self::Bench),
            Some(name) => name.parse(),
        }
    }

    /// Names of the kinds that have experiment files, for messages: `bench (the default),
    /// review or relevance`.
    pub fn file_kinds() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .filter(|k| k.loader().is_some())
            .map(|k| match k {
                Self::Bench => format!("{} (the default)", k.as_str()),
                _ => k.as_str().to_owned(),
            })
            .collect();
        match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

impl FromStr for ExperimentKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Self::ALL
            .iter()
            .copied()
            .find(|k| s.eq_ignore_ascii_case(k.as_str()) || s.eq_ignore_ascii_case(k.noun()))
            .ok_or_else(|| format!("unknown `kind: {s}`; use {}", Self::file_kinds()))
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
        assert_eq!(
            e,
            "unknown `kind: poetry`; use bench (the default), review or relevance"
        );
        for kind in ExperimentKind::ALL {
            assert_eq!(kind.as_str().parse::<ExperimentKind>(), Ok(*kind));
        }
    }
}
