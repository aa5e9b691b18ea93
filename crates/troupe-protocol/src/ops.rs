//! The one surface of a running session: [`Op`]s go in, [`Event`]s come out.
//!
//! A front end (headless, the REPL, ACP, `mcp serve`, the bench) submits ops to its
//! session's handle and renders the events it reads back; it names no actor and locks
//! no shared state. Every op gets exactly one answer: an [`Event::OpDone`] on the event
//! stream, or — for an op sent as a request — the reply its caller awaits. An op the
//! session cannot take now (a history change during a turn) is answered with an
//! [`OpError`], never dropped.

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::content::{Content, FunctionCall, FunctionDeclaration, Part};
use crate::hooks::HookInfo;
use crate::{
    AddRootError, AddedRoot, ApprovalDecision, ApprovalMode, ApprovalRequest, CompletedCall,
    CompressionOutcome, MemoryReport, ToolKind, UiEvent,
};

/// The number a session gives an op when it is submitted; its answer carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OpId(pub u64);

/// The number of an approval request the session put to its front end
/// ([`Event::Approval`]); the front end answers it with [`Op::Decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ApprovalId(pub u64);

/// Why a session ends: SessionEnd's `reason` (gemini-cli's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The program ends (end of a headless run, `/quit`, Ctrl+D, a signal, the ACP
    /// client gone).
    Exit,
    /// `/clear`.
    Clear,
    /// The user logged out.
    Logout,
    /// The user left at the prompt.
    PromptInputExit,
    /// Anything else (an ACP `session/close`).
    Other,
}

impl EndReason {
    /// The value hooks see.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exit => "exit",
            Self::Clear => "clear",
            Self::Logout => "logout",
            Self::PromptInputExit => "prompt_input_exit",
            Self::Other => "other",
        }
    }
}

/// What follows a session's end in its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessAfter {
    /// The process goes on (the REPL's next session, ACP, a benchmark's next run):
    /// every thread the session started is stopped and joined.
    GoesOn,
    /// The process exits next (a `-p` run): the session's idle threads are left to
    /// the exit.
    Exits,
}

/// Something the user allowed for the rest of the session (or saved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowRule {
    pub tool: String,
    /// A file, a command prefix, …; `None` allows the whole tool.
    pub key: Option<String>,
    /// `session` or the file it was saved to.
    pub origin: String,
}

/// The approval policy as it stands: the mode and the allow rules, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySnapshot {
    pub mode: ApprovalMode,
    pub rules: Vec<AllowRule>,
}

/// A tool of the session as a front end lists it (`/tools`, ACP, `mcp serve`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSummary {
    pub name: String,
    /// What it touches, in words (`read`, `edit`, `execute`, …).
    pub kind: String,
    pub description: String,
}

/// An op a front end submits to its session.
#[derive(Debug, Clone)]
pub enum Op {
    /// Starts a turn. `text` is what the user typed (titles, `TurnStarted`); `parts`
    /// is what the model gets (the text with `@` references read, images); empty:
    /// the text alone.
    UserTurn { text: String, parts: Vec<Part> },
    /// Cancels the turn in flight (Ctrl+C, ACP cancel, a signal).
    Cancel,
    /// Answers approval request `id`.
    Decide {
        id: ApprovalId,
        decision: ApprovalDecision,
    },
    /// Switches the approval mode for the calls approved from now on.
    SetApprovalMode(ApprovalMode),
    /// The mode and the allow rules ([`OpReply::Policy`]).
    GetPolicy,
    /// Removes allow rule `n` (1-based, in [`PolicySnapshot::rules`]' order);
    /// answers the rule removed ([`OpReply::Rule`]).
    RevokeRule(usize),
    /// Adds a workspace root (`/directory add`, typed by the user; never for a model,
    /// a tool or a project file). `~` is expanded, a relative path is taken from the
    /// primary root.
    AddWorkspaceRoot { path: String },
    /// Switches the model of later requests (`/model NAME`).
    SetModel(String),
    /// Sets `model.max_turns` for the following prompts (`/settings model.max_turns N`).
    SetMaxTurns(u32),
    /// Summarises older history now (`force`), or only when the last prompt passed
    /// the configured threshold.
    Compress { force: bool },
    /// The context files in the system prompt; `refresh` re-reads them first.
    Memory { refresh: bool },
    /// The history as the model sees it ([`OpReply::History`]).
    GetHistory,
    /// Replaces the history and records the replacement (`/chat resume`, `/rewind`).
    /// Refused while a turn runs.
    SetHistory(Vec<Content>),
    /// Replaces the history without recording it (a resumed session's start).
    /// Refused while a turn runs.
    SeedHistory(Vec<Content>),
    /// The tools the model is offered now ([`OpReply::Tools`]).
    ListTools,
    /// The session's hooks ([`OpReply::Hooks`]).
    ListHooks,
    /// Enables or disables hook `name` (every hook when `None`); answers how many
    /// changed ([`OpReply::Count`]).
    SetHookEnabled { name: Option<String>, enabled: bool },
    /// Runs tool calls outside a model turn (`troupe mcp serve`): each is validated,
    /// approved and run as the model's would be; answers every call's result, in call
    /// order ([`OpReply::Calls`]). `cancel` ends the calls still running.
    RunCalls {
        calls: Vec<Arc<FunctionCall>>,
        cancel: CancellationToken,
    },
    /// The subagents of the session's tree, queued, running and ended
    /// ([`OpReply::Agents`]).
    ListAgents,
    /// Stops subagent `n` of the tree (its `invoke_agent` call answers `ABORTED`; the
    /// rest go on).
    CancelAgent(u64),
    // ---- mcp serve
    /// The tools the model is offered now, each with its full declaration (the
    /// parameters' JSON schema) and kind ([`OpReply::Declarations`]): what `troupe mcp
    /// serve` lists.
    ListToolDeclarations,
    // ---- REPL
    /// Records into another session's file from now on (`/resume N` in the REPL): the
    /// recorder closes the round it holds, switches to `file` (appending `repairs`
    /// first), releases the old session's lock and holds `lock`. Refused
    /// ([`OpError::Unavailable`]) when the session is not recorded.
    SwitchSession {
        file: std::path::PathBuf,
        session_id: String,
        /// Whether `file` exists already (a resumed session).
        existing: bool,
        repairs: Vec<serde_json::Value>,
        /// The new session's lock (shared only so that the op stays `Clone`; the
        /// session takes it over).
        lock: Arc<std::fs::File>,
    },
    /// Ends the session: a running turn is cancelled, SessionEnd fires with `reason`,
    /// the recorder flushes, everything the session started ends. The event stream
    /// ends after this op's answer.
    Shutdown {
        reason: EndReason,
        after: ProcessAfter,
    },
}

impl Op {
    /// The op's name, for logs and error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::UserTurn { .. } => "user_turn",
            Op::Cancel => "cancel",
            Op::Decide { .. } => "decide",
            Op::SetApprovalMode(_) => "set_approval_mode",
            Op::GetPolicy => "get_policy",
            Op::RevokeRule(_) => "revoke_rule",
            Op::AddWorkspaceRoot { .. } => "add_workspace_root",
            Op::SetModel(_) => "set_model",
            Op::SetMaxTurns(_) => "set_max_turns",
            Op::Compress { .. } => "compress",
            Op::Memory { .. } => "memory",
            Op::GetHistory => "get_history",
            Op::SetHistory(_) => "set_history",
            Op::SeedHistory(_) => "seed_history",
            Op::ListTools => "list_tools",
            Op::ListHooks => "list_hooks",
            Op::SetHookEnabled { .. } => "set_hook_enabled",
            Op::RunCalls { .. } => "run_calls",
            Op::ListAgents => "list_agents",
            Op::CancelAgent(_) => "cancel_agent",
            // ---- mcp serve
            Op::ListToolDeclarations => "list_tool_declarations",
            // ---- REPL
            Op::SwitchSession { .. } => "switch_session",
            Op::Shutdown { .. } => "shutdown",
        }
    }
}

/// What an op that succeeded answers.
#[derive(Debug, Clone)]
pub enum OpReply {
    /// Taken; nothing to report.
    Done,
    Policy(PolicySnapshot),
    Rule(AllowRule),
    Root(AddedRoot),
    Compression(CompressionOutcome),
    Memory(MemoryReport),
    History(Vec<Content>),
    Tools(Vec<ToolSummary>),
    Hooks(Vec<HookInfo>),
    Count(usize),
    Calls(Vec<Arc<CompletedCall>>),
    /// The subagents of the session's tree ([`Op::ListAgents`]).
    Agents(Vec<crate::AgentRow>),
    // ---- mcp serve
    /// Each tool's declaration and kind ([`Op::ListToolDeclarations`]).
    Declarations(Vec<(FunctionDeclaration, ToolKind)>),
}

/// Why an op was not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OpError {
    /// The session cannot take the op now (a history change while a turn runs).
    #[error("{op}: not now: {why}")]
    Busy { op: &'static str, why: &'static str },
    /// No approval request of that number is waiting (answered already, or never
    /// asked).
    #[error("no approval request {0} is waiting for an answer")]
    UnknownApproval(u64),
    /// There is no allow rule of that number.
    #[error("there is no allow rule {0}")]
    NoSuchRule(usize),
    /// There is no queued or running subagent of that number.
    #[error("there is no running subagent {0} (/agents lists them)")]
    NoSuchAgent(u64),
    /// The directory was not added.
    #[error("{0}")]
    Root(#[from] AddRootError),
    /// The session has ended (or its actors stopped): nothing takes ops any more.
    #[error("{op}: the session has ended")]
    Ended { op: &'static str },
    // ---- REPL
    /// The session has nothing that could take the op (no recorder for
    /// [`Op::SwitchSession`]: sessions are not recorded).
    #[error("{op}: {why}")]
    Unavailable { op: &'static str, why: String },
}

/// What a session tells its front end, in the order it happens.
#[derive(Debug, Clone)]
pub enum Event {
    /// Everything a front end renders: the turn's text, tool calls, notices, …
    Ui(UiEvent),
    /// A call needs the user's approval; answer with [`Op::Decide`] and this `id`.
    Approval {
        id: ApprovalId,
        request: ApprovalRequest,
    },
    /// The answer to a submitted op.
    OpDone {
        op: OpId,
        result: Result<OpReply, OpError>,
    },
}

/// Where a session's actors send what the front end is to see: the sending side of
/// the session's event stream. Cheap to clone; sends never block, and a send after
/// the front end stopped reading is dropped (the session is ending).
#[derive(Debug, Clone)]
pub struct EventSink(UnboundedSender<Event>, Arc<AtomicU64>);

impl EventSink {
    /// A sink feeding `sender`'s stream.
    pub fn new(sender: UnboundedSender<Event>) -> Self {
        Self(sender, Arc::default())
    }

    /// Sends one UI event (the name of actix's `Recipient::do_send`, which this took
    /// the place of).
    pub fn do_send(&self, event: UiEvent) {
        self.send_event(Event::Ui(event));
    }

    /// Sends any event.
    pub fn send_event(&self, event: Event) {
        self.1.fetch_add(1, Ordering::SeqCst);
        let _ = self.0.send(event);
    }

    /// How many events this sink and its clones have sent so far.
    pub fn sent(&self) -> u64 {
        self.1.load(Ordering::SeqCst)
    }
}
