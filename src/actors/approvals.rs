//! The approval requests a session has put to its front end and not yet had answered.
//!
//! An actor that needs the user's word (the Scheduler for a call, the Chat when loop
//! detection fires) calls [`Approvals::ask`]: the request goes out on the session's
//! event stream as [`Event::Approval`] with a fresh [`ApprovalId`], and the ask waits
//! until the front end answers with [`Op::Decide`](crate::protocol::Op::Decide)
//! ([`Approvals::decide`]). When the session ends ([`Approvals::close`]) every
//! waiting ask gets `None`, which the asker takes as a refusal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::protocol::{ApprovalDecision, ApprovalId, ApprovalRequest, Event, EventSink, OpError};

/// The session's table of approval requests waiting for an answer. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Approvals {
    inner: Arc<Table>,
    /// The subagent whose requests these are (`<agent id> (<name>)`), shown with each.
    agent: Option<Arc<str>>,
}

#[derive(Debug)]
struct Table {
    events: EventSink,
    next: AtomicU64,
    /// `None` once the session closed the table: asks answer `None` at once.
    waiting: Mutex<Option<HashMap<u64, oneshot::Sender<ApprovalDecision>>>>,
}

impl Approvals {
    /// A table whose requests go out on `events`.
    pub fn new(events: EventSink) -> Self {
        Self {
            inner: Arc::new(Table {
                events,
                next: AtomicU64::new(1),
                waiting: Mutex::new(Some(HashMap::new())),
            }),
            agent: None,
        }
    }

    /// The same table, for a subagent's requests: each names the agent, and the front
    /// end answers it like any other request of the session.
    pub fn for_agent(&self, agent_id: &str, name: &str) -> Self {
        Self {
            inner: self.inner.clone(),
            agent: Some(format!("{agent_id} ({name})").into()),
        }
    }

    /// Puts `request` to the front end and waits for its answer; `None` when none
    /// can come (the session ended). Dropping the future withdraws the request (a
    /// late answer is then [`OpError::UnknownApproval`]).
    pub async fn ask(&self, mut request: ApprovalRequest) -> Option<ApprovalDecision> {
        if request.agent.is_none() {
            request.agent = self.agent.clone();
        }
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut waiting = self.lock();
            waiting.as_mut()?.insert(id, tx);
        }
        let _withdraw = Withdraw { table: self, id };
        self.inner.events.send_event(Event::Approval {
            id: ApprovalId(id),
            request,
        });
        rx.await.ok()
    }

    /// Answers request `id`.
    pub fn decide(&self, id: ApprovalId, decision: ApprovalDecision) -> Result<(), OpError> {
        let sender = self.lock().as_mut().and_then(|w| w.remove(&id.0));
        match sender {
            Some(sender) => {
                // The asker may have gone in between (its call was cancelled).
                let _ = sender.send(decision);
                Ok(())
            }
            None => Err(OpError::UnknownApproval(id.0)),
        }
    }

    /// How many requests wait for an answer.
    #[cfg(test)]
    fn pending(&self) -> usize {
        self.lock().as_ref().map_or(0, HashMap::len)
    }

    /// Ends the table: every waiting ask, and every later one, answers `None`.
    pub fn close(&self) {
        self.lock().take();
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<HashMap<u64, oneshot::Sender<ApprovalDecision>>>> {
        self.inner.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Removes an ask's entry when the ask ends, answered or not.
struct Withdraw<'a> {
    table: &'a Approvals,
    id: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Some(waiting) = self.table.lock().as_mut() {
            waiting.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ConfirmationDetails;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            tool_name: "write_file".into(),
            args: serde_json::Value::Null,
            agent: None,
            details: ConfirmationDetails::Info {
                title: "t".into(),
                prompt: "p".into(),
            },
        }
    }

    #[tokio::test]
    async fn an_answer_reaches_the_asker_once() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let approvals = Approvals::new(EventSink::new(tx));
        let asking = tokio::spawn({
            let approvals = approvals.clone();
            async move { approvals.ask(request()).await }
        });
        let Some(Event::Approval { id, request }) = rx.recv().await else {
            panic!("no approval event");
        };
        assert_eq!(request.call_id, "c1");
        assert_eq!(approvals.pending(), 1);
        approvals
            .decide(id, ApprovalDecision::ProceedOnce)
            .expect("waiting");
        assert_eq!(
            asking.await.expect("joined"),
            Some(ApprovalDecision::ProceedOnce)
        );
        assert_eq!(
            approvals.decide(id, ApprovalDecision::ProceedOnce),
            Err(OpError::UnknownApproval(id.0))
        );
        assert_eq!(approvals.pending(), 0);
    }

    #[tokio::test]
    async fn closing_answers_every_waiting_ask_with_none() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let approvals = Approvals::new(EventSink::new(tx));
        let asking = tokio::spawn({
            let approvals = approvals.clone();
            async move { approvals.ask(request()).await }
        });
        assert!(matches!(rx.recv().await, Some(Event::Approval { .. })));
        approvals.close();
        assert_eq!(asking.await.expect("joined"), None);
        assert_eq!(approvals.ask(request()).await, None);
    }

    #[tokio::test]
    async fn a_withdrawn_ask_leaves_nothing_waiting() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let approvals = Approvals::new(EventSink::new(tx));
        let ask = approvals.ask(request());
        let timed = tokio::time::timeout(std::time::Duration::from_millis(1), ask).await;
        assert!(timed.is_err(), "nobody answered");
        let Some(Event::Approval { id, .. }) = rx.recv().await else {
            panic!("no approval event");
        };
        assert_eq!(approvals.pending(), 0);
        assert_eq!(
            approvals.decide(id, ApprovalDecision::ProceedOnce),
            Err(OpError::UnknownApproval(id.0))
        );
    }
}
