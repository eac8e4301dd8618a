//! What a run ended with, for every kind alike: its status, signal, tally, budget and the
//! batches it left waiting ([`RunSummary`]), and how that is said: the exit code, why nothing
//! could run, the closing line.

use std::time::Duration;

use super::shard::Shard;
use super::{ExperimentKind, Signal, Tally};
use crate::dispatch::budget::Overrun;
use crate::dispatch::{Budget, Waiting};
use crate::store::RunStatus;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub run_id: i64,
    pub kind: ExperimentKind,
    pub status: RunStatus,
    /// The signal that stopped it, if one did.
    pub signal: Option<Signal>,
    pub tally: Tally,
    /// How long this run took, start to end (answers served from the cache keep the latency
    /// of the run that paid for them).
    pub elapsed: Duration,
    /// The run's budget and what it spent, when it had one.
    pub budget: Option<BudgetUse>,
    /// The batches it left waiting (status `waiting`), with what the last poll said of them.
    pub waiting: Option<Waiting>,
}

/// What a run with a budget spent of it.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetUse {
    /// The cap, in USD.
    pub limit_usd: f64,
    /// What its answers were billed, in USD (the tally's paid).
    pub spent_usd: f64,
    /// Whether it stopped the run: a call's worst case did not fit what was left, a call
    /// was billed more than its target's `max_cost_usd:`, or what was spent went beyond it.
    pub reached: bool,
    /// The first call billed more than its target's `max_cost_usd:`, if one was.
    pub overrun: Option<Overrun>,
    /// The largest worst case refused, in USD: how much more the next call needed.
    pub refused_usd: f64,
    /// For a shard (`--shard k/N`), which, and whose share of the plan's budget its cap is
    /// (1/N).
    pub shard: Option<Shard>,
}

impl BudgetUse {
    pub(super) fn of(budget: &Budget, shard: Shard) -> Self {
        Self {
            limit_usd: budget.limit_usd(),
            spent_usd: budget.spent_usd(),
            reached: budget.reached(),
            overrun: budget.overrun(),
            refused_usd: budget.refused_usd(),
            shard: shard.is_part().then_some(shard),
        }
    }

    /// The cap as said after `its`/`a`: `$0.05 budget`, or for a shard `$0.001 budget (shard
    /// 0/2's 1/2 of the plan's $0.002)`.
    fn cap(&self) -> String {
        use crate::output::dollars;
        let share = self
            .shard
            .map(|s| {
                format!(
                    " (shard {s}'s 1/{} of the plan's {})",
                    s.count,
                    dollars(self.limit_usd * f64::from(s.count))
                )
            })
            .unwrap_or_default();
        format!("{} budget{share}", dollars(self.limit_usd))
    }
}

impl RunSummary {
    /// Whether calls were planned and none was answered.
    pub(crate) fn nothing_ran(&self) -> bool {
        self.tally.counts.calls > 0 && self.tally.answered == 0
    }

    /// The process's exit status: 128 + the signal's number when interrupted; 1 when its
    /// budget stopped it, nothing could run or `--offline` met calls not in the cache; else 0.
    pub(crate) fn exit_code(&self) -> u8 {
        if self.status == RunStatus::Waiting {
            // Waiting is a way to end: the same command collects.
            return crate::exit::SUCCESS;
        }
        match self.signal {
            Some(signal) => signal.exit_code(),
            None if self.status == RunStatus::Budget
                || self.nothing_ran()
                || self.tally.offline_misses > 0 =>
            {
                crate::exit::ERROR
            }
            None => crate::exit::SUCCESS,
        }
    }

    /// Calls planned that have no outcome yet: what the same command would still do.
    pub(crate) fn calls_left(&self) -> u64 {
        let c = &self.tally.counts;
        c.planned_calls.saturating_sub(c.calls)
    }

    /// What a run left waiting says: how many batches and how to collect them.
    pub(crate) fn waiting_note(&self) -> Option<String> {
        let waiting = self.waiting.as_ref()?;
        let seen = waiting
            .note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        let batches = match waiting.batches {
            1 => "1 batch".to_owned(),
            n => format!("{n} batches"),
        };
        Some(format!(
            "run {} is waiting for {batches}{seen}; run the same command again to collect the \
             results (batches usually end within an hour, at most 24 h); `track batches` lists \
             them",
            self.run_id,
        ))
    }

    /// Why the exit status is not 0, in one line.
    pub(crate) fn failure(&self) -> Option<String> {
        if self.status == RunStatus::Waiting {
            return None;
        }
        let first = || {
            self.tally
                .first_error()
                .unwrap_or_else(|| "unknown".to_owned())
        };
        if let Some(signal) = self.signal {
            return Some(format!(
                "interrupted: run {} is kept as `interrupted` ({}); run the same command again to \
                 finish it from the cache",
                self.run_id,
                signal.name()
            ));
        }
        if let Some(budget) = self
            .budget
            .as_ref()
            .filter(|_| self.status == RunStatus::Budget)
        {
            return Some(self.budget_failure(budget));
        }
        if self.nothing_ran() {
            return Some(format!(
                "nothing could run ({}); first: {}",
                crate::output::count(self.tally.counts.errors, "error"),
                first()
            ));
        }
        (self.tally.offline_misses > 0).then(|| {
            format!(
                "{} of {} calls are not in the cache and --offline forbids calls; first: {}",
                self.tally.offline_misses,
                self.tally.counts.calls,
                first()
            )
        })
    }

    /// Why the budget stopped the run: a target's bill beyond its `max_cost_usd:` (naming
    /// it, its bound and the bill), what was spent beyond the cap, or the next call's worst
    /// case that did not fit.
    fn budget_failure(&self, budget: &BudgetUse) -> String {
        use crate::output::dollars;
        let spent = format!(
            "run {} spent {} of its {}; {} of {} calls are left",
            self.run_id,
            dollars(budget.spent_usd),
            budget.cap(),
            self.calls_left(),
            self.tally.counts.planned_calls,
        );
        if let Some(o) = &budget.overrun {
            return format!(
                "budget: {} reported {} for one call, above its `max_cost_usd: {}` (what the \
                 budget holds for each of its calls), so the run stopped at once: {spent}; set \
                 `max_cost_usd:` under `providers: {}:` in config.yaml to the most one call \
                 can cost, then run the same command to finish from the cache",
                o.target,
                dollars(o.reported_usd),
                o.max_cost_usd,
                o.target,
            );
        }
        let (what, next) = if budget.spent_usd > budget.limit_usd * (1.0 + 1e-9) {
            ("budget exceeded", String::new())
        } else if budget.refused_usd > 0.0 {
            let next = format!(" (the next needed up to {})", dollars(budget.refused_usd));
            ("budget reached", next)
        } else {
            ("budget reached", String::new())
        };
        format!(
            "{what}: {spent}{next}; run the same command with a larger --budget to finish from \
             the cache"
        )
    }

    /// The one-line tally: `run 3 (benchmark): 6 calls, 2 cache hits, 0 errors; cost $…`,
    /// with the budget after what was paid when the run had one.
    pub(crate) fn line(&self) -> String {
        let c = &self.tally.counts;
        use crate::output::{count, dollars};
        let budget = self
            .budget
            .as_ref()
            .map(|b| format!(" of a {}", b.cap()))
            .unwrap_or_default();
        // Answers of a model without a price: their cost is unknown, not 0.
        let plus_unknown = |usd: f64, unknown: u64| match unknown {
            0 => dollars(usd),
            n => format!(
                "{} + unknown ({} without a price)",
                dollars(usd),
                count(n, "answer")
            ),
        };
        format!(
            "run {} ({}): {}, {}, {}; cost {}, paid {}{budget}; took {:.2} s",
            self.run_id,
            self.kind,
            count(c.calls, "call"),
            count(c.cache_hits, "cache hit"),
            count(c.errors, "error"),
            plus_unknown(c.cost_usd, self.tally.unpriced),
            plus_unknown(c.paid_usd, self.tally.unpriced_paid),
            self.elapsed.as_secs_f64()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(status: RunStatus, budget: Option<BudgetUse>) -> RunSummary {
        let mut tally = Tally::default();
        tally.counts.planned_calls = 300;
        tally.counts.calls = 180;
        tally.counts.paid_usd = 0.0421;
        tally.answered = 180;
        RunSummary {
            run_id: 7,
            kind: ExperimentKind::Bench,
            status,
            signal: None,
            tally,
            elapsed: Duration::from_millis(1500),
            budget,
            waiting: None,
        }
    }

    #[test]
    fn a_run_left_waiting_exits_0_saying_how_to_collect_even_after_a_signal() {
        let waiting = RunSummary {
            status: RunStatus::Waiting,
            signal: Some(Signal::Interrupt),
            waiting: Some(Waiting {
                batches: 2,
                note: Some("openai gpt-4o-mini in_progress 40/120".into()),
            }),
            ..summary(RunStatus::Waiting, None)
        };
        assert_eq!(waiting.exit_code(), 0);
        assert_eq!(waiting.failure(), None);
        assert_eq!(
            waiting.waiting_note().unwrap(),
            "run 7 is waiting for 2 batches (openai gpt-4o-mini in_progress 40/120); run the \
             same command again to collect the results (batches usually end within an hour, at \
             most 24 h); `track batches` lists them"
        );
        assert_eq!(summary(RunStatus::Completed, None).waiting_note(), None);
    }

    #[test]
    fn a_run_its_budget_stopped_exits_1_saying_what_was_spent_and_what_is_left() {
        let reached = BudgetUse {
            limit_usd: 0.05,
            spent_usd: 0.0421,
            reached: true,
            overrun: None,
            refused_usd: 0.0012,
            shard: None,
        };
        let stopped = summary(RunStatus::Budget, Some(reached.clone()));
        assert_eq!(stopped.exit_code(), 1);
        assert_eq!(stopped.calls_left(), 120);
        assert_eq!(
            stopped.failure().unwrap(),
            "budget reached: run 7 spent $0.0421 of its $0.05 budget; 120 of 300 calls are left \
             (the next needed up to $0.0012); run the same command with a larger --budget to \
             finish from the cache"
        );
        assert!(
            stopped
                .line()
                .contains("paid $0.0421 of a $0.05 budget; took 1.50 s"),
            "{}",
            stopped.line()
        );
        // A run that stayed within its budget completes as any other.
        let within = summary(
            RunStatus::Completed,
            Some(BudgetUse {
                reached: false,
                refused_usd: 0.0,
                ..reached.clone()
            }),
        );
        assert_eq!(within.exit_code(), 0);
        assert_eq!(within.failure(), None);
        // A signal is what a user sees first, budget or not.
        let interrupted = RunSummary {
            signal: Some(Signal::Interrupt),
            status: RunStatus::Interrupted,
            ..stopped.clone()
        };
        assert_eq!(interrupted.exit_code(), 130);
        assert!(interrupted.failure().unwrap().starts_with("interrupted:"));
        assert!(
            !summary(RunStatus::Completed, None)
                .line()
                .contains("budget")
        );
    }

    #[test]
    fn a_target_billing_beyond_its_bound_is_named_with_its_bound_and_bill() {
        let overran = BudgetUse {
            limit_usd: 0.001,
            spent_usd: 0.04,
            reached: true,
            overrun: Some(Overrun {
                target: "my-app".into(),
                max_cost_usd: 0.000001,
                reported_usd: 0.01,
            }),
            refused_usd: 0.0,
            shard: None,
        };
        let stopped = summary(RunStatus::Budget, Some(overran.clone()));
        assert_eq!(stopped.exit_code(), 1);
        assert_eq!(
            stopped.failure().unwrap(),
            "budget: my-app reported $0.01 for one call, above its `max_cost_usd: 0.000001` \
             (what the budget holds for each of its calls), so the run stopped at once: run 7 \
             spent $0.04 of its $0.001 budget; 120 of 300 calls are left; set `max_cost_usd:` \
             under `providers: my-app:` in config.yaml to the most one call can cost, then run \
             the same command to finish from the cache"
        );
        // Spent beyond the cap without a target to name (every call in flight at once).
        let exceeded = summary(
            RunStatus::Budget,
            Some(BudgetUse {
                overrun: None,
                ..overran
            }),
        );
        assert!(
            exceeded
                .failure()
                .unwrap()
                .starts_with("budget exceeded: run 7 spent $0.04 of its $0.001 budget;"),
            "{:?}",
            exceeded.failure()
        );
    }

    #[test]
    fn a_shard_says_its_budget_is_its_share_of_the_plans() {
        let shard = Shard::new(0, 2).unwrap();
        let stopped = summary(
            RunStatus::Budget,
            Some(BudgetUse {
                limit_usd: 0.001,
                spent_usd: 0.0009,
                reached: true,
                overrun: None,
                refused_usd: 0.0004,
                shard: Some(shard),
            }),
        );
        let failure = stopped.failure().unwrap();
        assert!(
            failure.contains("of its $0.001 budget (shard 0/2's 1/2 of the plan's $0.002);"),
            "{failure}"
        );
        assert!(
            stopped
                .line()
                .contains("of a $0.001 budget (shard 0/2's 1/2 of the plan's $0.002)"),
            "{}",
            stopped.line()
        );
    }
}
