//! Which runs a report covers, as the command hands them in: each run with the status it has
//! now and the word for its kind. Choosing them (`--run`) is `commands/report.rs`'s.

use crate::experiment::ExperimentKind;
use crate::store::{RunInfo, RunStatus};

/// A run of the report with its status as observed now (a `running` run whose process is
/// gone is `abandoned`).
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedRun {
    pub info: RunInfo,
    pub status: RunStatus,
    /// The word for its kind in the header, counted there (`2 benchmarks`): its registry
    /// entry's report noun.
    pub noun: &'static str,
}

/// The runs a report covers, by id.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub runs: Vec<SelectedRun>,
    /// Whether the runs were named by id (`--run 3,5`), not found by `latest` or `all`.
    pub named: bool,
}

impl Selection {
    /// The ids of the selected runs of `kind`, oldest first.
    pub(crate) fn ids_of(&self, kind: ExperimentKind) -> Vec<i64> {
        self.runs
            .iter()
            .filter(|r| r.info.kind == kind)
            .map(|r| r.info.id)
            .collect()
    }

    /// The pair to compare when exactly two runs of one kind were named (`--run BASE,NEW`):
    /// (base, new), the older run as the base.
    pub(crate) fn comparison(&self) -> Option<(&SelectedRun, &SelectedRun)> {
        match self.runs.as_slice() {
            [base, new] if self.named && base.info.kind == new.info.kind => Some((base, new)),
            _ => None,
        }
    }
}
