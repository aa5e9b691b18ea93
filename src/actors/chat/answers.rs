//! The answers to one round of calls, gathered as the Scheduler hands them over (in
//! call order, each as soon as every earlier call is answered). A finished call's
//! response parts move out of it at once and the rest of it (display text, timeline,
//! …) is dropped, so a batch of 100,000 calls never holds its finished calls and their
//! answers at the same time. The parts become one user content, the history's answer
//! to the model turn, when the round is over (gemini-cli's history rule).

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::engine::content::{CallArgs, FunctionCall, Part};
use crate::engine::context_budget::SizeMemo;
use crate::engine::responses::error_parts;
use crate::protocol::{CallStatus, CompletedCall};

/// The answers of one round so far.
pub(super) struct RoundAnswers {
    /// The response parts, in call order.
    parts: Vec<Part>,
    /// How many calls are answered (the first `answered` calls of the round).
    answered: usize,
    all_cancelled: bool,
    /// The finished calls themselves, kept only for the session recorder (it writes
    /// them in one record when the round is over).
    kept: Option<Vec<Arc<CompletedCall>>>,
    /// The responses measured as they came (the next request measures the history,
    /// and this round is most of it).
    sizes: SizeMemo,
}

/// A round's answers, complete: one response per call, in call order.
pub(super) struct Answered {
    pub parts: Vec<Part>,
    pub all_cancelled: bool,
    /// Every finished call, when they were kept for the recorder.
    pub calls: Option<Vec<Arc<CompletedCall>>>,
    pub sizes: SizeMemo,
}

impl RoundAnswers {
    /// Answers for a round of `calls` calls; `keep_calls` keeps the finished calls.
    pub(super) fn new(calls: usize, keep_calls: bool) -> Self {
        Self {
            parts: Vec::with_capacity(calls),
            answered: 0,
            all_cancelled: true,
            kept: keep_calls.then(|| Vec::with_capacity(calls)),
            sizes: SizeMemo::default(),
        }
    }

    /// Takes every answer the Scheduler sends until it closes the channel.
    pub(super) async fn gather(
        mut self,
        mut answers: UnboundedReceiver<Arc<CompletedCall>>,
    ) -> Self {
        while let Some(call) = answers.recv().await {
            self.add(call);
        }
        self
    }

    /// The next call's answer.
    pub(super) fn add(&mut self, call: Arc<CompletedCall>) {
        self.answered += 1;
        self.all_cancelled &= call.status == CallStatus::Cancelled;
        for response in call
            .response_parts
            .iter()
            .filter_map(|p| p.function_response.as_ref())
        {
            self.sizes.response_len(response);
        }
        match &mut self.kept {
            Some(kept) => {
                self.parts.extend(call.response_parts.iter().cloned());
                kept.push(call);
            }
            // The parts move when nothing else holds the call any more (a front end
            // may still have it for a moment; then the parts' shared payloads are
            // cloned, not copied).
            None => match Arc::try_unwrap(call) {
                Ok(call) => self.parts.extend(call.response_parts),
                Err(shared) => self.parts.extend(shared.response_parts.iter().cloned()),
            },
        }
    }

    /// The round's answers; a call the Scheduler did not answer (it stopped) gets an
    /// error response with `failure`, so every call is answered exactly once.
    pub(super) fn finish(mut self, calls: &[Arc<FunctionCall>], failure: &str) -> Answered {
        for call in calls.iter().skip(self.answered) {
            self.add(Arc::new(unanswered(call, failure)));
        }
        Answered {
            parts: self.parts,
            all_cancelled: self.all_cancelled,
            calls: self.kept,
            sizes: self.sizes,
        }
    }
}

/// The answer to a call the Scheduler could not answer.
fn unanswered(call: &Arc<FunctionCall>, message: &str) -> CompletedCall {
    let id = call.id.clone().unwrap_or_default();
    CompletedCall {
        response_parts: error_parts(&call.name, &id, message),
        call_id: id,
        name: call.name.clone(),
        args: CallArgs::of(call.clone()),
        status: CallStatus::Error,
        display: message.to_string(),
        error: None,
        duration: std::time::Duration::ZERO,
        data: None,
        timeline: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::responses::success_parts;
    use crate::protocol::LlmContent;
    use serde_json::json;

    fn call(id: &str) -> Arc<FunctionCall> {
        Arc::new(FunctionCall {
            id: Some(id.into()),
            name: "read_file".into(),
            args: json!({"file_path": id}),
        })
    }

    fn done(call: &Arc<FunctionCall>, status: CallStatus) -> Arc<CompletedCall> {
        let id = call.id.clone().unwrap_or_default();
        Arc::new(CompletedCall {
            response_parts: success_parts(&call.name, &id, LlmContent::Text(id.clone()), "m"),
            call_id: id,
            name: call.name.clone(),
            args: CallArgs::of(call.clone()),
            status,
            display: String::new(),
            error: None,
            duration: std::time::Duration::ZERO,
            data: None,
            timeline: Default::default(),
        })
    }

    fn ids(parts: &[Part]) -> Vec<String> {
        parts
            .iter()
            .filter_map(|p| p.function_response.as_ref()?.id.clone())
            .collect()
    }

    #[test]
    fn calls_the_scheduler_did_not_answer_get_an_error_each_in_order() {
        let calls: Vec<_> = ["a", "b", "c"].into_iter().map(call).collect();
        let mut answers = RoundAnswers::new(calls.len(), false);
        answers.add(done(&calls[0], CallStatus::Success));
        let answered = answers.finish(&calls, "The scheduler was unavailable");
        assert_eq!(ids(&answered.parts), ["a", "b", "c"]);
        let error = |i: usize| {
            answered.parts[i]
                .function_response
                .as_ref()
                .map(|r| r.response.clone())
        };
        assert_eq!(error(0), Some(json!({"output": "a"})));
        assert_eq!(
            error(2),
            Some(json!({"error": "The scheduler was unavailable"}))
        );
        assert!(!answered.all_cancelled);
        assert!(answered.calls.is_none());
    }

    #[test]
    fn finished_calls_are_kept_only_for_the_recorder() {
        let calls: Vec<_> = ["a", "b"].into_iter().map(call).collect();
        let mut answers = RoundAnswers::new(calls.len(), true);
        for c in &calls {
            answers.add(done(c, CallStatus::Cancelled));
        }
        let answered = answers.finish(&calls, "unused");
        assert!(answered.all_cancelled);
        let kept = answered.calls.unwrap_or_default();
        assert_eq!(
            kept.iter().map(|c| c.call_id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(ids(&answered.parts), ["a", "b"]);
    }

    #[test]
    fn a_call_nothing_else_holds_gives_up_its_parts_without_a_copy() {
        let c = call("a");
        let finished = done(&c, CallStatus::Success);
        let payload = finished.response_parts[0].function_response.clone();
        let mut answers = RoundAnswers::new(1, false);
        answers.add(finished);
        let answered = answers.finish(&[c], "unused");
        // The history's part holds the very response the tool's call produced.
        let moved = answered.parts[0].function_response.as_ref();
        assert!(matches!((moved, payload.as_ref()), (Some(a), Some(b)) if Arc::ptr_eq(a, b)));
    }
}
