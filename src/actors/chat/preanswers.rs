//! Calls of a round answered without running them:
//! - a read that repeats, byte for byte, one of the prompt's lookups
//!   (`model.look_up_prompt_names`) while nothing has changed since is answered with a
//!   short note pointing at the result already sent: no new read, and the next request
//!   does not carry the file a second time (a small model's first call repeated the
//!   lookup in 3 of 8 tasks, a round of 75–120 s on a busy machine);
//! - with `model.protect_named_tests`, an edit of a test file the prompt names is
//!   refused unless the prompt asks to change tests.

use std::collections::HashSet;
use std::time::Duration;

use super::answers::RoundAnswers;
use super::{small_model, Chat};
use crate::engine::call_key::CallKey;
use crate::engine::request_intent::{asks_to_edit_tests, is_test_path};
use crate::engine::responses::{error_parts, success_parts};
use crate::protocol::content::{CallArgs, FunctionCall};
use crate::protocol::{CallStatus, CompletedCall, LlmContent};

/// Said instead of a lookup's result when the model asks for it again.
pub const LOOKUP_REPEAT_NOTE: &str = "(Note from Troupe: this exact call already ran before your first answer, and nothing has changed since: its result is the one above. It was not run again. Use that result and go on with the next step.)";

/// What a turn answers without running.
#[derive(Debug, Default)]
pub(super) struct Preanswers {
    /// The prompt's lookups (their fingerprints), while nothing has changed since.
    lookups: HashSet<u64>,
    /// The test files the prompt names (workspace-relative), when their edits are
    /// refused.
    protected: Vec<String>,
}

impl Preanswers {
    /// For a turn on `prompt` over the `listed` workspace files; `protect`:
    /// `model.protect_named_tests`.
    pub(super) fn for_prompt(prompt: &str, listed: &[String], protect: bool) -> Self {
        let protected = match protect && !asks_to_edit_tests(prompt) {
            true => small_model::named_files(prompt, listed)
                .into_iter()
                .filter(|p| is_test_path(p))
                .collect(),
            false => Vec::new(),
        };
        Self {
            lookups: HashSet::new(),
            protected,
        }
    }

    /// The lookups about to run before the first answer.
    pub(super) fn note_lookups(&mut self, calls: &[FunctionCall]) {
        self.lookups = calls.iter().map(|c| CallKey::of(c).fingerprint()).collect();
    }

    /// Something other than a read ran: a lookup's result may be stale.
    pub(super) fn forget_lookups(&mut self) {
        self.lookups.clear();
    }

    /// The protected test file `path` (as a call gives it) names, if any.
    fn protected_file(&self, path: &str) -> Option<&str> {
        let path = path.trim_start_matches("./");
        self.protected
            .iter()
            .find(|p| path == p.as_str() || path.ends_with(&format!("/{p}")))
            .map(String::as_str)
    }
}

/// A call's answer made here, with `status` and the parts of `response`.
fn answered(call: &FunctionCall, status: CallStatus, text: &str, model: &str) -> CompletedCall {
    let id = call.id.clone().unwrap_or_default();
    let response_parts = match status {
        CallStatus::Success => {
            success_parts(&call.name, &id, LlmContent::Text(text.to_string()), model)
        }
        _ => error_parts(&call.name, &id, text),
    };
    CompletedCall {
        response_parts,
        call_id: id,
        name: call.name.clone(),
        args: CallArgs::of(std::sync::Arc::new(call.clone())),
        status,
        display: text.to_string(),
        error: None,
        duration: Duration::ZERO,
        data: None,
        timeline: Default::default(),
    }
}

impl Chat {
    /// Answers the calls of `round` that need not (or may not) run.
    pub(super) fn preanswer(&self, round: &mut RoundAnswers) {
        let Some(turn) = self.turn.as_ref().filter(|t| !t.prefetching) else {
            return;
        };
        let pre = &turn.preanswers;
        let facts = &self.config.tool_facts;
        let model = &self.config.model_name;
        let mut answers = Vec::new();
        for (index, call) in round.calls().iter().enumerate() {
            let tool = facts.get(&call.name);
            let edited = tool
                .edited_file_arg
                .and_then(|arg| call.args.get(arg)?.as_str());
            if let Some(test) = edited.and_then(|path| pre.protected_file(path)) {
                let message = format!("Not changed: the request names {test} as the tests the change is checked by, and does not ask to change tests (model.protect_named_tests). Change the code under test instead, and leave {test} as it is.");
                answers.push((index, answered(call, CallStatus::Error, &message, model)));
                continue;
            }
            let repeat = tool.answer_depends_on_files_only
                && pre.lookups.contains(&CallKey::of(call).fingerprint());
            if repeat {
                let note = answered(call, CallStatus::Success, LOOKUP_REPEAT_NOTE, model);
                answers.push((index, note));
            }
        }
        for (index, answer) in answers {
            round.preanswer(index, answer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_files_a_prompt_names_are_protected_unless_it_asks_to_change_tests() {
        let listed: Vec<String> = ["acronym.py", "acronym_test.py", "tests/test_shop.py"]
            .map(String::from)
            .to_vec();
        let pre = Preanswers::for_prompt(
            "Implement acronym.py so that the tests in acronym_test.py pass",
            &listed,
            true,
        );
        assert_eq!(pre.protected, ["acronym_test.py"]);
        assert_eq!(
            pre.protected_file("./acronym_test.py"),
            Some("acronym_test.py")
        );
        assert_eq!(
            pre.protected_file("/ws/acronym_test.py"),
            Some("acronym_test.py")
        );
        assert_eq!(pre.protected_file("acronym.py"), None);
        let asked = Preanswers::for_prompt("Add a test to tests/test_shop.py", &listed, true);
        assert!(asked.protected.is_empty());
        let off = Preanswers::for_prompt("Fix acronym_test.py", &listed, false);
        assert!(off.protected.is_empty());
    }
}
