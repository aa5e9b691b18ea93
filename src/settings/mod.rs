//! Layered settings: the embedded defaults (`config/default.toml`), then the user's
//! `~/.troupe/config.toml`, the project's `.troupe/config.toml`, `TROUPE_*` environment
//! variables and `-c key.path=value` flags, strongest last. Every key must exist in the
//! defaults and keep its type; each effective value remembers where it came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

pub mod agents;
mod describe;
pub mod extension_trust;
pub mod extensions;
pub mod hook_trust;
pub mod hooks;
pub mod mcp;
mod merge;
pub mod policy;
pub mod profiles;
pub mod secrets;
mod sections;
pub mod skills;
pub mod trust;

pub use describe::{env_fallback, Entry, PROVIDER_ENV_FALLBACKS};
use mcp::McpServerConfig;
pub use merge::leaf_keys;
use merge::{lookup, merge_layer, parse_scalar, set_path};
use sections::check_values;
pub use sections::*;

/// The embedded defaults.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

/// A settings file or flag that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// `hint`: `; did you mean `model.max_turns`?` when a known key is near, or empty.
    #[error("unknown setting `{key}` in {origin}{hint}")]
    UnknownKey {
        key: String,
        origin: String,
        hint: String,
    },
    #[error("setting `{key}` in {origin} must be {expected}, got {found}")]
    WrongType {
        key: String,
        origin: String,
        expected: String,
        found: String,
    },
    #[error("setting `{key}` in {origin}: {message}")]
    BadValue {
        key: String,
        origin: String,
        message: String,
    },
    #[error("cannot parse {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("cannot read {origin}: {message}")]
    Io { origin: String, message: String },
}

/// Where a value came from.
pub type Origin = String;

/// The merged settings with the origin of every leaf key.
#[derive(Debug, Clone)]
pub struct LoadedSettings {
    pub settings: Settings,
    pub table: Table,
    pub origins: BTreeMap<String, Origin>,
    /// Whether the workspace is trusted (its project settings applied). Extension
    /// points that start processes or widen permissions check this.
    pub trusted: bool,
    /// The project settings file that exists but was not applied (untrusted folder).
    pub skipped_project_file: Option<PathBuf>,
    /// The settings files applied, as their origins read, with what each is (`user
    /// file`, `project file`).
    pub layer_files: Vec<(Origin, &'static str)>,
}

/// Troupe's home directory: `$TROUPE_HOME`, else `~/.troupe`.
pub fn troupe_home() -> PathBuf {
    if let Some(dir) = std::env::var_os("TROUPE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    home_dir().join(".troupe")
}

/// `$HOME`, or `/` when unset.
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// `~` and `~/…` expanded to the home directory.
pub fn expand_tilde(path: &Path) -> PathBuf {
    match path.to_str() {
        Some("~") => home_dir(),
        Some(p) if p.starts_with("~/") => home_dir().join(&p[2..]),
        _ => path.to_path_buf(),
    }
}

/// Loads every layer for a session in `workspace`, applying `overrides` (`key=value`);
/// the project file applies only when the folder is trusted (see [`trust`]).
pub fn load(workspace: &Path, overrides: &[String]) -> Result<LoadedSettings, SettingsError> {
    load_in(
        workspace,
        overrides,
        trust::is_trusted(workspace).is_trusted(),
    )
}

/// [`load`] with the trust decision made by the caller (`--skip-trust`, the prompt).
/// A folder left untrusted because its configuration changed since it was trusted
/// gets the notice saying so ([`Settings::trust_notice`]).
pub fn load_in(
    workspace: &Path,
    overrides: &[String],
    trusted: bool,
) -> Result<LoadedSettings, SettingsError> {
    let mut loaded = load_for_trust(
        &troupe_home().join("config.toml"),
        workspace,
        &crate::settings::secrets::env_vars(),
        overrides,
        trusted,
    )?;
    let places = policy::PolicyPlaces {
        home: home_dir(),
        troupe_home: troupe_home(),
        system_dir: PathBuf::from(policy::SYSTEM_POLICIES_DIR),
        cwd: workspace.to_path_buf(),
    };
    extensions::apply(&mut loaded.settings, workspace);
    loaded.settings.loaded_policy = policy::load(&loaded.settings, &places);
    let allowed = loaded.settings.mcp.allowed.clone();
    if !allowed.is_empty() && !allowed.iter().any(|a| a == "*") {
        // gemini-cli's allowedMcpServers: the other servers do not start.
        loaded
            .settings
            .mcp_servers
            .retain(|server| allowed.contains(&server.name));
    }
    if !trusted {
        let state = trust::is_trusted(workspace);
        if let Some(notice) = trust::changed_notice(&state, workspace) {
            for server in &mut loaded.settings.untrusted_mcp_servers {
                server.blocked = Some(format!(
                    "MCP server '{}' is configured in the project settings, which are not applied: they changed since the folder was trusted (trust it again with `troupe trust`).",
                    server.name
                ));
            }
            loaded.settings.trust_notice = Some(notice);
        }
    }
    Ok(loaded)
}

/// [`load_in`] with the user file and environment explicit (for tests).
pub fn load_for_trust(
    user_file: &Path,
    workspace: &Path,
    env: &[(String, String)],
    overrides: &[String],
    trusted: bool,
) -> Result<LoadedSettings, SettingsError> {
    let project = workspace.join(".troupe").join("config.toml");
    let applied = if trusted {
        project.clone()
    } else {
        PathBuf::new()
    };
    let mut loaded = load_with(user_file, &applied, env, overrides)?;
    loaded.trusted = trusted;
    loaded.settings.trusted = trusted;
    if !trusted && project.is_file() {
        loaded.settings.untrusted_mcp_servers =
            crate::settings::mcp::untrusted_project_servers(&project, &loaded.settings.mcp_servers);
        loaded.skipped_project_file = Some(project);
    }
    Ok(loaded)
}

/// [`load`] with every input explicit (for tests).
pub fn load_with(
    user_file: &Path,
    project_file: &Path,
    env: &[(String, String)],
    overrides: &[String],
) -> Result<LoadedSettings, SettingsError> {
    let mut table: Table =
        DEFAULT_TOML
            .parse()
            .map_err(|e: toml::de::Error| SettingsError::Parse {
                origin: "built-in defaults".into(),
                message: e.to_string(),
            })?;
    let defaults = table.clone();
    let mut origins = BTreeMap::new();
    for key in leaf_keys(&defaults) {
        origins.insert(key, "default".to_string());
    }
    let (mut mcp_servers, layer_files) =
        merge_files(user_file, project_file, &defaults, &mut table, &mut origins)?;
    merge_env(env, &defaults, &mut table, &mut origins)?;
    merge_flags(overrides, &defaults, &mut table, &mut origins)?;
    let mut settings: Settings =
        Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| SettingsError::Parse {
                origin: "merged settings".into(),
                message: e.to_string(),
            })?;
    check_values(&settings, &origins)?;
    let allowed_origin = origins
        .get("approval.allowed")
        .cloned()
        .unwrap_or_else(|| "default".to_string());
    settings.approval.allowed_is_saved =
        allowed_origin == "default" || allowed_origin == user_file.display().to_string();
    settings.approval.allowed_origin = allowed_origin;
    settings.trusted = true;
    for server in &mut mcp_servers {
        server.env_pass = settings.environment.pass.clone();
    }
    settings.mcp_servers = mcp_servers;
    let mut loaded = LoadedSettings {
        settings,
        table,
        origins,
        trusted: true,
        skipped_project_file: None,
        layer_files,
    };
    crate::settings::mcp::gate_project_servers(&mut loaded);
    Ok(loaded)
}

/// The effective settings `table` (with its `origins`) changed by one `key=value`
/// override, checked exactly as a `-c` flag is: an unknown key, a value of the wrong
/// type or a bad value is refused with the loader's message. For `/settings KEY VALUE`,
/// whose origin reads `origin`. The MCP servers and trust facts are not part of the
/// result.
pub fn with_override(
    table: &Table,
    origins: &BTreeMap<String, Origin>,
    flag: &str,
    origin: &str,
) -> Result<(Settings, Table, BTreeMap<String, Origin>), SettingsError> {
    let defaults: Table =
        DEFAULT_TOML
            .parse()
            .map_err(|e: toml::de::Error| SettingsError::Parse {
                origin: "built-in defaults".into(),
                message: e.to_string(),
            })?;
    let (mut table, mut origins) = (table.clone(), origins.clone());
    merge_flags(&[flag.to_string()], &defaults, &mut table, &mut origins)
        .map_err(|e| with_origin(e, origin))?;
    let key = flag.split_once('=').map_or(flag, |(k, _)| k).trim();
    if let Some(o) = origins.get_mut(key) {
        *o = origin.to_string();
    }
    let settings: Settings =
        Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| SettingsError::Parse {
                origin: origin.to_string(),
                message: e.to_string(),
            })?;
    check_values(&settings, &origins)?;
    Ok((settings, table, origins))
}

/// `error` said to come from `origin`.
fn with_origin(error: SettingsError, origin: &str) -> SettingsError {
    let origin = origin.to_string();
    match error {
        SettingsError::UnknownKey { key, hint, .. } => {
            SettingsError::UnknownKey { key, origin, hint }
        }
        SettingsError::WrongType {
            key,
            expected,
            found,
            ..
        } => SettingsError::WrongType {
            key,
            origin,
            expected,
            found,
        },
        SettingsError::BadValue { key, message, .. } => SettingsError::BadValue {
            key,
            origin,
            message,
        },
        SettingsError::Parse { message, .. } => SettingsError::Parse { origin, message },
        SettingsError::Io { message, .. } => SettingsError::Io { origin, message },
    }
}

/// The user and project files merged in, weakest first: the MCP servers they
/// declare (taken out of the tables) and the files applied, with what each is.
fn merge_files(
    user_file: &Path,
    project_file: &Path,
    defaults: &Table,
    table: &mut Table,
    origins: &mut BTreeMap<String, Origin>,
) -> Result<(Vec<McpServerConfig>, Vec<LayerFile>), SettingsError> {
    let mut mcp_servers = Vec::new();
    let mut layer_files = Vec::new();
    for (file, scope) in [
        (user_file, crate::settings::mcp::Scope::User),
        (project_file, crate::settings::mcp::Scope::Project),
    ] {
        if file.as_os_str().is_empty() || !file.exists() {
            continue;
        }
        let source = file.display().to_string();
        layer_files.push((
            source.clone(),
            match scope {
                crate::settings::mcp::Scope::User => "user file",
                crate::settings::mcp::Scope::Project => "project file",
            },
        ));
        let text = std::fs::read_to_string(file).map_err(|e| SettingsError::Io {
            origin: source.clone(),
            message: e.to_string(),
        })?;
        let mut layer: Table = text
            .parse()
            .map_err(|e: toml::de::Error| SettingsError::Parse {
                origin: source.clone(),
                message: e.to_string(),
            })?;
        crate::settings::mcp::take_servers(&mut layer, scope, &source, &mut mcp_servers)?;
        merge_layer(defaults, table, &layer, "", &source, origins)?;
    }
    Ok((mcp_servers, layer_files))
}

/// A settings file applied, as its origin reads, with what it is (`user file`, …).
type LayerFile = (Origin, &'static str);

/// `TROUPE_<KEY>` environment variables merged in (one for every key of the defaults).
fn merge_env(
    env: &[(String, String)],
    defaults: &Table,
    table: &mut Table,
    origins: &mut BTreeMap<String, Origin>,
) -> Result<(), SettingsError> {
    for key in leaf_keys(defaults) {
        let var = format!("TROUPE_{}", key.replace('.', "_").to_ascii_uppercase());
        if let Some((_, raw)) = env.iter().find(|(k, _)| *k == var) {
            let source = format!("environment variable {var}");
            set_path(defaults, table, &key, parse_scalar(raw), &source, origins)?;
        }
    }
    Ok(())
}

/// `-c key.path=value` flags merged in, in order.
fn merge_flags(
    overrides: &[String],
    defaults: &Table,
    table: &mut Table,
    origins: &mut BTreeMap<String, Origin>,
) -> Result<(), SettingsError> {
    for flag in overrides {
        let source = format!("flag -c {flag}");
        let (key, raw) = flag.split_once('=').ok_or_else(|| SettingsError::Parse {
            origin: source.clone(),
            message: "expected key.path=value".into(),
        })?;
        set_path(
            defaults,
            table,
            key.trim(),
            parse_scalar(raw.trim()),
            &source,
            origins,
        )
        .map_err(|e| without_value(e, key.trim()))?;
    }
    Ok(())
}

/// A `-c` error that names the flag without its value (a mistyped key must not print
/// the API key given with it).
fn without_value(error: SettingsError, key: &str) -> SettingsError {
    let origin = format!("flag -c {key}=…");
    match error {
        SettingsError::UnknownKey { key, hint, .. } => {
            SettingsError::UnknownKey { key, origin, hint }
        }
        SettingsError::WrongType {
            key,
            expected,
            found,
            ..
        } => SettingsError::WrongType {
            key,
            origin,
            expected,
            found,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_override_is_checked_as_a_flag_and_named_by_its_origin() {
        let dir = tempfile::tempdir().unwrap();
        let none = dir.path().join("none.toml");
        let loaded = load_with(&none, &none, &[], &[]).unwrap();
        let (settings, _, origins) = with_override(
            &loaded.table,
            &loaded.origins,
            "model.max_turns=30",
            "/settings",
        )
        .unwrap();
        assert_eq!(settings.model.max_turns, 30);
        assert_eq!(origins["model.max_turns"], "/settings");
        let unknown = with_override(
            &loaded.table,
            &loaded.origins,
            "model.max_turn=3",
            "/settings",
        );
        assert!(
            matches!(unknown, Err(SettingsError::UnknownKey { origin, .. }) if origin == "/settings")
        );
        let bad = with_override(&loaded.table, &loaded.origins, "ui.theme=pink", "/settings");
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("is not one of default, light, no-color"));
    }

    #[test]
    fn layers_apply_in_order_and_remember_origin() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        let project = dir.path().join("project.toml");
        std::fs::write(&user, "[model]\nmax_turns = 7\nname = \"u\"\n").unwrap();
        std::fs::write(&project, "[model]\nmax_turns = 9\n").unwrap();
        let env = vec![("TROUPE_MODEL_NAME".to_string(), "from-env".to_string())];
        let loaded = load_with(&user, &project, &env, &["tools.fs_threads=2".into()]).unwrap();
        assert_eq!(loaded.settings.model.max_turns, 9);
        assert_eq!(loaded.settings.model.name, "from-env");
        assert_eq!(loaded.settings.tools.fs_threads, 2);
        assert_eq!(
            loaded.origins["model.max_turns"],
            project.display().to_string()
        );
        assert!(loaded
            .describe()
            .contains("tools.fs_threads = 2  # flag -c tools.fs_threads=2"));
    }

    #[test]
    fn untrusted_project_file_is_not_applied() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".troupe")).unwrap();
        std::fs::write(
            dir.path().join(".troupe/config.toml"),
            "[approval]\nmode = \"yolo\"\n",
        )
        .unwrap();
        let none = Path::new("/nonexistent");
        let untrusted = load_for_trust(none, dir.path(), &[], &[], false).unwrap();
        assert_eq!(untrusted.settings.approval.mode, "default");
        assert!(!untrusted.trusted && !untrusted.settings.trusted);
        assert!(untrusted.skipped_project_file.is_some());
        let trusted = load_for_trust(none, dir.path(), &[], &[], true).unwrap();
        assert_eq!(trusted.settings.approval.mode, "yolo");
        assert!(trusted.settings.trusted && trusted.skipped_project_file.is_none());
        let flag = load_for_trust(
            none,
            dir.path(),
            &[],
            &["approval.mode=default".into()],
            true,
        )
        .unwrap();
        assert_eq!(flag.settings.approval.mode, "default");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_key_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(&user, "[model]\nmax_turnz = 7\n").unwrap();
        let err = load_with(&user, Path::new("/nonexistent"), &[], &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unknown setting `model.max_turnz` in {}; did you mean `model.max_turns`?",
                user.display()
            )
        );
        std::fs::write(&user, "[model]\nmax_turns = \"many\"\n").unwrap();
        let err = load_with(&user, Path::new("/nonexistent"), &[], &[]).unwrap_err();
        assert!(err.to_string().contains("`model.max_turns`"), "{err}");
        assert!(err.to_string().contains("must be an integer"), "{err}");
        let err = load_with(
            Path::new("/nonexistent"),
            Path::new("/nonexistent"),
            &[],
            &["approval.mode=sometimes".into()],
        )
        .unwrap_err();
        assert!(err.to_string().contains("approval.mode"), "{err}");
    }

    #[test]
    fn model_sections_parse_and_check() {
        let none = Path::new("/nonexistent");
        let loaded = load_with(
            none,
            none,
            &[],
            &[
                "model.temperature=0".into(),
                "model.compression.token_limits=qwen*=8192".into(),
            ],
        )
        .unwrap();
        let model = &loaded.settings.model;
        assert_eq!(model.temperature, 0.0);
        assert_eq!(model.compression.token_limit("qwen2.5"), 8192);
        assert_eq!(model.compression.token_limit("other"), 131072);
        assert_eq!(model.retry.max_attempts, 10);
        let keyed = load_with(none, none, &[], &["model.gemini.api_key=secret".into()]).unwrap();
        assert!(keyed
            .describe()
            .contains("model.gemini.api_key = set  # flag -c model.gemini.api_key"));
        assert!(!keyed.describe().contains("secret"));
        let err =
            load_with(none, none, &[], &["model.compression.threshold=2".into()]).unwrap_err();
        assert!(
            err.to_string().contains("model.compression.threshold"),
            "{err}"
        );
        let err = load_with(
            none,
            none,
            &[],
            &["model.compression.token_limits=gemini".into()],
        )
        .unwrap_err();
        assert!(err.to_string().contains("model=tokens"), "{err}");
    }
}
