//! One model call of a turn, with retries: the stream is read to its end (text,
//! thoughts and usage forwarded as they come), checked (§9.3), and on a retryable
//! failure sent again after a backoff. Before a retry the front ends get
//! [`UiEvent::Retry`] so they can drop the partial output of the failed attempt.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use actix::prelude::*;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::engine::history::TurnAssembler;
use crate::engine::model::{ModelEvent, ModelRequest};
use crate::protocol::UiEvent;
use crate::providers::retry::RetryPolicy;
use crate::providers::{ModelClient, ModelError, ModelStream};

/// A model call that failed for good.
#[derive(Debug)]
pub struct CallFailure {
    pub error: ModelError,
    pub attempts: u32,
}

impl CallFailure {
    /// What the user reads: the last error, and how many attempts were made.
    pub fn message(&self) -> String {
        if self.attempts > 1 {
            format!("{} (gave up after {} attempts)", self.error, self.attempts)
        } else {
            self.error.to_string()
        }
    }
}

/// Everything a model call needs, owned, so it can run as a spawned future.
pub struct ModelCall {
    pub model: Arc<dyn ModelClient>,
    pub request: ModelRequest,
    pub policy: RetryPolicy,
    /// The request answers function responses (an empty answer is then allowed).
    pub after_function_response: bool,
    pub events: Recipient<UiEvent>,
    pub cancel: CancellationToken,
    pub request_log: Option<PathBuf>,
}

impl ModelCall {
    /// Runs the call to a checked model turn, retrying under the policy.
    pub async fn run(self) -> Result<TurnAssembler, CallFailure> {
        let provider = self.model.provider().to_string();
        let (mut connect_failures, mut stream_failures) = (0u32, 0u32);
        loop {
            let attempts = connect_failures + stream_failures + 1;
            if let Some(path) = &self.request_log {
                log_request(path, &self.request).await;
            }
            let mut received = false;
            let stream = self.model.stream(self.request.clone());
            let result = consume(stream, &self.events, &self.cancel, &mut received)
                .await
                .and_then(|assembled| {
                    assembled
                        .check(self.after_function_response)
                        .map(|()| assembled)
                        .map_err(|(kind, message)| ModelError::InvalidStream {
                            provider: provider.clone(),
                            kind,
                            message,
                        })
                });
            let error = match result {
                Ok(assembled) => return Ok(assembled),
                Err(error) => error,
            };
            if !RetryPolicy::should_retry(&error) {
                return Err(CallFailure { error, attempts });
            }
            let mid_stream = received || matches!(error, ModelError::InvalidStream { .. });
            let (failures, limit) = if mid_stream {
                stream_failures += 1;
                (stream_failures, self.policy.max_stream_attempts)
            } else {
                connect_failures += 1;
                (connect_failures, self.policy.max_attempts)
            };
            if failures >= limit {
                return Err(CallFailure { error, attempts });
            }
            let delay = self.policy.delay(failures, &error);
            let reason = RetryPolicy::describe(&error, delay);
            tracing::warn!(%reason, attempt = attempts, "model call failed; retrying");
            self.events.do_send(UiEvent::Retry {
                attempt: attempts + 1,
                reason,
            });
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    return Err(CallFailure { error: ModelError::Cancelled, attempts });
                }
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }
}

/// Reads a model stream to its end, forwarding text, thoughts and usage as they come.
/// `received` tells whether any event arrived (a failure after that is mid-stream).
async fn consume(
    mut stream: ModelStream,
    events: &Recipient<UiEvent>,
    cancel: &CancellationToken,
    received: &mut bool,
) -> Result<TurnAssembler, ModelError> {
    let mut assembler = TurnAssembler::default();
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            item = stream.next() => item,
        };
        let Some(item) = item else { break };
        let event = item?;
        *received = true;
        match &event {
            ModelEvent::Text(t) => events.do_send(UiEvent::TextDelta(t.clone())),
            ModelEvent::Thought(t) => events.do_send(UiEvent::Thought(t.clone())),
            ModelEvent::Usage(u) => events.do_send(UiEvent::Usage(*u)),
            _ => {}
        }
        assembler.push(&event);
    }
    Ok(assembler)
}

/// Appends a request body (Gemini JSON) to the request log.
pub async fn log_request(path: &Path, request: &ModelRequest) {
    let line = format!("{}\n", request.gemini_body());
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await;
    match file {
        Ok(mut f) => {
            // tokio writes in the background: flush so the line is there when we go on.
            if let Err(e) = async {
                f.write_all(line.as_bytes()).await?;
                f.flush().await
            }
            .await
            {
                tracing::warn!(error = %e, "cannot log request");
            }
        }
        Err(e) => tracing::warn!(error = %e, path = %path.display(), "cannot open request log"),
    }
}
