//! Session retention (`sessions.max_age_days`, `sessions.max_count`), applied at start.
//! Never deleted: the current session, a session another process holds (its lock),
//! gemini-cli's sessions (listed beside Troupe's, never Troupe's to delete), and
//! a file Troupe cannot read as a session (gemini-cli deletes those, and with them the
//! real session that shares their short id).

use std::time::{Duration, SystemTime};

use super::{SessionInfo, SessionStore};

/// Deletes expired and surplus sessions other than `current`; returns what went.
pub fn apply(
    store: &SessionStore,
    current: &str,
    max_age_days: u64,
    max_count: usize,
) -> Vec<SessionInfo> {
    let now = SystemTime::now();
    let mut candidates: Vec<SessionInfo> = store
        .list()
        .into_iter()
        .filter(|s| s.session_id != current && !s.gemini_cli)
        .collect();
    // Newest first: the first `max_count - 1` (room for the current one) are kept.
    candidates.sort_by_key(|s| std::cmp::Reverse(s.modified));
    let keep = if max_count == 0 {
        usize::MAX
    } else {
        max_count.saturating_sub(1)
    };
    let max_age = Duration::from_secs(max_age_days.saturating_mul(86_400));
    let mut deleted = Vec::new();
    for (i, s) in candidates.into_iter().enumerate() {
        let expired =
            max_age_days > 0 && now.duration_since(s.modified).unwrap_or_default() > max_age;
        if !(expired || i >= keep) || store.is_locked(&s.session_id) {
            continue;
        }
        match store.delete(&s) {
            Ok(()) => deleted.push(s),
            Err(e) => tracing::warn!(error = %e, "retention could not delete a session"),
        }
    }
    deleted
}
