//! An honest outcome for a turn (`model.check_outcome`, on in the small profile): a
//! prompt that asks for a change ([`asks_for_change`]) is checked against the
//! workspace, compared before the first request and after the last answer; a prompt
//! that asks to run the tests ([`asks_to_run_tests`]) against the shell commands the
//! turn ran ([`is_test_command`]). What is missing is said to the model once, and the
//! turn goes on; missing again, the turn ends with [`UiEvent::Unmet`] before its
//! `TurnFinished`, so the result says `no_change` / `tests_not_run` instead of success.
//!
//! And a required tool call (`model.first_answer_calls_a_tool`) answered in prose is
//! asked for again once, the requirement restated; a second answer in prose ends the
//! turn as `no_tool_call`.

use actix::prelude::*;

use super::Chat;
use crate::engine::model::ModelRequest;
use crate::engine::request_intent::{asks_for_change, asks_to_run_tests, is_test_command};
use crate::protocol::content::{Content, Part, Role};
use crate::protocol::{CallStatus, CompletedCall, ToolFacts, ToolKind, UiEvent, Unmet};
use crate::tools::workspace_listing::WorkspaceFingerprint;

/// At most this many files are compared.
const FINGERPRINT_FILES: usize = 20_000;

/// The workspace as [`WorkspaceFingerprint`] saw it.
type Fingerprint = Vec<(String, u64, u64)>;

/// What a turn was asked for and what it did about it.
#[derive(Debug, Default)]
pub(super) struct OutcomeCheck {
    /// The prompt asks for a change (and the check is on).
    wants_change: bool,
    /// The prompt asks to run the tests (and the check is on).
    wants_tests: bool,
    /// The workspace before the first request.
    before: Option<Fingerprint>,
    /// A test command ran this turn.
    ran_tests: bool,
    /// The model was told once what is missing.
    nudged: bool,
    /// The request being answered required a tool call.
    pub call_required: bool,
    /// An answer in prose to a required call was asked again once.
    call_asked_again: bool,
    /// The note restating the requirement, for the next request only.
    call_note: Option<String>,
    /// Two answers in prose to a required call.
    no_tool_call: bool,
}

/// Said to the model when the turn's answer came without the change it was asked for.
pub const NO_CHANGE_NOTE: &str = "(Note from Troupe, not from the user: you have not changed any file yet, but the request asks for a change. Make the change now with the tools that edit files (read the file first if you need its exact text); do not only describe it.)";

/// Said to the model when the turn's answer came without the test run it was asked
/// for.
pub fn tests_not_run_note() -> String {
    format!("(Note from Troupe, not from the user: the request asks to run the tests, and no test command has run yet. Run them now with {}, then answer from their output.)", crate::tools::shell::NAME)
}

/// Said to the model when its answer called no tool though one was required.
pub const CALL_REQUIRED_NOTE: &str = "(Note from Troupe, not from the user: your answer must call one of the tools offered; an answer in words only is not accepted here. Call the tool that does the next step of the request now.)";

impl OutcomeCheck {
    /// The check of a turn on `prompt` (`on`: `model.check_outcome`).
    pub(super) fn for_prompt(prompt: &str, on: bool) -> Self {
        Self {
            wants_change: on && asks_for_change(prompt),
            wants_tests: on && asks_to_run_tests(prompt),
            ..Self::default()
        }
    }

    /// A round of the turn ran a test command.
    pub(super) fn ran_tests(&mut self) {
        self.ran_tests = true;
    }

    /// Puts the note restating a required call into `request` (the next one only).
    pub(super) fn apply(&self, request: &mut ModelRequest) {
        let Some(note) = &self.call_note else { return };
        let contents = std::sync::Arc::make_mut(&mut request.contents);
        match contents.last_mut() {
            Some(last) if last.role == Role::User => last.parts.push(Part::text(note.clone())),
            _ => contents.push(Content::user_text(note.clone())),
        }
    }

    /// What is missing, first what matters most; `now`: the workspace at the end.
    fn missing(&self, now: Option<&Fingerprint>) -> Option<Unmet> {
        let unchanged = matches!((&self.before, now), (Some(a), Some(b)) if a == b);
        if self.wants_change && unchanged {
            return Some(Unmet::NoChange);
        }
        if self.wants_tests && !self.ran_tests {
            return Some(Unmet::TestsNotRun);
        }
        self.no_tool_call.then_some(Unmet::NoToolCall)
    }
}

/// Whether a finished call ran tests: a command (its tool's kind says so) that
/// succeeded and [`is_test_command`].
pub fn runs_tests(call: &CompletedCall, facts: &ToolFacts) -> bool {
    let command = call.args.get("command").and_then(|c| c.as_str());
    facts.kind == ToolKind::Execute
        && call.status == CallStatus::Success
        && command.is_some_and(is_test_command)
}

/// What the result says of `unmet`.
pub fn unmet_message(unmet: Unmet) -> String {
    match unmet {
        Unmet::NoChange => "The request asks for a change, but the turn changed no file of the workspace (model.check_outcome); whatever the answer says, nothing was changed.".into(),
        Unmet::TestsNotRun => "The request asks to run the tests, but no test command ran in this turn (model.check_outcome).".into(),
        Unmet::NoToolCall => "A tool call was required (model.first_answer_calls_a_tool) and the model answered twice without one; nothing was done.".into(),
    }
}

impl Chat {
    /// The first request of the turn, after the workspace is fingerprinted when the
    /// prompt asks for a change.
    pub(super) fn first_request(&mut self, ctx: &mut Context<Self>) {
        let wants_change = self.turn.as_ref().is_some_and(|t| t.outcome.wants_change);
        let Some(fs) = self.config.outcome_fs.clone().filter(|_| wants_change) else {
            return self.lookups_or_request(ctx);
        };
        let work = async move { fs.perform(WorkspaceFingerprint(FINGERPRINT_FILES)).await };
        ctx.spawn(work.into_actor(self).map(|seen, act, ctx| {
            if let Some(turn) = act.turn.as_mut() {
                turn.outcome.before = seen.ok();
            }
            act.lookups_or_request(ctx);
        }));
    }

    fn lookups_or_request(&mut self, ctx: &mut Context<Self>) {
        if !self.look_up_prompt_names_first(ctx) {
            self.request_model(ctx);
        }
    }

    /// The model answered without a call. A required call is asked for again once
    /// (true: asked; the answer is dropped like a failed attempt's).
    pub(super) fn ask_again_for_a_call(&mut self, ctx: &mut Context<Self>) -> bool {
        let Some(turn) = self.turn.as_mut() else {
            return false;
        };
        let check = &mut turn.outcome;
        if !check.call_required {
            return false;
        }
        if check.call_asked_again {
            check.no_tool_call = true;
            return false;
        }
        check.call_asked_again = true;
        check.call_note = Some(CALL_REQUIRED_NOTE.into());
        self.model_usage = None;
        tracing::warn!("a required tool call was answered without one; asking again");
        self.emit(UiEvent::Retry {
            attempt: 2,
            reason: "the answer called no tool, though the request required one. Asking the model again.".into(),
        });
        self.request_model(ctx);
        true
    }

    /// An answer came: the note restating a required call has done its work.
    pub(super) fn call_answered(&mut self) {
        if let Some(turn) = self.turn.as_mut() {
            turn.outcome.call_note = None;
        }
    }

    /// The model answered without a call: the turn ends, once its outcome is checked
    /// against its prompt (the model may be sent back once).
    pub(super) fn end_answered_turn(&mut self, response: String, ctx: &mut Context<Self>) {
        let wants_change = self.turn.as_ref().is_some_and(|t| t.outcome.wants_change);
        let fs = self.config.outcome_fs.clone().filter(|_| wants_change);
        let Some(fs) = fs else {
            return self.judge_outcome(response, None, ctx);
        };
        let work = async move { fs.perform(WorkspaceFingerprint(FINGERPRINT_FILES)).await };
        ctx.spawn(
            work.into_actor(self)
                .map(move |seen, act, ctx| act.judge_outcome(response, seen.ok(), ctx)),
        );
    }

    fn judge_outcome(
        &mut self,
        response: String,
        now: Option<Fingerprint>,
        ctx: &mut Context<Self>,
    ) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let Some(unmet) = turn.outcome.missing(now.as_ref()) else {
            return self.complete_turn(response, ctx);
        };
        let can_nudge = unmet != Unmet::NoToolCall
            && !turn.outcome.nudged
            && !turn.cancel.is_cancelled()
            && turn.rounds < self.config.max_turns;
        if can_nudge {
            turn.outcome.nudged = true;
            turn.answer_now = false;
            let note = match unmet {
                Unmet::TestsNotRun => tests_not_run_note(),
                _ => NO_CHANGE_NOTE.to_string(),
            };
            tracing::info!(status = unmet.status(), "sending the model back once");
            self.history.push(Content::user_text(note));
            return self.request_model(ctx);
        }
        tracing::warn!(
            status = unmet.status(),
            "the turn did not do what was asked"
        );
        self.emit(UiEvent::Unmet {
            unmet,
            message: unmet_message(unmet),
        });
        self.complete_turn(response, ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_missing_comes_first_by_what_matters_most() {
        let mut check = OutcomeCheck::for_prompt("Fix cart.py, then run the tests", true);
        let before = vec![("a".to_string(), 1, 2)];
        check.before = Some(before.clone());
        assert_eq!(check.missing(Some(&before)), Some(Unmet::NoChange));
        let changed = vec![("a".to_string(), 1, 3)];
        assert_eq!(check.missing(Some(&changed)), Some(Unmet::TestsNotRun));
        check.ran_tests = true;
        assert_eq!(check.missing(Some(&changed)), None);
        // Off: nothing is asked for; a workspace not seen is not judged unchanged.
        let off = OutcomeCheck::for_prompt("Fix cart.py", false);
        assert_eq!(off.missing(None), None);
        let unseen = OutcomeCheck::for_prompt("Fix cart.py", true);
        assert_eq!(unseen.missing(None), None);
    }
}
