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

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod discover;
pub use discover::discover;

/// The file, under the troupe home, that lists trusted folders.
pub const TRUSTED_FOLDERS_FILE: &str = "trusted_folders.toml";

/// Why a workspace is (or is not) trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// Listed in the trust file: this folder or the listed ancestor.
    Trusted { by: PathBuf },
    /// `--skip-trust`: trusted for this run only.
    SkippedForRun,
    /// Not listed (nothing in the workspace may widen what Troupe does).
    Untrusted,
}

impl TrustState {
    /// Whether project settings, MCP servers, hooks and commands of the workspace apply.
    pub fn is_trusted(&self) -> bool {
        !matches!(self, TrustState::Untrusted)
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
    let text = format!(
        "# Folders whose project settings Troupe applies (`troupe trust` / `troupe untrust`).\n{}",
        toml::to_string(folders).map_err(|e| err(&e))?
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
/// nothing).
pub fn trust_state_in(file: &Path, workspace: &Path) -> TrustState {
    let Ok(folders) = load_trusted(file) else {
        return TrustState::Untrusted;
    };
    let real = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    folders
        .trusted
        .iter()
        .filter(|t| real.starts_with(t))
        .max_by_key(|t| t.components().count())
        .map(|t| TrustState::Trusted { by: t.clone() })
        .unwrap_or(TrustState::Untrusted)
}

/// Whether `workspace` is trusted by the user's trust file.
pub fn is_trusted(workspace: &Path) -> TrustState {
    trust_state_in(&trust_file(), workspace)
}

/// Adds `dir` to the trust file; returns its real path.
pub fn trust_in(file: &Path, dir: &Path, write: WriteFile<'_>) -> Result<PathBuf, TrustError> {
    let real = real_dir(dir)?;
    let mut folders = load_trusted(file)?;
    if !folders.trusted.contains(&real) {
        folders.trusted.push(real.clone());
        folders.trusted.sort();
    }
    save_trusted(file, &folders, write)?;
    Ok(real)
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
        let real_parent = trust_in(&file, &parent, &write).unwrap();
        assert!(trust_state_in(&file, &child).is_trusted());
        trust_in(&file, &child, &write).unwrap();
        let (removed, still) = untrust_in(&file, &child, &write).unwrap();
        assert!(removed);
        assert_eq!(still, Some(real_parent));
        untrust_in(&file, &parent, &write).unwrap();
        assert_eq!(trust_state_in(&file, &child), TrustState::Untrusted);
        std::fs::write(&file, "trusted = 3").unwrap();
        assert_eq!(trust_state_in(&file, &child), TrustState::Untrusted);
        assert!(trust_in(&file, &child, &write).is_err());
    }
}
