//! The ACP front end of one session: an event loop over the session's handle
//! ([`drive`]) and a renderer ([`AcpFront`]). It turns the session's events into
//! `session/update` notifications, approval requests into `session/request_permission`
//! (whose answer goes back as [`Op::Decide`]), and reports how each turn ended
//! ([`TurnEnd`]).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::convert;
use crate::actors::session::SessionHandle;
use crate::engine::stats::SessionStats;
use crate::mcp::McpHub;
use crate::protocol::{
    ApprovalDecision, ApprovalRequest, CallStatus, ConfirmationDetails, Event, Op, ToolFactsTable,
    TurnOutcome, UiEvent,
};
use crate::tools::{write_file, write_todos};

/// What the front needs of the connection to the client.
pub trait ClientLink: Send + Sync {
    /// Sends `session/update` with this update for `session_id`.
    fn update(&self, session_id: &str, update: Value);
    /// Sends `session/request_permission` and waits for the answer's JSON.
    fn request_permission(&self, params: Value) -> BoxFuture<'static, Result<Value, String>>;
}

/// Who waits for the end of a session's turn in flight (the `session/prompt` that
/// started it): the prompt registers before it submits its turn, the event loop
/// answers at `TurnFinished`. A later registration takes the place of an earlier one,
/// whose waiter then learns that no answer comes.
#[derive(Default)]
pub struct TurnEnd {
    waiter: Mutex<Option<oneshot::Sender<TurnResult>>>,
    /// The approval mode the client was last told of (`current_mode_update`).
    announced: Mutex<Option<crate::protocol::ApprovalMode>>,
}

/// How a turn ended, and what its model requests counted (the tokens of the prompt's
/// `usage`).
pub struct TurnResult {
    pub outcome: TurnOutcome,
    pub stats: SessionStats,
}

impl TurnEnd {
    /// Notes that the client knows of `mode`; true when it had not been told of it
    /// (the first note only records the session's starting mode).
    pub fn announce(&self, mode: crate::protocol::ApprovalMode) -> bool {
        let Ok(mut announced) = self.announced.lock() else {
            return false;
        };
        let news = announced.is_some_and(|m| m != mode);
        *announced = Some(mode);
        news
    }

    /// Registers for the end of the next turn to finish.
    pub fn wait(&self) -> oneshot::Receiver<TurnResult> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut waiter) = self.waiter.lock() {
            *waiter = Some(tx);
        }
        rx
    }

    /// Tells the registered waiter, if any, how the turn ended.
    fn finished(&self, result: TurnResult) {
        let waiter = self.waiter.lock().ok().and_then(|mut w| w.take());
        if let Some(waiter) = waiter {
            let _ = waiter.send(result);
        }
    }
}

/// The event loop of one ACP session: renders every event of `handle` through
/// `front`, asks the client about every approval request and answers it with
/// [`Op::Decide`], and tells `turns` how each turn ended. Ends with the session's
/// event stream (after its shutdown).
pub async fn drive(handle: Arc<SessionHandle>, mut front: AcpFront, turns: Arc<TurnEnd>) {
    turns.announce(handle.approval_mode());
    while let Some(event) = handle.next_event().await {
        match event {
            Event::Ui(event) => {
                // A call switched the approval mode (`enter_plan_mode`,
                // `exit_plan_mode`): the client is told, as after `session/set_mode`.
                let now = handle.approval_mode();
                if turns.announce(now) {
                    front.send(json!({"sessionUpdate": "current_mode_update", "currentModeId": now.as_str()}));
                }
                if let Some(result) = front.render(event) {
                    turns.finished(result);
                }
            }
            Event::Approval { id, request } => {
                // Asked off the loop: the session's other events go on meanwhile.
                let asked = front.ask(&request);
                let handle = handle.clone();
                actix::spawn(async move {
                    let decision = asked.await;
                    handle.submit(Op::Decide { id, decision });
                });
            }
            Event::OpDone {
                result: Err(error), ..
            } => tracing::warn!(%error, "op refused"),
            Event::OpDone { .. } => {}
        }
    }
}

/// The subagent steps an `invoke_agent` call shows while it runs.
const AGENT_PROGRESS_LINES: usize = 20;

/// The renderer of one ACP session: what the client has been told of the turn's
/// calls.
pub struct AcpFront {
    session_id: String,
    link: Arc<dyn ClientLink>,
    root: PathBuf,
    /// Where "Always allow" saves its rule, as shown in the option.
    saved_to: String,
    calls: HashMap<String, (String, Value)>,
    announced: HashSet<String>,
    /// Calls announced `pending` (waiting for permission) that have not started.
    pending: HashSet<String>,
    /// Edit confirmations by call, for the diff of the finished call.
    diffs: HashMap<String, Value>,
    /// The session's tool facts (ACP's kind of each call).
    facts: Arc<ToolFactsTable>,
    /// The progress lines of the subagents of each `invoke_agent` call, shown as the
    /// call's content while they run.
    agent_progress: HashMap<String, Vec<String>>,
    /// The token counts of the turn's model requests so far.
    stats: SessionStats,
    /// The session's MCP servers (their tools' titles).
    mcp: Option<Arc<McpHub>>,
}

impl AcpFront {
    /// The renderer of session `session_id`, whose calls are labelled by `facts` and,
    /// for MCP tools, by `mcp`.
    pub fn new(
        session_id: String,
        link: Arc<dyn ClientLink>,
        root: PathBuf,
        saved_to: String,
        facts: Arc<ToolFactsTable>,
        mcp: Option<Arc<McpHub>>,
    ) -> Self {
        Self {
            session_id,
            link,
            root,
            saved_to,
            calls: HashMap::new(),
            agent_progress: HashMap::new(),
            announced: HashSet::new(),
            pending: HashSet::new(),
            diffs: HashMap::new(),
            facts,
            stats: SessionStats::default(),
            mcp,
        }
    }

    /// A subagent's step: its `invoke_agent` call's content shows the latest steps.
    fn on_agent(&mut self, update: &crate::protocol::AgentUpdate) {
        use crate::protocol::AgentStep;
        let who = format!("{} ({})", update.agent_id, update.name);
        let line = match &update.what {
            AgentStep::Queued { running, .. } => {
                format!("{who} queued: {running} subagents are running (agents.max_concurrent)")
            }
            AgentStep::Started => format!("{who} started"),
            AgentStep::Finished(t) => format!(
                "{who} {} · {} turns · {} tool calls · {} tokens",
                t.reason, t.turns, t.tool_calls, t.tokens
            ),
            AgentStep::Event(event) => match event.as_ref() {
                UiEvent::ToolCallCompleted(call) => {
                    let mark = if call.status == CallStatus::Success {
                        "✓"
                    } else {
                        "✗"
                    };
                    format!("{who} {mark} {}", call.name)
                }
                _ => return,
            },
        };
        let lines = self
            .agent_progress
            .entry(update.call_id.clone())
            .or_default();
        lines.push(line);
        // The latest steps only: an update carries the whole content.
        let skip = lines.len().saturating_sub(AGENT_PROGRESS_LINES);
        let text = lines[skip..].join("\n");
        self.send(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": update.call_id,
            "status": "in_progress",
            "content": [convert::text_content(&text)],
        }));
    }

    fn send(&self, update: Value) {
        self.link.update(&self.session_id, update);
    }

    fn chunk(&self, kind: &str, text: String) {
        self.send(json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}));
    }

    /// Sends the call's `tool_call` with `status`, once; a call announced already
    /// (`pending`, before its permission request) gets a `tool_call_update` instead
    /// when it starts.
    fn announce(&mut self, call_id: &str, status: &str) {
        if !self.announced.insert(call_id.to_string()) {
            if status == "in_progress" && self.pending.remove(call_id) {
                self.send(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": status,
                }));
            }
            return;
        }
        let Some((name, args)) = self.calls.get(call_id) else {
            return;
        };
        self.send(json!({
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "status": status,
            "title": convert::call_title(name, args, self.mcp.as_deref()),
            "kind": convert::tool_kind(name, &self.facts),
            "locations": convert::locations(args, &self.root),
            "rawInput": args,
        }));
        if status == "pending" {
            self.pending.insert(call_id.to_string());
        }
    }
}

impl AcpFront {
    /// Sends what `event` shows the client; at the end of a turn, how it ended and
    /// what it counted.
    pub fn render(&mut self, event: UiEvent) -> Option<TurnResult> {
        self.stats.record(&event);
        match event {
            UiEvent::TextDelta(text) => self.chunk("agent_message_chunk", text),
            UiEvent::Thought(text) => self.chunk("agent_thought_chunk", text),
            UiEvent::ToolCallRequested {
                call_id,
                name,
                args,
            } => {
                // Announced as soon as it is requested: before the tool reads a file
                // through the editor (an edit reads it to build its confirmation),
                // the client has the call those reads belong to.
                self.calls.insert(call_id.clone(), (name, (*args).clone()));
                self.announce(&call_id, "pending");
            }
            UiEvent::ToolCallStatus {
                call_id, status, ..
            } => match status {
                // Every call gets its `tool_call` first (`pending`, when requested),
                // then an update when it runs.
                CallStatus::AwaitingApproval => self.announce(&call_id, "pending"),
                CallStatus::Executing => self.announce(&call_id, "in_progress"),
                _ => {}
            },
            UiEvent::ToolCallCompleted(call) => {
                self.announce(&call.call_id, "in_progress");
                self.pending.remove(&call.call_id);
                let status = match call.status {
                    CallStatus::Success => "completed",
                    _ => "failed",
                };
                // The edit's texts from its result (what the session file records
                // too, so `session/load` shows the same diff).
                let edited = call
                    .data
                    .as_ref()
                    .and_then(crate::engine::result_display::edit_of_data)
                    .filter(|_| call.status == CallStatus::Success);
                let confirmed = self.diffs.remove(&call.call_id);
                let success = call.status == CallStatus::Success;
                let content = match (edited, confirmed) {
                    (Some(e), _) => json!([convert::diff(e.file_path, e.original, e.new)]),
                    // An edit too big to carry its texts: the diff it was approved with.
                    (None, Some(diff)) if success => json!([diff]),
                    _ if success && call.name == write_file::NAME => {
                        json!([convert::write_file_diff(&call.args)])
                    }
                    _ => json!([convert::text_content(&call.display)]),
                };
                self.send(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call.call_id,
                    "status": status,
                    "content": content,
                }));
                if call.name == write_todos::NAME && call.status == CallStatus::Success {
                    self.send(json!({
                        "sessionUpdate": "plan",
                        "entries": convert::plan_entries(&call.args),
                    }));
                }
            }
            UiEvent::Warning(message) => {
                // Hook failures and the like: stderr (the editor's log), never stdout.
                eprintln!("troupe: {message}");
                tracing::warn!(%message, "warning");
            }
            UiEvent::Notice(message) => tracing::info!(%message, "notice"),
            UiEvent::Agent(update) => self.on_agent(&update),
            UiEvent::TurnFinished(outcome) => {
                self.agent_progress.clear();
                self.calls.clear();
                self.announced.clear();
                self.pending.clear();
                self.diffs.clear();
                let stats = std::mem::take(&mut self.stats).settled();
                return Some(TurnResult { outcome, stats });
            }
            _ => {}
        }
        None
    }

    /// Puts approval request `msg` to the client (`session/request_permission`); the
    /// future answers the client's decision (a failed request cancels the call).
    pub fn ask(&mut self, msg: &ApprovalRequest) -> BoxFuture<'static, ApprovalDecision> {
        let content = convert::confirmation_content(&msg.details);
        if let ConfirmationDetails::Edit { .. } = &msg.details {
            if let Some(diff) = content.get(0) {
                self.diffs.insert(msg.call_id.clone(), diff.clone());
            }
        }
        let title = match &msg.details {
            ConfirmationDetails::Edit { title, .. }
            | ConfirmationDetails::Exec { title, .. }
            | ConfirmationDetails::Fetch { title, .. }
            | ConfirmationDetails::Info { title, .. }
            | ConfirmationDetails::Mcp { title, .. } => title.clone(),
            // gemini-cli titles these by the call's description.
            ConfirmationDetails::ExitPlanMode { plan_path, .. } => {
                format!("Requesting plan approval for: {plan_path}")
            }
            ConfirmationDetails::AskUser { questions, .. } => {
                let asked: Vec<&str> = questions.iter().map(|q| q.question.as_str()).collect();
                format!("Asking user: {}", asked.join(", "))
            }
        };
        // A subagent's request names the subagent.
        let title = match &msg.agent {
            Some(agent) => format!("[{agent}] {title}"),
            None => title,
        };
        let params = json!({
            "sessionId": self.session_id,
            "options": convert::permission_options(&msg.details, &self.saved_to),
            "toolCall": {
                "toolCallId": msg.call_id,
                "status": "pending",
                "title": title,
                "kind": convert::tool_kind(&msg.tool_name, &self.facts),
                "content": content,
                "locations": convert::locations(&msg.args, &self.root),
                "rawInput": msg.args,
            },
        });
        let request = self.link.request_permission(params);
        let details = msg.details.clone();
        Box::pin(async move {
            match request.await {
                Ok(answer) => convert::decision_for(&details, &answer),
                Err(e) => {
                    tracing::warn!(error = %e, "permission request failed");
                    ApprovalDecision::Cancel { feedback: None }
                }
            }
        })
    }
}
