//! The shell tool's glob check on the FileSystem pool: whether every path an absolute
//! glob pattern of a command line may expand to lies inside the workspace. Expanded
//! level by level by directory listing (by name: a pattern may name directories
//! outside the workspace, whose matches make the answer "no"), never on the
//! Scheduler's thread.

use std::path::{Path, PathBuf};

use super::{FsClient, FsError};

/// The glob patterns of one command line, absolute.
#[derive(Debug, Clone)]
pub struct GlobSpec {
    pub patterns: Vec<PathBuf>,
}

impl FsClient {
    /// Whether every match of every pattern of `spec` is inside the workspace
    /// ([`glob_matches_inside`] with the workspace's own check), on the pool.
    pub async fn glob(&self, spec: GlobSpec) -> Result<bool, FsError> {
        self.run(move |confined| {
            let inside = |path: &Path| confined.check(path).is_ok();
            spec.patterns
                .iter()
                .all(|pattern| glob_matches_inside(pattern, &inside))
        })
        .await
    }
}

/// Directory entries a glob check looks at before it gives up and asks.
const MAX_GLOB_ENTRIES: usize = 20_000;

/// Whether every existing path the absolute glob `pattern` may expand to is `inside`
/// (which follows symlinks). Expanded level by level as bash does with `dotglob` off
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
                if !name.to_string_lossy().starts_with('.') && matcher.is_match(&name) {
                    let found = dir.join(&name);
                    if !inside(&found) {
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
