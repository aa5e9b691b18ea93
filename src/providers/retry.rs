//! Retries: exponential backoff with jitter, honouring the delay a server asks for,
//! with bounded attempts. The Chat actor drives retries of the streamed main chat
//! itself (it must tell the front ends to discard partial output); [`RetryingModel`]
//! retries utility calls (`generate`) for everyone else.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::{ModelClient, ModelError, ModelStream, ServerFacts};
use crate::engine::model::{ModelEvent, ModelRequest};
use crate::settings::RetrySettings;

/// How often and how patiently to retry.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all for a request that fails before any output arrives.
    pub max_attempts: u32,
    /// Attempts in all when a stream breaks after output began, or is invalid.
    pub max_stream_attempts: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 10,
            max_stream_attempts: 4,
            initial_delay: Duration::from_millis(5000),
            max_delay: Duration::from_millis(30000),
        }
    }
}

impl From<&RetrySettings> for RetryPolicy {
    fn from(s: &RetrySettings) -> Self {
        Self {
            max_attempts: s.max_attempts.max(1),
            max_stream_attempts: s.max_stream_attempts.max(1),
            initial_delay: Duration::from_millis(s.initial_delay_ms),
            max_delay: Duration::from_millis(s.max_delay_ms.max(s.initial_delay_ms)),
        }
    }
}

/// Attempts in all for a refused connection: nothing listens there, so waiting long
/// does not help; a server that is just starting gets a moment.
pub const REFUSED_ATTEMPTS: u32 = 3;

/// The longest wait between two attempts at a refused connection.
pub const REFUSED_DELAY: Duration = Duration::from_millis(1000);

/// A server asking to wait longer than this (a daily quota, say) is not waited for.
pub const LONGEST_SERVER_DELAY: Duration = Duration::from_secs(300);

impl RetryPolicy {
    /// Attempts in all for `error`: a refused connection gets [`REFUSED_ATTEMPTS`].
    pub fn attempts_for(&self, error: &ModelError) -> u32 {
        if error.is_refused() {
            self.max_attempts.min(REFUSED_ATTEMPTS)
        } else {
            self.max_attempts
        }
    }

    /// Is `error` worth another attempt at all? Retryable, and the server does not ask
    /// for a wait longer than [`LONGEST_SERVER_DELAY`].
    pub fn should_retry(error: &ModelError) -> bool {
        error.is_retryable()
            && error
                .retry_after()
                .is_none_or(|asked| asked <= LONGEST_SERVER_DELAY)
    }

    /// The wait before retry number `retry` (1 for the first retry): the initial delay
    /// doubled each time, ±30 % jitter, never above the maximum (jitter included);
    /// never less than what the server asked for (plus up to 20 %). A refused
    /// connection waits at most [`REFUSED_DELAY`].
    pub fn delay(&self, retry: u32, error: &ModelError) -> Duration {
        let doubling = 2u32.saturating_pow(retry.saturating_sub(1));
        let base = self
            .initial_delay
            .saturating_mul(doubling)
            .min(self.max_delay);
        let jittered = base
            .mul_f64(0.7 + 0.6 * fastrand::f64())
            .min(self.max_delay);
        if error.is_refused() {
            return jittered.min(REFUSED_DELAY);
        }
        match error.retry_after() {
            Some(asked) => jittered.max(asked.mul_f64(1.0 + 0.2 * fastrand::f64())),
            None => jittered,
        }
    }

    /// What the user is told about a retry.
    pub fn describe(error: &ModelError, delay: Duration) -> String {
        let asked = error
            .retry_after()
            .map(|d| format!(" (the server asked to wait {})", seconds(d)))
            .unwrap_or_default();
        format!("{error}; retrying in {}{asked}", seconds(delay))
    }
}

fn seconds(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}s")
    } else {
        format!("{secs:.2}s")
    }
}

/// A model whose utility calls are retried under a policy; streams pass through.
pub struct RetryingModel {
    inner: Arc<dyn ModelClient>,
    policy: RetryPolicy,
}

impl RetryingModel {
    pub fn new(inner: Arc<dyn ModelClient>, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }
}

impl ModelClient for RetryingModel {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn default_model(&self) -> BoxFuture<'static, Result<String, ModelError>> {
        self.inner.default_model()
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        self.inner.list_models()
    }

    fn discover(&self, model: &str) -> BoxFuture<'static, Result<ServerFacts, ModelError>> {
        self.inner.discover(model)
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        self.inner.stream(request)
    }

    fn generate(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        let inner = self.inner.clone();
        let policy = self.policy.clone();
        Box::pin(async move {
            let mut attempt = 1;
            loop {
                match inner.generate(request.clone()).await {
                    Err(e)
                        if RetryPolicy::should_retry(&e) && attempt < policy.attempts_for(&e) =>
                    {
                        let delay = policy.delay(attempt, &e);
                        tracing::warn!(error = %e, attempt, ?delay, "utility call failed; retrying");
                        tokio::time::sleep(delay).await;
                        attempt += 1;
                    }
                    other => return other,
                }
            }
        })
    }

    fn generate_once(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        self.inner.generate_once(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> ModelError {
        ModelError::Http {
            provider: "p".into(),
            status,
            message: "m".into(),
            retry_after,
        }
    }

    #[test]
    fn delays_grow_with_jitter_and_honour_the_server() {
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        for _ in 0..50 {
            let first = policy.delay(1, &http(500, None));
            assert!(first >= Duration::from_millis(70) && first <= Duration::from_millis(130));
            let third = policy.delay(3, &http(500, None));
            assert!(third >= Duration::from_millis(245) && third <= Duration::from_millis(350));
            let refused = ModelError::Refused {
                provider: "p".into(),
                address: "127.0.0.1:1".into(),
            };
            let slow = RetryPolicy::default();
            assert!(slow.delay(5, &refused) <= REFUSED_DELAY);
            assert_eq!(slow.attempts_for(&refused), REFUSED_ATTEMPTS);
            let asked = policy.delay(1, &http(429, Some(Duration::from_secs(2))));
            assert!(asked >= Duration::from_secs(2) && asked <= Duration::from_millis(2400));
        }
    }

    #[test]
    fn jitter_never_passes_the_maximum() {
        let policy = RetryPolicy::default();
        for retry in 1..12 {
            for _ in 0..200 {
                assert!(policy.delay(retry, &http(503, None)) <= policy.max_delay);
            }
        }
    }

    #[test]
    fn what_is_retried() {
        assert!(http(429, None).is_retryable());
        assert!(http(499, None).is_retryable());
        assert!(http(503, None).is_retryable());
        assert!(!http(400, None).is_retryable());
        assert!(!http(404, None).is_retryable());
        let blocked = ModelError::InvalidStream {
            provider: "p".into(),
            kind: "SAFETY_BLOCKED".into(),
            message: "m".into(),
        };
        assert!(!blocked.is_retryable());
        assert!(RetryPolicy::should_retry(&http(
            429,
            Some(Duration::from_secs(60))
        )));
        assert!(!RetryPolicy::should_retry(&http(
            429,
            Some(Duration::from_secs(3600))
        )));
    }

    #[test]
    fn the_user_is_told_what_the_server_asked() {
        let text = RetryPolicy::describe(
            &http(429, Some(Duration::from_secs(1))),
            Duration::from_millis(1100),
        );
        assert_eq!(
            text,
            "p answered HTTP 429: m; retrying in 1.10s (the server asked to wait 1s)"
        );
    }
}
