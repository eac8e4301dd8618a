//! Retries under the run's [`RetryPolicy`], one way for every step that reaches a provider:
//! a live call's attempts, a batch's upload, create, polls and result downloads. A step is
//! tried again while its error may pass and attempts remain, after the policy's backoff or
//! what the provider asked for (`Retry-After`), whichever is longer, never more than the
//! policy's `max_delay`.

use std::time::Duration;

use crate::config::RetryPolicy;
use crate::llm::ProviderError;
use crate::llm::batch::BatchError;

/// An error a step may meet: whether trying again may help, and how long the provider asked
/// to wait.
pub trait Retryable {
    /// Whether the same request may succeed later.
    fn is_retryable(&self) -> bool;
    /// How long the provider asked to wait (`Retry-After`), if it did.
    fn retry_after(&self) -> Option<Duration>;
}

impl Retryable for ProviderError {
    fn is_retryable(&self) -> bool {
        ProviderError::is_retryable(self)
    }

    fn retry_after(&self) -> Option<Duration> {
        ProviderError::retry_after(self)
    }
}

impl Retryable for BatchError {
    fn is_retryable(&self) -> bool {
        BatchError::is_retryable(self)
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            BatchError::Provider(error) => error.retry_after(),
            _ => None,
        }
    }
}

/// The retries of one step: the failures counted so far and the backoff still to come.
pub struct Retries {
    policy: RetryPolicy,
    backoff: Box<dyn Iterator<Item = Duration> + Send>,
    failures: u32,
}

impl Retries {
    /// No failure yet.
    pub fn new(policy: RetryPolicy) -> Self {
        Self {
            policy,
            backoff: Box::new(policy.backoff()),
            failures: 0,
        }
    }

    /// Counts a failed attempt: the wait before the next one, or `None` when `error` is final
    /// or the policy's attempts are spent.
    pub fn after_failure(&mut self, error: &impl Retryable) -> Option<Duration> {
        self.failures += 1;
        (error.is_retryable() && self.failures < self.policy.max_attempts).then(|| self.wait(error))
    }

    /// The wait before trying again after `error`, without counting it (a caller with
    /// allowances of its own: a live call's rate-limit refusals, connection failures).
    pub fn wait(&mut self, error: &impl Retryable) -> Duration {
        let next = self.backoff.next().unwrap_or(self.policy.max_delay);
        error
            .retry_after()
            .map_or(next, |asked| asked.max(next))
            .min(self.policy.max_delay)
    }
}

/// Runs `step` until it succeeds, meets an error that is final, or has used the policy's
/// attempts, waiting between tries as [`Retries`] says.
pub async fn retrying<T, E, F, Fut>(policy: RetryPolicy, what: &str, step: F) -> Result<T, E>
where
    E: Retryable + std::fmt::Display,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut retries = Retries::new(policy);
    loop {
        let error = match step().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let Some(wait) = retries.after_failure(&error) else {
            return Err(error);
        };
        tracing::debug!(attempt = retries.failures, ?wait, %error, "{what} failed; trying again");
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

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

    fn policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(8),
        }
    }

    #[test]
    fn backoff_grows_and_retry_after_is_honoured_up_to_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 6,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(800),
        };
        let mut retries = Retries::new(policy);
        let waits: Vec<Duration> = (0..6).map(|_| retries.wait(&http(503, None))).collect();
        assert!(waits[0] >= Duration::from_millis(100), "{waits:?}");
        assert!(waits[3] > waits[0], "{waits:?}");
        assert!(waits.iter().all(|w| *w <= policy.max_delay), "{waits:?}");
        let asked = http(503, Some(Duration::from_secs(3600)));
        assert_eq!(Retries::new(policy).wait(&asked), policy.max_delay);
        let short = http(503, Some(Duration::from_millis(1)));
        assert!(Retries::new(policy).wait(&short) >= policy.base_delay);
    }

    #[test]
    fn a_final_error_or_spent_attempts_end_the_retries() {
        let mut retries = Retries::new(policy(3));
        assert!(
            retries.after_failure(&http(400, None)).is_none(),
            "400 is final"
        );
        let mut retries = Retries::new(policy(3));
        assert!(retries.after_failure(&http(503, None)).is_some());
        assert!(retries.after_failure(&http(503, None)).is_some());
        assert!(
            retries.after_failure(&http(503, None)).is_none(),
            "3 attempts in all"
        );
    }

    #[tokio::test]
    async fn a_step_is_tried_until_it_succeeds_within_the_attempts() {
        let tries = AtomicU32::new(0);
        let step = || async {
            match tries.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(http(503, None)),
                _ => Ok("done"),
            }
        };
        assert_eq!(retrying(policy(3), "a step", step).await.unwrap(), "done");
        assert_eq!(tries.load(Ordering::SeqCst), 3);
        let tries = AtomicU32::new(0);
        let failing = || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(http(503, None))
        };
        assert!(retrying(policy(2), "a step", failing).await.is_err());
        assert_eq!(tries.load(Ordering::SeqCst), 2, "gave up after 2 attempts");
    }
}
