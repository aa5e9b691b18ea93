//! The FileSystem actor's mailbox and threads.
//!
//! The actor is `tools.fs_threads` threads that each own a [`FileSystem`] (the
//! confined workspace) and serve one shared mailbox, a crossbeam channel of jobs. A
//! caller posts a job straight into that channel and awaits its answer on a oneshot
//! channel of its own: a read crosses from the caller's thread to a pool thread and
//! back, nothing in between (actix's `SyncArbiter` put a forwarder actor on the System
//! arbiter in the way, one more thread hand-off per file operation).
//!
//! A job that panics fails only its own call: the panic is caught on the pool thread
//! (its answer channel is dropped, which the caller sees as an error) and the thread
//! serves the next job. The threads stop when the last [`FsMailbox`] is dropped, or
//! when [`FsMailbox::stop`] says so (the session's shutdown), whoever still holds a
//! handle.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use super::{Confined, FsError};

/// One unit of work for the FileSystem actor, run on one of its threads with the
/// confined workspace at hand.
pub type FsJob = Box<dyn FnOnce(&Confined) + Send>;

/// The FileSystem actor's state on one of its threads.
pub struct FileSystem {
    confined: Arc<Confined>,
}

impl FileSystem {
    /// Serves jobs until every mailbox handle is gone or a stop (`None`) arrives.
    fn serve(self, jobs: Receiver<Option<FsJob>>) {
        let confined = self.confined.as_ref();
        for job in jobs.iter() {
            let Some(job) = job else {
                return;
            };
            if std::panic::catch_unwind(AssertUnwindSafe(move || job(confined))).is_err() {
                tracing::error!("a file system job panicked; its call fails, the pool goes on");
            }
        }
    }
}

/// The FileSystem actor's mailbox: where every file operation is posted. Cheap to
/// clone; the actor's threads stop when the last clone is dropped, or at
/// [`FsMailbox::stop`].
#[derive(Clone)]
pub struct FsMailbox {
    /// Jobs; `None` stops the thread that takes it.
    jobs: Sender<Option<FsJob>>,
    /// The running threads (taken by the first [`FsMailbox::stop`]).
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl std::fmt::Debug for FsMailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsMailbox")
            .field("queued", &self.jobs.len())
            .finish()
    }
}

impl FsMailbox {
    /// Starts `threads` (at least one) FileSystem threads on `confined`. A thread the
    /// system refuses to start is logged; with none started, every job fails with
    /// [`FsError::Unavailable`].
    pub fn start(confined: Arc<Confined>, threads: usize) -> Self {
        let (jobs, mailbox) = crossbeam_channel::unbounded::<Option<FsJob>>();
        let mut running = Vec::new();
        for i in 0..threads.max(1) {
            let actor = FileSystem {
                confined: confined.clone(),
            };
            let mailbox = mailbox.clone();
            let started = std::thread::Builder::new()
                .name(format!("troupe-fs-{i}"))
                .spawn(move || actor.serve(mailbox));
            match started {
                Ok(handle) => running.push(handle),
                Err(e) => tracing::error!(error = %e, "cannot start a file system thread"),
            }
        }
        Self {
            jobs,
            threads: Arc::new(Mutex::new(running)),
        }
    }

    /// Posts a job; fails only when no FileSystem thread is left to run it.
    pub fn post(&self, job: FsJob) -> Result<(), FsError> {
        self.jobs
            .send(Some(job))
            .map_err(|_| FsError::Unavailable("no file system thread is running".into()))
    }

    /// Stops every thread once the jobs already posted are done, and returns them to
    /// be joined (joining blocks: do it off the actix arbiters). Jobs posted later fail
    /// with [`FsError::Unavailable`]. A second call returns nothing.
    pub fn stop(&self) -> Vec<JoinHandle<()>> {
        let threads = self
            .threads
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for _ in &threads {
            let _ = self.jobs.send(None);
        }
        threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::workspace::Workspace;

    /// `stop` ends every thread after the jobs already posted, whoever still holds a
    /// handle; a job posted later fails; a second `stop` has nothing to return.
    #[test]
    fn stop_ends_every_thread_even_with_handles_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Arc::new(Workspace::new(dir.path(), &[]).expect("workspace"));
        let confined = Arc::new(Confined::new(ws).expect("confined"));
        let mailbox = FsMailbox::start(confined, 3);
        let kept = mailbox.clone();
        let (done_tx, done) = crossbeam_channel::unbounded();
        for _ in 0..10 {
            let done_tx = done_tx.clone();
            kept.post(Box::new(move |_| {
                let _ = done_tx.send(());
            }))
            .expect("posted");
        }
        let threads = mailbox.stop();
        assert_eq!(threads.len(), 3);
        for thread in threads {
            thread.join().expect("the thread ended");
        }
        assert_eq!(done.try_iter().count(), 10, "the jobs posted first ran");
        assert!(kept.post(Box::new(|_| {})).is_err());
        assert!(kept.stop().is_empty());
    }
}
