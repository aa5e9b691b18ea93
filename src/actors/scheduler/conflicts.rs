//! Ordering within a batch: which earlier calls a call must wait for.

use std::collections::HashMap;
use std::path::PathBuf;

use futures::future::{BoxFuture, Shared};

/// Completes when a call of the batch has finished.
pub(super) type DoneSignal = Shared<BoxFuture<'static, ()>>;

/// Which earlier calls of the batch a call must wait for: the last writer of every
/// path it touches, and every reader since, when it writes.
#[derive(Default)]
pub(super) struct ConflictTracker {
    pub(super) signals: HashMap<usize, DoneSignal>,
    last_writer: HashMap<PathBuf, usize>,
    readers: HashMap<PathBuf, Vec<usize>>,
}

impl ConflictTracker {
    pub(super) fn add(
        &mut self,
        index: usize,
        reads: Vec<PathBuf>,
        writes: Vec<PathBuf>,
        after_all: bool,
    ) -> Vec<DoneSignal> {
        let mut deps: Vec<usize> = Vec::new();
        if after_all {
            deps.extend(0..index);
        }
        for path in reads.iter().chain(writes.iter()) {
            if let Some(&w) = self.last_writer.get(path) {
                deps.push(w);
            }
        }
        for path in &writes {
            if let Some(rs) = self.readers.remove(path) {
                deps.extend(rs);
            }
            self.last_writer.insert(path.clone(), index);
        }
        for path in reads {
            self.readers.entry(path).or_default().push(index);
        }
        deps.sort_unstable();
        deps.dedup();
        deps.into_iter()
            .filter_map(|i| self.signals.get(&i).cloned())
            .collect()
    }
}
