//! Handing a batch's answers to the Chat: in call order, each as soon as every call
//! before it is answered, never waiting for the whole batch.
//!
//! The Chat runs on another thread, and each hand-off to a Chat that is idle wakes that
//! thread (a system call here, a context switch there). A large batch therefore hands
//! its answers on in bursts. The calls after an answer that are answered already go
//! with it, and in a batch of more than [`PACE_FROM`] calls a burst waits until
//! [`WAKE_EVERY`](super::events::WAKE_EVERY) has passed since the last one, or until the last call of the batch
//! is answered, whichever comes first. A small batch is never paced, a batch's end is
//! never delayed, and a batch of 1,000 reads wakes the Chat about once a millisecond
//! instead of once per call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot::error::TryRecvError;
use tokio::sync::Notify;

use super::events::WakePacer;
use super::{Inner, RunningCall, Slot};
use crate::protocol::{CallAnswers, CompletedCall, ToolErrorKind};

/// Batches of at most this many calls hand each answer on at once.
const PACE_FROM: usize = 32;

/// At most this many answered calls are handed to the Chat in one burst (a bound, so
/// that a long run of finished calls still reaches it in pieces).
const DELIVERY_BURST: usize = 1024;

/// The calls of a batch not answered yet; says when the last one is.
pub(super) struct Outstanding {
    left: AtomicUsize,
    all_answered: Notify,
}

impl Outstanding {
    pub(super) fn new(calls: usize) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicUsize::new(calls),
            all_answered: Notify::new(),
        })
    }

    /// One more call has its answer.
    pub(super) fn answered_one(&self) {
        let before = self
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if before == Ok(1) {
            self.all_answered.notify_one();
        }
    }

    fn all_done(&self) -> bool {
        self.left.load(Ordering::Acquire) == 0
    }

    /// Returns once every call of the batch is answered.
    async fn all_answered(&self) {
        if !self.all_done() {
            self.all_answered.notified().await;
        }
    }
}

impl Inner {
    /// Hands every slot's answer to `answers`, in call order, in bursts (see the module
    /// documentation), until the dispatcher has sent its last slot.
    pub(super) async fn deliver(
        &self,
        mut settled: UnboundedReceiver<Slot>,
        answers: &CallAnswers,
        outstanding: &Outstanding,
        calls: usize,
    ) {
        let paced = calls > PACE_FROM;
        let pacer = WakePacer::default();
        let mut waiting: Option<Slot> = None;
        let mut burst = Vec::new();
        loop {
            let slot = match waiting.take() {
                Some(slot) => slot,
                None => match settled.recv().await {
                    Some(slot) => slot,
                    None => break,
                },
            };
            burst.push(self.settle(slot).await);
            waiting = self.take_answered(None, &mut settled, &mut burst);
            if paced && !outstanding.all_done() {
                tokio::select! {
                    _ = pacer.until_due() => {}
                    _ = outstanding.all_answered() => {}
                }
                waiting = self.take_answered(waiting, &mut settled, &mut burst);
            }
            pacer.sent();
            // A Chat that stopped listening no longer needs the answers.
            for completed in burst.drain(..) {
                let _ = answers.send(completed);
            }
        }
    }

    /// The answer of a call, once it has one (a call's task that panicked or was
    /// dropped fails that call only).
    async fn settle(&self, slot: Slot) -> Arc<CompletedCall> {
        match slot {
            Slot::Done(c) => c,
            Slot::Running(answered, running) => {
                let answer = answered.await;
                self.answer_of(answer.map_err(|_| ()), running)
            }
        }
    }

    /// Moves the slots that are answered already, in call order (`waiting` first, then
    /// what the dispatcher sent), into `burst` (at most [`DELIVERY_BURST`]); returns the
    /// first slot still waiting, if any.
    fn take_answered(
        &self,
        mut waiting: Option<Slot>,
        settled: &mut UnboundedReceiver<Slot>,
        burst: &mut Vec<Arc<CompletedCall>>,
    ) -> Option<Slot> {
        while burst.len() < DELIVERY_BURST {
            let slot = match waiting.take() {
                Some(slot) => slot,
                None => settled.try_recv().ok()?,
            };
            match slot {
                Slot::Done(c) => burst.push(c),
                Slot::Running(mut answered, running) => match answered.try_recv() {
                    Ok(answer) => burst.push(self.answer_of(Ok(answer), running)),
                    Err(TryRecvError::Closed) => burst.push(self.answer_of(Err(()), running)),
                    Err(TryRecvError::Empty) => return Some(Slot::Running(answered, running)),
                },
            }
        }
        waiting
    }

    /// A running call's answer from what its task sent (`Err`: the task was dropped
    /// without sending).
    fn answer_of(
        &self,
        answer: Result<Result<Arc<CompletedCall>, String>, ()>,
        running: RunningCall,
    ) -> Arc<CompletedCall> {
        match answer {
            Ok(Ok(c)) => c,
            Ok(Err(panic)) => self.failed(
                &running.info(),
                ToolErrorKind::UnhandledException,
                format!("Internal error while running the tool: it panicked ({panic})"),
            ),
            Err(()) => self.failed(
                &running.info(),
                ToolErrorKind::UnhandledException,
                "Internal error while running the tool: its task was dropped".to_string(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last answer wakes a waiter, once; answers past the count change nothing.
    #[tokio::test]
    async fn the_last_answer_is_noticed() {
        let outstanding = Outstanding::new(2);
        outstanding.answered_one();
        assert!(!outstanding.all_done());
        outstanding.answered_one();
        assert!(outstanding.all_done());
        // The permit was stored: waiting after the fact returns at once.
        outstanding.all_answered().await;
        outstanding.answered_one();
        assert!(outstanding.all_done());
    }
}
