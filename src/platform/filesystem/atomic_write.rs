//! The one atomic write every writer uses (edits, the memory file, saved approvals).
//!
//! Everything happens relative to an open descriptor of the parent directory, never by
//! path: the existing file is opened without following a link and checked against
//! what the caller expects, the data goes to a temp file created in that directory
//! with mode 0600 (so no one else can read it while it fills), then given its final
//! mode (`0666 & !umask` for a new file; an existing file's mode and, best effort,
//! owner are copied) before it is renamed, the temp file is fsynced, the existing file is checked once more on its
//! open descriptor (same inode, size, modification and change times: an append by
//! another process in the meantime is detected, not lost), then the temp file is
//! renamed over the name within the same directory and the directory is fsynced.
//! A temp file left by a killed run is named `.troupe-write-<pid>-<random>` and is
//! removed at the next start ([`super::stale_temps`]), which knows to look because the
//! process announced itself as a writer first ([`super::writers`]).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};

use super::confined::{Confined, Located};
use super::{content_hash, test_pause, FsError, WriteExpect, WriteOutcome};

/// The prefix of Troupe's temp files.
pub const TEMP_PREFIX: &str = ".troupe-write-";

/// The mode Troupe's temp files are created with: the owner's only, until the data
/// is in and the final mode is set.
const PRIVATE_MODE: u32 = 0o600;

/// The mode of a new file: `0666` less the process's umask (read once from
/// `/proc/self/status`, since `umask(2)` can only be read by changing it, which is not
/// safe with other threads creating files; 022 where it cannot be read).
fn new_file_mode() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let umask = *UMASK.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("Umask:"))
                    .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            })
            .unwrap_or(0o022)
    });
    0o666 & !umask
}

/// Files above this size are not edited (their content would be held several times
/// over by the edit, its diff and its confirmation): 20 MiB, as for reading.
pub const MAX_EDIT_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// Writes `bytes` to `path` of the workspace: the path is resolved beneath a root
/// descriptor (a symlink inside the workspace is followed, so the target is edited and
/// the link stays a link), missing parent directories are created beneath the root,
/// then [`write_in_dir`] does the rest.
pub fn write_confined(
    confined: &Confined,
    path: &Path,
    bytes: &[u8],
    expect: &WriteExpect,
) -> Result<WriteOutcome, FsError> {
    let real = confined.real_path(path)?;
    let at = confined.locate_real(path, &real)?;
    let (Some(parent), Some(name)) = (at.rel.parent(), at.rel.file_name()) else {
        return Err(FsError::IsDirectory(real));
    };
    let parent_at = Located {
        root: at.root,
        rel: parent.to_path_buf(),
    };
    let parent_path = real.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = confined.open_or_create_dir(&parent_at).map_err(|e| {
        if e.raw_os_error() == Some(libc::EXDEV) {
            FsError::Path(confined.outside_error(path))
        } else {
            FsError::from_io(&parent_path, e)
        }
    })?;
    let created = write_in_dir(dir.as_fd(), &parent_path, name, bytes, expect)?;
    Ok(WriteOutcome {
        real_path: real,
        created,
    })
}

/// Writes `bytes` to a path outside the workspace that Troupe owns (the memory file,
/// the user's settings): the parent directory is created and opened by path, then
/// [`write_in_dir`] writes relative to it. Returns whether the file was created.
pub fn write_owned_path(path: &Path, bytes: &[u8], expect: &WriteExpect) -> Result<bool, FsError> {
    // A link (a dotfile kept elsewhere) is followed: its target is written.
    let real = std::fs::canonicalize(path).ok();
    let path = real.as_deref().unwrap_or(path);
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(FsError::IsDirectory(path.to_path_buf()));
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    std::fs::create_dir_all(parent).map_err(|e| FsError::from_io(parent, e))?;
    let dir = rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| FsError::from_io(parent, e.into()))?;
    write_in_dir(dir.as_fd(), parent, name, bytes, expect)
}

/// The file an atomic write replaces, as it was when opened.
struct Existing {
    file: File,
    stat: rustix::fs::Stat,
}

/// Writes `bytes` as `name` in the directory `dir` (shown as `dir_path` in errors)
/// atomically; see the module documentation. Returns whether the file was created.
pub fn write_in_dir(
    dir: BorrowedFd<'_>,
    dir_path: &Path,
    name: &OsStr,
    bytes: &[u8],
    expect: &WriteExpect,
) -> Result<bool, FsError> {
    let shown = dir_path.join(name);
    let existing = open_existing(dir, name, &shown, expect)?;
    check_expectation(existing.as_ref(), &shown, expect)?;
    let temp_name = temp_name();
    // A temp file left by a kill must be found by the next start.
    let _in_flight = super::writers::announce();
    let temp_fd = rustix::fs::openat(
        dir,
        temp_name.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(PRIVATE_MODE),
    )
    .map_err(|e| FsError::from_io(&shown, e.into()))?;
    let result = fill_and_rename(
        dir,
        name,
        &temp_name,
        temp_fd,
        existing.as_ref(),
        bytes,
        expect,
    )
    .map_err(|e| match e {
        Step::Io(e) => FsError::from_io(&shown, e),
        Step::Changed => FsError::ChangedOnDisk(shown.clone()),
        Step::Exists => FsError::AlreadyExists(shown.clone()),
        Step::ChangedWhileWriting { kept, written } => FsError::ChangedWhileWriting {
            path: shown.clone(),
            kept: dir_path.join(kept),
            written,
        },
    });
    if let Err(e) = result {
        if matches!(e, FsError::ChangedWhileWriting { .. }) {
            // The temp name is gone; the kept file must outlive a crash.
            let _ = rustix::fs::fsync(dir);
        } else {
            // The temp name holds our data, never another process's.
            let _ = rustix::fs::unlinkat(dir, temp_name.as_str(), AtFlags::empty());
        }
        return Err(e);
    }
    // The rename is durable once the directory is.
    let _ = rustix::fs::fsync(dir);
    Ok(existing.is_none())
}

enum Step {
    Io(io::Error),
    Changed,
    Exists,
    /// The replaced file was changed after the last check; a version is kept under
    /// this name in the same directory. `written`: whether our data holds the name.
    ChangedWhileWriting {
        kept: String,
        written: bool,
    },
}

impl From<io::Error> for Step {
    fn from(e: io::Error) -> Self {
        Step::Io(e)
    }
}

impl From<rustix::io::Errno> for Step {
    fn from(e: rustix::io::Errno) -> Self {
        Step::Io(e.into())
    }
}

fn fill_and_rename(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    temp_name: &str,
    temp_fd: OwnedFd,
    existing: Option<&Existing>,
    bytes: &[u8],
    expect: &WriteExpect,
) -> Result<(), Step> {
    let mut temp = File::from(temp_fd);
    temp.write_all(bytes)?;
    test_pause::pause(test_pause::AFTER_TEMP_WRITE_ENV);
    // The final mode, before the rename: no moment where the name has the wrong one.
    match existing {
        Some(old) => {
            let mode = Mode::from_raw_mode(old.stat.st_mode & 0o7777);
            // Owner first (it may clear set-id bits), then the mode; an owner we may
            // not give away is kept as ours.
            let _ = rustix::fs::fchown(
                &temp,
                Some(rustix::fs::Uid::from_raw(old.stat.st_uid)),
                Some(rustix::fs::Gid::from_raw(old.stat.st_gid)),
            );
            rustix::fs::fchmod(&temp, mode)?;
        }
        None => rustix::fs::fchmod(&temp, Mode::from_raw_mode(new_file_mode()))?,
    }
    temp.sync_all()?;
    drop(temp);
    match existing {
        Some(old) => {
            if !still_the_same(dir, name, old)? {
                return Err(Step::Changed);
            }
            test_pause::pause(test_pause::BEFORE_RENAME_ENV);
            replace_existing(dir, name, temp_name, old, bytes.len() as u64)
        }
        None => {
            let no_replace = matches!(expect, WriteExpect::Absent | WriteExpect::Unchanged(None));
            if !no_replace {
                rustix::fs::renameat(dir, temp_name, dir, name)?;
                return Ok(());
            }
            match rustix::fs::renameat_with(dir, temp_name, dir, name, RenameFlags::NOREPLACE) {
                Ok(()) => Ok(()),
                Err(rustix::io::Errno::EXIST) => Err(match expect {
                    WriteExpect::Absent => Step::Exists,
                    _ => Step::Changed,
                }),
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// Puts the temp file (holding `new_len` bytes) in place of `old`, which was just
/// checked, without losing what another process writes into `old` meanwhile.
///
/// The two names are exchanged (`RENAME_EXCHANGE`), so the replaced file stays linked
/// under the temp name while its descriptor is checked once more: changed after the
/// last check (an append through a descriptor opened before the exchange) → the
/// exchange is undone and the call fails with the other version in place; unchanged →
/// it is unlinked and checked a last time through the held descriptor, and a change
/// that slipped in between is copied to a kept file named in the error. What remains:
/// a process that keeps the replaced file open and writes after that last check
/// writes into a file without a name, as with every editor's atomic save; a
/// same-size overwrite within one timestamp tick is not seen.
fn replace_existing(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    temp_name: &str,
    old: &Existing,
    new_len: u64,
) -> Result<(), Step> {
    match rustix::fs::renameat_with(dir, temp_name, dir, name, RenameFlags::EXCHANGE) {
        Ok(()) => {}
        // A file system without exchange: rename, then check the held descriptor.
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::OPNOTSUPP) => {
            rustix::fs::renameat(dir, temp_name, dir, name)?;
            return keep_if_changed(dir, name, old);
        }
        Err(e) => return Err(e.into()),
    }
    if !same_content(&old.stat, &rustix::fs::fstat(&old.file)?) {
        // Undo: the other process's version goes back under the name.
        rustix::fs::renameat_with(dir, temp_name, dir, name, RenameFlags::EXCHANGE)?;
        // Someone may have opened the name while our data held it.
        let ours = rustix::fs::statat(dir, temp_name, AtFlags::SYMLINK_NOFOLLOW)?;
        if ours.st_size as u64 != new_len {
            let kept = kept_name(name);
            rustix::fs::renameat_with(dir, temp_name, dir, kept.as_str(), RenameFlags::NOREPLACE)?;
            return Err(Step::ChangedWhileWriting {
                kept,
                written: false,
            });
        }
        return Err(Step::Changed);
    }
    test_pause::pause(test_pause::BEFORE_UNLINK_ENV);
    rustix::fs::unlinkat(dir, temp_name, AtFlags::empty())?;
    keep_if_changed(dir, name, old)
}

/// After `old` lost its name: if it changed since it was checked, copies it to a kept
/// file next to `name` and says so.
fn keep_if_changed(dir: BorrowedFd<'_>, name: &OsStr, old: &Existing) -> Result<(), Step> {
    if same_content(&old.stat, &rustix::fs::fstat(&old.file)?) {
        return Ok(());
    }
    let kept = kept_name(name);
    let fd = rustix::fs::openat(
        dir,
        kept.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(PRIVATE_MODE),
    )?;
    let mut out = File::from(fd);
    let mut from = &old.file;
    from.seek(SeekFrom::Start(0))?;
    io::copy(&mut from, &mut out)?;
    // The other version keeps the mode of the file it was (readable no wider).
    rustix::fs::fchmod(&out, Mode::from_raw_mode(old.stat.st_mode & 0o777))?;
    out.sync_all()?;
    Err(Step::ChangedWhileWriting {
        kept,
        written: true,
    })
}

/// `<name>.troupe-kept-<random>`: the other process's version of a file.
fn kept_name(name: &OsStr) -> String {
    format!(
        "{}.troupe-kept-{:08x}",
        name.to_string_lossy(),
        fastrand::u32(..)
    )
}

/// Same size and modification time (a rename changes the change time, so it is not
/// compared here).
fn same_content(then: &rustix::fs::Stat, now: &rustix::fs::Stat) -> bool {
    now.st_size == then.st_size
        && now.st_mtime == then.st_mtime
        && now.st_mtime_nsec == then.st_mtime_nsec
}

/// True when `name` still is the file that was read, unchanged since.
fn still_the_same(dir: BorrowedFd<'_>, name: &OsStr, old: &Existing) -> Result<bool, Step> {
    let now = rustix::fs::fstat(&old.file)?;
    let named = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let same_inode = named.st_dev == old.stat.st_dev && named.st_ino == old.stat.st_ino;
    let same_content = now.st_size == old.stat.st_size
        && now.st_mtime == old.stat.st_mtime
        && now.st_mtime_nsec == old.stat.st_mtime_nsec
        && now.st_ctime == old.stat.st_ctime
        && now.st_ctime_nsec == old.stat.st_ctime_nsec;
    Ok(same_inode && same_content)
}

/// Opens the file a write replaces (without following a link: the caller resolved
/// links, so a link here was swapped in) and checks it is a regular file.
fn open_existing(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    shown: &Path,
    expect: &WriteExpect,
) -> Result<Option<Existing>, FsError> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(FsError::ChangedOnDisk(shown.to_path_buf())),
        Err(e) => return Err(FsError::from_io(shown, e.into())),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| FsError::from_io(shown, e.into()))?;
    let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
    if kind == rustix::fs::FileType::Directory {
        return Err(FsError::IsDirectory(shown.to_path_buf()));
    }
    if kind != rustix::fs::FileType::RegularFile {
        return Err(FsError::NotRegularFile(shown.to_path_buf()));
    }
    if matches!(
        expect,
        WriteExpect::Unchanged(_) | WriteExpect::ReadJustNow(_)
    ) && stat.st_size as u64 > MAX_EDIT_FILE_BYTES
    {
        return Err(FsError::TooLarge {
            path: shown.to_path_buf(),
            size: stat.st_size as u64,
            limit: MAX_EDIT_FILE_BYTES,
        });
    }
    Ok(Some(Existing {
        file: File::from(fd),
        stat,
    }))
}

/// Compares the existing file with what the caller expects.
fn check_expectation(
    existing: Option<&Existing>,
    shown: &Path,
    expect: &WriteExpect,
) -> Result<(), FsError> {
    match (expect, existing) {
        (WriteExpect::Any, _) | (WriteExpect::Absent, None) => Ok(()),
        (WriteExpect::Absent, Some(_)) => Err(FsError::AlreadyExists(shown.to_path_buf())),
        (WriteExpect::Unchanged(None), None) => Ok(()),
        (WriteExpect::Unchanged(None), Some(_))
        | (WriteExpect::Unchanged(Some(_)) | WriteExpect::ReadJustNow(_), None) => {
            Err(FsError::ChangedOnDisk(shown.to_path_buf()))
        }
        (
            WriteExpect::Unchanged(Some(expected)) | WriteExpect::ReadJustNow(expected),
            Some(old),
        ) => {
            let mut bytes = Vec::with_capacity(old.stat.st_size as usize);
            (&old.file)
                .take(MAX_EDIT_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| FsError::from_io(shown, e))?;
            if content_hash(&bytes) == *expected {
                Ok(())
            } else {
                Err(FsError::ChangedOnDisk(shown.to_path_buf()))
            }
        }
    }
}

/// `.troupe-write-<pid>-<random>`.
pub(super) fn temp_name() -> String {
    format!(
        "{TEMP_PREFIX}{}-{:016x}",
        std::process::id(),
        fastrand::u64(..)
    )
}

/// Where a temp name says it came from: the pid of the writing process, if any.
pub fn temp_owner(name: &str) -> Option<u32> {
    name.strip_prefix(TEMP_PREFIX)?
        .split('-')
        .next()?
        .parse()
        .ok()
}
