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

mod compress;
mod hooks;
mod model_call;
mod tuning;

pub use tuning::ChatTuning;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::engine::content::{Content, FunctionCall, FunctionDeclaration, Role};
use crate::engine::context_files::ContextFiles;
use crate::engine::history::{assign_call_ids, curated, TurnAssembler};
use crate::engine::model::ModelRequest;
use crate::engine::prompt::SystemPrompt;
use crate::engine::responses::error_parts;
use crate::protocol::{
    CallStatus, CancelTurn, CompletedCall, CompressHistory, CompressionOutcome, Memory,
    MemoryReport, Schedule, TurnOutcome, UiEvent, UserInput,
};
use crate::providers::{ModelClient, ModelError};

use super::scheduler::Scheduler;
use model_call::{CallFailure, ModelCall};

/// What the Chat actor needs to run.
pub struct ChatConfig {
    pub model: Arc<dyn ModelClient>,
    pub model_name: String,
    pub system_prompt: Option<String>,
    pub tools: Vec<FunctionDeclaration>,
    pub max_turns: u32,
    /// Append every model request body (Gemini JSON) to this file, one per line.
    pub request_log: Option<PathBuf>,
    /// Retries, sampling and compression.
    pub tuning: ChatTuning,
    /// The context files behind the system prompt, for `Memory` (show / refresh).
    pub memory: Option<ChatMemory>,
    /// The session's hooks (BeforeAgent, BeforeModel, …; see `chat/hooks.rs`).
    pub hooks: crate::hooks::HookClient,
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
}

struct TurnState {
    id: u64,
    cancel: CancellationToken,
    rounds: u32,
    /// History length before the user input of this turn (for rollback).
    start_len: usize,
    after_function_response: bool,
    /// Id and name of each call of the round (to answer them if the Scheduler fails).
    pending: Vec<(String, String)>,
    span: tracing::Span,
    /// An AfterAgent hook already sent the model back to work once this turn.
    stop_hook_active: bool,
}

/// The conversation so far (comprehensive history).
#[derive(Message)]
#[rtype(result = "Vec<Content>")]
pub struct GetHistory;

/// Replaces the history (used by `/clear` and compression).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetHistory(pub Vec<Content>);

impl Chat {
    pub fn new(config: ChatConfig, scheduler: Addr<Scheduler>, events: Recipient<UiEvent>) -> Self {
        Self {
            config,
            scheduler,
            events,
            history: Vec::new(),
            turn: None,
            turn_counter: 0,
            call_counter: 0,
            last_prompt_tokens: 0,
            compression_failed: false,
            compressing: false,
        }
    }

    fn emit(&self, event: UiEvent) {
        self.events.do_send(event);
    }

    fn request(&self) -> ModelRequest {
        let mut request = ModelRequest::new(self.config.model_name.clone(), curated(&self.history));
        request.system_instruction = self.config.system_prompt.clone();
        request.tools = self.config.tools.clone();
        request.temperature = self.config.tuning.temperature;
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
        result: Result<TurnAssembler, CallFailure>,
        ctx: &mut Context<Self>,
    ) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        if turn.cancel.is_cancelled() {
            self.finish(TurnOutcome::Cancelled);
            return;
        }
        let assembled = match result {
            Ok(a) => a,
            Err(CallFailure {
                error: ModelError::Cancelled,
                ..
            }) => return self.finish(TurnOutcome::Cancelled),
            Err(failure) => return self.fail(failure.message()),
        };
        if let Some(usage) = assembled.usage {
            self.last_prompt_tokens = usage.prompt_token_count;
        }
        let mut content = assembled.content();
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        // Ids are given in the history's own parts; the Scheduler gets the one copy.
        for part in content.parts.iter_mut() {
            if let Some(call) = part.function_call.as_mut() {
                assign_call_ids(std::slice::from_mut(call), millis, &mut self.call_counter);
            }
        }
        let calls: Vec<FunctionCall> = content.function_calls().cloned().collect();
        self.history.push(content);
        if calls.is_empty() {
            let text = assembled.text();
            self.complete_turn(text, ctx);
            return;
        }
        turn.rounds += 1;
        turn.pending = calls
            .iter()
            .map(|c| (c.id.clone().unwrap_or_default(), c.name.clone()))
            .collect();
        let schedule = Schedule {
            turn: turn.id,
            calls,
            cancel: turn.cancel.clone(),
        };
        ctx.spawn(
            self.scheduler
                .send(schedule)
                .into_actor(self)
                .map(|result, act, ctx| act.on_tools_done(result, ctx)),
        );
    }

    fn on_tools_done(
        &mut self,
        result: Result<Vec<Arc<CompletedCall>>, MailboxError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let completed = match result {
            Ok(c) => c,
            Err(e) => turn
                .pending
                .iter()
                .map(|(id, name)| {
                    let message = format!("The scheduler was unavailable: {e}");
                    Arc::new(CompletedCall {
                        response_parts: error_parts(name, id, &message),
                        call_id: id.clone(),
                        name: name.clone(),
                        args: Arc::new(serde_json::Value::Null),
                        status: CallStatus::Error,
                        display: message,
                        error: None,
                        duration: std::time::Duration::ZERO,
                        data: None,
                        timeline: Default::default(),
                    })
                })
                .collect(),
        };
        let all_cancelled = completed.iter().all(|c| c.status == CallStatus::Cancelled);
        // The parts move into the history when nothing else holds the call any more.
        let parts = completed
            .into_iter()
            .flat_map(|c| match Arc::try_unwrap(c) {
                Ok(call) => call.response_parts,
                Err(shared) => shared.response_parts.clone(),
            })
            .collect();
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
        self.request_model(ctx);
    }

    /// A model call failed for good: the user input of this turn is rolled back unless
    /// tool results already answer it.
    fn fail(&mut self, message: String) {
        if let Some(turn) = &self.turn {
            if !turn.after_function_response {
                self.history.truncate(turn.start_len);
            }
        }
        tracing::warn!(%message, "turn failed");
        self.finish(TurnOutcome::Failed { message });
    }

    fn finish(&mut self, outcome: TurnOutcome) {
        if let Some(turn) = self.turn.take() {
            let _enter = turn.span.enter();
            tracing::info!(?outcome, rounds = turn.rounds, "turn finished");
        }
        self.emit(UiEvent::TurnFinished(outcome));
    }
}

impl Actor for Chat {
    type Context = Context<Self>;
}

impl Handler<UserInput> for Chat {
    type Result = ();

    fn handle(&mut self, msg: UserInput, ctx: &mut Self::Context) {
        if self.turn.is_some() || self.compressing {
            self.emit(UiEvent::Notice(
                "A turn is already running; wait for it or cancel it first.".into(),
            ));
            return;
        }
        self.turn_counter += 1;
        let id = self.turn_counter;
        let cancel = CancellationToken::new();
        self.turn = Some(TurnState {
            id,
            cancel: cancel.clone(),
            rounds: 0,
            start_len: self.history.len(),
            after_function_response: false,
            pending: Vec::new(),
            span: tracing::info_span!("turn", turn = id),
            stop_hook_active: false,
        });
        self.emit(UiEvent::TurnStarted {
            turn: id,
            prompt: msg.text.clone(),
        });
        if !self.compression_due() {
            self.begin_turn(msg.text, ctx);
            return;
        }
        ctx.spawn(self.compress(false, cancel).map(move |outcome, act, ctx| {
            if let CompressionOutcome::Failed { reason } = outcome {
                act.emit(UiEvent::Notice(format!(
                    "Chat compression failed: {reason}"
                )));
            }
            act.begin_turn(msg.text, ctx);
        }));
    }
}

impl Chat {
    /// Adds the user input (closing an unanswered tool-response turn first) and sends
    /// the first model request of the turn.
    fn begin_turn(&mut self, text: String, ctx: &mut Context<Self>) {
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
        if self
            .history
            .last()
            .is_some_and(|c| c.role == Role::User && c.has_function_response())
        {
            self.history.push(Content::model_text(
                "[The previous response was interrupted before it completed.]",
            ));
        }
        let start_len = self.history.len();
        self.history.push(Self::prompt_content(text, hook_context));
        if let Some(turn) = self.turn.as_mut() {
            turn.start_len = start_len;
        }
        self.request_model(ctx);
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

impl Handler<GetHistory> for Chat {
    type Result = MessageResult<GetHistory>;

    fn handle(&mut self, _: GetHistory, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.history.clone())
    }
}

impl Handler<SetHistory> for Chat {
    type Result = ();

    fn handle(&mut self, msg: SetHistory, _: &mut Self::Context) {
        if self.turn.is_none() {
            self.history = msg.0;
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
