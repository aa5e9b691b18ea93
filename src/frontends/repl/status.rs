//! The status line under the prompt (gemini-cli's footer): model, approval mode, `vim`
//! when the line editor is in vi mode, how much of the context window is left, and how
//! many context files are loaded. On a
//! terminal the line editor draws it on the row below the input while the prompt
//! waits ([`StatusHint`]); otherwise it is printed after each answer. Also the `@{…}` file read of custom commands.

use std::sync::{Arc, Mutex};

use rustyline::hint::Hint;

use crate::protocol::{ApprovalMode, Op, OpReply};

use super::terminal::Palette;
use super::SessionLink;

/// The parts of the status line that hold still while the prompt waits (the mode is
/// read live: Shift+Tab changes it under the cursor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusParts {
    pub model: String,
    /// `N% context left · K context files`.
    pub tail: String,
}

/// What the line editor draws under the prompt; `None` for prompts without a status
/// (a confirmation's `Allow? [y/N]`).
pub type StatusSlot = Arc<Mutex<Option<StatusParts>>>;

/// The model, the context left and the number of context files, now.
pub fn status_parts(link: &SessionLink) -> StatusParts {
    let left = context_left(link);
    let files = match link.request(Op::Memory { refresh: false }) {
        Ok(OpReply::Memory(report)) => report.files.len(),
        _ => 0,
    };
    let s = if files == 1 { "" } else { "s" };
    let vim = if link.vim() { "vim · " } else { "" };
    StatusParts {
        model: link.model.clone(),
        tail: format!("{vim}{left}% context left · {files} context file{s}"),
    }
}

/// How much of the context window the last prompt left, in percent.
pub fn context_left(link: &SessionLink) -> u64 {
    let limit = link
        .handle
        .settings()
        .model
        .compression
        .token_limit(&link.model)
        .max(1);
    let used = link
        .stats
        .lock()
        .map(|s| s.settled().last_prompt_tokens)
        .unwrap_or(0);
    100u64.saturating_sub(used.saturating_mul(100) / limit)
}

/// `model · mode · N% context left · K context files`, plain. The model's name may
/// come from the model server (its first listed model), so it is shown sanitised.
pub fn status_text(parts: &StatusParts, mode: ApprovalMode) -> String {
    format!(
        "{} · {} · {}",
        crate::engine::sanitize::one_line(&parts.model),
        mode.as_str(),
        parts.tail
    )
}

/// The status line, dimmed, for printing on its own line.
pub fn status_line(link: &SessionLink, p: Palette) -> String {
    p.dim(&status_text(&status_parts(link), link.mode()))
}

/// The status line as rustyline's hint: drawn after the input, on the row under it
/// (the hint starts with a newline; rustyline counts its rows in the layout, moves the
/// cursor back up, and erases it when the line is accepted). It never completes into
/// the input (→ at the end of the line inserts nothing).
pub struct StatusHint(pub String);

impl Hint for StatusHint {
    fn display(&self) -> &str {
        &self.0
    }
    fn completion(&self) -> Option<&str> {
        None
    }
}

/// The hint for the prompt now, when it has a status.
pub fn status_hint(slot: &StatusSlot, mode: ApprovalMode) -> Option<StatusHint> {
    let parts = slot.lock().ok()?.clone()?;
    Some(StatusHint(format!("\n{}", status_text(&parts, mode))))
}

/// Erases the status line a prompt left on the screen when it ended without accepting
/// a line (rustyline leaves the hint drawn then): after Ctrl+C the cursor is on the row
/// after the status, after Ctrl+D on the status's first row.
pub fn erase_after_abandoned_prompt(
    parts: &StatusParts,
    mode: ApprovalMode,
    how: &rustyline::error::ReadlineError,
) {
    use std::io::Write as _;
    let up = match how {
        rustyline::error::ReadlineError::Interrupted => {
            let width = status_text(parts, mode).chars().count().max(1);
            let columns = crossterm::terminal::size()
                .map(|(cols, _)| usize::from(cols))
                .unwrap_or(80)
                .max(1);
            width.div_ceil(columns)
        }
        rustyline::error::ReadlineError::Eof => 0,
        _ => return,
    };
    let mut out = std::io::stdout();
    if up > 0 {
        let _ = write!(out, "\x1b[{up}A");
    }
    let _ = write!(out, "\r\x1b[J");
    let _ = out.flush();
}

/// A workspace file's text for `@{path}`, through the FileSystem service (confined),
/// read on the session's arbiter.
pub fn read_workspace_file(link: &SessionLink, path: &str) -> Result<String, String> {
    let (handle, path) = (link.handle.clone(), path.to_string());
    link.on_actors(async move {
        crate::frontends::slash::read_workspace_file(handle.files(), &path).await
    })
    .unwrap_or_else(|| Err("the session has ended".into()))
}
