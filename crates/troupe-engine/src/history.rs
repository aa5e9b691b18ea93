//! History rules: the curated history sent to the model, the model turn recorded from
//! a stream, call ids, and the checks on a finished stream.

use super::model::ModelEvent;
use crate::protocol::content::{Content, FunctionCall, Part, Role, Usage};

/// The MCP servers' instructions as the first part of a user turn (gemini-cli's
/// `<loaded_context>`), or `None` when `history` already holds exactly that part (a
/// resumed session): once is enough.
pub fn loaded_context_part(history: &[Content], instructions: &str) -> Option<Part> {
    let text = format!(
        "<loaded_context>\n<project_context>\n{instructions}\n</project_context>\n</loaded_context>"
    );
    let held = history
        .iter()
        .any(|c| c.role == Role::User && c.parts.iter().any(|p| p.text.as_deref() == Some(&text)));
    (!held).then(|| Part::text(text))
}

/// Is a recorded model turn valid? Empty turns and turns with empty parts are not.
pub fn is_valid_model_turn(content: &Content) -> bool {
    !content.parts.is_empty()
        && content.parts.iter().all(|p| {
            let empty_text = p.text.as_deref() == Some("")
                && p.function_call.is_none()
                && p.inline_data.is_none();
            !p.is_empty() && !empty_text
        })
}

/// The history sent to the model (gemini-cli's `extractCuratedHistory`): a run of
/// consecutive model turns is kept only when every turn in it is valid. When a run is
/// dropped, the plain user input that led to it goes too (it got no answer); a user
/// turn carrying function responses is always kept, so every call in the history stays
/// answered. Consecutive turns of one role are then merged.
pub fn curated(history: &[Content]) -> Vec<Content> {
    let mut out: Vec<Content> = Vec::with_capacity(history.len());
    let mut i = 0;
    while i < history.len() {
        if history[i].role == Role::User {
            out.push(history[i].clone());
            i += 1;
            continue;
        }
        let start = i;
        while i < history.len() && history[i].role == Role::Model {
            i += 1;
        }
        let run = &history[start..i];
        if run.iter().all(is_valid_model_turn) {
            out.extend_from_slice(run);
        } else if start > 0
            && history[start - 1].role == Role::User
            && !history[start - 1].has_function_response()
        {
            out.pop();
        }
    }
    coalesce(out)
}

/// Merges consecutive turns of the same role.
pub fn coalesce(contents: Vec<Content>) -> Vec<Content> {
    let mut out: Vec<Content> = Vec::with_capacity(contents.len());
    for content in contents {
        match out.last_mut() {
            Some(last) if last.role == content.role => last.parts.extend(content.parts),
            _ => out.push(content),
        }
    }
    out
}

/// The model turn assembled from a stream: thoughts dropped, adjacent text merged,
/// function calls kept in order with their thought signatures.
#[derive(Debug, Default, Clone)]
pub struct TurnAssembler {
    parts: Vec<Part>,
    pub finish_reason: Option<String>,
    pub saw_thought: bool,
    /// The last usage reported (Gemini repeats it, cumulative, on every chunk).
    pub usage: Option<Usage>,
}

impl TurnAssembler {
    /// Takes an event the stream no longer needs: a call's arguments move into the
    /// turn instead of being copied (a model may send megabytes of them).
    pub fn push_owned(&mut self, event: ModelEvent) {
        match event {
            ModelEvent::FunctionCall {
                call,
                thought_signature,
            } => {
                let mut part = Part::function_call(call);
                part.thought_signature = thought_signature;
                self.parts.push(part);
            }
            other => self.push(&other),
        }
    }

    /// The assembled turn, moved out (the assembler keeps no share of the calls, so
    /// the Chat can give them ids without copying their arguments).
    pub fn take_content(&mut self) -> Content {
        Content {
            role: Role::Model,
            parts: std::mem::take(&mut self.parts),
        }
    }

    pub fn push(&mut self, event: &ModelEvent) {
        match event {
            ModelEvent::Text(text) => match self.parts.last_mut() {
                Some(Part {
                    text: Some(prev),
                    function_call: None,
                    ..
                }) => prev.push_str(text),
                _ => self.parts.push(Part::text(text.clone())),
            },
            ModelEvent::Thought(_) => self.saw_thought = true,
            ModelEvent::FunctionCall {
                call,
                thought_signature,
            } => {
                let mut part = Part::function_call(call.clone());
                part.thought_signature = thought_signature.clone();
                self.parts.push(part);
            }
            ModelEvent::Finished(reason) => self.finish_reason = Some(reason.clone()),
            ModelEvent::Usage(u) => self.usage = Some(*u),
        }
    }

    pub fn content(&self) -> Content {
        Content {
            role: Role::Model,
            parts: self.parts.clone(),
        }
    }

    pub fn has_calls(&self) -> bool {
        self.parts.iter().any(|p| p.function_call.is_some())
    }

    /// The visible text of the turn so far (without copying its parts).
    pub fn text(&self) -> String {
        crate::protocol::content::visible_text(&self.parts)
    }

    /// gemini-cli's stream checks (§9.3) for a turn without function calls.
    pub fn check(&self, after_function_response: bool) -> Result<(), (String, String)> {
        if self.has_calls() {
            return Ok(());
        }
        let visible = visible_text(&self.text());
        let err = |kind: &str, msg: &str| Err((kind.to_string(), msg.to_string()));
        match self.finish_reason.as_deref() {
            None if !after_function_response => {
                return err(
                    "NO_FINISH_REASON",
                    "the model stream ended without a finish reason",
                )
            }
            Some("MALFORMED_FUNCTION_CALL") => {
                return err(
                    "MALFORMED_FUNCTION_CALL",
                    "the model produced a malformed function call",
                )
            }
            Some("UNEXPECTED_TOOL_CALL") => {
                return err(
                    "UNEXPECTED_TOOL_CALL",
                    "the model called a tool it was not offered",
                )
            }
            _ => {}
        }
        if visible.is_empty() {
            return match self.finish_reason.as_deref() {
                Some("MAX_TOKENS") => err(
                    "MAX_TOKENS_EXCEEDED",
                    "the model hit its output token limit before answering",
                ),
                Some("SAFETY") => err(
                    "SAFETY_BLOCKED",
                    "the response was blocked by the model's safety filters",
                ),
                Some("RECITATION") => err(
                    "RECITATION_BLOCKED",
                    "the response was blocked for recitation",
                ),
                Some("OTHER") => err("OTHER_BLOCKED", "the response was blocked"),
                _ if self.saw_thought => {
                    err("THINKING_ONLY_RESPONSE", "the model only produced thoughts")
                }
                _ if after_function_response => Ok(()),
                _ => err("NO_RESPONSE_TEXT", "the model returned no text"),
            };
        }
        Ok(())
    }
}

/// What a reader would see of a text: zero-width characters and HTML comments
/// removed, then trimmed (an answer of only those counts as no answer).
pub fn visible_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            // An unclosed comment is text, as with gemini-cli's regex.
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.retain(|c| !matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}'));
    out.trim().to_string()
}

/// Gives every call an id (`<name>_<millis>_<n>` when the model sent none) and a name.
pub fn assign_call_ids(calls: &mut [FunctionCall], millis: u128, counter: &mut u64) {
    for call in calls {
        if call.name.trim().is_empty() {
            call.name = "generic_tool".into();
        }
        if call.id.as_deref().is_none_or(str::is_empty) {
            call.id = Some(format!("{}_{}_{}", call.name.trim(), millis, counter));
            *counter += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaded_context_is_added_once() {
        let first = loaded_context_part(&[], "Use echo.").expect("a fresh history gets it");
        let text = first.text.clone().unwrap_or_default();
        assert!(text.starts_with("<loaded_context>\n") && text.contains("Use echo."));
        let mut resumed = Content::user_text("hi");
        resumed.parts.insert(0, first);
        assert!(loaded_context_part(&[resumed.clone()], "Use echo.").is_none());
        assert!(loaded_context_part(&[resumed], "Use grep.").is_some());
    }

    #[test]
    fn an_invalid_answer_drops_the_plain_input_that_led_to_it() {
        let history = vec![
            Content::user_text("a"),
            Content::model_text("fine"),
            Content::user_text("b"),
            Content {
                role: Role::Model,
                parts: vec![Part::text("")],
            },
            Content::user_text("c"),
        ];
        let curated = curated(&history);
        assert_eq!(curated.len(), 3);
        assert_eq!(curated[1].text(), "fine");
        assert_eq!(curated[2].text(), "c");
    }

    #[test]
    fn invalid_model_turns_are_dropped_user_turns_kept() {
        let call = Content {
            role: Role::Model,
            parts: vec![Part::function_call(FunctionCall {
                id: Some("1".into()),
                name: "ls".into(),
                args: serde_json::json!({}),
            })],
        };
        let answer = Content {
            role: Role::User,
            parts: vec![Part::function_response(
                crate::protocol::content::FunctionResponse {
                    id: Some("1".into()),
                    name: "ls".into(),
                    response: serde_json::json!({"output": "x"}),
                    parts: None,
                },
            )],
        };
        let history = vec![
            Content::user_text("a"),
            call.clone(),
            answer.clone(),
            // An empty answer after the tool result: dropped, the result stays.
            Content {
                role: Role::Model,
                parts: vec![],
            },
            Content::user_text("b"),
            Content::model_text("ok"),
        ];
        let curated = curated(&history);
        assert_eq!(curated.len(), 4);
        assert_eq!(curated[1], call);
        assert_eq!(
            curated[2].parts.len(),
            2,
            "the result and the next input merge"
        );
        assert!(curated[2].has_function_response());
        assert_eq!(curated[2].parts[1].text.as_deref(), Some("b"));
        assert_eq!(curated[3].text(), "ok");
    }

    #[test]
    fn assembles_text_and_calls() {
        let mut a = TurnAssembler::default();
        a.push(&ModelEvent::Text("a".into()));
        a.push(&ModelEvent::Thought("t".into()));
        a.push(&ModelEvent::Text("b".into()));
        a.push(&ModelEvent::Finished("STOP".into()));
        assert_eq!(a.content().parts.len(), 1);
        assert_eq!(a.text(), "ab");
        assert!(a.check(false).is_ok());
        let empty = TurnAssembler::default();
        assert_eq!(empty.check(false).unwrap_err().0, "NO_FINISH_REASON");
    }

    #[test]
    fn invisible_answers_are_no_answers() {
        assert_eq!(visible_text(" a<!-- note -->b\u{200B} "), "ab");
        assert_eq!(visible_text("<!-- open"), "<!-- open");
        let mut a = TurnAssembler::default();
        a.push(&ModelEvent::Text("\u{200B}<!-- x -->".into()));
        a.push(&ModelEvent::Finished("STOP".into()));
        assert_eq!(a.check(false).unwrap_err().0, "NO_RESPONSE_TEXT");
    }

    #[test]
    fn ids_are_synthesised() {
        let mut calls = vec![FunctionCall {
            id: None,
            name: "ls".into(),
            args: serde_json::json!({}),
        }];
        let mut n = 0;
        assign_call_ids(&mut calls, 42, &mut n);
        assert_eq!(calls[0].id.as_deref(), Some("ls_42_0"));
    }
}
