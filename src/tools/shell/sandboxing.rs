//! The shell tool's side of the kernel sandbox: which sandbox a call's command runs in
//! (the one its approval chose, else `sandbox.mode`), prepared off the actor's thread,
//! and the `[sandbox]` line added when the output shows a refusal.

use crate::platform::sandbox::denial::{self, Why};
use crate::platform::sandbox::{session, PreparedSandbox, SandboxMode};
use crate::protocol::{ToolErrorKind, ToolOutput};
use crate::tools::ToolContext;

/// The sandbox of one command.
pub struct CommandSandbox {
    /// The mode in force (`Off` when nothing is applied, Landlock missing included).
    pub mode: SandboxMode,
    why: Why,
    network: bool,
    /// What the spawn applies.
    pub prepared: Option<PreparedSandbox>,
}

impl CommandSandbox {
    /// The `[sandbox] …` line when `output` shows a refusal of this sandbox.
    pub fn note(&self, output: &str) -> Option<String> {
        self.prepared.as_ref()?;
        denial::note(self.mode, self.why, self.network, output)
    }
}

/// Prepares the sandbox for the call's command (on a blocking thread: preparing opens
/// and lists directories). An error is the call's result: the command must not run.
pub async fn prepare(ctx: &ToolContext) -> Result<CommandSandbox, ToolOutput> {
    let settings = ctx.services.settings.clone();
    let mode = session::effective_mode(&settings, ctx.sandbox).map_err(refused)?;
    let why = if ctx.sandbox == Some(SandboxMode::ReadOnly) {
        Why::ReadOnlyUnasked
    } else {
        Why::Configured
    };
    let network = settings.sandbox.network && mode == SandboxMode::WorkspaceWrite;
    let roots = ctx.services.workspace.roots();
    let prepared =
        tokio::task::spawn_blocking(move || session::prepare_for(&settings, &roots, mode))
            .await
            .map_err(|e| refused(e.to_string()))?
            .map_err(refused)?;
    if prepared.is_none() && ctx.sandbox.is_some_and(|m| m != SandboxMode::Off) {
        // It was let through unasked only for the sandbox it would run in.
        return Err(refused(session::UNSANDBOXED_WARNING));
    }
    let mode = if prepared.is_some() {
        mode
    } else {
        SandboxMode::Off
    };
    Ok(CommandSandbox {
        mode,
        why,
        network,
        prepared,
    })
}

fn refused(error: impl std::fmt::Display) -> ToolOutput {
    let message = format!("The command was not run: its sandbox could not be prepared: {error}");
    ToolOutput::error(ToolErrorKind::ShellExecuteError, message.clone(), message)
}
