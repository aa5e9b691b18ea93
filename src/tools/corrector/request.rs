//! One model request of a correction, retried at most once in the whole correction;
//! [`Attempts`] keeps what the correction has spent of that retry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Inner;
use crate::engine::model::ModelRequest;
use crate::protocol::content::Content;
use crate::providers::{generate_json_once, ModelError};

impl Inner {
    /// One model request, retried once in the whole correction when it fails in a way
    /// worth retrying (server error, network); a second such failure marks the model
    /// unreachable for the rest of this correction.
    pub(super) async fn ask_uncached(
        &self,
        system: &str,
        prompt: String,
        schema: Value,
        cancel: &CancellationToken,
        attempts: &Attempts,
    ) -> Result<Value, String> {
        let mut request =
            ModelRequest::new(self.model_name.clone(), vec![Content::user_text(prompt)]);
        request.system_instruction = Some(system.to_string());
        request.json_schema = Some(schema);
        request.temperature = Some(0.0);
        loop {
            let call = generate_json_once(&*self.model, request.clone());
            let result = tokio::select! {
                r = call => r,
                _ = cancel.cancelled() => return Err("cancelled".into()),
            };
            match result {
                Ok(value) => return Ok(value),
                Err(e) if retryable(&e) && attempts.take_retry() => {
                    tracing::warn!(error = %e, "correction request failed; retrying once");
                    let pause = e.retry_after().unwrap_or(RETRY_PAUSE).min(MAX_RETRY_PAUSE);
                    tokio::time::sleep(pause).await;
                }
                Err(e) => {
                    if retryable(&e) {
                        attempts.unreachable.store(true, Ordering::Relaxed);
                    }
                    return Err(e.to_string());
                }
            }
        }
    }
}

/// Pause before the one retry (a server's `Retry-After` wins, up to the maximum; the
/// correction's total budget bounds it anyway).
const RETRY_PAUSE: Duration = Duration::from_millis(500);
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(5);

fn retryable(error: &ModelError) -> bool {
    error.is_retryable()
}

/// What one correction has spent of its single retry.
#[derive(Debug, Default)]
pub(super) struct Attempts {
    retry_used: AtomicBool,
    /// A request failed again after the retry: no further requests for this edit.
    unreachable: AtomicBool,
}

impl Attempts {
    /// Takes the one retry; false when it was already used.
    fn take_retry(&self) -> bool {
        !self.retry_used.swap(true, Ordering::Relaxed)
    }

    pub(super) fn model_unreachable(&self) -> bool {
        self.unreachable.load(Ordering::Relaxed)
    }
}
