//! The project's ignore files, asked about one path at a time: `.gitignore` (inside a
//! git repository), `.geminiignore` and `.troupeignore`, read in every directory from
//! the workspace root down to the path, the deepest file deciding (gitignore rules).
//! `.git` itself is ignored whenever the git rules apply. Used by list_directory, glob, read_file,
//! read_many_files and path correction; grep uses the `ignore` crate's walker directly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::engine::paths::{starts_with_path, strip_path_prefix};

/// Directories no walk enters (gemini-cli's `COMMON_IGNORE_PATTERNS`: version-control
/// stores and dependency trees).
pub const PRUNED_DIRS: &[&str] = &[".git", "node_modules", "bower_components", ".svn", ".hg"];

/// A walk of everything under `root` that reads no ignore file, follows no link and
/// never enters a [`PRUNED_DIRS`] directory below `root`.
pub fn pruned_walk(root: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(|e| {
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && e.depth() > 0
                && e.file_name()
                    .to_str()
                    .is_some_and(|n| PRUNED_DIRS.contains(&n)))
        })
        .build()
}

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The ignore file of gemini-cli projects.
pub const GEMINI_IGNORE: &str = ".geminiignore";
/// Troupe's own ignore file, read like `.geminiignore`.
pub const TROUPE_IGNORE: &str = ".troupeignore";

/// Which ignore files apply (`file_filtering_options` of the tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterOptions {
    pub respect_git_ignore: bool,
    pub respect_gemini_ignore: bool,
}

impl Default for FilterOptions {
    fn default() -> Self {
        Self {
            respect_git_ignore: true,
            respect_gemini_ignore: true,
        }
    }
}

/// The rules of one directory.
#[derive(Default)]
struct DirRules {
    git: Option<Gitignore>,
    gemini: Option<Gitignore>,
}

/// A cache of parsed ignore files; ask [`IgnoreRules::is_ignored`] per path.
pub struct IgnoreRules {
    options: FilterOptions,
    dirs: HashMap<PathBuf, DirRules>,
    repos: HashMap<PathBuf, bool>,
}

impl IgnoreRules {
    pub fn new(options: FilterOptions) -> Self {
        Self {
            options,
            dirs: HashMap::new(),
            repos: HashMap::new(),
        }
    }

    pub fn options(&self) -> FilterOptions {
        self.options
    }

    /// Whether `path` (absolute, real) lies under `root` and is excluded by an ignore
    /// file between `root` and the path, or is inside `.git`.
    pub fn is_ignored(&mut self, root: &Path, path: &Path, is_dir: bool) -> bool {
        let Some(rel) = strip_path_prefix(path, root) else {
            return false;
        };
        // Part of the git rules: with them off, `.git` is left to the workspace check.
        if self.options.respect_git_ignore && rel.components().any(|c| c.as_os_str() == ".git") {
            return true;
        }
        let in_repo = self.options.respect_git_ignore && self.in_git_repo(root);
        let mut git_decided = !in_repo;
        let mut gemini_decided = !self.options.respect_gemini_ignore;
        // The directories from the path's own up to the root, nearest first.
        let dirs = path
            .ancestors()
            .skip(1)
            .take_while(|dir| starts_with_path(dir, root));
        for dir in dirs {
            let rules = self.rules_of(dir);
            if !git_decided {
                if let Some(gi) = &rules.git {
                    let m = gi.matched_path_or_any_parents(path, is_dir);
                    if m.is_ignore() {
                        return true;
                    }
                    git_decided = m.is_whitelist();
                }
            }
            if !gemini_decided {
                if let Some(gi) = &rules.gemini {
                    let m = gi.matched_path_or_any_parents(path, is_dir);
                    if m.is_ignore() {
                        return true;
                    }
                    gemini_decided = m.is_whitelist();
                }
            }
            if git_decided && gemini_decided {
                break;
            }
        }
        false
    }

    fn in_git_repo(&mut self, root: &Path) -> bool {
        if let Some(&known) = self.repos.get(root) {
            return known;
        }
        let found = root.ancestors().any(|a| a.join(".git").exists());
        self.repos.insert(root.to_path_buf(), found);
        found
    }

    fn rules_of(&mut self, dir: &Path) -> &DirRules {
        // Looked up by reference first: a directory seen before costs no allocation.
        if !self.dirs.contains_key(dir) {
            let rules = DirRules {
                git: parse(dir, &[".gitignore"]),
                gemini: parse(dir, &[GEMINI_IGNORE, TROUPE_IGNORE]),
            };
            self.dirs.insert(dir.to_path_buf(), rules);
        }
        &self.dirs[dir]
    }
}

fn parse(dir: &Path, names: &[&str]) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    let mut any = false;
    for name in names {
        let file = dir.join(name);
        if file.is_file() {
            // A malformed line is skipped, as git does; the other lines still apply.
            let _ = builder.add(&file);
            any = true;
        }
    }
    if !any {
        return None;
    }
    builder.build().ok().filter(|gi| !gi.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_gitignore_and_geminiignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").unwrap();
        std::fs::write(root.join("sub/.gitignore"), "secret.txt\n!keep.log\n").unwrap();
        std::fs::write(root.join(".geminiignore"), "private/\n").unwrap();
        std::fs::write(root.join(".troupeignore"), "*.tmp\n").unwrap();
        let mut rules = IgnoreRules::new(FilterOptions::default());
        assert!(rules.is_ignored(&root, &root.join("a.log"), false));
        assert!(rules.is_ignored(&root, &root.join("build/x/y.rs"), false));
        assert!(rules.is_ignored(&root, &root.join("build"), true));
        assert!(rules.is_ignored(&root, &root.join("sub/deep/secret.txt"), false));
        assert!(!rules.is_ignored(&root, &root.join("sub/keep.log"), false));
        assert!(!rules.is_ignored(&root, &root.join("secret.txt"), false));
        assert!(rules.is_ignored(&root, &root.join("private/a.md"), false));
        assert!(rules.is_ignored(&root, &root.join("x.tmp"), false));
        assert!(rules.is_ignored(&root, &root.join(".git/config"), false));
        assert!(!rules.is_ignored(&root, &root.join("src/main.rs"), false));

        let mut no_git = IgnoreRules::new(FilterOptions {
            respect_git_ignore: false,
            respect_gemini_ignore: true,
        });
        assert!(!no_git.is_ignored(&root, &root.join("a.log"), false));
        assert!(no_git.is_ignored(&root, &root.join("private/a.md"), false));
        let mut no_gemini = IgnoreRules::new(FilterOptions {
            respect_git_ignore: true,
            respect_gemini_ignore: false,
        });
        assert!(!no_gemini.is_ignored(&root, &root.join("private/a.md"), false));
    }

    #[test]
    fn gitignore_needs_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        let mut rules = IgnoreRules::new(FilterOptions::default());
        assert!(!rules.is_ignored(&root, &root.join("a.log"), false));
    }
}
