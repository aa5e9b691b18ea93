//! The Chat actor: owns the conversation and runs the turn loop — model → tool calls →
//! Scheduler → function responses → model … — until the model answers without calling
//! a tool, the turn is cancelled, or the round limit is reached. Every step runs as a
//! spawned future (`ctx.spawn`), so the actor keeps answering (e.g. `CancelTurn`).
//!
//! History rules: the comprehensive history keeps everything; the model is sent the
//! curated one (§9.1). A failed model call is retried (`model_call`); when it fails for
//! good, the user input of the turn is rolled back unless tool results already answer
//! it. Every function call is answered by exactly one function response, whatever
//! happened to the call. Before a turn, the history is compressed when the last prompt
//! passed the threshold (`compress`).

mod answers;
mod compress;
mod cut_answer;
mod handlers;
mod hooks;
mod loop_guard;
mod model_call;
mod outcome;
mod preanswers;
mod rounds;
mod small_model;
mod tuning;
mod turn_clock;
mod turn_start;
mod undo;

pub use tuning::ChatTuning;

use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::engine::loop_detection::{FailedCalls, LoopDetector};
use crate::engine::model::ModelRequest;
use crate::engine::prompt::SystemPrompt;
use crate::engine::request_history::RequestHistory;
use crate::platform::context_files::ContextFiles;
use crate::protocol::content::{Content, FunctionCall, FunctionDeclaration, Part, Usage};
use crate::protocol::EventSink;
use crate::protocol::{MemoryReport, SessionEvent, TakeCheckpoint, TurnOutcome, UiEvent};
use crate::providers::ModelClient;

use super::scheduler::Scheduler;
use model_call::ModelCall;

/// What the Chat actor needs to run.
pub struct ChatConfig {
    pub model: Arc<dyn ModelClient>,
    pub model_name: String,
    pub system_prompt: Option<String>,
    pub tools: Arc<Vec<FunctionDeclaration>>,
    pub max_turns: u32,
    /// Append every model request body (Gemini JSON) to this file, one per line.
    pub request_log: Option<PathBuf>,
    /// Retries, sampling and compression.
    pub tuning: ChatTuning,
    /// The context files behind the system prompt, for `Memory` (show / refresh).
    pub memory: Option<ChatMemory>,
    /// Told of every turn added, for the session file (none: not recorded).
    pub recorder: Option<Recipient<SessionEvent>>,
    /// The history to start from (a resumed session).
    pub history: Vec<Content>,
    /// Snapshots the workspace before edit calls (`replace`, `write_file`) run
    /// (checkpointing).
    pub checkpointer: Option<Recipient<TakeCheckpoint>>,
    /// Asked whether a turn caught in a loop may go on (the REPL asks the user; the
    /// headless front refuses). None: a loop always ends the turn.
    pub approver: Option<crate::actors::approvals::Approvals>,
    /// MCP servers: their tools are declared as discovered so far at each request, and
    /// their instructions go into the first user turn.
    pub mcp: Option<Arc<crate::mcp::McpHub>>,
    /// The session's hooks (BeforeAgent, BeforeModel, …; see `chat/hooks.rs`).
    pub hooks: crate::protocol::hooks::HookClient,
    /// SessionStart's `additionalContext`, put before the first prompt the Chat gets
    /// (whichever front end sends it).
    pub session_context: Option<String>,
    /// The workspace's files (`model.workspace_listing`), put before the first prompt
    /// of a new session.
    pub workspace_files: Option<String>,
    /// How the project says its tests run (`model.find_test_command`): told to the
    /// model in each prompt that speaks of tests.
    pub test_command: Option<crate::engine::test_command::TestCommand>,
    /// How a failed turn's edits are put back (`model.undo_failed_turn`; None: off).
    pub undo: Option<UndoFiles>,
    /// How a turn's outcome is checked against its prompt: the workspace is compared
    /// before and after (`model.check_outcome`; None: off).
    pub outcome_fs: Option<crate::platform::filesystem::FsClient>,
    /// The facts of the registered tools (which calls run once, which are edits), from
    /// the registry.
    pub tool_facts: Arc<crate::protocol::ToolFactsTable>,
    /// The agents `invoke_agent` can start: a prompt that starts with `@name` of one
    /// of them is steered to it.
    pub agent_names: Vec<String>,
    /// The declarations offered instead of [`ChatConfig::tools`] while the session is
    /// in plan mode (`None`: the same in every mode, as a subagent's).
    pub plan_tools: Option<PlanTools>,
}

/// What a session declares in plan mode, and how the Chat knows the mode.
pub struct PlanTools {
    /// The session's approval mode.
    pub mode: Arc<dyn crate::tools::SessionMode>,
    /// The declarations offered in plan mode.
    pub tools: Arc<Vec<FunctionDeclaration>>,
    /// What the system prompt adds in plan mode.
    pub prompt_section: String,
}

/// What undoing a failed turn's edits needs: the one way to write files, and the
/// workspace (to name the files for the user).
pub struct UndoFiles {
    pub fs: crate::platform::filesystem::FsClient,
    pub workspace: Arc<crate::platform::workspace::Workspace>,
}

/// How the system prompt is rebuilt when the context files are read again.
pub struct ChatMemory {
    pub prompt: SystemPrompt,
    pub context: Arc<ContextFiles>,
    /// What the current system prompt was built from.
    pub report: MemoryReport,
}

/// The Chat actor.
pub struct Chat {
    config: ChatConfig,
    scheduler: Addr<Scheduler>,
    events: EventSink,
    history: Vec<Content>,
    turn: Option<TurnState>,
    turn_counter: u64,
    call_counter: u64,
    /// Prompt tokens of the last model call (decides compression).
    last_prompt_tokens: u64,
    /// An automatic compression failed; only a forced one is tried again.
    compression_failed: bool,
    /// A compression is running: the history must not change under it.
    compressing: bool,
    /// The parts of the starting turn's prompt after its text (`@path` content).
    prompt_extra: Vec<Part>,
    /// The starting turn's prompt as the user typed it (the session file's
    /// `displayContent` when the model gets something else).
    prompt_typed: Option<String>,
    /// The share of the declared context window requests are fitted to; lowered when
    /// the server refuses a request as too large (the estimate was short for it).
    window_scale: f64,
    /// Token usage of the model answer being handled, recorded with its turn.
    model_usage: Option<Usage>,
    /// Text parts that follow the next user input (MCP resources it references).
    extra_parts: Vec<String>,
    /// The sizes of the history's function responses, measured once each.
    sizes: std::cell::RefCell<crate::engine::context_budget::SizeMemo>,
    /// The files of the workspace listing (what a prompt's file names are matched to).
    listed_files: Vec<String>,
    /// The curated history of the last request, which the next one extends.
    sent: std::cell::RefCell<RequestHistory>,
    /// The longest a model answer of this session took (what the turn time limit is
    /// fitted to).
    slowest_answer: std::time::Duration,
}

struct TurnState {
    id: u64,
    cancel: CancellationToken,
    rounds: u32,
    /// History length before the user input of this turn (for rollback).
    start_len: usize,
    after_function_response: bool,
    span: tracing::Span,
    /// Loop detection of this turn (off when the user chose to let it go on).
    loops: LoopDetector,
    loop_check: bool,
    /// An AfterAgent hook already sent the model back to work once this turn.
    stop_hook_active: bool,
    /// Failures of each call this turn (loop detection's early catch of a call that
    /// keeps failing; taken by a round while it runs).
    failures: FailedCalls,
    /// Answers cut at the output limit with calls in them, and what the next request
    /// does about it (`cut_answer`).
    cut: cut_answer::CutAnswers,
    /// The calls run before the first answer: reads of the files the prompt names, or
    /// searches for the code names it uses (`model.look_up_prompt_names`).
    prefetch: Vec<FunctionCall>,
    /// The last round repeated a call that had succeeded: the next answer may not call
    /// a tool (`model.answer_after_repeat`).
    answer_now: bool,
    /// The turn ran past its time limit and was cancelled for it: what the message
    /// says of it (`turn_clock`).
    timed_out: Option<String>,
    /// What the turn is doing (what a time limit cuts).
    phase: turn_clock::TurnPhase,
    /// The round running is the prompt's lookups (`model.look_up_prompt_names`).
    prefetching: bool,
    /// The files the turn's edits changed (`model.undo_failed_turn`).
    edits: undo::TurnEdits,
    /// The prompt asks for no change: the tools that edit files are not offered
    /// (`model.edit_tools_when_asked`).
    read_only: bool,
    /// What the prompt asks for and what the turn did about it (`outcome`).
    outcome: outcome::OutcomeCheck,
    /// What the turn answers without running (`preanswers`).
    preanswers: preanswers::Preanswers,
    /// The system prompt of a turn whose tools differ from the session's (a question
    /// gets no tool that edits files, and its prompt describes none).
    system_prompt: Option<String>,
}

pub use crate::protocol::{GetHistory, SetHistory, StopChat};

impl Chat {
    pub fn new(mut config: ChatConfig, scheduler: Addr<Scheduler>, events: EventSink) -> Self {
        let history = std::mem::take(&mut config.history);
        let listed_files = config
            .workspace_files
            .as_deref()
            .map(small_model::listed_files)
            .unwrap_or_default();
        Self {
            config,
            scheduler,
            events,
            history,
            turn: None,
            turn_counter: 0,
            call_counter: 0,
            last_prompt_tokens: 0,
            compression_failed: false,
            compressing: false,
            prompt_extra: Vec::new(),
            prompt_typed: None,
            window_scale: 1.0,
            model_usage: None,
            extra_parts: Vec::new(),
            sizes: Default::default(),
            listed_files,
            sent: Default::default(),
            slowest_answer: std::time::Duration::ZERO,
        }
    }

    fn emit(&self, event: UiEvent) {
        self.events.do_send(event);
    }

    /// Tells the session recorder (if any) what was added to the history.
    fn record(&self, event: SessionEvent) {
        if let Some(recorder) = &self.config.recorder {
            recorder.do_send(event);
        }
    }

    fn request(&self) -> ModelRequest {
        let window = (self.config.tuning.context_window as f64 * self.window_scale) as u64;
        let prefix = self.prefix_tokens();
        let sizes = &mut *self.sizes.borrow_mut();
        let (contents, dropped) =
            self.sent
                .borrow_mut()
                .contents(&self.history, prefix, window, |c| sizes.content_len(c));
        sizes.tidy();
        if dropped > 0 {
            self.emit(UiEvent::Notice(format!(
                "The conversation does not fit the model's context window ({} tokens): its {dropped} oldest entries are left out of the request.",
                self.config.tuning.context_window
            )));
        }
        let mut request = ModelRequest::new(self.config.model_name.clone(), Vec::new());
        request.contents = contents;
        request.system_instruction = self.config.system_prompt.clone();
        request.tools = match &self.config.plan_tools {
            Some(plan) if plan.mode.approval_mode() == crate::protocol::ApprovalMode::Plan => {
                request.system_instruction = Some(match request.system_instruction.take() {
                    Some(base) => format!("{base}\n\n{}", plan.prompt_section),
                    None => plan.prompt_section.clone(),
                });
                plan.tools.clone()
            }
            _ => self.config.tools.clone(),
        };
        if let Some(hub) = &self.config.mcp {
            std::sync::Arc::make_mut(&mut request.tools)
                .extend(hub.registry.dynamic().declarations());
        }
        request.temperature = self.config.tuning.temperature;
        request.max_output_tokens = self.config.tuning.max_output_tokens;
        if let Some(turn) = &self.turn {
            turn.cut.apply(&mut request);
            turn.outcome.apply(&mut request);
            request.require_call = self.config.tuning.first_answer_calls_a_tool && turn.rounds == 0;
            if turn.read_only {
                small_model::withhold_edit_tools(&mut request, &self.config.tool_facts);
            }
            if let Some(prompt) = &turn.system_prompt {
                request.system_instruction = Some(prompt.clone());
            }
            if turn.answer_now {
                small_model::forbid_calls(&mut request);
            }
        }
        request
    }

    fn request_model(&mut self, ctx: &mut Context<Self>) {
        let request = self.request();
        if self.config.hooks.is_active() {
            return self.request_model_hooked(request, ctx);
        }
        self.send_request(request, ctx);
    }

    fn send_request(&mut self, request: ModelRequest, ctx: &mut Context<Self>) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.outcome.call_required = request.require_call && !request.forbid_call;
        let streamed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        turn.phase = turn_clock::TurnPhase::Model {
            started: std::time::Instant::now(),
            streamed: streamed.clone(),
        };
        let turn = &*turn;
        let call = ModelCall {
            model: self.config.model.clone(),
            request,
            policy: self.config.tuning.retry.clone(),
            after_function_response: turn.after_function_response,
            events: self.events.clone(),
            cancel: turn.cancel.clone(),
            request_log: self.config.request_log.clone(),
            loop_check: turn.loop_check,
            streamed,
        };
        let span = tracing::info_span!(parent: &turn.span, "model_request", round = turn.rounds);
        self.events
            .do_send(UiEvent::ModelRequest { round: turn.rounds });
        let future = call.run();
        ctx.spawn(
            tracing::Instrument::instrument(future, span)
                .into_actor(self)
                .map(|result, act, ctx| act.after_model(result, ctx)),
        );
    }

    /// The history replaced whole: what was already sent of it is forgotten too.
    fn set_history(&mut self, history: Vec<Content>) {
        self.history = history;
        self.sent.get_mut().reset();
    }

    /// A model call failed for good: the user input of this turn is rolled back unless
    /// tool results already answer it.
    fn fail(&mut self, message: String) {
        if let Some(turn) = &self.turn {
            if !turn.after_function_response {
                self.history.truncate(turn.start_len);
                self.sent.get_mut().reset();
                self.record(SessionEvent::RolledBack);
            }
        }
        tracing::warn!(%message, "turn failed");
        self.finish(TurnOutcome::Failed { message });
    }

    fn finish(&mut self, mut outcome: TurnOutcome) {
        if let Some(mut turn) = self.turn.take() {
            if let (Some(message), TurnOutcome::Cancelled) = (&turn.timed_out, &outcome) {
                outcome = TurnOutcome::Failed {
                    message: message.clone(),
                };
            }
            let failed = matches!(
                outcome,
                TurnOutcome::Failed { .. }
                    | TurnOutcome::LoopDetected { .. }
                    | TurnOutcome::MaxTurns { .. }
            );
            let edits = std::mem::take(&mut turn.edits);
            if let (true, false, Some(undo)) = (failed, edits.is_empty(), &self.config.undo) {
                let _enter = turn.span.enter();
                tracing::info!(
                    ?outcome,
                    rounds = turn.rounds,
                    "turn failed; undoing its edits"
                );
                let (fs, workspace) = (undo.fs.clone(), undo.workspace.clone());
                let events = self.events.clone();
                actix::spawn(async move {
                    let said = edits.undo(fs, |p| workspace.display_relative(p)).await;
                    if matches!(outcome, TurnOutcome::MaxTurns { .. }) && !said.is_empty() {
                        events.do_send(UiEvent::Notice(format!("The turn failed, so {said}.")));
                    }
                    events.do_send(UiEvent::TurnFinished(undo::with_undo_note(outcome, &said)));
                });
                return;
            }
            let _enter = turn.span.enter();
            tracing::info!(?outcome, rounds = turn.rounds, "turn finished");
        }
        self.emit(UiEvent::TurnFinished(outcome));
    }
}

impl Actor for Chat {
    type Context = Context<Self>;
}

/// The note that opens a user turn whose previous turn ended before the model
/// answered its tool results (cancelled, or stopped at the round limit).
pub const INTERRUPTED_NOTE: &str = "(Note from Troupe, not from the user: your previous response was interrupted before it completed. Do not repeat this note; answer the message below.)";

pub use crate::protocol::CHAT_STOPPED;

/// A Chat dropped while a turn runs was torn down by a panic (a normal end finishes
/// the turn first): the front end hears that the turn failed instead of waiting.
impl Drop for Chat {
    fn drop(&mut self) {
        if self.turn.take().is_some() {
            tracing::error!("the chat actor ended in the middle of a turn");
            self.emit(UiEvent::TurnFinished(TurnOutcome::Failed {
                message: CHAT_STOPPED.into(),
            }));
        }
    }
}
