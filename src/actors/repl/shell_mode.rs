//! `!` shell mode: a line starting with `!` (or any line while shell mode is on) runs
//! with `bash -c` in a process group of its own, its output printed as it comes;
//! Ctrl+C ends the whole group. The command and its output are then added to the
//! conversation as gemini-cli does, so the model sees what the user ran.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use crossbeam_channel::{select, Receiver};
use futures::executor::block_on;
use nix::sys::signal::Signal;

use crate::actors::chat::{GetHistory, SetHistory};
use crate::engine::content::Content;
use crate::tools::shell::process::kill_group;

use super::terminal::Palette;
use super::SessionLink;

/// gemini-cli's `MAX_OUTPUT_LENGTH` for the history entry.
const MAX_OUTPUT_LENGTH: usize = 10_000;

/// What a command did.
pub struct ShellRun {
    pub output: String,
    pub exit_code: Option<i32>,
    pub cancelled: bool,
}

/// Runs `command` in the workspace, printing its output live.
pub fn run_command(
    command: &str,
    link: &SessionLink,
    sigint: &Receiver<()>,
    p: Palette,
) -> Result<ShellRun, String> {
    while sigint.try_recv().is_ok() {}
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(&link.workspace)
        .env("GEMINI_CLI", "1")
        .env("TROUPE", "1")
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run bash: {e}"))?;
    let pgid = i32::try_from(child.id()).unwrap_or(0);
    let (lines_tx, lines) = crossbeam_channel::unbounded::<String>();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|stream| {
        let tx = lines_tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                match line {
                    Ok(line) => {
                        let _ = tx.send(line);
                    }
                    Err(_) => break,
                }
            }
        })
    })
    .collect();
    drop(lines_tx);
    let mut output = Vec::new();
    let mut cancelled = false;
    let mut out = std::io::stdout();
    loop {
        select! {
            recv(lines) -> line => match line {
                Ok(line) => {
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                    output.push(line);
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
    for reader in readers {
        let _ = reader.join();
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if cancelled {
        println!("{}", p.yellow("Command cancelled."));
    }
    Ok(ShellRun {
        output: output.join("\n"),
        exit_code: status.code(),
        cancelled,
    })
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

/// Runs a `!` line and adds it to the conversation.
pub fn run_and_record(command: &str, link: &SessionLink, sigint: &Receiver<()>, p: Palette) {
    let command = command.trim();
    if command.is_empty() {
        return;
    }
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
