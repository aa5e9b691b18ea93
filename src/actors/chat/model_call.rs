//! One model call of a turn, with retries: the stream is read to its end (text,
//! thoughts and usage forwarded as they come), checked (§9.3), and on a retryable
//! failure sent again after a backoff. Before a retry the front ends get
//! [`UiEvent::Retry`] so they can drop the partial output of the failed attempt.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::engine::history::TurnAssembler;
use crate::engine::loop_detection::{LoopDetector, LoopKind};
use crate::engine::model::{ModelEvent, ModelRequest};
use crate::protocol::EventSink;
use crate::protocol::{UiEvent, WaitingFor};
use crate::providers::retry::RetryPolicy;
use crate::providers::{ModelClient, ModelError, ModelStream};

/// A model call that failed for good.
#[derive(Debug)]
pub struct CallFailure {
    pub error: ModelError,
    pub attempts: u32,
}

impl CallFailure {
    /// What the user reads: the last error, how many attempts were made, and what
    /// setting to fix when the error is one of configuration.
    pub fn message(&self) -> String {
        let mut text = if self.attempts > 1 {
            format!("{} (gave up after {} attempts)", self.error, self.attempts)
        } else {
            self.error.to_string()
        };
        if let Some(hint) = self.error.hint() {
            text.push_str(" — ");
            text.push_str(hint);
        }
        text
    }
}

/// Everything a model call needs, owned, so it can run as a spawned future.
pub struct ModelCall {
    pub model: Arc<dyn ModelClient>,
    pub request: ModelRequest,
    pub policy: RetryPolicy,
    /// The request answers function responses (an empty answer is then allowed).
    pub after_function_response: bool,
    pub events: EventSink,
    pub cancel: CancellationToken,
    pub request_log: Option<PathBuf>,
    /// Stop the stream when its text starts repeating itself.
    pub loop_check: bool,
    /// The bytes of answer streamed so far in the current attempt (what a turn cut by
    /// its time limit had).
    pub streamed: Arc<std::sync::atomic::AtomicU64>,
}

impl ModelCall {
    /// Runs the call to a checked model turn, retrying under the policy. A stream whose
    /// text loops is stopped and returned with the loop it made.
    pub async fn run(self) -> Result<(TurnAssembler, Option<LoopKind>), CallFailure> {
        let provider = self.model.provider().to_string();
        let (mut connect_failures, mut stream_failures) = (0u32, 0u32);
        loop {
            let attempts = connect_failures + stream_failures + 1;
            if let Some(path) = &self.request_log {
                log_request(path, &self.request).await;
            }
            let mut received = false;
            let mut loops = self.loop_check.then(LoopDetector::default);
            let stream = self.model.stream(self.request.clone());
            self.streamed.store(0, std::sync::atomic::Ordering::Relaxed);
            let result = consume(
                stream,
                &self.request,
                &self.events,
                &self.cancel,
                &mut received,
                &mut loops,
                &self.streamed,
            )
            .await;
            let result = match result {
                Ok((assembled, Some(kind))) => return Ok((assembled, Some(kind))),
                Ok((assembled, None)) => Ok(assembled),
                Err(e) => Err(e),
            };
            let result = result.and_then(|assembled| {
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
                Ok(assembled) => return Ok((assembled, None)),
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
                (connect_failures, self.policy.attempts_for(&error))
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
            self.events.do_send(UiEvent::Waiting {
                what: WaitingFor::RetryBackoff,
                seconds: 0,
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

/// How often the front ends hear that the model has not started answering yet.
const WAIT_NOTICE: std::time::Duration = std::time::Duration::from_secs(15);

/// How often the front ends hear how much of the answer has come ([`UiEvent::ModelProgress`]).
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads a model stream to its end, forwarding text, thoughts and usage as they come,
/// and the answer's size so far once a second. `received` tells whether any event
/// arrived (a failure after that is mid-stream).
async fn consume(
    mut stream: ModelStream,
    request: &ModelRequest,
    events: &EventSink,
    cancel: &CancellationToken,
    received: &mut bool,
    loops: &mut Option<LoopDetector>,
    streamed: &std::sync::atomic::AtomicU64,
) -> Result<(TurnAssembler, Option<LoopKind>), ModelError> {
    let mut assembler = TurnAssembler::default();
    let started = tokio::time::Instant::now();
    let mut progress = tokio::time::interval_at(started + WAIT_NOTICE, WAIT_NOTICE);
    let mut sizes = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
    sizes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Estimated at the first tick only: a quick answer never pays for it.
    let (mut output_bytes, mut prompt_estimate) = (0u64, None);
    events.do_send(UiEvent::Waiting {
        what: WaitingFor::Model,
        seconds: 0,
    });
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                // What was spent so far, for the run's report (the server will not say).
                events.do_send(UiEvent::ModelProgress {
                    output_bytes,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                    prompt_tokens_estimate: *prompt_estimate
                        .get_or_insert_with(|| estimate_request(request)),
                });
                return Err(ModelError::Cancelled);
            }
            // Before the stream: a model streaming without a pause is still reported.
            _ = sizes.tick() => {
                let prompt = *prompt_estimate.get_or_insert_with(|| estimate_request(request));
                events.do_send(UiEvent::ModelProgress {
                    output_bytes,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                    prompt_tokens_estimate: prompt,
                });
                continue;
            }
            item = stream.next() => item,
            _ = progress.tick(), if !*received => {
                events.do_send(UiEvent::Waiting {
                    what: WaitingFor::Model,
                    seconds: started.elapsed().as_secs(),
                });
                continue;
            }
        };
        let Some(item) = item else { break };
        let event = item?;
        *received = true;
        if let (ModelEvent::Text(t), Some(detector)) = (&event, loops.as_mut()) {
            if let Some(kind) = detector.check_text(t) {
                return Ok((assembler, Some(kind)));
            }
        }
        output_bytes += match &event {
            ModelEvent::Text(t) | ModelEvent::Thought(t) => t.len() as u64,
            ModelEvent::FunctionCall { call, .. } => {
                (call.name.len() + crate::engine::compression::json_len_of(&call.args)) as u64
            }
            _ => 0,
        };
        streamed.store(output_bytes, std::sync::atomic::Ordering::Relaxed);
        match &event {
            ModelEvent::Text(t) => events.do_send(UiEvent::TextDelta(t.clone())),
            ModelEvent::Thought(t) => events.do_send(UiEvent::Thought(t.clone())),
            ModelEvent::Usage(u) => events.do_send(UiEvent::Usage(*u)),
            _ => {}
        }
        assembler.push_owned(event);
    }
    Ok((assembler, None))
}

/// The prompt tokens of `request`, estimated: its system prompt, tool declarations and
/// contents at four characters a token.
fn estimate_request(request: &ModelRequest) -> u64 {
    crate::engine::context_budget::prefix_tokens(
        request.system_instruction.as_deref(),
        &request.tools,
    ) + crate::engine::compression::estimate_tokens(&request.contents)
}

/// Appends a request body (Gemini JSON) to the request log.
pub async fn log_request(path: &Path, request: &ModelRequest) {
    // Serialised straight to bytes: a request carrying megabytes of arguments is not
    // copied once more into a formatted line.
    let mut line = serde_json::to_vec(&request.gemini_body()).unwrap_or_default();
    line.push(b'\n');
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await;
    match file {
        Ok(mut f) => {
            // tokio writes in the background: flush so the line is there when we go on.
            if let Err(e) = async {
                f.write_all(&line).await?;
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
