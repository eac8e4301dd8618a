//! The two prompt variants of a relevance experiment, WITH and WITHOUT the "uncertain" option:
//! their names (stored, and as the specification spells them) and the scores each allows.
//! Every part of the kind (prompts, answers, rows, summaries, diffs) reads variants from here.

/// The two prompt variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// Scores 2 / 1 / 0: 1 means uncertain.
    With,
    /// Scores 2 / 0 only.
    Without,
}

impl Variant {
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

    /// The variant a stored name stands for.
    pub fn from_stored(name: &str) -> Self {
        if name == Self::With.name() {
            Self::With
        } else {
            Self::Without
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
