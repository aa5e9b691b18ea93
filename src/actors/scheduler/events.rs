//! The Scheduler's events, coalesced: an event is queued and the queue is sent in one
//! burst once the Scheduler's current step yields (or at once where order against
//! another message matters). A busy batch then wakes the front end once per burst
//! instead of once per event; the order of events is kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use actix::Recipient;

use crate::protocol::UiEvent;

/// Events on their way to the front end.
pub(super) struct EventQueue {
    recipient: Recipient<UiEvent>,
    pending: Mutex<Vec<UiEvent>>,
    flush_scheduled: AtomicBool,
    /// The front end shows calls requested and running, not only finished.
    call_progress: AtomicBool,
}

impl EventQueue {
    pub(super) fn new(recipient: Recipient<UiEvent>) -> Arc<Self> {
        Arc::new(Self {
            recipient,
            pending: Mutex::new(Vec::new()),
            flush_scheduled: AtomicBool::new(false),
            call_progress: AtomicBool::new(true),
        })
    }

    /// Does the front end want `ToolCallRequested` and `ToolCallStatus`?
    pub(super) fn call_progress(&self) -> bool {
        self.call_progress.load(Ordering::Relaxed)
    }

    pub(super) fn set_call_progress(&self, wanted: bool) {
        self.call_progress.store(wanted, Ordering::Relaxed);
    }

    pub(super) fn recipient(&self) -> &Recipient<UiEvent> {
        &self.recipient
    }

    /// Queues an event; a flush runs when the current step of the Scheduler yields.
    /// Must be called on the Scheduler's arbiter.
    pub(super) fn push(self: &Arc<Self>, event: UiEvent) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
        if !self.flush_scheduled.swap(true, Ordering::AcqRel) {
            let queue = self.clone();
            actix::spawn(async move {
                tokio::task::yield_now().await;
                queue.flush();
            });
        }
    }

    /// Sends everything queued, in order, now.
    pub(super) fn flush(&self) {
        self.flush_scheduled.store(false, Ordering::Release);
        let events = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        for event in events {
            self.recipient.do_send(event);
        }
    }
}
