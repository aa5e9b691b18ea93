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
//! serves the next job. The threads stop when the last [`FsMailbox`] is dropped.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

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
    /// Serves jobs until every mailbox handle is gone.
    fn serve(self, jobs: Receiver<FsJob>) {
        let confined = self.confined.as_ref();
        for job in jobs.iter() {
            if std::panic::catch_unwind(AssertUnwindSafe(move || job(confined))).is_err() {
                tracing::error!("a file system job panicked; its call fails, the pool goes on");
            }
        }
    }
}

/// The FileSystem actor's mailbox: where every file operation is posted. Cheap to
/// clone; the actor's threads stop when the last clone is dropped.
#[derive(Clone)]
pub struct FsMailbox {
    jobs: Sender<FsJob>,
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
        let (jobs, mailbox) = crossbeam_channel::unbounded::<FsJob>();
        for i in 0..threads.max(1) {
            let actor = FileSystem {
                confined: confined.clone(),
            };
            let mailbox = mailbox.clone();
            let started = std::thread::Builder::new()
                .name(format!("troupe-fs-{i}"))
                .spawn(move || actor.serve(mailbox));
            if let Err(e) = started {
                tracing::error!(error = %e, "cannot start a file system thread");
            }
        }
        Self { jobs }
    }

    /// Posts a job; fails only when no FileSystem thread is left to run it.
    pub fn post(&self, job: FsJob) -> Result<(), FsError> {
        self.jobs
            .send(job)
            .map_err(|_| FsError::Unavailable("no file system thread is running".into()))
    }
}
