//! Where hook definitions come from: Troupe's own settings (`[[hooks.<Event>]]` tables
//! in `~/.troupe/config.toml` and `<workspace>/.troupe/config.toml`) and gemini-cli's
//! `hooks` JSON (`~/.gemini/settings.json`, `<workspace>/.gemini/settings.json`), so
//! hooks written for gemini-cli work unchanged. Each definition remembers whether it
//! came from the user or from the project: project hooks are subject to folder trust.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::protocol::hooks::HookEvent;

/// The default time a hook may run (gemini-cli: 60 s).
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// Who wrote a hook definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookOrigin {
    /// The user's own settings (Troupe home or `~/.gemini`).
    User,
    /// A file inside the workspace: runs only in a trusted folder.
    Project,
}

/// One hook: a command run at an event.
#[derive(Debug, Clone, PartialEq)]
pub struct HookDef {
    pub event: HookEvent,
    /// A regex on the tool name (tool events), or the exact source/reason/trigger
    /// (SessionStart/SessionEnd/PreCompress); empty or `*` matches everything.
    pub matcher: String,
    pub command: String,
    /// The name shown to the user (defaults to the command).
    pub name: String,
    pub timeout_ms: u64,
    pub sequential: bool,
    pub env: Vec<(String, String)>,
    pub origin: HookOrigin,
    /// The file it was read from.
    pub source: String,
}

impl HookDef {
    /// The key gemini-cli deduplicates and remembers hooks by.
    pub fn key(&self) -> String {
        format!("{}:{}", self.name, self.command)
    }
}

/// Everything read from the hook sources.
#[derive(Debug, Default)]
pub struct LoadedHooks {
    pub defs: Vec<HookDef>,
    /// Names or commands disabled by `hooks.disabled` / `hooksConfig.disabled`.
    pub disabled: HashSet<String>,
    /// Problems found while reading (unknown events, bad files), for the user.
    pub warnings: Vec<String>,
    /// `hooksConfig.enabled: false` (or `hooks.enabled = false`) somewhere.
    pub globally_disabled: bool,
}

/// The files hooks are read from, user files first.
pub struct HookSources {
    pub troupe_user: PathBuf,
    pub troupe_project: PathBuf,
    pub gemini_user: PathBuf,
    pub gemini_project: PathBuf,
}

impl HookSources {
    /// The standard locations for a session in `workspace`.
    pub fn standard(workspace: &Path) -> Self {
        let gemini_home = std::env::var_os("GEMINI_CLI_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(crate::settings::home_dir);
        Self {
            troupe_user: crate::settings::troupe_home().join("config.toml"),
            troupe_project: workspace.join(".troupe").join("config.toml"),
            gemini_user: gemini_home.join(".gemini").join("settings.json"),
            gemini_project: workspace.join(".gemini").join("settings.json"),
        }
    }
}

/// Reads every source; a file that cannot be read is reported and skipped.
pub fn load(sources: &HookSources) -> LoadedHooks {
    let mut out = LoadedHooks::default();
    read_toml(&sources.troupe_user, HookOrigin::User, &mut out);
    read_gemini(&sources.gemini_user, HookOrigin::User, &mut out);
    if sources.troupe_project != sources.troupe_user {
        read_toml(&sources.troupe_project, HookOrigin::Project, &mut out);
    }
    if sources.gemini_project != sources.gemini_user {
        read_gemini(&sources.gemini_project, HookOrigin::Project, &mut out);
    }
    let mut seen = HashSet::new();
    out.defs.retain(|d| seen.insert((d.event, d.key())));
    out
}

/// One `[[hooks.<Event>]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlHook {
    #[serde(default)]
    matcher: String,
    command: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    sequential: bool,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
}

fn read_toml(path: &Path, origin: HookOrigin, out: &mut LoadedHooks) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let source = path.display().to_string();
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            out.warnings
                .push(format!("Hooks in {source} were skipped: {e}"));
            return;
        }
    };
    let Some(toml::Value::Table(hooks)) = table.get("hooks") else {
        return;
    };
    for (key, value) in hooks {
        match (key.as_str(), value) {
            ("enabled", toml::Value::Boolean(false)) => out.globally_disabled = true,
            ("disabled", toml::Value::Array(names)) => out
                .disabled
                .extend(names.iter().filter_map(|n| n.as_str().map(str::to_string))),
            ("enabled" | "disabled" | "notifications", _) => {}
            (name, toml::Value::Array(entries)) => {
                let Some(event) = HookEvent::parse(name) else {
                    out.warnings.push(format!(
                        "Invalid hook event name: \"{name}\" in {source}. Skipping."
                    ));
                    continue;
                };
                for entry in entries {
                    match entry.clone().try_into::<TomlHook>() {
                        Ok(h) => out.defs.push(HookDef {
                            event,
                            matcher: h.matcher,
                            name: h.name.unwrap_or_else(|| h.command.clone()),
                            command: h.command,
                            timeout_ms: h.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).max(1),
                            sequential: h.sequential,
                            env: h.env.into_iter().collect(),
                            origin,
                            source: source.clone(),
                        }),
                        Err(e) => out
                            .warnings
                            .push(format!("A {name} hook in {source} was skipped: {e}")),
                    }
                }
            }
            (name, _) => out.warnings.push(format!(
                "hooks.{name} in {source} must be a list of tables. Skipping."
            )),
        }
    }
}

fn read_gemini(path: &Path, origin: HookOrigin, out: &mut LoadedHooks) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let source = path.display().to_string();
    let json: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            out.warnings
                .push(format!("Hooks in {source} were skipped: {e}"));
            return;
        }
    };
    if let Some(config) = json.get("hooksConfig") {
        if config.get("enabled") == Some(&Value::Bool(false)) {
            out.globally_disabled = true;
        }
        if let Some(names) = config.get("disabled").and_then(Value::as_array) {
            out.disabled
                .extend(names.iter().filter_map(|n| n.as_str().map(str::to_string)));
        }
    }
    let Some(hooks) = json.get("hooks").and_then(Value::as_object) else {
        return;
    };
    read_events(hooks, &source, origin, out);
}

/// The hooks of the enabled extensions (`hooks/hooks.json`, hydrated): the user's own,
/// as the user installed the extension.
pub fn add_extension_hooks(
    extensions: &crate::settings::extensions::LoadedExtensions,
    out: &mut LoadedHooks,
) {
    for ext in extensions.active() {
        if let Some(hooks) = ext.hooks.as_ref().and_then(Value::as_object) {
            let source = ext.path.join("hooks").join("hooks.json");
            read_events(hooks, &source.display().to_string(), HookOrigin::User, out);
        }
    }
    let mut seen = HashSet::new();
    out.defs.retain(|d| seen.insert((d.event, d.key())));
}

/// The definitions of a gemini-cli `hooks` object (event name to groups).
fn read_events(
    hooks: &serde_json::Map<String, Value>,
    source: &str,
    origin: HookOrigin,
    out: &mut LoadedHooks,
) {
    let source = source.to_string();
    for (name, groups) in hooks {
        let Some(event) = HookEvent::parse(name) else {
            out.warnings.push(format!(
                "Invalid hook event name: \"{name}\" in {source}. Skipping."
            ));
            continue;
        };
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let sequential = group.get("sequential").and_then(Value::as_bool) == Some(true);
            for hook in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = hook
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("command");
                let Some(command) = hook.get("command").and_then(Value::as_str) else {
                    out.warnings.push(format!(
                        "A {name} hook in {source} has no command. Skipping."
                    ));
                    continue;
                };
                if kind != "command" {
                    out.warnings.push(format!(
                        "A {name} hook in {source} has type \"{kind}\"; only \"command\" is supported. Skipping."
                    ));
                    continue;
                }
                let env = hook
                    .get("env")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                            .collect()
                    })
                    .unwrap_or_default();
                out.defs.push(HookDef {
                    event,
                    matcher: matcher.clone(),
                    name: hook
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or(command)
                        .to_string(),
                    command: command.to_string(),
                    timeout_ms: hook
                        .get("timeout")
                        .and_then(Value::as_u64)
                        .unwrap_or(DEFAULT_TIMEOUT_MS)
                        .max(1),
                    sequential,
                    env,
                    origin,
                    source: source.clone(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_formats_with_origins_and_dedup() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(
            &user,
            "[hooks]\ndisabled = [\"off\"]\n[[hooks.BeforeTool]]\nmatcher = \"read_file\"\ncommand = \"echo a\"\ntimeout_ms = 500\n[[hooks.Bogus]]\ncommand = \"x\"\n",
        )
        .unwrap();
        let gem = dir.path().join("settings.json");
        std::fs::write(
            &gem,
            r#"{"hooks":{"AfterTool":[{"matcher":"","sequential":true,"hooks":[{"type":"command","command":"echo b","name":"bee","timeout":10}]}],
                "BeforeTool":[{"hooks":[{"type":"command","command":"echo a","name":"echo a"}]}]}}"#,
        )
        .unwrap();
        let loaded = load(&HookSources {
            troupe_user: user,
            troupe_project: dir.path().join("none.toml"),
            gemini_user: dir.path().join("none.json"),
            gemini_project: gem,
        });
        assert_eq!(loaded.defs.len(), 2, "{:?}", loaded.defs);
        assert_eq!(loaded.defs[0].timeout_ms, 500);
        assert_eq!(loaded.defs[0].origin, HookOrigin::User);
        assert_eq!(loaded.defs[1].name, "bee");
        assert!(loaded.defs[1].sequential);
        assert_eq!(loaded.defs[1].origin, HookOrigin::Project);
        assert!(loaded.disabled.contains("off"));
        assert!(
            loaded.warnings[0].contains("Bogus"),
            "{:?}",
            loaded.warnings
        );
    }
}
