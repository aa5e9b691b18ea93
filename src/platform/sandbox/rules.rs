//! Landlock ruleset construction (parent side), including the enumeration technique
//! that grants "a tree minus some paths".

use std::fs;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use landlock::{
    make_bitflags, Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};

use super::child::c_path;
use super::SandboxError;

/// The Landlock ABI this module was written and tested against. Newer kernels get
/// exactly these semantics; older ones degrade (best effort) to what they support.
pub(super) const TARGET_ABI: ABI = ABI::V7;

/// Rights that make sense on a non-directory.
pub(super) const FILE_RIGHTS: BitFlags<AccessFs> =
    make_bitflags!(AccessFs::{ReadFile | WriteFile | Execute | Truncate | IoctlDev});

/// Read access (without execute).
pub(super) const READ: BitFlags<AccessFs> = make_bitflags!(AccessFs::{ReadFile | ReadDir});

/// Read and write access for the few device files every mode may use.
pub(super) const DEVICE_RW: BitFlags<AccessFs> =
    make_bitflags!(AccessFs::{ReadFile | ReadDir | WriteFile | Truncate | IoctlDev});

/// Write access granted beneath writable roots: everything Landlock handles except
/// creating device nodes (a root child could otherwise `mknod` a disk and read it).
pub(super) fn write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(TARGET_ABI) & !(AccessFs::MakeBlock | AccessFs::MakeChar)
}

/// Accumulates rules into a kernel ruleset.
pub(super) struct RuleBuilder {
    ruleset: RulesetCreated,
    rules: usize,
}

impl RuleBuilder {
    /// Creates the ruleset. `block_net` also denies TCP bind/connect (ABI >= 4) and
    /// abstract UNIX sockets outside the sandbox (ABI >= 6); `scope_signals` forbids
    /// signalling processes outside the sandbox (ABI >= 6).
    pub(super) fn new(block_net: bool, scope_signals: bool) -> Result<Self, SandboxError> {
        let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(TARGET_ABI))?;
        if block_net {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?
                .scope(Scope::AbstractUnixSocket)?;
        }
        if scope_signals {
            ruleset = ruleset.scope(Scope::Signal)?;
        }
        Ok(RuleBuilder {
            ruleset: ruleset.create()?,
            rules: 0,
        })
    }

    /// Number of rules added so far.
    pub(super) fn rules(&self) -> usize {
        self.rules
    }

    /// Grants `access` beneath `root` except beneath any path of `excluded` (all
    /// paths canonical). Landlock cannot subtract a subtree, so when `root` contains
    /// an excluded path, every sibling entry is granted separately and the ancestors
    /// of excluded paths only get `ReadDir` (if requested): their names stay
    /// listable, their other entries are covered one by one, and entries created
    /// after this call in those ancestor directories get nothing.
    pub(super) fn grant(
        &mut self,
        root: &Path,
        access: BitFlags<AccessFs>,
        excluded: &[PathBuf],
    ) -> Result<(), SandboxError> {
        if excluded.iter().any(|e| e == root) {
            return Ok(());
        }
        let inside: Vec<&PathBuf> = excluded.iter().filter(|e| e.starts_with(root)).collect();
        let meta = match fs::metadata(root) {
            Ok(m) => m,
            Err(e) if is_skippable(&e) => return Ok(()),
            Err(e) => return Err(path_err(root, e)),
        };
        if inside.is_empty() || !meta.is_dir() {
            return self.add(root, access, meta.is_dir());
        }
        let listing = access & AccessFs::ReadDir;
        if !listing.is_empty() {
            self.add(root, listing, true)?;
        }
        let entries = match fs::read_dir(root) {
            Ok(entries) => entries,
            Err(e) if is_skippable(&e) => return Ok(()),
            Err(e) => return Err(path_err(root, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| path_err(root, e))?;
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // A symlink is resolved at access time and checked at its target; a rule
            // on it would instead grant its target, which may be anywhere.
            if kind.is_symlink() || inside.iter().any(|e| **e == path) {
                continue;
            }
            if inside.iter().any(|e| e.starts_with(&path)) {
                self.grant(&path, access, excluded)?;
            } else {
                self.add(&path, access, kind.is_dir())?;
            }
        }
        Ok(())
    }

    fn add(
        &mut self,
        path: &Path,
        access: BitFlags<AccessFs>,
        dir: bool,
    ) -> Result<(), SandboxError> {
        let access = if dir { access } else { access & FILE_RIGHTS };
        if access.is_empty() {
            return Ok(());
        }
        let c = c_path(path).map_err(|e| path_err(path, e))?;
        // SAFETY: opening an O_PATH descriptor on a NUL-terminated path.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return if is_skippable(&e) {
                Ok(())
            } else {
                Err(path_err(path, e))
            };
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        (&mut self.ruleset).add_rule(PathBeneath::new(fd, access))?;
        self.rules += 1;
        Ok(())
    }

    /// Returns the ruleset descriptor, CLOEXEC and numbered >= 3 (so that the stdio
    /// set-up of `Command` cannot clobber it). `None` when Landlock is unavailable.
    pub(super) fn finish(self) -> Result<Option<OwnedFd>, SandboxError> {
        let fd: Option<OwnedFd> = self.ruleset.into();
        let Some(fd) = fd else {
            return Ok(None);
        };
        // SAFETY: duplicating a descriptor we own.
        let dup = unsafe {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                libc::F_DUPFD_CLOEXEC,
                3,
            )
        };
        if dup < 0 {
            return Err(SandboxError::Io(io::Error::last_os_error()));
        }
        // SAFETY: `dup` is a fresh descriptor owned by nobody else.
        Ok(Some(unsafe { OwnedFd::from_raw_fd(dup) }))
    }
}

/// Device nodes under `/dev` that must never be readable: block devices (a root
/// child could read the raw disk, bypassing `deny_read`) and physical memory.
pub(super) fn sensitive_devices() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["/dev/mem", "/dev/kmem", "/dev/port"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect();
    walk_dev(Path::new("/dev"), 0, &mut out);
    out
}

fn walk_dev(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    const SKIP: [&str; 4] = ["/dev/shm", "/dev/mqueue", "/dev/pts", "/dev/hugepages"];
    if depth > 4 || SKIP.iter().any(|s| dir == Path::new(s)) {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_block_device() {
            out.push(entry.path());
        } else if kind.is_dir() {
            walk_dev(&entry.path(), depth + 1, out);
        }
    }
}

/// Paths that vanished or that the caller cannot see are simply not granted.
fn is_skippable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EACCES)
    )
}

pub(super) fn path_err(path: &Path, source: io::Error) -> SandboxError {
    SandboxError::Path {
        path: path.to_path_buf(),
        source,
    }
}
