//! What a session started that must end with it: its arbiters (the Scheduler's, the
//! background one of the recorder and the corrector, the checkpointer's, the tool
//! arbiters), the FileSystem pool, the MCP servers (each with an arbiter and perhaps a
//! process), the background shell processes and the sweep of stale temps.
//! [`Teardown::finish`] ends them all and waits for their threads; a teardown dropped
//! unfinished (a start that failed half way, or a session never shut down) ends them
//! in the background.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use actix::prelude::*;

use super::SessionError;
use crate::mcp::McpHub;
use crate::platform::filesystem::stale_temps::Sweep;
use crate::platform::filesystem::FsMailbox;
use crate::tools::shell::background::BackgroundProcesses;

/// The longest a shutdown waits for the stopped threads to exit (a thread stuck in a
/// blocking call is then left behind, with a warning in the log).
pub const JOIN_WAIT: Duration = Duration::from_secs(10);

/// Everything a session started that outlives a dropped handle.
#[derive(Default)]
pub(super) struct Teardown {
    parts: Parts,
}

#[derive(Default)]
struct Parts {
    arbiters: Vec<Arbiter>,
    fs: Option<FsMailbox>,
    mcp: Option<Arc<McpHub>>,
    processes: Option<Arc<BackgroundProcesses>>,
    sweep: Option<Sweep>,
}

/// Stopped threads, to be joined.
struct Joins {
    arbiters: Vec<Arbiter>,
    fs: Vec<JoinHandle<()>>,
}

impl Teardown {
    /// Starts an arbiter (a thread with its runtime) that the teardown stops.
    pub(super) fn arbiter(&mut self) -> Result<ArbiterHandle, SessionError> {
        let arbiter = Arbiter::try_new().map_err(SessionError::Thread)?;
        let handle = arbiter.handle();
        self.parts.arbiters.push(arbiter);
        Ok(handle)
    }

    /// The FileSystem pool, stopped after the rest.
    pub(super) fn fs(&mut self, mailbox: FsMailbox) {
        self.parts.fs = Some(mailbox);
    }

    /// The MCP servers, shut down (processes reaped) before their arbiters stop.
    pub(super) fn mcp(&mut self, hub: Arc<McpHub>) {
        self.parts.mcp = Some(hub);
    }

    /// The background shell processes, ended first.
    pub(super) fn processes(&mut self, processes: Arc<BackgroundProcesses>) {
        self.parts.processes = Some(processes);
    }

    /// The sweep of stale temps, waited for.
    pub(super) fn sweep(&mut self, sweep: Sweep) {
        self.parts.sweep = Some(sweep);
    }

    /// Ends everything, in order: background shell processes (SIGTERM, a grace,
    /// SIGKILL), MCP servers (connections closed, processes reaped), the sweep; then
    /// stops the FileSystem pool and every arbiter and waits (at most [`JOIN_WAIT`],
    /// on a thread of its own: joining blocks) for their threads to exit.
    pub(super) async fn finish(mut self) {
        std::mem::take(&mut self.parts).end().await;
    }

    /// [`Teardown::finish`] for a process that exits next: what outlives the process
    /// unless ended (background shell processes, MCP servers) and the sweep end as
    /// there, but the FileSystem pool and the arbiters are neither stopped nor joined.
    /// They are idle (the session's turn is over and its recorder flushed) and the
    /// exit ends them; waiting for each to free its memory and unmap its stack cost
    /// about a millisecond at the end of a 1,000-call `-p` run.
    pub(super) async fn finish_before_exit(mut self) {
        let mut parts = std::mem::take(&mut self.parts);
        parts.end_outside().await;
        // Leaked on purpose: dropping the arbiters' and the pool's senders would end
        // their threads now, which is the work this skips.
        std::mem::forget(parts);
    }
}

impl Parts {
    fn is_empty(&self) -> bool {
        self.arbiters.is_empty()
            && self.fs.is_none()
            && self.mcp.is_none()
            && self.processes.is_none()
            && self.sweep.is_none()
    }

    async fn end(mut self) {
        self.end_outside().await;
        self.stop_now().wait().await;
    }

    /// Ends what lives outside the session's threads: background shell processes
    /// (SIGTERM, a grace, SIGKILL), MCP servers (connections closed, processes reaped;
    /// their arbiters join the others), and waits for the sweep.
    async fn end_outside(&mut self) {
        if let Some(processes) = self.processes.take() {
            processes.shutdown().await;
        }
        if let Some(hub) = self.mcp.take() {
            let arbiters = hub.shutdown().await;
            self.arbiters.extend(arbiters);
        }
        if let Some(mut sweep) = self.sweep.take() {
            sweep.finished().await;
        }
    }

    /// Tells the pool's threads and the arbiters to stop, without waiting for them.
    fn stop_now(&mut self) -> Joins {
        let fs = self.fs.take().map(|fs| fs.stop()).unwrap_or_default();
        let arbiters = std::mem::take(&mut self.arbiters);
        for arbiter in &arbiters {
            arbiter.stop();
        }
        Joins { arbiters, fs }
    }
}

impl Joins {
    fn join(self) {
        for arbiter in self.arbiters {
            if arbiter.join().is_err() {
                tracing::warn!("a session arbiter ended in a panic");
            }
        }
        for thread in self.fs {
            let _ = thread.join();
        }
    }

    /// Joins the threads on a thread of its own and waits for it (at most
    /// [`JOIN_WAIT`]).
    async fn wait(self) {
        if self.arbiters.is_empty() && self.fs.is_empty() {
            return;
        }
        let (done, joined) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("troupe-join".into())
            .spawn(move || {
                self.join();
                let _ = done.send(());
            });
        match spawned {
            Ok(_) => {
                if tokio::time::timeout(JOIN_WAIT, joined).await.is_err() {
                    tracing::warn!("the session's threads did not all end in time");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot wait for the session's threads"),
        }
    }
}

/// A teardown dropped unfinished (a start that failed half way or was abandoned, a
/// session never shut down) ends what it holds in the background, on a thread of its
/// own with a runtime of its own: the actix arbiter it is dropped on may be ending.
impl Drop for Teardown {
    fn drop(&mut self) {
        if self.parts.is_empty() {
            return;
        }
        let mut parts = std::mem::take(&mut self.parts);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let spawned = match runtime {
            Ok(runtime) => std::thread::Builder::new()
                .name("troupe-teardown".into())
                .spawn(move || runtime.block_on(parts.end())),
            Err(e) => {
                tracing::warn!(error = %e, "cannot end the session's parts in order");
                let joins = parts.stop_now();
                std::thread::Builder::new()
                    .name("troupe-join".into())
                    .spawn(move || joins.join())
            }
        };
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot end the session's parts");
        }
    }
}
