//! The atomic replace of a file Troupe owns outside any workspace (a session's
//! records, a settings file, the hooks migration's output): the bytes go to a private
//! temp file in the file's own directory (mode `0600` less the umask, named as every
//! Troupe temp file, [`super::atomic_write::TEMP_PREFIX`]), which is fsynced and
//! renamed over the name; then the directory is fsynced. The file ends with the temp
//! file's private mode, and a link at the name is replaced, not followed, as
//! `tempfile`'s `persist` did. Workspace files go through
//! [`super::atomic_write`] instead (mode and owner kept, changes on disk detected).

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};

/// The mode of the temp file, and so of the file it becomes.
const PRIVATE_MODE: u32 = 0o600;

/// Which step of [`replace_private`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    /// The directory could not be opened or the temp file made in it.
    #[error("{0}")]
    Create(io::Error),
    /// The bytes could not be written to the temp file or flushed to disk.
    #[error("{0}")]
    Write(io::Error),
    /// The temp file could not be renamed over the name.
    #[error("{0}")]
    Rename(io::Error),
}

impl ReplaceError {
    /// The error of the step that failed.
    pub fn into_io(self) -> io::Error {
        match self {
            ReplaceError::Create(e) | ReplaceError::Write(e) | ReplaceError::Rename(e) => e,
        }
    }
}

/// Replaces `path` with `bytes` atomically (see the module documentation); its
/// directory must exist. A temp file that fails is removed.
pub fn replace_private(path: &Path, bytes: &[u8]) -> Result<(), ReplaceError> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| ReplaceError::Rename(io::Error::from(io::ErrorKind::InvalidInput)))?;
    let dir = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| ReplaceError::Create(e.into()))?;
    let temp = super::atomic_write::temp_name();
    let fd = rustix::fs::openat(
        &dir,
        temp.as_str(),
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(PRIVATE_MODE),
    )
    .map_err(|e| ReplaceError::Create(e.into()))?;
    let mut file = File::from(fd);
    let done = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(ReplaceError::Write)
        .and_then(|()| {
            rustix::fs::renameat(&dir, temp.as_str(), &dir, name)
                .map_err(|e| ReplaceError::Rename(e.into()))
        });
    if done.is_err() {
        let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
        return done;
    }
    // The rename is durable once the directory is (best effort, as a rename is done).
    let _ = rustix::fs::fsync(&dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The file is replaced whole with the private mode, a link at the name is replaced
    /// (its target untouched), and no temp file is left behind.
    #[test]
    fn replaces_privately_and_replaces_links() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "old and longer").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        replace_private(&path, b"new").expect("replace");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        let target = dir.path().join("target");
        std::fs::write(&target, "kept").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        replace_private(&link, b"through").expect("replace the link");
        assert!(!std::fs::symlink_metadata(&link).expect("meta").is_symlink());
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "kept");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with(".troupe-write-")),
            "{names:?}"
        );
    }

    #[test]
    fn a_missing_directory_is_a_create_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = replace_private(&dir.path().join("gone/file"), b"x").unwrap_err();
        assert!(matches!(err, ReplaceError::Create(_)), "{err:?}");
    }
}
