//! Path arithmetic that never touches the file system.

use std::path::{Component, Path, PathBuf};

/// Normalises `.` and `..` without touching the file system.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
