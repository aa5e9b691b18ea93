//! How the REPL runs a `/command` line (the extra commands, custom commands with their
//! `!{…}` and `@{…}` injections, MCP prompts, its own commands) and the approval of the
//! shell commands the user starts.

use std::io::Write;

use super::commands::{self, After};
use super::{extra_commands, mcp_prompt, shell_mode, status, Repl};
use crate::frontends::slash::custom as custom_commands;

impl Repl {
    pub(super) fn command(&mut self, line: &str) -> After {
        let body = line.trim_start_matches('/');
        let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        if let Some(lines) = self.ui_command(name, args) {
            println!("{}", lines.join("\n"));
            return After::Continue;
        }
        if let Some(extra) = extra_commands::run(name, args, &mut self.link, self.palette) {
            let (lines, prompt) = match extra {
                extra_commands::Extra::Lines(lines) => (lines, None),
                extra_commands::Extra::Prompt(lines, prompt) => (lines, Some(prompt)),
            };
            if !lines.is_empty() {
                println!("{}", lines.join("\n"));
            }
            if let Some(prompt) = prompt {
                self.turn(prompt);
            }
            return After::Continue;
        }
        let builtin = commands::COMMANDS.iter().any(|(c, _, _)| *c == name);
        if let Some(custom) = self.custom.iter().find(|c| c.name == name).cloned() {
            if !builtin {
                if let Some(prompt) = self.custom_prompt(&custom, line, args.trim()) {
                    self.turn(prompt);
                }
                return After::Continue;
            }
        }
        match mcp_prompt::run(&self.link, &self.custom, name, args, self.palette) {
            Some(mcp_prompt::PromptOutcome::Submit(prompt)) => {
                self.turn(prompt);
                return After::Continue;
            }
            Some(mcp_prompt::PromptOutcome::Lines(lines)) => {
                println!("{}", lines.join("\n"));
                return After::Continue;
            }
            None => {}
        }
        if name.is_empty() || name == "help" || name == "?" {
            let custom: Vec<(String, String)> = self
                .custom
                .iter()
                .map(|c| {
                    let name = crate::engine::sanitize::one_line(&c.name);
                    let what = crate::engine::sanitize::one_line(&c.description);
                    (format!("/{name}"), what.into_owned())
                })
                .collect();
            println!("{}", commands::help(&custom, self.palette).join("\n"));
            return After::Continue;
        }
        let (lines, after) = commands::run(line, &self.link, self.palette);
        let mut out = std::io::stdout();
        if after == After::ClearScreen && super::terminal::redraws() {
            let _ = write!(out, "\x1b[2J\x1b[H");
        }
        if !lines.is_empty() {
            let _ = writeln!(out, "{}", lines.join("\n"));
        }
        let _ = out.flush();
        after
    }

    /// A custom command's prompt with `{{args}}`, `!{…}` and `@{…}` filled in; `None`
    /// when a shell command was refused or an injection failed (said on screen).
    fn custom_prompt(
        &mut self,
        command: &custom_commands::CustomCommand,
        line: &str,
        args: &str,
    ) -> Option<String> {
        use custom_commands::Injection;
        let p = self.palette;
        let mut prompt = String::new();
        for piece in custom_commands::prepare(&command.prompt, line.trim(), args) {
            match piece {
                Injection::Text(text) => prompt.push_str(&text),
                Injection::Shell(shell) => {
                    let sandbox = self.shell_allowed(&shell, &format!("/{}", command.name))?;
                    match shell_mode::run_command(&shell, &self.link, &self.sigint, p, sandbox) {
                        Ok(run) => {
                            if let Some(note) = &run.sandbox_note {
                                println!("{}", p.yellow(note));
                            }
                            prompt.push_str(&run.output);
                            if let Some(code) = run.exit_code.filter(|c| *c != 0) {
                                prompt.push_str(&format!(
                                    "\n[Shell command exited with code {code}]"
                                ));
                            }
                        }
                        Err(e) => {
                            println!("{}", p.red(&e));
                            return None;
                        }
                    }
                }
                Injection::File(path) => match status::read_workspace_file(&self.link, &path) {
                    Ok(text) => prompt.push_str(&text),
                    Err(e) => {
                        println!("{}", p.red(&format!("@{{{path}}}: {e}")));
                        return None;
                    }
                },
            }
        }
        Some(prompt)
    }

    /// Applies `run_shell_command`'s approval policy to a command the user started
    /// (`!`, or `!{…}` of a custom command): runs, asks here, or refuses. `Some` with
    /// the sandbox it runs in (`None` inside: the session's `sandbox.mode`) when it runs.
    pub(super) fn shell_allowed(
        &mut self,
        command: &str,
        who: &str,
    ) -> Option<Option<crate::platform::sandbox::SandboxMode>> {
        use crate::engine::policy::PolicyDecision;
        let p = self.palette;
        let decided = shell_mode::decision(&self.link, command);
        match decided.decision {
            PolicyDecision::Allow => Some(decided.sandbox),
            PolicyDecision::Deny(reason) => {
                println!("{}", p.yellow(&format!("Not run: {reason}")));
                None
            }
            PolicyDecision::Ask => {
                let shown = crate::engine::sanitize::one_line(command);
                println!("{who} wants to run a shell command: {}", p.bold(&shown));
                let answer = self.editor.readline("Allow? [y/N] ").unwrap_or_default();
                let yes = matches!(answer.trim(), "y" | "Y" | "yes");
                if !yes {
                    println!("{}", p.yellow("Not run; the command was cancelled."));
                }
                yes.then_some(None)
            }
        }
    }
}
