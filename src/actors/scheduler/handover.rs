//! Finished calls handed to the Chat in small bursts instead of one at a time.
//!
//! The Chat's thread has little to do per answer, so during a large batch it went back
//! to sleep after almost every one and the next answer woke it again: on the 2-core
//! VM, a run of 1,000 reads woke it about 480 times, each wake a syscall here and a
//! context switch and an `epoll_wait` there. Answers now wait here until
//! [`MAX_HELD`] are ready or the oldest has waited [`HOLD`], and go on together (one
//! wake for the burst). The batch's last answers go at once when the batch ends, so
//! a batch is never answered later than before; nothing but the Chat's gathering,
//! which only matters when the round is over, sees an answer up to [`HOLD`] later.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::protocol::{CallAnswers, CompletedCall};

/// How long a finished call may wait for others before it goes on alone.
pub(super) const HOLD: Duration = Duration::from_millis(1);

/// Finished calls that go on together at once, without waiting for [`HOLD`].
pub(super) const MAX_HELD: usize = 64;

/// Finished calls on their way to the Chat, in call order.
pub(super) struct Handover<'a> {
    answers: &'a CallAnswers,
    held: Vec<Arc<CompletedCall>>,
    /// When the oldest held call was finished.
    since: Option<Instant>,
}

impl<'a> Handover<'a> {
    pub(super) fn new(answers: &'a CallAnswers) -> Self {
        Self {
            answers,
            held: Vec::new(),
            since: None,
        }
    }

    /// Holds the next call's answer; sends what is held once it is enough or old enough.
    pub(super) fn push(&mut self, completed: Arc<CompletedCall>) {
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        self.held.push(completed);
        if self.held.len() >= MAX_HELD || now.duration_since(since) >= HOLD {
            self.flush();
        }
    }

    /// When what is held must go even if no other call finishes; `None` when nothing is.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.since.map(|since| since + HOLD)
    }

    /// Sends everything held, in order.
    pub(super) fn flush(&mut self) {
        self.since = None;
        for completed in self.held.drain(..) {
            // A Chat that stopped listening no longer needs the answer.
            let _ = self.answers.send(completed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::content::CallArgs;
    use crate::protocol::{CallStatus, CallTimeline};

    fn finished(id: usize) -> Arc<CompletedCall> {
        Arc::new(CompletedCall {
            call_id: format!("c{id}"),
            name: "read_file".into(),
            args: CallArgs::new(serde_json::json!({})),
            status: CallStatus::Success,
            response_parts: Vec::new(),
            display: String::new(),
            error: None,
            duration: Duration::ZERO,
            data: None,
            timeline: CallTimeline::default(),
        })
    }

    fn received(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Arc<CompletedCall>>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|c| c.call_id.clone())
            .collect()
    }

    #[test]
    fn answers_wait_until_enough_are_ready_and_then_go_together_in_order() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut handover = Handover::new(&tx);
        assert_eq!(handover.deadline(), None, "nothing held, nothing due");
        handover.push(finished(0));
        let due = handover.deadline().expect("a held answer has a deadline");
        assert!(due <= Instant::now() + HOLD);
        for id in 1..MAX_HELD - 1 {
            handover.push(finished(id));
        }
        assert!(received(&mut rx).is_empty(), "fewer than MAX_HELD are held");
        handover.push(finished(MAX_HELD - 1));
        let expected: Vec<String> = (0..MAX_HELD).map(|i| format!("c{i}")).collect();
        assert_eq!(received(&mut rx), expected);
        assert_eq!(handover.deadline(), None);
    }

    #[test]
    fn an_answer_older_than_the_hold_goes_with_the_next_one_and_flush_sends_the_rest() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut handover = Handover::new(&tx);
        handover.push(finished(0));
        std::thread::sleep(HOLD + Duration::from_millis(1));
        handover.push(finished(1));
        assert_eq!(received(&mut rx), ["c0", "c1"]);
        handover.push(finished(2));
        assert!(received(&mut rx).is_empty());
        handover.flush();
        assert_eq!(received(&mut rx), ["c2"]);
        handover.flush();
        assert!(
            received(&mut rx).is_empty(),
            "a flush of nothing sends nothing"
        );
    }
}
