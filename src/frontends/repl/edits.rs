//! The session's file edits as the REPL saw them, for `/diff` and `/undo`: every
//! successful call of the main session to a tool that edits one file (`replace`,
//! `write_file`: their `edited_file_arg` fact), with the text its
//! result carries from before and after the edit (see
//! [`crate::tools::file_edit::with_contents`]; an edit too large to carry them is kept
//! as such, and can be neither shown nor undone).
//!
//! `/diff` shows each edited file against its text before the session first changed it.
//! `/undo` puts back the newest edit not yet undone, only while the file still holds
//! what that edit wrote: a newer change on disk is never overwritten.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::engine::hash::sha256;
use crate::platform::filesystem::WriteExpect;
use crate::protocol::{CallStatus, CompletedCall, ToolFacts};

/// One edit call.
#[derive(Debug, Clone)]
pub struct Edit {
    /// The file, as the tool resolved it (absolute).
    pub path: PathBuf,
    /// The text before the edit (`None`: the file was absent or empty).
    pub before: Option<String>,
    /// The text the edit wrote.
    pub after: String,
    /// The edit created the file.
    pub created: bool,
}

/// One entry of the log: an edit whose texts the result carried, or one too large.
#[derive(Debug, Clone)]
pub enum Entry {
    Edit(Edit),
    TooLarge(PathBuf),
}

/// The edits of the session, oldest first; shared by the event pump (which notes them)
/// and the REPL thread.
pub type EditLog = Arc<Mutex<Vec<Entry>>>;

/// Notes `call`, whose tool has `facts`, when it is a successful edit of one file (its
/// data carries the edit's texts, or they did not fit).
pub fn note(log: &EditLog, call: &CompletedCall, facts: &ToolFacts) {
    let Some(path_arg) = facts.edited_file_arg else {
        return;
    };
    if call.status != CallStatus::Success {
        return;
    }
    let Some(data) = call.data.as_ref() else {
        return;
    };
    let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_string);
    let entry = match (text("file_path"), text("new_content")) {
        (Some(path), Some(after)) => {
            let before = text("original_content");
            Entry::Edit(Edit {
                path: PathBuf::from(path),
                // Both tools say `Created <file>` for a file they created.
                created: before.is_none() && call.display.starts_with("Created "),
                before,
                after,
            })
        }
        _ => {
            let Some(path) = call.args.get(path_arg).and_then(Value::as_str) else {
                return;
            };
            Entry::TooLarge(PathBuf::from(path))
        }
    };
    if let Ok(mut log) = log.lock() {
        log.push(entry);
    }
}

/// The files the session changed, in the order first changed, each with its text before
/// the session's first edit of it (`None`: absent or empty; `Err`: an edit of it was too
/// large to keep).
pub fn originals(entries: &[Entry]) -> Vec<(PathBuf, Result<Option<String>, ()>)> {
    let mut out: Vec<(PathBuf, Result<Option<String>, ()>)> = Vec::new();
    for entry in entries {
        let (path, before) = match entry {
            Entry::Edit(e) => (&e.path, Ok(e.before.clone())),
            Entry::TooLarge(p) => (p, Err(())),
        };
        match out.iter_mut().find(|(p, _)| p == path) {
            Some((_, known)) if before.is_err() => *known = Err(()),
            Some(_) => {}
            None => out.push((path.clone(), before)),
        }
    }
    out
}

/// Why an edit could not be undone.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error("There is no edit of this session to undo.")]
    Nothing,
    #[error("The last edit of {0} was too large to keep its previous text, so it cannot be undone here.")]
    TooLarge(String),
    #[error("{0} changed on disk since that edit, so it was left as it is (undoing would lose the newer change).")]
    ChangedSince(String),
    #[error("{file}: {message}")]
    Io { file: String, message: String },
}

/// The file's text as an edit compares it: line endings as the tools write them.
pub fn normalized(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    text.replace("\r\n", "\n")
}

/// What `/undo` does with `edit`, given the file's bytes now (`None`: absent): the
/// bytes to write with their expectation, or `Ok(None)` to remove the file it created.
pub fn plan_undo(
    edit: &Edit,
    now: Option<&[u8]>,
    shown: &str,
) -> Result<Option<(Vec<u8>, WriteExpect)>, UndoError> {
    let Some(now) = now else {
        return Err(UndoError::ChangedSince(shown.to_string()));
    };
    if normalized(now) != edit.after {
        return Err(UndoError::ChangedSince(shown.to_string()));
    }
    if edit.created {
        return Ok(None);
    }
    let before = edit.before.clone().unwrap_or_default();
    let crlf = now.windows(2).any(|w| w == b"\r\n");
    let bom = now.starts_with("\u{feff}".as_bytes());
    let mut text = if crlf {
        before.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        before
    };
    if bom {
        text.insert(0, '\u{feff}');
    }
    Ok(Some((
        text.into_bytes(),
        WriteExpect::Unchanged(Some(sha256(now))),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(before: Option<&str>, after: &str, created: bool) -> Edit {
        Edit {
            path: PathBuf::from("/w/a.txt"),
            before: before.map(str::to_string),
            after: after.to_string(),
            created,
        }
    }

    #[test]
    fn an_undo_writes_the_old_text_only_over_the_edits_own() {
        let e = edit(Some("old\n"), "new\n", false);
        let (bytes, expect) = plan_undo(&e, Some(b"new\n"), "a.txt").unwrap().unwrap();
        assert_eq!(bytes, b"old\n");
        assert!(matches!(expect, WriteExpect::Unchanged(Some(_))));
        let refused = plan_undo(&e, Some(b"newer\n"), "a.txt").unwrap_err();
        assert!(refused.to_string().starts_with("a.txt changed on disk"));
        assert!(plan_undo(&e, None, "a.txt").is_err());
        // CRLF files keep their line endings.
        let (bytes, _) = plan_undo(&e, Some(b"new\r\n"), "a.txt").unwrap().unwrap();
        assert_eq!(bytes, b"old\r\n");
        // A created file is removed.
        let c = edit(None, "x", true);
        assert!(plan_undo(&c, Some(b"x"), "a.txt").unwrap().is_none());
    }

    #[test]
    fn originals_are_the_texts_before_the_first_edit() {
        let entries = vec![
            Entry::Edit(edit(Some("one"), "two", false)),
            Entry::Edit(edit(Some("two"), "three", false)),
        ];
        let found = originals(&entries);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, Ok(Some("one".to_string())));
    }
}
