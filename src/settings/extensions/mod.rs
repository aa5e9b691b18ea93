//! gemini-cli 0.61's extensions, read where it reads them: one folder per extension in
//! `~/.gemini/extensions/` (under `GEMINI_CLI_HOME` when set) holding
//! `gemini-extension.json` ([`manifest`]), or — for a linked one — only the install
//! metadata pointing at the folder it lives in. An enabled extension ([`enablement`])
//! brings its MCP servers (after the configured ones: a configured server of the same
//! name wins), its context files, `excludeTools`, custom commands (`commands/`), agent
//! skills (`skills/`), subagents (`agents/`), hooks (`hooks/hooks.json`) and policies
//! (`policies/*.toml`, extension tier, `allow` rules ignored).
//!
//! Extensions are the user's: they load in trusted and untrusted folders alike, as the
//! user's own MCP servers and hooks do. gemini-cli 0.61 has no workspace extensions; a
//! workspace's `.gemini/extensions/` is never loaded, and a start says so.

pub mod enablement;
pub mod manifest;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::settings::mcp::{McpServerConfig, Scope};
pub use enablement::Enablement;
pub use manifest::{InstallMetadata, Manifest, INSTALL_METADATA, MANIFEST};

/// One extension found in the extensions folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Extension {
    /// The manifest's `name`.
    pub name: String,
    /// The manifest's `version`.
    pub version: String,
    /// Its folder in the extensions folder.
    pub install_dir: PathBuf,
    /// The folder its files are read from: the install folder, or a link's source.
    pub path: PathBuf,
    /// Its `.gemini-extension-install.json` (none for a folder copied by hand).
    pub install: Option<InstallMetadata>,
    /// gemini-cli's id: the SHA-256 of the install source (else of the name).
    pub id: String,
    /// Enabled in the working folder (and by `-e`).
    pub active: bool,
    /// Enabled in the home folder (gemini-cli's "Enabled (User)").
    pub user_enabled: bool,
    /// Its `gemini-extension.json`, hydrated.
    pub manifest: Manifest,
    /// The context files that exist, absolute.
    pub context_files: Vec<PathBuf>,
    /// `hooks/hooks.json`'s `hooks` object, hydrated, when there is one.
    pub hooks: Option<serde_json::Value>,
}

impl Extension {
    /// The MCP servers it brings, as user servers (they start in untrusted folders too,
    /// as the user's own do), each with the environment policy's `pass` list.
    pub fn servers(&self, env_pass: &[String]) -> Vec<McpServerConfig> {
        self.manifest
            .mcp_servers
            .iter()
            .map(|(name, entry)| McpServerConfig {
                name: name.clone(),
                entry: entry.clone(),
                scope: Scope::User,
                blocked: None,
                env_pass: env_pass.to_vec(),
            })
            .collect()
    }

    /// A folder of the extension (`commands`, `skills`, `agents`, `policies`).
    pub fn dir(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

/// What the extensions folder holds for a session.
#[derive(Debug, Clone, Default)]
pub struct LoadedExtensions {
    /// Every extension that loaded, enabled or not, by folder name.
    pub all: Vec<Extension>,
    /// Folders skipped (gemini-cli's "Skipping extension in …" warnings), `-e` names
    /// that are no extension, and the workspace extensions not loaded.
    pub warnings: Vec<String>,
}

impl LoadedExtensions {
    /// The enabled ones.
    pub fn active(&self) -> impl Iterator<Item = &Extension> {
        self.all.iter().filter(|e| e.active)
    }

    /// `excludeTools` of the enabled ones, together.
    pub fn exclude_tools(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in self.active().flat_map(|e| &e.manifest.exclude_tools) {
            if !out.contains(name) {
                out.push(name.clone());
            }
        }
        out
    }

    /// `text` of `file` with `${extensionPath}` and the other variables replaced when the
    /// file belongs to an enabled extension (gemini-cli hydrates an extension's skills
    /// and agents so); other files' text as it is.
    pub fn hydrate_for(&self, file: &Path, text: &str, workspace: &Path) -> String {
        match self.active().find(|e| file.starts_with(&e.path)) {
            Some(ext) => manifest::hydrate_str(text, &manifest::hydration(&ext.path, workspace)),
            None => text.to_string(),
        }
    }

    /// The context files of the enabled ones, sorted and without repeats (gemini-cli's
    /// `getExtensionMemoryPaths`).
    pub fn context_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .active()
            .flat_map(|e| e.context_files.iter().cloned())
            .collect();
        files.sort();
        files.dedup();
        files
    }
}

/// gemini-cli's home (`GEMINI_CLI_HOME`, else `HOME`): the folder whose `.gemini`
/// holds the extensions, and whose path a user-scope enablement rule names.
pub fn gemini_home() -> PathBuf {
    crate::settings::skills::gemini_home()
}

/// The extensions folder: `~/.gemini/extensions`, shared with gemini-cli.
pub fn extensions_dir() -> PathBuf {
    gemini_home().join(".gemini").join("extensions")
}

/// SHA-256 in hex (gemini-cli's `hashValue`).
pub fn hash(value: &str) -> String {
    Sha256::digest(value.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Loads every extension of [`extensions_dir`] for a session in `workspace`, with the
/// `-e` names (`only`, empty when not given).
pub fn load(workspace: &Path, only: &[String]) -> LoadedExtensions {
    load_from(&extensions_dir(), &gemini_home(), workspace, only)
}

/// [`load`] with the folders explicit.
pub fn load_from(dir: &Path, home: &Path, workspace: &Path, only: &[String]) -> LoadedExtensions {
    let mut out = LoadedExtensions::default();
    let enablement = Enablement::new(dir, only);
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        match build(&sub, home, workspace, &enablement) {
            Ok(ext) if out.all.iter().any(|e| e.name == ext.name) => out.warnings.push(format!(
                "Skipping extension in {}: Extension with name {} already was loaded.",
                ext.path.display(),
                ext.name
            )),
            Ok(ext) => out.all.push(ext),
            Err(message) => out.warnings.push(format!(
                "Warning: Skipping extension in {}: {message}",
                sub.display()
            )),
        }
    }
    let names: Vec<&str> = out.all.iter().map(|e| e.name.as_str()).collect();
    for name in enablement.unknown_overrides(&names) {
        out.warnings.push(format!("Extension not found: {name}"));
    }
    if let Some(warning) = workspace_warning(workspace, dir) {
        out.warnings.push(warning);
    }
    out
}

/// The extensions of `~/.gemini/extensions` loaded into `settings`: the MCP servers of
/// the enabled ones added after the configured ones (a configured server of the same
/// name wins, as in gemini-cli), and their `excludeTools` applied to every server's
/// tools.
pub fn apply(settings: &mut crate::settings::Settings, workspace: &Path) {
    let loaded = load(workspace, &settings.extensions.only);
    for ext in loaded.active() {
        for server in ext.servers(&settings.environment.pass) {
            let taken = settings.mcp_servers.iter().any(|s| s.name == server.name)
                || settings
                    .untrusted_mcp_servers
                    .iter()
                    .any(|s| s.name == server.name);
            if taken {
                tracing::warn!(
                    "MCP server '{}' of extension '{}' is not started: the settings configure one of that name",
                    server.name,
                    ext.name
                );
                continue;
            }
            settings.mcp_servers.push(server);
        }
    }
    // gemini-cli drops an excluded MCP tool named plainly or `mcp_<server>_<tool>`.
    let excluded: Vec<String> = loaded
        .exclude_tools()
        .into_iter()
        .filter(|e| !e.contains('('))
        .collect();
    for server in &mut settings.mcp_servers {
        let prefix = format!("mcp_{}_", server.name);
        for name in &excluded {
            let tool = name.strip_prefix(&prefix).unwrap_or(name);
            if !server.entry.exclude_tools.iter().any(|t| t == tool) {
                server.entry.exclude_tools.push(tool.to_string());
            }
        }
    }
    settings.loaded_extensions = loaded;
}

/// One extension folder as gemini-cli's `_buildExtension` makes it.
fn build(
    install_dir: &Path,
    home: &Path,
    workspace: &Path,
    enablement: &Enablement,
) -> Result<Extension, String> {
    let install = manifest::read_install_metadata(install_dir);
    let path = match &install {
        Some(m) if m.kind == "link" => PathBuf::from(&m.source),
        _ => install_dir.to_path_buf(),
    };
    // gemini-cli's extension settings (user scope): `<install folder>/.env`.
    let env = std::fs::read_to_string(install_dir.join(".env"))
        .map(|t| manifest::parse_dotenv(&t))
        .unwrap_or_default();
    let mut manifest =
        manifest::load_with(&path, workspace, Some(&env)).map_err(|e| e.to_string())?;
    for (_, server) in &mut manifest.mcp_servers {
        for (name, value) in &env {
            server
                .env
                .entry(name.clone())
                .or_insert_with(|| value.clone());
        }
    }
    let context_files = manifest::context_file_names(&manifest)
        .iter()
        .filter_map(|n| match manifest::context_file_path(n, &path) {
            Ok(p) => Some(p),
            Err(why) => {
                tracing::warn!(
                    "Invalid contextFileName: \"{n}\" in extension \"{}\". {why}",
                    manifest.name
                );
                None
            }
        })
        .filter(|p| p.is_file())
        .collect();
    let id = hash(
        install
            .as_ref()
            .map(|m| m.source.as_str())
            .unwrap_or(&manifest.name),
    );
    Ok(Extension {
        name: manifest.name.clone(),
        version: manifest.version.clone(),
        install_dir: install_dir.to_path_buf(),
        hooks: read_hooks(&path, workspace),
        active: enablement.is_enabled(&manifest.name, workspace),
        user_enabled: enablement.is_enabled(&manifest.name, home),
        path,
        install,
        id,
        manifest,
        context_files,
    })
}

/// `hooks/hooks.json`'s `hooks` object, hydrated (gemini-cli's `loadExtensionHooks`);
/// `None` when there is none or it is not an object.
fn read_hooks(path: &Path, workspace: &Path) -> Option<serde_json::Value> {
    let file = path.join("hooks").join("hooks.json");
    let text = std::fs::read_to_string(&file).ok()?;
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(
                "Failed to load extension hooks from {}: {e}",
                file.display()
            );
            return None;
        }
    };
    let hooks = json.get("hooks").filter(|h| h.is_object())?;
    Some(manifest::hydrate(
        hooks,
        &manifest::hydration(path, workspace),
    ))
}

/// What a start says about extension folders in the workspace (`.gemini/extensions/`,
/// `.troupe/extensions/`): they are not loaded, trusted folder or not.
fn workspace_warning(workspace: &Path, user_dir: &Path) -> Option<String> {
    let found: Vec<PathBuf> = [".gemini", ".troupe"]
        .iter()
        .map(|d| workspace.join(d).join("extensions"))
        .filter(|d| d != user_dir)
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.join(MANIFEST).is_file())
        .collect();
    if found.is_empty() {
        return None;
    }
    Some(format!(
        "Not loading {} extension(s) of this workspace ({}): extensions load only from {} (install one with `troupe extensions install PATH`).",
        found.len(),
        found
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        user_dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn installed_and_linked_folders_load_with_their_context_and_hooks() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, home, ws) = (tmp.path().join("exts"), tmp.path(), tmp.path().join("ws"));
        write(
            &dir.join("a").join(MANIFEST),
            r#"{"name":"a","version":"1.0.0","contextFileName":["A.md","missing.md"]}"#,
        );
        write(&dir.join("a").join("A.md"), "context a");
        write(
            &dir.join("a").join("hooks").join("hooks.json"),
            r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"sh ${extensionPath}/x.sh"}]}]}}"#,
        );
        let src = tmp.path().join("src-b");
        write(&src.join(MANIFEST), r#"{"name":"b","version":"2"}"#);
        write(&src.join("GEMINI.md"), "context b");
        write(
            &dir.join("b").join(INSTALL_METADATA),
            &format!(r#"{{"source":"{}","type":"link"}}"#, src.display()),
        );
        write(&dir.join("broken").join(MANIFEST), "{");
        write(&ws.join(".gemini/extensions/c").join(MANIFEST), "{}");
        let loaded = load_from(&dir, home, &ws, &[]);
        let names: Vec<&str> = loaded.all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(loaded.all[1].path, src);
        assert_eq!(loaded.all[1].id, hash(&src.display().to_string()));
        assert_eq!(loaded.all[0].id, hash("a"));
        assert_eq!(
            loaded.context_files(),
            [dir.join("a").join("A.md"), src.join("GEMINI.md")]
        );
        let hook = &loaded.all[0].hooks.as_ref().unwrap()["SessionStart"][0]["hooks"][0];
        assert_eq!(
            hook["command"],
            format!("sh {}/x.sh", dir.join("a").display())
        );
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].starts_with("Warning: Skipping extension in "));
        assert!(loaded.warnings[1].starts_with("Not loading 1 extension(s) of this workspace"));
        let only = load_from(&dir, home, &ws, &["b".into(), "zzz".into()]);
        assert!(!only.all[0].active && only.all[1].active);
        assert!(only
            .warnings
            .contains(&"Extension not found: zzz".to_string()));
    }
}
