//! Lenient path handling for model-supplied paths: gemini-cli's
//! `resolveDefensiveToolPath` (stray NULs and `@` prefixes) and `correctPath`, which
//! turns a relative path that does not exist into the one file of the workspace that
//! ends with it, found by a bounded breadth-first search.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::ignore_rules::{FilterOptions, IgnoreRules};
use super::workspace::{normalize_lexically, Workspace};

/// How many directories the search for a file may visit per workspace root.
pub const MAX_SEARCH_DIRS: usize = 50;

/// Directories the search never enters.
const SKIPPED_DIRS: [&str; 2] = [".git", "node_modules"];

/// Strips NULs; `@/x` and `@\x` become `x`, and `@seg/…` loses its `@` unless a
/// literal `@seg` exists under `base`. A path that exists as written is kept.
pub fn defensive_path(raw: &str, base: &Path) -> String {
    let cleaned = raw.replace('\0', "");
    // Only an `@` prefix can change the path; anything else is kept without a stat.
    let Some(rest) = cleaned.strip_prefix('@') else {
        return cleaned;
    };
    if base.join(&cleaned).exists() {
        return cleaned;
    }
    if let Some(after) = rest.strip_prefix('/').or_else(|| rest.strip_prefix('\\')) {
        return after.to_string();
    }
    let first = rest.split(['/', '\\']).next().unwrap_or("");
    if !first.is_empty() && base.join(format!("@{first}")).exists() {
        return cleaned;
    }
    rest.to_string()
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
pub fn correct_path(ws: &Workspace, raw: &str) -> Result<PathBuf, PathCorrectionError> {
    let cleaned = defensive_path(raw, ws.primary());
    let direct = ws.primary().join(&cleaned);
    if direct.exists() {
        return Ok(normalize_lexically(&direct));
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
        for found in bfs_find(root, &name, MAX_SEARCH_DIRS) {
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
pub fn bfs_find(root: &Path, name: &std::ffi::OsStr, max_dirs: usize) -> Vec<PathBuf> {
    let mut rules = IgnoreRules::new(FilterOptions::default());
    let mut queue = VecDeque::from([root.to_path_buf()]);
    let mut visited = 0usize;
    let mut found = Vec::new();
    while let Some(dir) = queue.pop_front() {
        if visited >= max_dirs {
            break;
        }
        visited += 1;
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                let skip = entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| SKIPPED_DIRS.contains(&n));
                if !skip && !rules.is_ignored(root, &path, true) {
                    queue.push_back(path);
                }
            } else if entry.file_name() == name && !rules.is_ignored(root, &path, false) {
                found.push(path);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

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
