//! Starting the REPL's session on an actor thread of its own (the actix system), and
//! ending it from the REPL thread: [`SessionLink::shutdown`] asks the actor thread to
//! shut the session down and waits until that thread is over.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use crossbeam_channel::Receiver;

use super::bridge::{self, FrontMsg, SharedStats};
use super::{session_commands, SessionLink};
use crate::actors::session::{EndReason, SessionHandle, SessionOptions};
use crate::engine::stats::SessionStats;

/// How the REPL thread ends the session that runs on the actor thread.
pub(super) struct Ending {
    /// Tells the actor thread to shut the session down, and why.
    reason: futures::channel::oneshot::Sender<EndReason>,
    /// Closed when the actor thread is done.
    done: Receiver<()>,
}

impl SessionLink {
    /// Shuts the session down (see [`SessionHandle::shutdown`]) on the actor thread and
    /// waits until it is over and that thread has ended. A second call does nothing.
    pub fn shutdown(&self, reason: EndReason) {
        let Some(ending) = self.ending.lock().ok().and_then(|mut e| e.take()) else {
            return;
        };
        if ending.reason.send(reason).is_ok() {
            let _ = ending.done.recv();
        }
    }
}

/// What the actor thread hands the REPL thread once the session runs.
type Started = (SessionLink, Receiver<FrontMsg>);

/// Starts the actix system and the session on a thread of their own, with the REPL's
/// event loop ([`bridge::pump`]) reading the session's events there.
pub fn start_actors(
    options: impl FnOnce() -> SessionOptions + Send + 'static,
    user_config: PathBuf,
) -> Result<Started, String> {
    let (events_tx, events_rx) = crossbeam_channel::unbounded();
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    std::thread::Builder::new()
        .name("troupe-actors".into())
        .spawn(move || {
            // Dropped when the thread ends: the REPL thread waits for that.
            let _done = done_tx;
            let system = System::new();
            let started = system.block_on(start_session(options, user_config, events_tx));
            let ok = started.is_ok();
            let _ = ready_tx.send(started);
            if ok {
                let _ = system.run();
            }
        })
        .map_err(|e| format!("cannot start the actor thread: {e}"))?;
    let (link, reason) = ready_rx
        .recv()
        .map_err(|_| "the actor thread stopped while starting".to_string())??;
    if let Ok(mut ending) = link.ending.lock() {
        *ending = Some(Ending {
            reason,
            done: done_rx,
        });
    }
    Ok((link, events_rx))
}

/// On the actor thread: starts the session, its event loop, the SIGTERM/SIGHUP
/// handler and the task that ends the session when the REPL thread says so.
async fn start_session(
    options: impl FnOnce() -> SessionOptions,
    user_config: PathBuf,
    events: crossbeam_channel::Sender<FrontMsg>,
) -> Result<(SessionLink, futures::channel::oneshot::Sender<EndReason>), String> {
    let options = options();
    let mut sessions = session_commands::SessionParts::new(options.plan.as_ref(), &options);
    let workspace = options.workspace.primary().to_path_buf();
    let model = options.model_name.clone();
    // The rules the user file holds (none when this run's list came from elsewhere).
    let initial_saved = match options.settings.approval.allowed_is_saved {
        true => options.settings.approval.allowed.clone(),
        false => Vec::new(),
    };
    let handle = Arc::new(
        SessionHandle::start(options)
            .await
            .map_err(|e| e.to_string())?,
    );
    let stats: SharedStats = Arc::new(Mutex::new(SessionStats::default()));
    let edits = super::edits::EditLog::default();
    actix::spawn(bridge::pump(
        handle.clone(),
        events,
        stats.clone(),
        edits.clone(),
    ));
    crate::frontends::signals::exit_on_term_or_hup(handle.clone());
    let (reason_tx, reason_rx) = futures::channel::oneshot::channel();
    let ending = handle.clone();
    actix::spawn(async move {
        // The REPL thread gone without a word: the program ends.
        let reason = reason_rx.await.unwrap_or(EndReason::Exit);
        ending.shutdown(reason).await;
        System::current().stop();
    });
    sessions.current = Mutex::new(handle.session_id().to_string());
    let link = SessionLink {
        tools: handle.tools(),
        session_id: handle.session_id().to_string(),
        handle,
        actors: Arbiter::current(),
        stats,
        edits,
        model,
        workspace,
        user_config,
        persisted: Mutex::new(initial_saved),
        sessions,
        vim: Default::default(),
        ending: Mutex::new(None),
    };
    Ok((link, reason_tx))
}
