//! Confined file access: the one way Troupe opens a path of the workspace.
//!
//! Each workspace root is opened once as a directory descriptor. Every path is then
//! opened *relative to that descriptor* with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS)`: the kernel resolves every component (symlinks included)
//! and fails with `EXDEV` the moment resolution would leave the root, so a symlink or
//! directory swapped in between a check and a use cannot lead outside. Paths are never
//! opened by name.
//!
//! A path whose lexical form is not under a root, or that needs an absolute symlink
//! (which `RESOLVE_BENEATH` always refuses), is first resolved by name and checked
//! against the roots *without being opened*; only a path found inside is then opened,
//! again beneath the root it lies in. Include-directories are further roots, nothing
//! more. Requires Linux 5.6 or later (`openat2`).
//!
//! Roots only grow: `/directory add` opens one more root ([`add_root`]); its
//! descriptor is in place before the [`Workspace`] lists it, so a path the workspace
//! accepts always has a root to open beneath.

mod add_root;

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use rustix::fs::{Mode, OFlags, ResolveFlags};

use super::FsError;
use crate::engine::paths::strip_path_prefix;
use crate::platform::workspace::{
    deepest_root, normalize_lexically, validate_path_text, PathError, Workspace,
};

/// The resolve flags of every confined open.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// The workspace with an open descriptor per root; dereferences to the [`Workspace`].
pub struct Confined {
    workspace: Arc<Workspace>,
    /// The only places a path may open beneath.
    roots: RwLock<Roots>,
}

/// The workspace roots at start, then the project temp directory (when there is one),
/// then the roots added during the session; indices never change.
#[derive(Default)]
struct Roots {
    paths: Vec<PathBuf>,
    /// `fds[i]` is an `O_PATH` descriptor of `paths[i]`.
    fds: Vec<Arc<OwnedFd>>,
}

impl std::fmt::Debug for Confined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confined")
            .field("roots", &self.read_roots().paths)
            .finish()
    }
}

impl Deref for Confined {
    type Target = Workspace;
    fn deref(&self) -> &Workspace {
        &self.workspace
    }
}

/// A path as a root and a path relative to it (empty: the root itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub root: usize,
    pub rel: PathBuf,
}

/// An open file (or directory) and the real path of its descriptor.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub real_path: PathBuf,
}

/// How a path is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read-only, non-blocking (a FIFO or device cannot hang the pool).
    Read,
    /// A directory, for reading its entries.
    Directory,
    /// Only a handle (`O_PATH`): for stat, nothing is read.
    Handle,
}

impl OpenMode {
    fn flags(self) -> OFlags {
        // openat2 refuses flags O_PATH does not take (EINVAL).
        match self {
            OpenMode::Read => OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::RDONLY | OFlags::NONBLOCK,
            OpenMode::Directory => OFlags::CLOEXEC | OFlags::RDONLY | OFlags::DIRECTORY,
            OpenMode::Handle => OFlags::CLOEXEC | OFlags::PATH,
        }
    }
}

impl Confined {
    /// Opens a descriptor on every root of `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> io::Result<Self> {
        let root_paths: Vec<PathBuf> = workspace
            .roots()
            .iter()
            .cloned()
            .chain(workspace.temp_dir().map(Path::to_path_buf))
            .collect();
        let fds = root_paths
            .iter()
            .map(|root| open_root(root).map(Arc::new))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self {
            workspace,
            roots: RwLock::new(Roots {
                paths: root_paths,
                fds,
            }),
        })
    }

    fn read_roots(&self) -> RwLockReadGuard<'_, Roots> {
        self.roots.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The workspace this guards.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// The descriptor of root `index`.
    fn root_fd(&self, index: usize) -> io::Result<Arc<OwnedFd>> {
        self.read_roots()
            .fds
            .get(index)
            .cloned()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// The absolute, lexically normalised form of `path` (relative paths are taken
    /// from the primary root).
    pub fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            normalize_lexically(path)
        } else {
            normalize_lexically(self.workspace.primary().join(path))
        }
    }

    /// The deepest root `path` (absolute, normalised) lies under by its text.
    pub fn locate_lexically(&self, path: &Path) -> Option<Located> {
        let roots = self.read_roots();
        let root = deepest_root(&roots.paths, path)?;
        let rel = strip_path_prefix(path, &roots.paths[root])?;
        Some(Located {
            root,
            rel: rel.to_path_buf(),
        })
    }

    /// Opens `rel` beneath root `root` with `mode`.
    pub fn open_located(&self, at: &Located, mode: OpenMode) -> io::Result<OwnedFd> {
        self.open_located_with(at, mode, RESOLVE)
    }

    /// Opens `rel` beneath root `root` with `mode` and `resolve` (which always holds
    /// [`RESOLVE`]'s flags).
    fn open_located_with(
        &self,
        at: &Located,
        mode: OpenMode,
        resolve: ResolveFlags,
    ) -> io::Result<OwnedFd> {
        open_in(&self.read_roots(), at.root, &at.rel, mode, resolve)
    }

    /// Resolves `path` to a root and a relative path, refusing (without opening
    /// anything) paths outside every root: by its text when it lies under a root and
    /// resolves beneath it, else by resolving it by name first.
    pub fn open(&self, path: &Path, mode: OpenMode) -> Result<Opened, FsError> {
        validate_path_text(&path.to_string_lossy())?;
        let abs = self.absolute(path);
        let lexical = {
            // One read of the roots for the common case, and nothing copied: every
            // walker thread of a search opens through here, and each shared counter
            // it touches (a lock, a descriptor's reference count) is a cache line the
            // cores pass between them.
            let roots = self.read_roots();
            match deepest_root(&roots.paths, &abs) {
                Some(index) => {
                    // Blocked segments (`.git`, `.env`, ...) by the text of the path.
                    let root = &roots.paths[index];
                    let rel = strip_path_prefix(&abs, root).unwrap_or(&abs);
                    let named = self.workspace.check_real(path, root.join(rel))?;
                    // No symlink on the way (`RESOLVE_NO_SYMLINKS`): the file's real
                    // path is its root's (canonical) path joined with the rest, already
                    // checked above, so it is not read back from `/proc/self/fd` (a
                    // system call and a path per open). A path through a symlink fails
                    // with ELOOP and takes the general way below.
                    match open_in(&roots, index, rel, mode, ResolveFlags::NO_SYMLINKS) {
                        Ok(fd) => {
                            return Ok(Opened {
                                file: File::from(fd),
                                real_path: named,
                            })
                        }
                        Err(e) if e.raw_os_error() == Some(libc::ELOOP) || needs_real_path(&e) => {}
                        Err(e) => return Err(FsError::from_io(&abs, e)),
                    }
                    Some(Located {
                        root: index,
                        rel: rel.to_path_buf(),
                    })
                }
                None => None,
            }
        };
        if let Some(at) = lexical {
            match self.open_located(&at, mode) {
                Ok(fd) => return self.finish(path, fd),
                Err(e) if needs_real_path(&e) => {}
                Err(e) => return Err(FsError::from_io(&abs, e)),
            }
        }
        // Outside the roots by its text, or through an absolute symlink: resolve by
        // name and check, before anything is opened.
        let real = self.workspace.check(&abs)?;
        let at = self.locate_real(path, &real)?;
        match self.open_located(&at, mode) {
            Ok(fd) => self.finish(path, fd),
            // Swapped between the check and the open: still refused.
            Err(e) if needs_real_path(&e) => Err(self.outside(path).into()),
            Err(e) => Err(FsError::from_io(&real, e)),
        }
    }

    /// Where a real (symlink-free) path lies, as a root and a relative path.
    pub fn locate_real(&self, attempted: &Path, real: &Path) -> Result<Located, PathError> {
        self.locate_lexically(real)
            .ok_or_else(|| self.outside(attempted))
    }

    /// The real path of `path` without opening it: through its descriptor when it
    /// exists, else resolved by name (a missing file, a dangling link) and checked.
    pub fn real_path(&self, path: &Path) -> Result<PathBuf, FsError> {
        match self.open(path, OpenMode::Handle) {
            Ok(opened) => Ok(opened.real_path),
            Err(FsError::NotFound(_)) | Err(FsError::NotDirectory(_)) => {
                Ok(self.workspace.check(&self.absolute(path))?)
            }
            Err(e) => Err(e),
        }
    }

    fn outside(&self, attempted: &Path) -> PathError {
        self.workspace.outside_error(attempted)
    }

    /// Checks the real path of an open descriptor (blocked segments) and wraps it.
    fn finish(&self, attempted: &Path, fd: OwnedFd) -> Result<Opened, FsError> {
        let real = fd_path(fd.as_fd()).map_err(|e| FsError::from_io(attempted, e))?;
        let real = self.workspace.check_real(attempted, real)?;
        Ok(Opened {
            file: File::from(fd),
            real_path: real,
        })
    }

    /// Opens (creating missing ones, mode `0777 & !umask`) the directory `rel` beneath
    /// root `root`, readable so it can be fsynced.
    pub fn open_or_create_dir(&self, at: &Located) -> io::Result<OwnedFd> {
        match self.open_located(at, OpenMode::Directory) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => return other,
        }
        let root = self.root_fd(at.root)?;
        let mut prefix = PathBuf::new();
        for component in at.rel.components() {
            let Component::Normal(name) = component else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "unexpected path component",
                ));
            };
            let parent = open_beneath(root.as_fd(), &prefix, OpenMode::Directory.flags())?;
            match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o777)) {
                Ok(()) => {}
                Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            prefix.push(name);
        }
        open_beneath(root.as_fd(), &prefix, OpenMode::Directory.flags())
    }
}

/// An `O_PATH` descriptor of a root directory (symlinks in `path` followed).
fn open_root(path: &Path) -> io::Result<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

/// `openat2(dir, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`; an empty `rel`
/// is the directory itself.
pub fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    open_beneath_with(dir, rel, flags, RESOLVE)
}

fn open_beneath_with(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    resolve: ResolveFlags,
) -> io::Result<OwnedFd> {
    let rel: &OsStr = if rel.as_os_str().is_empty() {
        OsStr::new(".")
    } else {
        rel.as_os_str()
    };
    rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve).map_err(io::Error::from)
}

/// Reads the regular file `path` (absolute) as text, opened beneath whichever of
/// `roots` it lies in, for callers that run before or outside the FileSystem actor
/// (context files' `@` imports). A link leading out of the roots is not followed; a
/// path that needs an absolute link is resolved by name, checked, then opened beneath
/// its root again. At most `max` bytes are read. Returns the file's real path (from
/// its descriptor) and its text, or why not.
pub fn read_text_beneath(
    roots: &[PathBuf],
    path: &Path,
    max: u64,
) -> Result<(PathBuf, String), String> {
    use std::io::Read;
    let outside = || "path is outside the allowed directories".to_string();
    let open = |candidate: &Path| -> Result<Option<OwnedFd>, String> {
        let Some(root) = deepest_root(roots, candidate).map(|i| &roots[i]) else {
            return Ok(None);
        };
        let rel = strip_path_prefix(candidate, root).unwrap_or(candidate);
        let dir = rustix::fs::open(root, OpenMode::Directory.flags(), Mode::empty())
            .map_err(|e| e.to_string())?;
        match open_beneath(dir.as_fd(), rel, OpenMode::Read.flags()) {
            Ok(fd) => Ok(Some(fd)),
            Err(e) if needs_real_path(&e) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    };
    let lexical = normalize_lexically(path);
    let fd = match open(&lexical)? {
        Some(fd) => fd,
        None => {
            let real = std::fs::canonicalize(&lexical).map_err(|e| e.to_string())?;
            open(&real)?.ok_or_else(outside)?
        }
    };
    let real = fd_path(fd.as_fd()).map_err(|e| e.to_string())?;
    if !roots.iter().any(|r| real.starts_with(r)) {
        return Err(outside());
    }
    let stat = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err("not a regular file".into());
    }
    let mut bytes = Vec::new();
    File::from(fd)
        .take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    Ok((real, String::from_utf8_lossy(&bytes).into_owned()))
}

/// Opens `rel` beneath root `root` of `roots` (a guard the caller holds: the root's
/// descriptor is borrowed, not counted) with `mode` and `resolve` plus [`RESOLVE`].
fn open_in(
    roots: &Roots,
    root: usize,
    rel: &Path,
    mode: OpenMode,
    resolve: ResolveFlags,
) -> io::Result<OwnedFd> {
    let fd = roots
        .fds
        .get(root)
        .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
    open_beneath_with(fd.as_fd(), rel, mode.flags(), resolve.union(RESOLVE))
}

/// True when an `openat2` error means "resolution would leave the root" (or a
/// symlink could not be followed beneath it): the path must be resolved by name.
fn needs_real_path(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EXDEV)
}

/// The path of an open descriptor (`/proc/self/fd/N`).
pub fn fd_path(fd: BorrowedFd<'_>) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let target = std::fs::read_link(link)?;
    if target.as_os_str().as_bytes().ends_with(b" (deleted)") {
        return Err(io::Error::from(io::ErrorKind::NotFound));
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn setup() -> (tempfile::TempDir, PathBuf, Confined) {
        let outer = tempfile::tempdir().unwrap();
        let base = outer.path().canonicalize().unwrap();
        let ws_dir = base.join("ws");
        std::fs::create_dir_all(ws_dir.join("sub")).unwrap();
        std::fs::write(base.join("secret"), "SECRET").unwrap();
        std::fs::write(ws_dir.join("sub/a.txt"), "inside").unwrap();
        let ws = Arc::new(Workspace::new(&ws_dir, &[]).unwrap());
        let confined = Confined::new(ws).unwrap();
        (outer, ws_dir, confined)
    }

    fn read(c: &Confined, p: &Path) -> Result<String, FsError> {
        let mut opened = c.open(p, OpenMode::Read)?;
        let mut s = String::new();
        opened.file.read_to_string(&mut s).unwrap();
        Ok(s)
    }

    #[test]
    fn reads_inside_and_through_links_that_stay_inside() {
        let (_t, ws, c) = setup();
        assert_eq!(read(&c, &ws.join("sub/a.txt")).unwrap(), "inside");
        assert_eq!(read(&c, Path::new("sub/a.txt")).unwrap(), "inside");
        std::os::unix::fs::symlink("sub/a.txt", ws.join("rel")).unwrap();
        std::os::unix::fs::symlink(ws.join("sub/a.txt"), ws.join("abs")).unwrap();
        assert_eq!(read(&c, &ws.join("rel")).unwrap(), "inside");
        assert_eq!(read(&c, &ws.join("abs")).unwrap(), "inside");
    }

    #[test]
    fn refuses_links_and_dot_dots_that_lead_out() {
        let (t, ws, c) = setup();
        let base = t.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(base.join("secret"), ws.join("abs_out")).unwrap();
        std::os::unix::fs::symlink("../secret", ws.join("rel_out")).unwrap();
        std::os::unix::fs::symlink(&base, ws.join("dir_out")).unwrap();
        for p in ["abs_out", "rel_out", "dir_out/secret", "../secret"] {
            let err = read(&c, &ws.join(p)).unwrap_err();
            assert!(
                matches!(err, FsError::Path(PathError::OutsideWorkspace { .. })),
                "{p}: {err}"
            );
        }
        assert!(read(&c, &base.join("secret")).is_err());
    }

    #[test]
    fn handles_and_directories_open() {
        let (_t, ws, c) = setup();
        assert!(c.open(&ws.join("sub/a.txt"), OpenMode::Handle).is_ok());
        assert!(c.open(&ws.join("sub"), OpenMode::Directory).is_ok());
        assert!(c.open(&ws, OpenMode::Handle).is_ok());
    }

    #[test]
    fn creates_directories_beneath_the_root_only() {
        let (t, ws, c) = setup();
        let at = c.locate_lexically(&ws.join("new/deep")).unwrap();
        c.open_or_create_dir(&at).unwrap();
        assert!(ws.join("new/deep").is_dir());
        std::os::unix::fs::symlink(t.path(), ws.join("out")).unwrap();
        let at = c.locate_lexically(&ws.join("out/made")).unwrap();
        assert!(c.open_or_create_dir(&at).is_err());
        assert!(!t.path().join("made").exists());
    }
}
