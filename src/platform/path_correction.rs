//! Lenient path handling for model-supplied paths: gemini-cli's
//! `resolveDefensiveToolPath` (stray NULs and `@` prefixes) and `correctPath`, which
//! turns a relative path that does not exist into the one file of the workspace that
//! ends with it, found by a bounded breadth-first search.
//!
//! The search does no I/O itself: it asks a [`DirectoryLister`], which the FileSystem
//! actor implements with descriptors opened beneath the workspace roots
//! (`actors::filesystem::path_lookup`).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::ignore_rules::{FilterOptions, IgnoreRules};
use super::workspace::{normalize_lexically, Workspace};

/// How many directories the search for a file may visit per workspace root.
pub const MAX_SEARCH_DIRS: usize = 50;

/// Directories the search never enters.
const SKIPPED_DIRS: [&str; 2] = [".git", "node_modules"];

/// One entry of a listed directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedEntry {
    pub name: OsString,
    /// A directory itself, not a link to one (links are not followed).
    pub is_dir: bool,
}

/// What the path search needs from the file system. Implemented by the FileSystem
/// actor (confined opens); tests may implement it over a plain directory.
pub trait DirectoryLister {
    /// Whether `path` (absolute) exists and may be opened.
    fn exists(&mut self, path: &Path) -> bool;
    /// The entries of the directory `dir` (absolute), or `None` when it cannot be
    /// listed.
    fn entries(&mut self, dir: &Path) -> Option<Vec<ListedEntry>>;
}

/// Strips NULs; `@/x` and `@\x` become `x`, and `@seg/…` loses its `@` unless a
/// literal `@seg` exists under `base` (`exists` answers). A path that exists as
/// written is kept.
pub fn defensive_path_with(
    raw: &str,
    base: &Path,
    exists: &mut dyn FnMut(&Path) -> bool,
) -> String {
    let cleaned = raw.replace('\0', "");
    // Only an `@` prefix can change the path; anything else is kept without a stat.
    let Some(rest) = cleaned.strip_prefix('@') else {
        return cleaned;
    };
    if exists(&base.join(&cleaned)) {
        return cleaned;
    }
    if let Some(after) = rest.strip_prefix('/').or_else(|| rest.strip_prefix('\\')) {
        return after.to_string();
    }
    let first = rest.split(['/', '\\']).next().unwrap_or("");
    if !first.is_empty() && exists(&base.join(format!("@{first}"))) {
        return cleaned;
    }
    rest.to_string()
}

/// [`defensive_path_with`], asking the file system by name (used by
/// `Workspace::resolve_defensive`, whose result is then opened confined).
pub fn defensive_path(raw: &str, base: &Path) -> String {
    defensive_path_with(raw, base, &mut |p: &Path| p.exists())
}

/// Why a relative path could not be corrected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathCorrectionError {
    /// No file matches; callers fall back to the plain resolution.
    #[error("{0}")]
    NotFound(String),
    /// Several files match; the message lists them.
    #[error("{0}")]
    Ambiguous(String),
}

/// The file a relative `raw` path most likely means: the path under the primary root
/// if it exists, else the single file of any root whose path ends with `raw`.
pub fn correct_path(
    ws: &Workspace,
    raw: &str,
    fs: &mut dyn DirectoryLister,
) -> Result<PathBuf, PathCorrectionError> {
    let cleaned = defensive_path_with(raw, ws.primary(), &mut |p: &Path| fs.exists(p));
    let direct = normalize_lexically(ws.primary().join(&cleaned));
    if fs.exists(&direct) {
        return Ok(direct);
    }
    let not_found = || {
        PathCorrectionError::NotFound(format!(
            "File not found for '{raw}' and path is not absolute."
        ))
    };
    let Some(name) = Path::new(&cleaned).file_name().map(|n| n.to_os_string()) else {
        return Err(not_found());
    };
    let suffix = cleaned.replace('\\', "/");
    let mut matches: Vec<PathBuf> = Vec::new();
    for root in &ws.roots() {
        for found in bfs_find(fs, root, &name, MAX_SEARCH_DIRS) {
            if found
                .to_string_lossy()
                .replace('\\', "/")
                .ends_with(&suffix)
                && !matches.contains(&found)
            {
                matches.push(found);
            }
        }
    }
    match matches.len() {
        0 => Err(not_found()),
        1 => Ok(matches.remove(0)),
        _ => {
            let list: Vec<String> = matches.iter().map(|m| m.display().to_string()).collect();
            Err(PathCorrectionError::Ambiguous(format!(
                "The file path '{raw}' is ambiguous and matches multiple files. Please provide a more specific path. Matches: {}",
                list.join(", ")
            )))
        }
    }
}

/// Files named `name` under `root`, visiting at most `max_dirs` directories in
/// breadth-first order and skipping ignored ones.
pub fn bfs_find(
    fs: &mut dyn DirectoryLister,
    root: &Path,
    name: &OsStr,
    max_dirs: usize,
) -> Vec<PathBuf> {
    let mut rules = IgnoreRules::new(FilterOptions::default());
    let mut queue = VecDeque::from([root.to_path_buf()]);
    let mut visited = 0usize;
    let mut found = Vec::new();
    while let Some(dir) = queue.pop_front() {
        if visited >= max_dirs {
            break;
        }
        visited += 1;
        let Some(mut entries) = fs.entries(&dir) else {
            continue;
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in entries {
            let path = dir.join(&entry.name);
            if entry.is_dir {
                let skip = entry
                    .name
                    .to_str()
                    .is_some_and(|n| SKIPPED_DIRS.contains(&n));
                if !skip && !rules.is_ignored(root, &path, true) {
                    queue.push_back(path);
                }
            } else if entry.name == name && !rules.is_ignored(root, &path, false) {
                found.push(path);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lists by name with `std::fs` (links not followed), as the confined lister does
    /// beneath a root.
    struct Plain;

    impl DirectoryLister for Plain {
        fn exists(&mut self, path: &Path) -> bool {
            path.exists()
        }
        fn entries(&mut self, dir: &Path) -> Option<Vec<ListedEntry>> {
            let entries = std::fs::read_dir(dir).ok()?;
            Some(
                entries
                    .flatten()
                    .map(|e| ListedEntry {
                        name: e.file_name(),
                        is_dir: e.file_type().is_ok_and(|t| t.is_dir()),
                    })
                    .collect(),
            )
        }
    }

    fn correct_path(ws: &Workspace, raw: &str) -> Result<PathBuf, PathCorrectionError> {
        super::correct_path(ws, raw, &mut Plain)
    }

    fn tree() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in [
            "src/app/main.rs",
            "src/lib/util.rs",
            "tests/util.rs",
            "docs/guide.md",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir_all(root.join("ignored")).unwrap();
        std::fs::write(root.join("ignored/guide.md"), "x").unwrap();
        let ws = Workspace::new(&root, &[]).unwrap();
        (dir, ws)
    }

    #[test]
    fn existing_path_is_kept() {
        let (_d, ws) = tree();
        assert_eq!(
            correct_path(&ws, "src/app/main.rs").unwrap(),
            ws.primary().join("src/app/main.rs")
        );
    }

    #[test]
    fn unique_suffix_is_found() {
        let (_d, ws) = tree();
        assert_eq!(
            correct_path(&ws, "main.rs").unwrap(),
            ws.primary().join("src/app/main.rs")
        );
        assert_eq!(
            correct_path(&ws, "lib/util.rs").unwrap(),
            ws.primary().join("src/lib/util.rs")
        );
        // The copy in an ignored directory does not make it ambiguous.
        assert_eq!(
            correct_path(&ws, "guide.md").unwrap(),
            ws.primary().join("docs/guide.md")
        );
    }

    #[test]
    fn ambiguity_and_absence_are_errors() {
        let (_d, ws) = tree();
        let err = correct_path(&ws, "util.rs").unwrap_err();
        assert!(matches!(err, PathCorrectionError::Ambiguous(_)));
        let err = err.to_string();
        assert!(err.starts_with("The file path 'util.rs' is ambiguous and matches multiple files. Please provide a more specific path. Matches: "));
        assert!(err.contains(&ws.primary().join("src/lib/util.rs").display().to_string()));
        assert!(err.contains(&ws.primary().join("tests/util.rs").display().to_string()));
        assert_eq!(
            correct_path(&ws, "nope.rs").unwrap_err(),
            PathCorrectionError::NotFound(
                "File not found for 'nope.rs' and path is not absolute.".into()
            )
        );
    }

    #[test]
    fn search_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut deep = root.clone();
        for i in 0..60 {
            deep.push(format!("d{i}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("far.txt"), "x").unwrap();
        let ws = Workspace::new(&root, &[]).unwrap();
        assert!(correct_path(&ws, "far.txt").is_err());
    }

    #[test]
    fn at_prefixes() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        assert_eq!(defensive_path("@/src/a.rs", base), "src/a.rs");
        assert_eq!(defensive_path("@src/a.rs", base), "src/a.rs");
        std::fs::create_dir_all(base.join("@scope")).unwrap();
        assert_eq!(defensive_path("@scope/pkg.json", base), "@scope/pkg.json");
        assert_eq!(defensive_path("a\0b", base), "ab");
    }
}
