//! The REPL's actor on the actix side: forwards every [`UiEvent`] to the REPL thread
//! over a crossbeam channel (unbounded, so a handler never blocks its arbiter), keeps
//! the session statistics, and answers the Scheduler's approval requests with the
//! REPL's decision, which comes back on a oneshot channel.

use std::sync::{Arc, Mutex};

use actix::prelude::*;
use crossbeam_channel::Sender;
use tokio::sync::oneshot;

use crate::engine::stats::SessionStats;
use crate::frontends::headless::CallRecord;
use crate::protocol::{ApprovalDecision, ApprovalRequest, UiEvent};

/// What the actors send to the REPL thread.
#[derive(Debug)]
pub enum FrontMsg {
    Event(UiEvent),
    /// A call waits for the user's answer, to be sent on `reply`. Dropping `reply`
    /// refuses the call.
    Approval {
        request: ApprovalRequest,
        reply: oneshot::Sender<ApprovalDecision>,
    },
}

/// The calls of an interactive session kept for `--trace FILE` (set only when asked;
/// written when the session ends).
pub static TRACE_CALLS: std::sync::OnceLock<Mutex<Vec<CallRecord>>> = std::sync::OnceLock::new();

/// Statistics shared by the bridge (which records) and the REPL (which shows them).
pub type SharedStats = Arc<Mutex<SessionStats>>;

/// The bridge actor: the REPL's event sink and approver inside the actor system.
pub struct ReplBridge {
    out: Sender<FrontMsg>,
    stats: SharedStats,
}

impl ReplBridge {
    pub fn new(out: Sender<FrontMsg>, stats: SharedStats) -> Self {
        Self { out, stats }
    }
}

impl Actor for ReplBridge {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1 << 20);
    }
}

impl Handler<UiEvent> for ReplBridge {
    type Result = ();

    fn handle(&mut self, event: UiEvent, _: &mut Self::Context) {
        if let Ok(mut stats) = self.stats.lock() {
            stats.record(&event);
        }
        if let (UiEvent::ToolCallCompleted(call), Some(trace)) = (&event, TRACE_CALLS.get()) {
            if let Ok(mut calls) = trace.lock() {
                calls.push(CallRecord::of(call));
            }
        }
        if self.out.send(FrontMsg::Event(event)).is_err() {
            tracing::debug!("the REPL is gone; event dropped");
        }
    }
}

impl Handler<ApprovalRequest> for ReplBridge {
    type Result = ResponseFuture<ApprovalDecision>;

    fn handle(&mut self, request: ApprovalRequest, _: &mut Self::Context) -> Self::Result {
        let (reply, answer) = oneshot::channel();
        let sent = self.out.send(FrontMsg::Approval { request, reply });
        Box::pin(async move {
            if sent.is_err() {
                return ApprovalDecision::Cancel { feedback: None };
            }
            answer
                .await
                .unwrap_or(ApprovalDecision::Cancel { feedback: None })
        })
    }
}
