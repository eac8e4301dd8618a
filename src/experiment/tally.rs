//! The tally of a run: calls, cache hits, failures, cost and paid, and the first errors for
//! the summary. Kept in the run row as outcomes land.

use crate::dispatch::CallOutcome;
use crate::store::RunTally;

/// Groups of errors kept in memory for the summary; errors of other groups are counted (and
/// all are stored in run_errors).
const KEPT_GROUPS: usize = 20;

/// Errors of one model with one cause: the summary shows each cause once, with its count, so
/// one provider's many errors do not hide another's.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorGroup {
    /// The model's reference, or empty for problems found in answers.
    pub model: String,
    /// What went wrong, without the item.
    pub cause: String,
    /// The first item it happened to.
    pub first_item: String,
    pub count: u64,
}

impl std::fmt::Display for ErrorGroup {
    /// `item: cause` for one error; `model: n errors: cause (first: item)` for several.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whose = [&self.first_item, &self.model]
            .into_iter()
            .find(|s| !s.is_empty());
        if self.count == 1 {
            return match whose {
                Some(whose) => write!(f, "{whose}: {}", self.cause),
                None => write!(f, "{}", self.cause),
            };
        }
        if !self.model.is_empty() {
            write!(f, "{}: ", self.model)?;
        }
        write!(
            f,
            "{}: {}",
            crate::output::count(self.count, "error"),
            self.cause
        )?;
        if !self.first_item.is_empty() {
            write!(f, " (first: {})", self.first_item)?;
        }
        Ok(())
    }
}

/// What a run has done so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub counts: RunTally,
    /// Answered calls (fresh or cached).
    pub answered: u64,
    /// Answers whose cost is unknown (their model had no price): `counts.cost_usd` leaves
    /// them out.
    pub unpriced: u64,
    /// Of them, those this run paid for (fresh): `counts.paid_usd` leaves them out.
    pub unpriced_paid: u64,
    /// Calls not in the cache under `--offline`.
    pub offline_misses: u64,
    /// Errors (failed calls and problems) grouped by model and cause, in order of their first
    /// occurrence, for the summary.
    pub error_groups: Vec<ErrorGroup>,
    /// Errors in groups beyond [`KEPT_GROUPS`].
    pub ungrouped_errors: u64,
}

impl Tally {
    /// Counts one outcome.
    pub(crate) fn add(&mut self, outcome: &CallOutcome) {
        let c = &mut self.counts;
        c.calls += 1;
        match outcome {
            CallOutcome::Hit(call) => {
                c.cache_hits += 1;
                c.cost_usd += call.cost_usd.unwrap_or(0.0);
                self.unpriced += u64::from(call.cost_usd.is_none());
                self.answered += 1;
            }
            CallOutcome::Fresh(call) => {
                c.cost_usd += call.cost_usd.unwrap_or(0.0);
                c.paid_usd += call.cost_usd.unwrap_or(0.0);
                self.unpriced += u64::from(call.cost_usd.is_none());
                self.unpriced_paid += u64::from(call.cost_usd.is_none());
                self.answered += 1;
            }
            CallOutcome::Failed { .. } => {
                c.failed_calls += 1;
                c.errors += 1;
            }
        }
    }

    /// Files an error of `model` on `item` under its group, for the summary.
    pub(crate) fn note_error(&mut self, model: &str, item: &str, cause: &str) {
        if let Some(group) = self
            .error_groups
            .iter_mut()
            .find(|g| g.model == model && g.cause == cause)
        {
            group.count += 1;
        } else if self.error_groups.len() < KEPT_GROUPS {
            self.error_groups.push(ErrorGroup {
                model: model.to_owned(),
                cause: cause.to_owned(),
                first_item: item.to_owned(),
                count: 1,
            });
        } else {
            self.ungrouped_errors += 1;
        }
    }

    /// The first error, in one line.
    pub(crate) fn first_error(&self) -> Option<String> {
        self.error_groups.first().map(|g| {
            ErrorGroup {
                count: 1,
                ..g.clone()
            }
            .to_string()
        })
    }

    /// Counts problems a kind found in answers.
    pub(crate) fn add_problems(&mut self, problems: Vec<String>) {
        self.counts.errors += problems.len() as u64;
        for p in problems {
            self.note_error("", "", &p);
        }
    }

    /// The progress bar's message.
    pub(crate) fn progress_message(&self) -> String {
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
