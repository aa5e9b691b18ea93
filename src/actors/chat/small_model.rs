//! What keeps a small model on track (each a setting, on in the small profile):
//! - the files a prompt names are read before the model's first answer
//!   (`model.read_named_files`): the model edits from the real text instead of a guess;
//! - a call that succeeded again unchanged is answered, and the next answer may not
//!   call a tool (`model.answer_after_repeat`): the model reports what it has instead
//!   of repeating the call until loop detection ends the turn;
//! - a turn ends, as a failure that says why, after `model.turn_time_limit_secs`.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use serde_json::json;

use super::Chat;
use crate::engine::history::assign_call_ids;
use crate::protocol::content::{Content, FunctionCall, Part, Role};

/// At most this many named files are read before the first answer.
pub const MAX_NAMED_FILES: usize = 3;

/// Said to the model, after its tool results, when its answer may not call a tool: a
/// small model whose tools are withheld otherwise writes the call out as JSON text.
pub const ANSWER_NOW_NOTE: &str = "(Note from Troupe: you already have the results you need above. Now answer the user's request in plain words, using those results. Do not call a tool and do not write JSON.)";

/// Makes `request`'s answer one without tool calls: the tools stay declared (the
/// history's calls refer to them), the call is forbidden, and the model is told to
/// answer from what it has.
pub fn forbid_calls(request: &mut crate::engine::model::ModelRequest) {
    request.forbid_call = true;
    if let Some(last) = request.contents.last_mut() {
        last.parts.push(Part::text(ANSWER_NOW_NOTE));
    }
}

/// What a turn that ran out of time fails with.
pub fn time_limit_message(secs: u64) -> String {
    format!(
        "The turn reached its time limit of {secs} s (model.turn_time_limit_secs) and was stopped; what its tool calls did so far stays done."
    )
}

/// The files of a workspace listing (the text `tools::workspace_listing` makes: a head
/// line, then one path per line).
pub fn listed_files(listing: &str) -> Vec<String> {
    listing
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The listed files `prompt` names, in the order it names them, at most
/// [`MAX_NAMED_FILES`]: a word of the prompt (quotes and punctuation around it taken
/// off) that is a listed path, or the file name of exactly one listed path.
pub fn named_files(prompt: &str, listed: &[String]) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for word in prompt.split_whitespace() {
        let word = word
            .trim_start_matches(|c: char| "`'\"([{<".contains(c))
            .trim_end_matches(|c: char| "`'\")]}>,;:!?.".contains(c))
            .trim_start_matches("./")
            .trim_start_matches('@');
        if word.is_empty() || !word.contains('.') {
            continue;
        }
        let found = if listed.iter().any(|l| l == word) {
            Some(word.to_string())
        } else if !word.contains('/') {
            let mut by_name = listed.iter().filter(|l| l.rsplit('/').next() == Some(word));
            match (by_name.next(), by_name.next()) {
                (Some(only), None) => Some(only.clone()),
                _ => None,
            }
        } else {
            None
        };
        if let Some(path) = found.filter(|p| !named.contains(p)) {
            named.push(path);
            if named.len() == MAX_NAMED_FILES {
                break;
            }
        }
    }
    named
}

impl Chat {
    /// Runs `read_file` for each of the turn's named files, as a model turn of their
    /// own, before the first request; false when there are none.
    pub(super) fn read_named_files_first(&mut self, ctx: &mut Context<Self>) -> bool {
        let Some(turn) = self.turn.as_mut() else {
            return false;
        };
        let files = std::mem::take(&mut turn.named_files);
        if files.is_empty() {
            return false;
        }
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let mut calls: Vec<FunctionCall> = files
            .iter()
            .map(|path| FunctionCall {
                id: None,
                name: "read_file".into(),
                args: json!({ "file_path": path }),
            })
            .collect();
        assign_call_ids(&mut calls, millis, &mut self.call_counter);
        let calls: Vec<Arc<FunctionCall>> = calls.into_iter().map(Arc::new).collect();
        let content = Content {
            role: Role::Model,
            parts: calls
                .iter()
                .map(|c| Part::function_call((**c).clone()))
                .collect(),
        };
        turn.prefetching = true;
        let calls = content
            .parts
            .iter()
            .filter_map(|p| p.function_call.clone())
            .collect();
        self.run_calls(content, calls, ctx);
        true
    }

    /// Starts the turn's clock: past the limit the turn is cancelled and ends as failed.
    pub(super) fn start_turn_clock(&mut self, id: u64, ctx: &mut Context<Self>) {
        let Some(limit) = self.config.tuning.turn_time_limit else {
            return;
        };
        ctx.run_later(limit, move |act, _| {
            if let Some(turn) = act.turn.as_mut().filter(|t| t.id == id) {
                tracing::warn!(secs = limit.as_secs(), "turn time limit reached");
                turn.timed_out = true;
                turn.cancel.cancel();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> Vec<String> {
        listed_files("The workspace's files:\nshop/cart.py\nshop/pricing.py\ntests/test_shop.py\nREADME.md\ndocs/README.md")
    }

    #[test]
    fn a_prompt_names_listed_paths_and_unique_file_names() {
        assert_eq!(
            named_files(
                "The test in tests/test_shop.py fails: fix `shop/cart.py`. See pricing.py.",
                &listed()
            ),
            ["tests/test_shop.py", "shop/cart.py", "shop/pricing.py"]
        );
        // A listed path is itself; a bare name two listed files share is ambiguous.
        assert_eq!(named_files("Update README.md", &listed()), ["README.md"]);
        let mut two = listed();
        two.push("lib/cart.py".into());
        assert!(named_files("Fix cart.py", &two).is_empty());
        assert!(named_files("Write SUMMARY.md for shop/cart", &listed()).is_empty());
        assert_eq!(
            named_files("read ./shop/cart.py and shop/cart.py", &listed()),
            ["shop/cart.py"]
        );
    }
}
