//! `/mcp [list|desc|schema|reload]` in the REPL: the servers, their state and last
//! error, and their tools (gemini-cli's layout). Names, descriptions and errors come
//! from the servers: every line goes through the one sanitiser
//! ([`crate::engine::sanitize::one_line`]) before it is printed.

use super::hub::{McpHub, ServerState};

/// The lines `/mcp` prints for `args`, safe to print to a terminal.
pub fn command(hub: Option<&McpHub>, args: &[&str]) -> Vec<String> {
    lines(hub, args)
        .iter()
        .map(|l| crate::engine::sanitize::one_line(l).into_owned())
        .collect()
}

fn lines(hub: Option<&McpHub>, args: &[&str]) -> Vec<String> {
    let Some(hub) = hub else {
        return vec!["No MCP servers configured.".to_string()];
    };
    let (desc, schema) = match args.first().copied() {
        None | Some("list") | Some("ls") | Some("nodesc") => (false, false),
        Some("desc") => (true, false),
        Some("schema") => (true, true),
        Some("reload") => {
            hub.reload();
            return vec!["Restarting MCP servers...".to_string()];
        }
        Some(other) => {
            return vec![format!(
                "Unknown /mcp subcommand `{other}`: use list, desc, schema or reload."
            )]
        }
    };
    let mut out = vec!["Configured MCP servers:".to_string()];
    for s in hub.statuses() {
        let name = &s.config.name;
        let counts = format!(
            "{} tools, {} prompts, {} resources",
            s.tools.len(),
            s.prompts.len(),
            s.resources.len()
        );
        out.push(match s.state {
            ServerState::Connected => format!("🟢 {name} - Ready ({counts})"),
            ServerState::Connecting | ServerState::Disconnected => {
                format!("🔄 {name} - Starting... (first startup may take longer)")
            }
            ServerState::Failed if s.tools.is_empty() => format!("🔴 {name} - Disconnected"),
            ServerState::Failed => {
                format!("🔴 {name} - Disconnected ({} tools cached)", s.tools.len())
            }
            ServerState::Disabled => format!("⏸️ {name} - Disabled"),
            ServerState::Blocked => format!("⛔ {name} - Blocked"),
        });
        if let Some(e) = &s.last_error {
            out.push(format!("  Error: {e}"));
        }
        if !s.tools.is_empty() {
            out.push("  Tools:".into());
            for t in &s.tools {
                out.push(format!("  - {}", t.name));
                if desc && !t.description.is_empty() {
                    out.extend(t.description.lines().map(|l| format!("      {l}")));
                }
                if schema {
                    out.push("      Parameters:".into());
                    let json = serde_json::to_string_pretty(&t.schema).unwrap_or_default();
                    out.extend(json.lines().map(|l| format!("      {l}")));
                }
            }
        }
        if !s.skipped.is_empty() {
            out.push("  Skipped tools:".into());
            out.extend(
                s.skipped
                    .iter()
                    .map(|t| format!("  - {}: {}", t.name, t.reason)),
            );
        }
        if !s.prompts.is_empty() {
            out.push("  Prompts:".into());
            out.extend(s.prompts.iter().map(|p| format!("  - {}", p.name)));
        }
        if !s.resources.is_empty() {
            out.push("  Resources:".into());
            out.extend(s.resources.iter().map(|r| {
                let mime = r
                    .mime_type
                    .as_deref()
                    .map(|m| format!(" [{m}]"))
                    .unwrap_or_default();
                format!("  - {} ({}){mime}", r.name, r.uri)
            }));
        }
    }
    out
}
