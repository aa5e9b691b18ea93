//! Ordering within a batch: which earlier calls a call must wait for.
//!
//! The common batch — reads only — costs almost nothing here: until the first call
//! that writes, reads are only remembered, and a call's completion signal becomes a
//! shareable future only when a later call actually waits for it.

use std::collections::HashMap;
use std::path::PathBuf;

use futures::future::{BoxFuture, FutureExt, Shared};
use tokio::sync::oneshot;

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
