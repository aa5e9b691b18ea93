//! SIGINT, SIGTERM and SIGHUP caught from before the session exists (while a long
//! session file is read): [`install`] makes the process note such a signal instead of
//! dying at once, long work asks [`pending`] and stops, and the session's own
//! listeners find a signal that came before them there. Every handler of the process
//! goes through one registry (signal-hook's, which tokio's listeners use too), so a
//! later listener adds to the noting rather than replacing it; the interactive session
//! takes SIGINT over with [`forward_sigint`]. Nothing here allocates or locks in the
//! handler.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Once};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::SigId;

/// The last signal noted (0: none).
static PENDING: LazyLock<Arc<AtomicUsize>> = LazyLock::new(|| Arc::new(AtomicUsize::new(0)));

/// The action that notes SIGINT, while it is registered.
static NOTING_SIGINT: Mutex<Option<SigId>> = Mutex::new(None);

/// Notes SIGINT, SIGTERM and SIGHUP from now on (once per process; a signal that cannot
/// be caught keeps its default action).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            // The action only stores `signal` into an atomic (async-signal-safe).
            let noted =
                signal_hook::flag::register_usize(signal, PENDING.clone(), signal_number(signal));
            match noted {
                Ok(id) if signal == SIGINT => {
                    if let Ok(mut noting) = NOTING_SIGINT.lock() {
                        *noting = Some(id);
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(signal, error = %e, "cannot catch the signal"),
            }
        }
    });
}

/// The number of the last of the three signals that arrived since [`install`], if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        n => i32::try_from(n).ok(),
    }
}

/// From now on each SIGINT is sent on the returned channel (by a thread of its own)
/// and no longer noted: in the interactive session Ctrl+C cancels the turn; it does not
/// stop a session file that `/resume` reads later.
pub fn forward_sigint() -> std::io::Result<crossbeam_channel::Receiver<()>> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT])?;
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("troupe-sigint".into())
        .spawn(move || {
            for _ in signals.forever() {
                if tx.send(()).is_err() {
                    return;
                }
            }
        })?;
    if let Some(id) = NOTING_SIGINT
        .lock()
        .ok()
        .and_then(|mut noting| noting.take())
    {
        signal_hook::low_level::unregister(id);
    }
    Ok(rx)
}

fn signal_number(signal: libc::c_int) -> usize {
    usize::try_from(signal).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_signal_after_install_is_noted_instead_of_ending_the_process() {
        assert_eq!(super::pending(), None);
        super::install();
        // `raise` delivers to this thread: the handler notes it before it returns.
        signal_hook::low_level::raise(libc::SIGHUP).expect("raise");
        assert_eq!(super::pending(), Some(libc::SIGHUP));
        super::PENDING.store(0, std::sync::atomic::Ordering::SeqCst);
    }
}
