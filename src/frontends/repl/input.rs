//! The line editor's behaviour: multi-line input (a trailing `\`, an unclosed code
//! fence, or Alt+Enter continue the prompt), completion of slash commands, and the
//! approval-mode chords (Shift+Tab cycles default → auto_edit → plan, Ctrl+Y toggles
//! yolo), which report the new mode through the idle printer.

use crossbeam_channel::Sender;
use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Editor, Event, EventContext, EventHandler, Helper,
    KeyCode, KeyEvent, Modifiers, RepeatCount,
};

use std::sync::Arc;

use crate::actors::session::SessionHandle;
use crate::protocol::{ApprovalMode, Op};

use super::commands::COMMANDS;
use super::status::{status_hint, StatusHint, StatusSlot};
use super::terminal::Palette;

/// The REPL's line editor.
pub type LineEditor = Editor<InputHelper, FileHistory>;

/// What Tab completes besides the built-in commands.
#[derive(Debug, Clone, Default)]
pub struct Completion {
    /// Where `@path` completion looks.
    pub workspace: std::path::PathBuf,
    /// Custom commands: name and description.
    pub custom: Vec<(String, String)>,
}

/// Completion and multi-line validation for the prompt, and the status line under it.
pub struct InputHelper {
    completion: Completion,
    status: StatusSlot,
    /// The session, whose approval mode the status line shows.
    session: Arc<SessionHandle>,
    palette: Palette,
}

/// The arguments Tab offers after a command.
const COMMAND_ARGS: &[(&str, &[&str])] = &[
    ("approval-mode", &["plan", "default", "auto_edit", "yolo"]),
    ("memory", &["show", "refresh", "add"]),
    ("tools", &["desc", "nodesc"]),
    ("directory", &["show", "add"]),
    ("approvals", &["revoke"]),
    ("theme", &["default", "light", "no-color"]),
];

impl Completer for InputHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let head = &line[..pos];
        if let Some((start, typed)) = crate::engine::at_refs::typing_at(head) {
            return Ok((start, complete_path(&self.completion.workspace, typed)));
        }
        if !head.starts_with('/') {
            return Ok((0, Vec::new()));
        }
        if let Some(list) = ["/directory add ", "/dir add "]
            .iter()
            .find_map(|c| head.strip_prefix(c))
        {
            // `/directory add a,b`: directories for the part after the last comma.
            let last = list.rsplit(',').next().unwrap_or("").trim_start();
            let dirs = complete_path(&self.completion.workspace, last)
                .into_iter()
                .filter(|c| c.ends_with('/'))
                .collect();
            return Ok((head.len() - last.len(), dirs));
        }
        if let Some((command, rest)) = head[1..].split_once(' ') {
            if rest.contains(' ') {
                return Ok((0, Vec::new()));
            }
            let found = COMMAND_ARGS
                .iter()
                .filter(|(c, _)| *c == command)
                .flat_map(|(_, args)| args.iter())
                .filter(|a| a.starts_with(rest))
                .map(|a| a.to_string())
                .collect();
            return Ok((head.len() - rest.len(), found));
        }
        let typed = &head[1..];
        let builtin = COMMANDS.iter().map(|(name, _, _)| name.to_string());
        let custom = self.completion.custom.iter().map(|(name, _)| name.clone());
        let mut found: Vec<String> = builtin
            .chain(custom)
            .filter(|name| name.starts_with(typed))
            .map(|name| format!("/{name}"))
            .collect();
        found.sort();
        found.dedup();
        Ok((0, found))
    }
}

/// Entries of the directory part of `typed` (relative to `workspace`) whose names start
/// with its last part; directories end with `/`. Hidden entries only when asked for.
fn complete_path(workspace: &std::path::Path, typed: &str) -> Vec<String> {
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let Ok(entries) = std::fs::read_dir(workspace.join(dir)) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let hidden = name.starts_with('.') && !prefix.starts_with('.');
            if !name.starts_with(prefix) || hidden || name == ".git" {
                return None;
            }
            let slash = if e.path().is_dir() { "/" } else { "" };
            Some(format!("{dir}{}{slash}", name.replace(' ', "\\ ")))
        })
        .collect();
    found.sort_by(|a, b| crate::engine::text::locale_cmp(a, b));
    found
}

impl InputHelper {
    /// The colours of the status line from now on (`/theme`).
    pub fn set_palette(&mut self, palette: Palette) {
        self.palette = palette;
    }
}

impl Hinter for InputHelper {
    type Hint = StatusHint;
    fn hint(&self, _: &str, _: usize, _: &rustyline::Context<'_>) -> Option<StatusHint> {
        status_hint(&self.status, self.session.approval_mode())
    }
}

impl Highlighter for InputHelper {
    /// The status line is dimmed (rustyline lays out the plain text; only this output
    /// carries the escapes).
    fn highlight_hint<'h>(&self, hint: &'h str) -> std::borrow::Cow<'h, str> {
        std::borrow::Cow::Owned(self.palette.dim(hint))
    }
}

impl Validator for InputHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if needs_more(ctx.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for InputHelper {}

/// Whether the input continues on another line.
pub fn needs_more(input: &str) -> bool {
    let fences = input
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    input.ends_with('\\') || !fences.is_multiple_of(2)
}

/// The prompt text as the model gets it: `\`-newline continuations joined.
pub fn prompt_text(input: &str) -> String {
    input.replace("\\\n", "\n")
}

/// Switches the approval mode from a key chord (on the line editor's thread, which
/// waits for the session to take the new mode before the line is redrawn).
struct ModeChord {
    session: Arc<SessionHandle>,
    notices: Sender<String>,
    next: fn(ApprovalMode) -> ApprovalMode,
}

impl ConditionalEventHandler for ModeChord {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        let mode = (self.next)(self.session.approval_mode());
        if let Err(e) = self.session.request_blocking(Op::SetApprovalMode(mode)) {
            tracing::warn!("approval mode not set: {e}");
            return Some(Cmd::Noop);
        }
        let _ = self
            .notices
            .send(format!("Approval mode: {}", mode.as_str()));
        // Redraws the line: the status line under it shows the new mode.
        Some(Cmd::Repaint)
    }
}

/// Shift+Tab: default → auto_edit → plan → default (yolo goes back to default).
pub fn cycle_mode(mode: ApprovalMode) -> ApprovalMode {
    match mode {
        ApprovalMode::Default => ApprovalMode::AutoEdit,
        ApprovalMode::AutoEdit => ApprovalMode::Plan,
        ApprovalMode::Plan | ApprovalMode::Yolo => ApprovalMode::Default,
    }
}

/// Ctrl+Y: yolo on and off.
pub fn toggle_yolo(mode: ApprovalMode) -> ApprovalMode {
    if mode == ApprovalMode::Yolo {
        ApprovalMode::Default
    } else {
        ApprovalMode::Yolo
    }
}

/// Builds the line editor with its helper and key bindings.
pub fn line_editor(
    session: &Arc<SessionHandle>,
    notices: Sender<String>,
    completion: Completion,
    status: StatusSlot,
) -> rustyline::Result<LineEditor> {
    let config = Config::builder()
        .auto_add_history(false)
        .max_history_size(2000)?
        .build();
    let mut editor = LineEditor::with_config(config)?;
    editor.set_helper(Some(InputHelper {
        completion,
        status,
        session: session.clone(),
        palette: Palette::detect(),
    }));
    editor.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);
    editor.bind_sequence(
        KeyEvent(KeyCode::BackTab, Modifiers::NONE),
        EventHandler::Conditional(Box::new(ModeChord {
            session: session.clone(),
            notices: notices.clone(),
            next: cycle_mode,
        })),
    );
    editor.bind_sequence(
        KeyEvent::ctrl('Y'),
        EventHandler::Conditional(Box::new(ModeChord {
            session: session.clone(),
            notices,
            next: toggle_yolo,
        })),
    );
    Ok(editor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_and_fences() {
        assert!(needs_more("first line\\"));
        assert!(needs_more("```rust\nfn main() {}"));
        assert!(!needs_more("```rust\nfn main() {}\n```"));
        assert!(!needs_more("plain"));
        assert_eq!(prompt_text("a\\\nb"), "a\nb");
        assert_eq!(cycle_mode(ApprovalMode::Default), ApprovalMode::AutoEdit);
        assert_eq!(toggle_yolo(ApprovalMode::Yolo), ApprovalMode::Default);
    }
}
