//! The Scheduler's events, coalesced: an event is queued and the queue is sent in one
//! burst once the Scheduler's current step yields (or at once where order against
//! another message matters). A busy batch then wakes the front end once per burst
//! instead of once per event; the order of events is kept.
//!
//! Bursts are paced ([`WakePacer`]): within a batch, after one, the next waits until
//! [`WAKE_EVERY`] has passed. A batch's first events go at once, and its end sends
//! what is left, so a single call is never delayed (and sets no timer); a batch of a
//! thousand calls wakes the front end's thread about once a millisecond instead of
//! once per call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::protocol::EventSink;
use crate::protocol::UiEvent;

/// The least time between two bursts sent to another thread while a batch runs.
pub(super) const WAKE_EVERY: Duration = Duration::from_millis(1);

/// Paces the bursts one sender hands to another thread: [`WakePacer::until_due`]
/// returns at once when the last burst is [`WAKE_EVERY`] old, else when it will be.
#[derive(Default)]
pub(super) struct WakePacer {
    last: Mutex<Option<Instant>>,
}

impl WakePacer {
    /// How long the next burst must wait.
    fn delay(&self) -> Duration {
        let last = *self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.map_or(Duration::ZERO, |at| WAKE_EVERY.saturating_sub(at.elapsed()))
    }

    /// A burst is being sent now.
    pub(super) fn sent(&self) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    /// A quiet spell starts (a batch ended): the next burst goes at once.
    fn quiet(&self) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Waits until the next burst may go.
    pub(super) async fn until_due(&self) {
        let delay = self.delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

/// Events on their way to the front end.
pub(super) struct EventQueue {
    recipient: EventSink,
    pending: Mutex<Vec<UiEvent>>,
    pacer: WakePacer,
    flush_scheduled: AtomicBool,
    /// The front end shows calls requested and running, not only finished.
    call_progress: AtomicBool,
}

impl EventQueue {
    pub(super) fn new(recipient: EventSink) -> Arc<Self> {
        Arc::new(Self {
            recipient,
            pending: Mutex::new(Vec::new()),
            pacer: WakePacer::default(),
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

    pub(super) fn recipient(&self) -> &EventSink {
        &self.recipient
    }

    /// Queues an event; a flush runs when the current step of the Scheduler yields,
    /// or, right after another flush, once [`WAKE_EVERY`] has passed. Must be called on
    /// the Scheduler's arbiter.
    pub(super) fn push(self: &Arc<Self>, event: UiEvent) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
        if !self.flush_scheduled.swap(true, Ordering::AcqRel) {
            let queue = self.clone();
            let delay = self.pacer.delay();
            actix::spawn(async move {
                if delay.is_zero() {
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(delay).await;
                }
                queue.flush();
            });
        }
    }

    /// Sends everything queued, in order, now.
    pub(super) fn flush(&self) {
        self.flush_scheduled.store(false, Ordering::Release);
        let events = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if events.is_empty() {
            return;
        }
        self.pacer.sent();
        for event in events {
            self.recipient.do_send(event);
        }
    }

    /// Sends everything queued at the end of a batch; the next batch's first events
    /// then go at once (a session of one call per turn never waits for the pacer).
    pub(super) fn flush_batch_end(&self) {
        self.flush();
        self.pacer.quiet();
    }
}
