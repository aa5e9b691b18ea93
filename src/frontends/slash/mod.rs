//! Slash commands that become a prompt, shared by every front end: custom commands
//! ([`custom`]: `.toml` files) and MCP prompts (`/<prompt> [args]`). The REPL asks the
//! user when a custom command's `!{…}` needs approval; a headless run (`-p`) and an ACP
//! prompt cannot ask, so [`expand_unattended`] runs such a command only when the
//! approval policy allows it without asking, and otherwise refuses the whole prompt.

pub mod custom;
pub mod shell;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::engine::policy::PolicyDecision;
use crate::mcp::prompts::{help, parse_arguments, PromptCommand};
use crate::mcp::McpHub;
use crate::protocol::PolicySnapshot;
use crate::tools::Services;

use self::custom::{CustomCommand, Injection};

/// The custom commands of `services`' workspace (its own only when the folder is
/// trusted) and of the enabled extensions, and the files that could not be loaded.
pub fn load_custom(services: &Services) -> (Vec<CustomCommand>, Vec<String>) {
    let dirs = custom::command_dirs(
        &crate::settings::troupe_home(),
        &crate::settings::home_dir(),
        services.workspace.primary(),
        services.settings.trusted,
    );
    let (mut commands, mut problems) = custom::load(&dirs);
    custom::add_extension_commands(
        &services.settings.loaded_extensions,
        &mut commands,
        &mut problems,
    );
    (commands, problems)
}

/// `/name args` split into the name and the rest; `None` when `line` is no slash
/// command.
pub fn split(line: &str) -> Option<(&str, &str)> {
    let body = line.trim().strip_prefix('/')?;
    let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    (!name.is_empty()).then_some((name, args))
}

/// The MCP prompt typed as `/name`, named as the REPL names it (`<server>.<name>` when a
/// built-in or a custom command holds the plain name).
pub fn mcp_prompt(hub: &McpHub, custom: &[CustomCommand], name: &str) -> Option<PromptCommand> {
    let taken = |n: &str| {
        crate::frontends::repl::is_builtin_command(n) || custom.iter().any(|c| c.name == n)
    };
    hub.prompt_commands(&taken)
        .into_iter()
        .find(|c| c.command == name)
}

/// What a slash command comes to.
#[derive(Debug, Clone, PartialEq)]
pub enum Expansion {
    /// Send this to the model as the user's prompt; `notes` are for the user (a
    /// sandbox note about an injected command's output).
    Prompt { text: String, notes: Vec<String> },
    /// Show these lines; nothing goes to the model (`/<prompt> help`).
    Reply(Vec<String>),
}

/// What an unattended expansion uses of the running session.
pub struct SessionSide<'a> {
    pub services: &'a Services,
    /// The approval policy as it stands.
    pub policy: PolicySnapshot,
    pub mcp: Option<&'a Arc<McpHub>>,
    /// Ends a running `!{…}` command (a signal, a cancelled prompt).
    pub cancel: CancellationToken,
}

/// Expands a custom command or an MCP prompt for a front end that cannot ask the user
/// (headless, ACP). `Ok(None)` when `line` is neither (it then goes to the model as
/// typed); `Err` says why the prompt cannot be sent (a refused `!{…}`, an unreadable
/// `@{…}`, a missing argument, a failed `prompts/get`).
pub async fn expand_unattended(
    line: &str,
    custom: &[CustomCommand],
    side: &SessionSide<'_>,
) -> Result<Option<Expansion>, String> {
    let Some((name, args)) = split(line) else {
        return Ok(None);
    };
    if let Some(command) = custom.iter().find(|c| c.name == name) {
        return fill(command, line, args.trim(), side).await.map(Some);
    }
    let Some(found) = side.mcp.and_then(|hub| mcp_prompt(hub, custom, name)) else {
        return Ok(None);
    };
    if args.trim() == "help" {
        return Ok(Some(Expansion::Reply(help(&found))));
    }
    let arguments = parse_arguments(&found.prompt, args)?;
    let Some(hub) = side.mcp else {
        return Ok(None);
    };
    let text = hub
        .get_prompt(&found.server, &found.prompt.name, arguments)
        .await?;
    Ok(Some(Expansion::Prompt {
        text,
        notes: Vec::new(),
    }))
}

/// A custom command's prompt with `{{args}}`, `!{…}` and `@{…}` filled in.
async fn fill(
    command: &CustomCommand,
    line: &str,
    args: &str,
    side: &SessionSide<'_>,
) -> Result<Expansion, String> {
    let mut text = String::new();
    let mut notes = Vec::new();
    for piece in custom::prepare(&command.prompt, line.trim(), args) {
        match piece {
            Injection::Text(t) => text.push_str(&t),
            Injection::File(path) => {
                let content = read_workspace_file(&side.services.fs, &path)
                    .await
                    .map_err(|e| format!("/{}: @{{{path}}}: {e}", command.name))?;
                text.push_str(&content);
            }
            Injection::Shell(script) => {
                let decided = shell::decision(&side.policy, side.services, &script);
                let refused = |why: String| {
                    format!(
                        "/{}: the shell command `{}` was not run: {why}",
                        command.name,
                        crate::engine::sanitize::one_line(&script)
                    )
                };
                match decided.decision {
                    PolicyDecision::Allow => {}
                    PolicyDecision::Deny(reason) => return Err(refused(reason)),
                    PolicyDecision::Ask => {
                        let mode = side.policy.mode;
                        return Err(refused(format!(
                            "it needs the user's approval, which cannot be given here (approval mode \"{}\"). Exiting due to a confirmation prompt requested by the command. Run it with --yolo, allow it (`approval.allowed`), or use the command in an interactive session.",
                            mode.as_str()
                        )));
                    }
                }
                let run =
                    shell::run_captured(&script, side.services, decided.sandbox, &side.cancel)
                        .await
                        .map_err(refused)?;
                text.push_str(&run.output);
                if let Some(code) = run.exit_code.filter(|c| *c != 0) {
                    text.push_str(&format!("\n[Shell command exited with code {code}]"));
                }
                notes.extend(run.sandbox_note);
            }
        }
    }
    Ok(Expansion::Prompt { text, notes })
}

/// A workspace file's text, opened beneath its root's descriptor like every tool read.
pub async fn read_workspace_file(
    fs: &crate::platform::filesystem::FsClient,
    path: &str,
) -> Result<String, String> {
    let read = fs.perform(WorkspaceText(path.to_string()));
    read.await.map_err(|e| e.to_string())?
}

/// The text of the workspace file `.0` names, read on the FileSystem pool.
struct WorkspaceText(String);

impl crate::platform::filesystem::FsWork for WorkspaceText {
    type Output = Result<String, String>;
    fn perform(self, ws: &crate::platform::filesystem::Confined) -> Self::Output {
        use std::io::Read as _;
        let path = ws.resolve(&self.0);
        let mut opened = ws
            .open(&path, crate::platform::filesystem::OpenMode::Read)
            .map_err(|e| e.to_string())?;
        let meta = opened.file.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err(format!(
                "not a regular file: {}",
                opened.real_path.display()
            ));
        }
        let mut bytes = Vec::new();
        opened
            .file
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_a_command_line() {
        assert_eq!(
            split("/git:fix \"Button is misaligned\""),
            Some(("git:fix", "\"Button is misaligned\""))
        );
        assert_eq!(split("  /summary  "), Some(("summary", "")));
        assert_eq!(split("fix /this"), None);
        assert_eq!(split("/"), None);
    }
}
