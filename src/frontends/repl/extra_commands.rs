//! Slash commands beyond the first set: `/tools desc`, `/memory add TEXT`,
//! `/directory show|add`, `/model [NAME]`, `/copy` (the last answer to the clipboard
//! through OSC 52), `/about` (version, model, sandbox), `/extensions` (the installed
//! extensions) and `/init` (the model writes AGENTS.md). Each returns `None` when
//! the line is not one of them, so the older commands keep their own handling.

use crate::protocol::content::Role;
use crate::protocol::{AddedRoot, Op, OpReply};
use crate::tools::save_memory::{add_fact, memory_file, sanitize_fact};
use base64::Engine as _;

use super::terminal::Palette;
use super::SessionLink;

/// What the REPL does after one of these commands.
pub enum Extra {
    /// Print these lines.
    Lines(Vec<String>),
    /// Print these lines, then run this prompt as a turn.
    Prompt(Vec<String>, String),
}

/// Runs `/name args` when it is one of these commands.
pub fn run(name: &str, args: &str, link: &mut SessionLink, p: Palette) -> Option<Extra> {
    let lines = match (name, args.split_whitespace().next()) {
        ("tools", Some("desc" | "descriptions")) => tools_desc(link, p),
        ("memory", Some("add")) => memory_add(link, args.trim_start()[3..].trim(), p),
        ("directory" | "dir", _) => directory(link, args, p),
        ("model", _) => model(link, args.trim(), p),
        ("copy", _) => copy(link, p),
        ("about", _) => about(link, p),
        ("extensions", None | Some("list")) => extensions(link, p),
        ("init", _) => return Some(init(link, p)),
        _ => return None,
    };
    Some(Extra::Lines(lines))
}

fn tools_desc(link: &SessionLink, p: Palette) -> Vec<String> {
    let mut out = vec![p.bold(&format!("{} tools", link.tools.len()))];
    for tool in &link.tools {
        // An MCP tool's description is its server's text.
        out.push(format!(
            "  {} {}",
            p.cyan(&crate::engine::sanitize::one_line(&tool.name)),
            p.dim(&format!("[{}]", tool.kind))
        ));
        let description = crate::engine::sanitize::for_terminal(&tool.description);
        out.extend(description.lines().map(|l| format!("      {l}")));
    }
    out
}

fn memory_add(link: &SessionLink, text: &str, p: Palette) -> Vec<String> {
    let fact = sanitize_fact(text);
    if fact.is_empty() {
        return vec![p.yellow("Usage: /memory add <text to remember>")];
    }
    let file = memory_file(link.handle.services());
    let current = std::fs::read_to_string(&file).unwrap_or_default();
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&file, add_fact(&current, &fact)));
    if let Err(e) = written {
        return vec![p.red(&format!("Failed to save memory: {e}"))];
    }
    let _ = link.request(Op::Memory { refresh: true });
    vec![format!("Okay, I've remembered that: \"{fact}\"")]
}

fn directory(link: &SessionLink, args: &str, p: Palette) -> Vec<String> {
    let mut words = args.split_whitespace();
    match words.next() {
        None | Some("show") => {
            let mut out = vec!["Current workspace directories:".to_string()];
            out.extend(
                link.handle
                    .workspace()
                    .roots()
                    .iter()
                    .map(|r| format!("- {}", r.display())),
            );
            out
        }
        Some("add") => directory_add(link, args.trim_start()[3..].trim(), p),
        Some(other) => vec![p.yellow(&format!(
            "Usage: /directory show|add PATH[,PATH…] (not `{other}`)"
        ))],
    }
}

/// `/directory add PATH[,PATH…]`: each path becomes a workspace root through the
/// FileSystem actor; gemini-cli's messages. The model is told the new list, as
/// gemini-cli adds its directory context to the history.
fn directory_add(link: &SessionLink, list: &str, p: Palette) -> Vec<String> {
    let typed: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    if typed.is_empty() {
        return vec![p.red("Please provide at least one path to add.")];
    }
    let (mut added, mut already, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for path in typed {
        let path_text = path.to_string();
        match link.request(Op::AddWorkspaceRoot { path: path_text }) {
            Ok(OpReply::Root(AddedRoot::Added(_))) => added.push(path),
            Ok(OpReply::Root(AddedRoot::AlreadyThere(_))) => already.push(path),
            Ok(_) => {}
            Err(e) => errors.push(format!("Error adding '{path}': {e}")),
        }
    }
    let mut out = Vec::new();
    if !already.is_empty() {
        out.push("The following directories are already in the workspace:".to_string());
        out.extend(already.iter().map(|d| format!("- {d}")));
    }
    if !added.is_empty() {
        let roots = link.handle.workspace().roots();
        let list: Vec<String> = roots
            .iter()
            .map(|r| format!("  - {}", r.display()))
            .collect();
        super::shell_mode::add_to_history(
            link,
            format!("- **Workspace Directories:**\n{}", list.join("\n")),
        );
        out.push(p.green("Successfully added directories:"));
        out.extend(added.iter().map(|d| format!("- {d}")));
    }
    out.extend(errors.iter().map(|e| p.red(e)));
    out
}

fn model(link: &mut SessionLink, name: &str, p: Palette) -> Vec<String> {
    if name.is_empty() {
        return vec![format!("Model: {}", p.bold(&link.model))];
    }
    link.handle.submit(Op::SetModel(name.to_string()));
    link.model = name.to_string();
    vec![format!("Model set to {}.", p.bold(name))]
}

/// `/about`: the version, the model, the approval mode and the sandbox in force.
/// `/extensions [list]`: the extensions of `~/.gemini/extensions` and which are enabled
/// in this session (changes take effect at the next start, as in gemini-cli).
fn extensions(link: &SessionLink, p: Palette) -> Vec<String> {
    let loaded = &link.handle.settings().loaded_extensions;
    if loaded.all.is_empty() {
        return vec![
            p.dim("No extensions installed (`troupe extensions install PATH` installs one).")
        ];
    }
    let mut out = vec![p.bold(&format!("{} extension(s)", loaded.all.len()))];
    for ext in &loaded.all {
        let (mark, state) = match ext.active {
            true => (p.green("\u{2713}"), "enabled"),
            false => (p.red("\u{2717}"), "disabled here"),
        };
        out.push(format!(
            "  {mark} {} ({}) {}  {}",
            p.cyan(&crate::engine::sanitize::one_line(&ext.name)),
            crate::engine::sanitize::one_line(&ext.version),
            p.dim(state),
            p.dim(&ext.path.display().to_string())
        ));
    }
    out
}

fn about(link: &SessionLink, p: Palette) -> Vec<String> {
    let sandbox = crate::platform::sandbox::session::summary(link.handle.settings());
    vec![
        p.bold(&format!("Troupe {}", env!("CARGO_PKG_VERSION"))),
        format!("  Model          {}", link.model),
        format!("  Approval mode  {}", link.mode().as_str()),
        format!("  Sandbox        {sandbox}"),
        format!("  Workspace      {}", link.workspace.display()),
    ]
}

/// The last answer's text, as OSC 52 (the terminal puts it on the clipboard).
fn copy(link: &SessionLink, p: Palette) -> Vec<String> {
    let history = match link.request(Op::GetHistory) {
        Ok(OpReply::History(history)) => history,
        _ => Vec::new(),
    };
    let last = history
        .iter()
        .rev()
        .find(|c| c.role == Role::Model && !c.text().trim().is_empty())
        .map(|c| c.text());
    let Some(text) = last else {
        return vec![p.yellow("No answer to copy yet.")];
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    use std::io::Write as _;
    let mut out = std::io::stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
    vec![p.green("Last answer copied to the clipboard.")]
}

const INIT_PROMPT: &str = "You are an AI agent that brings the power of a coding assistant to this project. Your task is to analyze the current directory and generate a comprehensive AGENTS.md file to be used as instructional context for future interactions.

Explore the project first: list the files, read the README and the build files (Cargo.toml, package.json, pyproject.toml, ...) and a few key source files. Then write AGENTS.md at the root of the workspace with write_file. It should hold: a project overview (purpose, main technologies, architecture), how to build, run and test it (the exact commands), and the development conventions you observed (style, testing practices, contribution guidelines). Keep it concise and factual; where something is unknown, leave a TODO rather than guess.";

fn init(link: &SessionLink, p: Palette) -> Extra {
    let file = link.workspace.join("AGENTS.md");
    let existing = std::fs::read_to_string(&file).unwrap_or_default();
    if !existing.trim().is_empty() {
        return Extra::Lines(vec![p.yellow(
            "An AGENTS.md file already exists in this directory. No changes were made.",
        )]);
    }
    Extra::Prompt(
        vec![p.dim("Asking the model to write AGENTS.md for this project…")],
        INIT_PROMPT.to_string(),
    )
}
