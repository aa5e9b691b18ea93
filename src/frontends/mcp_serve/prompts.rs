//! `troupe mcp serve`'s prompts: the custom commands of the workspace
//! (`.toml` files: `~/.gemini/commands/`, `<troupe home>/commands/`, and in a trusted
//! folder the project's `.gemini/commands/` and `.troupe/commands/`), each with one
//! optional argument, `args`, the text typed after the command. `prompts/get` fills
//! them as a headless run does: `{{args}}`, `@{file}` from the workspace, and `!{…}`
//! only when the approval policy runs that command without asking.

use rmcp::model::{GetPromptResult, ListPromptsResult};
use rmcp::ErrorData;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::frontends::slash::custom::CustomCommand;
use crate::frontends::slash::{expand_unattended, Expansion, SessionSide};
use crate::protocol::PolicySnapshot;
use crate::tools::Services;

/// The commands as MCP prompts.
pub fn list(commands: &[CustomCommand]) -> Result<ListPromptsResult, ErrorData> {
    let prompts: Vec<Value> = commands
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "description": c.description,
                "arguments": [{
                    "name": "args",
                    "description": "What follows the command when it is typed (its {{args}}).",
                    "required": false,
                }],
            })
        })
        .collect();
    serde_json::from_value(json!({ "prompts": prompts }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// The command `name` filled with `arguments.args`, as one user message.
pub async fn get(
    commands: &[CustomCommand],
    services: &Services,
    policy: PolicySnapshot,
    name: &str,
    arguments: Option<&Map<String, Value>>,
) -> Result<GetPromptResult, ErrorData> {
    let Some(command) = commands.iter().find(|c| c.name == name) else {
        return Err(ErrorData::invalid_params(
            format!("no prompt named `{name}`"),
            None,
        ));
    };
    let args = arguments
        .and_then(|a| a.get("args"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let line = format!("/{name} {args}");
    let side = SessionSide {
        services,
        policy,
        mcp: None,
        cancel: CancellationToken::new(),
    };
    let expanded = expand_unattended(line.trim_end(), std::slice::from_ref(command), &side)
        .await
        .map_err(|e| ErrorData::invalid_request(e, None))?;
    let text = match expanded {
        Some(Expansion::Prompt { text, .. }) => text,
        Some(Expansion::Reply(lines)) => lines.join("\n"),
        None => command.prompt.clone(),
    };
    serde_json::from_value(json!({
        "description": command.description,
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    }))
    .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}
