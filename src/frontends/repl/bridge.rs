//! The REPL's event loop on the actix side ([`pump`]): reads the session's events
//! from its handle, keeps the session statistics (and the calls for `--trace`), and
//! forwards every event to the REPL thread over a crossbeam channel (unbounded, so
//! the loop never blocks its arbiter), where they are rendered. An approval request
//! goes to the REPL thread with its id; the REPL asks the user and answers with
//! `Op::Decide`.

use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;

use crate::actors::session::SessionHandle;
use crate::engine::stats::SessionStats;
use crate::frontends::headless::CallRecord;
use crate::protocol::{ApprovalDecision, ApprovalId, ApprovalRequest, Event, Op, UiEvent};

/// What the event loop sends to the REPL thread.
#[derive(Debug)]
pub enum FrontMsg {
    Event(UiEvent),
    /// A call waits for the user's answer: `Op::Decide` with this `id`.
    Approval {
        id: ApprovalId,
        request: Box<ApprovalRequest>,
    },
}

/// The calls of an interactive session kept for `--trace FILE` (set only when asked;
/// written when the session ends).
pub static TRACE_CALLS: std::sync::OnceLock<Mutex<Vec<CallRecord>>> = std::sync::OnceLock::new();

/// Statistics shared by the event loop (which records) and the REPL (which shows them).
pub type SharedStats = Arc<Mutex<SessionStats>>;

/// The REPL's event loop: runs on the session's arbiter until the event stream ends
/// (the session is over); `out` is then dropped, which the REPL thread sees.
pub async fn pump(
    handle: Arc<SessionHandle>,
    out: Sender<FrontMsg>,
    stats: SharedStats,
    edits: super::edits::EditLog,
) {
    let facts = handle.tool_facts();
    while let Some(event) = handle.next_event().await {
        match event {
            Event::Ui(event) => {
                record(&stats, &event);
                if let UiEvent::ToolCallCompleted(call) = &event {
                    super::edits::note(&edits, call, facts.get(&call.name));
                }
                if out.send(FrontMsg::Event(event)).is_err() {
                    tracing::debug!("the REPL is gone; event dropped");
                }
            }
            Event::Approval { id, request } => {
                let request = Box::new(request);
                if out.send(FrontMsg::Approval { id, request }).is_err() {
                    // Nobody can answer: the call is refused.
                    let decision = ApprovalDecision::Cancel { feedback: None };
                    handle.submit(Op::Decide { id, decision });
                }
            }
            // The REPL waits for the answers it needs (`request_blocking`); a refused
            // prompt or command was told to the user by the session's own notice.
            Event::OpDone { op, result } => {
                if let Err(e) = result {
                    tracing::debug!(op = op.0, "op refused: {e}");
                }
            }
        }
    }
}

/// Keeps the statistics and the `--trace` calls of `event`.
fn record(stats: &SharedStats, event: &UiEvent) {
    if let Ok(mut stats) = stats.lock() {
        stats.record(event);
    }
    if let (UiEvent::ToolCallCompleted(call), Some(trace)) = (event, TRACE_CALLS.get()) {
        if let Ok(mut calls) = trace.lock() {
            calls.push(CallRecord::of(call));
        }
    }
}
