//! What keeps a small model on track (each a setting, on in the small profile):
//! - the files a prompt names are read before the model's first answer, or, when it
//!   names none, the code names it uses (`TAX_RATE`, `format_price`) are searched for
//!   (`model.look_up_prompt_names`): the model works from the real text, not a guess;
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
use crate::tools::{grep, read_file};

/// At most this many named files are read before the first answer.
pub const MAX_NAMED_FILES: usize = 3;
/// At most this many code names are searched for before the first answer.
pub const MAX_NAMED_IDENTIFIERS: usize = 2;

/// Said to the model, after its tool results, when its answer may not call a tool: a
/// small model whose tools are withheld otherwise writes the call out as JSON text.
pub const ANSWER_NOW_NOTE: &str = "(Note from Troupe: you already have the results you need above. Now answer the user's request in plain words, using those results. Do not call a tool and do not write JSON.)";

/// Makes `request`'s answer one without tool calls: the tools stay declared (the
/// history's calls refer to them), the call is forbidden, and the model is told to
/// answer from what it has.
pub fn forbid_calls(request: &mut crate::engine::model::ModelRequest) {
    request.forbid_call = true;
    // A copy of the shared contents: the note is for this request only.
    if let Some(last) = std::sync::Arc::make_mut(&mut request.contents).last_mut() {
        last.parts.push(Part::text(ANSWER_NOW_NOTE));
    }
}

pub use crate::engine::request_intent::asks_for_change;
use crate::engine::request_intent::is_test_path;

/// Leaves the tools that edit files (their `facts` say so: `write_file`, `replace`)
/// out of `request` (a turn that asks no change).
pub fn withhold_edit_tools(
    request: &mut crate::engine::model::ModelRequest,
    facts: &crate::protocol::ToolFactsTable,
) {
    let edits = |name: &str| facts.get(name).is_edit();
    if request.tools.iter().any(|t| edits(&t.name)) {
        let kept = request
            .tools
            .iter()
            .filter(|t| !edits(&t.name))
            .cloned()
            .collect();
        request.tools = std::sync::Arc::new(kept);
    }
}

/// What a turn that ran out of time fails with: `secs` the limit in force, `fitted`
/// the slowest model answer it was fitted to (`model.fit_turn_time_limit`), `cut`
/// what was running when it was reached.
pub fn time_limit_message(secs: u64, fitted: Option<u64>, cut: &str) -> String {
    let why = match fitted {
        Some(slowest) => format!("model.turn_time_limit_secs, fitted to the server's speed: its slowest answer took {slowest} s"),
        None => "model.turn_time_limit_secs".to_string(),
    };
    format!(
        "The turn reached its time limit of {secs} s ({why}) and was stopped{cut}; what its tool calls did so far stays done."
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

/// The words of `prompt` that look like names in code, not prose: an identifier
/// with an underscore (`format_price`), in capitals (`TAX_RATE`, `URL`), or in camel
/// case (`lineTotal`); at most [`MAX_NAMED_IDENTIFIERS`], each once.
pub fn named_identifiers(prompt: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for word in
        prompt.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '/'))
    {
        let is_identifier = word.len() >= 3
            && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        if !is_identifier {
            continue;
        }
        let letters: Vec<char> = word.chars().filter(|c| c.is_ascii_alphabetic()).collect();
        let snake = word.trim_matches('_').contains('_');
        let caps = letters.len() >= 3 && letters.iter().all(|c| c.is_ascii_uppercase());
        let camel = word
            .as_bytes()
            .windows(2)
            .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
        if (snake || caps || camel) && !names.iter().any(|n| n == word) {
            names.push(word.to_string());
            if names.len() == MAX_NAMED_IDENTIFIERS {
                break;
            }
        }
    }
    names
}

/// The calls to run before the model's first answer to `prompt`: a `read_file` of
/// each listed file it names, or, when it names none, a `grep_search` for each code
/// name it uses.
pub fn prompt_lookups(prompt: &str, listed: &[String]) -> Vec<FunctionCall> {
    let call = |name: &str, args| FunctionCall {
        id: None,
        name: name.into(),
        args,
    };
    let mut files = named_files(prompt, listed);
    // The file to work on, not the tests it is checked by (the model reads those if
    // it needs them): a small model's first request must stay small.
    if files.iter().any(|f| !is_test_path(f)) {
        files.retain(|f| !is_test_path(f));
    }
    if !files.is_empty() {
        return files
            .iter()
            .map(|path| call(read_file::NAME, json!({ "file_path": path })))
            .collect();
    }
    named_identifiers(prompt)
        .iter()
        .map(|name| call(grep::NAME, json!({ "pattern": format!("\\b{name}\\b") })))
        .collect()
}

impl Chat {
    /// Runs the turn's lookups ([`prompt_lookups`]) as a model turn of their own,
    /// before the first request; false when there are none.
    pub(super) fn look_up_prompt_names_first(&mut self, ctx: &mut Context<Self>) -> bool {
        let Some(turn) = self.turn.as_mut() else {
            return false;
        };
        let mut calls = std::mem::take(&mut turn.prefetch);
        if calls.is_empty() {
            return false;
        }
        turn.preanswers.note_lookups(&calls);
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> Vec<String> {
        listed_files("The workspace's files:\nshop/cart.py\nshop/pricing.py\ntests/test_shop.py\nREADME.md\ndocs/README.md")
    }

    #[test]
    fn code_names_are_searched_for_when_no_file_is_named() {
        assert_eq!(
            named_identifiers(
                "What is the value of TAX_RATE in this project? See format_price, lineTotal."
            ),
            ["TAX_RATE", "format_price"]
        );
        assert!(named_identifiers(
            "List the Python files in the shop folder. Run python3 -m unittest"
        )
        .is_empty());
        assert!(named_identifiers("Write SUMMARY.md with one line per module").is_empty());
        let lookups = prompt_lookups("Where is TAX_RATE set?", &listed());
        assert_eq!(lookups.len(), 1);
        assert_eq!(lookups[0].name, "grep_search");
        assert_eq!(lookups[0].args, json!({"pattern": "\\bTAX_RATE\\b"}));
        let reads = prompt_lookups("Fix TAX_RATE in shop/cart.py", &listed());
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].name, "read_file");
        // The file to change is read, not the tests the prompt names beside it.
        let reads = prompt_lookups("Fix shop/cart.py so tests/test_shop.py passes", &listed());
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].args, json!({"file_path": "shop/cart.py"}));
        let tests_only = prompt_lookups("Explain tests/test_shop.py", &listed());
        assert_eq!(
            tests_only[0].args,
            json!({"file_path": "tests/test_shop.py"})
        );
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
