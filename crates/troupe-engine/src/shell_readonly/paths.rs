//! Where a path operand of a read-only command may lead: `~`, relative and glob
//! operands made absolute and checked against the workspace roots ([`PathScope`]).

use std::path::{Path, PathBuf};

use super::PathScope;
use crate::paths::normalize_lexically;

/// Whether a word holds a glob character bash expands (`*`, `?`, `[`).
fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Asks unless everything `path` (an operand of a read-only command run in `cwd`) can
/// name lies inside the roots: brace expansion and `~user` ask; a glob asks when a
/// `..` follows it or a glob component starts with `.` or `[` (it may match `.` or
/// `..`), and otherwise every match is checked by the caller ([`PathScope::glob_inside`]).
pub(super) fn check_path_operand(path: &str, cwd: &Path, scope: &PathScope) -> Result<(), String> {
    let unknown = || format!("cannot tell where `{path}` is");
    if path.contains(['{', '}']) {
        return Err(format!("{} (brace expansion)", unknown()));
    }
    let written = absolute(path, cwd, &scope.home).ok_or_else(unknown)?;
    let resolved = normalize_lexically(&written);
    let outside = || {
        Err(format!(
            "reads outside the workspace ({})",
            resolved.display()
        ))
    };
    if !has_glob(path) {
        if (scope.inside)(&resolved) && (scope.inside)(&written) {
            return Ok(());
        }
        return outside();
    }
    let mut globbed = false;
    for component in written.components() {
        let text = component.as_os_str().to_string_lossy();
        if globbed && text == ".." {
            return Err(format!("{} (`..` after a glob pattern)", unknown()));
        }
        if has_glob(&text) {
            if text.starts_with(['.', '[']) {
                return Err(format!("{} (the glob may match `.` or `..`)", unknown()));
            }
            globbed = true;
        }
    }
    let prefix = glob_free_prefix(&written);
    if !(scope.inside)(&normalize_lexically(&prefix)) || !(scope.inside)(&prefix) {
        return outside();
    }
    if !(scope.glob_inside)(&written) {
        return Err(format!(
            "`{path}` may match a path outside the workspace ({})",
            resolved.display()
        ));
    }
    Ok(())
}

/// `~`, relative and absolute paths made absolute (not normalised); `None` for `~user`.
fn absolute(path: &str, cwd: &Path, home: &Path) -> Option<PathBuf> {
    if path == "~" {
        Some(home.to_path_buf())
    } else if let Some(rest) = path.strip_prefix("~/") {
        Some(home.join(rest))
    } else if path.starts_with('~') {
        None
    } else {
        Some(cwd.join(path))
    }
}

/// `~`, relative and absolute paths made absolute and normalised; `None` for `~user`.
pub(super) fn resolve(path: &str, cwd: &Path, home: &Path) -> Option<PathBuf> {
    absolute(path, cwd, home).map(normalize_lexically)
}

/// Where a recursive search of `path` starts: the path made absolute and normalised,
/// cut before its first glob component (the walk of that directory covers every
/// match); `None` for `~user`.
pub(super) fn tree_root(path: &str, cwd: &Path, home: &Path) -> Option<PathBuf> {
    absolute(path, cwd, home).map(|p| normalize_lexically(glob_free_prefix(&p)))
}

/// The directory part of a path before its first glob character.
fn glob_free_prefix(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        let text = component.as_os_str().to_string_lossy();
        if has_glob(&text) {
            break;
        }
        out.push(component.as_os_str());
    }
    out
}
