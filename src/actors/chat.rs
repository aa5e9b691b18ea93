//! The Chat actor: owns the conversation and runs the turn loop — model → tool calls →
//! Scheduler → function responses → model … — until the model answers without calling
//! a tool, the turn is cancelled, or the round limit is reached. Every step runs as a
//! spawned future (`ctx.spawn`), so the actor keeps answering (e.g. `CancelTurn`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::engine::content::{Content, FunctionCall, FunctionDeclaration, Role};
use crate::engine::context_files::ContextFiles;
use crate::engine::history::{assign_call_ids, curated, TurnAssembler};
use crate::engine::model::{ModelEvent, ModelRequest};
use crate::engine::prompt::SystemPrompt;
use crate::engine::responses::error_parts;
use crate::protocol::{
    CallStatus, CancelTurn, CompletedCall, CompressHistory, CompressionOutcome, Memory,
    MemoryReport, Schedule, TurnOutcome, UiEvent, UserInput,
};
use crate::providers::{ModelClient, ModelError};

use super::scheduler::Scheduler;

/// What the Chat actor needs to run.
pub struct ChatConfig {
    pub model: Arc<dyn ModelClient>,
    pub model_name: String,
    pub system_prompt: Option<String>,
    pub tools: Vec<FunctionDeclaration>,
    pub max_turns: u32,
    /// Append every model request body (Gemini JSON) to this file, one per line.
    pub request_log: Option<PathBuf>,
    /// The context files behind the system prompt, for `Memory` (show / refresh).
    pub memory: Option<ChatMemory>,
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
}

struct TurnState {
    id: u64,
    cancel: CancellationToken,
    rounds: u32,
    /// History length before the user input of this turn (for rollback).
    start_len: usize,
    after_function_response: bool,
    pending: Vec<FunctionCall>,
    span: tracing::Span,
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
        }
    }

    fn emit(&self, event: UiEvent) {
        self.events.do_send(event);
    }

    fn request(&self) -> ModelRequest {
        let mut request = ModelRequest::new(self.config.model_name.clone(), curated(&self.history));
        request.system_instruction = self.config.system_prompt.clone();
        request.tools = self.config.tools.clone();
        request
    }

    fn request_model(&mut self, ctx: &mut Context<Self>) {
        let Some(turn) = &self.turn else { return };
        let request = self.request();
        let model = self.config.model.clone();
        let events = self.events.clone();
        let cancel = turn.cancel.clone();
        let log = self.config.request_log.clone();
        let span = tracing::info_span!(parent: &turn.span, "model_request", round = turn.rounds);
        self.events
            .do_send(UiEvent::ModelRequest { round: turn.rounds });
        let future = async move {
            if let Some(path) = log {
                log_request(&path, &request).await;
            }
            let stream = model.stream(request);
            consume(stream, events, cancel).await
        };
        ctx.spawn(
            tracing::Instrument::instrument(future, span)
                .into_actor(self)
                .map(|result, act, ctx| act.on_model_done(result, ctx)),
        );
    }

    fn on_model_done(
        &mut self,
        result: Result<TurnAssembler, ModelError>,
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
            Err(e) => return self.fail(e.to_string()),
        };
        if let Err((kind, message)) = assembled.check(turn.after_function_response) {
            let provider = self.config.model.provider().to_string();
            return self.fail(format!(
                "{provider} sent an invalid response ({kind}): {message}"
            ));
        }
        let mut content = assembled.content();
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let mut calls: Vec<FunctionCall> = content.function_calls().cloned().collect();
        assign_call_ids(&mut calls, millis, &mut self.call_counter);
        let mut next = calls.iter();
        for part in content.parts.iter_mut() {
            if let Some(slot) = part.function_call.as_mut() {
                if let Some(call) = next.next() {
                    *slot = call.clone();
                }
            }
        }
        self.history.push(content);
        if calls.is_empty() {
            let text = assembled.text();
            self.finish(TurnOutcome::Completed { response: text });
            return;
        }
        turn.rounds += 1;
        turn.pending = calls.clone();
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
        result: Result<Vec<CompletedCall>, MailboxError>,
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
                .map(|call| {
                    let id = call.id.clone().unwrap_or_default();
                    let message = format!("The scheduler was unavailable: {e}");
                    CompletedCall {
                        response_parts: error_parts(&call.name, &id, &message),
                        call_id: id,
                        name: call.name.clone(),
                        args: call.args.clone(),
                        status: CallStatus::Error,
                        display: message,
                        error: None,
                        duration: std::time::Duration::ZERO,
                        data: None,
                    }
                })
                .collect(),
        };
        let parts = completed
            .iter()
            .flat_map(|c| c.response_parts.iter().cloned())
            .collect();
        self.history.push(Content {
            role: Role::User,
            parts,
        });
        turn.after_function_response = true;
        let all_cancelled = completed.iter().all(|c| c.status == CallStatus::Cancelled);
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
        if self.turn.is_some() {
            self.emit(UiEvent::Notice(
                "A turn is already running; wait for it or cancel it first.".into(),
            ));
            return;
        }
        self.turn_counter += 1;
        let id = self.turn_counter;
        // A tool-response turn the model never answered is closed before new input.
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
        self.history.push(Content::user_text(msg.text.clone()));
        self.turn = Some(TurnState {
            id,
            cancel: CancellationToken::new(),
            rounds: 0,
            start_len,
            after_function_response: false,
            pending: Vec::new(),
            span: tracing::info_span!("turn", turn = id),
        });
        self.emit(UiEvent::TurnStarted {
            turn: id,
            prompt: msg.text,
        });
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
    type Result = MessageResult<CompressHistory>;

    fn handle(&mut self, _: CompressHistory, _: &mut Self::Context) -> Self::Result {
        MessageResult(CompressionOutcome::Noop {
            reason: "history compression is not available yet".into(),
        })
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

/// Reads a model stream to its end, forwarding text, thoughts and usage as they come.
async fn consume(
    mut stream: crate::providers::ModelStream,
    events: Recipient<UiEvent>,
    cancel: CancellationToken,
) -> Result<TurnAssembler, ModelError> {
    let mut assembler = TurnAssembler::default();
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            item = stream.next() => item,
        };
        let Some(item) = item else { break };
        let event = item?;
        match &event {
            ModelEvent::Text(t) => events.do_send(UiEvent::TextDelta(t.clone())),
            ModelEvent::Thought(t) => events.do_send(UiEvent::Thought(t.clone())),
            ModelEvent::Usage(u) => events.do_send(UiEvent::Usage(*u)),
            _ => {}
        }
        assembler.push(&event);
    }
    Ok(assembler)
}

async fn log_request(path: &PathBuf, request: &ModelRequest) {
    let line = format!("{}\n", request.gemini_body());
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await;
    match file {
        Ok(mut f) => {
            if let Err(e) = f.write_all(line.as_bytes()).await {
                tracing::warn!(error = %e, "cannot log request");
            }
        }
        Err(e) => tracing::warn!(error = %e, path = %path.display(), "cannot open request log"),
    }
}
