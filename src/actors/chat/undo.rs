//! Undoing a failed turn's edits (`model.undo_failed_turn`, on in the small profile): a
//! turn that ends in failure (an error, a loop, the round or time limit) puts back the
//! files its `replace` and `write_file` calls changed, so a small model that gave up
//! half-way leaves the project as it found it. A file is put back only while it still
//! holds what the turn's last edit wrote (nothing else changed it since); files the
//! turn created are left, and so are edits too large for their result to carry the old
//! text ([`crate::tools::file_edit::EDIT_CONTENTS_MAX_BYTES`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::engine::hash::sha256;
use crate::platform::filesystem::{FsClient, WriteExpect};
use crate::protocol::{CallStatus, CompletedCall, ToolFacts, TurnOutcome};

/// `outcome` with what the undo did added to its message (a turn stopped at the round
/// limit has no message of its own: it becomes a failure that names the limit).
pub fn with_undo_note(outcome: TurnOutcome, said: &str) -> TurnOutcome {
    if said.is_empty() {
        return outcome;
    }
    match outcome {
        TurnOutcome::Failed { message } => TurnOutcome::Failed {
            message: format!("{message} The turn failed, so {said}."),
        },
        TurnOutcome::LoopDetected { message } => TurnOutcome::LoopDetected {
            message: format!("{message} The turn failed, so {said}."),
        },
        other => other,
    }
}

/// What one file looked like before the turn's first edit of it, and after its last.
#[derive(Debug, Clone)]
struct Edited {
    /// The text before the turn (None: the file was absent or empty, or its result
    /// did not carry the text).
    original: Option<String>,
    /// The text the turn's last edit wrote (None: not carried).
    last: Option<String>,
}

/// The files a turn edited, in the order first edited.
#[derive(Debug, Default)]
pub struct TurnEdits {
    files: BTreeMap<PathBuf, Edited>,
}

impl TurnEdits {
    /// Notes a finished call, whose tool has `facts`: successful edit calls
    /// (`replace`, `write_file`) count.
    pub fn note(&mut self, call: &CompletedCall, facts: &ToolFacts) {
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
        let Some(path) = text("file_path") else {
            // Too large to carry the texts: this file cannot be put back.
            if let Some(path) = call.args.get(path_arg).and_then(Value::as_str) {
                let entry = self.files.entry(PathBuf::from(path)).or_insert(Edited {
                    original: None,
                    last: None,
                });
                entry.last = None;
            }
            return;
        };
        let last = text("new_content");
        self.files
            .entry(PathBuf::from(path))
            .and_modify(|e| e.last = last.clone())
            .or_insert(Edited {
                original: text("original_content"),
                last,
            });
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Puts the files back; returns a sentence for the user and the model's record.
    pub async fn undo(self, fs: FsClient, shown: impl Fn(&std::path::Path) -> String) -> String {
        let mut restored = Vec::new();
        let mut kept = Vec::new();
        for (path, edited) in self.files {
            let (Some(original), Some(last)) = (edited.original, edited.last) else {
                kept.push(shown(&path));
                continue;
            };
            let expect = WriteExpect::Unchanged(Some(sha256(last.as_bytes())));
            match fs
                .write_atomic(path.clone(), original.into_bytes(), expect)
                .await
            {
                Ok(_) => restored.push(shown(&path)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "undo of a failed turn's edit");
                    kept.push(shown(&path));
                }
            }
        }
        let mut said = Vec::new();
        if !restored.is_empty() {
            said.push(format!("its edits were undone ({})", restored.join(", ")));
        }
        if !kept.is_empty() {
            said.push(format!(
                "left as they are: {} (created by the turn, changed since, or too large to put back)",
                kept.join(", ")
            ));
        }
        said.join("; ")
    }
}
