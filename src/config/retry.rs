//! The retry policy: exponential backoff with jitter (backon), honouring `Retry-After`,
//! bounded in attempts. [`crate::dispatch`] applies it; the provider adapters never retry.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use serde::Deserialize;

/// How often and how patiently a failed call is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Delay before the second attempt; doubled each time, with jitter.
    #[serde(with = "millis")]
    pub base_delay: Duration,
    /// No single wait is longer than this, whatever `Retry-After` says.
    #[serde(with = "millis")]
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

impl RetryPolicy {
    /// The backoff delays of this policy, one per retry (exponential, with jitter).
    pub(crate) fn backoff(&self) -> impl Iterator<Item = Duration> + use<> {
        ExponentialBuilder::default()
            .with_min_delay(self.base_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(usize::MAX)
            .with_jitter()
            .build()
    }
}
