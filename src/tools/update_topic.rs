//! `update_topic`: gemini-cli 0.61's chapter marker. The model names the phase of
//! the work it is starting (`title`, with a `summary` of what came before) or restates
//! its immediate intent (`strategic_intent`, required); the session remembers the
//! current topic and intent. The call runs alone (after every earlier call of its
//! answer, before every later one), without asking, and its answers are gemini-cli's
//! texts. Front ends find the chapter in `ToolOutput.data` (`{"topic": {...}}`): the
//! REPL prints it as a chapter line.

use std::sync::Mutex;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Tool, ToolContext};
use crate::protocol::{ToolKind, ToolOutput};

/// The name the model calls.
pub const NAME: &str = "update_topic";

/// The current topic and intent of a session (gemini-cli's `TopicState`).
#[derive(Debug, Default)]
struct TopicState {
    title: Option<String>,
    intent: Option<String>,
}

impl TopicState {
    /// Takes the non-empty of `title` and `intent`, trimmed, line breaks made spaces.
    fn set(&mut self, title: Option<&str>, intent: Option<&str>) {
        if let Some(title) = title.map(sanitized).filter(|t| !t.is_empty()) {
            self.title = Some(title);
        }
        if let Some(intent) = intent.map(sanitized).filter(|i| !i.is_empty()) {
            self.intent = Some(intent);
        }
    }
}

/// `text` trimmed, each run of `\r`/`\n` replaced by one space.
fn sanitized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_break = false;
    for c in text.trim().chars() {
        if c == '\r' || c == '\n' {
            if !in_break {
                out.push(' ');
            }
            in_break = true;
        } else {
            out.push(c);
            in_break = false;
        }
    }
    out
}

/// The `update_topic` tool; one per session tree, holding its topic.
#[derive(Debug, Default)]
pub struct UpdateTopic {
    state: Mutex<TopicState>,
}

/// `update_topic`'s parameters.
#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    /// The new chapter's title (only when a new phase starts).
    #[serde(default)]
    pub title: Option<String>,
    /// What the last chapter did and what the new one is for.
    #[serde(default)]
    pub summary: Option<String>,
    /// The immediate intent, in one sentence.
    pub strategic_intent: String,
}

/// A JavaScript `||` on an optional string: the text when it is not empty.
fn non_empty(text: Option<&str>) -> Option<&str> {
    text.filter(|t| !t.is_empty())
}

/// The answer to the model and the text shown, as gemini-cli 0.61 words them
/// (`tools/topicTool.js`), for a call on a session whose topic was `active` before.
fn answer(
    p: &Params,
    title: Option<&str>,
    intent: Option<&str>,
    active: Option<&str>,
) -> (String, String) {
    let current_topic = title.unwrap_or("...");
    let new_topic = p
        .title
        .as_deref()
        .map(str::trim)
        .is_some_and(|t| !t.is_empty() && Some(t) != active);
    if !new_topic {
        let intent = non_empty(Some(&p.strategic_intent))
            .or(intent)
            .unwrap_or("...");
        return (
            format!("Strategic Intent: {intent}"),
            format!("> [!STRATEGY]\n> **Intent:** {intent}"),
        );
    }
    let summary = non_empty(p.summary.as_deref()).unwrap_or("...");
    let mut llm = format!("Current topic: \"{current_topic}\"\nTopic summary: {summary}");
    let mut display = format!("## 📂 Topic: **{current_topic}**\n\n**Summary:**\n{summary}");
    let stated = p.strategic_intent.trim();
    if !stated.is_empty() {
        llm.push_str(&format!("\n\nStrategic Intent: {stated}"));
        display.push_str(&format!("\n\n> [!STRATEGY]\n> **Intent:** {stated}"));
    }
    (llm, display)
}

impl Tool for UpdateTopic {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Update Topic Context"
    }

    /// A note on the work: runs without asking, in every mode (gemini-cli's `Kind.Think`,
    /// allowed by its read-only policy).
    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    /// gemini-cli runs it alone: a new chapter starts after what came before it.
    fn runs_alone(&self) -> bool {
        true
    }

    /// A new conversation has no topic yet.
    fn conversation_restarted(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = TopicState::default();
        }
    }

    /// gemini-cli leaves it out of every subagent's tools.
    fn main_session_only(&self) -> bool {
        true
    }

    /// Saying the same again is not a loop of work.
    fn run_once(&self) -> bool {
        false
    }

    fn description(&self) -> String {
        "Marks the narrative of the work. Give `title` and `summary` only when a new chapter (a new phase of the task) begins or the strategy changes; otherwise state just the immediate intent.".into()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The new chapter's title."},
                "summary": {"type": "string", "description": "(OPTIONAL) Several sentences on what the previous chapter achieved and what the new one sets out to do; expected whenever the topic changes."},
                "strategic_intent": {"type": "string", "description": "Required: one sentence saying what you will do next."}
            },
            "required": ["strategic_intent"]
        })
    }

    fn execute(&self, p: Params, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let output = match self.state.lock() {
            Ok(mut state) => {
                let active = state.title.clone();
                state.set(p.title.as_deref(), Some(&p.strategic_intent));
                let (llm, display) = answer(
                    &p,
                    state.title.as_deref(),
                    state.intent.as_deref(),
                    active.as_deref(),
                );
                let topic = json!({"topic": {
                    "title": state.title,
                    "intent": state.intent,
                    "new": llm.starts_with("Current topic: "),
                }});
                ToolOutput::text(llm, display).with_data(topic)
            }
            Err(_) => ToolOutput::error(
                crate::protocol::ToolErrorKind::Unknown,
                "The topic state is unavailable.",
                "Error: topic state unavailable",
            ),
        };
        Box::pin(async move { output })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(title: Option<&str>, summary: Option<&str>, intent: &str) -> Params {
        Params {
            title: title.map(Into::into),
            summary: summary.map(Into::into),
            strategic_intent: intent.into(),
        }
    }

    fn run(state: &mut TopicState, p: &Params) -> (String, String) {
        let active = state.title.clone();
        state.set(p.title.as_deref(), Some(&p.strategic_intent));
        answer(
            p,
            state.title.as_deref(),
            state.intent.as_deref(),
            active.as_deref(),
        )
    }

    #[test]
    fn a_new_title_opens_a_chapter_and_the_same_title_only_restates_the_intent() {
        let mut state = TopicState::default();
        let (llm, display) = run(&mut state, &params(Some(" Fix\nbug "), None, " Read it. "));
        assert_eq!(
            llm,
            "Current topic: \"Fix bug\"\nTopic summary: ...\n\nStrategic Intent: Read it."
        );
        assert_eq!(
            display,
            "## 📂 Topic: **Fix bug**\n\n**Summary:**\n...\n\n> [!STRATEGY]\n> **Intent:** Read it."
        );
        let (llm, display) = run(&mut state, &params(Some("Fix bug"), Some("s"), "Edit it."));
        assert_eq!(llm, "Strategic Intent: Edit it.");
        assert_eq!(display, "> [!STRATEGY]\n> **Intent:** Edit it.");
        let (llm, _) = run(&mut state, &params(None, None, ""));
        assert_eq!(llm, "Strategic Intent: Edit it.");
    }
}
