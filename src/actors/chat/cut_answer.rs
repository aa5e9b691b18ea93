//! A model answer cut at the output limit (`MAX_TOKENS`, OpenAI's `finish_reason:
//! "length"`) that holds function calls is not a plan to run: a small model that ran
//! out of room has often repeated the same fenced block into a dozen calls. None of
//! its calls run and the cut answer is left out of the history (so no call stays
//! unanswered); the model is asked again, with a note saying why and, when an output
//! limit is set, a larger one (doubled, up to [`CEILING_FACTOR`] × the configured
//! limit and half the context window). After [`MAX_CUT_RETRIES`] such answers in one
//! turn, the turn fails. Not gemini-cli's: it runs the calls of a cut answer.
//!
//! A call cut in the middle of its arguments (OpenAI's `finish_reason: "length"` with
//! arguments that are not JSON) is asked again the same way, with the output limit
//! raised to what the window leaves ([`room_for_call`]); when its tool can append
//! (`write_file`'s `append`, a fact of the tool), the model is told to write the file
//! in parts, and the parameter is declared for the rest of the turn.

use actix::prelude::*;

use super::Chat;
use crate::engine::model::ModelRequest;
use crate::protocol::content::{Content, Part, Role};
use crate::protocol::UiEvent;

/// Cut answers with calls a turn asks again after; the next one ends the turn.
/// One: on a slow local model (9 tokens/s on a 2-core CPU) each cut answer of a
/// 1,024-token limit costs nearly two minutes, and a second cut answer is rarely better.
pub const MAX_CUT_RETRIES: u32 = 1;
/// How far the output limit may grow over the configured one.
const CEILING_FACTOR: u64 = 2;

/// A turn's cut answers and what the next request does about them.
#[derive(Debug, Default)]
pub(super) struct CutAnswers {
    /// Cut answers with calls so far this turn.
    retries: u32,
    /// The output limit the rest of the turn asks for (None: the configured one).
    output_cap: Option<u32>,
    /// The note added to the next request (until an answer is not cut).
    note: Option<String>,
    /// A tool whose calls may append for the rest of the turn, and its parameter:
    /// declared in every request of the turn from now on.
    parts: Option<(String, &'static str)>,
}

/// How the appending parameter is described to the model.
const APPEND_DESCRIPTION: &str =
    "If true, add `content` to the end of the file instead of replacing the file.";

impl CutAnswers {
    /// Puts the note and the grown output limit into a request of the turn.
    pub(super) fn apply(&self, request: &mut ModelRequest) {
        if let Some(cap) = self.output_cap {
            request.max_output_tokens = Some(cap);
        }
        if let Some((tool, arg)) = &self.parts {
            let tools = std::sync::Arc::make_mut(&mut request.tools);
            for decl in tools.iter_mut().filter(|d| &d.name == tool) {
                *decl = crate::engine::compact_tools::with_flag(decl, arg, APPEND_DESCRIPTION);
            }
        }
        let Some(note) = &self.note else { return };
        let contents = std::sync::Arc::make_mut(&mut request.contents);
        match contents.last_mut() {
            Some(last) if last.role == Role::User => last.parts.push(Part::text(note.clone())),
            _ => contents.push(Content {
                role: Role::User,
                parts: vec![Part::text(note.clone())],
            }),
        }
    }

    /// An answer that was not cut with calls in it: the note has done its work.
    pub(super) fn answered(&mut self) {
        self.note = None;
    }
}

/// The output limit after `cap`: doubled, within the ceiling.
fn grown(cap: u32, configured: Option<u32>, window: u64) -> u32 {
    let ceiling = (u64::from(configured.unwrap_or(cap)) * CEILING_FACTOR)
        .min(window / 2)
        .max(u64::from(cap));
    (u64::from(cap) * 2).min(ceiling).try_into().unwrap_or(cap)
}

/// The output limit for asking again a call cut at `cap`: four times as much, within
/// what the window leaves after the prompt (`prompt_tokens`, the last one the server
/// counted; half the window when none was), never below `cap`.
pub(super) fn room_for_call(cap: u32, window: u64, prompt_tokens: u64) -> u32 {
    let room = match prompt_tokens {
        0 => window / 2,
        used => window.saturating_sub(used).saturating_sub(CALL_ROOM_MARGIN),
    };
    (u64::from(cap) * 4)
        .min(room)
        .max(u64::from(cap))
        .try_into()
        .unwrap_or(cap)
}

/// Tokens left free beside the prompt and the answer (the estimate may be short).
const CALL_ROOM_MARGIN: u64 = 256;

/// About how many lines of a file one answer of `limit` tokens holds, with room to
/// spare (a line of code is ten to fifteen tokens).
fn lines_per_part(limit: u32) -> u32 {
    (limit / 20).max(10)
}

impl Chat {
    /// The answer ended at the output limit in the middle of a call of `tool` (its
    /// arguments cut): it is asked again with a larger limit, and a tool that can
    /// append is to be used in parts; after [`MAX_CUT_RETRIES`] the turn fails.
    pub(super) fn on_cut_call(&mut self, tool: String, message: String, ctx: &mut Context<Self>) {
        self.model_usage = None;
        let configured = self.config.tuning.max_output_tokens;
        let window = self.config.tuning.context_window;
        let prompt_tokens = self.last_prompt_tokens;
        let append = self.config.tool_facts.get(&tool).append_arg;
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let limit = turn.cut.output_cap.or(configured);
        let limit_text = match limit {
            Some(n) => format!("{n} tokens"),
            None => "the server's limit".to_string(),
        };
        if turn.cut.retries >= MAX_CUT_RETRIES {
            turn.cut.note = None;
            let times = turn.cut.retries + 1;
            return self.fail(format!(
                "The model's answer was cut at the output limit ({limit_text}, model.max_output_tokens) in the middle of a call of {tool}, {times} times in this turn; it was not run ({message})."
            ));
        }
        turn.cut.retries += 1;
        let next = limit.map(|cap| room_for_call(cap, window, prompt_tokens));
        turn.cut.output_cap = next;
        let how = match append {
            Some(arg) => {
                turn.cut.parts = Some((tool.clone(), arg));
                let lines = lines_per_part(next.or(limit).unwrap_or(512));
                format!("Write the file in parts: call {tool} with only the first part of the content (at most {lines} lines), then call {tool} again on the same file with the next part and \"{arg}\": true, one part per call, until the file is complete.")
            }
            None => "Answer again with shorter arguments: do a smaller step.".to_string(),
        };
        turn.cut.note = Some(format!(
            "(Note from Troupe, not from the user: your previous answer was cut at the output limit ({limit_text}) in the middle of the arguments of {tool}, so the call was not run. {how})"
        ));
        let raised = match (limit, next) {
            (Some(a), Some(b)) if b > a => format!(" with an output limit of {b} tokens"),
            _ => String::new(),
        };
        let attempt = turn.cut.retries + 1;
        tracing::warn!(%tool, attempt, "a call was cut at the output limit");
        self.emit(UiEvent::Retry {
            attempt,
            reason: format!(
                "the answer was cut at the output limit ({limit_text}) in the middle of a call of {tool}, not run. Asking the model again{raised}."
            ),
        });
        self.request_model(ctx);
    }

    /// The model's answer ended at the output limit with `calls` function calls in it:
    /// none runs; the model is asked again, or the turn fails after
    /// [`MAX_CUT_RETRIES`] such answers.
    pub(super) fn on_cut_calls(&mut self, calls: usize, ctx: &mut Context<Self>) {
        self.model_usage = None;
        let configured = self.config.tuning.max_output_tokens;
        let window = self.config.tuning.context_window;
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let limit = turn.cut.output_cap.or(configured);
        let limit_text = match limit {
            Some(n) => format!("{n} tokens"),
            None => "the server's limit".to_string(),
        };
        if turn.cut.retries >= MAX_CUT_RETRIES {
            turn.cut.note = None;
            let times = turn.cut.retries + 1;
            return self.fail(format!(
                "The model's answer was cut at the output limit ({limit_text}, model.max_output_tokens) with tool calls in it, {times} times in this turn; none of those calls were run. Ask for a smaller step, or raise model.max_output_tokens."
            ));
        }
        turn.cut.retries += 1;
        let next = limit.map(|cap| grown(cap, configured, window));
        turn.cut.output_cap = next;
        let (not_run, with) = match calls {
            1 => (
                "its tool call was not run".to_string(),
                "a tool call".to_string(),
            ),
            n => (
                format!("none of its {n} tool calls were run"),
                format!("{n} tool calls"),
            ),
        };
        turn.cut.note = Some(format!(
            "(Note from Troupe, not from the user: your previous answer was cut at the output limit ({limit_text}) and {not_run}. Answer again more briefly: at most a few tool calls, no repeated blocks.)"
        ));
        let raised = match (limit, next) {
            (Some(a), Some(b)) if b > a => format!(" with an output limit of {b} tokens"),
            _ => String::new(),
        };
        let attempt = turn.cut.retries + 1;
        tracing::warn!(calls, attempt, "answer cut at the output limit");
        // The front ends drop the cut answer's text, as for a failed attempt.
        self.emit(UiEvent::Retry {
            attempt,
            reason: format!(
                "the answer was cut at the output limit ({limit_text}) with {with} in it, none run. Asking the model again{raised}."
            ),
        });
        self.request_model(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_call_gets_four_times_the_limit_within_what_the_window_leaves() {
        assert_eq!(room_for_call(512, 8192, 1500), 2048);
        assert_eq!(room_for_call(512, 8192, 7000), 936);
        assert_eq!(room_for_call(512, 8192, 8000), 512);
        assert_eq!(room_for_call(512, 2048, 0), 1024);
        assert_eq!(lines_per_part(2048), 102);
        assert_eq!(lines_per_part(100), 10);
    }

    #[test]
    fn the_limit_doubles_up_to_its_ceiling() {
        assert_eq!(grown(1024, Some(1024), 8192), 2048);
        assert_eq!(grown(2048, Some(1024), 8192), 2048);
        assert_eq!(grown(512, Some(512), 8192), 1024);
        // Half the context window bounds it too, never below the limit in use.
        assert_eq!(grown(1024, Some(1024), 3000), 1500);
        assert_eq!(grown(4096, Some(4096), 4096), 4096);
    }

    #[test]
    fn the_note_joins_the_last_user_turn_of_the_request() {
        let mut cut = CutAnswers::default();
        let mut request = ModelRequest::new("m", vec![Content::user_text("do it")]);
        cut.note = Some("note".into());
        cut.output_cap = Some(2048);
        cut.apply(&mut request);
        assert_eq!(request.max_output_tokens, Some(2048));
        assert_eq!(request.contents.len(), 1);
        assert_eq!(request.contents[0].parts[1].text.as_deref(), Some("note"));
        cut.answered();
        let mut request = ModelRequest::new("m", vec![Content::user_text("do it")]);
        cut.apply(&mut request);
        assert_eq!(request.contents[0].parts.len(), 1);
    }
}
