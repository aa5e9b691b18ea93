//! How the Chat actor starts a turn on a user prompt: the turn's state is set up, MCP
//! resources it references are read, the history is compressed when due, and the
//! prompt (with its notes and extra parts) enters the history before the first request.

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

use super::{small_model, Chat, TurnState, INTERRUPTED_NOTE};
use crate::engine::loop_detection::{FailedCalls, LoopDetector};
use crate::protocol::content::{Part, Role};
use crate::protocol::{
    CompressionOutcome, OpError, SessionEvent, TurnOutcome, UiEvent, UserInput, UserParts,
};

impl Handler<UserInput> for Chat {
    type Result = Result<(), OpError>;

    fn handle(&mut self, msg: UserInput, ctx: &mut Self::Context) -> Self::Result {
        let parts = vec![Part::text(msg.text.clone())];
        self.start_turn(msg.text, parts, ctx)
    }
}

impl Handler<UserParts> for Chat {
    type Result = Result<(), OpError>;

    fn handle(&mut self, msg: UserParts, ctx: &mut Self::Context) -> Self::Result {
        self.start_turn(msg.text, msg.parts, ctx)
    }
}

impl Chat {
    /// Starts a turn on a user prompt (`text` for the front ends, `parts` for the model).
    fn start_turn(
        &mut self,
        text: String,
        parts: Vec<Part>,
        ctx: &mut Context<Self>,
    ) -> Result<(), OpError> {
        if self.turn.is_some() || self.compressing {
            self.emit(UiEvent::Notice(
                "A turn is already running; wait for it or cancel it first.".into(),
            ));
            return Err(OpError::Busy {
                op: "user_turn",
                why: "a turn is already running; wait for it or cancel it first",
            });
        }
        // The first part is the prompt's text as the model (and hooks) get it; the
        // others are added after it when the prompt enters the history.
        let mut parts = parts.into_iter();
        let mut model_text = parts
            .next()
            .and_then(|p| p.text)
            .unwrap_or_else(|| text.clone());
        self.prompt_extra = parts.collect();
        self.prompt_typed = Some(text.clone());
        self.turn_counter += 1;
        let id = self.turn_counter;
        let cancel = CancellationToken::new();
        let read_only =
            self.config.tuning.edit_tools_when_asked && !small_model::asks_for_change(&text);
        self.turn = Some(TurnState {
            id,
            cancel: cancel.clone(),
            rounds: 0,
            start_len: self.history.len(),
            after_function_response: false,
            span: tracing::info_span!("turn", turn = id),
            loops: LoopDetector::default(),
            loop_check: self.config.tuning.loop_detection,
            stop_hook_active: false,
            failures: FailedCalls::default(),
            cut: Default::default(),
            prefetch: if self.config.tuning.look_up_prompt_names {
                small_model::prompt_lookups(&text, &self.listed_files)
            } else {
                Vec::new()
            },
            answer_now: false,
            timed_out: None,
            phase: Default::default(),
            prefetching: false,
            edits: Default::default(),
            read_only,
            system_prompt: read_only
                .then(|| self.prompt_without_edit_tools())
                .flatten(),
            outcome: super::outcome::OutcomeCheck::for_prompt(
                &text,
                self.config.outcome_fs.is_some(),
            ),
            preanswers: super::preanswers::Preanswers::for_prompt(
                &text,
                &self.listed_files,
                self.config.tuning.protect_named_tests,
            ),
        });
        if let Some(note) = test_command_note(&text, self.config.test_command.as_ref()) {
            self.extra_parts.push(note);
        }
        self.start_turn_clock(id, ctx);
        self.emit(UiEvent::TurnStarted {
            turn: id,
            prompt: text,
        });
        let refs = self
            .config
            .mcp
            .as_ref()
            .map(|h| h.resource_refs(&model_text))
            .unwrap_or_default();
        if let Some(files) = self.config.workspace_files.take() {
            model_text = format!("<workspace_files>\n{files}\n</workspace_files>\n\n{model_text}");
        }
        if let Some(context) = self.config.session_context.take() {
            model_text = crate::actors::hooks::with_session_context(model_text, Some(context));
        }
        let addressed = addressed_agents(&model_text, &self.config.agent_names);
        if !addressed.is_empty() {
            // gemini-cli's note, a text part after the prompt.
            let quoted: Vec<String> = addressed.iter().map(|n| format!("'{n}'")).collect();
            self.extra_parts.push(format!("\n<system_note>\nThe user has explicitly selected the following agent(s): {}. Please use the following tool(s) to delegate the task: {}.\n</system_note>\n", addressed.join(", "), quoted.join(", ")));
        }
        if let (false, Some(hub)) = (refs.is_empty(), self.config.mcp.clone()) {
            // `@server:uri`: the resources are read first, then the turn goes on.
            let read = async move { hub.read_resources(&refs).await };
            ctx.spawn(
                read.into_actor(self)
                    .map(move |result, act, ctx| match result {
                        Ok(parts) => {
                            act.extra_parts.extend(parts);
                            act.compress_then_begin(model_text, cancel, ctx);
                        }
                        Err(e) => act.fail(e),
                    }),
            );
            return Ok(());
        }
        self.compress_then_begin(model_text, cancel, ctx);
        Ok(())
    }

    /// Compresses the history first when it is due, then begins the turn.
    fn compress_then_begin(
        &mut self,
        model_text: String,
        cancel: CancellationToken,
        ctx: &mut Context<Self>,
    ) {
        if !self.compression_due() {
            self.begin_turn(model_text, ctx);
            return;
        }
        ctx.spawn(self.compress(false, cancel).map(move |outcome, act, ctx| {
            if let CompressionOutcome::Failed { reason } = outcome {
                act.emit(UiEvent::Notice(format!(
                    "Chat compression failed: {reason}"
                )));
            }
            act.begin_turn(model_text, ctx);
        }));
    }
}

impl Chat {
    /// Adds the user input (closing an unanswered tool-response turn first) and sends
    /// the first model request of the turn.
    fn begin_turn(&mut self, text: String, ctx: &mut Context<Self>) {
        #[cfg(feature = "test-hooks")]
        crate::tools::test_tools::maybe_panic_in_chat(&text);
        let Some(turn) = self.turn.as_ref() else {
            return;
        };
        if turn.cancel.is_cancelled() {
            return self.finish(TurnOutcome::Cancelled);
        }
        if self.config.hooks.is_active() {
            return self.before_agent(text, ctx);
        }
        self.add_prompt(text, None, ctx);
    }

    /// Adds the prompt (with any hook context) and sends the first model request.
    pub(super) fn add_prompt(
        &mut self,
        text: String,
        hook_context: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        if self.turn.as_ref().is_none_or(|t| t.cancel.is_cancelled()) {
            return self.finish(TurnOutcome::Cancelled);
        }
        // The last turn ended on tool results, without the model's answer: the model is
        // told so in the user turn (not in a model turn of its own, as gemini-cli's
        // marker, which a model may take for an answer to repeat).
        let interrupted = self
            .history
            .last()
            .is_some_and(|c| c.role == Role::User && c.has_function_response());
        let start_len = self.history.len();
        let mut content = Self::prompt_content(text, hook_context);
        // The rest of a multi-part prompt (`@path` content) follows its text.
        let extra = std::mem::take(&mut self.prompt_extra);
        content.parts.splice(1..1, extra);
        if interrupted {
            content.parts.insert(0, Part::text(INTERRUPTED_NOTE));
        }
        content.parts.extend(
            std::mem::take(&mut self.extra_parts)
                .into_iter()
                .map(crate::protocol::content::Part::text),
        );
        if let Some(part) = (self.config.mcp.as_ref())
            .and_then(|h| h.take_instructions())
            .and_then(|i| crate::engine::history::loaded_context_part(&self.history, &i))
        {
            content.parts.insert(0, part);
        }
        let sent: String = content
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect();
        let display = self.prompt_typed.take().filter(|typed| *typed != sent);
        self.record(SessionEvent::User {
            parts: content.parts.clone(),
            display,
        });
        self.history.push(content);
        if let Some(turn) = self.turn.as_mut() {
            turn.start_len = start_len;
        }
        self.first_request(ctx);
    }
}

impl Chat {
    /// The system prompt rendered for the session's tools but those that edit files
    /// (None: the session has no template to render, or no such tool).
    fn prompt_without_edit_tools(&self) -> Option<String> {
        let memory = self.config.memory.as_ref()?;
        let facts = &self.config.tool_facts;
        let prompt = &memory.prompt;
        if !prompt.tools.iter().any(|t| facts.get(&t.name).is_edit()) {
            return None;
        }
        let tools = (prompt.tools.iter())
            .filter(|t| !facts.get(&t.name).is_edit())
            .cloned()
            .collect();
        let without = crate::engine::prompt::SystemPrompt {
            tools,
            ..prompt.clone()
        };
        Some(without.render(&memory.report.text))
    }
}

/// The note that tells the model how the project runs its tests, for a prompt that
/// speaks of tests (`model.find_test_command`).
fn test_command_note(
    prompt: &str,
    found: Option<&crate::engine::test_command::TestCommand>,
) -> Option<String> {
    let found = found.filter(|_| crate::engine::request_intent::mentions_tests(prompt))?;
    Some(format!(
        "(Note from Troupe: {} says the tests run with `{}`; run them with that command.)",
        found.source, found.command
    ))
}

/// The agents a prompt addresses, in order: each `@name` word whose `name` is one of
/// `agents` (gemini-cli's at-command rule; other `@` words are files or resources).
fn addressed_agents<'a>(prompt: &str, agents: &'a [String]) -> Vec<&'a str> {
    let mut found: Vec<&str> = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(name) = word.strip_prefix('@') else {
            continue;
        };
        let name = name.trim_end_matches([',', ':', '.', '?', '!']);
        if let Some(agent) = agents.iter().find(|a| *a == name) {
            if !found.contains(&agent.as_str()) {
                found.push(agent);
            }
        }
    }
    found
}

#[cfg(test)]
mod addressed_tests {
    use super::addressed_agents;

    #[test]
    fn each_known_agent_named_with_an_at_is_addressed_once() {
        let agents = vec!["generalist".to_string(), "cli_help".to_string()];
        assert_eq!(
            addressed_agents("@generalist fix the tests", &agents),
            ["generalist"]
        );
        assert_eq!(
            addressed_agents("  @cli_help: how? and @generalist, @cli_help", &agents),
            ["cli_help", "generalist"]
        );
        assert!(addressed_agents("@src/main.rs explain", &agents).is_empty());
        assert!(addressed_agents("mail me at x@generalist", &agents).is_empty());
    }
}
