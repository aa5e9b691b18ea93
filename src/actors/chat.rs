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
mod hooks;
mod loop_guard;
mod model_call;
mod small_model;
mod tuning;
mod undo;

pub use tuning::ChatTuning;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::engine::history::{assign_call_ids, TurnAssembler};
use crate::engine::loop_detection::{FailedCalls, LoopDetector};
use crate::engine::model::ModelRequest;
use crate::engine::prompt::SystemPrompt;
use crate::engine::request_history::RequestHistory;
use crate::platform::context_files::ContextFiles;
use crate::protocol::content::{Content, FunctionCall, FunctionDeclaration, Part, Role, Usage};
use crate::protocol::{
    ApprovalRequest, CancelTurn, CompressHistory, CompressionOutcome, Memory, MemoryReport,
    Schedule, SeedHistory, SessionEvent, TakeCheckpoint, TurnOutcome, UiEvent, UserInput,
    UserParts,
};
use crate::providers::{ModelClient, ModelError};

use super::scheduler::Scheduler;
use crate::engine::loop_detection::LoopKind;
use model_call::{CallFailure, ModelCall};

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
    /// Snapshots the workspace before `replace`/`write_file` calls run (checkpointing).
    pub checkpointer: Option<Recipient<TakeCheckpoint>>,
    /// Asked whether a turn caught in a loop may go on (the REPL asks the user; the
    /// headless front refuses). None: a loop always ends the turn.
    pub approver: Option<Recipient<ApprovalRequest>>,
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
    /// How a failed turn's edits are put back (`model.undo_failed_turn`; None: off).
    pub undo: Option<UndoFiles>,
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
    events: Recipient<UiEvent>,
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
    /// The turn ran past `model.turn_time_limit_secs` and was cancelled for it.
    timed_out: bool,
    /// The round running is the prompt's lookups (`model.look_up_prompt_names`).
    prefetching: bool,
    /// The files the turn's edits changed (`model.undo_failed_turn`).
    edits: undo::TurnEdits,
    /// The prompt asks for no change: the tools that edit files are not offered
    /// (`model.edit_tools_when_asked`).
    read_only: bool,
}

/// The conversation so far (comprehensive history).
#[derive(Message)]
#[rtype(result = "Vec<Content>")]
pub struct GetHistory;

/// Replaces the history (used by `/clear` and compression).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetHistory(pub Vec<Content>);

/// Stops the Chat (the session's shutdown): a running turn ends as cancelled first.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopChat;

impl Chat {
    pub fn new(
        mut config: ChatConfig,
        scheduler: Addr<Scheduler>,
        events: Recipient<UiEvent>,
    ) -> Self {
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
        request.tools = self.config.tools.clone();
        if let Some(hub) = &self.config.mcp {
            std::sync::Arc::make_mut(&mut request.tools)
                .extend(hub.registry.dynamic().declarations());
        }
        request.temperature = self.config.tuning.temperature;
        request.max_output_tokens = self.config.tuning.max_output_tokens;
        if let Some(turn) = &self.turn {
            turn.cut.apply(&mut request);
            request.require_call = self.config.tuning.first_answer_calls_a_tool && turn.rounds == 0;
            if turn.read_only {
                small_model::withhold_edit_tools(&mut request);
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
        let Some(turn) = &self.turn else { return };
        let call = ModelCall {
            model: self.config.model.clone(),
            request,
            policy: self.config.tuning.retry.clone(),
            after_function_response: turn.after_function_response,
            events: self.events.clone(),
            cancel: turn.cancel.clone(),
            request_log: self.config.request_log.clone(),
            loop_check: turn.loop_check,
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

    fn on_model_done(
        &mut self,
        result: Result<(TurnAssembler, Option<LoopKind>), CallFailure>,
        ctx: &mut Context<Self>,
    ) {
        let Some(turn) = self.turn.as_ref() else {
            return;
        };
        if turn.cancel.is_cancelled() {
            self.finish(TurnOutcome::Cancelled);
            return;
        }
        let mut assembled = match result {
            Ok((_, Some(kind))) => return self.on_loop(kind, None, ctx),
            Ok((a, None)) => a,
            Err(CallFailure {
                error: ModelError::Cancelled,
                ..
            }) => return self.finish(TurnOutcome::Cancelled),
            Err(failure) if failure.error.is_context_overflow() && self.window_scale > 0.2 => {
                // Fit the request to a smaller share of the window and send it again.
                self.window_scale *= 0.6;
                self.emit(UiEvent::Notice(format!(
                    "The server refused the request as too large for the context window ({}); sending it again without the oldest history.",
                    failure.error
                )));
                return self.request_model(ctx);
            }
            Err(failure) => return self.fail(failure.message()),
        };
        if let Some(usage) = assembled.usage {
            self.last_prompt_tokens = usage.prompt_token_count;
        }
        let cut = assembled.finish_reason.as_deref() == Some("MAX_TOKENS");
        if cut && !assembled.has_calls() {
            self.emit(UiEvent::Notice(format!(
                "The answer was cut at the output limit ({} tokens, model.max_output_tokens).",
                self.config.tuning.max_output_tokens.unwrap_or_default()
            )));
        }
        let mut content = assembled.take_content();
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        // Ids are given in the history's own parts; the Scheduler gets the one copy.
        for part in content.parts.iter_mut() {
            if let Some(call) = part.function_call.as_mut().map(Arc::make_mut) {
                assign_call_ids(std::slice::from_mut(call), millis, &mut self.call_counter);
                // The history keeps the arguments all session: no spare room.
                crate::protocol::content::compact(&mut call.args);
            }
        }
        self.model_usage = assembled.usage;
        // The Scheduler shares the history's calls (the arguments are not copied).
        let calls: Vec<Arc<FunctionCall>> = content
            .parts
            .iter()
            .filter_map(|p| p.function_call.clone())
            .collect();
        if cut && !calls.is_empty() {
            // A plan cut in the middle is not run (not gemini-cli's, which runs it).
            return self.on_cut_calls(calls.len(), ctx);
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.cut.answered();
        }
        if calls.is_empty() {
            let text = content.text();
            self.push_model_turn(content);
            self.complete_turn(text, ctx);
            return;
        }
        let looped = self.turn.as_mut().filter(|t| t.loop_check).and_then(|t| {
            t.loops
                .check_round(&calls)
                .or(t.failures.check_round(&calls))
        });
        if let Some(kind) = looped {
            return self.on_loop(kind, Some((content, calls)), ctx);
        }
        self.run_calls(content, calls, ctx);
    }

    /// Adds a model turn to the history and to the session file.
    fn push_model_turn(&mut self, content: Content) {
        if let Some(recorder) = &self.config.recorder {
            recorder.do_send(SessionEvent::Model {
                content: content.clone(),
                usage: self.model_usage.take(),
            });
        }
        self.history.push(content);
    }

    /// Records the model turn that asked for `calls` and hands them to the Scheduler.
    fn run_calls(
        &mut self,
        content: Content,
        calls: Vec<Arc<FunctionCall>>,
        ctx: &mut Context<Self>,
    ) {
        self.push_model_turn(content);
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.rounds += 1;
        let failures = turn.loop_check.then(|| std::mem::take(&mut turn.failures));
        let round = answers::RoundAnswers::new(&calls, self.config.recorder.clone(), failures);
        // Identical calls of one answer run once; every copy gets the answer.
        let to_run = round.to_run();
        let (answers, answered) = tokio::sync::mpsc::unbounded_channel();
        let schedule = Schedule {
            turn: turn.id,
            calls: to_run,
            cancel: turn.cancel.clone(),
            answers,
        };
        let checkpoint = self
            .config
            .checkpointer
            .clone()
            .filter(|_| {
                schedule
                    .calls
                    .iter()
                    .any(|c| c.name == "replace" || c.name == "write_file")
            })
            .map(|c| {
                c.send(TakeCheckpoint {
                    history: self.history.clone(),
                    calls: schedule.calls.iter().map(|c| (**c).clone()).collect(),
                })
            });
        let scheduler = self.scheduler.clone();
        let run = async move {
            if let Some(snapshot) = checkpoint {
                let _ = snapshot.await;
            }
            // The answers are gathered as they come, while the batch runs.
            futures::join!(scheduler.send(schedule), round.gather(answered))
        };
        ctx.spawn(
            run.into_actor(self)
                .map(|(sent, round), act, ctx| act.on_tools_done(sent, round, ctx)),
        );
    }

    fn on_tools_done(
        &mut self,
        sent: Result<(), MailboxError>,
        round: answers::RoundAnswers,
        ctx: &mut Context<Self>,
    ) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let failure = match sent {
            Ok(()) => "The scheduler ended the batch without answering the call".to_string(),
            Err(e) => format!("The scheduler was unavailable: {e}"),
        };
        let answers::Answered {
            parts,
            all_cancelled,
            sizes,
            failures,
            copies,
            repeated,
            edits,
        } = round.finish(&failure);
        for edit in &edits {
            turn.edits.note(edit);
        }
        turn.answer_now = repeated && self.config.tuning.answer_after_repeat;
        if std::mem::take(&mut turn.prefetching) {
            // The reads before the first answer are not the model's: its own first
            // read of such a file is no repeat.
            turn.failures = FailedCalls::default();
        }
        // The front ends see every call: a copy, once its first call is answered.
        for copy in copies {
            self.events.do_send(UiEvent::ToolCallRequested {
                call_id: copy.call_id.clone(),
                name: copy.name.clone(),
                args: copy.args.clone(),
            });
            self.events.do_send(UiEvent::ToolCallCompleted(copy));
        }
        if let Some(failures) = failures {
            turn.failures = failures;
        }
        self.sizes.get_mut().absorb(sizes);
        self.history.push(Content {
            role: Role::User,
            parts,
        });
        turn.after_function_response = true;
        if turn.cancel.is_cancelled() || all_cancelled {
            self.finish(TurnOutcome::Cancelled);
            return;
        }
        if turn.rounds >= self.config.max_turns {
            let limit = self.config.max_turns;
            self.finish(TurnOutcome::MaxTurns { limit });
            return;
        }
        let cancel = turn.cancel.clone();
        if !self.compression_due() {
            return self.request_model(ctx);
        }
        // The history outgrew its share of the window during the turn: compress
        // before the next request (gemini-cli checks before every request).
        ctx.spawn(self.compress(false, cancel).map(|outcome, act, ctx| {
            if let CompressionOutcome::Failed { reason } = outcome {
                act.emit(UiEvent::Notice(format!(
                    "Chat compression failed: {reason}"
                )));
            }
            act.request_model(ctx);
        }));
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
            if turn.timed_out && outcome == TurnOutcome::Cancelled {
                let secs = self.config.tuning.turn_time_limit.unwrap_or_default();
                outcome = TurnOutcome::Failed {
                    message: small_model::time_limit_message(secs.as_secs()),
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

/// What a turn fails with when the Chat actor is torn down in the middle of it.
pub const CHAT_STOPPED: &str =
    "Internal error: the chat actor stopped in the middle of the turn (a panic); the session ends.";

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

impl Handler<UserInput> for Chat {
    type Result = ();

    fn handle(&mut self, msg: UserInput, ctx: &mut Self::Context) {
        let parts = vec![Part::text(msg.text.clone())];
        self.start_turn(msg.text, parts, ctx);
    }
}

impl Handler<UserParts> for Chat {
    type Result = ();

    fn handle(&mut self, msg: UserParts, ctx: &mut Self::Context) {
        self.start_turn(msg.text, msg.parts, ctx);
    }
}

impl Chat {
    /// Starts a turn on a user prompt (`text` for the front ends, `parts` for the model).
    fn start_turn(&mut self, text: String, parts: Vec<Part>, ctx: &mut Context<Self>) {
        if self.turn.is_some() || self.compressing {
            self.emit(UiEvent::Notice(
                "A turn is already running; wait for it or cancel it first.".into(),
            ));
            return;
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
            timed_out: false,
            prefetching: false,
            edits: Default::default(),
            read_only: self.config.tuning.edit_tools_when_asked
                && !small_model::asks_for_change(&text),
        });
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
        if let (false, Some(hub)) = (refs.is_empty(), self.config.mcp.clone()) {
            // `@server:uri`: the resources are read first, then the turn goes on.
            let read = async move { hub.read_resources(&refs).await };
            ctx.spawn(
                read.into_actor(self)
                    .map(move |result, act, ctx| match result {
                        Ok(parts) => {
                            act.extra_parts = parts;
                            act.compress_then_begin(model_text, cancel, ctx);
                        }
                        Err(e) => act.fail(e),
                    }),
            );
            return;
        }
        self.compress_then_begin(model_text, cancel, ctx);
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
    fn add_prompt(&mut self, text: String, hook_context: Option<String>, ctx: &mut Context<Self>) {
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
        if !self.look_up_prompt_names_first(ctx) {
            self.request_model(ctx);
        }
    }
}

impl Handler<CancelTurn> for Chat {
    type Result = ();

    fn handle(&mut self, _: CancelTurn, _: &mut Self::Context) {
        if let Some(turn) = &self.turn {
            turn.cancel.cancel();
        }
    }
}

impl Handler<StopChat> for Chat {
    type Result = ();

    fn handle(&mut self, _: StopChat, ctx: &mut Self::Context) {
        if let Some(turn) = &self.turn {
            turn.cancel.cancel();
            self.finish(TurnOutcome::Cancelled);
        }
        ctx.stop();
    }
}

impl Handler<GetHistory> for Chat {
    type Result = MessageResult<GetHistory>;

    fn handle(&mut self, _: GetHistory, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.history.clone())
    }
}

impl Handler<crate::protocol::SetModelName> for Chat {
    type Result = ();

    fn handle(&mut self, msg: crate::protocol::SetModelName, _: &mut Self::Context) {
        self.config.model_name = msg.0;
    }
}

impl Handler<SetHistory> for Chat {
    type Result = ();

    fn handle(&mut self, msg: SetHistory, _: &mut Self::Context) {
        if self.turn.is_none() {
            self.history = msg.0;
            self.sent.get_mut().reset();
            self.record(SessionEvent::Replaced(self.history.clone()));
        }
    }
}

impl Handler<SeedHistory> for Chat {
    type Result = ();

    fn handle(&mut self, msg: SeedHistory, _: &mut Self::Context) {
        if self.turn.is_none() {
            self.history = msg.0;
            self.sent.get_mut().reset();
        }
    }
}

impl Handler<CompressHistory> for Chat {
    type Result = ResponseActFuture<Self, CompressionOutcome>;

    fn handle(&mut self, msg: CompressHistory, _: &mut Self::Context) -> Self::Result {
        if self.turn.is_some() || self.compressing {
            return Box::pin(fut::ready(CompressionOutcome::Noop {
                reason: "a turn or a compression is running".into(),
            }));
        }
        self.compress(msg.force, CancellationToken::new())
    }
}

impl Handler<Memory> for Chat {
    type Result = ResponseActFuture<Self, MemoryReport>;

    fn handle(&mut self, msg: Memory, _: &mut Self::Context) -> Self::Result {
        let Some(memory) = &self.config.memory else {
            return Box::pin(fut::ready(MemoryReport::default()));
        };
        if !msg.refresh {
            return Box::pin(fut::ready(memory.report.clone()));
        }
        let context = memory.context.clone();
        let reload = async move { tokio::task::spawn_blocking(move || context.load()).await };
        Box::pin(reload.into_actor(self).map(|loaded, act, _| {
            let Some(memory) = act.config.memory.as_mut() else {
                return MemoryReport::default();
            };
            match loaded {
                Ok(loaded) => {
                    memory.report = MemoryReport {
                        files: loaded.paths(),
                        text: loaded.text(),
                    };
                    act.config.system_prompt = Some(memory.prompt.render(&memory.report.text));
                }
                Err(e) => tracing::warn!(error = %e, "cannot reload context files"),
            }
            memory.report.clone()
        }))
    }
}
