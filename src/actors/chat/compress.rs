//! The Chat actor's history compression: when the last prompt passed the threshold
//! (or `/compress` forces it), older history up to the split point is summarised by
//! the model into a state snapshot that replaces it. A summary that is empty, or that
//! would make the history larger, is discarded and the history stays as it was.

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

use super::Chat;
use crate::engine::compression::{
    compressed_history, estimate_tokens, find_split_point, judge, summary_request,
    truncate_function_responses, Verdict, COMPRESSION_SYSTEM_PROMPT,
    FUNCTION_RESPONSE_TOKEN_BUDGET,
};
use crate::engine::context_budget;
use crate::engine::history::curated;
use crate::engine::model::{ModelEvent, ModelRequest};
use crate::protocol::content::Content;
use crate::protocol::{CompressionOutcome, SessionEvent, UiEvent};
use crate::providers::ModelError;

/// A compression under way: the history it started from and where it splits.
struct Plan {
    original: Vec<Content>,
    shortened: Vec<Content>,
    split: usize,
}

impl Chat {
    /// Did the history (the last prompt less the fixed prefix) pass the threshold?
    pub(super) fn compression_due(&self) -> bool {
        let tuning = &self.config.tuning;
        !self.compression_failed
            && context_budget::compression_due(
                self.last_prompt_tokens,
                self.prefix_tokens(),
                tuning.context_window,
                tuning.compress_threshold,
            )
    }

    /// Tokens of the system prompt and tool declarations sent with every request.
    pub(super) fn prefix_tokens(&self) -> u64 {
        self.sizes
            .borrow_mut()
            .prefix_tokens(self.config.system_prompt.as_deref(), &self.config.tools)
    }

    fn plan_compression(&self, force: bool) -> Result<Plan, CompressionOutcome> {
        let original = curated(&self.history);
        if original.is_empty() {
            return Err(CompressionOutcome::Noop {
                reason: "the history is empty".into(),
            });
        }
        let mut shortened = original.clone();
        truncate_function_responses(&mut shortened, FUNCTION_RESPONSE_TOKEN_BUDGET);
        let fraction = 1.0 - self.config.tuning.preserve_fraction;
        let split =
            find_split_point(&shortened, fraction).map_err(|e| CompressionOutcome::Failed {
                reason: e.to_string(),
            })?;
        if split == 0 {
            return Err(CompressionOutcome::Noop {
                reason: "nothing old enough to compress".into(),
            });
        }
        if !force
            && !context_budget::worth_compressing(
                &shortened[..split],
                self.config.tuning.context_window,
            )
        {
            return Err(CompressionOutcome::Noop {
                reason: "the old history is too small to be worth summarising".into(),
            });
        }
        Ok(Plan {
            original,
            shortened,
            split,
        })
    }

    /// Compresses now (`force`) or only when due. While it runs, new input is refused.
    pub(super) fn compress(
        &mut self,
        force: bool,
        cancel: CancellationToken,
    ) -> ResponseActFuture<Self, CompressionOutcome> {
        if !force && !self.compression_due() {
            let reason = if self.compression_failed {
                "an earlier compression failed; /compress forces one"
            } else {
                "the last prompt is below the compression threshold"
            };
            return Box::pin(fut::ready(CompressionOutcome::Noop {
                reason: reason.into(),
            }));
        }
        let plan = match self.plan_compression(force) {
            Ok(plan) => plan,
            Err(outcome) => return Box::pin(fut::ready(outcome)),
        };
        let mut request = ModelRequest::new(
            self.config.model_name.clone(),
            summary_request(&plan.shortened[..plan.split]),
        );
        request.system_instruction = Some(COMPRESSION_SYSTEM_PROMPT.to_string());
        let model = self.config.model.clone();
        self.compressing = true;
        let hooks = self.config.hooks.clone();
        let call = async move {
            super::hooks::pre_compress(&hooks, force).await;
            tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(ModelError::Cancelled),
                result = model.generate(request) => result,
            }
        };
        Box::pin(
            call.into_actor(self)
                .map(move |result, act, _| act.finish_compression(plan, result, force)),
        )
    }

    fn finish_compression(
        &mut self,
        plan: Plan,
        result: Result<Vec<ModelEvent>, ModelError>,
        forced: bool,
    ) -> CompressionOutcome {
        self.compressing = false;
        let events = match result {
            Ok(events) => events,
            Err(ModelError::Cancelled) => {
                return CompressionOutcome::Noop {
                    reason: "cancelled".into(),
                }
            }
            Err(e) => {
                self.compression_failed = true;
                return CompressionOutcome::Failed {
                    reason: format!("the summary call failed: {e}"),
                };
            }
        };
        let summary: String = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let summary = summary.trim();
        let new_history = compressed_history(summary, &plan.shortened[plan.split..]);
        match judge(&plan.original, &new_history, summary) {
            Verdict::Keep {
                tokens_before,
                tokens_after,
            } => {
                self.set_history(new_history);
                self.record(SessionEvent::Replaced(self.history.clone()));
                self.compression_failed = false;
                self.last_prompt_tokens = estimate_tokens(&self.history);
                // A forced compression is reported by whoever asked for it.
                if !forced {
                    self.emit(UiEvent::Notice(format!(
                        "Chat history compressed from {tokens_before} to {tokens_after} tokens."
                    )));
                }
                CompressionOutcome::Compressed {
                    tokens_before,
                    tokens_after,
                }
            }
            Verdict::Empty => {
                self.compression_failed = true;
                CompressionOutcome::Failed {
                    reason: "the model returned an empty summary; the history is unchanged".into(),
                }
            }
            Verdict::Inflated {
                tokens_before,
                tokens_after,
            } => {
                self.compression_failed = true;
                CompressionOutcome::Failed {
                    reason: format!(
                        "the summary would grow the history from {tokens_before} to {tokens_after} tokens; the history is unchanged"
                    ),
                }
            }
        }
    }
}
