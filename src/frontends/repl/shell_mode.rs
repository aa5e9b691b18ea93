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
use crate::platform::child_env::ChildEnvPolicy;
use crate::platform::sandbox::denial::{self, Why};
use crate::platform::sandbox::{session, SandboxMode};
use crate::protocol::content::Content;
use crate::tools::shell::live::LiveOutput;
use crate::tools::shell::process::kill_group;

use super::terminal::Palette;
use super::SessionLink;

pub use crate::frontends::slash::shell::ShellDecision;

/// What `run_shell_command`'s approval policy says about `command` now (see
/// [`crate::frontends::slash::shell::decision`]), so a `!` line gets no more than the
/// model would.
pub fn decision(link: &SessionLink, command: &str) -> ShellDecision {
    crate::frontends::slash::shell::decision(&link.policy.snapshot(), &link.services, command)
}

/// gemini-cli's `MAX_OUTPUT_LENGTH` for the history entry.
const MAX_OUTPUT_LENGTH: usize = 10_000;

/// What a command did.
pub struct ShellRun {
    pub output: String,
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    /// The `[sandbox] …` line when the output shows the sandbox refused something.
    pub sandbox_note: Option<String>,
}

/// Runs `command` in the workspace, printing its output live (bounded, see the module),
/// in the sandbox `sandbox` (`None`: the session's `sandbox.mode`).
pub fn run_command(
    command: &str,
    link: &SessionLink,
    sigint: &Receiver<()>,
    p: Palette,
    sandbox: Option<SandboxMode>,
) -> Result<ShellRun, String> {
    while sigint.try_recv().is_ok() {}
    let settings = &link.services.settings;
    let mode = session::effective_mode(settings, sandbox).map_err(|e| e.to_string())?;
    let roots = link.services.workspace.roots();
    let prepared = session::prepare_for(settings, &roots, mode)
        .map_err(|e| format!("Not run: its sandbox could not be prepared: {e}"))?;
    if prepared.is_none() && sandbox.is_some_and(|m| m != SandboxMode::Off) {
        return Err(format!("Not run: {}", session::UNSANDBOXED_WARNING));
    }
    // One pipe for stdout and stderr, so lines keep the order the command wrote them.
    let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
    let writer_err = writer
        .try_clone()
        .map_err(|e| format!("cannot make a pipe: {e}"))?;
    let mut command_line = Command::new("bash");
    ChildEnvPolicy::from_settings(settings).apply_std(&mut command_line);
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
    if let Some(prepared) = &prepared {
        prepared.apply_to(&mut command_line);
    }
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
    let output = kept.text();
    let why = if sandbox == Some(SandboxMode::ReadOnly) {
        Why::ReadOnlyUnasked
    } else {
        Why::Configured
    };
    let network = settings.sandbox.network;
    let sandbox_note = prepared
        .as_ref()
        .and_then(|_| denial::note(mode, why, network, &output));
    Ok(ShellRun {
        output,
        exit_code: status.code(),
        cancelled,
        sandbox_note,
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

/// Runs a `!` line (already permitted, in `sandbox`; `None`: `sandbox.mode`) and adds
/// it to the conversation. When the sandbox refused something, says so and offers
/// (`ask_again` reads the answer) to run it once more without the sandbox.
pub fn run_and_record(
    command: &str,
    link: &SessionLink,
    sigint: &Receiver<()>,
    p: Palette,
    sandbox: Option<SandboxMode>,
    ask_again: &mut dyn FnMut(&str) -> bool,
) {
    match run_command(command, link, sigint, p, sandbox) {
        Ok(result) => {
            if let Some(code) = result.exit_code.filter(|c| *c != 0) {
                println!("{}", p.dim(&format!("(exit code {code})")));
            }
            add_to_history(link, history_text(command, &result));
            let Some(note) = &result.sandbox_note else {
                return;
            };
            println!("{}", p.yellow(note));
            if ask_again("Run it again without the sandbox? [y/N] ") {
                run_and_record(command, link, sigint, p, Some(SandboxMode::Off), ask_again);
            }
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
