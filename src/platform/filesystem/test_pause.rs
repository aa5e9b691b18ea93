//! Test-only pause points inside the atomic write, so a black-box test can change a
//! file in the exact window it means to test.
//!
//! Active only in a `test-hooks` build with `TROUPE_TEST_TOOLS=1`, and only when the point's variable names a flag file:
//! the write creates `<flag>.paused`, then waits (on its FileSystem thread, which
//! only this job holds, at most 30 s) until `<flag>` exists. A test waits for
//! `<flag>.paused`, changes the file, then creates `<flag>`.
//!
//! - [`AFTER_TEMP_WRITE_ENV`]: after the new content is in the temp file and before
//!   the temp file is given its final mode.
//! - [`BEFORE_RENAME_ENV`]: after the last check of the replaced file (same inode,
//!   size and times) and before the rename that puts the new content in place.
//! - [`BEFORE_UNLINK_ENV`]: after the names were exchanged and the replaced file's
//!   descriptor was checked again, before the replaced file is unlinked.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Pause between filling the temp file and giving it its final mode.
pub const AFTER_TEMP_WRITE_ENV: &str = "TROUPE_TEST_PAUSE_AFTER_TEMP_WRITE";
/// Pause between the last check and the rename/exchange.
pub const BEFORE_RENAME_ENV: &str = "TROUPE_TEST_PAUSE_BEFORE_RENAME";
/// Pause between the re-check after the exchange and the unlink of the old file.
pub const BEFORE_UNLINK_ENV: &str = "TROUPE_TEST_PAUSE_BEFORE_UNLINK";

const LIMIT: Duration = Duration::from_secs(30);

/// When the test hook is on and `var` names a flag file: creates `<flag>.paused` and
/// returns the flag to wait for (the edit tools' async pauses use it too).
pub fn arm(var: &str) -> Option<PathBuf> {
    if !crate::platform::test_hooks::enabled() {
        return None;
    }
    let flag = std::env::var_os(var).map(PathBuf::from)?;
    let mut paused = flag.clone().into_os_string();
    paused.push(".paused");
    if let Err(e) = std::fs::write(&paused, b"") {
        tracing::warn!(error = %e, "cannot create the test pause marker");
    }
    Some(flag)
}

/// Waits for the flag file named by `var`, if the test hook is on.
pub fn pause(var: &str) {
    let Some(flag) = arm(var) else {
        return;
    };
    let started = Instant::now();
    while !flag.exists() {
        if started.elapsed() > LIMIT {
            tracing::warn!(flag = %flag.display(), "test pause flag never appeared");
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
