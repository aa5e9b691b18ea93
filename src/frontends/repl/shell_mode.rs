//! `!` shell mode: a line starting with `!` (or any line while shell mode is on) runs
//! with `bash -c` in a process group of its own, its output printed as it comes
//! (bounded as `run_shell_command`'s: the first 64 KiB, then the newest 16 KiB after a
//! line saying how much was left out);
//! Ctrl+C ends the whole group. The command and its output are then added to the
//! conversation as gemini-cli does, so the model sees what the user ran.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use crossbeam_channel::{select, Receiver};
use futures::executor::block_on;
use nix::sys::signal::Signal;

use crate::actors::chat::{GetHistory, SetHistory};
use crate::engine::policy::{decide, PolicyDecision};
use crate::engine::shell_syntax;
use crate::protocol::content::Content;
use crate::protocol::ToolKind;
use crate::tools::shell::live::LiveOutput;
use crate::tools::shell::process::kill_group;

use super::terminal::Palette;
use super::SessionLink;

/// What `run_shell_command`'s approval policy says about `command` now: the mode, the
/// syntax-tree read-only verdict (paths inside the workspace) and the session's allow
/// rules keyed as for the model's calls, so a `!` line gets no more than the model would.
pub fn decision(link: &SessionLink, command: &str) -> PolicyDecision {
    let services = &link.services;
    let cwd = services.workspace.primary().to_path_buf();
    let hint = matches!(
        crate::tools::shell::readonly::verdict(command, &cwd, services),
        crate::engine::shell_readonly::Verdict::ReadOnly
    )
    .then_some(true);
    let Ok(state) = link.policy.lock() else {
        return PolicyDecision::Ask;
    };
    match decide(state.mode, ToolKind::Execute, hint) {
        PolicyDecision::Ask
            if state.allows("run_shell_command", &shell_syntax::allow_list_keys(command)) =>
        {
            PolicyDecision::Allow
        }
        other => other,
    }
}

/// gemini-cli's `MAX_OUTPUT_LENGTH` for the history entry.
const MAX_OUTPUT_LENGTH: usize = 10_000;

/// What a command did.
pub struct ShellRun {
    pub output: String,
    pub exit_code: Option<i32>,
    pub cancelled: bool,
}

/// Runs `command` in the workspace, printing its output live (bounded, see the module).
pub fn run_command(
    command: &str,
    link: &SessionLink,
    sigint: &Receiver<()>,
    p: Palette,
) -> Result<ShellRun, String> {
    while sigint.try_recv().is_ok() {}
    // One pipe for stdout and stderr, so lines keep the order the command wrote them.
    let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
    let writer_err = writer
        .try_clone()
        .map_err(|e| format!("cannot make a pipe: {e}"))?;
    let mut command_line = Command::new("bash");
    command_line
        .arg("-c")
        .arg(command)
        .current_dir(&link.workspace)
        .env("GEMINI_CLI", "1")
        .env("TROUPE", "1")
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_err)
        .process_group(0);
    let mut child = command_line
        .spawn()
        .map_err(|e| format!("cannot run bash: {e}"))?;
    // The parent's copies of the write end must go, or the reader never sees the end.
    drop(command_line);
    let pgid = i32::try_from(child.id()).unwrap_or(0);
    // Chunks, not lines: a command that writes one endless line is still bounded. The
    // channel is bounded too, so a fast command waits for the screen.
    let (chunks_tx, chunks) = crossbeam_channel::bounded::<Vec<u8>>(16);
    let reader_thread = std::thread::spawn(move || {
        let mut reader = reader;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if chunks_tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    let mut shown = LiveOutput::raw();
    let mut kept = HistoryHead::default();
    let mut ends_in_newline = true;
    let mut cancelled = false;
    let mut out = std::io::stdout();
    let mut show = |text: &str| {
        if !text.is_empty() {
            ends_in_newline = text.ends_with('\n');
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    };
    loop {
        select! {
            recv(chunks) -> chunk => match chunk {
                Ok(chunk) => {
                    kept.push(&chunk);
                    if let Some(text) = shown.push(&chunk) {
                        show(&text);
                    }
                }
                Err(_) => break,
            },
            recv(sigint) -> _ => {
                cancelled = true;
                kill_group(pgid, Signal::SIGTERM);
                std::thread::sleep(Duration::from_millis(200));
                kill_group(pgid, Signal::SIGKILL);
            }
        }
    }
    if let Some(rest) = shown.finish() {
        show(&rest);
    }
    if !ends_in_newline {
        println!();
    }
    let _ = reader_thread.join();
    let status = child.wait().map_err(|e| e.to_string())?;
    if cancelled {
        println!("{}", p.yellow("Command cancelled."));
    }
    Ok(ShellRun {
        output: kept.text(),
        exit_code: status.code(),
        cancelled,
    })
}

/// The start of a command's output, as much as the history entry can use
/// ([`MAX_OUTPUT_LENGTH`] characters): the rest is shown (bounded) but not kept.
#[derive(Default)]
struct HistoryHead {
    bytes: Vec<u8>,
}

/// Enough bytes for [`MAX_OUTPUT_LENGTH`] characters and one more (so the entry still
/// says it was truncated).
const HISTORY_HEAD_BYTES: usize = 4 * (MAX_OUTPUT_LENGTH + 1) + 2;

impl HistoryHead {
    fn push(&mut self, chunk: &[u8]) {
        let room = HISTORY_HEAD_BYTES.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(&chunk[..room.min(chunk.len())]);
    }

    /// The output as its lines joined by `\n` (`\r\n` ends a line too), as the
    /// line-by-line reading before gave it.
    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes).replace("\r\n", "\n");
        match text.strip_suffix('\n') {
            Some(body) => body.to_string(),
            None => text,
        }
    }
}

/// The text gemini-cli's `addShellCommandToGeminiHistory` adds for a command.
pub fn history_text(command: &str, result: &ShellRun) -> String {
    let mut text = result.output.clone();
    if result.cancelled {
        text.push_str("\nCommand was cancelled.");
    } else if let Some(code) = result.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\nCommand exited with code {code}."));
    }
    if text.chars().count() > MAX_OUTPUT_LENGTH {
        text = text.chars().take(MAX_OUTPUT_LENGTH).collect::<String>() + "\n... (truncated)";
    }
    let escape = |s: &str| s.replace('\\', "\\\\").replace('`', "\\`");
    format!(
        "I ran the following shell command:\n```sh\n{}\n```\n\nThis produced the following result:\n```\n{}\n```",
        escape(command),
        escape(&text)
    )
}

/// Runs a `!` line (already permitted) and adds it to the conversation.
pub fn run_and_record(command: &str, link: &SessionLink, sigint: &Receiver<()>, p: Palette) {
    match run_command(command, link, sigint, p) {
        Ok(result) => {
            if let Some(code) = result.exit_code.filter(|c| *c != 0) {
                println!("{}", p.dim(&format!("(exit code {code})")));
            }
            add_to_history(link, history_text(command, &result));
        }
        Err(e) => println!("{}", p.red(&e)),
    }
}

/// Appends one user message to the conversation (no turn runs).
pub fn add_to_history(link: &SessionLink, text: String) {
    if let Ok(mut history) = block_on(link.chat.send(GetHistory)) {
        history.push(Content::user_text(text));
        link.chat.do_send(SetHistory(history));
    }
}
