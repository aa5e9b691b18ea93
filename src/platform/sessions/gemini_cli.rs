//! gemini-cli's sessions of the same project, on a shared HOME: found where gemini-cli
//! keeps them (`~/.gemini/tmp/<project slug>/chats/`, `~` being `$GEMINI_CLI_HOME` when
//! set), listed beside Troupe's own, and never written: resuming one copies its file
//! into Troupe's store first (same name, same session id) and continues the copy.

use std::path::{Path, PathBuf};

use super::{slugify, write_atomic, SessionError, SessionInfo, SessionStore};

/// How many `<slug>-N` directories are looked at for the project's marker.
const SLUG_SUFFIXES_TRIED: usize = 100;

/// gemini-cli's home: `$GEMINI_CLI_HOME`, else `$HOME` (its `~`).
pub fn gemini_cli_home() -> PathBuf {
    std::env::var_os("GEMINI_CLI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(crate::settings::home_dir)
}

/// The `chats` directory gemini-cli keeps the sessions of the project rooted at `root`
/// in, under `home` (gemini-cli's `~`), if it has one: the slug `~/.gemini/projects.json`
/// names for the root, else a `tmp/<slug>[-N]` whose `.project_root` marker names it,
/// else the legacy `tmp/<sha256(root)>`.
pub fn chats_dir(home: &Path, root: &Path) -> Option<PathBuf> {
    let gemini = home.join(".gemini");
    let tmp = gemini.join("tmp");
    let root_text = root.display().to_string();
    let registered = std::fs::read_to_string(gemini.join("projects.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| {
            v.get("projects")?
                .get(&root_text)?
                .as_str()
                .map(str::to_string)
        })
        .filter(|slug| !slug.is_empty() && !slug.contains(['/', '\\']) && slug != "..");
    let base = slugify(
        &root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let marked = || {
        (0..SLUG_SUFFIXES_TRIED)
            .map(|n| match n {
                0 => base.clone(),
                n => format!("{base}-{n}"),
            })
            .take_while(|slug| tmp.join(slug).is_dir())
            .find(|slug| {
                std::fs::read_to_string(tmp.join(slug).join(".project_root"))
                    .is_ok_and(|owner| owner.trim_end() == root_text)
            })
    };
    let chats = registered
        .or_else(marked)
        .map(|slug| tmp.join(slug).join("chats"))
        .filter(|c| c.is_dir())
        .or_else(|| {
            let legacy = tmp
                .join(crate::platform::workspace::project_id(root))
                .join("chats");
            legacy.is_dir().then_some(legacy)
        })?;
    Some(chats)
}

impl SessionStore {
    /// Also lists gemini-cli's sessions of this project (from gemini-cli's home
    /// `home`), marked [`SessionInfo::gemini_cli`]; never writes there.
    pub fn with_gemini_cli(mut self, home: &Path, root: &Path) -> Self {
        self.gemini_chats = chats_dir(home, root).filter(|c| *c != self.chats);
        self
    }
}

/// A gemini-cli session made Troupe's: its file copied into Troupe's store under the
/// same name (a copy there already, from an earlier resume, is kept as it is). The
/// caller holds the session's lock.
pub fn adopt(store: &SessionStore, info: SessionInfo) -> Result<SessionInfo, SessionError> {
    if !info.gemini_cli {
        return Ok(info);
    }
    let name = info
        .path
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("session-{}.jsonl", info.session_id)));
    let copy = store.chats.join(name);
    if !copy.exists() {
        let bytes = std::fs::read(&info.path).map_err(|e| SessionError::io(&info.path, e))?;
        write_atomic(&copy, &bytes)?;
    }
    Ok(SessionInfo {
        path: copy,
        gemini_cli: false,
        ..info
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chats_dir_is_found_by_registry_marker_or_legacy_hash() {
        let home = tempfile::tempdir().unwrap();
        let tmp = home.path().join(".gemini/tmp");
        let root = Path::new("/w/My App");
        assert_eq!(chats_dir(home.path(), root), None);
        // Legacy: sha256 of the root.
        let legacy = tmp
            .join(crate::platform::workspace::project_id(root))
            .join("chats");
        std::fs::create_dir_all(&legacy).unwrap();
        assert_eq!(chats_dir(home.path(), root), Some(legacy));
        // A marker in `my-app-1` (`my-app` belongs to another root).
        for (slug, owner) in [("my-app", "/elsewhere/My App"), ("my-app-1", "/w/My App")] {
            std::fs::create_dir_all(tmp.join(slug).join("chats")).unwrap();
            std::fs::write(tmp.join(slug).join(".project_root"), owner).unwrap();
        }
        assert_eq!(
            chats_dir(home.path(), root),
            Some(tmp.join("my-app-1/chats"))
        );
        // The registry wins.
        std::fs::create_dir_all(tmp.join("chosen/chats")).unwrap();
        std::fs::write(
            home.path().join(".gemini/projects.json"),
            r#"{"projects":{"/w/My App":"chosen"}}"#,
        )
        .unwrap();
        assert_eq!(chats_dir(home.path(), root), Some(tmp.join("chosen/chats")));
    }
}
