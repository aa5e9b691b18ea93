//! Troupe's own SIGINT, SIGTERM and SIGHUP in a headless run: the turn is cancelled,
//! every process group Troupe started is killed, and the run still prints its result
//! (with the error) and exits with 128 + the signal's number.

use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, Signal as Stream, SignalKind};

use crate::tools::shell::process::kill_all_groups;

/// How long the session gets to report the cancelled turn after a signal.
pub const REPORT_GRACE: Duration = Duration::from_secs(3);

/// Listeners for the three signals, installed now (so a signal arriving from here on
/// is caught rather than ending the process).
pub struct Signals {
    streams: Vec<(i32, Stream)>,
}

impl Signals {
    /// Installs the handlers; a signal that cannot be caught keeps its default action.
    pub fn install() -> Self {
        let streams = [
            (libc::SIGINT, SignalKind::interrupt()),
            (libc::SIGTERM, SignalKind::terminate()),
            (libc::SIGHUP, SignalKind::hangup()),
        ]
        .into_iter()
        .filter_map(|(number, kind)| signal(kind).ok().map(|s| (number, s)))
        .collect();
        Self { streams }
    }

    /// Resolves with the number of the first of the signals delivered (at once for
    /// one that arrived before these listeners existed, while the session was loaded:
    /// see [`crate::platform::interrupt`]).
    pub async fn first(&mut self) -> i32 {
        if let Some(number) = crate::platform::interrupt::pending()
            .filter(|n| self.streams.iter().any(|(number, _)| number == n))
        {
            return number;
        }
        if self.streams.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.streams.iter_mut().map(|(number, stream)| {
            let number = *number;
            Box::pin(async move {
                stream.recv().await;
                number
            })
        });
        futures::future::select_all(waits).await.0
    }
}

/// Kills every process group Troupe started: SIGTERM, then SIGKILL for what is left.
pub async fn kill_started_groups() {
    kill_all_groups(Signal::SIGTERM);
    tokio::time::sleep(Duration::from_millis(100)).await;
    kill_all_groups(Signal::SIGKILL);
}

/// In an interactive session (where the line editor owns SIGINT): on SIGTERM or
/// SIGHUP, kills every process group Troupe started, shuts the session down (SessionEnd,
/// background processes, MCP servers and threads ended) and exits with 128 + the
/// signal's number. Must run inside the actix system.
pub fn exit_on_term_or_hup(session: std::sync::Arc<crate::actors::session::SessionHandle>) {
    let streams: Vec<(i32, Stream)> = [
        (libc::SIGTERM, SignalKind::terminate()),
        (libc::SIGHUP, SignalKind::hangup()),
    ]
    .into_iter()
    .filter_map(|(number, kind)| signal(kind).ok().map(|s| (number, s)))
    .collect();
    let mut signals = Signals { streams };
    actix::spawn(async move {
        let number = signals.first().await;
        tracing::warn!(signal = number, "signalled: ending the session");
        kill_started_groups().await;
        session
            .shutdown(crate::actors::session::EndReason::Exit)
            .await;
        crate::platform::filesystem::writers::withdraw();
        std::process::exit(128 + number);
    });
}
