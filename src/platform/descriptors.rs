//! Close-on-exec for descriptors a library opens without it: rustyline's external
//! printer makes its wake-up pipe with a plain `pipe(2)`, so both ends would be
//! inherited by every program the REPL starts (a `!` line, `run_shell_command`, a
//! hook, an MCP server). [`cloexec_new`] runs such a call and marks close-on-exec
//! whatever descriptors it opened.

use std::os::fd::RawFd;

/// The descriptors open in this process now (none when `/proc/self/fd` cannot be
/// read); the listing's own descriptor, closed once it is read, is left out.
pub fn open_descriptors() -> Vec<RawFd> {
    let listed: Vec<RawFd> = match std::fs::read_dir("/proc/self/fd") {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect(),
        Err(_) => return Vec::new(),
    };
    let mut fds: Vec<RawFd> = listed.into_iter().filter(|fd| is_open(*fd)).collect();
    fds.sort_unstable();
    fds
}

fn is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags; a closed one gives -1.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Runs `open`, then sets `FD_CLOEXEC` on every descriptor that is open after it and
/// was not before (above the standard three). Another thread's descriptor opened
/// meanwhile may be marked too, which changes nothing: Rust opens every descriptor
/// close-on-exec already.
pub fn cloexec_new<T>(open: impl FnOnce() -> T) -> T {
    let before = open_descriptors();
    let out = open();
    for fd in open_descriptors() {
        if fd > 2 && before.binary_search(&fd).is_err() {
            set_cloexec(fd);
        }
    }
    out
}

/// Whether `fd` is open and marked close-on-exec.
pub fn is_cloexec(fd: RawFd) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags; a closed one gives -1.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    flags >= 0 && flags & libc::FD_CLOEXEC != 0
}

fn set_cloexec(fd: RawFd) {
    // SAFETY: F_GETFD/F_SETFD change only the close-on-exec flag of `fd`; on a
    // descriptor closed in between they fail with EBADF and change nothing.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::IntoRawFd;

    #[test]
    fn a_plain_pipe_made_inside_is_marked_close_on_exec() {
        let (r, w) = cloexec_new(|| {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
            let ok = unsafe { libc::pipe(fds.as_mut_ptr()) } == 0;
            assert!(ok, "pipe");
            (fds[0], fds[1])
        });
        assert!(is_cloexec(r) && is_cloexec(w));
        // A descriptor made outside is left as it is.
        let mut fds = [0; 2];
        // SAFETY: as above.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        assert!(!is_cloexec(fds[0]));
        for fd in [r, w, fds[0], fds[1]] {
            // SAFETY: each was opened above and is closed once.
            unsafe { libc::close(fd) };
        }
        let file = tempfile::tempfile().expect("tempfile").into_raw_fd();
        assert!(is_cloexec(file));
        // SAFETY: opened just above.
        unsafe { libc::close(file) };
    }
}
