//! How far the reader of a session's events (its front end) has handled them, so that
//! something the session does next can wait until the front end has passed on what it
//! was told before: an ACP client gets a call's `tool_call` before the `fs/*` requests
//! the call makes (the two go out from different tasks).

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

use crate::protocol::EventSink;

/// A waiter on the front end's progress through the session's events.
#[derive(Debug, Clone)]
pub struct HandledEvents {
    sent_by: EventSink,
    handled: watch::Receiver<u64>,
}

impl HandledEvents {
    /// Returns once the front end has handled every event sent before this call, or
    /// once the event stream is over.
    pub async fn caught_up(&self) {
        let sent = self.sent_by.sent();
        let mut handled = self.handled.clone();
        let _ = handled.wait_for(|done| *done >= sent).await;
    }
}

/// The reader's side: counts the events it takes and says, each time it asks for the
/// next one, that every event taken before is handled.
#[derive(Debug)]
pub(super) struct EventCount {
    taken: AtomicU64,
    handled: watch::Sender<u64>,
}

impl EventCount {
    pub(super) fn new() -> Self {
        Self {
            taken: AtomicU64::new(0),
            handled: watch::Sender::new(0),
        }
    }

    /// The reader asks for the next event: it is done with the ones it took.
    pub(super) fn asking(&self) {
        self.handled.send_replace(self.taken.load(Ordering::SeqCst));
    }

    /// The reader took one event off the stream.
    pub(super) fn took(&self) {
        self.taken.fetch_add(1, Ordering::SeqCst);
    }

    /// The stream is over: nobody waits any more.
    pub(super) fn over(&self) {
        self.handled.send_replace(u64::MAX);
    }

    /// A waiter for events sent through `sink`.
    pub(super) fn waiter(&self, sink: &EventSink) -> HandledEvents {
        HandledEvents {
            sent_by: sink.clone(),
            handled: self.handled.subscribe(),
        }
    }
}
