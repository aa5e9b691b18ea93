//! The sandbox of a session's commands: the one place that turns the settings
//! (`[sandbox]`) and the workspace roots into a [`SandboxPolicy`], prepares it for
//! each spawn, and says what is in force.
//!
//! Every process Troupe starts for a command (`run_shell_command`, the REPL's `!`
//! lines, custom commands' `!{…}`, the git Troupe runs on its own) goes through
//! [`prepare_for`]. A command that runs without asking because the read-only
//! classifier accepted it runs under [`SandboxMode::ReadOnly`] whatever
//! `sandbox.mode` says; that auto-approval is offered only when
//! [`read_only_available`] (Landlock present, `sandbox.mode` not `off`).
//!
//! Without Landlock nothing is sandboxed: [`warn_if_unsandboxed`] says so once on
//! stderr, [`prepare_for`] returns `None` and [`read_only_available`] is false, so
//! every command asks as any other.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{PreparedSandbox, SandboxError, SandboxMode, SandboxPolicy};
use crate::settings::Settings;

/// The mode `sandbox.mode` names (an invalid name is an error).
pub fn configured_mode(settings: &Settings) -> Result<SandboxMode, SandboxError> {
    settings.sandbox.mode.trim().parse()
}

/// The Landlock ABI commands can use: the kernel's, unless a test build pretends it
/// has none (`TROUPE_TEST_NO_LANDLOCK=1` with the test hooks on).
pub fn usable_abi() -> Option<u8> {
    if pretend_missing("TROUPE_TEST_NO_LANDLOCK") {
        return None;
    }
    super::landlock_abi()
}

/// Whether a test build pretends a kernel feature is missing (`var=1` with the test
/// hooks on); never in a shipped build.
#[cfg(feature = "test-hooks")]
pub(super) fn pretend_missing(var: &str) -> bool {
    crate::platform::test_hooks::enabled() && std::env::var(var).is_ok_and(|v| v == "1")
}

#[cfg(not(feature = "test-hooks"))]
pub(super) fn pretend_missing(_var: &str) -> bool {
    false
}

/// Whether a command the read-only classifier accepts may run without asking: only
/// when it can run under the read-only sandbox (Landlock present and `sandbox.mode`
/// not `off`).
pub fn read_only_available(settings: &Settings) -> bool {
    usable_abi().is_some()
        && super::world_support().is_some()
        && !matches!(configured_mode(settings), Ok(SandboxMode::Off) | Err(_))
}

/// The policy of a command of this session run in `mode`: the workspace roots, the
/// writable roots of the setting (`~` expanded; the temp dir is added by the sandbox
/// itself), Troupe's home and the usual credential directories unreadable. `read-only`
/// has no network whatever `sandbox.network` says.
pub fn policy(settings: &Settings, roots: &[PathBuf], mode: SandboxMode) -> SandboxPolicy {
    let home = crate::settings::home_dir();
    let troupe_home = crate::settings::troupe_home();
    SandboxPolicy {
        mode,
        workspace_roots: roots.to_vec(),
        writable_roots: expanded(&settings.sandbox.writable_roots),
        network: settings.sandbox.network && mode != SandboxMode::ReadOnly,
        deny_read: SandboxPolicy::default_deny_read(&home, &troupe_home),
        readable_roots: expanded(&settings.sandbox.readable_roots),
        home,
    }
}

/// A setting's list of directories, blanks dropped and `~` expanded.
fn expanded(roots: &[String]) -> Vec<PathBuf> {
    roots
        .iter()
        .filter(|r| !r.trim().is_empty())
        .map(|r| crate::settings::expand_tilde(std::path::Path::new(r.trim())))
        .collect()
}

/// The mode a command runs in: `chosen` when its approval chose one (a read-only
/// command that ran without asking), else `sandbox.mode`.
pub fn effective_mode(
    settings: &Settings,
    chosen: Option<SandboxMode>,
) -> Result<SandboxMode, SandboxError> {
    match chosen {
        Some(mode) => Ok(mode),
        None => configured_mode(settings),
    }
}

/// The sandbox for one spawn of a command in `mode` (prepare once per spawn):
/// `None` for `off`, and when Landlock is unavailable (said once by
/// [`warn_if_unsandboxed`]). Any other failure is an error: the command must then not
/// run.
pub fn prepare_for(
    settings: &Settings,
    roots: &[PathBuf],
    mode: SandboxMode,
) -> Result<Option<PreparedSandbox>, SandboxError> {
    if mode == SandboxMode::Off {
        return Ok(None);
    }
    if usable_abi().is_none() {
        warn_once();
        return Ok(None);
    }
    match policy(settings, roots, mode).prepare() {
        Err(SandboxError::Unavailable) => {
            warn_once();
            Ok(None)
        }
        other => other,
    }
}

/// The read-only sandbox for a program Troupe runs on its own (e.g. `git config`):
/// `None` when Landlock is unavailable or preparing fails (the program must then be
/// one that runs nothing the workspace chose).
pub fn read_only_for_own_use(settings: &Settings, roots: &[PathBuf]) -> Option<PreparedSandbox> {
    usable_abi()?;
    match policy(settings, roots, SandboxMode::ReadOnly).prepare() {
        Ok(prepared) => prepared,
        Err(e) => {
            tracing::warn!(error = %e, "cannot prepare the read-only sandbox");
            None
        }
    }
}

/// What the warning about a missing Landlock says.
pub const UNSANDBOXED_WARNING: &str = "Landlock is not available on this kernel: commands run unsandboxed, and no command runs without asking because it looks read-only";

static WARNED: AtomicBool = AtomicBool::new(false);

fn warn_once() {
    if !WARNED.swap(true, Ordering::SeqCst) {
        eprintln!("troupe: warning: {UNSANDBOXED_WARNING}");
        tracing::warn!("{UNSANDBOXED_WARNING}");
    }
}

/// Says once on stderr that commands run unsandboxed when `sandbox.mode` asks for a
/// sandbox and Landlock is unavailable. Called when a session starts.
pub fn warn_if_unsandboxed(settings: &Settings) {
    let wants = !matches!(configured_mode(settings), Ok(SandboxMode::Off));
    if wants && usable_abi().is_none() {
        warn_once();
    } else if wants && super::world_support().is_none() && !WARNED.swap(true, Ordering::SeqCst) {
        eprintln!("troupe: warning: {NO_WORLD_WARNING}");
        tracing::warn!("{NO_WORLD_WARNING}");
    }
}

/// What the warning about a missing namespace sandbox says.
pub const NO_WORLD_WARNING: &str = "the namespace sandbox is unavailable here (user or mount namespaces refused, e.g. kernel.unprivileged_userns_clone=0 or an AppArmor restriction): commands run under Landlock over the host's files, and every command asks";

/// One line on what is in force: `workspace-write, Landlock ABI 7`, `off`, or
/// `workspace-write requested, but Landlock is unavailable: commands run unsandboxed`.
pub fn summary(settings: &Settings) -> String {
    let mode = match configured_mode(settings) {
        Ok(mode) => mode,
        Err(e) => return e.to_string(),
    };
    let network = if mode == SandboxMode::WorkspaceWrite && !settings.sandbox.network {
        ", no network"
    } else {
        ""
    };
    match (mode, usable_abi()) {
        (SandboxMode::Off, _) => {
            "off: commands run unsandboxed, and every command asks (unless yolo)".to_string()
        }
        (_, Some(abi)) if super::world_support().is_some() => format!(
            "{mode}{network}, an allow-listed world (namespaces) with Landlock ABI {abi} inside; commands that run without asking because they look read-only run under read-only"
        ),
        (_, Some(abi)) => format!(
            "{mode}{network}, Landlock ABI {abi} over the host's files (namespaces unavailable): every command asks"
        ),
        (_, None) => format!(
            "{mode} requested, but Landlock is unavailable: commands run unsandboxed"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(toml_overrides: &[&str]) -> Settings {
        let none = std::path::Path::new("/nonexistent");
        let overrides: Vec<String> = toml_overrides.iter().map(|s| s.to_string()).collect();
        crate::settings::load_with(none, none, &[], &overrides)
            .expect("settings")
            .settings
    }

    #[test]
    fn read_only_never_has_network_and_writable_roots_expand_tilde() {
        let s = settings(&["sandbox.writable_roots=[\"~/cache\", \"\"]"]);
        let roots = vec![PathBuf::from("/w")];
        let p = policy(&s, &roots, SandboxMode::ReadOnly);
        assert!(!p.network);
        assert_eq!(
            p.writable_roots,
            vec![crate::settings::home_dir().join("cache")]
        );
        assert_eq!(p.workspace_roots, roots);
        assert!(p.deny_read.contains(&crate::settings::troupe_home()));
        assert!(policy(&s, &roots, SandboxMode::WorkspaceWrite).network);
    }

    #[test]
    fn off_and_invalid_modes_never_allow_unasked_commands() {
        assert!(!read_only_available(&settings(&["sandbox.mode=\"off\""])));
        assert!(!read_only_available(&settings(&["sandbox.mode=\"bogus\""])));
        assert!(configured_mode(&settings(&["sandbox.mode=\"bogus\""])).is_err());
        assert_eq!(read_only_available(&settings(&[])), usable_abi().is_some());
    }
}
