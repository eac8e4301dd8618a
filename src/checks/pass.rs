//! When a case passes, from the outcomes of its checks.
//!
//! By default every check must pass. With `pass: {threshold: 0.8}` the case passes when its
//! weighted score reaches the threshold: the sum over its checks of weight × credit, over
//! the sum of the weights. A check's credit is its own score (0 to 1) where it has one
//! (`similar`'s ratio, a script's `score`, a judge's score mapped from 1-5), else 1 when it
//! passed and 0 when it failed. So a `similar` check at 0.75 under a threshold of 0.8 fails
//! but still counts 0.75 of its weight, as promptfoo counts it.
//!
//! Any check in error makes the case an error, whatever the rule: an error is never a pass
//! and never a plain failure either.

use std::fmt::Write as _;

use serde_json::Value;

use super::check::{Check, CheckOutcome, CheckStatus};

/// How a case's check outcomes make its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PassRule {
    /// Every check must pass.
    #[default]
    All,
    /// The weighted score must be at least this (above 0, at most 1).
    Threshold(f64),
}

impl PassRule {
    /// Parses the `pass:` mapping (`{threshold: 0.8}`); absent or null is [`PassRule::All`].
    pub(crate) fn parse(pass: Option<&Value>) -> Result<Self, String> {
        let fields = match pass {
            None | Some(Value::Null) => return Ok(Self::All),
            Some(Value::Object(fields)) => fields,
            Some(other) => {
                return Err(format!(
                    "`pass` is a mapping such as `{{threshold: 0.8}}`, not `{other}`"
                ));
            }
        };
        if let Some(key) = fields.keys().find(|k| *k != "threshold") {
            return Err(format!(
                "`pass`: {}",
                crate::yaml::unknown_key(key, &["threshold"])
            ));
        }
        match fields.get("threshold") {
            None | Some(Value::Null) => Ok(Self::All),
            Some(v) => v
                .as_f64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .filter(|t| *t > 0.0 && *t <= 1.0)
                .map(Self::Threshold)
                .ok_or_else(|| {
                    format!("`pass: {{threshold: {v}}}` must be a score above 0 and at most 1")
                }),
        }
    }
}

/// A case's verdict from its checks.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseOutcome {
    pub status: CheckStatus,
    /// The weighted score (0 to 1), whatever the rule.
    pub score: f64,
    /// Why it failed or is an error: the first such check, and how many more.
    pub reason: Option<String>,
}

/// Combines the outcomes of one case's checks under `rule` (see the module's notes).
pub(crate) fn combine<'a>(
    rule: PassRule,
    graded: impl IntoIterator<Item = (&'a Check, &'a CheckOutcome)>,
) -> CaseOutcome {
    let mut total = 0.0;
    let mut earned = 0.0;
    let mut checks = 0usize;
    // The first failed and first errored checks, and how many of each: only the first is
    // written out in the reason.
    let mut failed = Counted::default();
    let mut errors = Counted::default();
    for (check, outcome) in graded {
        checks += 1;
        total += check.weight;
        let credit = match outcome.score {
            Some(s) => s.clamp(0.0, 1.0),
            None if outcome.passed() => 1.0,
            None => 0.0,
        };
        earned += check.weight * credit;
        match outcome.status {
            CheckStatus::Passed => {}
            CheckStatus::Failed => failed.add(check, outcome),
            CheckStatus::Error => errors.add(check, outcome),
        }
    }
    if checks == 0 {
        return CaseOutcome {
            status: CheckStatus::Error,
            score: 0.0,
            reason: Some("the case has no check".to_owned()),
        };
    }
    let score = if total > 0.0 { earned / total } else { 0.0 };
    if errors.count > 0 {
        return CaseOutcome {
            status: CheckStatus::Error,
            score,
            reason: Some(errors.first_and_more("in error")),
        };
    }
    let passed = match rule {
        PassRule::All => failed.count == 0,
        // A hair of slack for sums of weights such as 0.1 + 0.2.
        PassRule::Threshold(t) => score + 1e-9 >= t,
    };
    let reason = match rule {
        _ if passed => None,
        PassRule::All => Some(failed.first_and_more("failed")),
        PassRule::Threshold(t) if failed.count == 0 => {
            Some(format!("weighted score {score:.2} is below {t}"))
        }
        PassRule::Threshold(t) => Some(format!(
            "weighted score {score:.2} is below {t}; {}",
            failed.first_and_more("failed")
        )),
    };
    CaseOutcome {
        status: if passed {
            CheckStatus::Passed
        } else {
            CheckStatus::Failed
        },
        score,
        reason,
    }
}

/// The first of some checks (a check and its outcome) and how many there are.
#[derive(Default)]
struct Counted<'a> {
    first: Option<(&'a Check, &'a CheckOutcome)>,
    count: usize,
}

impl<'a> Counted<'a> {
    /// Counts one more check.
    fn add(&mut self, check: &'a Check, outcome: &'a CheckOutcome) {
        self.first.get_or_insert((check, outcome));
        self.count += 1;
    }

    /// `contains: expected … (and 2 more checks failed)`.
    fn first_and_more(&self, what: &str) -> String {
        let Some((check, outcome)) = self.first else {
            return String::new();
        };
        let method = check.method.name();
        let reason = outcome.reason.as_deref().unwrap_or("no reason given");
        let mut said = String::with_capacity(method.len() + reason.len() + 40);
        said.push_str(method);
        said.push_str(": ");
        said.push_str(reason);
        match self.count - 1 {
            0 => {}
            1 => {
                said.push_str(" (and 1 more check ");
                said.push_str(what);
                said.push(')');
            }
            rest => {
                let _ = write!(said, " (and {rest} more checks {what})");
            }
        }
        said
    }
}
