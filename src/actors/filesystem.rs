//! The FileSystem actor: every file access of every tool goes through this pool
//! (`SyncArbiter`), and every path it is given is checked against the workspace first.
//! Writes are atomic (temp file + rename, permissions kept) and can require that the
//! file still holds the content an edit was computed from.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use actix::prelude::*;
use sha2::{Digest, Sha256};

use crate::engine::workspace::{PathError, Workspace};

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
    #[error("{}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("file system actor unavailable: {0}")]
    Unavailable(String),
}

impl FsError {
    fn from_io(path: &Path, e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::NotFound => FsError::NotFound(path.to_path_buf()),
            io::ErrorKind::PermissionDenied => FsError::PermissionDenied(path.to_path_buf()),
            io::ErrorKind::IsADirectory => FsError::IsDirectory(path.to_path_buf()),
            io::ErrorKind::StorageFull => FsError::NoSpace(path.to_path_buf()),
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
}

/// The result of a successful write.
#[derive(Debug, Clone)]
pub struct WriteOutcome {
    pub real_path: PathBuf,
    pub created: bool,
}

/// sha256 of some bytes.
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The actor; one instance per pool thread.
pub struct FileSystem {
    workspace: Arc<Workspace>,
}

impl Actor for FileSystem {
    type Context = SyncContext<Self>;
}

impl FileSystem {
    /// Starts a pool of `threads` FileSystem actors.
    pub fn start_pool(workspace: Arc<Workspace>, threads: usize) -> Addr<Self> {
        SyncArbiter::start(threads.max(1), move || FileSystem {
            workspace: workspace.clone(),
        })
    }
}

/// Read a whole file.
#[derive(Message)]
#[rtype(result = "Result<FileRead, FsError>")]
pub struct ReadFile(pub PathBuf);

/// Stat a path (a missing path is `exists: false`, not an error).
#[derive(Message)]
#[rtype(result = "Result<FileMeta, FsError>")]
pub struct Stat(pub PathBuf);

/// List a directory (unsorted).
#[derive(Message)]
#[rtype(result = "Result<Vec<DirEntryInfo>, FsError>")]
pub struct ListDir(pub PathBuf);

/// Write a file atomically.
#[derive(Message)]
#[rtype(result = "Result<WriteOutcome, FsError>")]
pub struct WriteAtomic {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub expect: WriteExpect,
}

/// Runs blocking work (a walk, a search) on the pool with the workspace guard at hand.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Job(pub Box<dyn FnOnce(&Workspace) + Send>);

impl Handler<ReadFile> for FileSystem {
    type Result = Result<FileRead, FsError>;
    fn handle(&mut self, msg: ReadFile, _: &mut Self::Context) -> Self::Result {
        read_checked(&self.workspace, &msg.0)
    }
}

/// Reads a file after the workspace check (also used inside [`Job`]s).
///
/// The file is opened first (following symlinks, non-blocking so a FIFO cannot hang the
/// pool) and the check runs on the real path of the open descriptor, so what is checked
/// is exactly what is read, with two syscalls instead of a `realpath` walk.
pub fn read_checked(workspace: &Workspace, path: &Path) -> Result<FileRead, FsError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;

    crate::engine::workspace::validate_path_text(&path.to_string_lossy())?;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) => {
            // The workspace error wins over "not found" for paths outside it.
            let real = workspace.check(path)?;
            return Err(FsError::from_io(&real, e));
        }
    };
    let real = match std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
        Ok(real) => workspace.check_real(path, real)?,
        Err(_) => workspace.check(path)?,
    };
    let meta = file.metadata().map_err(|e| FsError::from_io(&real, e))?;
    if meta.is_dir() {
        return Err(FsError::IsDirectory(real));
    }
    if !meta.is_file() {
        return Err(FsError::Io {
            path: real,
            message: "not a regular file".into(),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)
        .map_err(|e| FsError::from_io(&real, e))?;
    Ok(FileRead {
        real_path: real,
        bytes,
        modified: meta.modified().ok(),
    })
}

impl Handler<Stat> for FileSystem {
    type Result = Result<FileMeta, FsError>;
    fn handle(&mut self, msg: Stat, _: &mut Self::Context) -> Self::Result {
        let real = self.workspace.check(&msg.0)?;
        match std::fs::metadata(&real) {
            Ok(meta) => Ok(FileMeta {
                real_path: real,
                exists: true,
                is_dir: meta.is_dir(),
                size: meta.len(),
                modified: meta.modified().ok(),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(FileMeta {
                real_path: real,
                exists: false,
                is_dir: false,
                size: 0,
                modified: None,
            }),
            Err(e) => Err(FsError::from_io(&real, e)),
        }
    }
}

impl Handler<ListDir> for FileSystem {
    type Result = Result<Vec<DirEntryInfo>, FsError>;
    fn handle(&mut self, msg: ListDir, _: &mut Self::Context) -> Self::Result {
        let real = self.workspace.check(&msg.0)?;
        let meta = std::fs::metadata(&real).map_err(|e| FsError::from_io(&real, e))?;
        if !meta.is_dir() {
            return Err(FsError::NotDirectory(real));
        }
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&real).map_err(|e| FsError::from_io(&real, e))? {
            let Ok(entry) = entry else { continue };
            let path = entry.path();
            // Entries whose stat fails are skipped, as gemini-cli does.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            out.push(DirEntryInfo {
                name: entry.file_name().to_string_lossy().into_owned(),
                path,
                is_dir: meta.is_dir(),
                size: meta.len(),
                modified: meta.modified().ok(),
            });
        }
        Ok(out)
    }
}

impl Handler<WriteAtomic> for FileSystem {
    type Result = Result<WriteOutcome, FsError>;
    fn handle(&mut self, msg: WriteAtomic, _: &mut Self::Context) -> Self::Result {
        write_atomic(&self.workspace, &msg.path, &msg.bytes, &msg.expect)
    }
}

impl Handler<Job> for FileSystem {
    type Result = ();
    fn handle(&mut self, msg: Job, _: &mut Self::Context) {
        (msg.0)(&self.workspace);
    }
}

/// Checks, compares against `expect`, then writes through a temp file and a rename.
pub fn write_atomic(
    workspace: &Workspace,
    path: &Path,
    bytes: &[u8],
    expect: &WriteExpect,
) -> Result<WriteOutcome, FsError> {
    let real = workspace.check(path)?;
    let existing = match std::fs::read(&real) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
            return Err(FsError::IsDirectory(real))
        }
        Err(e) => return Err(FsError::from_io(&real, e)),
    };
    match (expect, &existing) {
        (WriteExpect::Absent, Some(_)) => return Err(FsError::AlreadyExists(real)),
        (WriteExpect::Unchanged(expected), current) => {
            let current_hash = current.as_deref().map(content_hash);
            if current_hash != *expected {
                return Err(FsError::ChangedOnDisk(real));
            }
        }
        _ => {}
    }
    let parent = real
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    std::fs::create_dir_all(&parent).map_err(|e| FsError::from_io(&parent, e))?;
    let permissions = std::fs::metadata(&real).ok().map(|m| m.permissions());
    let mut temp = tempfile::Builder::new()
        .prefix(".troupe-write-")
        .tempfile_in(&parent)
        .map_err(|e| FsError::from_io(&parent, e))?;
    temp.write_all(bytes)
        .and_then(|_| temp.as_file().sync_all())
        .map_err(|e| FsError::from_io(&real, e))?;
    if let Some(perms) = permissions {
        std::fs::set_permissions(temp.path(), perms).map_err(|e| FsError::from_io(&real, e))?;
    }
    temp.persist(&real)
        .map_err(|e| FsError::from_io(&real, e.error))?;
    Ok(WriteOutcome {
        real_path: real,
        created: existing.is_none(),
    })
}

/// A cheap handle on the pool with async methods.
#[derive(Clone)]
pub struct FsClient {
    addr: Addr<FileSystem>,
    /// A client editor that serves text files (ACP); see `editor_files`.
    editor: Option<super::editor_files::SharedEditor>,
}

fn mailbox(e: MailboxError) -> FsError {
    FsError::Unavailable(e.to_string())
}

impl FsClient {
    pub fn new(addr: Addr<FileSystem>) -> Self {
        Self { addr, editor: None }
    }

    /// The client editor serving reads, if any.
    pub fn reading_editor(&self) -> Option<&super::editor_files::SharedEditor> {
        self.editor.as_ref().filter(|e| e.reads())
    }

    /// Reads and writes text files through `editor` (still inside the workspace).
    pub fn with_editor(mut self, editor: Option<super::editor_files::SharedEditor>) -> Self {
        self.editor = editor;
        self
    }

    pub async fn read(&self, path: PathBuf) -> Result<FileRead, FsError> {
        if let Some(editor) = self.editor.as_ref().filter(|e| e.reads()) {
            if let Some(result) = super::editor_files::read(self, editor, &path).await {
                return result;
            }
        }
        self.addr.send(ReadFile(path)).await.map_err(mailbox)?
    }

    pub async fn stat(&self, path: PathBuf) -> Result<FileMeta, FsError> {
        self.addr.send(Stat(path)).await.map_err(mailbox)?
    }

    pub async fn list_dir(&self, path: PathBuf) -> Result<Vec<DirEntryInfo>, FsError> {
        self.addr.send(ListDir(path)).await.map_err(mailbox)?
    }

    pub async fn write_atomic(
        &self,
        path: PathBuf,
        bytes: Vec<u8>,
        expect: WriteExpect,
    ) -> Result<WriteOutcome, FsError> {
        if let Some(editor) = self.editor.as_ref().filter(|e| e.writes()) {
            if let Some(result) =
                super::editor_files::write(self, editor, &path, &bytes, &expect).await
            {
                return result;
            }
        }
        self.addr
            .send(WriteAtomic {
                path,
                bytes,
                expect,
            })
            .await
            .map_err(mailbox)?
    }

    /// Runs `work` on the pool and returns its result.
    pub async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&Workspace) -> R + Send + 'static,
    ) -> Result<R, FsError> {
        // The job answers through its own channel: one hand-off back, not two (a
        // `send` would also wait for the pool to acknowledge the job).
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.addr.do_send(Job(Box::new(move |ws| {
            let _ = tx.send(work(ws));
        })));
        rx.await.map_err(|e| FsError::Unavailable(e.to_string()))
    }
}
