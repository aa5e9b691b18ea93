//! `run_shell_command`: a `bash -c` command in the workspace, its combined output
//! streamed live to the front end and returned to the model in gemini-cli's format.
//! Commands containing command substitution are refused before they run; known-safe
//! read-only commands run without asking; "allow always" remembers root commands.

pub mod background;
pub mod format;
pub mod live;
pub mod process;
pub mod readonly;
pub mod sandboxing;

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use self::format::{aborted_text, head_tail_excerpt, result_text, wrap_untrusted, ShellResult};
use self::process::{group_alive, group_members, signal_name, RunningCommand, ShellSpec, Stop};
use super::{PolicyHint, Services, Tool, ToolContext};
use crate::engine::shell_readonly::Verdict;
use crate::engine::shell_syntax;
use crate::platform::child_env::ChildEnvPolicy;
use crate::platform::filesystem::FsError;
use crate::protocol::{AllowKey, ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};

/// What the model reads when a command is refused for command substitution.
pub const SUBSTITUTION_BLOCKED: &str = "Command injection detected: command substitution syntax ($(), backticks, <() or >()) found in command arguments. On PowerShell, @() array subexpressions and $() subexpressions are also blocked. This is a security risk and the command was blocked.";

/// How long a background command runs before its initial output is returned.
const DEFAULT_BACKGROUND_DELAY_MS: u64 = 200;

/// The `run_shell_command` tool.
pub struct RunShellCommand;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub command: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub dir_path: Option<String>,
    #[serde(default)]
    pub is_background: Option<bool>,
    #[serde(default)]
    pub delay_ms: Option<u64>,
}

/// The name the model calls.
pub const NAME: &str = "run_shell_command";

impl Tool for RunShellCommand {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Shell"
    }

    /// gemini-cli 0.61 writes this core tool's declaration out per model family, without
    /// `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn allow_key(&self) -> AllowKey {
        AllowKey::CommandPrefix
    }

    fn description(&self) -> String {
        "Runs a command as `bash -c <command>` in the workspace and returns its output. \
         The command leads its own process group (stop it with `kill -- -PGID`). For \
         long-running servers or watchers set `is_background` to true instead of using \
         `&`; follow them with list_background_processes and read_background_output. \
         Prefer quiet flags and disable pagers (e.g. `git --no-pager`).\n\n\
         The result has these lines:\n\
         Output: combined stdout and stderr, `(empty)` if none.\n\
         Error: only when the command could not be run at all.\n\
         Exit Code: only when non-zero.\n\
         Signal: only when the command was ended by a signal.\n\
         Background PIDs: only when it left background processes running.\n\
         Process Group PGID: the process group of the command.\n\
         Command substitution ($(), backticks, <(), >()) is refused."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "Exact bash command to execute as `bash -c <command>`"},
                "description": {"type": "string", "description": "Brief description of the command for the user. Be specific and concise. Ideally a single sentence. No line breaks."},
                "dir_path": {"type": "string", "description": "(OPTIONAL) The directory to run the command in, absolute or relative to the workspace root. Must be a directory within the workspace and must already exist."},
                "is_background": {"type": "boolean", "description": "Set to true for long-running commands (servers, watchers): the command is started, given a moment to show its first output, and then left running in the background."},
                "delay_ms": {"type": "integer", "minimum": 0, "description": "Optional. With is_background: how long to wait for initial output before returning (default 200)."}
            },
            "required": ["command"]
        })
    }

    fn aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[("directory", "dir_path")]
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        if p.command.trim().is_empty() {
            return Err("Command cannot be empty.".into());
        }
        Ok(())
    }

    fn policy_hint_in(&self, p: &Params, services: &Services) -> Option<PolicyHint> {
        let cwd = working_dir(p, services);
        // Unasked only under the read-only sandbox: without one, it asks as any other.
        if !crate::platform::sandbox::session::read_only_available(&services.settings) {
            return None;
        }
        // Glob patterns are checked on the FileSystem pool ([`Tool::policy_hint_settled`]).
        match readonly::verdict_deferring_globs(&p.command, &cwd, services) {
            (Verdict::ReadOnly, globs) if globs.is_empty() => Some(PolicyHint::Allow),
            (Verdict::ReadOnly, _) => None,
            (Verdict::Ask(reason), _) => {
                tracing::debug!(command = %p.command, %reason, "shell command needs approval");
                None
            }
        }
    }

    fn policy_hint_settled(
        &self,
        p: &Params,
        services: &Services,
    ) -> Option<BoxFuture<'static, Option<PolicyHint>>> {
        if !crate::platform::sandbox::session::read_only_available(&services.settings) {
            return None;
        }
        let cwd = working_dir(p, services);
        let (Verdict::ReadOnly, globs) =
            readonly::verdict_deferring_globs(&p.command, &cwd, services)
        else {
            return None;
        };
        if globs.is_empty() {
            return None;
        }
        let fs = services.fs.clone();
        Some(Box::pin(async move {
            readonly::settle_globs(globs, &fs)
                .await
                .then_some(PolicyHint::Allow)
        }))
    }

    fn approval_keys(&self, p: &Params, _: &Services) -> Vec<String> {
        shell_syntax::allow_list_keys(&p.command)
    }

    fn confirmation(
        &self,
        p: &Params,
        ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let stripped = shell_syntax::strip_shell_wrapper(&p.command);
        let dir = working_dir(p, &ctx.services).display().to_string();
        let details = ConfirmationDetails::Exec {
            title: "Confirm Shell Command".into(),
            command: p.command.clone(),
            root_commands: shell_syntax::command_roots(&stripped),
            dir,
        };
        Box::pin(async move { Some(details) })
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(run(p, ctx))
    }
}

fn working_dir(p: &Params, services: &Services) -> PathBuf {
    match p.dir_path.as_deref().filter(|d| !d.trim().is_empty()) {
        Some(dir) => services.workspace.resolve(dir),
        None => services.workspace.primary().to_path_buf(),
    }
}

async fn run(p: Params, ctx: ToolContext) -> ToolOutput {
    let stripped = shell_syntax::strip_shell_wrapper(&p.command);
    if shell_syntax::has_command_substitution(&stripped) {
        return ToolOutput::text(
            SUBSTITUTION_BLOCKED,
            "Blocked: command substitution detected in shell command.",
        );
    }
    if ctx.cancel.is_cancelled() {
        return ToolOutput::text(
            "Command was cancelled by user before it could start.",
            "Command cancelled by user.",
        );
    }
    let services = ctx.services.clone();
    let (spec, sandbox) = match command_spec(&p, &ctx, &stripped, &services).await {
        Ok(prepared) => prepared,
        Err(out) => return out,
    };
    let settings = &services.settings.shell;
    let inactivity = (settings.inactivity_timeout_secs > 0)
        .then(|| Duration::from_secs(settings.inactivity_timeout_secs));
    let mut running = match RunningCommand::spawn(&spec) {
        Ok(r) => r,
        Err(e) => {
            let message = e.to_string();
            return ToolOutput::error(ToolErrorKind::ShellExecuteError, message.clone(), message);
        }
    };
    let pid = running.pid;
    let stop = wait_showing_output(&mut running, &p, &ctx, inactivity).await;
    let output = running.output.text().trim().to_string();
    let text = match stop {
        Stop::Deadline => {
            services.processes.adopt(running, p.command.clone());
            let llm =
                format!("Command is running in background. PID: {pid}. Initial output:\n{output}");
            let display = format!("Command moved to background (PID: {pid}).");
            return ToolOutput::text(wrap_untrusted(&llm), display)
                .with_data(json!({"pid": pid, "background": true}));
        }
        Stop::Cancelled => {
            let llm = aborted_text(None, &output);
            return ToolOutput::text(wrap_untrusted(&llm), "Command cancelled by user.");
        }
        Stop::Inactive => {
            let llm = aborted_text(inactivity, &output);
            let display = llm.clone();
            return ToolOutput::text(wrap_untrusted(&llm), display);
        }
        Stop::Exited(status) => exited_result(&mut running, status, output, &services).await,
    };
    let display = display_text(&text);
    let llm = wrap_untrusted(&result_text(&text));
    let mut llm = cap_output(llm, &services, &ctx.call_id).await;
    // Troupe's own words, after (outside) the command's output.
    let notes = [
        sandbox.note(&text.output),
        running.refuse_created_protected(),
    ];
    for note in notes.into_iter().flatten() {
        llm.push('\n');
        llm.push_str(&note);
        ctx.warn(note);
    }
    ToolOutput::text(llm, display).with_data(json!({
        "exit_code": text.exit_code,
        "pgid": pid,
    }))
}

/// What the command runs as: its script, working directory (checked), environment
/// (git hardened for a command that runs unasked) and sandbox; an error is the
/// call's result, the command must not run.
async fn command_spec(
    p: &Params,
    ctx: &ToolContext,
    stripped: &str,
    services: &Services,
) -> Result<(ShellSpec, sandboxing::CommandSandbox), ToolOutput> {
    let cwd = checked_dir(&working_dir(p, services), services).await?;
    // A command that runs without the user's approval gets git with every
    // repository-configured program switched off.
    let (mut env, env_remove) = match readonly::verdict_settled(&p.command, &cwd, services).await {
        Verdict::ReadOnly => readonly::git_hardening(),
        Verdict::Ask(_) => (Vec::new(), Vec::new()),
    };
    if !env.is_empty() {
        if let Some(guard) = readonly::external_diff_guard(stripped, &cwd, &env, services).await {
            env.push(guard);
        }
    }
    let sandbox = sandboxing::prepare(ctx).await?;
    let spec = ShellSpec {
        script: shell_script(stripped),
        cwd,
        env,
        env_remove,
        env_policy: ChildEnvPolicy::from_settings(&services.settings),
        sandbox: sandbox.prepared.clone(),
    };
    Ok((spec, sandbox))
}

/// Waits for the command to exit, be cancelled, fall silent or (in the background)
/// reach its delay, streaming its output live to the front end unless it runs in
/// the background.
async fn wait_showing_output(
    running: &mut RunningCommand,
    p: &Params,
    ctx: &ToolContext,
    inactivity: Option<Duration>,
) -> Stop {
    let background = p.is_background == Some(true);
    let deadline = background.then(|| {
        let delay = p.delay_ms.unwrap_or(DEFAULT_BACKGROUND_DELAY_MS);
        tokio::time::Instant::now() + Duration::from_millis(delay)
    });
    let live = ctx.clone();
    let mut shown = live::LiveOutput::default();
    let mut on_chunk = |chunk: &[u8]| {
        if !background {
            if let Some(text) = shown.push(chunk) {
                live.live_output(text);
            }
        }
    };
    let stop = running
        .wait(&ctx.cancel, inactivity, deadline, &mut on_chunk)
        .await;
    if let Some(rest) = shown.finish() {
        ctx.live_output(rest);
    }
    stop
}

/// The result of a command that exited: its status, and the members of its process
/// group left running (the group is then tracked as a leftover).
async fn exited_result(
    running: &mut RunningCommand,
    status: std::process::ExitStatus,
    output: String,
    services: &Services,
) -> ShellResult {
    use std::os::unix::process::ExitStatusExt;
    let pid = running.pid;
    let background_pids = if group_alive(pid) {
        services.processes.add_leftover(pid);
        leftover_members(pid).await
    } else {
        Vec::new()
    };
    running.disarm();
    ShellResult {
        output,
        error: None,
        exit_code: status.code(),
        signal: status.signal().map(signal_name),
        background_pids,
        pgid: Some(pid),
    }
}

/// The script bash runs: the command, with a space after a trailing backslash so the
/// line continuation cannot swallow anything.
fn shell_script(command: &str) -> String {
    if command.ends_with('\\') {
        format!("{command} ")
    } else {
        command.to_string()
    }
}

/// Members of the command's process group still running after bash exited.
async fn leftover_members(pgid: i32) -> Vec<i32> {
    tokio::task::spawn_blocking(move || group_members(pgid, pgid))
        .await
        .unwrap_or_default()
}

async fn checked_dir(dir: &std::path::Path, services: &Services) -> Result<PathBuf, ToolOutput> {
    match services.fs.stat(dir.to_path_buf()).await {
        Ok(meta) if meta.exists && meta.is_dir => Ok(meta.real_path),
        Ok(meta) if meta.exists => Err(ToolOutput::error(
            ToolErrorKind::PathIsNotADirectory,
            format!("Path is not a directory: {}", meta.real_path.display()),
            "Path is not a directory.",
        )),
        Ok(meta) => Err(ToolOutput::error(
            ToolErrorKind::SearchPathNotFound,
            format!("Directory does not exist: {}", meta.real_path.display()),
            "Directory does not exist.",
        )),
        Err(FsError::Path(e)) => Err(ToolOutput::error(
            ToolErrorKind::PathNotInWorkspace,
            e.to_string(),
            "Path not in workspace.",
        )),
        Err(e) => Err(ToolOutput::error(
            ToolErrorKind::ShellExecuteError,
            e.to_string(),
            e.to_string(),
        )),
    }
}

/// What the user sees: the output, else why there is none.
fn display_text(r: &ShellResult) -> String {
    if !r.output.trim().is_empty() {
        return r.output.clone();
    }
    if let Some(signal) = &r.signal {
        return format!("Command terminated by signal: {signal}");
    }
    match r.exit_code {
        Some(code) if code != 0 => format!("Command exited with code: {code}"),
        _ => String::new(),
    }
}

/// Output over the configured limit: the whole text is saved under the session's temp
/// directory and the model gets a head/tail excerpt naming the file.
async fn cap_output(llm: String, services: &Services, call_id: &str) -> String {
    let max = services.settings.shell.output_limit_chars;
    if max == 0 || llm.chars().count() <= max {
        return llm;
    }
    let dir = services.temp_dir.join("tool-outputs");
    let file = dir.join(format!("run_shell_command_{}.txt", safe_file_part(call_id)));
    let saved = async {
        tokio::fs::create_dir_all(&dir).await?;
        tokio::fs::write(&file, llm.as_bytes()).await
    }
    .await;
    if let Err(e) = saved {
        tracing::warn!(error = %e, file = %file.display(), "cannot save full shell output");
    }
    head_tail_excerpt(&llm, max, &file)
}

/// `text` with everything but ASCII letters, digits, `-` and `_` replaced by `_`: safe
/// as part of a file name.
pub(crate) fn safe_file_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
