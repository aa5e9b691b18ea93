//! The answers to one round of calls, gathered as the Scheduler hands them over (in
//! call order, each as soon as every earlier call is answered). A finished call's
//! response parts move out of it at once and the rest of it (display text, timeline,
//! …) is dropped, so a batch of 100,000 calls never holds its finished calls and their
//! answers at the same time. The parts become one user content, the history's answer
//! to the model turn, when the round is over (gemini-cli's history rule).
//!
//! Not gemini-cli's: a call asked for twice in one model turn (same tool, same
//! arguments) runs once; each copy is answered with the first one's result under its
//! own id (with loop detection on, `model.loop_detection`). And a call that failed [`FAILED_CALL_NUDGE`] times in the turn gets a note
//! in its error telling the model to try something else.

use std::collections::HashMap;
use std::sync::Arc;

use actix::Recipient;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::engine::context_budget::SizeMemo;
use crate::engine::loop_detection::{
    duplicates, failure_nudge, is_identity_edit, FailedCalls, FAILED_CALL_NUDGE,
    IDENTITY_EDIT_NOTE, REPEAT_NOTE,
};
use crate::engine::responses::{add_error_note, add_output_note, error_parts, with_call_id};
use crate::protocol::content::{CallArgs, FunctionCall, Part};
use crate::protocol::{CallStatus, CompletedCall, SessionEvent, ToolFactsTable};

/// Finished calls sent to the session recorder in one message.
const RECORD_BATCH: usize = 64;

/// The answers of one round so far.
pub(super) struct RoundAnswers {
    /// Every call of the model turn, in order.
    calls: Vec<Arc<FunctionCall>>,
    /// For each call, the earlier identical call whose answer it shares (None: it runs).
    copy_of: Vec<Option<usize>>,
    /// For each call that has copies, how many of them are not answered yet.
    copies_left: HashMap<usize, usize>,
    /// The answers of the calls that have copies, until the copies are answered.
    shared: HashMap<usize, Arc<CompletedCall>>,
    /// Calls answered without running (a repeat of the prompt's lookups, an edit
    /// refused before it runs), by index, until their turn comes.
    pre: HashMap<usize, Arc<CompletedCall>>,
    /// The copies' answers, for the front ends.
    copies: Vec<Arc<CompletedCall>>,
    /// Failures per call in this turn (None: not tracked, loop detection is off).
    failures: Option<FailedCalls>,
    /// The response parts, in call order.
    parts: Vec<Part>,
    /// How many calls are answered (the first `answered` calls of the round).
    answered: usize,
    all_cancelled: bool,
    /// A call repeated one that had just succeeded, unchanged.
    repeated: bool,
    /// The successful edit calls (`replace`, `write_file`: their tools' facts say so).
    edits: Vec<Arc<CompletedCall>>,
    /// A subagent's `complete_task` call of the round succeeded: its task is done.
    task_completed: bool,
    /// A call of the round ran tests (`model.check_outcome`).
    ran_tests: bool,
    /// The facts of the built-in tools (which calls run once, which are edits).
    facts: Arc<ToolFactsTable>,
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
    pub failures: Option<FailedCalls>,
    /// The answers of the calls that shared an identical call's answer (not run).
    pub copies: Vec<Arc<CompletedCall>>,
    /// A call of the round repeated one that had just succeeded, unchanged, or failed
    /// for the third time: the model is stuck.
    pub repeated: bool,
    /// The successful edit calls (for undoing a failed turn).
    pub edits: Vec<Arc<CompletedCall>>,
    /// A subagent's `complete_task` call succeeded: the turn ends with this round.
    pub task_completed: bool,
    /// A call of the round ran tests.
    pub ran_tests: bool,
}

impl RoundAnswers {
    /// Answers for a round of `calls`; the finished calls go on to `recorder`. With
    /// `failures` (loop detection on), identical calls run once and failures count;
    /// `facts` say which tools' calls run once and which are edits.
    pub(super) fn new(
        calls: &[Arc<FunctionCall>],
        recorder: Option<Recipient<SessionEvent>>,
        failures: Option<FailedCalls>,
        facts: Arc<ToolFactsTable>,
    ) -> Self {
        let copy_of = match failures {
            Some(_) => duplicates(calls, &facts),
            None => vec![None; calls.len()],
        };
        let mut copies_left: HashMap<usize, usize> = HashMap::new();
        for original in copy_of.iter().flatten() {
            *copies_left.entry(*original).or_default() += 1;
        }
        let calls_len = calls.len();
        Self {
            calls: calls.to_vec(),
            copy_of,
            copies_left,
            shared: HashMap::new(),
            pre: HashMap::new(),
            copies: Vec::new(),
            failures,
            parts: Vec::with_capacity(calls_len),
            answered: 0,
            repeated: false,
            edits: Vec::new(),
            task_completed: false,
            ran_tests: false,
            facts,
            all_cancelled: true,
            recorder: recorder.map(|r| (r, Vec::with_capacity(RECORD_BATCH.min(calls_len)))),
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

    /// The calls that run: the first of each kind (the others are its copies), but
    /// those answered already ([`preanswer`](Self::preanswer)).
    pub(super) fn to_run(&self) -> Vec<Arc<FunctionCall>> {
        (self.calls.iter().zip(&self.copy_of).enumerate())
            .filter(|(i, (_, copy))| copy.is_none() && !self.pre.contains_key(i))
            .map(|(_, (c, _))| c.clone())
            .collect()
    }

    /// The calls of the round, in order.
    pub(super) fn calls(&self) -> &[Arc<FunctionCall>] {
        &self.calls
    }

    /// Answers call `index` with `answer` without running it (before [`to_run`]); its
    /// copies get the same answer. A copy itself is not answered here.
    ///
    /// [`to_run`]: Self::to_run
    pub(super) fn preanswer(&mut self, index: usize, answer: CompletedCall) {
        if self.copy_of.get(index) != Some(&None) {
            return;
        }
        let answer = Arc::new(answer);
        if self.copies_left.contains_key(&index) {
            self.shared.insert(index, answer.clone());
        }
        self.pre.insert(index, answer);
    }

    /// The answer of the next call that ran (the copies before and after it are
    /// answered as their turn comes).
    pub(super) fn add(&mut self, call: Arc<CompletedCall>) {
        self.answer_copies();
        let call = self.track_failure(call);
        let index = self.answered;
        if self.copies_left.contains_key(&index) {
            self.shared.insert(index, call.clone());
        }
        self.push(call);
        self.answer_copies();
    }

    /// Answers the copies next in line whose first call is answered, and the calls
    /// next in line answered without running.
    fn answer_copies(&mut self) {
        loop {
            if let Some(answer) = self.pre.remove(&self.answered) {
                self.copies.push(answer.clone());
                self.push(answer);
                continue;
            }
            let Some(Some(original)) = self.copy_of.get(self.answered).copied() else {
                return;
            };
            let Some(answer) = self.shared.get(&original).cloned() else {
                return;
            };
            let call = self.calls[self.answered].clone();
            let id = call.id.clone().unwrap_or_default();
            let copy = CompletedCall {
                response_parts: with_call_id(&answer.response_parts, &id),
                call_id: id,
                args: CallArgs::of(call),
                display: format!(
                    "The same call as {} (asked for twice in one answer): it ran once.",
                    answer.call_id
                ),
                ..(*answer).clone()
            };
            if let Some(left) = self.copies_left.get_mut(&original) {
                *left -= 1;
                if *left == 0 {
                    self.copies_left.remove(&original);
                    self.shared.remove(&original);
                }
            }
            let copy = Arc::new(copy);
            self.copies.push(copy.clone());
            self.push(copy);
        }
    }

    /// Counts a failed call; the third failure of the same call gets a note for the
    /// model in its error.
    fn track_failure(&mut self, call: Arc<CompletedCall>) -> Arc<CompletedCall> {
        let Some(failures) = self.failures.as_mut() else {
            return call;
        };
        let failed = call.status == CallStatus::Error;
        if call.status != CallStatus::Success {
            failures.record_other();
        }
        if call.status == CallStatus::Cancelled {
            return call;
        }
        // Only tools whose identical calls in one answer run once: another tool's
        // identical calls may be meant (an MCP gather), and each one runs (and ends
        // a row of repeats).
        let facts = self.facts.get(&call.name);
        let repeated = call.status == CallStatus::Success
            && if facts.run_once {
                failures.record_success(&call.name, &call.args, facts) >= 2
            } else {
                failures.record_other();
                false
            };
        if repeated {
            self.repeated = true;
            let mut noted = (*call).clone();
            if let Some(part) = noted.response_parts.first_mut() {
                add_output_note(part, REPEAT_NOTE);
            }
            return Arc::new(noted);
        }
        let count = failures.record(&call.name, &call.args, failed);
        let identity = failed && is_identity_edit(&call.args);
        if identity && count < FAILED_CALL_NUDGE {
            let mut nudged = (*call).clone();
            if let Some(part) = nudged.response_parts.first_mut() {
                add_error_note(part, IDENTITY_EDIT_NOTE);
            }
            return Arc::new(nudged);
        }
        if !failed || count < FAILED_CALL_NUDGE {
            return call;
        }
        // The model is stuck on this call: with `model.answer_after_repeat` its next
        // answer may not call a tool either (what it did so far stands).
        self.repeated = true;
        let mut nudged = (*call).clone();
        if let Some(part) = nudged.response_parts.first_mut() {
            if identity {
                add_error_note(part, IDENTITY_EDIT_NOTE);
            }
            add_error_note(part, &failure_nudge(count));
        }
        Arc::new(nudged)
    }

    fn push(&mut self, call: Arc<CompletedCall>) {
        self.answered += 1;
        if call.status == CallStatus::Success
            && call.name == crate::tools::complete_task::COMPLETE_TASK
        {
            self.task_completed = true;
        }
        self.ran_tests |= super::outcome::runs_tests(&call, self.facts.get(&call.name));
        if call.status == CallStatus::Success && self.facts.get(&call.name).is_edit() {
            self.edits.push(call.clone());
        }
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
    pub(super) fn finish(mut self, failure: &str) -> Answered {
        self.answer_copies();
        while self.answered < self.calls.len() {
            let call = self.calls[self.answered].clone();
            self.push(Arc::new(unanswered(&call, failure)));
            self.answer_copies();
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
            failures: self.failures,
            copies: self.copies,
            repeated: self.repeated,
            edits: self.edits,
            task_completed: self.task_completed,
            ran_tests: self.ran_tests,
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
#[path = "answers_tests.rs"]
mod tests;
