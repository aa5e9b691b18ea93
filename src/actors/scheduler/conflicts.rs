//! Ordering within a batch: which earlier calls a call must wait for.
//!
//! The common batch — reads only — costs almost nothing here: until the first call
//! that writes, reads are only remembered, and a call's completion signal becomes a
//! shareable future only when a later call actually waits for it.

use std::collections::HashMap;
use std::path::PathBuf;

use futures::future::{BoxFuture, FutureExt, Shared};
use tokio::sync::oneshot;

/// Below this many remembered calls, finished ones are not looked for.
const PRUNE_FLOOR: usize = 1024;

/// Completes when a call of the batch has finished.
pub(super) type DoneSignal = Shared<BoxFuture<'static, ()>>;

enum Signal {
    Pending(oneshot::Receiver<()>),
    Shared(DoneSignal),
}

/// Which earlier calls of the batch a call must wait for: the last writer of every
/// path it touches, and every reader since, when it writes (or every earlier call,
/// with `wait_for_previous`).
#[derive(Default)]
pub(super) struct ConflictTracker {
    signals: HashMap<usize, Signal>,
    /// Calls that finished are forgotten when `signals` reaches this size (a finished
    /// call holds nobody up), so a batch of 100,000 reads does not keep 100,000
    /// signals and paths until it ends.
    prune_at: usize,
    /// Reads seen before the first writer, not yet indexed by path.
    early_reads: Vec<(usize, PathBuf)>,
    last_writer: HashMap<PathBuf, usize>,
    readers: HashMap<PathBuf, Vec<usize>>,
}

impl ConflictTracker {
    /// Registers call `index` (which will signal through the returned sender) and
    /// returns what it must wait for.
    pub(super) fn add(
        &mut self,
        index: usize,
        reads: &[PathBuf],
        writes: &[PathBuf],
        after_all: bool,
    ) -> (oneshot::Sender<()>, Vec<DoneSignal>) {
        if self.signals.len() >= self.prune_at {
            self.forget_finished();
            self.prune_at = (2 * self.signals.len()).max(PRUNE_FLOOR);
        }
        let (tx, rx) = oneshot::channel();
        self.signals.insert(index, Signal::Pending(rx));
        if writes.is_empty() && !after_all && self.last_writer.is_empty() {
            self.early_reads
                .extend(reads.iter().map(|p| (index, p.clone())));
            return (tx, Vec::new());
        }
        for (i, path) in std::mem::take(&mut self.early_reads) {
            self.readers.entry(path).or_default().push(i);
        }
        let mut deps: Vec<usize> = Vec::new();
        if after_all {
            deps.extend(0..index);
        }
        for path in reads.iter().chain(writes.iter()) {
            if let Some(&w) = self.last_writer.get(path) {
                deps.push(w);
            }
        }
        for path in writes {
            if let Some(rs) = self.readers.remove(path) {
                deps.extend(rs);
            }
            self.last_writer.insert(path.clone(), index);
        }
        for path in reads {
            self.readers.entry(path.clone()).or_default().push(index);
        }
        deps.sort_unstable();
        deps.dedup();
        deps.retain(|&d| d != index);
        let waits = deps.into_iter().filter_map(|d| self.shared(d)).collect();
        (tx, waits)
    }

    /// Drops every call that has finished (or whose task is gone): later calls need not
    /// wait for it.
    fn forget_finished(&mut self) {
        self.signals.retain(|_, signal| match signal {
            Signal::Pending(rx) => {
                matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty))
            }
            Signal::Shared(shared) => shared.peek().is_none(),
        });
        let live = &self.signals;
        self.early_reads.retain(|(i, _)| live.contains_key(i));
        self.last_writer.retain(|_, i| live.contains_key(i));
        self.readers.retain(|_, rs| {
            rs.retain(|i| live.contains_key(i));
            !rs.is_empty()
        });
        self.early_reads.shrink_to(self.early_reads.len() * 2);
        self.signals.shrink_to(self.signals.len() * 2);
    }

    /// The shareable completion signal of call `index`, made on first demand.
    fn shared(&mut self, index: usize) -> Option<DoneSignal> {
        let signal = self.signals.remove(&index)?;
        let shared = match signal {
            Signal::Shared(s) => s,
            Signal::Pending(rx) => rx.map(|_| ()).boxed().shared(),
        };
        self.signals.insert(index, Signal::Shared(shared.clone()));
        Some(shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(name: &str) -> Vec<PathBuf> {
        vec![PathBuf::from(name)]
    }

    #[test]
    fn finished_reads_are_forgotten_and_running_ones_still_waited_for() {
        let mut tracker = ConflictTracker::default();
        let mut running = Vec::new();
        for i in 0..3 * PRUNE_FLOOR {
            let (done, waits) = tracker.add(i, &path(&format!("f{}", i % 7)), &[], false);
            assert!(waits.is_empty());
            // Every call but the last few finishes at once.
            if i + 3 < 3 * PRUNE_FLOOR {
                let _ = done.send(());
            } else {
                running.push(done);
            }
        }
        assert!(
            tracker.signals.len() <= PRUNE_FLOOR + 3,
            "{} calls remembered",
            tracker.signals.len()
        );
        // A write to the path of a running read waits for that read only.
        let last = 3 * PRUNE_FLOOR - 1;
        let name = format!("f{}", last % 7);
        tracker.forget_finished();
        let (_, waits) = tracker.add(3 * PRUNE_FLOOR, &[], &path(&name), false);
        assert_eq!(waits.len(), 1);
        assert_eq!(tracker.signals.len(), 4);
        // A write to a path whose readers all finished waits for nothing.
        let (_, waits) = tracker.add(3 * PRUNE_FLOOR + 1, &[], &path("f0"), false);
        assert!(waits.is_empty());
        drop(running);
    }
}
