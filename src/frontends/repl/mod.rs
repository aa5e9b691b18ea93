//! The interactive front end (`troupe` without `-p`). Rustyline owns the terminal on
//! the main thread; the actix system runs on a second thread. The REPL drives its
//! session only through the [`SessionHandle`]: ops go in (`submit`, or
//! `request_blocking` when the REPL thread needs the answer), and the event loop on
//! the actix thread ([`bridge::pump`]) forwards the session's events and approval
//! requests to the REPL thread over a crossbeam channel. While the prompt waits,
//! events are printed above it through rustyline's external printer; while a turn
//! runs, the REPL thread prints them itself under a spinner and asks the
//! confirmations, answered with `Op::Decide`.

mod agent_lines;
mod ask;
pub mod bridge;
mod changes_cmd;
mod columns;
mod commands;
mod compress_cmd;
mod confirm;
mod diff_view;
mod dispatch;
mod editor;
mod edits;
mod extra_commands;
mod hooks_cmd;
mod input;
mod mcp_prompt;
mod picker;
mod render;
pub mod saved_rules;
mod session_commands;
mod session_link;
mod shell_mode;
mod start;
mod status;
mod terminal;
mod turn;
mod ui_commands;

use std::io::Write;
use std::path::PathBuf;

use crossbeam_channel::{select, Receiver};
use rustyline::error::ReadlineError;
use rustyline::ExternalPrinter;

pub use bridge::{FrontMsg, SharedStats};
pub use session_link::{SessionLink, ToolInfo};
pub use start::start_actors;
pub use ui_commands::remember_settings;

use crate::actors::session::{EndReason, SessionHandle};
use crate::frontends::slash::custom as custom_commands;
use crate::protocol::{ApprovalDecision, ApprovalMode, Op};

use self::commands::After;
use self::input::{line_editor, prompt_text, LineEditor};
use self::render::EventRenderer;
use self::terminal::Palette;
use self::turn::{run_turn_with, TurnParts};

/// Whether `/name` is one of the REPL's own commands (an MCP prompt of that name is
/// then `/<server>.<name>`).
pub fn is_builtin_command(name: &str) -> bool {
    commands::COMMANDS
        .iter()
        .any(|(c, _, _)| c.split_whitespace().next() == Some(name))
        || ["exit", "?"].contains(&name)
}

/// The interactive session's front end.
pub struct Repl {
    editor: LineEditor,
    link: SessionLink,
    events: Receiver<FrontMsg>,
    sigint: Receiver<()>,
    notices: Receiver<String>,
    palette: Palette,
    history: PathBuf,
    /// `!` alone toggles it: every line is then a shell command.
    shell_mode: bool,
    /// Custom commands from `.toml` files.
    custom: Vec<custom_commands::CustomCommand>,
    /// The status line the line editor draws under the prompt.
    status: status::StatusSlot,
    /// The effective settings, as `/settings` shows and changes them.
    settings: Option<ui_commands::Effective>,
}

impl Repl {
    /// Sets up the line editor (history in `history`) and the Ctrl+C handler.
    pub fn new(
        link: SessionLink,
        events: Receiver<FrontMsg>,
        history: PathBuf,
    ) -> Result<Self, String> {
        let (notice_tx, notices) = crossbeam_channel::unbounded();
        let (custom, problems) = crate::frontends::slash::load_custom(link.handle.services());
        for problem in problems {
            let problem = crate::engine::sanitize::for_terminal(&problem);
            eprintln!("troupe: custom command not loaded: {problem}");
        }
        let completion = input::Completion {
            workspace: link.workspace.clone(),
            custom: custom
                .iter()
                .map(|c| (c.name.clone(), c.description.clone()))
                .collect(),
        };
        let status = status::StatusSlot::default();
        let mut editor = line_editor(&link.handle, notice_tx, completion, status.clone())
            .map_err(|e| format!("cannot start the line editor: {e}"))?;
        if let Some(dir) = history.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.load_history(&history);
        let sigint = crate::platform::interrupt::forward_sigint()
            .map_err(|e| format!("cannot install the Ctrl+C handler: {e}"))?;
        let ui = link.handle.settings().ui.clone();
        terminal::set_screen_reader(ui.screen_reader);
        let mut repl = Self {
            settings: ui_commands::effective_at_start(&link.workspace),
            editor,
            link,
            events,
            sigint,
            notices,
            palette: Palette::detect(),
            history,
            shell_mode: false,
            custom,
            status,
        };
        repl.set_theme(terminal::Theme::parse(&ui.theme).unwrap_or_default());
        repl.set_vim(ui.vim_mode);
        Ok(repl)
    }

    /// Runs until the user leaves; returns the exit code.
    pub fn run(mut self, first_prompt: Option<String>) -> i32 {
        self.greet(first_prompt);
        let code = self.read_eval_loop();
        if let Some(Err(e)) = self.link.sync_saved() {
            eprintln!("troupe: could not save allow rules: {e}");
        }
        // SessionEnd, the session file flushed, background commands, MCP servers and
        // the session's threads ended.
        self.link.shutdown(EndReason::Exit);
        println!("{}", self.palette.dim("Goodbye."));
        code
    }

    /// The banner, the resumed session's line, and the prompt given on the command
    /// line (run as the first turn).
    fn greet(&mut self, first_prompt: Option<String>) {
        let p = self.palette;
        println!(
            "{} {} · {}\n{}",
            p.bold("Troupe"),
            p.dim(&format!(
                "model {}",
                crate::engine::sanitize::one_line(&self.link.model)
            )),
            p.dim(&self.link.workspace.display().to_string()),
            p.dim("Type a request, /help for commands. Ctrl+C cancels a turn; Ctrl+D leaves.")
        );
        if let Some(line) = self.link.sessions.resumed_line() {
            println!("{}", p.dim(&line));
        }
        if let Some(prompt) = first_prompt.filter(|q| !q.trim().is_empty()) {
            println!("> {prompt}");
            self.turn(prompt);
        }
    }

    /// Reads and runs lines until the user leaves (or the session stops); the exit
    /// code.
    fn read_eval_loop(&mut self) -> i32 {
        let p = self.palette;
        let mut interrupted = false;
        let under_prompt = terminal::redraws();
        if !under_prompt {
            println!("{}", status::status_line(&self.link, p));
        }
        loop {
            if !self.link.handle.is_running() {
                println!(
                    "{}",
                    p.red("The chat actor stopped (an internal error, see the log file); the session ends.")
                );
                return 1;
            }
            let prompt = self.prompt();
            let shown = under_prompt.then(|| status::status_parts(&self.link));
            self.show_status(shown.clone());
            let read = self.read_line(&prompt);
            self.show_status(None);
            if let (Some(parts), Err(e)) = (&shown, &read) {
                status::erase_after_abandoned_prompt(parts, self.link.mode(), e);
            }
            match read {
                Ok(line) => {
                    interrupted = false;
                    if self.line(&line) == After::Quit {
                        return 0;
                    }
                }
                Err(ReadlineError::Interrupted) if !interrupted => {
                    interrupted = true;
                    println!("{}", p.dim("Press Ctrl+C again (or Ctrl+D) to leave."));
                }
                Err(ReadlineError::Interrupted) | Err(ReadlineError::Eof) => return 0,
                Err(e) => {
                    eprintln!("troupe: cannot read input: {e}");
                    return 0;
                }
            }
        }
    }

    /// The prompt for the mode the REPL is in.
    fn prompt(&self) -> String {
        let mode = self.link.mode();
        if self.shell_mode {
            "[shell] > ".to_string()
        } else if mode == ApprovalMode::Default {
            "> ".to_string()
        } else {
            format!("[{}] > ", mode.as_str())
        }
    }

    /// Runs one line the user entered: `!` toggles shell mode, a shell command, a
    /// `/command`, or a prompt for the model.
    fn line(&mut self, line: &str) -> After {
        let p = self.palette;
        let text = prompt_text(line);
        if text.trim().is_empty() {
            return After::Continue;
        }
        let _ = self.editor.add_history_entry(line);
        let _ = self.editor.save_history(&self.history);
        if text.trim() == "!" {
            self.shell_mode = !self.shell_mode;
            let state = if self.shell_mode {
                "on: every line runs in the shell; `!` alone turns it off"
            } else {
                "off"
            };
            println!("{}", p.dim(&format!("Shell mode {state}.")));
        } else if self.shell_mode || text.trim_start().starts_with('!') {
            let command = text.trim_start();
            let command = if self.shell_mode {
                command
            } else {
                &command[1..]
            };
            self.shell_line(command.trim());
        } else if text.trim_start().starts_with('/') {
            return self.command(text.trim());
        } else {
            self.turn(text);
        }
        After::Continue
    }

    /// Runs a shell command the user typed (`!command`, or a line in shell mode), once
    /// the approval policy allows it, and adds it to the conversation.
    fn shell_line(&mut self, command: &str) {
        if command.is_empty() {
            return;
        }
        let Some(sandbox) = self.shell_allowed(command, "The shell command") else {
            return;
        };
        let editor = &mut self.editor;
        let mut ask = |question: &str| {
            let answer = editor.readline(question).unwrap_or_default();
            matches!(answer.trim(), "y" | "Y" | "yes")
        };
        shell_mode::run_and_record(
            command,
            &self.link,
            &self.sigint,
            self.palette,
            sandbox,
            &mut ask,
        );
    }

    fn turn(&mut self, prompt: String) {
        let model_parts = match self.expand_references(&prompt) {
            Ok(parts) => parts,
            Err(()) => return,
        };
        let failed = run_turn_with(
            TurnParts {
                editor: &mut self.editor,
                link: &self.link,
                events: &self.events,
                sigint: &self.sigint,
                palette: self.palette,
                spinner: terminal::redraws(),
            },
            prompt,
            model_parts,
        );
        // A Chat torn down by a panic closes its mailbox as it unwinds, just after it
        // reported the failed turn: let that settle so the loop sees it.
        let settle = std::time::Instant::now();
        while failed
            && self.link.handle.is_running()
            && settle.elapsed() < std::time::Duration::from_secs(1)
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if !terminal::redraws() {
            println!("{}", status::status_line(&self.link, self.palette));
        }
    }

    /// Sets (or removes) the status line under the prompt.
    fn show_status(&self, parts: Option<status::StatusParts>) {
        if let Ok(mut slot) = self.status.lock() {
            *slot = parts;
        }
    }

    /// Reads the prompt's `@path` references; prints what was read or skipped.
    fn expand_references(
        &self,
        prompt: &str,
    ) -> Result<Option<Vec<crate::protocol::content::Part>>, ()> {
        let p = self.palette;
        // Read on the session's arbiter (the FileSystem service's client is async);
        // this thread waits for the answer.
        let (handle, prompt) = (self.link.handle.clone(), prompt.to_string());
        let expanded = self.link.on_actors(async move {
            crate::actors::at_command::expand(
                &prompt,
                handle.files(),
                tokio_util::sync::CancellationToken::new(),
                crate::actors::at_command::char_budget(handle.services()),
            )
            .await
        });
        let Some(expanded) = expanded else {
            println!("{}", p.red("The session has ended."));
            return Err(());
        };
        match expanded {
            Ok(Some(expanded)) => {
                for note in &expanded.notes {
                    println!("{}", p.dim(&format!("  ℹ {note}")));
                }
                for warning in &expanded.warnings {
                    println!(
                        "{}",
                        p.yellow(&format!(
                            "  ⚠ {}",
                            crate::engine::sanitize::for_terminal(warning)
                        ))
                    );
                }
                Ok(Some(expanded.parts))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                println!(
                    "{}",
                    p.red(&format!(
                        "Exiting due to an error processing the @ command: {e}"
                    ))
                );
                Err(())
            }
        }
    }

    /// Reads a line while a helper thread prints whatever arrives meanwhile above the
    /// prompt.
    fn read_line(&mut self, prompt: &str) -> rustyline::Result<String> {
        // rustyline makes the printer's pipe without close-on-exec.
        let printer = crate::platform::descriptors::cloexec_new(|| {
            self.editor.create_external_printer().ok()
        });
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        let events = self.events.clone();
        let notices = self.notices.clone();
        let palette = self.palette;
        let session = &self.link.handle;
        let editor = &mut self.editor;
        std::thread::scope(|scope| {
            scope.spawn(move || {
                idle_printer(printer, session, &events, &notices, &stop_rx, palette)
            });
            let line = editor.readline(prompt);
            drop(stop_tx);
            line
        })
    }
}

/// Prints events and notices that arrive while the prompt waits.
fn idle_printer(
    mut printer: Option<impl ExternalPrinter>,
    session: &SessionHandle,
    events: &Receiver<FrontMsg>,
    notices: &Receiver<String>,
    stop: &Receiver<()>,
    palette: Palette,
) {
    let mut renderer = EventRenderer::new(palette);
    let mut print = |lines: Vec<String>| {
        if lines.is_empty() {
            return;
        }
        let text = format!("{}\n", lines.join("\n"));
        match printer.as_mut() {
            Some(printer) => {
                let _ = printer.print(text);
            }
            None => {
                let _ = std::io::stdout().write_all(text.as_bytes());
            }
        }
    };
    loop {
        select! {
            recv(events) -> msg => match msg {
                Ok(FrontMsg::Event(event)) => print(renderer.render(&event)),
                // No turn runs: nobody is there to answer it.
                Ok(FrontMsg::Approval { id, .. }) => {
                    let decision = ApprovalDecision::Cancel { feedback: None };
                    session.submit(Op::Decide { id, decision });
                }
                Err(_) => return,
            },
            recv(notices) -> notice => match notice {
                Ok(text) => print(vec![palette.yellow(&format!("  ℹ {text}"))]),
                Err(_) => return,
            },
            recv(stop) -> _ => return,
        }
    }
}
