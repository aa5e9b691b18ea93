//! MCP prompts as slash commands (gemini-cli's `McpPromptLoader`): a prompt is
//! `/<name>` (whitespace → `-`), or `/<server>.<name>` when a built-in command has that
//! name. Arguments are named (`--mood=calm`, `--mood="very calm"`) or positional:
//! positional words fill the missing required arguments in order, and when only one is
//! missing it takes all the words. `/<name> help` describes the prompt.

use serde_json::{Map, Value};

use super::hub::{McpHub, PromptInfo, ServerState};

/// A prompt found under a command name.
#[derive(Debug, Clone)]
pub struct PromptCommand {
    pub command: String,
    pub server: String,
    pub prompt: PromptInfo,
}

impl McpHub {
    /// Every connected server's prompts under their command names; `is_builtin` says
    /// which names are taken.
    pub fn prompt_commands(&self, is_builtin: &dyn Fn(&str) -> bool) -> Vec<PromptCommand> {
        self.statuses()
            .into_iter()
            .filter(|s| s.state == ServerState::Connected)
            .flat_map(|s| {
                let server = s.config.name.clone();
                s.prompts.into_iter().map(move |prompt| {
                    let base: String = prompt.name.split_whitespace().collect::<Vec<_>>().join("-");
                    let command = if is_builtin(&base) {
                        format!("{server}.{base}")
                    } else {
                        base
                    };
                    PromptCommand {
                        command,
                        server: server.clone(),
                        prompt,
                    }
                })
            })
            .collect()
    }

    /// `prompts/get`; the text of the prompt's first text message.
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: Map<String, Value>,
    ) -> Result<String, String> {
        let Some(peer) = self.connection(server).and_then(|c| c.peer()) else {
            return Err(format!("MCP server '{server}' is not connected."));
        };
        let timeout = self
            .status(server)
            .map(|s| s.config.timeout())
            .unwrap_or(std::time::Duration::from_secs(600));
        let params: rmcp::model::GetPromptRequestParams =
            serde_json::from_value(serde_json::json!({"name": prompt, "arguments": arguments}))
                .map_err(|e| e.to_string())?;
        let result = tokio::time::timeout(timeout, peer.get_prompt(params))
            .await
            .map_err(|_| format!("MCP prompt '{prompt}' of server '{server}' timed out"))?
            .map_err(|e| format!("MCP prompt '{prompt}' of server '{server}' failed: {e}"))?;
        result
            .messages
            .iter()
            .filter_map(|m| serde_json::to_value(&m.content).ok())
            .find(|c| c["type"] == "text")
            .and_then(|c| c["text"].as_str().map(str::to_string))
            .ok_or_else(|| format!("MCP prompt '{prompt}' of server '{server}' returned no text"))
    }
}

/// The arguments of a prompt command line, or which required ones are missing.
pub fn parse_arguments(prompt: &PromptInfo, line: &str) -> Result<Map<String, Value>, String> {
    let words = shell_words::split(line).map_err(|e| format!("cannot read the arguments: {e}"))?;
    let mut named = Map::new();
    let mut positional = Vec::new();
    for word in words {
        match word.strip_prefix("--").and_then(|w| w.split_once('=')) {
            Some((key, value)) if prompt.arguments.iter().any(|(a, _)| a == key) => {
                named.insert(key.to_string(), Value::String(value.to_string()));
            }
            Some((key, _)) => return Err(format!("Unknown argument --{key} for this prompt.")),
            None => positional.push(word),
        }
    }
    let missing: Vec<&String> = prompt
        .arguments
        .iter()
        .filter(|(name, required)| *required && !named.contains_key(name))
        .map(|(name, _)| name)
        .collect();
    if missing.len() == 1 && !positional.is_empty() {
        named.insert(missing[0].clone(), Value::String(positional.join(" ")));
    } else {
        for (name, word) in missing.iter().zip(positional.drain(..)) {
            named.insert((*name).clone(), Value::String(word));
        }
    }
    let still: Vec<String> = prompt
        .arguments
        .iter()
        .filter(|(name, required)| *required && !named.contains_key(name))
        .map(|(name, _)| format!("--{name}"))
        .collect();
    if !still.is_empty() {
        return Err(format!(
            "Missing required argument(s): {}",
            still.join(", ")
        ));
    }
    Ok(named)
}

/// `/<prompt> help`.
pub fn help(command: &PromptCommand) -> Vec<String> {
    let mut out = vec![format!(
        "/{} (MCP prompt of server {}){}",
        command.command,
        command.server,
        if command.prompt.description.is_empty() {
            String::new()
        } else {
            format!(": {}", command.prompt.description)
        }
    )];
    if command.prompt.arguments.is_empty() {
        out.push("  No arguments.".into());
    }
    for (name, required) in &command.prompt.arguments {
        let tag = if *required { "required" } else { "optional" };
        out.push(format!("  --{name}=\"…\" ({tag})"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn greet() -> PromptInfo {
        PromptInfo {
            name: "greet".into(),
            description: String::new(),
            arguments: vec![("name".into(), true), ("mood".into(), false)],
        }
    }

    #[test]
    fn named_and_positional_arguments() {
        let args = parse_arguments(&greet(), "Ada Lovelace --mood=\"very calm\"").unwrap();
        assert_eq!(args["name"], "Ada Lovelace");
        assert_eq!(args["mood"], "very calm");
        let args = parse_arguments(&greet(), "--name=Bob").unwrap();
        assert_eq!(args["name"], "Bob");
        assert!(!args.contains_key("mood"));
    }

    #[test]
    fn missing_and_unknown_arguments_are_named() {
        assert_eq!(
            parse_arguments(&greet(), "--mood=calm").unwrap_err(),
            "Missing required argument(s): --name"
        );
        assert!(parse_arguments(&greet(), "--colour=red x")
            .unwrap_err()
            .contains("--colour"));
    }
}
