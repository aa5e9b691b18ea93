//! `[mcp_servers.NAME]` tables: parsing, where each came from, the folder-trust gate
//! for project servers, `$VAR` expansion and the variables a stdio server is given on
//! top of the children's environment policy (`crate::platform::child_env`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::settings::{LoadedSettings, SettingsError};

/// Default time allowed for connecting, listing and each call (gemini-cli's).
pub const DEFAULT_TIMEOUT_MS: u64 = 600_000;

/// Which settings file a server was configured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    #[default]
    User,
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// One configured MCP server, as written in a settings file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `stdio`, `http` or `sse`; with a `url` and no type: HTTP, then SSE.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// A server with its name, scope and whether it may start.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    pub name: String,
    pub entry: ServerEntry,
    pub scope: Scope,
    /// Why it may not start (a project server in an untrusted folder).
    pub blocked: Option<String>,
    /// `[environment] pass` of the settings the server came with: the secret-named
    /// variables of Troupe's environment its process may inherit.
    pub env_pass: Vec<String>,
}

impl McpServerConfig {
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.entry.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).max(1))
    }

    pub fn enabled(&self) -> bool {
        self.entry.enabled.unwrap_or(true)
    }

    /// The transport in use: `stdio`, `http`, `sse`, or `http+sse` (fallback).
    pub fn transport(&self) -> &str {
        match (
            &self.entry.command,
            &self.entry.url,
            self.entry.transport.as_deref(),
        ) {
            (_, Some(_), Some(t)) if t == "http" || t == "sse" => t,
            (_, Some(_), _) => "http+sse",
            _ => "stdio",
        }
    }

    /// `command args…` or the URL, for listings.
    pub fn target(&self) -> String {
        match (&self.entry.command, &self.entry.url) {
            (Some(c), _) => std::iter::once(c.as_str())
                .chain(self.entry.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(u)) => u.clone(),
            (None, None) => String::new(),
        }
    }

    /// Whether the tool named `tool` (the server's own name) is kept: `exclude_tools`
    /// wins over `include_tools`; an entry matches the name or `name(…)`.
    pub fn keeps_tool(&self, tool: &str) -> bool {
        let matches =
            |e: &String| e == tool || e.strip_prefix(tool).is_some_and(|r| r.starts_with('('));
        if self.entry.exclude_tools.iter().any(matches) {
            return false;
        }
        self.entry.include_tools.is_empty() || self.entry.include_tools.iter().any(matches)
    }
}

/// Takes the `mcp_servers` table out of one settings layer (it has free-form names, so
/// it is not merged key by key) and adds its servers; a later layer replaces a server
/// of the same name.
pub fn take_servers(
    layer: &mut toml::Table,
    scope: Scope,
    origin: &str,
    servers: &mut Vec<McpServerConfig>,
) -> Result<(), SettingsError> {
    let Some(value) = layer.remove("mcp_servers") else {
        return Ok(());
    };
    let toml::Value::Table(table) = value else {
        return Err(SettingsError::WrongType {
            key: "mcp_servers".into(),
            origin: origin.into(),
            expected: "a table".into(),
            found: value.type_str().into(),
        });
    };
    for (name, value) in table {
        let entry: ServerEntry =
            value
                .try_into()
                .map_err(|e: toml::de::Error| SettingsError::BadValue {
                    key: format!("mcp_servers.{name}"),
                    origin: origin.into(),
                    message: e.message().to_string(),
                })?;
        if entry.command.is_none() && entry.url.is_none() {
            return Err(SettingsError::BadValue {
                key: format!("mcp_servers.{name}"),
                origin: origin.into(),
                message: "needs `command` (stdio) or `url` (http, sse)".into(),
            });
        }
        if let Some(t) = &entry.transport {
            if !matches!(t.as_str(), "stdio" | "http" | "sse") {
                return Err(SettingsError::BadValue {
                    key: format!("mcp_servers.{name}.type"),
                    origin: origin.into(),
                    message: format!("`{t}` is not one of stdio, http, sse"),
                });
            }
        }
        servers.retain(|s| s.name != name);
        servers.push(McpServerConfig {
            name,
            entry,
            scope,
            blocked: None,
            env_pass: Vec::new(),
        });
    }
    Ok(())
}

/// Whether the project's servers may start: only in a trusted folder. (An untrusted
/// folder's project file is not applied at all, so its servers never even load; this
/// gate keeps that true for any caller that builds settings another way.)
pub fn project_servers_allowed(loaded: &LoadedSettings) -> bool {
    loaded.trusted && loaded.settings.trusted
}

/// Marks the project's servers blocked unless [`project_servers_allowed`].
pub fn gate_project_servers(loaded: &mut LoadedSettings) {
    if project_servers_allowed(loaded) {
        return;
    }
    for server in &mut loaded.settings.mcp_servers {
        if server.scope == Scope::Project {
            server.blocked = Some(format!(
                "MCP server '{}' is configured in the project's settings, which only start in a trusted folder (trust it with `troupe trust`, or for one run with --skip-trust).",
                server.name
            ));
        }
    }
}

/// Why a server of an untrusted folder's project settings does not start, for the
/// messages that name it (`troupe mcp list`, a call of one of its tools).
pub const UNTRUSTED_REASON: &str = "not applied: folder not trusted";

/// The servers the project file of an untrusted folder configures (that file is not
/// applied, so none of them starts), each marked blocked: listed so that `troupe mcp
/// list`, `mcp get` and a call of one of their tools can say why they are absent. A
/// server of the same name in `applied` (the user's) is left out: that one runs. A file
/// that cannot be read or parsed gives none (it would not have applied either way).
pub fn untrusted_project_servers(
    project_file: &std::path::Path,
    applied: &[McpServerConfig],
) -> Vec<McpServerConfig> {
    let Ok(text) = std::fs::read_to_string(project_file) else {
        return Vec::new();
    };
    let Ok(mut layer) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut servers = Vec::new();
    let origin = project_file.display().to_string();
    if take_servers(&mut layer, Scope::Project, &origin, &mut servers).is_err() {
        return Vec::new();
    }
    servers.retain(|s| !applied.iter().any(|a| a.name == s.name));
    for server in &mut servers {
        server.blocked = Some(format!(
            "MCP server '{}' is configured in {origin}, which is {UNTRUSTED_REASON}: trust the folder with `troupe trust` (or configure the server in the user settings: `troupe mcp add -s user …`).",
            server.name
        ));
    }
    servers
}

/// Variables whose values are never expanded into a server's env or headers: the model
/// API keys (gemini-cli expands them).
const NEVER_EXPANDED: [&str; 5] = [
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_API_KEY",
    "TROUPE_MODEL_GEMINI_API_KEY",
    "TROUPE_MODEL_OPENAI_API_KEY",
];

/// `$VAR` and `${VAR}` replaced from `lookup`; unknown variables and the model keys
/// become empty.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    crate::engine::text::expand_vars(text, &|name| {
        if NEVER_EXPANDED.contains(&name) {
            Some(String::new())
        } else {
            Some(lookup(name).unwrap_or_default())
        }
    })
}

/// The variables a stdio server is given on top of what it inherits under the
/// children's policy: its configured `env` (`$VAR` expanded from `lookup`, the model
/// keys never), then `TROUPE_CLI=1`. Set after the policy, so they win over it.
pub fn server_env(
    extra: &BTreeMap<String, String>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = extra
        .iter()
        .map(|(k, v)| (k.clone(), expand(v, lookup)))
        .collect();
    out.push(("TROUPE_CLI".into(), "1".into()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_keeps_model_keys_out() {
        let env = |n: &str| match n {
            "HOME" => Some("/h".to_string()),
            "GEMINI_API_KEY" => Some("sekrit".to_string()),
            _ => None,
        };
        assert_eq!(expand("$HOME/x ${HOME}y", &env), "/h/x /hy");
        assert_eq!(expand("k=${GEMINI_API_KEY}", &env), "k=");
        assert_eq!(expand("$5 and $", &env), "$5 and $");
    }

    #[test]
    fn server_env_expands_the_configured_variables_only() {
        let lookup = |n: &str| match n {
            "LANG" => Some("C".to_string()),
            "MY_TOKEN" => Some("t".to_string()),
            "GEMINI_API_KEY" => Some("k".to_string()),
            _ => None,
        };
        let extra = BTreeMap::from([
            ("A".to_string(), "$LANG-${MY_TOKEN}".to_string()),
            ("B".to_string(), "$GEMINI_API_KEY".to_string()),
        ]);
        assert_eq!(
            server_env(&extra, &lookup),
            [
                ("A".to_string(), "C-t".to_string()),
                ("B".to_string(), String::new()),
                ("TROUPE_CLI".to_string(), "1".to_string()),
            ]
        );
    }

    #[test]
    fn tool_filters() {
        let mut c = McpServerConfig {
            name: "s".into(),
            entry: ServerEntry::default(),
            scope: Scope::User,
            blocked: None,
            env_pass: Vec::new(),
        };
        c.entry.include_tools = vec!["echo(a)".into(), "peek".into()];
        c.entry.exclude_tools = vec!["peek".into()];
        assert!(c.keeps_tool("echo"));
        assert!(!c.keeps_tool("peek"));
        assert!(!c.keeps_tool("other"));
    }
}
