//! Workspace roots and the path policy: every path a tool touches is resolved here
//! (relative to the first root, symlinks followed, missing tails resolved through their
//! existing ancestors) and refused when it lands outside every root.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

pub use super::path_correction::correct_path;
pub use crate::engine::paths::normalize_lexically;
use crate::engine::paths::{components_text, starts_with_path, strip_path_prefix};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("Path not in workspace: Attempted path \"{attempted}\" resolves outside the allowed workspace directories: {roots}{temp}")]
    OutsideWorkspace {
        attempted: String,
        roots: String,
        /// gemini-cli's ` or the project temp directory: <dir>` clause (empty without one).
        temp: String,
    },
    #[error("Invalid path: {0}")]
    Invalid(String),
    #[error("Infinite recursion detected in robustRealpath: {0}")]
    SymlinkLoop(String),
    #[error("Failed to resolve path: {0}")]
    Unresolvable(String),
}

/// The directories a session may touch, stored as real (canonical) paths. The list
/// only grows: `/directory add` appends a root during a session (through the
/// FileSystem actor, which opens its descriptor first), and every caller sees it from
/// its next call on.
#[derive(Debug)]
pub struct Workspace {
    /// The primary root (`roots[0]`, never changes).
    primary: PathBuf,
    roots: RwLock<Vec<PathBuf>>,
    /// The project's temp directory (`<troupe home>/tmp/<project id>`), readable and
    /// writable like gemini-cli's `~/.gemini/tmp/<project>`; not a workspace root.
    temp_dir: Option<PathBuf>,
}

impl Clone for Workspace {
    /// A copy with the roots as they are now (later additions are not shared).
    fn clone(&self) -> Self {
        Self {
            primary: self.primary.clone(),
            roots: RwLock::new(self.roots()),
            temp_dir: self.temp_dir.clone(),
        }
    }
}

/// Path segments that are never part of the workspace, whatever the root.
const BLOCKED_SEGMENTS: [&str; 3] = [".git", ".env", "node_modules"];
const MAX_SYMLINK_DEPTH: usize = 40;

impl Workspace {
    /// The first root is the primary one: relative paths resolve against it.
    pub fn new(primary: &Path, extra: &[PathBuf]) -> io::Result<Self> {
        let mut roots = vec![std::fs::canonicalize(primary)?];
        for dir in extra {
            let dir = if dir.is_absolute() {
                dir.clone()
            } else {
                roots[0].join(dir)
            };
            let real = std::fs::canonicalize(&dir).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("include directory {}: {e}", dir.display()),
                )
            })?;
            if !roots.contains(&real) {
                roots.push(real);
            }
        }
        Ok(Self {
            primary: roots[0].clone(),
            roots: RwLock::new(roots),
            temp_dir: None,
        })
    }

    fn read_roots(&self) -> RwLockReadGuard<'_, Vec<PathBuf>> {
        self.roots.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a root (a real, canonical directory path) unless it is already one.
    /// Returns false when it was already there. Only the FileSystem actor calls this,
    /// after it has opened the root's descriptor ([`crate::platform::filesystem`]).
    pub fn push_root(&self, real: PathBuf) -> bool {
        let mut roots = self.roots.write().unwrap_or_else(PoisonError::into_inner);
        if roots.contains(&real) {
            return false;
        }
        roots.push(real);
        true
    }

    /// Adds the project temp directory (created when missing): paths inside it are
    /// allowed, and the "Path not in workspace" error names it.
    pub fn with_temp_dir(mut self, dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        self.temp_dir = Some(std::fs::canonicalize(dir)?);
        Ok(self)
    }

    /// The project temp directory, when the session has one.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp_dir.as_deref()
    }

    pub fn primary(&self) -> &Path {
        &self.primary
    }

    /// The roots as they are now (the primary first, then include directories and
    /// directories added during the session).
    pub fn roots(&self) -> Vec<PathBuf> {
        self.read_roots().clone()
    }

    /// Joins a model-supplied path onto the primary root and normalises `.` and `..`
    /// lexically, as Node's `path.resolve` does. Touches no file.
    pub fn resolve(&self, raw: &str) -> PathBuf {
        let cleaned = raw.replace('\0', "");
        let cleaned = cleaned.strip_prefix("file://").unwrap_or(&cleaned);
        let joined = self.primary().join(cleaned);
        normalize_lexically(joined)
    }

    /// Resolves symlinks and checks the result lies inside a root and outside the
    /// blocked segments. Returns the real path.
    pub fn check(&self, path: &Path) -> Result<PathBuf, PathError> {
        validate_path_text(&path.to_string_lossy())?;
        let real = real_path(path)?;
        self.check_real(path, real)
    }

    /// Checks an already-resolved real path (e.g. the path of an open file descriptor);
    /// `attempted` is what the caller asked for, for the message.
    pub fn check_real(&self, attempted: &Path, real: PathBuf) -> Result<PathBuf, PathError> {
        let roots = self.read_roots();
        for root in roots.iter().chain(self.temp_dir.as_ref()) {
            if let Some(rel) = strip_path_prefix(&real, root) {
                if rel.components().any(|c| is_blocked(c.as_os_str())) {
                    break;
                }
                return Ok(real);
            }
        }
        Err(self.outside_error(attempted))
    }

    /// Is `path` (absolute, or relative to the primary root) inside a root but
    /// through a blocked segment (`.git`, `.env`, `node_modules`, `gha-creds-*.json`),
    /// by its text or by its real path? Such a path is a secret the workspace holds,
    /// not one outside it.
    pub fn is_sensitive(&self, path: &Path) -> bool {
        let abs = normalize_lexically(self.primary.join(path));
        let real = real_path(&abs).ok();
        let roots = self.read_roots();
        let blocked = |p: &Path| {
            roots.iter().any(|root| {
                strip_path_prefix(p, root)
                    .is_some_and(|rel| rel.components().any(|c| is_blocked(c.as_os_str())))
            })
        };
        blocked(&abs) || real.as_deref().is_some_and(blocked)
    }

    /// gemini-cli's "Path not in workspace" error for `attempted`.
    pub fn outside_error(&self, attempted: &Path) -> PathError {
        PathError::OutsideWorkspace {
            attempted: attempted.display().to_string(),
            roots: self.roots_text(),
            temp: self
                .temp_dir
                .as_ref()
                .map(|t| format!(" or the project temp directory: {}", t.display()))
                .unwrap_or_default(),
        }
    }

    /// The root a real path lies under (the deepest, when roots nest).
    pub fn root_of(&self, real: &Path) -> Option<PathBuf> {
        let roots = self.read_roots();
        deepest_root(&roots, real).map(|i| roots[i].clone())
    }

    /// Like [`Workspace::resolve`], after gemini-cli's defensive clean-up of stray NULs
    /// and `@` prefixes (which looks at the file system).
    pub fn resolve_defensive(&self, raw: &str) -> PathBuf {
        self.resolve(&super::path_correction::defensive_path(raw, self.primary()))
    }

    /// True when the real path is inside a root (no error detail).
    pub fn contains(&self, path: &Path) -> bool {
        self.check(path).is_ok()
    }

    pub fn roots_text(&self) -> String {
        self.read_roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The path relative to the primary root with `/` separators, or the absolute path
    /// when it lies elsewhere.
    pub fn display_relative(&self, path: &Path) -> String {
        for root in self.read_roots().iter() {
            if let Some(rel) = strip_path_prefix(path, root) {
                let text = components_text(rel);
                return if text.is_empty() { ".".into() } else { text };
            }
        }
        path.display().to_string()
    }
}

/// `<troupe home>/tmp/<project id>`: the project temp directory of the workspace whose
/// primary root is `primary` (the id is the SHA-256 of that path, as gemini-cli's
/// `~/.gemini/tmp/<hash>`).
pub fn project_temp_dir(troupe_home: &Path, primary: &Path) -> PathBuf {
    troupe_home.join("tmp").join(project_id(primary))
}

/// A stable identifier of a project (hex SHA-256 of its primary root).
pub fn project_id(primary: &Path) -> String {
    crate::engine::hash::sha256_hex(primary.to_string_lossy().as_bytes())
}

/// Is a path segment one of the blocked names? Its part before any `:` (an alternate
/// data stream's name), without trailing spaces and dots, compared ignoring ASCII case:
/// by bytes, so that the check every open makes copies nothing.
fn is_blocked(segment: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let bytes = segment.as_bytes();
    let head = bytes.split(|&b| b == b':').next().unwrap_or_default();
    let kept = head
        .iter()
        .rposition(|&b| b != b' ' && b != b'.')
        .map_or(0, |last| last + 1);
    let head = &head[..kept];
    let (prefix, suffix) = (b"gha-creds-", b".json");
    BLOCKED_SEGMENTS
        .iter()
        .any(|name| head.eq_ignore_ascii_case(name.as_bytes()))
        || (head.len() >= prefix.len() + suffix.len()
            && head[..prefix.len()].eq_ignore_ascii_case(prefix)
            && head[head.len() - suffix.len()..].eq_ignore_ascii_case(suffix))
}

/// The index of the deepest of `roots` that `path` (absolute, normalised) lies under
/// by its text (roots may nest).
pub fn deepest_root(roots: &[PathBuf], path: &Path) -> Option<usize> {
    roots
        .iter()
        .enumerate()
        .filter(|(_, root)| starts_with_path(path, root))
        .max_by_key(|(_, root)| root.components().count())
        .map(|(i, _)| i)
}

/// gemini-cli's `validatePath` checks on the text of a path.
pub fn validate_path_text(path: &str) -> Result<(), PathError> {
    let invalid = |m: &str| Err(PathError::Invalid(m.to_string()));
    if path.is_empty() {
        return invalid("Path must be a non-empty string.");
    }
    if path.contains(['\n', '\r', '\0', '\t']) {
        return invalid("Path contains invalid characters (newlines or control characters).");
    }
    if path.len() > 4096 {
        return invalid("Path is too long (maximum 4096 characters).");
    }
    // The segments between separators: std's components are these less the empty and
    // `.` ones, which are never too long.
    for text in path.split('/') {
        if text.len() > 255 {
            let head: String = text.chars().take(20).collect();
            return Err(PathError::Invalid(format!(
                "Path component \"{head}...\" is too long (maximum 255 characters)."
            )));
        }
    }
    Ok(())
}

/// `realpath` that also works for paths that do not exist yet: a dangling symlink is
/// followed to its target, and a missing tail is resolved through its parent.
pub fn real_path(path: &Path) -> Result<PathBuf, PathError> {
    real_path_depth(path, 0)
}

fn real_path_depth(path: &Path, depth: usize) -> Result<PathBuf, PathError> {
    if depth > MAX_SYMLINK_DEPTH {
        return Err(PathError::SymlinkLoop(path.display().to_string()));
    }
    match std::fs::canonicalize(path) {
        Ok(real) => Ok(real),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            Err(PathError::SymlinkLoop(path.display().to_string()))
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                if meta.file_type().is_symlink() {
                    let target = std::fs::read_link(path)
                        .map_err(|e| PathError::Unresolvable(e.to_string()))?;
                    let parent = path.parent().unwrap_or(Path::new("/"));
                    let next = normalize_lexically(parent.join(target));
                    return real_path_depth(&next, depth + 1);
                }
            }
            match (path.parent(), path.file_name()) {
                (Some(parent), Some(name)) if parent != path => {
                    Ok(real_path_depth(parent, depth + 1)?.join(name))
                }
                _ => Ok(path.to_path_buf()),
            }
        }
        Err(e) => Err(PathError::Unresolvable(format!("{}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_parent_escape_and_symlinks_out() {
        let outer = tempfile::tempdir().unwrap();
        let ws_dir = outer.path().join("ws");
        std::fs::create_dir(&ws_dir).unwrap();
        std::fs::write(outer.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret"), ws_dir.join("link")).unwrap();
        let ws = Workspace::new(&ws_dir, &[]).unwrap();
        assert!(matches!(
            ws.check(&ws.resolve("../secret")),
            Err(PathError::OutsideWorkspace { .. })
        ));
        assert!(matches!(
            ws.check(&ws.resolve("link")),
            Err(PathError::OutsideWorkspace { .. })
        ));
        assert!(ws.check(&ws.resolve("new/dir/file.txt")).is_ok());
        assert!(ws.check(&ws.resolve(".git/config")).is_err());
    }

    #[test]
    fn second_root_is_part_of_the_workspace() {
        let outer = tempfile::tempdir().unwrap();
        let first = outer.path().join("one");
        let second = outer.path().join("two");
        std::fs::create_dir_all(&first).unwrap();
        std::fs::create_dir_all(second.join("sub")).unwrap();
        std::fs::write(second.join("sub/f.txt"), "x").unwrap();
        std::fs::write(outer.path().join("elsewhere.txt"), "x").unwrap();
        let ws = Workspace::new(&first, std::slice::from_ref(&second)).unwrap();
        let second = second.canonicalize().unwrap();
        let file = ws.check(&second.join("sub/f.txt")).unwrap();
        assert_eq!(ws.root_of(&file), Some(second.clone()));
        assert_eq!(ws.display_relative(&file), "sub/f.txt");
        assert!(ws.check(&ws.resolve("../elsewhere.txt")).is_err());
        assert!(ws.check(&ws.resolve("../two/sub/f.txt")).is_ok());
        assert!(ws.check(&second.join("node_modules/x.js")).is_err());
    }

    /// The text-based check the byte-wise `is_blocked` replaced.
    fn blocked_by_text(segment: &std::ffi::OsStr) -> bool {
        let text = segment.to_string_lossy();
        let head = text.split(':').next().unwrap_or("");
        let head = head.trim_end_matches([' ', '.']).to_ascii_lowercase();
        BLOCKED_SEGMENTS.contains(&head.as_str())
            || (head.starts_with("gha-creds-") && head.ends_with(".json"))
    }

    proptest::proptest! {
        /// Blocked or not, the byte-wise check answers as the text one did: names built
        /// from the blocked ones, their case, stream suffixes, trailing dots and spaces
        /// and bytes that are not UTF-8.
        #[test]
        fn blocked_segments_are_found_by_bytes_as_by_text(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    &b".git"[..], b".GIT", b".env", b".Env", b"node_modules", b"NODE_MODULES",
                    b"gha-creds-", b"GHA-CREDS-", b".json", b".JSON", b"x", b":", b":s", b".",
                    b" ", b"\xff", b"\xc3\xa9", b"-",
                ]),
                0..5,
            )
        ) {
            use std::os::unix::ffi::OsStrExt;
            let bytes = pieces.concat();
            let segment = std::ffi::OsStr::from_bytes(&bytes);
            proptest::prop_assert_eq!(is_blocked(segment), blocked_by_text(segment));
        }

        /// Any component of more than 255 bytes is refused, whatever the separators.
        #[test]
        fn long_components_are_refused_wherever_they_are(
            lengths in proptest::collection::vec(0usize..300, 1..4),
            leading in proptest::bool::ANY,
            trailing in proptest::bool::ANY,
        ) {
            let mut text = if leading { "/".to_string() } else { String::new() };
            text.push_str(&lengths.iter().map(|n| "a".repeat(*n)).collect::<Vec<_>>().join("/"));
            if trailing {
                text.push('/');
            }
            let too_long = Path::new(&text)
                .components()
                .any(|c| c.as_os_str().len() > 255);
            let refused = matches!(
                validate_path_text(&text),
                Err(PathError::Invalid(m)) if m.contains("is too long (maximum 255")
            );
            proptest::prop_assert_eq!(refused, too_long && text.len() <= 4096);
        }
    }

    #[test]
    fn symlink_loop_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(dir.path().join("b"), dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("b")).unwrap();
        let ws = Workspace::new(dir.path(), &[]).unwrap();
        assert!(matches!(
            ws.check(&ws.resolve("a")),
            Err(PathError::SymlinkLoop(_))
        ));
    }
}
