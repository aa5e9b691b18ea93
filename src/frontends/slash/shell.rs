//! The shell commands the user starts rather than the model: a REPL `!` line, and a
//! custom command's `!{…}`. [`decision`] applies `run_shell_command`'s approval policy
//! to them (so they get no more than the model's calls would); [`run_captured`] runs
//! one without a terminal (a headless or ACP prompt), in the sandbox the decision chose.

use tokio_util::sync::CancellationToken;

use crate::engine::policy::{decide, PolicyDecision};
use crate::engine::shell_syntax;
use crate::platform::child_env::ChildEnvPolicy;
use crate::platform::sandbox::denial::{self, Why};
use crate::platform::sandbox::{session, SandboxMode};
use crate::protocol::PolicySnapshot;
use crate::tools::shell::process::{RunningCommand, ShellSpec, Stop};
use crate::tools::Services;

/// What the approval policy decided for a command, and the sandbox it then runs in.
pub struct ShellDecision {
    /// Run, ask, or refuse (with the reason).
    pub decision: PolicyDecision,
    /// `ReadOnly` when it runs unasked only because it looks read-only; `None`: the
    /// session's `sandbox.mode`.
    pub sandbox: Option<SandboxMode>,
}

/// What `run_shell_command`'s approval policy says about `command` now: the mode, the
/// syntax-tree read-only verdict (paths inside the workspace; only when the read-only
/// sandbox is available, which such a command then runs in) and the session's allow
/// rules keyed as for the model's calls.
pub fn decision(policy: &PolicySnapshot, services: &Services, command: &str) -> ShellDecision {
    let cwd = services.workspace.primary().to_path_buf();
    let hint = (session::read_only_available(&services.settings)
        && matches!(
            crate::tools::shell::readonly::verdict(command, &cwd, services),
            crate::engine::shell_readonly::Verdict::ReadOnly
        ))
    .then_some(true);
    let state = policy;
    let facts = crate::tools::Tool::facts(&crate::tools::shell::RunShellCommand);
    let decision = decide(state.mode, facts.kind, hint);
    let unasked = decision == PolicyDecision::Allow
        && state.mode != crate::protocol::ApprovalMode::Yolo
        && hint.is_some();
    match decision {
        PolicyDecision::Ask
            if crate::engine::policy::rules_allow(
                &state.rules,
                crate::tools::shell::NAME,
                facts.allow_key,
                &shell_syntax::allow_list_keys(command),
            ) =>
        {
            ShellDecision {
                decision: PolicyDecision::Allow,
                sandbox: None,
            }
        }
        decision => ShellDecision {
            decision,
            sandbox: unasked.then_some(SandboxMode::ReadOnly),
        },
    }
}

/// What a command run by [`run_captured`] printed and how it ended.
pub struct CapturedRun {
    /// stdout and stderr interleaved, escapes removed, without a final newline.
    pub output: String,
    /// `None` when it was killed by a signal or cancelled.
    pub exit_code: Option<i32>,
    /// The `[sandbox] …` line when the output shows the sandbox refused something.
    pub sandbox_note: Option<String>,
}

/// A command the user started, ready to run through the shell tool's process code
/// ([`RunningCommand::spawn`]: a session and process group of its own, registered so
/// that a signal to Troupe ends it, pdeathsig, the environment policy, the sandbox).
pub struct UserShell {
    /// What [`RunningCommand::spawn`] starts.
    pub spec: ShellSpec,
    /// The sandbox mode in force for it.
    mode: SandboxMode,
    /// Why it runs in that sandbox (the note names it).
    why: Why,
    /// Whether it runs sandboxed at all.
    sandboxed: bool,
    network: bool,
}

impl UserShell {
    /// Prepares `command` (`bash -c`, in the workspace's primary root) in `sandbox`
    /// (`None`: the session's `sandbox.mode`), with `env` set for it; an error says why
    /// it cannot run.
    pub fn prepare(
        command: &str,
        services: &Services,
        sandbox: Option<SandboxMode>,
        env: Vec<(String, String)>,
    ) -> Result<Self, String> {
        let settings = &services.settings;
        let mode = session::effective_mode(settings, sandbox).map_err(|e| e.to_string())?;
        let roots = services.workspace.roots();
        let prepared = session::prepare_for(settings, &roots, mode)
            .map_err(|e| format!("Not run: its sandbox could not be prepared: {e}"))?;
        if prepared.is_none() && sandbox.is_some_and(|m| m != SandboxMode::Off) {
            return Err(format!("Not run: {}", session::UNSANDBOXED_WARNING));
        }
        let sandboxed = prepared.is_some();
        let spec = ShellSpec {
            script: command.to_string(),
            cwd: services.workspace.primary().to_path_buf(),
            env,
            env_remove: Vec::new(),
            env_policy: ChildEnvPolicy::from_settings(settings),
            sandbox: prepared,
        };
        let why = match sandbox {
            Some(SandboxMode::ReadOnly) => Why::ReadOnlyUnasked,
            _ => Why::Configured,
        };
        Ok(Self {
            spec,
            mode,
            why,
            sandboxed,
            network: settings.sandbox.network,
        })
    }

    /// Starts it.
    pub fn spawn(&self) -> Result<RunningCommand, String> {
        RunningCommand::spawn(&self.spec).map_err(|e| e.to_string())
    }

    /// The `[sandbox] …` line when `output` shows the sandbox refused something.
    pub fn sandbox_note(&self, output: &str) -> Option<String> {
        let refused = self
            .sandboxed
            .then(|| denial::note(self.mode, self.why, self.network, output))
            .flatten();
        let moved = self
            .spec
            .sandbox
            .as_ref()
            .map(|s| s.refuse_created_protected());
        let made = moved.as_deref().and_then(denial::moved_aside_note);
        match (refused, made) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b),
        }
    }
}

/// Runs `command` with `bash -c` in the workspace, in a process group of its own (killed
/// when `cancel` fires) and in `sandbox` (`None`: the session's `sandbox.mode`), and
/// collects its output. An error says why it did not run.
pub async fn run_captured(
    command: &str,
    services: &Services,
    sandbox: Option<SandboxMode>,
    cancel: &CancellationToken,
) -> Result<CapturedRun, String> {
    let env = vec![("GEMINI_CLI".into(), "1".into())];
    let shell = UserShell::prepare(command, services, sandbox, env)?;
    let mut running = shell.spawn()?;
    let stop = running.wait(cancel, None, None, &mut |_| {}).await;
    let exit_code = match stop {
        Stop::Exited(status) => status.code(),
        Stop::Cancelled => return Err("the command was cancelled".into()),
        Stop::Inactive | Stop::Deadline => None,
    };
    // Dropping `running` kills what the command left running in its group.
    let text = running.output.text().replace("\r\n", "\n");
    let output = text.strip_suffix('\n').unwrap_or(&text).to_string();
    let sandbox_note = shell.sandbox_note(&output);
    Ok(CapturedRun {
        output,
        exit_code,
        sandbox_note,
    })
}
