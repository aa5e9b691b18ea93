//! A model answer cut at the output limit (`MAX_TOKENS`, OpenAI's `finish_reason:
//! "length"`) that holds function calls is not a plan to run: a small model that ran
//! out of room has often repeated the same fenced block into a dozen calls. None of
//! its calls run and the cut answer is left out of the history (so no call stays
//! unanswered); the model is asked again, with a note saying why and, when an output
//! limit is set, a larger one (doubled, up to [`CEILING_FACTOR`] × the configured
//! limit and half the context window). After [`MAX_CUT_RETRIES`] such answers in one
//! turn, the turn fails. Not gemini-cli's: it runs the calls of a cut answer.

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
}

impl CutAnswers {
    /// Puts the note and the grown output limit into a request of the turn.
    pub(super) fn apply(&self, request: &mut ModelRequest) {
        if let Some(cap) = self.output_cap {
            request.max_output_tokens = Some(cap);
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

impl Chat {
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
