//! Folder trust: whether the files of a workspace may change what Troupe does.
//!
//! A folder is trusted when it, or a folder above it, is listed in
//! `<troupe home>/trusted_folders.toml` (written only by `troupe trust`, `troupe
//! untrust` and the first-start prompt — never by anything inside a workspace), or for
//! one run with `--skip-trust`. In an untrusted folder the project's
//! `.troupe/config.toml` is not applied at all; extension points that start processes
//! or widen permissions (MCP servers, hooks, custom commands) must ask
//! [`TrustState::is_trusted`] (or read `LoadedSettings::trusted`) before acting.
//! Context files (AGENTS.md, GEMINI.md) are read either way: they are prompts, not
//! permissions.
//!
//! Trust is pinned to what was trusted ([`pin`]): trusting a folder records the
//! fingerprint of its project configuration, and a later start whose configuration
//! differs is [`TrustState::Changed`] — not trusted until the user trusts the folder
//! again, which updates the pin. An entry of an older trust file has no pin: it counts
//! as changed as soon as the folder holds any project configuration (the safer choice:
//! what is there now was never shown to the user as pinned).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod discover;
pub mod pin;
pub use discover::discover;
use pin::{Change, Manifest};

/// Changes listed in a notice before the rest is counted.
const CHANGES_SHOWN: usize = 20;

/// The file, under the troupe home, that lists trusted folders.
pub const TRUSTED_FOLDERS_FILE: &str = "trusted_folders.toml";

/// Why a workspace is (or is not) trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// Listed in the trust file: this folder or the listed ancestor.
    Trusted { by: PathBuf },
    /// `--skip-trust`: trusted for this run only.
    SkippedForRun,
    /// Listed, but its project configuration is not what was trusted: nothing of it
    /// applies until the user trusts the folder again.
    Changed {
        /// The listed folder.
        by: PathBuf,
        /// What differs from the pin (paths relative to `by`).
        changes: Vec<Change>,
        /// Whether the entry had a pin at all (an older trust file's has none).
        pinned: bool,
    },
    /// Not listed (nothing in the workspace may widen what Troupe does).
    Untrusted,
}

impl TrustState {
    /// Whether project settings, MCP servers, hooks and commands of the workspace apply.
    pub fn is_trusted(&self) -> bool {
        matches!(self, TrustState::Trusted { .. } | TrustState::SkippedForRun)
    }
}

/// A trust file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
    #[error("{path} is not a directory")]
    NotADirectory { path: String },
}

/// The contents of `trusted_folders.toml`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TrustedFolders {
    /// Real (canonical) paths of trusted folders; their subfolders are trusted too.
    #[serde(default)]
    pub trusted: Vec<PathBuf>,
    /// For each trusted folder (by its path as text), the fingerprint of its project
    /// configuration when it was trusted ([`pin::manifest`]). Absent in a file of an
    /// older Troupe: such an entry is pinned when the user trusts the folder again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pins: BTreeMap<String, Manifest>,
}

/// The key of `dir`'s pin.
fn pin_key(dir: &Path) -> String {
    dir.display().to_string()
}

/// `<troupe home>/trusted_folders.toml`.
pub fn trust_file() -> PathBuf {
    super::troupe_home().join(TRUSTED_FOLDERS_FILE)
}

/// Reads the trust file (missing: nothing trusted).
pub fn load_trusted(file: &Path) -> Result<TrustedFolders, TrustError> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TrustedFolders::default()),
        Err(e) => {
            return Err(TrustError::Read {
                path: file.display().to_string(),
                message: e.to_string(),
            })
        }
    };
    toml::from_str(&text).map_err(|e| TrustError::Read {
        path: file.display().to_string(),
        message: e.to_string(),
    })
}

/// How the trust file is written: the platform's one atomic writer (a private temp
/// file in the same directory, flushed, renamed over the name), which `settings`, below
/// `platform`, is handed rather than calls.
pub type WriteFile<'a> = &'a dyn Fn(&Path, &[u8]) -> Result<(), String>;

fn save_trusted(
    file: &Path,
    folders: &TrustedFolders,
    write: WriteFile<'_>,
) -> Result<(), TrustError> {
    let err = |e: &dyn std::fmt::Display| TrustError::Write {
        path: file.display().to_string(),
        message: e.to_string(),
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
    let mut folders = folders.clone();
    let listed: Vec<String> = folders.trusted.iter().map(|t| pin_key(t)).collect();
    folders.pins.retain(|k, _| listed.contains(k));
    let text = format!(
        "# Folders whose project settings Troupe applies (`troupe trust` / `troupe untrust`).\n{}",
        toml::to_string(&folders).map_err(|e| err(&e))?
    );
    write(file, text.as_bytes()).map_err(|e| err(&e))
}

/// The real path of a directory (`~` expanded).
pub fn real_dir(dir: &Path) -> Result<PathBuf, TrustError> {
    let dir = super::expand_tilde(dir);
    let real = std::fs::canonicalize(&dir).map_err(|e| TrustError::Read {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    if !real.is_dir() {
        return Err(TrustError::NotADirectory {
            path: real.display().to_string(),
        });
    }
    Ok(real)
}

/// Whether `workspace` is trusted according to `file` (an unreadable file trusts
/// nothing), its project configuration compared with the pin.
pub fn trust_state_in(file: &Path, workspace: &Path) -> TrustState {
    let Ok(folders) = load_trusted(file) else {
        return TrustState::Untrusted;
    };
    let real = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let Some(by) = listed_above(&folders, &real) else {
        return TrustState::Untrusted;
    };
    let pinned = folders.pins.get(&pin_key(&by));
    let current = pin::manifest(&by, &real, &pin::user_dirs());
    let levels: Vec<String> = pin::levels(&by, &real).into_iter().map(|l| l.0).collect();
    let empty = Manifest::new();
    let changes = pin::compare(pinned.unwrap_or(&empty), &current, &levels);
    // Only git's files left, or none: nothing of the project's own would apply.
    let withheld = current.keys().any(|k| !pin::is_git_entry(k));
    if changes.is_empty() || !withheld {
        return TrustState::Trusted { by };
    }
    TrustState::Changed {
        by,
        changes,
        pinned: pinned.is_some(),
    }
}

/// The trusted folder at or above `real` that is listed deepest.
fn listed_above(folders: &TrustedFolders, real: &Path) -> Option<PathBuf> {
    folders
        .trusted
        .iter()
        .filter(|t| real.starts_with(t))
        .max_by_key(|t| t.components().count())
        .cloned()
}

/// Whether `workspace` is trusted by the user's trust file.
pub fn is_trusted(workspace: &Path) -> TrustState {
    trust_state_in(&trust_file(), workspace)
}

/// Adds `dir` to the trust file, pinned to its configuration at every level from it
/// down to `from` (the directory the user trusts it from, when below it); returns its
/// real path.
pub fn trust_in(
    file: &Path,
    dir: &Path,
    from: &Path,
    write: WriteFile<'_>,
) -> Result<PathBuf, TrustError> {
    let real = real_dir(dir)?;
    let from = std::fs::canonicalize(from).unwrap_or_else(|_| real.clone());
    let mut folders = load_trusted(file)?;
    if !folders.trusted.contains(&real) {
        folders.trusted.push(real.clone());
        folders.trusted.sort();
    }
    let current = pin::manifest(&real, &from, &pin::user_dirs());
    let levels: Vec<String> = pin::levels(&real, &from).into_iter().map(|l| l.0).collect();
    let key = pin_key(&real);
    let old = folders.pins.remove(&key).unwrap_or_default();
    folders
        .pins
        .insert(key, pin::merged(&old, &current, &levels));
    save_trusted(file, &folders, write)?;
    Ok(real)
}

/// What [`pin_own_write`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnWrite {
    /// The folder is not listed: there is no pin to update.
    NotListed,
    /// The pin now holds the file as written.
    Pinned,
    /// The file was not as pinned before the write (someone else changed it since the
    /// folder was trusted): the pin is left as it was, so the next start still asks.
    Unpinned,
}

/// After Troupe itself wrote `written` (a file of `workspace`'s project
/// configuration, e.g. `troupe mcp add -s project`), updates the pin of the folder
/// that trusts `workspace` to the file as written — but only when the file was as
/// pinned before the write (`before`: its [`pin::file_hash`] then, `None` when it did
/// not exist), so that Troupe's write never makes someone else's change look trusted.
pub fn pin_own_write(
    file: &Path,
    workspace: &Path,
    written: &Path,
    before: Option<&str>,
    write: WriteFile<'_>,
) -> Result<OwnWrite, TrustError> {
    let mut folders = load_trusted(file)?;
    let real = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let Some(by) = listed_above(&folders, &real) else {
        return Ok(OwnWrite::NotListed);
    };
    let written_real = match (written.parent(), written.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or_else(|_| written.to_path_buf()),
        _ => written.to_path_buf(),
    };
    // The user's own files are never pinned as a project's.
    if pin::user_dirs().iter().any(|d| written_real.starts_with(d)) {
        return Ok(OwnWrite::NotListed);
    }
    let Ok(rel) = written_real.strip_prefix(&by) else {
        return Ok(OwnWrite::Unpinned);
    };
    let rel: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let rel = rel.join("/");
    let pins = folders.pins.entry(pin_key(&by)).or_default();
    if pins.get(&rel).map(String::as_str) != before {
        return Ok(OwnWrite::Unpinned);
    }
    match pin::file_hash(&written_real) {
        Some(hash) => pins.insert(rel, hash),
        None => pins.remove(&rel),
    };
    save_trusted(file, &folders, write)?;
    Ok(OwnWrite::Pinned)
}

/// Removes `dir` from the trust file; returns whether it was listed, and the folder
/// above it that still trusts it, if any.
pub fn untrust_in(
    file: &Path,
    dir: &Path,
    write: WriteFile<'_>,
) -> Result<(bool, Option<PathBuf>), TrustError> {
    let real = real_dir(dir).unwrap_or_else(|_| super::expand_tilde(dir));
    let mut folders = load_trusted(file)?;
    let before = folders.trusted.len();
    folders.trusted.retain(|t| *t != real);
    let removed = folders.trusted.len() != before;
    folders.pins.remove(&pin_key(&real));
    if removed {
        save_trusted(file, &folders, write)?;
    }
    let still = match trust_state_in(file, &real) {
        TrustState::Trusted { by } => Some(by),
        _ => None,
    };
    Ok((removed, still))
}

/// The line printed on stderr when an untrusted folder's settings file is skipped.
pub fn skipped_notice(project_file: &Path) -> String {
    format!(
        "troupe: this folder is not trusted, so {} is not applied (trust it with `troupe trust`, or for one run with --skip-trust)",
        project_file.display()
    )
}

/// What a start says when `state` is [`TrustState::Changed`] (`None` otherwise):
/// which files changed since the folder was trusted, that nothing of the project's
/// configuration applies, and how to trust it again. Paths are sanitised.
pub fn changed_notice(state: &TrustState, workspace: &Path) -> Option<String> {
    let TrustState::Changed {
        by,
        changes,
        pinned,
    } = state
    else {
        return None;
    };
    let mut list: Vec<String> = changes
        .iter()
        .take(CHANGES_SHOWN)
        .map(|c| format!("  {c}"))
        .collect();
    if changes.len() > CHANGES_SHOWN {
        list.push(format!("  … and {} more", changes.len() - CHANGES_SHOWN));
    }
    let why = if *pinned {
        format!(
            "the project configuration of this folder changed since you trusted {}",
            by.display()
        )
    } else {
        format!(
            "{} was trusted before Troupe pinned trust to the configuration trusted, so what it holds now was never pinned",
            by.display()
        )
    };
    Some(format!(
        "troupe: {why}, so it is NOT applied (project settings, hooks, MCP servers, custom commands) until you trust it again:\n{}\nReview these files, then trust the folder again: `troupe trust` in {} (or answer the trust question of an interactive start there); --skip-trust trusts it for one run.",
        list.join("\n"),
        crate::engine::sanitize::one_line(&workspace.display().to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_untrust_and_inheritance() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("home/trusted_folders.toml");
        let parent = dir.path().join("p");
        let child = parent.join("c");
        std::fs::create_dir_all(&child).unwrap();
        let write = |path: &Path, bytes: &[u8]| {
            crate::platform::filesystem::owned_file::replace_private(path, bytes)
                .map_err(|e| e.to_string())
        };
        assert_eq!(trust_state_in(&file, &child), TrustState::Untrusted);
        let real_parent = trust_in(&file, &parent, &parent, &write).unwrap();
        assert!(trust_state_in(&file, &child).is_trusted());
        trust_in(&file, &child, &child, &write).unwrap();
        let (removed, still) = untrust_in(&file, &child, &write).unwrap();
        assert!(removed);
        assert_eq!(still, Some(real_parent));
        untrust_in(&file, &parent, &write).unwrap();
        assert_eq!(trust_state_in(&file, &child), TrustState::Untrusted);
        std::fs::write(&file, "trusted = 3").unwrap();
        assert_eq!(trust_state_in(&file, &child), TrustState::Untrusted);
        assert!(trust_in(&file, &child, &child, &write).is_err());
    }

    fn writer(path: &Path, bytes: &[u8]) -> Result<(), String> {
        crate::platform::filesystem::owned_file::replace_private(path, bytes)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_changed_configuration_is_not_trusted_until_trusted_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("home/trusted_folders.toml");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join(".troupe")).unwrap();
        std::fs::write(ws.join(".troupe/config.toml"), "[model]\n").unwrap();
        trust_in(&file, &ws, &ws, &writer).unwrap();
        assert!(trust_state_in(&file, &ws).is_trusted());
        std::fs::write(ws.join(".troupe/config.toml"), "[[hooks.SessionStart]]\n").unwrap();
        let state = trust_state_in(&file, &ws);
        assert!(!state.is_trusted(), "{state:?}");
        let notice = changed_notice(&state, &ws).unwrap();
        assert!(notice.contains("changed: .troupe/config.toml"), "{notice}");
        assert!(notice.contains("`troupe trust`"), "{notice}");
        // Troupe's own write of a file that was as pinned keeps the folder trusted.
        trust_in(&file, &ws, &ws, &writer).unwrap();
        let config = ws.join(".troupe/config.toml");
        let before = pin::file_hash(&config);
        std::fs::write(&config, "[model]\nmax_turns = 3\n").unwrap();
        let got = pin_own_write(&file, &ws, &config, before.as_deref(), &writer).unwrap();
        assert_eq!(got, OwnWrite::Pinned);
        assert!(trust_state_in(&file, &ws).is_trusted());
        // Someone else's change first: Troupe's write does not launder it.
        std::fs::write(&config, "planted").unwrap();
        let before = pin::file_hash(&config);
        std::fs::write(&config, "planted and ours").unwrap();
        let got = pin_own_write(&file, &ws, &config, before.as_deref(), &writer).unwrap();
        assert_eq!(got, OwnWrite::Unpinned);
        assert!(!trust_state_in(&file, &ws).is_trusted());
    }

    #[test]
    fn an_old_entry_without_a_pin_counts_as_changed_when_there_is_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("trusted_folders.toml");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        let real = std::fs::canonicalize(&ws).unwrap();
        std::fs::write(
            &file,
            format!("trusted = [{:?}]\n", real.display().to_string()),
        )
        .unwrap();
        // Only git's own files: nothing of the project's would apply.
        assert!(trust_state_in(&file, &ws).is_trusted());
        std::fs::create_dir_all(ws.join(".gemini")).unwrap();
        std::fs::write(ws.join(".gemini/settings.json"), "{}").unwrap();
        let state = trust_state_in(&file, &ws);
        assert!(
            matches!(state, TrustState::Changed { pinned: false, .. }),
            "{state:?}"
        );
        assert!(changed_notice(&state, &ws)
            .unwrap()
            .contains("before Troupe pinned trust"));
        trust_in(&file, &ws, &ws, &writer).unwrap();
        assert!(trust_state_in(&file, &ws).is_trusted());
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(".gemini/settings.json"), "{text}");
    }
}
