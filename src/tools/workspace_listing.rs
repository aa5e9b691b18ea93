//! The workspace's files as a short list for the first prompt
//! (`model.workspace_listing`): a small model that sees the real paths does not guess
//! `src/app.py` for `shop/app.py`. The walk prunes what the tools prune, leaves out
//! ignored files, and stops once it has found one file more than it may list.

use crate::platform::filesystem::{Confined, FsWork};
use crate::platform::ignore_rules::{pruned_walk, FilterOptions, IgnoreRules};

/// The workspace listing of up to `.0` files ([`listing`]), on the FileSystem pool.
pub struct WorkspaceListing(pub usize);

impl FsWork for WorkspaceListing {
    type Output = Option<String>;
    fn perform(self, ws: &Confined) -> Option<String> {
        listing(ws, self.0)
    }
}

/// What the workspace's files hold, to tell whether a turn changed any
/// (`model.check_outcome`): for each file the walk of [`listing`] finds (at most `.0`),
/// its path, size and a hash of its bytes (of its modification time when larger than
/// [`HASHED_MAX_BYTES`]), sorted by path. A file written with the text it had is
/// unchanged.
pub struct WorkspaceFingerprint(pub usize);

/// Files up to this size are compared by their bytes; larger ones by their time.
pub const HASHED_MAX_BYTES: u64 = 256 << 10;

impl FsWork for WorkspaceFingerprint {
    type Output = Vec<(String, u64, u64)>;
    fn perform(self, ws: &Confined) -> Self::Output {
        use std::hash::{Hash, Hasher};
        let mut rules = IgnoreRules::new(FilterOptions {
            respect_git_ignore: true,
            respect_gemini_ignore: true,
        });
        let mut files = Vec::new();
        'roots: for root in ws.roots().to_vec() {
            for entry in pruned_walk(&root).flatten() {
                if !entry.file_type().is_some_and(|t| t.is_file())
                    || rules.is_ignored(&root, entry.path(), false)
                {
                    continue;
                }
                if files.len() == self.0 {
                    break 'roots;
                }
                let Ok(meta) = entry.metadata() else { continue };
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                match meta.len() <= HASHED_MAX_BYTES {
                    true => std::fs::read(entry.path()).ok().hash(&mut hasher),
                    false => meta.modified().ok().hash(&mut hasher),
                }
                let path = entry.path().to_string_lossy().into_owned();
                files.push((path, meta.len(), hasher.finish()));
            }
        }
        files.sort();
        files
    }
}

/// Up to `max` of the workspace's files, relative to their root and sorted, as a text
/// for the model; `None` when there are none.
pub fn listing(ws: &Confined, max: usize) -> Option<String> {
    let mut rules = IgnoreRules::new(FilterOptions {
        respect_git_ignore: true,
        respect_gemini_ignore: true,
    });
    let roots = ws.roots().to_vec();
    let mut files: Vec<String> = Vec::new();
    let mut more = false;
    'roots: for root in &roots {
        for entry in pruned_walk(root).flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if rules.is_ignored(root, entry.path(), false) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(root) else {
                continue;
            };
            if files.len() == max {
                more = true;
                break 'roots;
            }
            let rel = super::file_walk::rel_text(rel);
            files.push(match roots.len() {
                1 => rel,
                _ => format!("{}/{rel}", root.display()),
            });
        }
    }
    if files.is_empty() {
        return None;
    }
    files.sort();
    let head = if more {
        format!("Some of the workspace's files (the first {max} found; use list_directory or glob for the rest):")
    } else {
        "The workspace's files:".to_string()
    };
    Some(format!("{head}\n{}", files.join("\n")))
}
