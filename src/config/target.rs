//! What config.yaml says of a target (the user's own application, `kind: http` or `kind: exec`)
//! besides how to reach it ([`crate::targets`]): how its failed calls are tried again, and the
//! most one call can cost.

use std::sync::Arc;

use super::RetryPolicy;
use crate::targets::TargetSpec;

/// A target as config.yaml sets it up.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetConfig {
    /// How it is reached and read.
    pub spec: Arc<TargetSpec>,
    /// How its failed calls are tried again (`retry:`); `None`: the run's for HTTP, one
    /// attempt for a command (a crash usually crashes again).
    pub retry: Option<RetryPolicy>,
    /// The most one call can cost (`max_cost_usd:`): what a budget reserves for it.
    pub max_cost_usd: Option<f64>,
}

impl TargetConfig {
    /// The retry policy of its calls, given the run's.
    pub fn retry_policy(&self, run: RetryPolicy) -> RetryPolicy {
        match self.retry {
            Some(own) => own,
            None if self.spec.is_command() => RetryPolicy {
                max_attempts: 1,
                ..run
            },
            None => run,
        }
    }
}
