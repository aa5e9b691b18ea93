//! gemini-cli 0.61's session file format (JSONL), read and written without I/O: the
//! records a session appends, the loader that folds them back into messages (`$set`,
//! `$rewindTo`, a later record replacing an earlier one of the same id, gemini-cli's
//! legacy single-object `.json`), and the rebuild of the model history from those
//! messages (`convertSessionToClientHistory`) — with every functionCall answered by
//! exactly one functionResponse however many times the session was resumed.

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use crate::protocol::content::{Content, Part, Role};

/// The text answering a call that a crash or a kill cut off.
pub const INTERRUPTED_CALL: &str =
    "The tool call was interrupted before it completed (the session ended while it ran); it may or may not have taken effect.";

/// Why a file is not a session, or was not read to its end.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum SessionFileError {
    #[error("{file} is not a session file (no session metadata and no messages)")]
    NotASession { file: String },
    /// The caller's `stop` said so (a signal arrived while a long file was read).
    #[error("reading {file} was interrupted")]
    Interrupted { file: String },
}

/// How many lines are read between two looks at the caller's `stop`.
const LINES_PER_STOP_CHECK: usize = 1024;

/// The metadata fields of a session (the first line, merged with later `$set`s).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionMeta {
    pub session_id: String,
    pub project_hash: String,
    pub start_time: String,
    pub last_updated: String,
    pub kind: String,
    pub summary: Option<String>,
}

/// A session file folded into its messages.
#[derive(Debug, Clone, Default)]
pub struct LoadedSession {
    pub meta: SessionMeta,
    /// Messages in order, keyed by id.
    pub messages: IndexMap<String, Value>,
    /// One line per skipped record: `<file>:<line>: …`.
    pub warnings: Vec<String>,
    /// The file was gemini-cli's legacy single JSON object.
    pub legacy: bool,
}

/// Folds a session file's text into messages. Blank lines are skipped; a line that is
/// not JSON is skipped with a warning naming `file` and the line.
pub fn load(text: &str, file: &str) -> Result<LoadedSession, SessionFileError> {
    load_bytes(text.as_bytes(), file, &|| false)
}

/// [`load`] of a file's bytes: a line that is not UTF-8 is skipped with a warning, as
/// one that is not JSON. `stop` is asked now and then; when it says so, the reading
/// ends with [`SessionFileError::Interrupted`].
pub fn load_bytes(
    bytes: &[u8],
    file: &str,
    stop: &dyn Fn() -> bool,
) -> Result<LoadedSession, SessionFileError> {
    let mut out = LoadedSession::default();
    let mut has_meta = false;
    let mut any_record = false;
    let lines = bytes
        .strip_suffix(b"\n")
        .unwrap_or(bytes)
        .split(|b| *b == b'\n');
    for (index, line) in lines.enumerate() {
        if index % LINES_PER_STOP_CHECK == LINES_PER_STOP_CHECK - 1 && stop() {
            return Err(SessionFileError::Interrupted {
                file: file.to_string(),
            });
        }
        let line = std::str::from_utf8(line).map(str::trim);
        if line.is_ok_and(str::is_empty) {
            continue;
        }
        let parsed = line.ok().map(serde_json::from_str::<Value>);
        let Some(Ok(Value::Object(record))) = parsed else {
            if index == 0 {
                break; // maybe a legacy (pretty-printed) file: tried below
            }
            out.warnings.push(format!(
                "{file}:{}: skipped a corrupt session record",
                index + 1
            ));
            continue;
        };
        any_record = true;
        if let Some(target) = record.get("$rewindTo") {
            let target = target.as_str().unwrap_or_default();
            match out.messages.get_index_of(target) {
                Some(at) => out.messages.truncate(at),
                None => out.messages.clear(),
            }
        } else if let Some(id) = record.get("id").and_then(Value::as_str) {
            out.messages.insert(id.to_string(), Value::Object(record));
        } else if let Some(Value::Object(set)) = record.get("$set") {
            apply_set(&mut out, set);
        } else if is_meta(&record) {
            has_meta = true;
            merge_meta(&mut out.meta, &record);
        }
    }
    if has_meta {
        return Ok(out);
    }
    // gemini-cli's legacy `.json`: one object holding `messages`.
    if let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(bytes) {
        if let Some(Value::Array(messages)) = object.get("messages") {
            let mut legacy = LoadedSession {
                legacy: true,
                ..LoadedSession::default()
            };
            merge_meta(&mut legacy.meta, &object);
            for m in messages {
                if let Some(id) = m.get("id").and_then(Value::as_str) {
                    legacy.messages.insert(id.to_string(), m.clone());
                }
            }
            return Ok(legacy);
        }
    }
    let _ = any_record;
    Err(SessionFileError::NotASession {
        file: file.to_string(),
    })
}

fn is_meta(record: &Map<String, Value>) -> bool {
    record.get("sessionId").is_some_and(Value::is_string)
        && record.get("projectHash").is_some_and(Value::is_string)
}

fn merge_meta(meta: &mut SessionMeta, record: &Map<String, Value>) {
    let text = |k: &str| record.get(k).and_then(Value::as_str).map(str::to_string);
    if let Some(v) = text("sessionId") {
        meta.session_id = v;
    }
    if let Some(v) = text("projectHash") {
        meta.project_hash = v;
    }
    if let Some(v) = text("startTime") {
        meta.start_time = v;
    }
    if let Some(v) = text("lastUpdated") {
        meta.last_updated = v;
    }
    if let Some(v) = text("kind") {
        meta.kind = v;
    }
    if let Some(v) = text("summary") {
        meta.summary = Some(v);
    }
}

fn apply_set(out: &mut LoadedSession, set: &Map<String, Value>) {
    if let Some(Value::Array(messages)) = set.get("messages") {
        out.messages.clear();
        for m in messages {
            if let Some(id) = m.get("id").and_then(Value::as_str) {
                out.messages.insert(id.to_string(), m.clone());
            }
        }
    }
    merge_meta(&mut out.meta, set);
}

/// The text gemini-cli judges a user message by (a functionResponse counts as
/// `[Function Response: name]`).
pub fn user_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    t.to_string()
                } else if let Some(name) =
                    p.pointer("/functionResponse/name").and_then(Value::as_str)
                {
                    format!("[Function Response: {name}]")
                } else {
                    String::new()
                }
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A `user` message as the user typed it: its `displayContent` when it has one (the
/// model got `@path` content or an expanded command), else its text.
pub fn typed_text(message: &Value) -> String {
    match message.get("displayContent") {
        Some(Value::String(s)) => s.clone(),
        _ => user_text(message),
    }
}

/// Is this message worth resuming (gemini-cli's rule)?
pub fn is_resumable(message: &Value) -> bool {
    match message.get("type").and_then(Value::as_str) {
        Some("user") => is_prompt_text(&user_text(message)),
        Some("gemini") => {
            let has = |k: &str| {
                message
                    .get(k)
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty())
            };
            has("toolCalls")
                || has("thoughts")
                || match message.get("content") {
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(Value::Array(a)) => !a.is_empty(),
                    _ => false,
                }
        }
        _ => false,
    }
}

fn is_prompt_text(text: &str) -> bool {
    let t = text.trim();
    !(t.is_empty()
        || t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>"))
}

/// gemini-cli's `cleanMessage` for titles, except that printable non-ASCII text (CJK,
/// accents) is kept: control characters go, runs of whitespace become one space.
pub fn clean_title(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect();
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.chars().count() > 100 {
        let cut: String = joined.chars().take(97).collect();
        format!("{cut}...")
    } else {
        joined
    }
}

/// A tool call's id as the session file records it, `<name>__<id>` (gemini-cli's; read
/// back by [`wire_call_id`]), written into `into` (cleared first), so that the calls of
/// a round can reuse one buffer without a `format!` each.
pub fn record_call_id(name: &str, id: &str, into: &mut String) {
    into.clear();
    into.reserve(name.len() + 2 + id.len());
    into.push_str(name);
    into.push_str("__");
    into.push_str(id);
}

/// A call id as the wire carries it: gemini-cli records `<name>__<id>`.
pub fn wire_call_id(name: &str, id: &str) -> String {
    id.strip_prefix(&format!("{name}__"))
        .unwrap_or(id)
        .to_string()
}

#[path = "session_file_rebuild.rs"]
mod rebuild;
pub use rebuild::{parts_of, rebuild, Rebuilt};

// ------------------------------------------------------------------ records written

/// The first line of a session file.
pub fn metadata_record(session_id: &str, project_hash: &str, now: &str) -> Value {
    json!({"sessionId": session_id, "projectHash": project_hash, "startTime": now,
           "lastUpdated": now, "kind": "main"})
}

/// The first line of a subagent's conversation file (gemini-cli's): `kind:
/// "subagent"` and the workspace directories.
pub fn subagent_metadata_record(
    agent_id: &str,
    project_hash: &str,
    now: &str,
    directories: &[String],
) -> Value {
    json!({"sessionId": agent_id, "projectHash": project_hash, "startTime": now,
           "lastUpdated": now, "kind": "subagent", "directories": directories})
}

/// `{"$set":{"lastUpdated":…}}`.
pub fn last_updated_record(now: &str) -> Value {
    json!({"$set": {"lastUpdated": now}})
}

/// `{"$set":{"summary":…,"lastUpdated":…}}` for the first prompt of a new session: its
/// title as typed (gemini-cli's `--list-sessions` shows `summary` before the first
/// user message, which in a Troupe file leads with the MCP servers' instructions);
/// `None` for a message that is no prompt.
pub fn summary_record(user: &Value, now: &str) -> Option<Value> {
    let text = match user.get("displayContent").and_then(Value::as_str) {
        Some(typed) => typed.to_string(),
        None => user
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .filter(|t| !t.starts_with("<loaded_context>"))
            .collect(),
    };
    let title = clean_title(&text);
    (is_resumable(user) && !title.is_empty())
        .then(|| json!({"$set": {"summary": title, "lastUpdated": now}}))
}

/// A `user` message; `display` (gemini-cli's `displayContent`) is what the user typed
/// when the model got something else.
pub fn user_record(id: &str, now: &str, parts: &[Part], display: Option<&str>) -> Value {
    let mut record = json!({"id": id, "timestamp": now, "type": "user", "content": parts});
    if let Some(display) = display {
        record["displayContent"] = json!(display);
    }
    record
}

/// A history turn as a message of a `$set.messages` rewrite: user turns keep their
/// parts; model turns keep theirs as Part[] content (gemini-cli's own rewrite form).
pub fn history_records(
    history: &[Content],
    ids: &mut dyn FnMut() -> String,
    now: &str,
) -> Vec<Value> {
    history
        .iter()
        .map(|c| {
            let kind = if c.role == Role::User {
                "user"
            } else {
                "gemini"
            };
            json!({"id": ids(), "timestamp": now, "type": kind, "content": c.parts})
        })
        .collect()
}

#[cfg(test)]
#[path = "session_file_tests.rs"]
mod tests;
