//! A run's spending cap (`--budget`): before a call is sent, its worst case is reserved; when
//! its answer lands, the reservation is settled to what was billed. A call whose worst case
//! does not fit what is left is not sent, so what the provider bills never exceeds the cap,
//! at any concurrency.
//!
//! It knows amounts, not calls: the executor says what to reserve and what to settle.

use std::sync::{Arc, Mutex};

use super::CallJob;
use crate::llm::{MESSAGE_TOKENS_BOUND, Part, tokens_bound};

/// What a run may spend, what it has spent and what its calls in flight may still cost.
#[derive(Debug)]
pub struct Budget {
    limit_usd: f64,
    state: Mutex<Ledger>,
    /// The first call billed more than its target's `max_cost_usd:` said it could cost.
    overrun: Mutex<Option<Overrun>>,
    /// Wakes calls waiting for reservations in flight to settle.
    settled: tokio::sync::Notify,
}

#[derive(Debug, Default, Clone, Copy)]
struct Ledger {
    /// Billed by answers that landed (and the worst case of attempts whose bill is unknown).
    spent_usd: f64,
    /// Worst cases of calls in flight.
    reserved_usd: f64,
    /// Reservations in flight.
    open: u64,
    /// A call was refused, a call was billed more than its bound, or what was spent went
    /// beyond the cap: the run ends `budget`.
    reached: bool,
    /// The largest worst case refused, to say how much more would do.
    refused_usd: f64,
}

/// A call to a target billed more than its `max_cost_usd:`, the bound its reservation held:
/// the budget can no longer vouch for what is left, and the run stops at once.
#[derive(Debug, Clone, PartialEq)]
pub struct Overrun {
    /// The target's provider name in config.yaml (`my-app`).
    pub target: String,
    /// Its `max_cost_usd:`, in USD.
    pub max_cost_usd: f64,
    /// What the call reported it cost, in USD.
    pub reported_usd: f64,
}

/// Why [`Budget::try_reserve`] reserved nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRoom {
    /// Not now: reservations held by calls out take the room it needs.
    Later,
    /// Never: it does not fit beside what is spent (the budget is reached).
    Never,
}

/// The worst case of one call in flight, live or in a batch, held until it is settled or
/// released; one dropped unsettled counts as spent.
#[derive(Debug)]
#[must_use = "a reservation must be settled or released"]
pub struct Reservation {
    budget: Arc<Budget>,
    worst_usd: f64,
    done: bool,
}

impl Budget {
    /// A cap of `limit_usd` US dollars (positive and finite: see [`parse_budget`]).
    pub fn new(limit_usd: f64) -> Self {
        Self {
            limit_usd,
            state: Mutex::new(Ledger::default()),
            overrun: Mutex::new(None),
            settled: tokio::sync::Notify::new(),
        }
    }

    /// The cap, in USD.
    pub fn limit_usd(&self) -> f64 {
        self.limit_usd
    }

    /// What the answers that landed were billed, in USD.
    pub fn spent_usd(&self) -> f64 {
        self.ledger().spent_usd
    }

    /// Whether the run is to stop for its budget: a call was refused because its worst case
    /// did not fit, one was billed more than its target's `max_cost_usd:`, or what was spent
    /// went beyond the cap.
    pub fn reached(&self) -> bool {
        self.ledger().reached
    }

    /// The first call billed more than its target's `max_cost_usd:`, if one was.
    pub fn overrun(&self) -> Option<Overrun> {
        self.overrun
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The largest worst case refused, in USD (0 when none was).
    pub fn refused_usd(&self) -> f64 {
        self.ledger().refused_usd
    }

    fn ledger(&self) -> Ledger {
        *self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `worst_usd` for one call. While it does not fit only because of calls in
    /// flight, waits for them to settle; `None` when it cannot fit even with nothing in
    /// flight (the call is not sent, and the budget is [`reached`](Self::reached)).
    pub async fn reserve(self: &Arc<Self>, worst_usd: f64) -> Option<Reservation> {
        let worst_usd = worst_usd.max(0.0);
        loop {
            // Registered before looking, so a settlement in between is not missed.
            let settled = self.settled.notified();
            {
                let mut ledger = self.state.lock().unwrap_or_else(|p| p.into_inner());
                let left = self.limit_usd - ledger.spent_usd;
                if worst_usd > left || ledger.reached {
                    ledger.reached = true;
                    ledger.refused_usd = ledger.refused_usd.max(worst_usd);
                    drop(ledger);
                    // Others waiting on the same room learn it will not come.
                    self.settled.notify_waiters();
                    return None;
                }
                if worst_usd <= left - ledger.reserved_usd {
                    ledger.reserved_usd += worst_usd;
                    ledger.open += 1;
                    return Some(Reservation {
                        budget: self.clone(),
                        worst_usd,
                        done: false,
                    });
                }
            }
            settled.await;
        }
    }

    /// Reserves `worst_usd` now, without waiting for calls in flight: for calls sent in a
    /// batch, whose answers land long after. [`NoRoom::Later`] when it fits beside what is
    /// spent but not beside what is reserved too (batches out hold the room: submit it once
    /// they settle); [`NoRoom::Never`] (and the budget reached) when it does not fit beside
    /// what is spent.
    pub fn try_reserve(self: &Arc<Self>, worst_usd: f64) -> Result<Reservation, NoRoom> {
        let worst_usd = worst_usd.max(0.0);
        let mut ledger = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let left = self.limit_usd - ledger.spent_usd;
        if worst_usd > left || ledger.reached {
            ledger.reached = true;
            ledger.refused_usd = ledger.refused_usd.max(worst_usd);
            return Err(NoRoom::Never);
        }
        if worst_usd > left - ledger.reserved_usd {
            return Err(NoRoom::Later);
        }
        ledger.reserved_usd += worst_usd;
        ledger.open += 1;
        Ok(Reservation {
            budget: self.clone(),
            worst_usd,
            done: false,
        })
    }

    fn close(&self, worst_usd: f64, spent_usd: f64) {
        let mut ledger = self.state.lock().unwrap_or_else(|p| p.into_inner());
        ledger.open = ledger.open.saturating_sub(1);
        ledger.reserved_usd = if ledger.open == 0 {
            // No drift from floating-point sums once nothing is in flight.
            0.0
        } else {
            (ledger.reserved_usd - worst_usd).max(0.0)
        };
        ledger.spent_usd += spent_usd.max(0.0);
        // Beyond the cap (a bill above its bound): nothing more is sent. The tolerance is
        // for floating-point sums of bills that fit.
        if ledger.spent_usd > self.limit_usd * (1.0 + 1e-9) {
            ledger.reached = true;
        }
        drop(ledger);
        self.settled.notify_waiters();
    }

    /// Records `overrun` (the first one is kept) and stops the sending.
    fn overran(&self, overrun: Overrun) {
        self.overrun
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(overrun);
        self.state.lock().unwrap_or_else(|p| p.into_inner()).reached = true;
    }
}

impl Reservation {
    /// The worst case reserved, in USD.
    pub fn worst_usd(&self) -> f64 {
        self.worst_usd
    }

    /// The call was answered and billed `actual_usd`.
    pub fn settle(mut self, actual_usd: f64) {
        self.done = true;
        self.budget.close(self.worst_usd, actual_usd);
    }

    /// The call was answered and billed `actual_usd`, beyond the `max_cost_usd:` of its
    /// target that was reserved (`overrun`): the budget is reached at once.
    pub fn settle_overrun(self, actual_usd: f64, overrun: Overrun) {
        self.budget.overran(overrun);
        self.settle(actual_usd);
    }

    /// The call was refused before anything was generated (an HTTP error status): nothing
    /// was billed.
    pub fn release(mut self) {
        self.done = true;
        self.budget.close(self.worst_usd, 0.0);
    }

    /// The call waits in a batch the run leaves behind (`--detach`, a signal): its worst case
    /// stays reserved, neither spent nor given back; the run that collects it counts it.
    pub fn leave_waiting(mut self) {
        self.done = true;
    }
}

impl Drop for Reservation {
    /// A reservation neither settled nor released may have been billed (a body cut off, a
    /// timeout after the server began): its worst case counts as spent.
    fn drop(&mut self) {
        if !self.done {
            self.budget.close(self.worst_usd, self.worst_usd);
        }
    }
}

/// Output tokens assumed for the cost bound of a call that sets no `max_tokens`.
pub const ASSUMED_MAX_OUTPUT_TOKENS: u32 = crate::llm::anthropic::DEFAULT_MAX_TOKENS;

/// Input tokens an image can count for, at most, in any wire format track speaks (OpenAI's
/// high-detail tiling of a 2048 x 768 image is 1,105; Anthropic's largest images are about
/// 1,600; patch-based models reach about 2,500).
pub const IMAGE_TOKENS_BOUND: u64 = 2_500;

/// The most a call can cost: its input at a token a byte with each message's framing (images
/// at their bound), and an answer of its `max_tokens`; a target's `max_cost_usd:` when it
/// sets one. What a budget reserves before sending. Without a price it is unbounded:
/// `f64::INFINITY`, which no budget holds.
pub fn max_cost(job: &CallJob) -> f64 {
    match job.app.as_ref().and_then(|a| a.config.max_cost_usd) {
        Some(usd) => usd,
        None => max_cost_at(job, job.price),
    }
}

/// Why a budget cannot hold `job`, when it cannot: a call to a target that may report a cost
/// (or is priced by tokens its application counts), with no `max_cost_usd:` to bound it.
pub fn unbounded(job: &CallJob) -> Option<String> {
    let call = job.app.as_ref()?;
    let app = &call.app;
    // An unknown price may be any.
    let priced = job
        .price
        .is_none_or(|p| p.input_per_mtok > 0.0 || p.output_per_mtok > 0.0);
    let bounded = call.config.max_cost_usd.is_some() || !(app.spec.may_cost() || priced);
    (!bounded).then(|| {
        format!(
            "a budget cannot bound the calls to {}: what each costs is known only once it \
             answers; set `max_cost_usd:` (the most one call costs, 0 if it is free) under \
             `providers: {}:` in config.yaml",
            app.provider, app.provider
        )
    })
}

/// The most a call sent through a batch API can cost: [`max_cost`] at the batch price
/// ([`Price::batch`](crate::cost::Price::batch)). What a budget reserves at submission.
pub fn batch_max_cost(job: &CallJob) -> f64 {
    max_cost_at(job, job.price.map(crate::cost::Price::batch))
}

/// [`max_cost`] at `price` (unbounded when it is unknown).
fn max_cost_at(job: &CallJob, price: Option<crate::cost::Price>) -> f64 {
    let Some(price) = price else {
        return f64::INFINITY;
    };
    let request = &job.request;
    let input = request
        .system
        .as_deref()
        .map_or(0, |s| tokens_bound(s) + MESSAGE_TOKENS_BOUND)
        + request
            .messages
            .iter()
            .map(|m| {
                MESSAGE_TOKENS_BOUND
                    + m.parts
                        .iter()
                        .map(|p| match p {
                            Part::Text(text) => tokens_bound(text),
                            Part::Image(_) => IMAGE_TOKENS_BOUND,
                        })
                        .sum::<u64>()
            })
            .sum::<u64>()
        + request.tools_bound();
    let output = u64::from(
        request
            .params
            .max_tokens
            .unwrap_or(ASSUMED_MAX_OUTPUT_TOKENS),
    );
    price.cost_usd(input, output)
}

/// Reads a budget in USD as written on the command line or in an experiment file (`5`,
/// `0.25`, `$5`): a positive, finite number; the error says what is wrong and the fix.
pub fn parse_budget(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let number = trimmed.strip_prefix('$').unwrap_or(trimmed).trim();
    match number.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        Ok(_) => Err(format!(
            "a budget must be more than $0 (got `{text}`): give the most the run may spend in \
             US dollars, e.g. 5 or 0.25"
        )),
        Err(_) => Err(format!(
            "`{text}` is not an amount: give the most the run may spend in US dollars, e.g. 5 \
             or 0.25"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn settles_to_the_real_cost_and_refuses_what_cannot_fit() {
        let budget = Arc::new(Budget::new(1.0));
        let a = budget.reserve(0.6).await.expect("fits");
        a.settle(0.1);
        assert!((budget.spent_usd() - 0.1).abs() < 1e-12);
        let b = budget.reserve(0.9).await.expect("0.9 of 0.9 left fits");
        b.release();
        assert!(budget.reserve(0.95).await.is_none(), "0.95 > 0.9 left");
        assert!(budget.reached());
        assert_eq!(budget.refused_usd(), 0.95);
        assert!(
            budget.reserve(0.01).await.is_none(),
            "reached stays reached"
        );
    }

    #[test]
    fn a_batched_call_waits_for_the_room_batches_out_hold_and_never_fits_beyond_the_spent() {
        let budget = Arc::new(Budget::new(1.0));
        let held = budget.try_reserve(0.6).expect("fits");
        // 0.6 held by a batch out: 0.5 fits beside what is spent, not beside what is held.
        assert_eq!(budget.try_reserve(0.5).err(), Some(NoRoom::Later));
        assert!(!budget.reached(), "held room is not a reached budget");
        held.settle(0.05);
        budget
            .try_reserve(0.5)
            .expect("fits once 0.6 settled")
            .settle(0.05);
        // 0.1 spent leaves 0.9: a call needing more never fits.
        assert_eq!(budget.try_reserve(0.95).err(), Some(NoRoom::Never));
        assert!(budget.reached());
        assert_eq!(budget.refused_usd(), 0.95);
    }

    #[tokio::test]
    async fn a_call_waits_for_reservations_in_flight_then_fits() {
        let budget = Arc::new(Budget::new(1.0));
        let held = budget.reserve(0.7).await.expect("fits");
        let waiting = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.reserve(0.5).await.map(|r| r.worst_usd()) })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "0.5 waits while 0.7 is in flight");
        held.settle(0.2);
        assert_eq!(waiting.await.unwrap(), Some(0.5));
    }

    #[tokio::test]
    async fn an_unsettled_reservation_counts_as_spent() {
        let budget = Arc::new(Budget::new(1.0));
        drop(budget.reserve(0.4).await);
        assert!((budget.spent_usd() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn a_call_left_waiting_in_a_batch_stays_held_neither_spent_nor_given_back() {
        let budget = Arc::new(Budget::new(1.0));
        budget.try_reserve(0.6).expect("fits").leave_waiting();
        assert_eq!(budget.spent_usd(), 0.0);
        assert_eq!(
            budget.try_reserve(0.5).err(),
            Some(NoRoom::Later),
            "its room stays held"
        );
    }

    #[tokio::test]
    async fn the_bill_never_exceeds_the_budget_at_any_concurrency() {
        let budget = Arc::new(Budget::new(1.0));
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let budget = budget.clone();
                tokio::spawn(async move {
                    if let Some(r) = budget.reserve(0.05).await {
                        tokio::task::yield_now().await;
                        // The real bill is at most the worst case.
                        r.settle(0.05 * f64::from(i % 3) / 2.0);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert!(budget.spent_usd() <= 1.0 + 1e-12, "{}", budget.spent_usd());
    }

    #[tokio::test]
    async fn a_bill_beyond_the_cap_or_its_bound_reaches_the_budget() {
        // Reserved at a bound of 0.001 each, both in flight; billed 0.6 each.
        let budget = Arc::new(Budget::new(1.0));
        let a = budget.reserve(0.001).await.expect("fits");
        let b = budget.reserve(0.001).await.expect("fits");
        a.settle(0.6);
        assert!(!budget.reached(), "0.6 of 1.0 spent");
        b.settle(0.6);
        assert!(budget.reached(), "1.2 spent of a 1.0 budget");
        assert_eq!(budget.refused_usd(), 0.0, "nothing was refused");
        assert!(budget.reserve(0.0).await.is_none());
        // A target's bill above its `max_cost_usd:` stops the run, even within the cap.
        let budget = Arc::new(Budget::new(100.0));
        let overrun = Overrun {
            target: "my-app".into(),
            max_cost_usd: 0.001,
            reported_usd: 0.5,
        };
        let r = budget.reserve(0.001).await.expect("fits");
        r.settle_overrun(0.5, overrun.clone());
        assert!(budget.reached());
        assert_eq!(budget.overrun(), Some(overrun));
        assert!((budget.spent_usd() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn budgets_are_positive_amounts() {
        assert_eq!(parse_budget("5"), Ok(5.0));
        assert_eq!(parse_budget(" $0.25 "), Ok(0.25));
        for bad in ["0", "-1", "abc", "inf", "NaN", ""] {
            let e = parse_budget(bad).unwrap_err();
            assert!(e.contains("US dollars"), "{bad}: {e}");
        }
    }
}
