//! Context files (`AGENTS.md`, `GEMINI.md`, …) in three tiers, as gemini-cli reads
//! them: the global ones in the troupe home; then, for each workspace root, every
//! directory from its git root down to it; and "just in time", files found later
//! above a path a tool touches, each appended once to that tool's output. Files are
//! concatenated with `--- Context from: path ---` markers, `@path` imports expanded.
//!
//! Reading is blocking file I/O: callers run it at session start or on a blocking
//! thread.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::context_imports::expand_imports;

/// Where context files are looked for.
#[derive(Debug, Clone)]
pub struct ContextConfig {
    /// File names, in order of preference (`AGENTS.md`, `GEMINI.md`).
    pub file_names: Vec<String>,
    /// The directory of the global files (`~/.troupe`).
    pub global_dir: PathBuf,
    /// The context files of the enabled extensions, read after the global files and
    /// before the project's (gemini-cli's order).
    pub extension_files: Vec<PathBuf>,
    /// The workspace roots (real paths).
    pub roots: Vec<PathBuf>,
}

/// One loaded context file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    /// The text with `@path` imports expanded, trimmed.
    pub text: String,
}

/// The files of one discovery, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadedContext {
    pub files: Vec<ContextFile>,
}

impl LoadedContext {
    /// The files as one text, each between `--- Context from: … ---` markers.
    pub fn text(&self) -> String {
        format_blocks(&self.files)
    }

    pub fn paths(&self) -> Vec<String> {
        self.files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect()
    }
}

/// `--- Context from: p ---\n…\n--- End of Context from: p ---`, joined by a blank line.
pub fn format_blocks(files: &[ContextFile]) -> String {
    files
        .iter()
        .map(|f| {
            let p = f.path.display();
            format!(
                "--- Context from: {p} ---\n{}\n--- End of Context from: {p} ---",
                f.text
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The nearest directory at or above `dir` holding `.git` (a directory or a file).
pub fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The session's context files: what was loaded, and what the JIT tier has seen.
pub struct ContextFiles {
    config: ContextConfig,
    /// Real paths of every file already given to the model.
    seen: Mutex<HashSet<PathBuf>>,
    /// Directories whose ancestors were already searched (JIT tier): each is searched
    /// once per session (until a reload), so a batch of reads in one directory costs
    /// one search, not one per call.
    scanned: Mutex<HashSet<PathBuf>>,
}

impl ContextFiles {
    pub fn new(config: ContextConfig) -> Self {
        Self {
            config,
            seen: Mutex::new(HashSet::new()),
            scanned: Mutex::new(HashSet::new()),
        }
    }

    pub fn config(&self) -> &ContextConfig {
        &self.config
    }

    /// Reads the global and project tiers from disk (again); remembers them as seen.
    pub fn load(&self) -> LoadedContext {
        let mut candidates = Vec::new();
        for name in &self.config.file_names {
            candidates.push(self.config.global_dir.join(name));
        }
        candidates.extend(self.config.extension_files.iter().cloned());
        for root in &self.config.roots {
            for dir in project_dirs(root) {
                if dir == self.config.global_dir {
                    continue;
                }
                for name in &self.config.file_names {
                    candidates.push(dir.join(name));
                }
            }
        }
        let loaded = self.read_new(candidates, true);
        LoadedContext { files: loaded }
    }

    /// Context files above `path` (up to the workspace root holding it) that were
    /// never given to the model; they are marked seen. Empty when there are none.
    pub fn discover_near(&self, path: &Path) -> Vec<ContextFile> {
        let start = if path.is_dir() {
            path.to_path_buf()
        } else {
            match path.parent() {
                Some(p) => p.to_path_buf(),
                None => return Vec::new(),
            }
        };
        if !self.claim_dir(&start) {
            return Vec::new();
        }
        self.discover_from(&start)
    }

    /// Marks `dir` as searched for this session; false when it already was (then its
    /// ancestors need no new search). Cheap: no file system access.
    pub fn claim_dir(&self, dir: &Path) -> bool {
        let mut scanned = self.scanned.lock().unwrap_or_else(|p| p.into_inner());
        // Most calls of a batch land in directories already claimed: no copy for them.
        !scanned.contains(dir) && scanned.insert(dir.to_path_buf())
    }

    /// The unseen context files in `dir` and its ancestors up to the ceiling (the
    /// deepest workspace root holding it), root first.
    pub fn discover_from(&self, dir: &Path) -> Vec<ContextFile> {
        self.discover_from_with(dir, &|p| std::fs::read_to_string(p).ok())
    }

    /// [`ContextFiles::discover_from`] for each of `dirs` in turn, on the FileSystem
    /// pool: each context file is opened beneath its workspace root (the
    /// just-in-time tier).
    pub async fn discover_confined(
        self: std::sync::Arc<Self>,
        fs: &crate::platform::filesystem::FsClient,
        dirs: Vec<PathBuf>,
    ) -> Vec<ContextFile> {
        fs.run(move |confined| {
            let read = |path: &Path| {
                let bytes = crate::platform::filesystem::read_checked(confined, path).ok()?;
                String::from_utf8(bytes.bytes).ok()
            };
            let mut files = Vec::new();
            for dir in dirs {
                files.extend(self.discover_from_with(&dir, &read));
            }
            files
        })
        .await
        .unwrap_or_default()
    }

    /// [`ContextFiles::discover_from`] with the files read by `read` (the FileSystem
    /// actor's confined read for the just-in-time tier).
    pub fn discover_from_with(
        &self,
        dir: &Path,
        read: &dyn Fn(&Path) -> Option<String>,
    ) -> Vec<ContextFile> {
        let start = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let Some(ceiling) = self
            .config
            .roots
            .iter()
            .filter(|r| start.starts_with(r))
            .max_by_key(|r| r.components().count())
        else {
            return Vec::new();
        };
        let mut dirs: Vec<&Path> = start
            .ancestors()
            .take_while(|d| d.starts_with(ceiling))
            .collect();
        dirs.reverse();
        let candidates = dirs
            .iter()
            .flat_map(|d| self.config.file_names.iter().map(move |n| d.join(n)))
            .collect();
        self.read_new_with(candidates, false, read)
    }

    /// Reads the candidates that exist and were not seen (by real path), in order.
    /// `reset` forgets what was seen before (a full reload).
    fn read_new(&self, candidates: Vec<PathBuf>, reset: bool) -> Vec<ContextFile> {
        self.read_new_with(candidates, reset, &|p| std::fs::read_to_string(p).ok())
    }

    fn read_new_with(
        &self,
        candidates: Vec<PathBuf>,
        reset: bool,
        read: &dyn Fn(&Path) -> Option<String>,
    ) -> Vec<ContextFile> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if reset {
            seen.clear();
            self.scanned
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clear();
        }
        let mut out = Vec::new();
        for path in candidates {
            if !path.is_file() {
                continue;
            }
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if !seen.insert(real) {
                continue;
            }
            let Some(raw) = read(&path) else {
                continue;
            };
            let allowed = self.import_roots(&path);
            let text = expand_imports(&raw, &path, &allowed, &read_import);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            out.push(ContextFile {
                path,
                text: text.to_string(),
            });
        }
        out
    }

    /// Where `@path` imports of `file` may point: its project (git root or workspace
    /// root) for project files, the global directory for global ones.
    fn import_roots(&self, file: &Path) -> Vec<PathBuf> {
        if file.starts_with(&self.config.global_dir) {
            return vec![self.config.global_dir.clone()];
        }
        if self.config.extension_files.iter().any(|f| f == file) {
            // An extension's file imports from its own folder.
            return file.parent().map(Path::to_path_buf).into_iter().collect();
        }
        let mut roots = self.config.roots.clone();
        if let Some(git) = file.parent().and_then(git_root) {
            roots.push(git);
        }
        roots
    }
}

/// Reads an `@` import beneath its allowed roots (never through a link leading out).
fn read_import(roots: &[PathBuf], path: &Path) -> Result<(PathBuf, String), String> {
    crate::platform::filesystem::confined::read_text_beneath(roots, path, MAX_IMPORT_BYTES)
}

/// The most of one imported file that is read.
const MAX_IMPORT_BYTES: u64 = 1024 * 1024;

/// The directories of the project tier for one workspace root: its git root down to
/// the root itself, outermost first (just the root when there is no git root).
pub fn project_dirs(root: &Path) -> Vec<PathBuf> {
    let Some(top) = git_root(root) else {
        return vec![root.to_path_buf()];
    };
    let mut dirs: Vec<PathBuf> = root
        .ancestors()
        .take_while(|d| d.starts_with(&top))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(global: &Path, roots: Vec<PathBuf>) -> ContextConfig {
        ContextConfig {
            file_names: vec!["AGENTS.md".into(), "GEMINI.md".into()],
            global_dir: global.to_path_buf(),
            extension_files: Vec::new(),
            roots,
        }
    }

    #[test]
    fn tiers_in_order_from_global_to_leaf() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let global = base.join("home/.troupe");
        let repo = base.join("repo");
        let leaf = repo.join("pkg/app");
        std::fs::create_dir_all(&global).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&leaf).unwrap();
        std::fs::write(global.join("AGENTS.md"), "global rule\n").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "repo rule").unwrap();
        std::fs::write(repo.join("GEMINI.md"), "   \n").unwrap();
        std::fs::write(repo.join("pkg/GEMINI.md"), "pkg rule").unwrap();
        std::fs::write(leaf.join("AGENTS.md"), "leaf rule").unwrap();
        std::fs::write(base.join("AGENTS.md"), "above the repo").unwrap();
        let files = ContextFiles::new(config(&global, vec![leaf.clone()]));
        let loaded = files.load();
        let texts: Vec<&str> = loaded.files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["global rule", "repo rule", "pkg rule", "leaf rule"]);
        let text = loaded.text();
        assert!(text.starts_with(&format!(
            "--- Context from: {0} ---\nglobal rule\n--- End of Context from: {0} ---\n\n--- Context from: {1} ---",
            global.join("AGENTS.md").display(),
            repo.join("AGENTS.md").display()
        )));
        // Reloading gives the same files again.
        assert_eq!(files.load(), loaded);
    }

    #[test]
    fn jit_finds_new_files_once_below_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::write(ws.join("AGENTS.md"), "root").unwrap();
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        std::fs::write(ws.join("a/AGENTS.md"), "in a").unwrap();
        std::fs::write(ws.join("a/b/code.rs"), "fn x() {}").unwrap();
        let files = ContextFiles::new(config(&ws.join("no-global"), vec![ws.clone()]));
        assert_eq!(files.load().files.len(), 1);
        let found = files.discover_near(&ws.join("a/b/code.rs"));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].text, "in a");
        assert!(files.discover_near(&ws.join("a/b/code.rs")).is_empty());
        assert!(files.discover_near(Path::new("/etc/hostname")).is_empty());
    }
}
