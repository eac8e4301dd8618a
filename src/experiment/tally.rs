//! The tally of a run: calls, cache hits, failures, cost and paid, and the first errors for
//! the summary. Kept in the run row as outcomes land.

use crate::llm::CallOutcome;
use crate::store::RunTally;

/// Errors kept in memory for the summary; the rest are counted (and stored in run_errors).
const KEPT_ERRORS: usize = 20;

/// What a run has done so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub counts: RunTally,
    /// Answered calls (fresh or cached).
    pub answered: u64,
    /// Calls not in the cache under `--offline`.
    pub offline_misses: u64,
    /// The first errors (failed calls and problems), for the summary.
    pub first_errors: Vec<String>,
}

impl Tally {
    /// Counts one outcome.
    pub fn add(&mut self, outcome: &CallOutcome) {
        let c = &mut self.counts;
        c.calls += 1;
        match outcome {
            CallOutcome::Hit(call) => {
                c.cache_hits += 1;
                c.cost_usd += call.cost_usd;
                self.answered += 1;
            }
            CallOutcome::Fresh(call) => {
                c.cost_usd += call.cost_usd;
                c.paid_usd += call.cost_usd;
                self.answered += 1;
            }
            CallOutcome::Failed { .. } => {
                c.failed_calls += 1;
                c.errors += 1;
            }
        }
    }

    /// Keeps an error message (the first few) for the summary.
    pub fn note_error(&mut self, message: String) {
        if self.first_errors.len() < KEPT_ERRORS {
            self.first_errors.push(message);
        }
    }

    /// Counts problems a kind found in answers.
    pub fn add_problems(&mut self, problems: Vec<String>) {
        self.counts.errors += problems.len() as u64;
        for p in problems {
            self.note_error(p);
        }
    }

    /// The progress bar's message.
    pub fn progress_message(&self) -> String {
        let c = &self.counts;
        // Short enough for an 80-column line with the bar and the ETA.
        format!(
            "{} cached · {} · ${:.4} paid",
            c.cache_hits,
            crate::output::count(c.errors, "error"),
            c.paid_usd
        )
    }
}
