//! `!` shell mode: a line starting with `!` (or any line while shell mode is on) runs
//! with `bash -c` through the shell tool's process code (a process group of its own,
//! registered so that SIGTERM to Troupe ends it, pdeathsig, the environment policy,
//! the sandbox), started and read on the session's arbiter. Its output is printed as
//! it comes (bounded as `run_shell_command`'s: the first 64 KiB, then the newest
//! 16 KiB after a line saying how much was left out); Ctrl+C ends the whole group.
//! The command and its output are then added to the conversation as gemini-cli does,
//! so the model sees what the user ran.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use crossbeam_channel::{select, Receiver, Sender};
use tokio_util::sync::CancellationToken;

use crate::frontends::slash::shell::UserShell;
use crate::platform::sandbox::SandboxMode;
use crate::protocol::content::Content;
use crate::protocol::{Op, OpReply};
use crate::tools::shell::live::LiveOutput;
use crate::tools::shell::process::Stop;

use super::terminal::Palette;
use super::SessionLink;

pub use crate::frontends::slash::shell::ShellDecision;

/// What `run_shell_command`'s approval policy says about `command` now (see
/// [`crate::frontends::slash::shell::decision`]), so a `!` line gets no more than the
/// model would.
pub fn decision(link: &SessionLink, command: &str) -> ShellDecision {
    crate::frontends::slash::shell::decision(&link.handle.policy(), link.handle.services(), command)
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

/// What the command's task on the session's arbiter tells the REPL thread.
enum ShellMsg {
    /// Output to show now (already bounded by [`LiveOutput`]).
    Text(String),
    /// The command is over: its result (`cancelled` is the REPL thread's to say).
    Done(Result<ShellRun, String>),
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
    let services = link.handle.services();
    let shell = UserShell::prepare(command, services, sandbox, user_env(services))?;
    let (out, messages) = crossbeam_channel::unbounded();
    let cancel = CancellationToken::new();
    let started = link.actors.spawn(run_on_actors(shell, out, cancel.clone()));
    if !started {
        return Err("Not run: the session has ended.".into());
    }
    let (result, cancelled) = show_until_done(&messages, sigint, &cancel);
    if cancelled {
        println!("{}", p.yellow("Command cancelled."));
    }
    result.map(|run| ShellRun { cancelled, ..run })
}

/// What a `!` command gets set besides what every shell command gets: `GEMINI_CLI`,
/// and the user's `TERM` where the environment policy passes it (the shell tool's
/// `TERM=dumb` is for the model's commands).
fn user_env(services: &crate::tools::Services) -> Vec<(String, String)> {
    let mut env = vec![("GEMINI_CLI".to_string(), "1".to_string())];
    let policy = crate::platform::child_env::ChildEnvPolicy::from_settings(&services.settings);
    if let Some(term) = std::env::var("TERM").ok().filter(|_| policy.allows("TERM")) {
        env.push(("TERM".into(), term));
    }
    env
}

/// On the REPL thread: prints the command's output as it comes until it is done;
/// Ctrl+C cancels it. The result, and whether it was cancelled.
fn show_until_done(
    messages: &Receiver<ShellMsg>,
    sigint: &Receiver<()>,
    cancel: &CancellationToken,
) -> (Result<ShellRun, String>, bool) {
    let mut ends_in_newline = true;
    let mut cancelled = false;
    let mut out = std::io::stdout();
    let result = loop {
        select! {
            recv(messages) -> message => match message {
                Ok(ShellMsg::Text(text)) => {
                    if !text.is_empty() {
                        ends_in_newline = text.ends_with('\n');
                        let _ = out.write_all(text.as_bytes());
                        let _ = out.flush();
                    }
                }
                Ok(ShellMsg::Done(result)) => break result,
                Err(_) => break Err("the session has ended".to_string()),
            },
            recv(sigint) -> _ => {
                cancelled = true;
                cancel.cancel();
            }
        }
    };
    if !ends_in_newline {
        println!();
    }
    (result, cancelled)
}

/// On the session's arbiter: starts the command, sends its output to the REPL thread
/// as it comes and its result at the end. On `cancel` its group gets SIGTERM, then
/// SIGKILL for what is left ([`crate::tools::shell::process::RunningCommand::terminate`]).
async fn run_on_actors(shell: UserShell, out: Sender<ShellMsg>, cancel: CancellationToken) {
    let mut running = match shell.spawn() {
        Ok(running) => running,
        Err(e) => {
            let _ = out.send(ShellMsg::Done(Err(format!("cannot run bash: {e}"))));
            return;
        }
    };
    let mut shown = LiveOutput::raw();
    let mut kept = HistoryHead::default();
    let never = CancellationToken::new();
    let mut on_chunk = |chunk: &[u8]| {
        kept.push(chunk);
        if let Some(text) = shown.push(chunk) {
            let _ = out.send(ShellMsg::Text(text));
        }
    };
    let stop = tokio::select! {
        stop = running.wait(&never, None, None, &mut on_chunk) => Some(stop),
        _ = cancel.cancelled() => None,
    };
    let stop = match stop {
        Some(stop) => stop,
        None => {
            running.terminate().await;
            // What the command wrote before it ended.
            running.wait(&never, None, None, &mut on_chunk).await
        }
    };
    let status = match stop {
        Stop::Exited(status) => status,
        Stop::Inactive | Stop::Cancelled | Stop::Deadline => ExitStatus::from_raw(libc::SIGKILL),
    };
    // The command is over: what it left running in its group ends with `running`.
    drop(running);
    if let Some(rest) = shown.finish() {
        let _ = out.send(ShellMsg::Text(rest));
    }
    let output = kept.text();
    let sandbox_note = shell.sandbox_note(&output);
    let _ = out.send(ShellMsg::Done(Ok(ShellRun {
        output,
        exit_code: status.code(),
        cancelled: false,
        sandbox_note,
    })));
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
    if let Ok(OpReply::History(mut history)) = link.request(Op::GetHistory) {
        history.push(Content::user_text(text));
        if let Err(e) = link.request(Op::SetHistory(history)) {
            tracing::warn!("the command was not added to the conversation: {e}");
        }
    }
}
