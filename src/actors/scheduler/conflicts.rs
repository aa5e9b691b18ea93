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

/// How a call is grouped with its neighbours (gemini-cli's batching rule): the calls
/// of an answer run in waves, each starting when the wave before it has finished. A
/// contiguous run of calls of one grouping is one wave, except that a call that runs
/// alone is a wave by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Grouping {
    /// Runs at once with the contiguous parallel calls around it (the default).
    Parallel,
    /// An edit (`replace`, `write_file`): runs at once with the contiguous edits around
    /// it (calls of one path still in call order), after the calls before them and
    /// before the calls after them.
    Edit,
    /// `wait_for_previous: true`, or a tool that runs alone (`update_topic`).
    Alone,
}

impl Grouping {
    /// How a call of `tool` with `args` is grouped (gemini-cli's rule: a tool that runs
    /// alone, whatever the call says; then `wait_for_previous: true`; then edits).
    pub(super) fn of(
        tool: &dyn crate::tools::registry::ToolHandle,
        args: &serde_json::Value,
    ) -> Self {
        let facts = tool.facts();
        if facts.runs_alone || crate::tools::wait_for_previous::requested(args) {
            Self::Alone
        } else if facts.is_edit() {
            Self::Edit
        } else {
            Self::Parallel
        }
    }
}

/// Which earlier calls of the batch a call must wait for: every call of the wave
/// before its own ([`Grouping`]), the last writer of every path it touches, and every
/// reader since, when it writes.
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
    /// The calls of the wave before the current one: a call of the current wave
    /// waits for them, through one signal made on first demand.
    previous_wave: Vec<usize>,
    previous_done: Option<DoneSignal>,
    /// The calls of the current wave, and how they are grouped (`None`: no call yet).
    wave: Vec<usize>,
    wave_grouping: Option<Grouping>,
}

impl ConflictTracker {
    /// Registers call `index` (which will signal through the returned sender) and
    /// returns what it must wait for.
    pub(super) fn add(
        &mut self,
        index: usize,
        reads: &[PathBuf],
        writes: &[PathBuf],
        grouping: Grouping,
    ) -> (oneshot::Sender<()>, Vec<DoneSignal>) {
        if self.signals.len() >= self.prune_at {
            self.forget_finished();
            self.prune_at = (2 * self.signals.len()).max(PRUNE_FLOOR);
        }
        let (tx, rx) = oneshot::channel();
        self.signals.insert(index, Signal::Pending(rx));
        self.join_wave(index, grouping);
        let after_wave = self.previous_wave_done();
        if writes.is_empty() && after_wave.is_none() && self.last_writer.is_empty() {
            self.early_reads
                .extend(reads.iter().map(|p| (index, p.clone())));
            return (tx, Vec::new());
        }
        for (i, path) in std::mem::take(&mut self.early_reads) {
            self.readers.entry(path).or_default().push(i);
        }
        let mut deps: Vec<usize> = Vec::new();
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
        let waits = after_wave
            .into_iter()
            .chain(deps.into_iter().filter_map(|d| self.shared(d)))
            .collect();
        (tx, waits)
    }

    /// Completes when every call of the wave before the current one has finished;
    /// `None` when there is nothing to wait for (the first wave).
    fn previous_wave_done(&mut self) -> Option<DoneSignal> {
        if self.previous_done.is_none() && !self.previous_wave.is_empty() {
            let signals: Vec<DoneSignal> = std::mem::take(&mut self.previous_wave)
                .into_iter()
                .filter_map(|d| self.shared(d))
                .collect();
            let all = futures::future::join_all(signals).map(|_| ());
            self.previous_done = Some(all.boxed().shared());
        }
        self.previous_done.clone()
    }

    /// Puts call `index` in the current wave, or opens a new one after it.
    fn join_wave(&mut self, index: usize, grouping: Grouping) {
        if self.wave_grouping != Some(grouping) || grouping == Grouping::Alone {
            self.previous_wave = std::mem::take(&mut self.wave);
            self.previous_done = None;
            self.wave_grouping = Some(grouping);
        }
        self.wave.push(index);
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
        self.previous_wave.retain(|i| live.contains_key(i));
        self.wave.retain(|i| live.contains_key(i));
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

    /// Whether everything in `waits` has completed.
    fn ready(waits: &[DoneSignal]) -> bool {
        waits.iter().all(|w| w.clone().now_or_never().is_some())
    }

    #[test]
    fn calls_run_in_waves_as_gemini_cli_groups_them() {
        use Grouping::{Alone, Edit, Parallel};
        let mut t = ConflictTracker::default();
        let mut add = |i: usize, writes: &[PathBuf], g: Grouping| t.add(i, &[], writes, g);
        let (d0, w0) = add(0, &[], Parallel);
        let (d1, w1) = add(1, &[], Parallel);
        assert!(
            w0.is_empty() && w1.is_empty(),
            "the first wave waits for nothing"
        );
        let (d2, w2) = add(2, &[], Alone);
        let (d3, w3) = add(3, &[], Parallel);
        let (d4, w4) = add(4, &[], Parallel);
        let (d5, w5) = add(5, &path("a"), Edit);
        let (d6, w6) = add(6, &path("b"), Edit);
        let (_d7, w7) = add(7, &path("a"), Edit);
        let (_d8, w8) = add(8, &[], Parallel);
        let _ = d0.send(());
        assert!(
            !ready(&w2),
            "a call that runs alone waits for every earlier call"
        );
        let _ = d1.send(());
        assert!(ready(&w2));
        assert!(!ready(&w3) && !ready(&w4), "the calls after it wait for it");
        let _ = d2.send(());
        assert!(ready(&w3) && ready(&w4), "the next wave runs together");
        let _ = d3.send(());
        assert!(!ready(&w5) && !ready(&w6));
        let _ = d4.send(());
        assert!(
            ready(&w5) && ready(&w6),
            "edits of different files run together"
        );
        assert!(
            !ready(&w7),
            "an edit of the same file waits for the earlier one"
        );
        let _ = d5.send(());
        assert!(ready(&w7));
        assert!(
            !ready(&w8),
            "the calls after the edits wait for all of them"
        );
        let _ = d6.send(());
        assert!(!ready(&w8));
    }

    #[test]
    fn finished_reads_are_forgotten_and_running_ones_still_waited_for() {
        let mut tracker = ConflictTracker::default();
        let mut running = Vec::new();
        for i in 0..3 * PRUNE_FLOOR {
            let (done, waits) =
                tracker.add(i, &path(&format!("f{}", i % 7)), &[], Grouping::Parallel);
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
        let (_, waits) = tracker.add(3 * PRUNE_FLOOR, &[], &path(&name), Grouping::Parallel);
        assert_eq!(waits.len(), 1);
        assert_eq!(tracker.signals.len(), 4);
        // A write to a path whose readers all finished waits for nothing.
        let (_, waits) = tracker.add(3 * PRUNE_FLOOR + 1, &[], &path("f0"), Grouping::Parallel);
        assert!(waits.is_empty());
        drop(running);
    }
}
