//! The contract between Troupe's actors and its front ends, in one place: every message
//! an actor accepts and every event a front end renders. This module depends on no actor;
//! actors and front ends depend on it.
//!
//! A crate of its own (the main crate re-exports it as `troupe::protocol`), so the
//! compiler keeps it from using any other part of Troupe.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::time::Duration;

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::{CallArgs, Content, FunctionCall, Part, Usage};

mod approval;
pub mod content;
pub mod hooks;
mod ops;
mod session;
mod tool_facts;
mod tool_result;
mod unmet;
pub use approval::{
    ApprovalDecision, ApprovalMode, ApprovalRequest, ConfirmationDetails, Question, QuestionOption,
};
pub use ops::{
    AllowRule, ApprovalId, EndReason, Event, EventSink, Op, OpError, OpId, OpReply, PolicySnapshot,
    ProcessAfter, ToolSummary,
};
pub use session::{
    CheckpointEdit, FlushRecords, SeedHistory, SessionEvent, SwitchSession, TakeCheckpoint,
};
pub use tool_facts::{AllowKey, Offered, ToolFacts, ToolFactsTable};
pub use tool_result::{LlmContent, ToolError, ToolErrorKind, ToolKind, ToolOutput};
pub use unmet::Unmet;

// ---------------------------------------------------------------- call lifecycle

/// The states of one tool call, in gemini-cli's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Validating,
    AwaitingApproval,
    Scheduled,
    Executing,
    Success,
    Error,
    Cancelled,
}

impl CallStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            CallStatus::Success | CallStatus::Error | CallStatus::Cancelled
        )
    }
}

/// When one call entered each of its states, and which tool actor ran it: what a
/// trace (`--trace FILE`) draws. Recorded by the Scheduler as the call moves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallTimeline {
    pub validating: Option<std::time::Instant>,
    pub awaiting_approval: Option<std::time::Instant>,
    pub scheduled: Option<std::time::Instant>,
    pub executing: Option<std::time::Instant>,
    pub done: Option<std::time::Instant>,
    /// The actor that executed the call (`read_file#1`) and the thread it runs on.
    pub actor: Option<std::sync::Arc<str>>,
}

/// A finished call, with the parts that answer it in the next model request.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedCall {
    pub call_id: String,
    pub name: String,
    /// The call's arguments, shared with the model turn that asked for the call and
    /// the events that showed them (not copied).
    pub args: CallArgs,
    pub status: CallStatus,
    /// The functionResponse part first, then any sibling parts (images, ...).
    pub response_parts: Vec<Part>,
    pub display: String,
    pub error: Option<ToolError>,
    pub duration: Duration,
    pub data: Option<Value>,
    pub timeline: CallTimeline,
}

/// Runs one batch of calls from a model turn. Each finished call is sent on `answers`
/// in call order, as soon as every earlier call is answered (a finished call does not
/// wait for the whole batch); every call is answered exactly once. The message is
/// answered, and `answers` closed, when the batch is over and its events are sent.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Schedule {
    pub turn: u64,
    /// Calls with ids already assigned, shared with the model turn in the history.
    pub calls: Vec<std::sync::Arc<FunctionCall>>,
    pub cancel: CancellationToken,
    pub answers: CallAnswers,
}

/// Which call events a session's front end shows: without `call_progress`, the
/// Scheduler sends only `ToolCallCompleted` (no `ToolCallRequested` or
/// `ToolCallStatus`): a front end that prints one result at the end (`-o json`,
/// `-o text`, `troupe bench`) takes a third of the events per call. Every front end
/// gets every event until it says otherwise.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct CallEvents {
    pub call_progress: bool,
}

/// Where the Scheduler sends a batch's finished calls, in call order.
pub type CallAnswers = tokio::sync::mpsc::UnboundedSender<std::sync::Arc<CompletedCall>>;

// ---------------------------------------------------------------- chat

/// A prompt from the user starts a turn; refused ([`OpError::Busy`]) while a turn or
/// a compression runs.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), OpError>")]
pub struct UserInput {
    pub text: String,
}

/// A prompt made of several parts (the text, then the content of `@path`
/// references, images as inline data) starts a turn; `text` is what the user typed.
/// Refused ([`OpError::Busy`]) while a turn or a compression runs.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), OpError>")]
pub struct UserParts {
    pub text: String,
    pub parts: Vec<crate::content::Part>,
}

/// Switches the model of later requests (`/model NAME`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetModelName(pub String);

/// Sets the model rounds a prompt may take (`model.max_turns`) for later prompts.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetMaxTurns(pub u32);

/// Cancels the turn in flight (Ctrl+C).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct CancelTurn;

/// The conversation so far (comprehensive history), from the Chat.
#[derive(Debug, Message)]
#[rtype(result = "Vec<Content>")]
pub struct GetHistory;

/// Replaces the history and records the replacement (`/clear`, `/chat resume`,
/// `/rewind`); refused ([`OpError::Busy`]) while a turn runs.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), OpError>")]
pub struct SetHistory(pub Vec<Content>);

/// Stops the Chat (the session's shutdown): a running turn ends as cancelled first.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopChat;

/// Summarises older history into a snapshot now (`/compress`), or only when the
/// last prompt passed the configured threshold (`force: false`).
#[derive(Debug, Message)]
#[rtype(result = "CompressionOutcome")]
pub struct CompressHistory {
    pub force: bool,
}

/// What a compression attempt did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CompressionOutcome {
    Compressed {
        tokens_before: u64,
        tokens_after: u64,
    },
    /// Nothing to do (history too short, below the threshold, or not supported).
    Noop {
        reason: String,
    },
    Failed {
        reason: String,
    },
}

/// The context files (AGENTS.md, GEMINI.md, …) and memory in the system prompt:
/// `refresh: true` re-reads them from disk first (`/memory refresh`).
#[derive(Debug, Message)]
#[rtype(result = "MemoryReport")]
pub struct Memory {
    pub refresh: bool,
}

/// The context files currently loaded and their combined text.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MemoryReport {
    pub files: Vec<String>,
    pub text: String,
}

/// What a turn fails with ([`TurnOutcome::Failed`]) when the Chat actor is torn down
/// in the middle of it: the session ends.
pub const CHAT_STOPPED: &str =
    "Internal error: the chat actor stopped in the middle of the turn (a panic); the session ends.";

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed {
        response: String,
    },
    Cancelled,
    MaxTurns {
        limit: u32,
    },
    Failed {
        message: String,
    },
    /// The model was stuck repeating itself (loop detection, `model.loop_detection`).
    LoopDetected {
        message: String,
    },
}

// ---------------------------------------------------------------- events out

/// What a turn is waiting for, as the front ends tell the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitingFor {
    /// The model's first token (a local server processes the prompt first).
    Model,
    /// The pause before a model request is sent again.
    RetryBackoff,
    /// The model repairing an edit (`replace` with a string that did not match).
    Correction,
}

impl WaitingFor {
    /// The spinner's words.
    pub fn describe(self) -> &'static str {
        match self {
            WaitingFor::Model => "Waiting for the model",
            WaitingFor::RetryBackoff => "Waiting to retry the model request",
            WaitingFor::Correction => "Correcting the edit (the model may be asked)",
        }
    }
}

/// Everything a front end renders, in the order it happens.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum UiEvent {
    SessionStarted {
        session_id: String,
        model: String,
    },
    TurnStarted {
        turn: u64,
        prompt: String,
    },
    /// A model request of the turn is being sent (round 0, 1, …).
    ModelRequest {
        round: u32,
    },
    TextDelta(String),
    Thought(String),
    ToolCallRequested {
        call_id: String,
        name: String,
        args: CallArgs,
    },
    ToolCallStatus {
        call_id: String,
        name: String,
        status: CallStatus,
    },
    /// Live output of a running call (a shell command's stdout, ...).
    ToolOutputChunk {
        call_id: String,
        chunk: String,
    },
    ToolCallCompleted(std::sync::Arc<CompletedCall>),
    Usage(Usage),
    /// The answer to the model request in flight so far: sent about once a second
    /// while the request is open (before the first byte too), so a slow local model is
    /// seen working. Counts restart with each attempt.
    ModelProgress {
        /// Bytes of text, thoughts and tool calls received so far in this attempt
        /// (a tool call counts when the provider has assembled it).
        output_bytes: u64,
        /// Since this attempt was sent.
        elapsed_ms: u64,
        /// The request's prompt tokens, estimated (four characters of JSON a token).
        prompt_tokens_estimate: u64,
    },
    /// A model request failed and is being retried.
    Retry {
        attempt: u32,
        reason: String,
    },
    /// Something worth a line in the transcript (compression, mode switch, ...).
    Notice(String),
    /// The turn waits for something slow: the spinner says what; `seconds` > 0 repeats
    /// it while the wait goes on (the headless front prints those on stderr).
    Waiting {
        what: WaitingFor,
        seconds: u64,
    },
    /// Something the user must see even headless (on stderr): a hook that failed, a
    /// hook's `systemMessage`, hooks skipped in an untrusted folder.
    Warning(String),
    /// The turn is about to finish without doing what its prompt asked (a change, a
    /// test run, a tool call): sent just before `TurnFinished`, so the run's result
    /// can say so (`model.check_outcome`).
    Unmet {
        unmet: Unmet,
        message: String,
    },
    TurnFinished(TurnOutcome),
    /// Something a subagent of the session's tree did (its start, each of its own
    /// events, its end).
    Agent(std::sync::Arc<AgentUpdate>),
}

/// One step of a subagent, as its parent session tells its front end.
#[derive(Debug, Clone)]
pub struct AgentUpdate {
    /// The subagent's id in the tree (`<name>-<n>`): its session file's name and the
    /// `agent_id` of its stream-json events.
    pub agent_id: String,
    /// The session id of the main session, or the `agent_id` of the subagent that
    /// started this one.
    pub parent_id: String,
    /// The agent's name (`generalist`, a file's `name`).
    pub name: String,
    /// The `invoke_agent` call of the parent that this subagent answers.
    pub call_id: String,
    pub what: AgentStep,
}

/// What a subagent did.
#[derive(Debug, Clone)]
pub enum AgentStep {
    /// Waiting for a slot of the pool: `running` (`agents.max_concurrent`) subagents
    /// of its level run already. Not sent for a subagent that starts at once.
    Queued { prompt: String, running: usize },
    /// Running: its session has started.
    Started,
    /// One of its own session's events (text, tool calls, usage, …).
    Event(Box<UiEvent>),
    /// It has ended; its parent's call is answered.
    Finished(AgentTotals),
}

/// Where a subagent is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentState {
    Queued,
    Running,
    /// Ended, with its termination reason.
    Finished(String),
}

/// One subagent of a session's tree as `/agents` lists it ([`crate::Op::ListAgents`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRow {
    /// Its number in the tree ([`crate::Op::CancelAgent`]).
    pub number: u64,
    pub agent_id: String,
    pub parent_id: String,
    pub name: String,
    pub state: AgentState,
    /// The tool it is running now, if any.
    pub current_tool: Option<String>,
    pub turns: u32,
    pub tokens: u64,
    pub elapsed_ms: u64,
}

/// How a subagent ended and what it used.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentTotals {
    /// gemini-cli's termination reason: `GOAL`, `MAX_TURNS`, `TIMEOUT`, `ABORTED`,
    /// `ERROR`, `ERROR_NO_COMPLETE_TASK_CALL`.
    pub reason: String,
    /// Model requests it made.
    pub turns: u32,
    pub tool_calls: u32,
    /// Prompt plus output tokens, as the server counted them.
    pub tokens: u64,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    pub elapsed_ms: u64,
}

// ---------------------------------------------------------------- policy

/// Switches the approval mode of the calls approved from now on (the Scheduler).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct SetPolicyMode(pub ApprovalMode);

/// The approval policy as it stands (the Scheduler).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "PolicySnapshot")]
pub struct GetPolicy;

/// Removes allow rule `n` (1-based) and answers it; `None`: no such rule (the
/// Scheduler).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Option<AllowRule>")]
pub struct RevokeAllowRule(pub usize);

// ---------------------------------------------------------------- hooks

/// Runs the hooks of one event (the Hooks actor); answers the merged verdict.
#[derive(Debug, Message)]
#[rtype(result = "crate::hooks::HookVerdict")]
pub struct RunHooks {
    pub event: crate::hooks::HookEvent,
    /// What the matcher is tested on: a tool name, a session source/reason, a trigger.
    pub target: Option<String>,
    /// The event's own input fields (the common ones are added by the actor).
    pub fields: Value,
    /// Kills the hook processes when cancelled.
    pub cancel: CancellationToken,
}

/// The session's hooks, for `/hooks`.
#[derive(Debug, Message)]
#[rtype(result = "Vec<crate::hooks::HookInfo>")]
pub struct ListHooks;

/// `/hooks enable|disable [name]`: `None` means every hook. Answers how many changed.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct SetHookEnabled {
    pub name: Option<String>,
    pub enabled: bool,
}

/// What adding a workspace root ([`Op::AddWorkspaceRoot`]) did, with the root's real path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddedRoot {
    Added(std::path::PathBuf),
    /// It was a root already (nothing changed).
    AlreadyThere(std::path::PathBuf),
}

/// Why a directory was not added (gemini-cli's messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddRootError {
    #[error("Directory does not exist: {}", .0.display())]
    Missing(std::path::PathBuf),
    #[error("Path is not a directory: {}", .0.display())]
    NotADirectory(std::path::PathBuf),
    #[error("Please provide a path to add.")]
    Empty,
    #[error("{}: {message}", path.display())]
    Io {
        path: std::path::PathBuf,
        message: String,
    },
}
