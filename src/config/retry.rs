//! The retry policy: exponential backoff with jitter (backon), honouring `Retry-After`,
//! bounded in attempts. The executor's send loop applies it; the provider adapters never
//! retry.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use serde::Deserialize;

use crate::llm::ProviderError;

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

    /// How long to wait before retrying after `error`: what it asked for (`Retry-After`) or
    /// the next backoff delay, whichever is longer, never more than `max_delay`.
    pub(crate) fn wait(
        &self,
        error: &ProviderError,
        backoff: &mut impl Iterator<Item = Duration>,
    ) -> Duration {
        let next = backoff.next().unwrap_or(self.max_delay);
        error
            .retry_after()
            .map_or(next, |asked| asked.max(next))
            .min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> ProviderError {
        ProviderError::Http {
            provider: "p".into(),
            status,
            retry_after,
            message: "m".into(),
            limits: None,
        }
    }

    #[test]
    fn backoff_grows_and_retry_after_is_honoured_up_to_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 6,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(800),
        };
        let mut backoff = policy.backoff();
        let waits: Vec<Duration> = (0..6)
            .map(|_| policy.wait(&http(503, None), &mut backoff))
            .collect();
        assert!(waits[0] >= Duration::from_millis(100), "{waits:?}");
        assert!(waits[3] > waits[0], "{waits:?}");
        assert!(waits.iter().all(|w| *w <= policy.max_delay), "{waits:?}");
        let asked = http(503, Some(Duration::from_secs(3600)));
        assert_eq!(policy.wait(&asked, &mut policy.backoff()), policy.max_delay);
        let short = http(503, Some(Duration::from_millis(1)));
        assert!(policy.wait(&short, &mut policy.backoff()) >= policy.base_delay);
    }
}
