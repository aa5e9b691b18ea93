//! The ACP front end of one session: an actor beside the REPL and the headless front.
//! It turns the session's events into `session/update` notifications, approval
//! requests into `session/request_permission`, and reports how each turn ended.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::convert;
use crate::protocol::{
    ApprovalDecision, ApprovalRequest, CallStatus, ConfirmationDetails, ToolFactsTable,
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

/// Waits for the end of the turn in flight.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AwaitTurn(pub oneshot::Sender<TurnOutcome>);

/// Names the session the front reports for (known once the session has started).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetSessionId(pub String);

impl Handler<SetSessionId> for AcpFront {
    type Result = ();

    fn handle(&mut self, msg: SetSessionId, _: &mut Self::Context) {
        self.session_id = msg.0;
    }
}

/// Gives the front the session's tool facts (how ACP labels each call).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetToolFacts(pub Arc<ToolFactsTable>);

impl Handler<SetToolFacts> for AcpFront {
    type Result = ();

    fn handle(&mut self, msg: SetToolFacts, _: &mut Self::Context) {
        self.facts = msg.0;
    }
}

/// The ACP front of one session.
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
    waiter: Option<oneshot::Sender<TurnOutcome>>,
    /// The session's tool facts (ACP's kind of each call), once the session started.
    facts: Arc<ToolFactsTable>,
}

impl AcpFront {
    pub fn new(
        session_id: String,
        link: Arc<dyn ClientLink>,
        root: PathBuf,
        saved_to: String,
    ) -> Self {
        Self {
            session_id,
            link,
            root,
            saved_to,
            calls: HashMap::new(),
            announced: HashSet::new(),
            pending: HashSet::new(),
            diffs: HashMap::new(),
            waiter: None,
            facts: Arc::default(),
        }
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
            "title": convert::tool_title(name, args),
            "kind": convert::tool_kind(name, &self.facts),
            "locations": convert::locations(args, &self.root),
            "rawInput": args,
        }));
        if status == "pending" {
            self.pending.insert(call_id.to_string());
        }
    }
}

impl Actor for AcpFront {
    type Context = Context<Self>;
}

impl Handler<AwaitTurn> for AcpFront {
    type Result = ();

    fn handle(&mut self, msg: AwaitTurn, _: &mut Self::Context) {
        self.waiter = Some(msg.0);
    }
}

impl Handler<UiEvent> for AcpFront {
    type Result = ();

    fn handle(&mut self, event: UiEvent, _: &mut Self::Context) {
        match event {
            UiEvent::TextDelta(text) => self.chunk("agent_message_chunk", text),
            UiEvent::Thought(text) => self.chunk("agent_thought_chunk", text),
            UiEvent::ToolCallRequested {
                call_id,
                name,
                args,
            } => {
                self.calls.insert(call_id, (name, (*args).clone()));
            }
            UiEvent::ToolCallStatus {
                call_id, status, ..
            } => match status {
                // Every call gets its `tool_call` first: `pending` before its
                // permission request, then an update when it runs.
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
            UiEvent::TurnFinished(outcome) => {
                self.calls.clear();
                self.announced.clear();
                self.pending.clear();
                self.diffs.clear();
                if let Some(waiter) = self.waiter.take() {
                    let _ = waiter.send(outcome);
                }
            }
            _ => {}
        }
    }
}

impl Handler<ApprovalRequest> for AcpFront {
    type Result = ResponseFuture<ApprovalDecision>;

    fn handle(&mut self, msg: ApprovalRequest, _: &mut Self::Context) -> Self::Result {
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
        Box::pin(async move {
            match request.await {
                Ok(answer) => convert::decision(&answer),
                Err(e) => {
                    tracing::warn!(error = %e, "permission request failed");
                    ApprovalDecision::Cancel { feedback: None }
                }
            }
        })
    }
}
