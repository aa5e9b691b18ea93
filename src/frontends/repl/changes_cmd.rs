//! `/diff` (every file the session edited, as a unified diff from its text before the
//! session's first edit to its text on disk now) and `/undo` (the newest edit not yet
//! undone, put back while the file still holds what that edit wrote). Both read the
//! edits the REPL noted ([`super::edits`]); files are read and written through the
//! session's FileSystem service, so they stay confined to the workspace.

use std::path::{Path, PathBuf};

use crate::engine::diff::{rows, RowKind};
use crate::engine::sanitize::one_line;
use crate::platform::filesystem::FsError;

use super::edits::{self, normalized, plan_undo, Entry, UndoError};
use super::terminal::Palette;
use super::SessionLink;

/// The file's bytes now (`Ok(None)`: it does not exist).
fn read_now(link: &SessionLink, path: &Path) -> Result<Option<Vec<u8>>, String> {
    let (handle, path) = (link.handle.clone(), path.to_path_buf());
    let read = link
        .on_actors(async move { handle.files().read(path).await })
        .ok_or_else(|| "the session has ended".to_string())?;
    match read {
        Ok(file) => Ok(Some(file.bytes)),
        Err(FsError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

fn shown(link: &SessionLink, path: &Path) -> String {
    one_line(&link.handle.workspace().display_relative(path)).into_owned()
}

/// `/diff`: the session's changes so far.
pub fn diff(link: &SessionLink, p: Palette) -> Vec<String> {
    let entries = link.edits.lock().map(|e| e.clone()).unwrap_or_default();
    let files = edits::originals(&entries);
    if files.is_empty() {
        return vec![p.dim("No files were changed in this session.")];
    }
    let mut out = Vec::new();
    let (mut changed, mut added, mut removed) = (0usize, 0usize, 0usize);
    for (path, original) in files {
        let name = shown(link, &path);
        let Ok(original) = original else {
            out.push(p.yellow(&format!(
                "{name}: an edit was too large to keep its text; no diff to show."
            )));
            continue;
        };
        let now = match read_now(link, &path) {
            Ok(now) => now,
            Err(e) => {
                out.push(p.red(&format!("{name}: {e}")));
                continue;
            }
        };
        let before = original.unwrap_or_default();
        let after = now.as_deref().map(normalized).unwrap_or_default();
        if before == after {
            continue;
        }
        changed += 1;
        let old_label = if before.is_empty() {
            "/dev/null".to_string()
        } else {
            format!("a/{name}")
        };
        let new_label = if now.is_none() {
            "/dev/null".to_string()
        } else {
            format!("b/{name}")
        };
        out.push(p.bold(&format!("--- {old_label}")));
        out.push(p.bold(&format!("+++ {new_label}")));
        for row in rows(&before, &after) {
            let text = one_line(&row.text);
            out.push(match row.kind {
                RowKind::Hunk => p.cyan(&text),
                RowKind::Context => format!(" {text}"),
                RowKind::Added => {
                    added += 1;
                    p.green(&format!("+{text}"))
                }
                RowKind::Removed => {
                    removed += 1;
                    p.red(&format!("-{text}"))
                }
            });
        }
    }
    if changed == 0 && out.is_empty() {
        return vec![p.dim("The files this session edited are back as they were.")];
    }
    let s = if changed == 1 { "" } else { "s" };
    out.push(p.dim(&format!(
        "{changed} file{s} changed, {added} line(s) added, {removed} removed (since the session first edited them)."
    )));
    out
}

/// `/undo`: puts back the newest edit of the session not yet undone.
pub fn undo(link: &SessionLink, p: Palette) -> Vec<String> {
    let last = link.edits.lock().ok().and_then(|e| e.last().cloned());
    let result = match last {
        None => Err(UndoError::Nothing),
        Some(Entry::TooLarge(path)) => Err(UndoError::TooLarge(shown(link, &path))),
        Some(Entry::Edit(edit)) => undo_edit(link, &edit),
    };
    match result {
        Ok(said) => {
            if let Ok(mut log) = link.edits.lock() {
                log.pop();
            }
            super::shell_mode::add_to_history(
                link,
                format!("[The user undid your last edit: {said}. Read the file again before editing it.]"),
            );
            let left = link.edits.lock().map(|e| e.len()).unwrap_or(0);
            let more = if left == 0 {
                String::new()
            } else {
                format!(" ({left} more edit(s) to undo)")
            };
            vec![p.green(&format!("Undone: {said}.{more}"))]
        }
        Err(e) => vec![p.yellow(&e.to_string())],
    }
}

/// Undoes `edit`; what was done, in words.
fn undo_edit(link: &SessionLink, edit: &edits::Edit) -> Result<String, UndoError> {
    let name = shown(link, &edit.path);
    let io = |message: String| UndoError::Io {
        file: name.clone(),
        message,
    };
    let now = read_now(link, &edit.path).map_err(io)?;
    match plan_undo(edit, now.as_deref(), &name)? {
        None => {
            remove(&edit.path).map_err(|e| io(e.to_string()))?;
            Ok(format!("{name} was created by the edit and is removed"))
        }
        Some((bytes, expect)) => {
            let (handle, path) = (link.handle.clone(), edit.path.clone());
            let written = link
                .on_actors(async move { handle.files().write_atomic(path, bytes, expect).await })
                .ok_or_else(|| io("the session has ended".into()))?;
            match written {
                Ok(_) => Ok(format!("{name} is back as it was before the edit")),
                Err(FsError::ChangedOnDisk(_)) => Err(UndoError::ChangedSince(name)),
                Err(e) => Err(io(e.to_string())),
            }
        }
    }
}

/// Removes a file the session's edit created (the edit tool resolved its path inside
/// the workspace; it still holds exactly what the edit wrote).
fn remove(path: &PathBuf) -> std::io::Result<()> {
    std::fs::remove_file(path)
}
