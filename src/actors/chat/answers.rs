//! The answers to one round of calls, gathered as the Scheduler hands them over (in
//! call order, each as soon as every earlier call is answered). A finished call's
//! response parts move out of it at once and the rest of it (display text, timeline,
//! …) is dropped, so a batch of 100,000 calls never holds its finished calls and their
//! answers at the same time. The parts become one user content, the history's answer
//! to the model turn, when the round is over (gemini-cli's history rule).

use std::sync::Arc;

use actix::Recipient;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::engine::context_budget::SizeMemo;
use crate::engine::responses::error_parts;
use crate::protocol::content::{CallArgs, FunctionCall, Part};
use crate::protocol::{CallStatus, CompletedCall, SessionEvent};

/// Finished calls sent to the session recorder in one message.
const RECORD_BATCH: usize = 64;

/// The answers of one round so far.
pub(super) struct RoundAnswers {
    /// The response parts, in call order.
    parts: Vec<Part>,
    /// How many calls are answered (the first `answered` calls of the round).
    answered: usize,
    all_cancelled: bool,
    /// Finished calls on their way to the session recorder (none without one): sent
    /// [`RECORD_BATCH`] at a time as they come, the rest when the round is over.
    recorder: Option<(Recipient<SessionEvent>, Vec<Arc<CompletedCall>>)>,
    /// The responses measured as they came (the next request measures the history,
    /// and this round is most of it).
    sizes: SizeMemo,
}

/// A round's answers, complete: one response per call, in call order.
pub(super) struct Answered {
    pub parts: Vec<Part>,
    pub all_cancelled: bool,
    pub sizes: SizeMemo,
}

impl RoundAnswers {
    /// Answers for a round of `calls` calls; the finished calls go on to `recorder`.
    pub(super) fn new(calls: usize, recorder: Option<Recipient<SessionEvent>>) -> Self {
        Self {
            parts: Vec::with_capacity(calls),
            answered: 0,
            all_cancelled: true,
            recorder: recorder.map(|r| (r, Vec::with_capacity(RECORD_BATCH.min(calls)))),
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
        match &mut self.recorder {
            Some((recorder, batch)) => {
                self.parts.extend(call.response_parts.iter().cloned());
                batch.push(call);
                if batch.len() >= RECORD_BATCH {
                    recorder.do_send(SessionEvent::ToolResults {
                        calls: std::mem::replace(batch, Vec::with_capacity(RECORD_BATCH)),
                        done: false,
                    });
                }
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
        if let Some((recorder, batch)) = self.recorder.take() {
            recorder.do_send(SessionEvent::ToolResults {
                calls: batch,
                done: true,
            });
        }
        Answered {
            parts: self.parts,
            all_cancelled: self.all_cancelled,
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
        let mut answers = RoundAnswers::new(calls.len(), None);
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
    }

    /// The ids of each `ToolResults` message, and its `done`.
    type Batches = Arc<std::sync::Mutex<Vec<(Vec<String>, bool)>>>;

    /// Collects what a recorder would be sent.
    struct Collect(Batches);

    impl actix::Actor for Collect {
        type Context = actix::Context<Self>;
    }

    impl actix::Handler<SessionEvent> for Collect {
        type Result = ();
        fn handle(&mut self, event: SessionEvent, _: &mut Self::Context) {
            if let SessionEvent::ToolResults { calls, done } = event {
                let ids = calls.iter().map(|c| c.call_id.clone()).collect();
                self.0.lock().unwrap().push((ids, done));
            }
        }
    }

    impl actix::Handler<crate::protocol::FlushRecords> for Collect {
        type Result = ();
        fn handle(&mut self, _: crate::protocol::FlushRecords, _: &mut Self::Context) {}
    }

    #[actix::test]
    async fn finished_calls_go_to_the_recorder_as_they_come_then_the_rest() {
        use actix::Actor;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorder = Collect(seen.clone()).start();
        let n = RECORD_BATCH + 3;
        let calls: Vec<_> = (0..n).map(|i| call(&format!("c{i}"))).collect();
        let mut answers = RoundAnswers::new(n, Some(recorder.clone().recipient()));
        for c in &calls[..RECORD_BATCH] {
            answers.add(done(c, CallStatus::Cancelled));
        }
        // A full batch leaves while the round runs; the rest waits for its end.
        recorder.send(crate::protocol::FlushRecords).await.unwrap();
        assert_eq!(seen.lock().unwrap().len(), 1);
        answers.add(done(&calls[RECORD_BATCH], CallStatus::Cancelled));
        let answered = answers.finish(&calls, "The scheduler stopped");
        recorder.send(crate::protocol::FlushRecords).await.unwrap();
        assert!(!answered.all_cancelled, "the unanswered calls are errors");
        assert_eq!(ids(&answered.parts).len(), n);
        let seen = seen.lock().unwrap();
        let want = |range: std::ops::Range<usize>| -> Vec<String> {
            range.map(|i| format!("c{i}")).collect()
        };
        assert_eq!(
            *seen,
            vec![
                (want(0..RECORD_BATCH), false),
                (want(RECORD_BATCH..n), true)
            ]
        );
    }

    #[test]
    fn a_call_nothing_else_holds_gives_up_its_parts_without_a_copy() {
        let c = call("a");
        let finished = done(&c, CallStatus::Success);
        let payload = finished.response_parts[0].function_response.clone();
        let mut answers = RoundAnswers::new(1, None);
        answers.add(finished);
        let answered = answers.finish(&[c], "unused");
        // The history's part holds the very response the tool's call produced.
        let moved = answered.parts[0].function_response.as_ref();
        assert!(matches!((moved, payload.as_ref()), (Some(a), Some(b)) if Arc::ptr_eq(a, b)));
    }
}
