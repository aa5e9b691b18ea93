//! Walking a workspace root for `glob` and `read_many_files`: every file (symlinks to
//! files included, links not followed into directories), some directories pruned,
//! and glob matching the way node's `glob` does it (`*` stays within a segment,
//! dot-files included).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use tokio_util::sync::CancellationToken;

/// A file found by [`walk_files`].
#[derive(Debug, Clone)]
pub struct WalkedFile {
    pub path: PathBuf,
    /// Relative to the walked root, `/`-separated.
    pub rel: String,
    pub modified: SystemTime,
}

/// Every file under `root`, in no particular order; `None` when cancelled.
pub fn walk_files(root: &Path, cancel: Option<&CancellationToken>) -> Option<Vec<WalkedFile>> {
    let walker = crate::platform::ignore_rules::pruned_walk(root);
    let mut out = Vec::new();
    for entry in walker.flatten() {
        if cancel.is_some_and(|c| c.is_cancelled()) {
            return None;
        }
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let meta = if kind.is_symlink() {
            match std::fs::metadata(entry.path()) {
                Ok(m) if m.is_file() => m,
                _ => continue,
            }
        } else if kind.is_file() {
            match entry.metadata() {
                Ok(m) => m,
                Err(_) => continue,
            }
        } else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        out.push(WalkedFile {
            rel: rel_text(rel),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            path: entry.into_path(),
        });
    }
    Some(out)
}

/// A relative path with `/` separators.
pub fn rel_text(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A node-glob-like matcher over `/`-separated relative paths.
pub fn glob_matcher(pattern: &str, case_sensitive: bool) -> Result<GlobMatcher, String> {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    GlobBuilder::new(pattern)
        .case_insensitive(!case_sensitive)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.to_string())
}

/// A pattern that names an existing file literally is escaped, so that `[` or `*` in
/// a real file name match themselves.
pub fn literal_or_glob(root: &Path, pattern: &str) -> String {
    let normalized = pattern.replace('\\', "/");
    if root.join(&normalized).exists() {
        globset::escape(&normalized)
    } else {
        normalized
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_like_matching() {
        let m = glob_matcher("*.py", false).unwrap();
        assert!(m.is_match("a.py"));
        assert!(m.is_match("A.PY"));
        assert!(!m.is_match("sub/a.py"));
        let m = glob_matcher("**/*.py", true).unwrap();
        assert!(m.is_match("a.py"));
        assert!(m.is_match("sub/deep/a.py"));
        assert!(!m.is_match("a.PY"));
    }

    #[test]
    fn literal_names_are_escaped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("[id].tsx"), "x").unwrap();
        let pattern = literal_or_glob(dir.path(), "[id].tsx");
        let m = glob_matcher(&pattern, false).unwrap();
        assert!(m.is_match("[id].tsx"));
        assert!(!m.is_match("i.tsx"));
        assert_eq!(literal_or_glob(dir.path(), "[ab].rs"), "[ab].rs");
    }

    #[test]
    fn walk_skips_pruned_dirs_and_keeps_dotfiles() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "a.txt",
            ".hidden",
            "node_modules/x.js",
            ".git/config",
            "s/b.txt",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let mut rels: Vec<String> = walk_files(root, None)
            .unwrap()
            .into_iter()
            .map(|f| f.rel)
            .collect();
        rels.sort();
        assert_eq!(rels, vec![".hidden", "a.txt", "s/b.txt"]);
    }
}
