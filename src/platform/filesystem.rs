//! The FileSystem actor: every file access of every tool goes through its threads
//! (`tools.fs_threads`, serving one mailbox: [`pool`]), and every path it is given is opened beneath a workspace root's
//! descriptor ([`confined`]), never by name. Writes are atomic ([`atomic_write`]:
//! temp file and rename relative to the parent's descriptor, mode and owner kept) and
//! can require that the file still holds the content an edit was computed from.

pub mod atomic_write;
pub mod confined;
pub mod editor;
pub mod glob_check;
pub mod ledger;
pub mod owned_file;
pub mod path_lookup;
mod pool;
pub mod stale_temps;
pub mod test_pause;
pub mod walk;
pub mod writers;

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

pub use confined::{Confined, OpenMode, Opened};
pub use pool::{FileSystem, FsJob, FsMailbox};

use crate::platform::workspace::{PathError, Workspace};

/// Why a file operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FsError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("File not found: {}", .0.display())]
    NotFound(PathBuf),
    #[error("Path is a directory, not a file: {}", .0.display())]
    IsDirectory(PathBuf),
    #[error("Path is not a directory: {}", .0.display())]
    NotDirectory(PathBuf),
    #[error("Permission denied: {}", .0.display())]
    PermissionDenied(PathBuf),
    #[error("No space left on device: {}", .0.display())]
    NoSpace(PathBuf),
    #[error("File already exists: {}", .0.display())]
    AlreadyExists(PathBuf),
    #[error("{} was changed on disk after the edit was computed; the edit was not written. Read the file again and retry.", .0.display())]
    ChangedOnDisk(PathBuf),
    #[error("{} was changed by another process while this edit was being written; {}; that process's version is kept at {}. Compare the two and merge them.", path.display(), if *written { "the edit was written" } else { "the edit was not written (the other change is in place)" }, kept.display())]
    ChangedWhileWriting {
        path: PathBuf,
        kept: PathBuf,
        written: bool,
    },
    #[error("{}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("Not a regular file (a device, FIFO or socket is never read): {}", .0.display())]
    NotRegularFile(PathBuf),
    #[error("File too large: {} is {size} bytes, the limit is {limit} bytes", path.display())]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("file system actor unavailable: {0}")]
    Unavailable(String),
}

impl FsError {
    pub fn from_io(path: &Path, e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::NotFound => FsError::NotFound(path.to_path_buf()),
            io::ErrorKind::PermissionDenied => FsError::PermissionDenied(path.to_path_buf()),
            io::ErrorKind::IsADirectory => FsError::IsDirectory(path.to_path_buf()),
            io::ErrorKind::StorageFull => FsError::NoSpace(path.to_path_buf()),
            io::ErrorKind::NotADirectory => FsError::NotDirectory(path.to_path_buf()),
            _ => FsError::Io {
                path: path.to_path_buf(),
                message: e.to_string(),
            },
        }
    }
}

/// Metadata of a checked path.
#[derive(Debug, Clone)]
pub struct FileMeta {
    pub real_path: PathBuf,
    pub exists: bool,
    pub is_dir: bool,
    pub size: u64,
    pub modified: Option<SystemTime>,
}

/// The bytes of a file and where they really came from.
#[derive(Debug, Clone)]
pub struct FileRead {
    pub real_path: PathBuf,
    pub bytes: Vec<u8>,
    pub modified: Option<SystemTime>,
}

/// One entry of a directory listing.
#[derive(Debug, Clone)]
pub struct DirEntryInfo {
    pub name: String,
    pub path: PathBuf,
    pub is_dir: bool,
    pub size: u64,
    pub modified: Option<SystemTime>,
}

/// What a write requires of the file it replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteExpect {
    /// Write whatever is there.
    Any,
    /// The file must not exist.
    Absent,
    /// The file must still have this sha256 (`None`: must still be absent).
    Unchanged(Option<[u8; 32]>),
    /// The file has this sha256, as the caller read it through this client moments ago
    /// with nothing awaited since but computing the new content: the disk checks it
    /// again (under the write's own lock, at no cost), a client editor is not asked
    /// for the text once more (the window a second read would close is the one between
    /// it and the write, no shorter than this one).
    ReadJustNow([u8; 32]),
}

impl WriteExpect {
    /// The expectation as the disk checks it.
    fn on_disk(self) -> Self {
        match self {
            WriteExpect::ReadJustNow(hash) => WriteExpect::Unchanged(Some(hash)),
            other => other,
        }
    }
}

/// The result of a successful write.
#[derive(Debug, Clone)]
pub struct WriteOutcome {
    pub real_path: PathBuf,
    pub created: bool,
}

/// sha256 of some bytes.
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    crate::engine::hash::sha256(bytes)
}

impl FileSystem {
    /// Opens the workspace roots and starts `threads` FileSystem threads.
    pub fn start_pool(workspace: Arc<Workspace>, threads: usize) -> io::Result<FsMailbox> {
        let confined = Arc::new(Confined::new(workspace)?);
        Ok(Self::start_confined(confined, threads))
    }

    /// Starts `threads` FileSystem threads on already opened roots.
    pub fn start_confined(confined: Arc<Confined>, threads: usize) -> FsMailbox {
        FsMailbox::start(confined, threads)
    }
}

/// Reads a regular file of the workspace (also used inside jobs, [`FsClient::run`]).
///
/// The file is opened beneath a root descriptor ([`Confined::open`]), non-blocking so
/// a FIFO cannot hang the pool, and its kind and size are checked on the open
/// descriptor: what is checked is exactly what is read. Devices, FIFOs and sockets are
/// refused, and so are files above [`MAX_READ_BYTES`].
pub fn read_checked(confined: &Confined, path: &Path) -> Result<FileRead, FsError> {
    let opened = confined.open(path, OpenMode::Read)?;
    let real = opened.real_path;
    let mut file = opened.file;
    let meta = regular_file_meta(&file, &real)?;
    if meta.len() > MAX_READ_BYTES {
        return Err(FsError::TooLarge {
            path: real,
            size: meta.len(),
            limit: MAX_READ_BYTES,
        });
    }
    let bytes = read_reported_size(&mut file, meta.len(), MAX_READ_BYTES + 1)
        .map_err(|e| FsError::from_io(&real, e))?;
    Ok(FileRead {
        real_path: real,
        bytes,
        modified: meta.modified().ok(),
    })
}

/// Reads an open regular file whose descriptor reported `reported_len` bytes: that
/// many, as Node's `readFile` does, with no probe for more after them (a `read` call
/// per file); a file that reports no size (procfs, some FUSE files) is read to its end,
/// at most `limit` bytes.
pub fn read_reported_size(
    file: &mut std::fs::File,
    reported_len: u64,
    limit: u64,
) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let wanted = match reported_len {
        0 => limit,
        len => len.min(limit),
    };
    // Through `take` so std does not stat and seek again to size the buffer: the
    // capacity is already the file's size, and a `take` that is used up answers the
    // probe `read_to_end` makes when its buffer is full without a system call.
    let mut bytes = Vec::with_capacity(wanted.min(reported_len) as usize);
    file.take(wanted).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Files above this size are not read whole by [`read_checked`] (20 MiB, read_file's
/// limit).
pub const MAX_READ_BYTES: u64 = 20 * 1024 * 1024;

/// The metadata of an open file that must be a regular file (`fstat`, no read).
pub fn regular_file_meta(file: &std::fs::File, real: &Path) -> Result<std::fs::Metadata, FsError> {
    let meta = file.metadata().map_err(|e| FsError::from_io(real, e))?;
    if meta.is_dir() {
        return Err(FsError::IsDirectory(real.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(FsError::NotRegularFile(real.to_path_buf()));
    }
    Ok(meta)
}

/// Stats a path of the workspace through a descriptor opened beneath its root.
pub fn stat_confined(confined: &Confined, path: &Path) -> Result<FileMeta, FsError> {
    match confined.open(path, OpenMode::Handle) {
        Ok(opened) => {
            let meta = opened
                .file
                .metadata()
                .map_err(|e| FsError::from_io(&opened.real_path, e))?;
            Ok(FileMeta {
                real_path: opened.real_path,
                exists: true,
                is_dir: meta.is_dir(),
                size: meta.len(),
                modified: meta.modified().ok(),
            })
        }
        Err(FsError::NotFound(_)) | Err(FsError::NotDirectory(_)) => Ok(FileMeta {
            real_path: confined.check(&confined.absolute(path))?,
            exists: false,
            is_dir: false,
            size: 0,
            modified: None,
        }),
        Err(e) => Err(e),
    }
}

/// Lists a directory of the workspace through its descriptor; each entry is stat'ed
/// beneath the root (a link leading out is left out).
pub fn list_confined(confined: &Confined, path: &Path) -> Result<Vec<DirEntryInfo>, FsError> {
    let opened = confined.open(path, OpenMode::Handle)?;
    let real = opened.real_path;
    let meta = opened
        .file
        .metadata()
        .map_err(|e| FsError::from_io(&real, e))?;
    if !meta.is_dir() {
        return Err(FsError::NotDirectory(real));
    }
    let at = confined.locate_real(path, &real)?;
    let dir = confined
        .open_located(&at, OpenMode::Directory)
        .map_err(|e| FsError::from_io(&real, e))?;
    let entries =
        rustix::fs::Dir::read_from(&dir).map_err(|e| FsError::from_io(&real, e.into()))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = std::ffi::OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string();
        if name == "." || name == ".." {
            continue;
        }
        let entry_at = confined::Located {
            root: at.root,
            rel: at.rel.join(&name),
        };
        // Entries whose stat fails (dangling links, links leading out) are skipped.
        let Ok(fd) = confined.open_located(&entry_at, OpenMode::Handle) else {
            continue;
        };
        let Ok(meta) = std::fs::File::from(fd).metadata() else {
            continue;
        };
        out.push(DirEntryInfo {
            name: name.to_string_lossy().into_owned(),
            path: real.join(&name),
            is_dir: meta.is_dir(),
            size: meta.len(),
            modified: meta.modified().ok(),
        });
    }
    Ok(out)
}

/// Checks, compares against `expect`, then writes atomically beneath the workspace
/// root (see [`atomic_write`]).
pub fn write_atomic(
    confined: &Confined,
    path: &Path,
    bytes: &[u8],
    expect: &WriteExpect,
) -> Result<WriteOutcome, FsError> {
    atomic_write::write_confined(confined, path, bytes, expect)
}

/// A named piece of file work that runs on a FileSystem thread beneath the workspace
/// roots' descriptors: its only access to files is the [`Confined`] it is given, whose
/// every open is made beneath a root ([`Confined::open`], [`Confined::walk_files`]).
///
/// Callers outside `platform` reach the pool through [`FsClient`]'s typed methods
/// (`read`, `stat`, `list_dir`, `write_atomic`, `glob`) or by handing it a value of a
/// type implementing this ([`FsClient::perform`]): a typed request whose work is
/// known by its name, never an arbitrary closure.
pub trait FsWork: Send + 'static {
    /// What the work answers.
    type Output: Send + 'static;
    /// Does the work on a FileSystem thread.
    fn perform(self, confined: &Confined) -> Self::Output;
}

/// A cheap handle on the FileSystem actor with async methods.
#[derive(Clone)]
pub struct FsClient {
    mailbox: FsMailbox,
    /// A client editor that serves text files (ACP); see `editor_files`.
    editor: Option<crate::platform::filesystem::editor::SharedEditor>,
}

impl FsClient {
    pub fn new(mailbox: FsMailbox) -> Self {
        Self {
            mailbox,
            editor: None,
        }
    }

    /// The client editor serving reads, if any.
    pub fn reading_editor(&self) -> Option<&crate::platform::filesystem::editor::SharedEditor> {
        self.editor.as_ref().filter(|e| e.reads())
    }

    /// Reads and writes text files through `editor` (still inside the workspace).
    pub fn with_editor(
        mut self,
        editor: Option<crate::platform::filesystem::editor::SharedEditor>,
    ) -> Self {
        self.editor = editor;
        self
    }

    /// Adds a workspace root (`/directory add`): see [`crate::protocol::Op::AddWorkspaceRoot`].
    pub async fn add_root(
        &self,
        path: String,
    ) -> Result<crate::protocol::AddedRoot, crate::protocol::AddRootError> {
        let asked = PathBuf::from(&path);
        self.run(move |confined| confined.add_root(&path))
            .await
            .unwrap_or_else(|e| {
                Err(crate::protocol::AddRootError::Io {
                    path: asked,
                    message: e.to_string(),
                })
            })
    }

    pub async fn read(&self, path: PathBuf) -> Result<FileRead, FsError> {
        if let Some(editor) = self.editor.as_ref().filter(|e| e.reads()) {
            if let Some(result) =
                crate::platform::filesystem::editor::read(self, editor, &path).await
            {
                return result;
            }
        }
        self.run(move |confined| read_checked(confined, &path))
            .await?
    }

    pub async fn stat(&self, path: PathBuf) -> Result<FileMeta, FsError> {
        self.run(move |confined| stat_confined(confined, &path))
            .await?
    }

    pub async fn list_dir(&self, path: PathBuf) -> Result<Vec<DirEntryInfo>, FsError> {
        self.run(move |confined| list_confined(confined, &path))
            .await?
    }

    pub async fn write_atomic(
        &self,
        path: PathBuf,
        bytes: Vec<u8>,
        expect: WriteExpect,
    ) -> Result<WriteOutcome, FsError> {
        if let Some(editor) = self.editor.as_ref().filter(|e| e.writes()) {
            if let Some(result) =
                crate::platform::filesystem::editor::write(self, editor, &path, &bytes, &expect)
                    .await
            {
                return result;
            }
        }
        let expect = expect.on_disk();
        self.run(move |confined| write_atomic(confined, &path, &bytes, &expect))
            .await?
    }

    /// Runs the typed request `work` on a FileSystem thread and returns its answer
    /// (one hand-off there, one back, as for every method here). A request that panics
    /// is an error for this caller only.
    pub async fn perform<W: FsWork>(&self, work: W) -> Result<W::Output, FsError> {
        self.run(move |confined| work.perform(confined)).await
    }

    /// Runs `work` on a FileSystem thread and returns its result. The job goes
    /// straight into the actor's mailbox and answers on its own channel: one hand-off
    /// there, one back. A job that panics is an error for this caller only. Private to
    /// the platform: everything else names its work ([`FsWork`]).
    pub(in crate::platform) async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&Confined) -> R + Send + 'static,
    ) -> Result<R, FsError> {
        // The answer is boxed: the channel is allocated now with room for its value,
        // which a job in flight would otherwise reserve whole (a `ToolOutput` for a read).
        let (tx, rx) = tokio::sync::oneshot::channel::<Box<R>>();
        self.mailbox.post(Box::new(move |confined| {
            let _ = tx.send(Box::new(work(confined)));
        }))?;
        rx.await.map(|boxed| *boxed).map_err(|_| {
            FsError::Unavailable("the file system job ended without an answer (it panicked)".into())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A regular file whose size says 0 but which has content (procfs) is read to its end;
    /// any other file is read to the size its descriptor reports.
    #[test]
    fn files_are_read_to_their_size_or_to_the_end_when_they_report_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "four").expect("write");
        let ws = Arc::new(Workspace::new(dir.path(), &[]).expect("workspace"));
        let confined = Confined::new(ws).expect("confined");
        let read = read_checked(&confined, Path::new("a.txt")).expect("read");
        assert_eq!(read.bytes, b"four");

        let proc_self = Arc::new(Workspace::new(Path::new("/proc/self"), &[]).expect("proc"));
        let confined = Confined::new(proc_self).expect("confined");
        let status = read_checked(&confined, Path::new("status")).expect("read status");
        let text = String::from_utf8_lossy(&status.bytes);
        assert!(text.starts_with("Name:"), "{text}");
        assert!(text.contains("\nPid:"), "{text}");
    }
}
