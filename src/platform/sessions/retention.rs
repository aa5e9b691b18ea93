//! Session retention (`sessions.max_age_days`, `sessions.max_count`), applied at start.
//! Never deleted: the current session, a session another process holds (its lock),
//! gemini-cli's sessions (listed beside Troupe's, never Troupe's to delete), and
//! a file Troupe cannot read as a session (gemini-cli deletes those, and with them the
//! real session that shares their short id).
//!
//! With only an age limit (the default), a start reads no session that is still in
//! date: the directory's listing and each file's modification time (no open) find the
//! few expired files, and only those are read. A start costs the same whether the
//! project has ten sessions or ten thousand. A count limit has to know every
//! session's id, so it reads the head of each.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::{is_session_file_name, read_head, SessionInfo, SessionStore};

/// Deletes expired and surplus sessions other than `current`; returns what went.
pub fn apply(
    store: &SessionStore,
    current: &str,
    max_age_days: u64,
    max_count: usize,
) -> Vec<SessionInfo> {
    let now = SystemTime::now();
    let max_age =
        (max_age_days > 0).then(|| Duration::from_secs(max_age_days.saturating_mul(86_400)));
    let expired = |modified: SystemTime| {
        max_age.is_some_and(|age| now.duration_since(modified).unwrap_or_default() > age)
    };
    let mut candidates: Vec<SessionInfo> = match (max_age, max_count) {
        (None, 0) => return Vec::new(),
        (Some(_), 0) => expired_only(&store.chats, &expired).unwrap_or_else(|| store.list()),
        _ => store.list(),
    };
    candidates.retain(|s| s.session_id != current && !s.gemini_cli);
    // Newest first: the first `max_count - 1` (room for the current one) are kept.
    candidates.sort_by_key(|s| std::cmp::Reverse(s.modified));
    let keep = if max_count == 0 {
        usize::MAX
    } else {
        max_count.saturating_sub(1)
    };
    let mut deleted = Vec::new();
    for (i, s) in candidates.into_iter().enumerate() {
        if !(expired(s.modified) || i >= keep) || store.is_locked(&s.session_id) {
            continue;
        }
        match store.delete(&s) {
            Ok(()) => deleted.push(s),
            Err(e) => tracing::warn!(error = %e, "retention could not delete a session"),
        }
    }
    deleted
}

/// The sessions of `chats` whose file is older than the age limit, as
/// [`SessionStore::list`] would give them: only these files are opened. A session
/// with a newer file of the same id (which `list` would show instead) is left out;
/// the short id in the file names finds such a file without reading the others.
/// `None` when a session file is not named `session-<minute>-<id8>` (then only reading
/// every file tells which id it holds).
fn expired_only(chats: &Path, expired: &dyn Fn(SystemTime) -> bool) -> Option<Vec<SessionInfo>> {
    let Ok(entries) = std::fs::read_dir(chats) else {
        return Some(Vec::new());
    };
    // (short id, modified, path) of every session file, from the listing and a stat.
    let mut files: Vec<(String, SystemTime, std::path::PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_session_file_name(&name) {
            continue;
        }
        let short = session_file_short_id(&name)?.to_string();
        let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        files.push((short, modified, entry.path()));
    }
    let mut out: Vec<SessionInfo> = Vec::new();
    for (short, modified, path) in files.iter().filter(|f| expired(f.1)) {
        let Some(info) = read_head(path) else {
            continue;
        };
        let newer_twin = files.iter().any(|(other_short, other_modified, other)| {
            other_short == short
                && other != path
                && *other_modified > *modified
                && read_head(other).is_some_and(|o| o.session_id == info.session_id)
        });
        if !newer_twin && !out.iter().any(|s| s.session_id == info.session_id) {
            out.push(info);
        }
    }
    Some(out)
}

/// `session-<minute>-<id8>.jsonl` (or `.json`): the short id (eight hex digits);
/// `None` for any other name.
fn session_file_short_id(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("session-")?;
    let stem = rest
        .strip_suffix(".jsonl")
        .or_else(|| rest.strip_suffix(".json"))?;
    let (_, short) = stem.rsplit_once('-')?;
    (short.len() == 8 && short.bytes().all(|b| b.is_ascii_hexdigit())).then_some(short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_id_is_the_last_dash_field_of_a_session_file_name() {
        assert_eq!(
            session_file_short_id("session-2026-11-27T23-16-58f8009f.jsonl"),
            Some("58f8009f")
        );
        assert_eq!(
            session_file_short_id("session-2025-01-02T03-04-abcdef01.json"),
            Some("abcdef01")
        );
        assert_eq!(session_file_short_id("session-old.json"), None);
        assert_eq!(session_file_short_id(".58f8009f.lock"), None);
        assert_eq!(session_file_short_id("session-x.txt"), None);
    }
}
