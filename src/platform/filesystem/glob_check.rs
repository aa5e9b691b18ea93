//! The shell tool's file-system checks of a read-only command line, on the FileSystem
//! pool: whether every path an absolute glob pattern may expand to lies inside the
//! workspace and has no secret name, and whether the trees a recursive search walks
//! hold no file with a secret name. Expanded level by level by directory listing (by
//! name: a pattern may name directories outside the workspace, whose matches make the
//! answer "no"), never on the Scheduler's thread.

use std::path::{Path, PathBuf};

use crate::engine::secret_names::is_secret_file_name;

use super::{FsClient, FsError};

/// The checks of one command line left for the pool: absolute glob patterns, and the
/// absolute roots of its recursive searches.
#[derive(Debug, Clone, Default)]
pub struct GlobSpec {
    pub patterns: Vec<PathBuf>,
    pub trees: Vec<PathBuf>,
}

impl GlobSpec {
    /// Whether there is nothing to check.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.trees.is_empty()
    }
}

impl FsClient {
    /// Whether every match of every pattern of `spec` is inside the workspace
    /// ([`glob_matches_inside`] with the workspace's own check) and every tree is
    /// clean ([`tree_clean`]), on the pool.
    pub async fn glob(&self, spec: GlobSpec) -> Result<bool, FsError> {
        self.run(move |confined| {
            let inside = |path: &Path| confined.check(path).is_ok();
            spec.patterns
                .iter()
                .all(|pattern| glob_matches_inside(pattern, &inside))
                && spec.trees.iter().all(|root| tree_clean(root))
        })
        .await
    }
}

/// Directory entries a tree check looks at before it gives up (and asks).
const MAX_TREE_ENTRIES: usize = 50_000;

/// Whether a recursive search from `root` (as `grep -r` walks: a symbolic link given
/// is followed, one met on the way is not) reaches no file or directory with a secret
/// name ([`is_secret_file_name`]); more than [`MAX_TREE_ENTRIES`] entries is not
/// known to be clean. A root that is not a directory is clean (its own name is the
/// classifier's to check).
pub fn tree_clean(root: &Path) -> bool {
    if !std::fs::metadata(root).is_ok_and(|m| m.is_dir()) {
        return true;
    }
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        // Unreadable: the search cannot read it either.
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_TREE_ENTRIES || is_secret_file_name(&entry.file_name().to_string_lossy())
            {
                return false;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    true
}

/// Directory entries a glob check looks at before it gives up and asks.
const MAX_GLOB_ENTRIES: usize = 20_000;

/// Whether every existing path the absolute glob `pattern` may expand to is `inside`
/// (which follows symlinks) and has no secret name (`id_*` may match `id_rsa`). Expanded level by level as bash does with `dotglob` off
/// (its default in `bash -c`): a glob component matches the names of its directory,
/// dot-names excepted, with `globset`'s `*`, `?` and `[…]` (`*` never crosses `/`);
/// more than [`MAX_GLOB_ENTRIES`] entries, or a pattern that does not compile, is
/// not known to stay inside.
pub fn glob_matches_inside(pattern: &Path, inside: &dyn Fn(&Path) -> bool) -> bool {
    let mut level = vec![std::path::PathBuf::new()];
    let mut seen = 0;
    for component in pattern.components() {
        let text = component.as_os_str().to_string_lossy();
        let matcher = if text.contains(['*', '?', '[']) {
            match globset::GlobBuilder::new(&text)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
            {
                Ok(glob) => Some(glob.compile_matcher()),
                Err(_) => return false,
            }
        } else {
            None
        };
        let mut next = Vec::new();
        for dir in &level {
            let Some(matcher) = &matcher else {
                next.push(dir.join(component));
                continue;
            };
            // Not a directory (or gone): bash finds no match there.
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_GLOB_ENTRIES {
                    return false;
                }
                let name = entry.file_name();
                let text = name.to_string_lossy();
                if !text.starts_with('.') && matcher.is_match(&name) {
                    let found = dir.join(&name);
                    if !inside(&found) || is_secret_file_name(&text) {
                        return false;
                    }
                    next.push(found);
                }
            }
        }
        level = next;
    }
    true
}
