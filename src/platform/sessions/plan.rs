//! Which session a run records into, from `--resume`, `--session-id` and
//! `--session-file` (gemini-cli's rules, texts and exit codes): a new session, a resumed
//! one (its history rebuilt, its own file kept), or an imported file.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{SessionError, SessionStore};
use crate::engine::session_file::{self, LoadedSession};
use crate::engine::text::iso8601;
use crate::protocol::content::Content;

/// gemini-cli's exit code for a bad session argument (`FATAL_INPUT_ERROR`).
pub const EXIT_BAD_SESSION: i32 = 42;

/// The session flags of a run.
#[derive(Debug, Default, Clone)]
pub struct SessionArgs {
    pub resume: Option<String>,
    pub session_id: Option<String>,
    pub session_file: Option<PathBuf>,
}

/// A run that cannot start: the message for stderr and the exit code.
#[derive(Debug)]
pub struct PlanFailure {
    pub code: i32,
    pub message: String,
}

impl PlanFailure {
    fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// The session a run records into.
pub struct SessionPlan {
    pub store: SessionStore,
    pub session_id: String,
    pub file: PathBuf,
    /// The file exists already (resumed).
    pub existing: bool,
    /// The history to start from.
    pub history: Vec<Content>,
    /// Records to append first (calls a crash left unanswered).
    pub repairs: Vec<Value>,
    pub lock: File,
    /// Warnings for stderr (corrupt lines skipped, no session to resume, …).
    pub warnings: Vec<String>,
    pub interrupted_calls: usize,
}

/// Checks `--session-id` as gemini-cli does.
pub fn check_session_id(id: &str) -> Result<String, String> {
    let trimmed = id.trim();
    if trimmed.is_empty() {
        return Err("The --session-id option cannot be empty.".into());
    }
    if !trimmed
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "Invalid session ID \"{trimmed}\": Only alphanumeric characters, dashes, and underscores are allowed."
        ));
    }
    Ok(trimmed.to_string())
}

/// Decides the session of this run and takes its lock.
pub fn plan(store: SessionStore, args: &SessionArgs) -> Result<SessionPlan, PlanFailure> {
    let given = [
        args.resume.is_some(),
        args.session_id.is_some(),
        args.session_file.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(PlanFailure::new(
            1,
            "The flags --resume, --session-id, and --session-file are mutually exclusive. Please provide only one.",
        ));
    }
    if let Some(path) = &args.session_file {
        return import(store, path);
    }
    if let Some(id) = &args.session_id {
        let id = check_session_id(id).map_err(|m| PlanFailure::new(1, m))?;
        if store.exists(&id) {
            return Err(PlanFailure::new(EXIT_BAD_SESSION, format!(
                "Error starting session: Session ID \"{id}\" already exists. Use --resume to resume it, or provide a different ID."
            )));
        }
        return fresh(store, id, Vec::new());
    }
    let Some(which) = &args.resume else {
        return fresh(store, super::new_session_id(), Vec::new());
    };
    let which = if which.is_empty() { "latest" } else { which };
    let info = match store.select(which) {
        Ok(info) => info,
        Err(SessionError::NoSessions) if which == "latest" => {
            let warning = SessionError::NoSessions.to_string();
            return fresh(store, super::new_session_id(), vec![warning]);
        }
        Err(e) => {
            return Err(PlanFailure::new(
                EXIT_BAD_SESSION,
                format!("Error resuming session: {e}"),
            ))
        }
    };
    open_existing(store, info).map_err(|e| match interrupted(&e) {
        Some(failure) => failure,
        None => PlanFailure::new(1, e.to_string()),
    })
}

/// The failure of a load a signal stopped: the signal's exit status (128 + its number).
fn interrupted(error: &SessionError) -> Option<PlanFailure> {
    let SessionError::Format(session_file::SessionFileError::Interrupted { file }) = error else {
        return None;
    };
    let signal = crate::platform::interrupt::pending().unwrap_or(libc::SIGTERM);
    Some(PlanFailure::new(
        128 + signal,
        format!("Interrupted (signal {signal}) while reading the session {file}."),
    ))
}

/// Whether reading a session file should stop: a signal arrived.
fn signalled() -> bool {
    crate::platform::interrupt::pending().is_some()
}

/// A session file's bytes: a regular file only (see [`super::open_regular`]).
fn read_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut super::open_regular(path)?, &mut bytes)?;
    Ok(bytes)
}

/// Resumes a listed session: takes its lock, reads it (a copy of it, for gemini-cli's),
/// rebuilds its history.
pub fn open_existing(
    store: SessionStore,
    info: super::SessionInfo,
) -> Result<SessionPlan, SessionError> {
    let lock = store.lock(&info.session_id)?;
    // gemini-cli's session: continued in a copy in Troupe's store (under the lock).
    let info = super::gemini_cli::adopt(&store, info)?;
    let loaded = read(&info.path)?;
    let file = if loaded.legacy {
        // gemini-cli's legacy `.json`: continued in a `.jsonl` beside it, the old file kept.
        let file = info.path.with_extension("jsonl");
        write_new_file(&file, &info.session_id, &store.project_hash, &loaded, None)?;
        file
    } else {
        info.path.clone()
    };
    Ok(resumed(store, info.session_id, file, loaded, lock))
}

fn fresh(
    store: SessionStore,
    id: String,
    warnings: Vec<String>,
) -> Result<SessionPlan, PlanFailure> {
    let lock = store
        .lock(&id)
        .map_err(|e| PlanFailure::new(1, e.to_string()))?;
    let file = store.new_file(&id, &iso8601(std::time::SystemTime::now()));
    Ok(SessionPlan {
        store,
        session_id: id,
        file,
        existing: false,
        history: Vec::new(),
        repairs: Vec::new(),
        lock,
        warnings,
        interrupted_calls: 0,
    })
}

fn resumed(
    store: SessionStore,
    id: String,
    file: PathBuf,
    loaded: LoadedSession,
    lock: File,
) -> SessionPlan {
    let rebuilt = session_file::rebuild(&loaded.messages);
    SessionPlan {
        store,
        session_id: id,
        file,
        existing: true,
        history: rebuilt.history,
        repairs: rebuilt.repaired_records,
        lock,
        warnings: loaded.warnings,
        interrupted_calls: rebuilt.interrupted_calls,
    }
}

/// Reads and folds a session file; a signal stops it
/// ([`session_file::SessionFileError::Interrupted`]).
pub fn read(path: &Path) -> Result<LoadedSession, SessionError> {
    let bytes = read_bytes(path).map_err(|e| SessionError::io(path, e))?;
    Ok(session_file::load_bytes(
        &bytes,
        &path.display().to_string(),
        &signalled,
    )?)
}

/// `--session-file PATH`: the file's user and gemini messages become a new session in
/// a new file (the given file is only read).
fn import(store: SessionStore, path: &Path) -> Result<SessionPlan, PlanFailure> {
    let bytes = read_bytes(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::InvalidInput => " is not a regular file".to_string(),
            _ => format!(": {e}"),
        };
        PlanFailure::new(
            EXIT_BAD_SESSION,
            format!("Error importing session from file: {}{why}", path.display()),
        )
    })?;
    let mut loaded = session_file::load_bytes(&bytes, &path.display().to_string(), &signalled)
        .map_err(|e| match interrupted(&SessionError::Format(e.clone())) {
            Some(failure) => failure,
            None => PlanFailure::new(1, format!("Error importing session from file: {e}")),
        })?;
    loaded.messages.retain(|_, m| {
        matches!(
            m.get("type").and_then(Value::as_str),
            Some("user" | "gemini")
        ) && m.get("content").is_some_and(|c| !c.is_null())
    });
    let id = super::new_session_id();
    let lock = store
        .lock(&id)
        .map_err(|e| PlanFailure::new(1, e.to_string()))?;
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let short: String = id.chars().take(8).collect();
    let file = store.chats.join(format!("session-{millis}-{short}.jsonl"));
    let note = json!({"id": format!("import-{millis}"), "timestamp": iso8601(std::time::SystemTime::now()),
        "type": "info", "content": format!("Imported session from {}", path.display())});
    write_new_file(&file, &id, &store.project_hash, &loaded, Some(note))
        .map_err(|e| PlanFailure::new(1, e.to_string()))?;
    Ok(resumed(store, id, file, loaded, lock))
}

/// Writes a whole new session file (temp file + rename): metadata, then messages.
fn write_new_file(
    file: &Path,
    id: &str,
    project_hash: &str,
    loaded: &LoadedSession,
    first: Option<Value>,
) -> Result<(), SessionError> {
    let now = iso8601(std::time::SystemTime::now());
    let mut text = session_file::metadata_record(id, project_hash, &now).to_string();
    text.push('\n');
    for m in first.iter().chain(loaded.messages.values()) {
        text.push_str(&m.to_string());
        text.push('\n');
    }
    super::write_atomic(file, text.as_bytes())
}
