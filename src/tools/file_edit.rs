//! What `replace` and `write_file` share: reading the file an edit starts from, the
//! result data (strategy, diff, diff stats, correction), write errors in gemini-cli's
//! words, and the test-only pause between computing and writing.
//!
//! Test hook: when `TROUPE_TEST_TOOLS=1` and `TROUPE_TEST_PAUSE_BEFORE_WRITE=<file>` are
//! both set, an edit that has computed its new content creates `<file>.paused`, then
//! waits (asynchronously, at most 30 s) until `<file>` exists before it writes. A
//! black-box test waits for `<file>.paused`, changes the file on disk, then creates
//! `<file>`: the change lands exactly between computing and writing.
//! `TROUPE_TEST_PAUSE_AFTER_COMMIT=<file>` pauses the same way just after the point of
//! no return ([`super::ToolContext::commit`]), so a test can cancel a started write;
//! when the call's cancellation reaches it there, it creates `<file>.cancelled`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::{Services, Touched};
use crate::engine::diff::FileDiff;
use crate::engine::edit::snapshot::FileSnapshot;
use crate::platform::filesystem::FsError;
use crate::protocol::{ConfirmationDetails, ToolErrorKind, ToolOutput};

/// The environment variable of the test-only pause.
pub const PAUSE_ENV: &str = "TROUPE_TEST_PAUSE_BEFORE_WRITE";
const PAUSE_LIMIT: Duration = Duration::from_secs(30);

/// The environment variable of the test-only pause after the point of no return.
pub const PAUSE_AFTER_COMMIT_ENV: &str = "TROUPE_TEST_PAUSE_AFTER_COMMIT";

/// Waits for the test-only flag file, if the hook is on; whether it waited.
pub async fn pause_before_write() -> bool {
    pause_on(PAUSE_ENV, None).await
}

/// Waits for the test-only flag file of [`PAUSE_AFTER_COMMIT_ENV`], if the hook is on,
/// telling (`<flag>.cancelled`) when `cancel` fires meanwhile; whether it waited.
pub async fn pause_after_commit(cancel: &CancellationToken) -> bool {
    pause_on(PAUSE_AFTER_COMMIT_ENV, Some(cancel)).await
}

async fn pause_on(var: &str, cancel: Option<&CancellationToken>) -> bool {
    let Some(flag) = crate::platform::filesystem::test_pause::arm(var) else {
        return false;
    };
    let waited = tokio::time::timeout(PAUSE_LIMIT, async {
        let mut cancel = cancel;
        while !tokio::fs::try_exists(&flag).await.unwrap_or(false) {
            if cancel.is_some_and(CancellationToken::is_cancelled) {
                cancel = None;
                let mut told = flag.clone().into_os_string();
                told.push(".cancelled");
                if let Err(e) = tokio::fs::write(&told, b"").await {
                    tracing::warn!(error = %e, "cannot create the test cancel marker");
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if waited.is_err() {
        tracing::warn!(flag = %flag.display(), "test pause flag never appeared");
    }
    true
}

/// A file as an edit found it.
pub enum Existing {
    Missing {
        path: PathBuf,
    },
    Text {
        path: PathBuf,
        snapshot: FileSnapshot,
    },
}

/// Reads the file an edit starts from (a missing file is not an error).
pub async fn read_existing(services: &Services, path: PathBuf) -> Result<Existing, ReadFailure> {
    match services.fs.read(path.clone()).await {
        Ok(read) => match FileSnapshot::from_vec(read.bytes) {
            Ok(snapshot) => Ok(Existing::Text {
                path: read.real_path,
                snapshot,
            }),
            Err(e) => Err(ReadFailure::NotText(read.real_path, e.to_string())),
        },
        Err(FsError::NotFound(_)) => {
            let meta = services.fs.stat(path).await.map_err(ReadFailure::Fs)?;
            Ok(Existing::Missing {
                path: meta.real_path,
            })
        }
        Err(e) => Err(ReadFailure::Fs(e)),
    }
}

/// Why the starting content could not be read.
pub enum ReadFailure {
    Fs(FsError),
    NotText(PathBuf, String),
}

/// gemini-cli skips correction for these.
pub fn is_json_like(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    matches!(ext.as_deref(), Some("json" | "ipynb" | "jsonc" | "json5"))
}

/// The parse check (`edit.check_syntax`, [`crate::engine::syntax_check`]): an error
/// output, of `kind`, when writing `after` over `before` (`None` for a new file) would
/// turn a file that parses into one that does not. `tool` and `field` name the call
/// and the parameter the model should correct. The parse runs on a blocking thread.
pub async fn refuse_unparseable(
    services: &Services,
    path: &Path,
    before: Option<&str>,
    after: &str,
    (tool, field, kind): (&str, &str, ToolErrorKind),
) -> Result<(), ToolOutput> {
    use crate::engine::syntax_check::{self, Grammar, MAX_CHECKED_BYTES};
    let checked = services.settings.edit.check_syntax
        && Grammar::for_path(path).is_some()
        && before.is_some_and(|b| b.len() <= MAX_CHECKED_BYTES)
        && after.len() <= MAX_CHECKED_BYTES;
    if !checked {
        return Ok(());
    }
    let (owned_path, before, after) = (
        path.to_path_buf(),
        before.map(str::to_string),
        after.to_string(),
    );
    let found = tokio::task::spawn_blocking(move || {
        syntax_check::introduced_error(&owned_path, before.as_deref(), &after)
    })
    .await;
    let Ok(Some(error)) = found else {
        return Ok(());
    };
    let rel = services.workspace.display_relative(path);
    let raw = format!(
        "The edit would leave {rel} unparseable as {}: {error}; the file was not changed.\n{:>6} | {}\nCorrect `{field}` so that the file still parses, and call {tool} again.",
        error.grammar.name(),
        error.line,
        error.source_line,
    );
    let display = format!(
        "Refused: the edit would leave {rel} unparseable (line {}, column {}).",
        error.line, error.column
    );
    Err(ToolOutput::error(kind, raw, display))
}

/// The data of an edit result: read by stats (`strategy`, `diff_stat`, `correction`)
/// and by front ends (`diff`).
pub fn edit_data(
    strategy: Option<&str>,
    diff: Option<&FileDiff>,
    correction: Option<&str>,
    method: Option<&str>,
) -> Value {
    let mut map = Map::new();
    if let Some(s) = strategy {
        map.insert("strategy".into(), json!(s));
    }
    if let Some(d) = diff {
        map.insert(
            "diff_stat".into(),
            json!({"lines_added": d.lines_added, "lines_removed": d.lines_removed}),
        );
        map.insert("diff".into(), json!(d.text));
    }
    if let Some(c) = correction {
        map.insert("correction".into(), json!(c));
    }
    if let Some(m) = method {
        map.insert("correction_method".into(), json!(m));
    }
    Value::Object(map)
}

/// The most old and new text together an edit's result carries (for front ends that
/// show the whole change, and the session file's `resultDisplay`); a bigger edit's
/// result carries its unified diff only.
pub const EDIT_CONTENTS_MAX_BYTES: usize = 64 * 1024;

/// `data` with the edited file's path and its old and new text (`original_content`
/// null for a file that was absent or empty), when they fit in
/// [`EDIT_CONTENTS_MAX_BYTES`]; `path` is the one the confirmation showed.
pub fn with_contents(mut data: Value, path: &Path, original: &str, new: &str) -> Value {
    if original.len() + new.len() > EDIT_CONTENTS_MAX_BYTES {
        return data;
    }
    if let Value::Object(map) = &mut data {
        map.insert("file_path".into(), json!(path.display().to_string()));
        let original = if original.is_empty() {
            Value::Null
        } else {
            json!(original)
        };
        map.insert("original_content".into(), original);
        map.insert("new_content".into(), json!(new));
    }
    data
}

/// A failed write in gemini-cli's words; `other` words anything else.
pub fn write_error(e: FsError, other: impl FnOnce(String) -> String) -> ToolOutput {
    match e {
        FsError::ChangedOnDisk(p) => {
            let msg = format!("The file {} was changed on disk after this edit was computed, so the edit was not written and the other change was kept. Read the file again and retry the edit against its current content.", p.display());
            ToolOutput::error(
                ToolErrorKind::FileChangedOnDisk,
                msg,
                "Error: the file changed on disk; the edit was not written.",
            )
        }
        e @ FsError::ChangedWhileWriting { .. } => {
            let msg = e.to_string();
            ToolOutput::error(
                ToolErrorKind::FileChangedOnDisk,
                msg.clone(),
                format!("Error: {msg}"),
            )
        }
        FsError::PermissionDenied(p) => {
            let msg = format!(
                "Permission denied writing to file: {} (EACCES)",
                p.display()
            );
            ToolOutput::error(ToolErrorKind::PermissionDenied, msg.clone(), msg)
        }
        FsError::NoSpace(p) => {
            let msg = format!("No space left on device: {} (ENOSPC)", p.display());
            ToolOutput::error(ToolErrorKind::NoSpaceLeft, msg.clone(), msg)
        }
        FsError::IsDirectory(p) => {
            let msg = format!(
                "Target is a directory, not a file: {} (EISDIR)",
                p.display()
            );
            ToolOutput::error(ToolErrorKind::TargetIsDirectory, msg.clone(), msg)
        }
        FsError::Path(p) => ToolOutput::error(
            ToolErrorKind::PathNotInWorkspace,
            p.to_string(),
            "Error: Path not in workspace.",
        ),
        other_error => {
            let msg = other(other_error.to_string());
            ToolOutput::error(ToolErrorKind::FileWriteFailure, msg.clone(), msg)
        }
    }
}

/// The file name shown in diff headers.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// What an edit of `file_path` touches: that file, written (calls of one batch that
/// touch it run in call order).
pub fn writes(services: &Services, file_path: &str) -> Touched {
    Touched {
        reads: vec![],
        writes: vec![services.resolve_edit_path(file_path)],
    }
}

/// "Allow for this session" on an edit covers that file.
pub fn approval_key(services: &Services, file_path: &str) -> Vec<String> {
    vec![services.resolve_edit_path(file_path).display().to_string()]
}

/// The confirmation of a file change: the unified diff of `original` → `proposed`,
/// titled `"{title} {path relative to the workspace}"`.
pub fn edit_confirmation(
    services: &Services,
    title: &str,
    path: &Path,
    original: &str,
    proposed: &str,
) -> ConfirmationDetails {
    let d = crate::engine::diff::unified(&file_name(path), original, proposed);
    ConfirmationDetails::Edit {
        title: format!("{title} {}", services.workspace.display_relative(path)),
        file_path: path.display().to_string(),
        diff: d.text,
        original: original.to_string(),
        proposed: proposed.to_string(),
        lines_added: d.lines_added,
        lines_removed: d.lines_removed,
    }
}

/// The bytes of file text that edits in flight may hold at once (old text, new text,
/// the diff's line tables), summed over all running `write_file`/`replace` calls. A
/// batch of 200 rewrites of 5 MB files waits its turn here instead of holding 200 old
/// and new texts at once. One call bigger than the whole budget still runs (alone).
pub const EDIT_MEMORY_BUDGET_BYTES: usize = 128 * 1024 * 1024;

/// Budget units are KiB, so the count fits a semaphore's `u32` permits.
const BUDGET_UNIT: usize = 1024;

static EDIT_MEMORY: tokio::sync::Semaphore =
    tokio::sync::Semaphore::const_new(EDIT_MEMORY_BUDGET_BYTES / BUDGET_UNIT);

/// What an edit may hold at once for a file of `old_len` bytes and new content of
/// `new_len` bytes: both texts, a copy of each for the diff's tables and the write,
/// capped at the whole budget.
pub fn edit_memory_weight(old_len: usize, new_len: usize) -> u32 {
    let bytes = old_len.saturating_add(new_len).saturating_mul(2);
    let units = bytes.div_ceil(BUDGET_UNIT).max(1);
    u32::try_from(units.min(EDIT_MEMORY_BUDGET_BYTES / BUDGET_UNIT)).unwrap_or(u32::MAX)
}

/// Waits until the edit of `file_path` with `new_len` bytes of new content fits in
/// [`EDIT_MEMORY_BUDGET_BYTES`]; the permit returns its share when dropped. The old
/// file's size comes from a stat (a missing file counts as empty; a failed stat lets
/// the read that follows report the error).
pub async fn reserve_edit_memory(
    services: &Services,
    file_path: &str,
    new_len: usize,
) -> Option<tokio::sync::SemaphorePermit<'static>> {
    let old_len = match services
        .fs
        .stat(services.resolve_edit_path(file_path))
        .await
    {
        Ok(meta) if meta.exists => usize::try_from(meta.size).unwrap_or(usize::MAX),
        _ => 0,
    };
    EDIT_MEMORY
        .acquire_many(edit_memory_weight(old_len, new_len))
        .await
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_weighs_both_texts_twice_and_never_more_than_the_budget() {
        let mib = 1024 * 1024;
        assert_eq!(edit_memory_weight(5 * mib, 5 * mib), 20 * 1024);
        assert_eq!(edit_memory_weight(0, 0), 1);
        assert_eq!(
            edit_memory_weight(usize::MAX, 1),
            u32::try_from(EDIT_MEMORY_BUDGET_BYTES / BUDGET_UNIT).unwrap()
        );
    }
}
