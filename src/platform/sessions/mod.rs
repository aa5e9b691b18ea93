//! Where sessions live on disk and how they are found: `<troupe home>/tmp/<project
//! slug>/chats/session-<UTC minute>-<id8>.jsonl`, in gemini-cli 0.61's format
//! (`engine::session_file`). Listing reads the metadata line and the first user message
//! of each file only; a lock file per session keeps two processes off one session.

pub mod checkpoint;
pub mod gemini_cli;
pub mod plan;
pub mod retention;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::engine::session_file::{clean_title, is_resumable, typed_text};

/// A failure of the session store, with gemini-cli's texts where it has one.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("No previous sessions found for this project.")]
    NoSessions,
    #[error("Invalid session identifier \"{id}\".\n  Searched for sessions in {dir}.\n  Use --list-sessions to see available sessions, then use --resume {{number}}, --resume {{uuid}}, or --resume latest.")]
    InvalidIdentifier { id: String, dir: String },
    #[error("Session {id} is in use by another Troupe process{holder}; leave that session first (lock file {lock}).")]
    Locked {
        id: String,
        holder: String,
        lock: String,
    },
    #[error("{0}")]
    Format(#[from] crate::engine::session_file::SessionFileError),
    #[error(
        "Session {id} is gemini-cli's ({path}): Troupe only reads it; delete it with gemini-cli."
    )]
    GeminiCli { id: String, path: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl SessionError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// The session directories of one project.
#[derive(Debug, Clone)]
pub struct SessionStore {
    /// `<troupe home>/tmp/<slug>`.
    pub project_dir: PathBuf,
    /// `<project_dir>/chats`.
    pub chats: PathBuf,
    /// `sha256(project root)` in hex (gemini-cli's `projectHash`).
    pub project_hash: String,
    pub slug: String,
    /// gemini-cli's `chats` directory of the same project, listed too and never
    /// written (see [`gemini_cli`]).
    pub gemini_chats: Option<PathBuf>,
}

/// One session as `--list-sessions` shows it.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub session_id: String,
    pub start_time: String,
    pub modified: SystemTime,
    pub title: String,
    /// A file of gemini-cli's store (read-only: resuming it continues a copy).
    pub gemini_cli: bool,
}

impl SessionStore {
    /// The store of the project rooted at `root`, under `home` (the troupe home). The
    /// slug is the root's lower-cased basename; a slug already taken by another root
    /// gets `-1`, `-2`, … (the `.project_root` marker says whose it is).
    pub fn open(home: &Path, root: &Path) -> Result<Self, SessionError> {
        let base = slugify(
            &root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        let tmp = home.join("tmp");
        let root_text = root.display().to_string();
        let mut slug = base.clone();
        for n in 1.. {
            let marker = tmp.join(&slug).join(".project_root");
            match std::fs::read_to_string(&marker) {
                Ok(owner) if owner.trim_end() == root_text => break,
                Ok(_) => slug = format!("{base}-{n}"),
                Err(_) => {
                    std::fs::create_dir_all(tmp.join(&slug))
                        .map_err(|e| SessionError::io(&tmp.join(&slug), e))?;
                    write_atomic(&marker, root_text.as_bytes())?;
                    break;
                }
            }
        }
        let project_dir = tmp.join(&slug);
        Ok(Self {
            chats: project_dir.join("chats"),
            project_dir,
            project_hash: crate::platform::workspace::project_id(root),
            slug,
            gemini_chats: None,
        })
    }

    /// The file of a new session: `session-<UTC minute>-<id8>.jsonl`.
    pub fn new_file(&self, session_id: &str, now: &str) -> PathBuf {
        let minute = now.get(..16).unwrap_or(now).replace(':', "-");
        let short: String = session_id.chars().take(8).collect();
        self.chats.join(format!("session-{minute}-{short}.jsonl"))
    }

    /// Every listable session, sorted by start time (oldest first, as numbered by
    /// `--resume N`). When two files hold one id, the newer file wins; a session of
    /// gemini-cli's store is listed only when Troupe's has no file of its id.
    pub fn list(&self) -> Vec<SessionInfo> {
        let mut out: Vec<SessionInfo> = Vec::new();
        list_dir(&self.chats, &mut out);
        if let Some(gemini) = &self.gemini_chats {
            let mut theirs = Vec::new();
            list_dir(gemini, &mut theirs);
            for mut info in theirs {
                if !out.iter().any(|s| s.session_id == info.session_id) {
                    info.gemini_cli = true;
                    out.push(info);
                }
            }
        }
        out.sort_by(|a, b| {
            a.start_time
                .cmp(&b.start_time)
                .then(a.modified.cmp(&b.modified))
        });
        out
    }

    /// Finds a session by `latest`, a 1-based index (exactly an integer) or an id.
    pub fn select(&self, which: &str) -> Result<SessionInfo, SessionError> {
        let mut sessions = self.list();
        if sessions.is_empty() {
            return Err(SessionError::NoSessions);
        }
        let invalid = || SessionError::InvalidIdentifier {
            id: which.to_string(),
            dir: self.chats.display().to_string(),
        };
        if which == "latest" {
            return sessions.pop().ok_or_else(invalid);
        }
        if let Some(found) = sessions.iter().position(|s| s.session_id == which) {
            return Ok(sessions.swap_remove(found));
        }
        if !which.is_empty() && which.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = which.parse::<usize>() {
                if n >= 1 && n <= sessions.len() {
                    return Ok(sessions.swap_remove(n - 1));
                }
            }
        }
        Err(invalid())
    }

    /// Does a session with this id exist?
    pub fn exists(&self, session_id: &str) -> bool {
        self.list().iter().any(|s| s.session_id == session_id)
    }

    /// The lock file of a session.
    pub fn lock_path(&self, session_id: &str) -> PathBuf {
        self.chats.join(format!(".{session_id}.lock"))
    }

    /// Takes the session's lock for the life of the returned file; refuses when another
    /// process holds it. The lock is the kernel's (`flock`), so a killed process
    /// leaves no stale lock behind.
    pub fn lock(&self, session_id: &str) -> Result<File, SessionError> {
        std::fs::create_dir_all(&self.chats).map_err(|e| SessionError::io(&self.chats, e))?;
        let path = self.lock_path(session_id);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| SessionError::io(&path, e))?;
        if file.try_lock().is_err() {
            let holder = std::fs::read_to_string(&path)
                .ok()
                .map(|pid| pid.trim().to_string())
                .filter(|pid| !pid.is_empty())
                .map(|pid| format!(" (pid {pid})"))
                .unwrap_or_default();
            return Err(SessionError::Locked {
                id: session_id.to_string(),
                holder,
                lock: path.display().to_string(),
            });
        }
        let _ = file.set_len(0);
        let _ = write!(file, "{}", std::process::id());
        Ok(file)
    }

    /// Is the session live in some process (its lock held)?
    pub fn is_locked(&self, session_id: &str) -> bool {
        let path = self.lock_path(session_id);
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        {
            Ok(file) => file.try_lock().is_err(),
            Err(_) => false,
        }
    }

    /// Deletes a session's file(s) and its lock file; gemini-cli's are refused.
    pub fn delete(&self, info: &SessionInfo) -> Result<(), SessionError> {
        if info.gemini_cli {
            return Err(SessionError::GeminiCli {
                id: info.session_id.clone(),
                path: info.path.display().to_string(),
            });
        }
        std::fs::remove_file(&info.path).map_err(|e| SessionError::io(&info.path, e))?;
        let _ = std::fs::remove_file(self.lock_path(&info.session_id));
        Ok(())
    }
}

/// The file names [`SessionStore::list`] reads: `session-*.jsonl` and `session-*.json`.
fn is_session_file_name(name: &str) -> bool {
    name.starts_with("session-") && (name.ends_with(".jsonl") || name.ends_with(".json"))
}

/// Adds the sessions of the `chats` directory `dir` to `out` (the newer file of an id
/// wins).
fn list_dir(dir: &Path, out: &mut Vec<SessionInfo>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_session_file_name(&name) {
            continue;
        }
        let Some(info) = read_head(&entry.path()) else {
            continue;
        };
        match out.iter_mut().find(|s| s.session_id == info.session_id) {
            Some(existing) if existing.modified < info.modified => *existing = info,
            Some(_) => {}
            None => out.push(info),
        }
    }
}

/// Opens `path` for reading if it is a regular file: a device (`/dev/zero`), a FIFO or
/// a directory is refused (`ErrorKind::InvalidInput`) before anything is read from it,
/// and opening a FIFO never waits for a writer.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// Reads a session file up to its first resumable user message (the title). Files
/// that are not sessions, have no resumable message, or are subagents give `None`; a
/// line that is not UTF-8 is skipped as one that is not JSON.
pub fn read_head(path: &Path) -> Option<SessionInfo> {
    let file = open_regular(path).ok()?;
    let modified = file.metadata().and_then(|m| m.modified()).ok()?;
    let mut reader = BufReader::with_capacity(16 * 1024, file);
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line).ok()?;
    let meta: Value = match serde_json::from_slice(line.trim_ascii()) {
        Ok(v) => v,
        // A legacy `.json` file: read whole (they are rare and small).
        Err(_) => return legacy_head(path, modified),
    };
    let session_id = meta.get("sessionId")?.as_str()?.to_string();
    meta.get("projectHash")?.as_str()?;
    if meta.get("kind").and_then(Value::as_str) == Some("subagent") {
        return None;
    }
    let start_time = meta
        .get("startTime")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut first_gemini = false;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            break;
        }
        let Ok(record) = serde_json::from_slice::<Value>(line.trim_ascii()) else {
            continue;
        };
        let messages: Vec<&Value> = match record.pointer("/$set/messages") {
            Some(Value::Array(a)) => a.iter().collect(),
            _ => vec![&record],
        };
        for m in messages {
            if m.get("type").and_then(Value::as_str) == Some("user") && is_resumable(m) {
                return Some(SessionInfo {
                    path: path.to_path_buf(),
                    session_id,
                    start_time,
                    modified,
                    title: clean_title(&typed_text(m)),
                    gemini_cli: false,
                });
            }
            first_gemini |=
                m.get("type").and_then(Value::as_str) == Some("gemini") && is_resumable(m);
        }
    }
    first_gemini.then(|| SessionInfo {
        path: path.to_path_buf(),
        session_id,
        start_time,
        modified,
        title: "Empty conversation".into(),
        gemini_cli: false,
    })
}

fn legacy_head(path: &Path, modified: SystemTime) -> Option<SessionInfo> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut open_regular(path).ok()?, &mut bytes).ok()?;
    let loaded =
        crate::engine::session_file::load_bytes(&bytes, &path.display().to_string(), &|| false)
            .ok()?;
    let first = loaded
        .messages
        .values()
        .find(|m| m.get("type").and_then(Value::as_str) == Some("user") && is_resumable(m))?;
    Some(SessionInfo {
        path: path.to_path_buf(),
        session_id: loaded.meta.session_id.clone(),
        start_time: loaded.meta.start_time.clone(),
        modified,
        title: clean_title(&typed_text(first)),
        gemini_cli: false,
    })
}

/// gemini-cli's age text: `Just now`, `N minute(s) ago`, `N hour(s) ago`, `N day(s) ago`.
pub fn age_text(modified: SystemTime, now: SystemTime) -> String {
    let secs = now
        .duration_since(modified)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (minutes, hours, days) = (secs / 60, secs / 3600, secs / 86_400);
    let unit = |n: u64, word: &str| format!("{n} {word}{} ago", if n == 1 { "" } else { "s" });
    if days > 0 {
        unit(days, "day")
    } else if hours > 0 {
        unit(hours, "hour")
    } else if minutes > 0 {
        unit(minutes, "minute")
    } else {
        "Just now".into()
    }
}

/// `--list-sessions` output (gemini-cli's lines).
pub fn list_text(sessions: &[SessionInfo], current: Option<&str>) -> String {
    if sessions.is_empty() {
        return "No previous sessions found for this project.".into();
    }
    let now = SystemTime::now();
    let mut out = format!(
        "\nAvailable sessions for this project ({}):\n",
        sessions.len()
    );
    for (i, s) in sessions.iter().enumerate() {
        let mark = if current == Some(s.session_id.as_str()) {
            ", current"
        } else {
            ""
        };
        let origin = if s.gemini_cli { " (gemini-cli)" } else { "" };
        out.push_str(&format!(
            "  {}. {} ({}{mark}) [{}]{origin}\n",
            i + 1,
            crate::engine::sanitize::one_line(&s.title),
            age_text(s.modified, now),
            crate::engine::sanitize::one_line(&s.session_id)
        ));
    }
    out
}

/// gemini-cli's slug: lower case, runs outside `[a-z0-9]` become one `-`, trimmed.
pub fn slugify(name: &str) -> String {
    let mut out = String::new();
    for c in name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let slug = out.trim_matches('-').to_string();
    if slug.is_empty() {
        "project".into()
    } else {
        slug
    }
}

/// Writes a whole file through a temp file and a rename (the one private atomic
/// replace, [`replace_private`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    use crate::platform::filesystem::owned_file::{replace_private, ReplaceError};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| SessionError::io(dir, e))?;
    replace_private(path, bytes).map_err(|e| match e {
        ReplaceError::Create(e) => SessionError::io(dir, e),
        ReplaceError::Write(e) | ReplaceError::Rename(e) => SessionError::io(path, e),
    })
}

/// A random id in UUID shape.
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_gemini_cli() {
        assert_eq!(slugify("My Project!"), "my-project");
        assert_eq!(slugify("__"), "project");
    }

    #[test]
    fn ages_read_like_gemini_cli() {
        let now = SystemTime::now();
        let ago = |s| now - std::time::Duration::from_secs(s);
        assert_eq!(age_text(ago(5), now), "Just now");
        assert_eq!(age_text(ago(61), now), "1 minute ago");
        assert_eq!(age_text(ago(7300), now), "2 hours ago");
        assert_eq!(age_text(ago(90_000), now), "1 day ago");
    }
}
