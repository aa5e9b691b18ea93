//! The confirmation of one call: what will happen (the diff of *this* call, the shell
//! command and its directory, the URLs), then a menu — arrows or j/k and Enter, or the
//! option's number; Esc or Ctrl+C answer No — and, for No, a line to tell the model
//! what to do instead.
//!
//! What the user approves is exactly what runs: commands, file paths, tool names and
//! titles are shown with [`one_line`], multi-line text with [`for_terminal`], so an
//! escape sequence in a proposed command is shown (`\e]52;…^G^M`) instead of rewriting
//! the screen, and nothing is trimmed or reformatted. A URL host written with
//! non-ASCII letters (`gіthub.com`, Cyrillic `і`) is named with its ASCII form
//! (`xn--gthub-n2e.com`) on a line of its own, and URLs to fetch are shown in it.

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::{cursor, queue, terminal};

use crate::engine::sanitize::hosts::{ascii_hosts, idn_hosts, IdnHost};
use crate::engine::sanitize::{for_terminal, one_line};
use crate::protocol::{ApprovalDecision, ApprovalRequest, ConfirmationDetails};

use super::diff_view::render_edit;
use super::editor::edit_proposal;
use super::terminal::{Palette, TurnMode};

/// An answer in the menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Once,
    Session,
    Save,
    /// Every tool of this MCP server, for the session.
    Server,
    Modify,
    No,
    /// Esc or Ctrl+C: No without asking for feedback.
    Escape,
    /// An entry of a list that is not an approval (`ask_user`'s options).
    Pick(usize),
}

/// What the confirmation needs besides the request.
pub struct ConfirmContext<'a> {
    pub palette: Palette,
    /// Where "Always allow" saves the rule (shown in the option).
    pub saved_to: String,
    pub workspace: &'a Path,
}

/// The lines describing the call.
pub fn describe(request: &ApprovalRequest, ctx: &ConfirmContext) -> Vec<String> {
    let p = ctx.palette;
    let max_diff = terminal::size()
        .map(|(_, rows)| usize::from(rows).saturating_sub(14).max(12))
        .unwrap_or(60);
    let mut lines = Vec::new();
    if let Some(agent) = &request.agent {
        lines.push(p.cyan(&format!("Subagent {agent} asks:")));
    }
    match &request.details {
        ConfirmationDetails::Edit {
            title,
            file_path,
            original,
            proposed,
            ..
        } => {
            lines.push(p.bold(&format!("? {}", one_line(title))));
            let label = Path::new(file_path)
                .strip_prefix(ctx.workspace)
                .map(|r| r.display().to_string())
                .unwrap_or_else(|_| file_path.clone());
            lines.extend(render_edit(
                &one_line(&label),
                original,
                proposed,
                p,
                max_diff,
            ));
        }
        ConfirmationDetails::Exec {
            title,
            command,
            dir,
            ..
        } => {
            lines.push(p.bold(&format!("? {}", one_line(title))));
            lines.push(command_line(command, p));
            lines.push(p.dim(&format!("  in {}", one_line(dir))));
        }
        ConfirmationDetails::Fetch {
            title,
            prompt,
            urls,
        } => {
            lines.push(p.bold(&format!("? {}", one_line(title))));
            lines.extend(
                for_terminal(&ascii_hosts(prompt))
                    .lines()
                    .map(|l| format!("  {l}")),
            );
            lines.push(p.dim("  URLs to fetch:"));
            lines.extend(
                urls.iter()
                    .map(|u| format!("   - {}", p.cyan(&one_line(&ascii_hosts(u))))),
            );
        }
        ConfirmationDetails::Info { title, prompt } => {
            lines.push(p.bold(&format!("? {}", one_line(title))));
            lines.extend(for_terminal(prompt).lines().map(|l| format!("  {l}")));
        }
        ConfirmationDetails::ExitPlanMode {
            title,
            plan_path,
            plan,
        } => lines.extend(super::ask::describe_plan(title, plan_path, plan, p)),
        // Each question is shown as it is asked.
        ConfirmationDetails::AskUser { .. } => {}
        ConfirmationDetails::Mcp { title, .. } => {
            lines.push(p.bold(&format!("? {}", one_line(title))));
            if !request.args.as_object().is_none_or(|m| m.is_empty()) {
                let args = request.args.to_string();
                lines.push(p.dim(&format!("  {}", one_line(&args))));
            }
        }
    }
    lines.extend(idn_hosts_of(request).iter().map(|h| idn_line(h, p)));
    lines
}

/// The URL hosts with non-ASCII letters in what the confirmation shows, each once.
fn idn_hosts_of(request: &ApprovalRequest) -> Vec<IdnHost> {
    let args = request.args.to_string();
    let mut texts: Vec<&str> = Vec::new();
    match &request.details {
        ConfirmationDetails::Edit { title, .. } => texts.push(title),
        ConfirmationDetails::Exec { title, command, .. } => {
            texts.extend([title.as_str(), command.as_str()])
        }
        ConfirmationDetails::Fetch {
            title,
            prompt,
            urls,
        } => {
            texts.extend([title.as_str(), prompt.as_str()]);
            texts.extend(urls.iter().map(String::as_str));
        }
        ConfirmationDetails::Info { title, prompt } => {
            texts.extend([title.as_str(), prompt.as_str()])
        }
        ConfirmationDetails::Mcp { title, .. } => texts.extend([title.as_str(), &args]),
        ConfirmationDetails::ExitPlanMode { .. } | ConfirmationDetails::AskUser { .. } => {}
    }
    let mut hosts: Vec<IdnHost> = Vec::new();
    for host in texts.into_iter().flat_map(idn_hosts) {
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    hosts
}

/// `  ! host gіthub.com is xn--gthub-n2e.com (non-ASCII letters)`.
fn idn_line(host: &IdnHost, p: Palette) -> String {
    p.yellow(&format!(
        "  ! host {} is {} (written with non-ASCII letters)",
        one_line(&host.written),
        host.ascii_or_note()
    ))
}

/// A shell command as the confirmation shows it: byte for byte on one (wrapped) line
/// after `$`, a line break shown as `\n` and every other control or hidden character
/// shown visibly, so no part of it can scroll away from the rest or be drawn over.
fn command_line(command: &str, p: Palette) -> String {
    format!("  {} {}", p.dim("$"), p.cyan(&one_line(command)))
}

/// The menu for these details.
pub fn options(details: &ConfirmationDetails, saved_to: &str) -> Vec<(Choice, String)> {
    if let ConfirmationDetails::Mcp { .. } = details {
        return vec![
            (Choice::Once, "Allow once".to_string()),
            (Choice::Session, "Allow tool for this session".to_string()),
            (
                Choice::Server,
                "Allow all server tools for this session".to_string(),
            ),
            (
                Choice::Save,
                format!(
                    "Allow tool for all future sessions (saved to {})",
                    one_line(saved_to)
                ),
            ),
            (
                Choice::No,
                "No, tell the model what to do differently (esc)".to_string(),
            ),
        ];
    }
    let session = match details {
        ConfirmationDetails::Exec { root_commands, .. } if !root_commands.is_empty() => {
            format!(
                "Allow for this session: {}",
                one_line(&root_commands.join(", "))
            )
        }
        _ => "Allow for this session".to_string(),
    };
    let mut list = vec![
        (Choice::Once, "Allow once".to_string()),
        (Choice::Session, session),
        (
            Choice::Save,
            format!("Always allow (saved to {})", one_line(saved_to)),
        ),
    ];
    if matches!(details, ConfirmationDetails::Edit { .. }) {
        list.push((Choice::Modify, "Modify with external editor".to_string()));
    }
    list.push((
        Choice::No,
        "No, tell the model what to do differently (esc)".to_string(),
    ));
    list
}

/// Asks about one call until the user decides. `ask_line` reads the feedback for No.
pub fn confirm(
    request: &ApprovalRequest,
    ctx: &ConfirmContext,
    quiet: &TurnMode,
    ask_line: &mut dyn FnMut(&str) -> Option<String>,
) -> ApprovalDecision {
    let p = ctx.palette;
    let mut out = std::io::stdout();
    let described = describe(request, ctx);
    if !described.is_empty() {
        let _ = writeln!(out, "{}", described.join("\n"));
    }
    match &request.details {
        ConfirmationDetails::AskUser { questions, .. } => {
            return super::ask::ask_user(questions, p, quiet, ask_line)
        }
        ConfirmationDetails::ExitPlanMode { .. } => {
            return super::ask::approve_plan(p, quiet, ask_line)
        }
        _ => {}
    }
    let menu = options(&request.details, &ctx.saved_to);
    loop {
        let choice = if super::terminal::screen_reader() {
            // A numbered question answered with a typed line: nothing is redrawn.
            quiet.suspend();
            let choice = choose_by_line(&menu);
            quiet.resume();
            choice
        } else {
            choose(&menu, p)
        };
        match choice {
            Choice::Once => return ApprovalDecision::ProceedOnce,
            Choice::Session => return ApprovalDecision::ProceedAlways,
            Choice::Save => return ApprovalDecision::ProceedAlwaysAndSave,
            Choice::Server => return ApprovalDecision::ProceedAlwaysServer,
            Choice::Escape => return ApprovalDecision::Cancel { feedback: None },
            Choice::Pick(_) => continue,
            Choice::No => {
                quiet.suspend();
                let feedback = ask_line("Tell the model what to do differently (Enter to skip): ");
                quiet.resume();
                return ApprovalDecision::Cancel {
                    feedback: feedback.filter(|f| !f.trim().is_empty()),
                };
            }
            Choice::Modify => {
                let ConfirmationDetails::Edit {
                    file_path,
                    original,
                    proposed,
                    ..
                } = &request.details
                else {
                    continue;
                };
                let name = Path::new(file_path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "proposal".into());
                quiet.suspend();
                let edited = edit_proposal(&name, original, proposed);
                quiet.resume();
                match edited {
                    Ok(text) => {
                        let _ =
                            writeln!(out, "{}", p.dim("  Proposal edited; showing the new diff."));
                        return ApprovalDecision::Modify {
                            edited_content: text,
                        };
                    }
                    Err(e) => {
                        let _ = writeln!(out, "{}", p.red(&format!("  ✗ {e}")));
                    }
                }
            }
        }
    }
}

/// Shows the menu and returns the answer; falls back to a numbered question when the
/// terminal cannot be put in raw mode.
pub fn choose(menu: &[(Choice, String)], p: Palette) -> Choice {
    if terminal::enable_raw_mode().is_err() {
        return choose_by_line(menu);
    }
    // Keys typed before the question appeared must not answer it.
    while event::poll(Duration::ZERO).unwrap_or(false) {
        let _ = event::read();
    }
    let mut selected = 0usize;
    draw(menu, selected, p, false);
    let choice = loop {
        let Ok(Event::Key(KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            ..
        })) = event::read()
        else {
            continue;
        };
        let n = menu.len();
        match code {
            KeyCode::Up | KeyCode::Char('k') | KeyCode::BackTab => {
                selected = (selected + n - 1) % n
            }
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => selected = (selected + 1) % n,
            KeyCode::Enter => break menu[selected].0,
            KeyCode::Esc => break Choice::Escape,
            KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => {
                break Choice::Escape
            }
            KeyCode::Char(c) if c.is_ascii_digit() => {
                let index = (c as usize).wrapping_sub('1' as usize);
                if index < n {
                    selected = index;
                    draw(menu, selected, p, true);
                    break menu[index].0;
                }
            }
            _ => {}
        }
        draw(menu, selected, p, true);
    };
    if choice == Choice::Escape {
        if let Some(no) = menu.iter().position(|(c, _)| *c == Choice::No) {
            draw(menu, no, p, true);
        }
    }
    let _ = terminal::disable_raw_mode();
    choice
}

fn draw(menu: &[(Choice, String)], selected: usize, p: Palette, redraw: bool) {
    let mut out = std::io::stdout();
    if redraw {
        let _ = queue!(out, cursor::MoveUp(menu.len() as u16));
    }
    for (i, (_, label)) in menu.iter().enumerate() {
        let line = if i == selected {
            p.cyan(&format!(" ❯ {}. {label}", i + 1))
        } else {
            format!("   {}. {label}", i + 1)
        };
        let _ = queue!(out, terminal::Clear(terminal::ClearType::CurrentLine));
        let _ = write!(out, "\r{line}\r\n");
    }
    let _ = out.flush();
}

fn choose_by_line(menu: &[(Choice, String)]) -> Choice {
    let mut out = std::io::stdout();
    for (i, (_, label)) in menu.iter().enumerate() {
        let _ = writeln!(out, "   {}. {label}", i + 1);
    }
    let _ = write!(out, "Choose 1-{}: ", menu.len());
    let _ = out.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return Choice::Escape;
    }
    line.trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| menu.get(n.wrapping_sub(1)))
        .map(|(c, _)| *c)
        .unwrap_or(Choice::Escape)
}

#[cfg(test)]
#[path = "confirm_tests.rs"]
mod tests;
