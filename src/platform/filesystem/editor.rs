//! The editor's view of files (ACP `fs/read_text_file` / `fs/write_text_file`): when a
//! client editor offers it, the FileSystem client reads and writes text files through
//! it, so the model sees unsaved buffers and edits land in the editor. The workspace
//! policy is still checked by the FileSystem actor first, and the write expectations
//! (absent, unchanged since read) are checked against what the editor holds.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{content_hash, FileMeta, FileRead, FsClient, FsError, WriteExpect, WriteOutcome};

/// Why the editor could not serve a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorError {
    /// The editor has no such file.
    NotFound,
    /// Anything else (the client refused, disconnected, ...).
    Failed(String),
}

/// A client editor that holds files (its open buffers and the disk behind them).
pub trait EditorFiles: Send + Sync {
    /// Whether reads go through the editor.
    fn reads(&self) -> bool;
    /// Whether writes go through the editor.
    fn writes(&self) -> bool;
    /// The text of `path` as the editor has it.
    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<String, EditorError>>;
    /// Replaces (or creates) `path` with `text`.
    fn write(&self, path: PathBuf, text: String) -> BoxFuture<'static, Result<(), EditorError>>;
}

/// Shared handle on an editor.
pub type SharedEditor = Arc<dyn EditorFiles>;

/// A read through the editor, after the workspace check; `None` means "use the disk"
/// (a directory, or the editor failed for another reason than a missing file).
pub async fn read(
    fs: &FsClient,
    editor: &SharedEditor,
    path: &Path,
) -> Option<Result<FileRead, FsError>> {
    let meta = match fs.stat(path.to_path_buf()).await {
        Ok(m) => m,
        Err(e) => return Some(Err(e)),
    };
    if meta.is_dir {
        return None;
    }
    match editor.read(meta.real_path.clone()).await {
        Ok(text) => Some(Ok(FileRead {
            real_path: meta.real_path,
            bytes: text.into_bytes(),
            modified: meta.modified,
        })),
        Err(EditorError::NotFound) if !meta.exists => Some(Err(FsError::NotFound(meta.real_path))),
        Err(e) => {
            tracing::warn!(path = %meta.real_path.display(), error = ?e, "editor read failed; reading the disk");
            None
        }
    }
}

/// A write through the editor, after the workspace check and the expectation check
/// against the editor's text; `None` means "use the disk" (not UTF-8 text).
pub async fn write(
    fs: &FsClient,
    editor: &SharedEditor,
    path: &Path,
    bytes: &[u8],
    expect: &WriteExpect,
) -> Option<Result<WriteOutcome, FsError>> {
    let text = std::str::from_utf8(bytes).ok()?.to_string();
    let meta: FileMeta = match fs.stat(path.to_path_buf()).await {
        Ok(m) => m,
        Err(e) => return Some(Err(e)),
    };
    if meta.is_dir {
        return Some(Err(FsError::IsDirectory(meta.real_path)));
    }
    if let WriteExpect::ReadJustNow(_) = expect {
        // Read through the editor by this call just now: it exists and holds that text.
        return Some(written(editor, meta.real_path, text, false).await);
    }
    let current = match editor.read(meta.real_path.clone()).await {
        Ok(t) => Some(t),
        Err(EditorError::NotFound) => None,
        // A client that cannot tell: the disk decides whether the file exists.
        Err(EditorError::Failed(_)) if !meta.exists => None,
        Err(EditorError::Failed(message)) => {
            return Some(Err(FsError::Io {
                path: meta.real_path,
                message,
            }))
        }
    };
    let ok = match expect {
        WriteExpect::Any | WriteExpect::ReadJustNow(_) => true,
        WriteExpect::Absent => current.is_none(),
        WriteExpect::Unchanged(hash) => {
            current.as_ref().map(|t| content_hash(t.as_bytes())) == *hash
        }
    };
    if !ok {
        return Some(Err(match expect {
            WriteExpect::Absent => FsError::AlreadyExists(meta.real_path),
            _ => FsError::ChangedOnDisk(meta.real_path),
        }));
    }
    Some(written(editor, meta.real_path, text, current.is_none()).await)
}

/// Hands `text` to the editor for `real_path`.
async fn written(
    editor: &SharedEditor,
    real_path: PathBuf,
    text: String,
    created: bool,
) -> Result<WriteOutcome, FsError> {
    match editor.write(real_path.clone(), text).await {
        Ok(()) => Ok(WriteOutcome { real_path, created }),
        Err(EditorError::NotFound) => Err(FsError::NotFound(real_path)),
        Err(EditorError::Failed(message)) => Err(FsError::Io {
            path: real_path,
            message,
        }),
    }
}
