//! `gemini-extension.json` as gemini-cli 0.61 reads it (`loadExtensionConfig` of its
//! extension manager): `name` and `version` required, every string hydrated
//! (`${extensionPath}`, `${workspacePath}`, `${/}`, `${pathSeparator}`; other `${…}`
//! left as written), the name made only of letters, digits and dashes. Also the
//! install metadata (`.gemini-extension-install.json`) and the context file names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::settings::mcp::ServerEntry;

/// The manifest's file name.
pub const MANIFEST: &str = "gemini-extension.json";
/// The install metadata's file name (in the installed folder).
pub const INSTALL_METADATA: &str = ".gemini-extension-install.json";

/// Why a manifest could not be used (gemini-cli's words).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ManifestError {
    #[error("Configuration file not found at {}", .0.display())]
    Missing(PathBuf),
    #[error("Failed to load extension config from {}: {message}", path.display())]
    Bad { path: PathBuf, message: String },
}

/// `.gemini-extension-install.json`: where an installed extension came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallMetadata {
    /// The folder (absolute) or URL it was installed from; a link's folder.
    pub source: String,
    /// `local`, `link`, `git` or `github-release`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The git ref installed (`--ref`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#ref: Option<String>,
    #[serde(
        default,
        rename = "releaseTag",
        skip_serializing_if = "Option::is_none"
    )]
    /// The GitHub release installed (gemini-cli's release downloads).
    pub release_tag: Option<String>,
}

/// Reads the install metadata of an installed folder (none when absent or bad).
pub fn read_install_metadata(dir: &Path) -> Option<InstallMetadata> {
    let text = std::fs::read_to_string(dir.join(INSTALL_METADATA)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The parts of a manifest Troupe uses, hydrated.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// `name`: letters, digits and dashes.
    pub name: String,
    /// `version`, as written (a number is kept as its text).
    pub version: String,
    /// `description`, when a string.
    pub description: Option<String>,
    /// `mcpServers`, in the file's order, as Troupe's server entries (`trust` dropped,
    /// as gemini-cli drops it).
    pub mcp_servers: Vec<(String, ServerEntry)>,
    /// `contextFileName` as written (a string or a list); `None` when absent.
    pub context_file_names: Option<Vec<String>>,
    /// `excludeTools`: tool names, or `run_shell_command(PREFIX)`.
    pub exclude_tools: Vec<String>,
    /// The whole hydrated manifest (for `validate` and the consent text).
    pub raw: Value,
}

/// The values `${…}` may name in a manifest or a hooks file.
pub fn hydration(extension_path: &Path, workspace: &Path) -> BTreeMap<&'static str, String> {
    let sep = std::path::MAIN_SEPARATOR.to_string();
    BTreeMap::from([
        ("extensionPath", extension_path.display().to_string()),
        ("workspacePath", workspace.display().to_string()),
        ("/", sep.clone()),
        ("pathSeparator", sep),
    ])
}

/// gemini-cli's `hydrateString`: `${key}` replaced by its value, unknown keys kept.
pub fn hydrate_str(text: &str, values: &BTreeMap<&'static str, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                let key = &after[..end];
                match values.get(key) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 2 + end + 1]),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every string of `value` hydrated (gemini-cli's `recursivelyHydrateStrings`; the
/// keys `__proto__`, `constructor` and `prototype` dropped as it drops them).
pub fn hydrate(value: &Value, values: &BTreeMap<&'static str, String>) -> Value {
    match value {
        Value::String(s) => Value::String(hydrate_str(s, values)),
        Value::Array(items) => Value::Array(items.iter().map(|v| hydrate(v, values)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "__proto__" | "constructor" | "prototype"))
                .map(|(k, v)| (k.clone(), hydrate(v, values)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `value` with `f` applied to every string in it.
fn map_strings(value: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), map_strings(v, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// gemini-cli's `resolveEnvVarsInString` (`$NAME`, `${NAME}`, `${NAME:-default}`):
/// `env` first, then the process environment, then the default; else kept.
pub fn resolve_env(text: &str, env: &BTreeMap<String, String>) -> String {
    static PATTERN: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let Some(pattern) =
        PATTERN.get_or_init(|| regex::Regex::new(r"\$(?:(\w+)|\{([^}]+?)(?::-([^}]*))?\})").ok())
    else {
        return text.to_string();
    };
    pattern
        .replace_all(text, |caps: &regex::Captures<'_>| {
            let name = caps
                .get(1)
                .or_else(|| caps.get(2))
                .map_or("", |m| m.as_str());
            env.get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
                .or_else(|| caps.get(3).map(|d| d.as_str().to_string()))
                .unwrap_or_else(|| caps[0].to_string())
        })
        .into_owned()
}

/// A `.env` file's variables (dotenv's format: `NAME=value` lines, `export ` allowed,
/// `#` comments, values in single or double quotes; `\n` in double quotes).
pub fn parse_dotenv(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let inner = value[1..].split(q).next().unwrap_or("");
                match q {
                    '"' => inner.replace("\\n", "\n"),
                    _ => inner.to_string(),
                }
            }
            _ => value.split(" #").next().unwrap_or("").trim().to_string(),
        };
        out.insert(name.to_string(), value);
    }
    out
}

/// gemini-cli's `validateName`.
pub fn check_name(name: &str) -> Result<(), String> {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Ok(());
    }
    Err(format!(
        "Invalid extension name: \"{name}\". Only letters (a-z, A-Z), numbers (0-9), and dashes (-) are allowed."
    ))
}

/// Reads and hydrates the manifest of the extension in `dir`.
pub fn load(dir: &Path, workspace: &Path) -> Result<Manifest, ManifestError> {
    load_with(dir, workspace, None)
}

/// [`load`], then — with `env`, as a session loads an installed extension — every
/// `$VAR`, `${VAR}` and `${VAR:-default}` replaced from `env` (the extension's `.env`
/// settings), else from Troupe's environment (gemini-cli's `resolveEnvVarsInObject`;
/// the model API keys are not in that environment), an unknown one kept as written.
pub fn load_with(
    dir: &Path,
    workspace: &Path,
    env: Option<&BTreeMap<String, String>>,
) -> Result<Manifest, ManifestError> {
    let path = dir.join(MANIFEST);
    if !path.exists() {
        return Err(ManifestError::Missing(path));
    }
    let bad = |message: String| ManifestError::Bad {
        path: path.clone(),
        message,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
    let raw: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let field = |key: &str| {
        raw.get(key)
            .filter(|v| !matches!(v, Value::Null | Value::Bool(false)))
            .filter(|v| v.as_str() != Some(""))
    };
    if field("name").is_none() || field("version").is_none() {
        let which = if field("name").is_none() {
            "\"name\""
        } else {
            "\"version\""
        };
        return Err(bad(format!(
            "Invalid configuration in {}: missing {which}",
            path.display()
        )));
    }
    let mut raw = hydrate(&raw, &hydration(dir, workspace));
    if let Some(env) = env {
        raw = map_strings(&raw, &|text| resolve_env(text, env));
    }
    let text_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let name = text_of(&raw["name"]);
    check_name(&name).map_err(bad)?;
    let mut mcp_servers = Vec::new();
    if let Some(servers) = raw.get("mcpServers").and_then(Value::as_object) {
        for (key, server) in servers {
            let entry = server_entry(server).map_err(|e| bad(format!("mcpServers.{key}: {e}")))?;
            mcp_servers.push((key.clone(), entry));
        }
    }
    let context_file_names = match raw.get("contextFileName") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items.iter().map(text_of).collect()),
        Some(other) => Some(vec![text_of(other)]),
    };
    let exclude_tools = raw
        .get("excludeTools")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(text_of).collect())
        .unwrap_or_default();
    Ok(Manifest {
        name,
        version: text_of(&raw["version"]),
        description: raw
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        mcp_servers,
        context_file_names,
        exclude_tools,
        raw,
    })
}

/// One of gemini-cli's `mcpServers` entries (camelCase JSON) as Troupe's entry:
/// `httpUrl` is a streamable-HTTP `url`, `timeout` is in milliseconds, `trust` is
/// dropped (an extension cannot trust its own server); fields Troupe has no use for
/// (`oauth`, `authProviderType`, `tcp`, …) are left out.
pub fn server_entry(server: &Value) -> Result<ServerEntry, String> {
    let strings = |key: &str| -> Vec<String> {
        server
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let map = |key: &str| -> BTreeMap<String, String> {
        server
            .get(key)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let text = |key: &str| server.get(key).and_then(Value::as_str).map(str::to_string);
    let http_url = text("httpUrl");
    let mut entry = ServerEntry {
        command: text("command"),
        args: strings("args"),
        env: map("env"),
        cwd: text("cwd"),
        url: http_url.clone().or_else(|| text("url")),
        transport: match (&http_url, text("type")) {
            (Some(_), _) => Some("http".to_string()),
            (None, Some(t)) if t == "streamable-http" => Some("http".to_string()),
            (None, t) => t,
        },
        headers: map("headers"),
        timeout_ms: server.get("timeout").and_then(Value::as_u64),
        trust: false,
        description: text("description"),
        include_tools: strings("includeTools"),
        exclude_tools: strings("excludeTools"),
        enabled: None,
    };
    if entry.command.is_none() && entry.url.is_none() {
        return Err("needs `command` (stdio) or `url`/`httpUrl`".to_string());
    }
    if entry.command.is_some() {
        entry.transport = None;
    }
    Ok(entry)
}

/// gemini-cli's context file names of a manifest: `contextFileName`, else `GEMINI.md`.
pub fn context_file_names(manifest: &Manifest) -> Vec<String> {
    manifest
        .context_file_names
        .clone()
        .unwrap_or_else(|| vec!["GEMINI.md".to_string()])
}

/// gemini-cli's `validateContextFilePath`: the file's path inside `root`, or why not.
pub fn context_file_path(name: &str, root: &Path) -> Result<PathBuf, String> {
    if name.trim().is_empty() {
        return Err("expected a non-empty string.".to_string());
    }
    if name.contains('\0') {
        return Err("null bytes are not allowed.".to_string());
    }
    if Path::new(name).is_absolute() || name.starts_with('\\') || name.get(1..3) == Some(":\\") {
        return Err("Absolute paths are not allowed.".to_string());
    }
    if name.contains("..") || percent_decoded(name).contains("..") {
        return Err("Relative parent directory references (\"..\") are not allowed.".to_string());
    }
    Ok(crate::engine::paths::normalize_lexically(root.join(name)))
}

/// `%2e`-style escapes decoded (enough to see a hidden `..`).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hydration_replaces_known_variables_only() {
        let values = hydration(Path::new("/x/ext"), Path::new("/w"));
        assert_eq!(
            hydrate_str(
                "${extensionPath}${/}s.js ${workspacePath} ${HOME} ${",
                &values
            ),
            "/x/ext/s.js /w ${HOME} ${"
        );
    }

    #[test]
    fn manifests_need_a_name_and_a_version_and_map_servers() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Path::new("/w");
        assert!(matches!(
            load(dir.path(), ws),
            Err(ManifestError::Missing(_))
        ));
        std::fs::write(dir.path().join(MANIFEST), r#"{"name":"a"}"#).unwrap();
        let err = load(dir.path(), ws).unwrap_err().to_string();
        assert!(err.ends_with(": missing \"version\""), "{err}");
        std::fs::write(dir.path().join(MANIFEST), r#"{"name":"a b","version":"1"}"#).unwrap();
        let err = load(dir.path(), ws).unwrap_err().to_string();
        assert!(err.contains("Invalid extension name: \"a b\"."), "{err}");
        let text = r#"{"name":"a","version":"1.0.0","contextFileName":"CTX.md",
            "excludeTools":["run_shell_command(rm -rf)"],
            "mcpServers":{"s":{"command":"node","args":["${extensionPath}${/}s.js"],"trust":true,"timeout":5},
                          "h":{"httpUrl":"http://127.0.0.1:1/mcp"}}}"#;
        std::fs::write(dir.path().join(MANIFEST), text).unwrap();
        let m = load(dir.path(), ws).unwrap();
        assert_eq!(m.mcp_servers[0].0, "s");
        let s = &m.mcp_servers[0].1;
        assert_eq!(s.args, [format!("{}/s.js", dir.path().display())]);
        assert!(!s.trust);
        assert_eq!(s.timeout_ms, Some(5));
        assert_eq!(m.mcp_servers[1].1.transport.as_deref(), Some("http"));
        assert_eq!(context_file_names(&m), ["CTX.md"]);
        assert_eq!(m.exclude_tools, ["run_shell_command(rm -rf)"]);
    }

    #[test]
    fn settings_and_the_environment_resolve_variables() {
        let env = parse_dotenv("# c\nexport A=1\nB=\"two words\" # x\nC='$A'\nD=x # note\n");
        assert_eq!(env["A"], "1");
        assert_eq!(env["B"], "two words");
        assert_eq!(env["C"], "$A");
        assert_eq!(env["D"], "x");
        assert_eq!(
            resolve_env("$A-${B}-${NOPE_X:-dflt}-$NOPE_Y", &env),
            "1-two words-dflt-$NOPE_Y"
        );
    }

    #[test]
    fn context_file_paths_stay_inside_the_extension() {
        let root = Path::new("/e");
        assert_eq!(
            context_file_path("a/B.md", root),
            Ok(PathBuf::from("/e/a/B.md"))
        );
        assert!(context_file_path("/etc/passwd", root).is_err());
        assert!(context_file_path("../x.md", root).is_err());
        assert!(context_file_path("%2e%2e/x.md", root).is_err());
        assert!(context_file_path(" ", root).is_err());
    }
}
