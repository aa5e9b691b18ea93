//! Slash commands: `/help`, `/clear`, `/stats`, `/tools`, `/memory show|refresh`,
//! `/compress`, `/approval-mode [mode]`, `/approvals [revoke N]`, `/quit`. An unknown
//! command gets the closest known one as a suggestion.

use crate::actors::session::SAVED_ORIGIN;
use crate::engine::sanitize::{for_terminal, one_line};
use crate::protocol::{ApprovalMode, Op, OpReply};

use super::columns::{lay_out, name_width};
use super::render::duration_text;
use super::terminal::Palette;
use super::SessionLink;

/// Every command with its arguments and what it does, for `/help` and suggestions.
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("help", "", "show this help"),
    (
        "hooks",
        "[enable|disable NAME|enable-all|disable-all]",
        "list the hooks, or turn them on and off for this session",
    ),
    (
        "clear",
        "",
        "clear the screen and start the conversation afresh",
    ),
    ("stats", "", "tokens, tool calls by tool, edits"),
    (
        "agents",
        "",
        "the subagents of this session: state, tool, turns, tokens",
    ),
    ("tools", "", "the tools the model can call"),
    (
        "memory",
        "show|refresh",
        "show or re-read the context files (AGENTS.md, GEMINI.md)",
    ),
    (
        "compress",
        "",
        "summarise the conversation so far to save tokens",
    ),
    (
        "approval-mode",
        "[plan|default|auto_edit|yolo]",
        "show or set what runs without asking",
    ),
    (
        "approvals",
        "[revoke N]",
        "what is allowed without asking, and where it came from",
    ),
    ("tools desc", "", "the tools with their full descriptions"),
    (
        "memory add",
        "TEXT",
        "remember a fact in the global context file",
    ),
    ("directory", "show|add", "the workspace directories"),
    (
        "extensions",
        "[list]",
        "the installed extensions and which are enabled",
    ),
    ("model", "[NAME]", "show or switch the model"),
    ("copy", "", "copy the last answer to the clipboard (OSC 52)"),
    (
        "about",
        "",
        "version, model, approval mode and the sandbox in force",
    ),
    (
        "init",
        "",
        "let the model write an AGENTS.md for this project",
    ),
    (
        "resume",
        "[N|ID]",
        "list this project's sessions, or continue session N",
    ),
    (
        "chat",
        "save|resume|list|delete TAG",
        "save the conversation under a tag, or go back to one",
    ),
    (
        "rewind",
        "[N]",
        "list your prompts, or drop the conversation from prompt N on",
    ),
    (
        "restore",
        "[NAME]",
        "list checkpoints, or put files and conversation back to one",
    ),
    (
        "mcp",
        "[list|desc|schema|reload]",
        "MCP servers: status, errors and tools; reload restarts them",
    ),
    (
        "diff",
        "",
        "what this session changed in files so far, as a unified diff",
    ),
    (
        "undo",
        "",
        "undo the session's last file edit (again: the one before)",
    ),
    (
        "settings",
        "[PREFIX|KEY VALUE]",
        "the effective settings, or change one for this session",
    ),
    (
        "theme",
        "[NAME]",
        "list the colour themes, or switch to one",
    ),
    ("vim", "", "toggle vi keys in the line editor"),
    ("quit", "", "leave (also /exit, Ctrl+D)"),
];

/// What the REPL does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    Continue,
    Quit,
    /// Clear the screen before printing.
    ClearScreen,
}

/// Runs one slash command line (starting with `/`); returns its output.
pub fn run(line: &str, link: &SessionLink, p: Palette) -> (Vec<String>, After) {
    let mut words = line.trim_start_matches('/').split_whitespace();
    let name = words.next().unwrap_or("");
    let args: Vec<&str> = words.collect();
    let output = match name {
        "help" | "?" => help(&[], p),
        "quit" | "exit" => return (Vec::new(), After::Quit),
        "clear" => {
            if let Err(e) = link.request(Op::SetHistory(Vec::new())) {
                return (vec![p.red(&e.to_string())], After::Continue);
            }
            return (vec![p.dim("Conversation cleared.")], After::ClearScreen);
        }
        "stats" => stats(link, p),
        "agents" => super::agent_lines::agents_command(link, &args, p),
        "tools" => tools(link, p),
        "memory" => memory(link, &args, p),
        "compress" => super::compress_cmd::compress(link, p),
        "approval-mode" => approval_mode(link, &args, p),
        "approvals" => approvals(link, &args, p),
        "resume" | "chat" | "rewind" | "restore" => {
            super::session_commands::run(name, &args, link, p)
        }
        "mcp" => crate::mcp::status::command(link.handle.mcp().map(|hub| &**hub), &args),
        "hooks" => super::hooks_cmd::hooks(link, &args, p),
        "diff" => super::changes_cmd::diff(link, p),
        "undo" => super::changes_cmd::undo(link, p),
        "" => help(&[], p),
        other => vec![unknown(other, p)],
    };
    (output, After::Continue)
}

/// `/help`: the commands, the keys, and `custom` (the custom commands' `/name` and
/// description), every name column as wide as the longest name.
pub fn help(custom: &[(String, String)], p: Palette) -> Vec<String> {
    let rows: Vec<(String, String)> = COMMANDS
        .iter()
        .map(|(name, args, what)| {
            let usage = if args.is_empty() {
                format!("/{name}")
            } else {
                format!("/{name} {args}")
            };
            (usage, what.to_string())
        })
        .collect();
    let width = name_width(rows.iter().chain(custom).map(|(n, _)| n.chars().count()));
    let cyan = |n: &str| p.cyan(n);
    let mut out = vec![p.bold("Commands")];
    out.extend(lay_out(&rows, width, &cyan));
    out.push(p.bold("Keys"));
    out.push("  Enter send · Alt+Enter or a trailing \\ for a new line · Shift+Tab cycle default/auto_edit/plan · Ctrl+Y toggle yolo".into());
    out.push(
        "  Ctrl+C cancel the running turn; at an empty prompt press it twice (or Ctrl+D) to leave"
            .into(),
    );
    if !custom.is_empty() {
        out.push(p.bold("Custom commands"));
        out.extend(lay_out(custom, width, &cyan));
    }
    out
}

/// "Unknown command" with the closest command name.
pub fn unknown(name: &str, p: Palette) -> String {
    let best = COMMANDS
        .iter()
        .map(|(c, _, _)| (strsim::damerau_levenshtein(name, c), *c))
        .min();
    match best {
        Some((d, c)) if d <= 3 || c.starts_with(name) => p.yellow(&format!(
            "Unknown command /{name}. Did you mean /{c}? (/help lists the commands)"
        )),
        _ => p.yellow(&format!(
            "Unknown command /{name}. /help lists the commands."
        )),
    }
}

fn stats(link: &SessionLink, p: Palette) -> Vec<String> {
    let s = match link.stats.lock() {
        Ok(s) => s.settled(),
        Err(_) => return vec![p.red("statistics unavailable")],
    };
    let mut out = vec![p.bold(&format!(
        "Session {} · model {}",
        link.session_id, link.model
    ))];
    out.push(format!("  Model requests   {}", s.requests));
    out.push(format!(
        "  Tokens           prompt {} · output {} · total {} · cached {} · thoughts {}",
        s.prompt_tokens, s.output_tokens, s.total_tokens, s.cached_tokens, s.thought_tokens
    ));
    let ok: u64 = s.by_tool.values().map(|t| t.success).sum();
    let failed: u64 = s.by_tool.values().map(|t| t.fail).sum();
    out.push(format!(
        "  Tool calls       {} ({} {ok}, {} {failed})",
        s.total_calls(),
        p.green("✓"),
        p.red("✗")
    ));
    if !s.by_tool.is_empty() {
        out.push(p.dim(&format!(
            "    {:<22} {:>6} {:>6} {:>7} {:>10}",
            "tool", "calls", "ok", "failed", "avg time"
        )));
        for (name, t) in &s.by_tool {
            let name = one_line(name);
            let avg = if t.count == 0 {
                0.0
            } else {
                t.duration_ms / t.count as f64
            };
            out.push(format!(
                "    {:<22} {:>6} {:>6} {:>7} {:>10}",
                name,
                t.count,
                t.success,
                t.fail,
                duration_text(std::time::Duration::from_secs_f64(avg / 1000.0))
            ));
        }
    }
    out.push(format!(
        "  Lines changed    {} {}",
        p.green(&format!("+{}", s.lines_added)),
        p.red(&format!("-{}", s.lines_removed))
    ));
    let counts = |m: &std::collections::BTreeMap<String, u64>| {
        if m.is_empty() {
            "none".to_string()
        } else {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(" · ")
        }
    };
    out.push(format!("  Edit strategies  {}", counts(&s.edit_strategies)));
    out.push(format!("  Corrections      {}", counts(&s.corrections)));
    out
}

/// `/tools`: name, kind and the first line of the description (cut to the terminal's
/// width), the name column as wide as the longest name.
fn tools(link: &SessionLink, p: Palette) -> Vec<String> {
    let mut out = vec![p.bold(&format!("{} tools", link.tools.len()))];
    let columns = super::terminal::width();
    // Names and descriptions of MCP tools come from their servers.
    let names: Vec<String> = link
        .tools
        .iter()
        .map(|t| one_line(&t.name).into_owned())
        .collect();
    let kinds: Vec<String> = link.tools.iter().map(|t| format!("[{}]", t.kind)).collect();
    let width = name_width(names.iter().map(|n| n.chars().count()));
    let kind_width = kinds.iter().map(|k| k.chars().count()).max().unwrap_or(0);
    let room = columns
        .saturating_sub(2 + width + 1 + kind_width + 1)
        .max(10);
    let rows: Vec<(String, String)> = link
        .tools
        .iter()
        .zip(names)
        .zip(kinds)
        .map(|((tool, name), kind)| {
            let first = one_line(tool.description.lines().next().unwrap_or(""));
            let kind = p.dim(&format!("{kind:<kind_width$}"));
            (
                name,
                format!("{kind} {}", super::terminal::fit(&first, room)),
            )
        })
        .collect();
    out.extend(lay_out(&rows, width, &|n| p.cyan(n)));
    out
}

fn memory(link: &SessionLink, args: &[&str], p: Palette) -> Vec<String> {
    let refresh = match args.first().copied() {
        None | Some("show") => false,
        Some("refresh") => true,
        Some(other) => {
            return vec![p.yellow(&format!("Usage: /memory show|refresh (not `{other}`)"))]
        }
    };
    match link.request(Op::Memory { refresh }) {
        Ok(OpReply::Memory(report)) if report.files.is_empty() => vec![p.dim(if refresh {
            "Memory refreshed: no context files found."
        } else {
            "No context files are loaded."
        })],
        Ok(OpReply::Memory(report)) => {
            let mut out = vec![p.bold(&format!(
                "{} context file(s){}",
                report.files.len(),
                if refresh { " (refreshed)" } else { "" }
            ))];
            out.extend(report.files.iter().map(|f| format!("  {}", one_line(f))));
            out.push(String::new());
            out.extend(for_terminal(&report.text).lines().map(str::to_string));
            out
        }
        Ok(_) => Vec::new(),
        Err(e) => vec![p.red(&format!("The chat is unavailable: {e}"))],
    }
}

fn approval_mode(link: &SessionLink, args: &[&str], p: Palette) -> Vec<String> {
    let Some(arg) = args.first() else {
        return vec![format!(
            "Approval mode: {} (plan, default, auto_edit, yolo)",
            p.bold(link.mode().as_str())
        )];
    };
    match ApprovalMode::parse(arg) {
        Some(mode) => {
            link.set_mode(mode);
            vec![format!("Approval mode set to {}.", p.bold(mode.as_str()))]
        }
        None => vec![p.yellow(&format!(
            "Unknown approval mode `{arg}`: use plan, default, auto_edit or yolo."
        ))],
    }
}

fn approvals(link: &SessionLink, args: &[&str], p: Palette) -> Vec<String> {
    if let ["revoke", n] = args {
        return match n.parse::<usize>().ok().and_then(|n| link.revoke(n)) {
            Some(Ok(text)) => vec![format!("Revoked {}.", one_line(&text))],
            Some(Err(e)) => vec![p.red(&format!("Revoked for this session, but {e}"))],
            None => vec![p.yellow(&format!("There is no entry {n}; /approvals lists them."))],
        };
    }
    if !args.is_empty() {
        return vec![p.yellow("Usage: /approvals, or /approvals revoke N")];
    }
    let state = link.handle.policy();
    let mut out = vec![format!("Approval mode: {}", p.bold(state.mode.as_str()))];
    if state.rules.is_empty() {
        out.push(p.dim("Nothing else is allowed without asking."));
        return out;
    }
    out.push("Allowed without asking:".into());
    for (i, rule) in state.rules.iter().enumerate() {
        let scope = rule
            .key
            .as_deref()
            .map(|k| one_line(k).into_owned())
            .unwrap_or_else(|| "(every call)".into());
        let origin = if rule.origin == SAVED_ORIGIN {
            format!("saved in {}", link.user_config.display())
        } else if rule.origin.starts_with("from ") {
            rule.origin.clone()
        } else {
            "this session".to_string()
        };
        out.push(format!(
            "  {:>2}. {} {}  {}",
            i + 1,
            p.cyan(&one_line(&rule.tool)),
            scope,
            p.dim(&format!("({origin})"))
        ));
    }
    out.push(p.dim("/approvals revoke N removes an entry."));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_commands_get_the_closest_name() {
        let p = Palette::plain();
        assert_eq!(
            unknown("stat", p),
            "Unknown command /stat. Did you mean /stats? (/help lists the commands)"
        );
        assert_eq!(
            unknown("approval", p),
            "Unknown command /approval. Did you mean /approvals? (/help lists the commands)"
        );
        assert!(unknown("zzzzzzzzzzzz", p).ends_with("/help lists the commands."));
    }
}
