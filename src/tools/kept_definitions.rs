//! The rename guard of `replace` and `write_file` (`edit.keep_used_definitions`): an
//! edit that removes the definition of a function, class or type whose name is still
//! used, in the edited file or in another file of the workspace, is refused. A small
//! model asked to document `format_price` renamed it, and every caller broke.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::Services;
use crate::engine::definitions::{removed_definitions, uses_word};
use crate::engine::syntax_check::Grammar;
use crate::platform::filesystem::{Confined, FsWork, OpenMode};
use crate::platform::ignore_rules::{pruned_walk, FilterOptions, IgnoreRules};
use crate::protocol::{ToolErrorKind, ToolOutput};

/// At most this many files are searched for uses of a removed name.
const MAX_SEARCHED_FILES: usize = 5_000;
/// Larger files are not searched.
const MAX_SEARCHED_BYTES: u64 = 1024 * 1024;
/// Files named in the refusal.
const NAMED_FILES: usize = 3;

/// An error output, of `kind`, when writing `after` over `before` removes a definition
/// whose name is still used; `tool` names the call to make again.
pub async fn refuse_removed_definition(
    services: &Services,
    path: &Path,
    before: Option<&str>,
    after: &str,
    (tool, kind): (&str, ToolErrorKind),
) -> Result<(), ToolOutput> {
    let Some(before) = before else {
        return Ok(());
    };
    if !services.settings.edit.keep_used_definitions || Grammar::for_path(path).is_none() {
        return Ok(());
    }
    let still_used = StillUsed {
        path: path.to_path_buf(),
        before: before.to_string(),
        after: after.to_string(),
    };
    let found = services.fs.perform(still_used).await;
    let Ok(Some((name, users))) = found else {
        return Ok(());
    };
    let rel = services.workspace.display_relative(path);
    let mut used_in: Vec<String> = users
        .iter()
        .take(NAMED_FILES)
        .map(|p| services.workspace.display_relative(p))
        .collect();
    if users.len() > NAMED_FILES {
        used_in.push(format!("{} more", users.len() - NAMED_FILES));
    }
    let raw = format!(
        "The edit would remove the definition of `{name}` from {rel}, but `{name}` is still used in {}; the file was not changed. Keep the name `{name}` (change only what the task asks), and call {tool} again.",
        used_in.join(", ")
    );
    let display = format!("Refused: the edit would remove `{name}`, which is still used.");
    Err(ToolOutput::error(kind, raw, display))
}

/// Which definition an edit of `path` from `before` to `after` removes that is still
/// used, and where; looked up on the FileSystem pool beneath the workspace roots.
struct StillUsed {
    path: PathBuf,
    before: String,
    after: String,
}

impl FsWork for StillUsed {
    type Output = Option<(String, Vec<PathBuf>)>;
    fn perform(self, ws: &Confined) -> Self::Output {
        let removed = removed_definitions(&self.path, &self.before, &self.after);
        if removed.is_empty() {
            return None;
        }
        let in_file: Vec<String> = removed
            .iter()
            .filter(|n| uses_word(&self.after, n))
            .cloned()
            .collect();
        let (name, users) = match in_file.first() {
            Some(name) => (name.clone(), vec![self.path.clone()]),
            None => used_elsewhere(ws, &self.path, &removed)?,
        };
        Some((name, users))
    }
}

/// The first of `names` that another file of the workspace uses, with the files that
/// use it; `None` when none does.
fn used_elsewhere(
    ws: &Confined,
    edited: &Path,
    names: &[String],
) -> Option<(String, Vec<PathBuf>)> {
    let mut rules = IgnoreRules::new(FilterOptions {
        respect_git_ignore: true,
        respect_gemini_ignore: true,
    });
    let mut users: Vec<(usize, PathBuf)> = Vec::new();
    let mut searched = 0;
    'roots: for root in ws.roots().to_vec() {
        for entry in pruned_walk(&root).flatten() {
            let path = entry.path();
            let is_file = entry.file_type().is_some_and(|t| t.is_file());
            if !is_file || path == edited || Grammar::for_path(path).is_none() {
                continue;
            }
            if rules.is_ignored(&root, path, false) {
                continue;
            }
            searched += 1;
            if searched > MAX_SEARCHED_FILES {
                break 'roots;
            }
            let Some(text) = read_small(ws, path) else {
                continue;
            };
            if let Some(i) = names.iter().position(|n| uses_word(&text, n)) {
                users.push((i, path.to_path_buf()));
            }
        }
    }
    let first = users.iter().map(|(i, _)| *i).min()?;
    let files = users
        .into_iter()
        .filter(|(i, _)| *i == first)
        .map(|(_, p)| p)
        .collect();
    Some((names[first].clone(), files))
}

fn read_small(ws: &Confined, path: &Path) -> Option<String> {
    let opened = ws.open(path, OpenMode::Read).ok()?;
    let mut text = String::new();
    opened
        .file
        .take(MAX_SEARCHED_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}
