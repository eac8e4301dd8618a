//! The retry policy: exponential backoff with jitter (backon), honouring `Retry-After`,
//! bounded in attempts. It lives with the caller, not in the provider adapters.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use serde::Deserialize;

use super::ProviderError;

/// Attempts at most when the server cannot be reached at all.
const CONNECT_ATTEMPTS: u32 = 2;

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

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

impl RetryPolicy {
    /// Runs `attempt` until it succeeds, fails with an error that is not retryable, or the
    /// attempts run out, and returns the last result and how many attempts were made; or
    /// gives up (`None`) when `stop` is set before an attempt after the first: a run that was
    /// asked to stop sends nothing new, retries included.
    pub async fn run_until<T, F, Fut>(
        &self,
        stop: &AtomicBool,
        mut attempt: F,
    ) -> Option<(Result<T, ProviderError>, u32)>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let mut delays = ExponentialBuilder::default()
            .with_min_delay(self.base_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_attempts.saturating_sub(1) as usize)
            .with_jitter()
            .build();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let result = attempt().await;
            let error = match result {
                Ok(value) => return Some((Ok(value), attempts)),
                Err(e) if !e.is_retryable() => return Some((Err(e), attempts)),
                // A server that refuses connections is usually not running: one more try
                // covers a restart, more would only make the user wait.
                Err(e @ ProviderError::Connect { .. }) if attempts >= CONNECT_ATTEMPTS => {
                    return Some((Err(e), attempts));
                }
                Err(e) => e,
            };
            let Some(backoff) = delays.next() else {
                return Some((Err(error), attempts));
            };
            let wait = error
                .retry_after()
                .map_or(backoff, |asked| asked.max(backoff));
            let wait = wait.min(self.max_delay);
            tracing::debug!(attempt = attempts, ?wait, %error, "retrying");
            tokio::time::sleep(wait).await;
            if stop.load(Ordering::SeqCst) {
                tracing::debug!(attempt = attempts, "stopping: no retry");
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn http(status: u16) -> ProviderError {
        ProviderError::Http {
            provider: "p".into(),
            status,
            retry_after: None,
            message: "m".into(),
            limits: None,
        }
    }

    impl RetryPolicy {
        /// `run_until` that is never stopped.
        async fn run<T, F, Fut>(&self, attempt: F) -> (Result<T, ProviderError>, u32)
        where
            F: FnMut() -> Fut,
            Fut: Future<Output = Result<T, ProviderError>>,
        {
            let never = AtomicBool::new(false);
            self.run_until(&never, attempt)
                .await
                .expect("never stopped")
        }
    }

    #[tokio::test]
    async fn a_stop_ends_the_retries() {
        let stop = AtomicBool::new(false);
        let calls = Cell::new(0);
        let result = fast(5)
            .run_until(&stop, || {
                calls.set(calls.get() + 1);
                stop.store(true, Ordering::SeqCst);
                async { Err::<(), _>(http(503)) }
            })
            .await;
        assert!(result.is_none(), "stopped before the retry");
        assert_eq!(calls.get(), 1);
    }

    fn fast(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        }
    }

    #[tokio::test]
    async fn retries_retryable_errors_until_success() {
        let calls = Cell::new(0);
        let (result, attempts) = fast(5)
            .run(|| {
                calls.set(calls.get() + 1);
                let n = calls.get();
                async move { if n < 3 { Err(http(429)) } else { Ok(n) } }
            })
            .await;
        assert_eq!((result.unwrap(), attempts), (3, 3));
    }

    #[tokio::test]
    async fn gives_up_after_max_attempts_and_on_client_errors() {
        let (result, attempts) = fast(3).run(|| async { Err::<(), _>(http(503)) }).await;
        assert!(result.is_err());
        assert_eq!(attempts, 3);
        let (result, attempts) = fast(3).run(|| async { Err::<(), _>(http(400)) }).await;
        assert!(result.is_err());
        assert_eq!(attempts, 1);
    }

    #[tokio::test]
    async fn an_unreachable_server_is_tried_twice_only() {
        let (result, attempts) = fast(6)
            .run(|| async {
                Err::<(), _>(ProviderError::Connect {
                    provider: "ollama".into(),
                    url: "http://127.0.0.1:1/api/chat".into(),
                    detail: "Connection refused".into(),
                })
            })
            .await;
        assert!(result.is_err());
        assert_eq!(attempts, 2);
    }

    #[tokio::test]
    async fn honours_retry_after_up_to_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(80),
        };
        let started = std::time::Instant::now();
        let first = Cell::new(true);
        let (result, _) = policy
            .run(|| {
                let fail = first.replace(false);
                async move {
                    if fail {
                        Err(ProviderError::Http {
                            provider: "p".into(),
                            status: 429,
                            retry_after: Some(Duration::from_secs(3600)),
                            message: "slow down".into(),
                            limits: None,
                        })
                    } else {
                        Ok(())
                    }
                }
            })
            .await;
        assert!(result.is_ok());
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(80), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    }
}
