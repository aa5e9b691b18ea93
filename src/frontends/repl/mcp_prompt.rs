//! MCP prompts typed as slash commands (`/<prompt> [args]`, `/<prompt> help`): the
//! prompt is fetched from its server and its text submitted as the user's prompt.

use crate::engine::sanitize::{for_terminal, one_line};
use crate::mcp::prompts::{help, parse_arguments};

use super::terminal::Palette;
use super::SessionLink;

/// What a prompt command leads to.
pub enum PromptOutcome {
    /// Submit this text as the user's prompt.
    Submit(String),
    /// Print these lines (help, or what went wrong).
    Lines(Vec<String>),
}

/// `None` when `name` is no MCP prompt; `custom` are the custom commands.
pub fn run(
    link: &SessionLink,
    custom: &[crate::frontends::slash::custom::CustomCommand],
    name: &str,
    args: &str,
    p: Palette,
) -> Option<PromptOutcome> {
    let hub = link.handle.mcp()?.clone();
    let found = crate::frontends::slash::mcp_prompt(&hub, custom, name)?;
    if args.trim() == "help" {
        let lines = help(&found)
            .iter()
            .map(|l| one_line(l).into_owned())
            .collect();
        return Some(PromptOutcome::Lines(lines));
    }
    let arguments = match parse_arguments(&found.prompt, args) {
        Ok(a) => a,
        Err(e) => return Some(PromptOutcome::Lines(vec![p.red(&for_terminal(&e))])),
    };
    let (h, server, prompt) = (hub.clone(), found.server, found.prompt.name);
    // Fetched on the session's arbiter; this thread waits for the answer.
    let fetched = link.on_actors(async move { h.get_prompt(&server, &prompt, arguments).await });
    Some(match fetched {
        Some(Ok(text)) => PromptOutcome::Submit(text),
        Some(Err(e)) => PromptOutcome::Lines(vec![p.red(&for_terminal(&e))]),
        None => PromptOutcome::Lines(vec![p.red("the session has ended")]),
    })
}
