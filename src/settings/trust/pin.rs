//! Trust pinned to what was trusted: the fingerprint of a folder's project
//! configuration, taken when the user trusts it and compared at every start.
//!
//! The fingerprint is a manifest: the SHA-256 of every file under `.troupe/`,
//! `.gemini/` and `.agents/`, of `.git/config` and of every file under `.git/hooks/`
//! (and of a `.git` file, a worktree's pointer), at each level from the trusted folder
//! down to the workspace, keyed by the path relative to the trusted folder
//! (`.troupe/config.toml`, `sub/.gemini/settings.json`). A level's entries are
//! compared only when the workspace is at or below that level, so one pin serves every
//! workspace under a trusted folder. Bounded: [`MAX_ENTRIES`] files at most, content
//! hashed up to [`MAX_FILE_BYTES`] a file and [`MAX_TOTAL_BYTES`] in all (beyond, a
//! file's size and modification time stand for it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The configuration directories of a level, every file in them pinned.
pub const CONFIG_DIRS: [&str; 3] = [".troupe", ".gemini", ".agents"];

/// Files pinned at most (over the whole chain of levels); past it one marker entry.
pub const MAX_ENTRIES: usize = 4096;
/// Bytes of one file hashed; a larger file is pinned by its size and mtime.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes hashed in all; past it files are pinned by their size and mtime.
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;
/// Directory levels descended inside one configuration directory.
const MAX_DEPTH: usize = 12;

/// Pinned path (relative to the trusted folder, `/`-separated) → SHA-256 hex.
pub type Manifest = BTreeMap<String, String>;

/// One difference between the pinned and the present configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added(String),
    Changed(String),
    Removed(String),
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, path) = match self {
            Change::Added(p) => ("added", p),
            Change::Changed(p) => ("changed", p),
            Change::Removed(p) => ("removed", p),
        };
        write!(
            f,
            "{what}: {}",
            crate::engine::sanitize::one_line(path.as_str())
        )
    }
}

/// Where gemini-cli keeps its git worktrees, inside a `.gemini` directory: each
/// `.gemini/worktrees/NAME` is a checkout (a level of its own), not configuration.
const WORKTREES: &str = "worktrees";

/// The levels from `root` down to `workspace` (just `root` when `workspace` is not
/// below it): each as its path relative to `root` (`""` for `root`) and in full. A
/// worktree `.gemini/worktrees/NAME` on the way is one level.
pub fn levels(root: &Path, workspace: &Path) -> Vec<(String, PathBuf)> {
    let mut out = vec![(String::new(), root.to_path_buf())];
    let Ok(rel) = workspace.strip_prefix(root) else {
        return out;
    };
    let parts: Vec<String> = rel
        .components()
        .map(|p| p.as_os_str().to_string_lossy().into_owned())
        .collect();
    let mut here = root.to_path_buf();
    let mut names: Vec<String> = Vec::new();
    let mut i = 0;
    while i < parts.len() {
        let step = if worktree_at(&parts, i) {
            3
        } else if CONFIG_DIRS.contains(&parts[i].as_str()) || parts[i] == ".git" {
            // A level inside a configuration directory is no project (and its files
            // are pinned through that directory already).
            break;
        } else {
            1
        };
        for name in &parts[i..i + step] {
            here.push(name);
            names.push(name.clone());
        }
        out.push((names.join("/"), here.clone()));
        i += step;
    }
    out
}

/// Whether `parts[i..]` starts with a worktree, `.gemini/worktrees/NAME`.
fn worktree_at<S: AsRef<str>>(parts: &[S], i: usize) -> bool {
    parts.len() >= i + 3 && parts[i].as_ref() == ".gemini" && parts[i + 1].as_ref() == WORKTREES
}

/// Whether the pinned path `entry` belongs to the level `level` (relative to the root).
pub fn belongs(entry: &str, level: &str) -> bool {
    let rest = if level.is_empty() {
        entry
    } else {
        match entry.strip_prefix(level).and_then(|r| r.strip_prefix('/')) {
            Some(rest) => rest,
            None => return false,
        }
    };
    let parts: Vec<&str> = rest.split('/').collect();
    // What lies in a worktree belongs to the worktree's level.
    if parts.len() > 3 && worktree_at(&parts, 0) {
        return false;
    }
    let top = parts.first().copied().unwrap_or_default();
    CONFIG_DIRS.contains(&top) || top == ".git"
}

/// Whether `entry` is a git entry (`.git`, `.git/config`, `.git/hooks/…`) rather
/// than Troupe's or gemini-cli's own configuration.
pub fn is_git_entry(entry: &str) -> bool {
    entry
        .split('/')
        .find(|part| CONFIG_DIRS.contains(part) || *part == ".git")
        == Some(".git")
}

/// The user's own configuration directories (the troupe home, gemini-cli's
/// `~/.gemini`), never pinned as a project's even when a level holds them.
pub fn user_dirs() -> Vec<PathBuf> {
    let gemini_home = std::env::var_os("GEMINI_CLI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(crate::settings::home_dir);
    [crate::settings::troupe_home(), gemini_home.join(".gemini")]
        .into_iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .collect()
}

/// The fingerprint of the configuration at every level from `root` to `workspace`.
pub fn manifest(root: &Path, workspace: &Path, skip: &[PathBuf]) -> Manifest {
    let mut scan = Scan {
        out: Manifest::new(),
        hashed: 0,
        skip,
    };
    for (level, dir) in levels(root, workspace) {
        let prefix = |name: &str| {
            if level.is_empty() {
                name.to_string()
            } else {
                format!("{level}/{name}")
            }
        };
        for name in CONFIG_DIRS {
            scan.dir(&dir.join(name), &prefix(name), 0);
        }
        let git = dir.join(".git");
        if git.is_file() {
            scan.file(&git, &prefix(".git"));
        } else if git.is_dir() {
            scan.file(&git.join("config"), &prefix(".git/config"));
            scan.dir(&git.join("hooks"), &prefix(".git/hooks"), 0);
        }
    }
    scan.out
}

/// What differs between `pinned` and `current` at the given levels.
pub fn compare(pinned: &Manifest, current: &Manifest, levels: &[String]) -> Vec<Change> {
    let here = |k: &String| levels.iter().any(|l| belongs(k, l));
    let mut changes = Vec::new();
    for (path, hash) in current.iter().filter(|(k, _)| here(k)) {
        match pinned.get(path) {
            None => changes.push(Change::Added(path.clone())),
            Some(old) if old != hash => changes.push(Change::Changed(path.clone())),
            Some(_) => {}
        }
    }
    for path in pinned.keys().filter(|k| here(k)) {
        if !current.contains_key(path) {
            changes.push(Change::Removed(path.clone()));
        }
    }
    changes
}

/// `pinned` with the entries of `levels` replaced by those of `current` (what trusting
/// again from a workspace at the bottom of `levels` records).
pub fn merged(pinned: &Manifest, current: &Manifest, levels: &[String]) -> Manifest {
    let mut out: Manifest = pinned
        .iter()
        .filter(|(k, _)| !levels.iter().any(|l| belongs(k, l)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.extend(current.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

/// The pinned hash of the file at `path` as [`manifest`] computes it (`None`: no
/// such file), for a writer that updates the pin after its own write.
pub fn file_hash(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| hash_file(path, &meta, true))
}

/// A walk of configuration directories into a manifest.
struct Scan<'a> {
    out: Manifest,
    hashed: u64,
    skip: &'a [PathBuf],
}

impl Scan<'_> {
    fn full(&mut self) -> bool {
        if self.out.len() < MAX_ENTRIES {
            return false;
        }
        self.out.insert(
            "…".to_string(),
            format!("more than {MAX_ENTRIES} files: the rest is not pinned"),
        );
        true
    }

    fn dir(&mut self, dir: &Path, key: &str, depth: usize) {
        if depth > MAX_DEPTH || self.full() {
            return;
        }
        if depth == 0 {
            let real = std::fs::canonicalize(dir);
            if real.as_ref().is_ok_and(|r| self.skip.contains(r)) {
                return;
            }
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
        names.sort();
        for name in names {
            let path = dir.join(&name);
            // gemini-cli's worktrees are checkouts: each is pinned as a level of its own.
            if depth == 0 && key.ends_with(".gemini") && name == WORKTREES && path.is_dir() {
                continue;
            }
            let child = format!("{key}/{}", name.to_string_lossy());
            // Followed as Troupe follows it when it reads the file.
            match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => self.dir(&path, &child, depth + 1),
                Ok(_) => self.file(&path, &child),
                // A dangling link: what it names is still pinned.
                Err(_) => {
                    let target = std::fs::read_link(&path).unwrap_or_default();
                    let text = format!("link\0{}", target.display());
                    self.out
                        .insert(child, crate::engine::hash::sha256_hex(text.as_bytes()));
                }
            }
            if self.full() {
                return;
            }
        }
    }

    fn file(&mut self, path: &Path, key: &str) {
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if !meta.is_file() || self.full() {
            return;
        }
        let room = self.hashed + meta.len() <= MAX_TOTAL_BYTES;
        if room && meta.len() <= MAX_FILE_BYTES {
            self.hashed += meta.len();
        }
        self.out
            .insert(key.to_string(), hash_file(path, &meta, room));
    }
}

/// The SHA-256 of a file's content (of a `.git/config`, its entries as git reads them
/// but those of `branch.*`, which git rewrites on `push -u` and which name no
/// program); past the bounds, of its size and modification time.
fn hash_file(path: &Path, meta: &std::fs::Metadata, room: bool) -> String {
    use std::os::unix::fs::MetadataExt;
    let by_meta = || {
        let text = format!(
            "meta\0{}\0{}\0{}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        );
        crate::engine::hash::sha256_hex(text.as_bytes())
    };
    if !room || meta.len() > MAX_FILE_BYTES {
        return by_meta();
    }
    let is_git_config = path.file_name().is_some_and(|n| n == "config")
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == ".git");
    if let Some(entries) = is_git_config.then(|| git_config_entries(path)).flatten() {
        return crate::engine::hash::sha256_hex(entries.as_bytes());
    }
    match std::fs::read(path) {
        Ok(bytes) => crate::engine::hash::sha256_hex(&bytes),
        Err(_) => by_meta(),
    }
}

/// The entries of the git config file at `path` as git itself parses them (`git
/// config --file … --list --null`, which follows no include and runs no program),
/// without `branch.*`; `None` when git cannot say (not installed, a file it rejects:
/// then the bytes are pinned).
fn git_config_entries(path: &Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["config", "--no-includes", "--null", "--list", "--file"])
        .arg(path)
        .current_dir("/")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_CONFIG")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let kept: Vec<&str> = text
        .split('\0')
        .filter(|entry| !entry.to_ascii_lowercase().starts_with("branch."))
        .collect();
    Some(kept.join("\0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_belonging_and_git_entries() {
        let root = Path::new("/r");
        let got: Vec<String> = levels(root, Path::new("/r/a/b"))
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(got, ["", "a", "a/b"]);
        assert_eq!(levels(root, Path::new("/elsewhere")).len(), 1);
        assert_eq!(levels(root, Path::new("/r/.troupe/x")).len(), 1);
        assert!(belongs(".troupe/config.toml", ""));
        assert!(!belongs("a/.troupe/config.toml", ""));
        assert!(belongs("a/.troupe/config.toml", "a"));
        assert!(!belongs("ab/.troupe/config.toml", "a"));
        assert!(belongs(".git/config", ""));
        assert!(is_git_entry("a/.git/hooks/pre-commit"));
        assert!(!is_git_entry(".gemini/settings.json"));
        // A worktree under .gemini/worktrees is a level; its files are its own.
        let got: Vec<String> = levels(root, Path::new("/r/.gemini/worktrees/w/src"))
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(got, ["", ".gemini/worktrees/w", ".gemini/worktrees/w/src"]);
        assert_eq!(levels(root, Path::new("/r/.gemini/worktrees")).len(), 1);
        let in_tree = ".gemini/worktrees/w/.troupe/config.toml";
        assert!(!belongs(in_tree, ""));
        assert!(belongs(in_tree, ".gemini/worktrees/w"));
        assert!(belongs(".gemini/settings.json", ""));
    }

    #[test]
    fn worktrees_are_left_out_of_the_gemini_folder_they_sit_in() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".gemini/worktrees/w/.troupe")).unwrap();
        std::fs::write(root.join(".gemini/settings.json"), "{}").unwrap();
        std::fs::write(root.join(".gemini/worktrees/w/README.md"), "x").unwrap();
        std::fs::write(root.join(".gemini/worktrees/w/.troupe/config.toml"), "").unwrap();
        let at_root = manifest(root, root, &[]);
        let keys: Vec<&String> = at_root.keys().collect();
        assert_eq!(keys, [".gemini/settings.json"]);
        let inside = manifest(root, &root.join(".gemini/worktrees/w"), &[]);
        let keys: Vec<&String> = inside.keys().collect();
        assert_eq!(
            keys,
            [
                ".gemini/settings.json",
                ".gemini/worktrees/w/.troupe/config.toml"
            ]
        );
    }

    #[test]
    fn manifest_compare_and_merge() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".troupe/commands")).unwrap();
        std::fs::create_dir_all(root.join("sub/.gemini")).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".troupe/config.toml"), "a").unwrap();
        std::fs::write(root.join(".troupe/commands/x.toml"), "b").unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        let top = manifest(root, root, &[]);
        assert_eq!(
            top.keys().collect::<Vec<_>>(),
            [
                ".git/config",
                ".troupe/commands/x.toml",
                ".troupe/config.toml"
            ]
        );
        std::fs::write(root.join("sub/.gemini/settings.json"), "{}").unwrap();
        std::fs::write(root.join(".troupe/config.toml"), "changed").unwrap();
        let sub = manifest(root, &root.join("sub"), &[]);
        let levels = vec![String::new(), "sub".to_string()];
        let changes = compare(&top, &sub, &levels);
        assert_eq!(
            changes,
            [
                Change::Changed(".troupe/config.toml".into()),
                Change::Added("sub/.gemini/settings.json".into())
            ]
        );
        // From the root, the nested level is not compared.
        assert_eq!(
            compare(&top, &manifest(root, root, &[]), &[String::new()]).len(),
            1
        );
        let pinned = merged(&top, &sub, &levels);
        assert!(compare(&pinned, &sub, &levels).is_empty());
        // A user's own directory is never pinned.
        let skip = vec![std::fs::canonicalize(root.join(".troupe")).unwrap()];
        assert!(!manifest(root, root, &skip).contains_key(".troupe/config.toml"));
    }

    #[test]
    fn branch_sections_of_git_config_are_not_pinned() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        let config = dir.path().join(".git/config");
        let hash = |text: &str| {
            std::fs::write(&config, text).unwrap();
            file_hash(&config)
        };
        let before = hash("[core]\n\tbare = false\n");
        assert_eq!(
            hash("[core]\n\tbare = false\n[branch \"main\"]\n\tremote = origin\n"),
            before
        );
        assert_ne!(
            hash("[core]\n\tbare = false\n[branch \"main\"]\n[core]\n\tfsmonitor = ./x\n"),
            before
        );
        // A value continued onto a line that looks like a branch header.
        assert_ne!(
            hash("[core]\n\tbare = false\n\tx = y \\\n[branch \"m\"]\n\tfsmonitor = ./x\n"),
            before
        );
    }

    #[test]
    fn the_entry_count_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let skills = dir.path().join(".agents/skills");
        std::fs::create_dir_all(&skills).unwrap();
        for i in 0..MAX_ENTRIES + 5 {
            std::fs::write(skills.join(format!("{i}.md")), "x").unwrap();
        }
        let got = manifest(dir.path(), dir.path(), &[]);
        assert!(got.len() <= MAX_ENTRIES + 1, "{}", got.len());
        assert!(got.contains_key("…"));
    }
}
