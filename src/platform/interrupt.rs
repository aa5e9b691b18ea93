//! SIGINT, SIGTERM and SIGHUP caught from before the session exists (while a long
//! session file is read): [`install`] makes the process note such a signal instead of
//! dying at once, long work asks [`pending`] and stops, and the session's own
//! listeners (tokio's, which keep this handler chained) find a signal that came before
//! them there. Nothing here allocates or locks in the handler.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// The last signal noted (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn note(signal: libc::c_int) {
    PENDING.store(signal, Ordering::SeqCst);
}

/// Notes SIGINT, SIGTERM and SIGHUP from now on (once per process; a signal that cannot
/// be caught keeps its default action).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let action = SigAction::new(
            SigHandler::Handler(note),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            // SAFETY: `note` only stores into an atomic, which is async-signal-safe.
            if let Err(e) = unsafe { sigaction(signal, &action) } {
                tracing::warn!(%signal, error = %e, "cannot catch the signal");
            }
        }
    });
}

/// The number of the last of the three signals that arrived since [`install`], if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nothing_is_pending_until_a_signal_is_noted() {
        assert_eq!(super::pending(), None);
        super::note(libc::SIGTERM);
        assert_eq!(super::pending(), Some(libc::SIGTERM));
        super::PENDING.store(0, std::sync::atomic::Ordering::SeqCst);
    }
}
