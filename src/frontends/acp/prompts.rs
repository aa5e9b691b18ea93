//! A prompt that is a custom command or an MCP prompt, expanded as the REPL and `-p`
//! expand it ([`crate::frontends::slash`]). An editor cannot be asked about a custom
//! command's `!{…}` here, so one that needs approval refuses the prompt. The commands
//! a session offers (`available_commands_update`) are the built-in ones, the custom
//! commands and the MCP prompts, under the names a prompt expands.

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::frontends::slash::{self, Expansion, SessionSide};

use super::session::AcpSession;

/// `Ok(None)` when `typed` is neither a custom command nor an MCP prompt.
pub async fn expand(session: &AcpSession, typed: &str) -> Result<Option<Expansion>, String> {
    if slash::split(typed).is_none() {
        return Ok(None);
    }
    let services = session.session.services();
    let (custom, problems) = slash::load_custom(services);
    for problem in problems {
        tracing::warn!(%problem, "custom command not loaded");
    }
    let side = SessionSide {
        services,
        policy: session.session.policy(),
        mcp: session.session.mcp(),
        cancel: CancellationToken::new(),
    };
    slash::expand_unattended(typed, &custom, &side).await
}

/// The commands session `session` offers, as ACP's `availableCommands`: the built-in
/// ones, then its custom commands, then its MCP servers' prompts (named as `/name`
/// expands them: `<server>.<name>` when another command holds the plain name).
pub fn available(session: &AcpSession) -> Vec<Value> {
    let mut out: Vec<Value> = super::COMMANDS
        .iter()
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect();
    let (custom, _) = slash::load_custom(session.session.services());
    for command in &custom {
        let mut entry = json!({"name": command.name, "description": command.description});
        if command.prompt.contains("{{args}}") {
            entry["input"] = json!({"hint": "arguments"});
        }
        out.push(entry);
    }
    if let Some(hub) = session.session.mcp() {
        let taken = |n: &str| {
            crate::frontends::repl::is_builtin_command(n) || custom.iter().any(|c| c.name == n)
        };
        for prompt in hub.prompt_commands(&taken) {
            let description = if prompt.prompt.description.is_empty() {
                format!("MCP prompt of {}", prompt.server)
            } else {
                prompt.prompt.description.clone()
            };
            let mut entry = json!({"name": prompt.command, "description": description});
            if !prompt.prompt.arguments.is_empty() {
                let names: Vec<&str> = prompt
                    .prompt
                    .arguments
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect();
                entry["input"] = json!({"hint": names.join(" ")});
            }
            out.push(entry);
        }
    }
    out
}
