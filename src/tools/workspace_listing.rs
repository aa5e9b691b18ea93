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
