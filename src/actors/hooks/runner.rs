//! Runs one hook command: `bash -c` in the session's directory, in a process group of
//! its own, the input JSON on stdin, stdout and stderr read separately (each capped),
//! the whole group killed on timeout, on cancellation, or when the run is dropped. The
//! environment is Troupe's under the children's policy ([`ChildEnvPolicy`]: no
//! secret-named variable unless `[environment] pass` names it), then the variables of
//! every unsandboxed child ([`crate::platform::child_env::unsandboxed`]: git runs no
//! program a repository names, Python keeps the working directory off `sys.path`),
//! then the session variables, then the hook's own `env`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::platform::child_env::ChildEnvPolicy;
use crate::settings::hooks::HookDef;

/// Bytes kept of each output stream; the rest is read and dropped.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// Time between SIGTERM and SIGKILL for a hook that timed out.
const TERM_GRACE: Duration = Duration::from_millis(500);

/// What the hook process did.
#[derive(Debug, Clone, PartialEq)]
pub enum RunResult {
    Exited {
        code: i32,
        stdout: String,
        stderr: String,
    },
    /// Could not start, was killed by a signal, timed out or was cancelled.
    Failed(String),
}

/// The session facts every hook gets, as variables and substitutions.
#[derive(Debug, Clone)]
pub struct HookEnv {
    pub project_dir: PathBuf,
    pub cwd: PathBuf,
    pub session_id: String,
    pub plans_dir: PathBuf,
    /// What of Troupe's environment the hook inherits.
    pub child_env: ChildEnvPolicy,
}

fn substitutions(env: &HookEnv) -> Vec<(&'static str, String)> {
    let project = env.project_dir.display().to_string();
    vec![
        ("GEMINI_PROJECT_DIR", project.clone()),
        ("CLAUDE_PROJECT_DIR", project.clone()),
        ("TROUPE_PROJECT_DIR", project),
        ("GEMINI_CWD", env.cwd.display().to_string()),
        ("GEMINI_PLANS_DIR", env.plans_dir.display().to_string()),
        ("GEMINI_SESSION_ID", env.session_id.clone()),
    ]
}

/// `$VAR` and `${VAR}` of the session variables replaced, shell-escaped.
pub fn expand_command(command: &str, env: &HookEnv) -> String {
    let known = substitutions(env);
    crate::engine::text::expand_vars(command, &|name| {
        known
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, value)| shell_words::quote(value).into_owned())
    })
}

/// Kills the group when dropped unless disarmed.
struct GroupGuard(i32);

impl GroupGuard {
    fn kill(&self, signal: Signal) {
        if self.0 > 0 {
            let _ = killpg(Pid::from_raw(self.0), signal);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill(Signal::SIGKILL);
    }
}

async fn read_capped<R: AsyncRead + Unpin>(mut reader: R) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    let mut dropped = 0usize;
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                dropped += n.saturating_sub(room);
            }
        }
    }
    let text = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        tracing::warn!(dropped, "hook output over the limit was dropped");
    }
    text
}

/// Runs `def` with `input` on stdin.
pub async fn run(
    def: &HookDef,
    input: &serde_json::Value,
    env: &HookEnv,
    cancel: &CancellationToken,
) -> RunResult {
    let mut cmd = Command::new("bash");
    env.child_env.apply_std(cmd.as_std_mut());
    // Outside the sandbox: no planted Python module or git program runs.
    crate::platform::child_env::unsandboxed::apply(cmd.as_std_mut(), &def.env);
    cmd.arg("-c")
        .arg(expand_command(&def.command, env))
        .current_dir(&env.cwd)
        .envs(substitutions(env))
        .envs(def.env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return RunResult::Failed(format!("cannot start bash: {e}")),
    };
    let guard = GroupGuard(child.id().map(|p| p as i32).unwrap_or(0));
    let payload = serde_json::to_vec(input).unwrap_or_default();
    let stdin = child.stdin.take();
    let writer = async move {
        if let Some(mut stdin) = stdin {
            // A hook that never reads its input must not block us: errors are ignored.
            let _ = stdin.write_all(&payload).await;
            let _ = stdin.shutdown().await;
        }
    };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let io = async {
        let out = async {
            match stdout {
                Some(s) => read_capped(s).await,
                None => String::new(),
            }
        };
        let err = async {
            match stderr {
                Some(s) => read_capped(s).await,
                None => String::new(),
            }
        };
        let ((), out, err, status) = tokio::join!(writer, out, err, child.wait());
        (out, err, status)
    };
    let limit = Duration::from_millis(def.timeout_ms);
    let result = tokio::select! {
        r = tokio::time::timeout(limit, io) => Some(r),
        _ = cancel.cancelled() => None,
    };
    let Some(result) = result else {
        guard.kill(Signal::SIGKILL);
        let _ = child.wait().await;
        return RunResult::Failed("Hook was cancelled".into());
    };
    match result {
        Err(_) => {
            guard.kill(Signal::SIGTERM);
            if tokio::time::timeout(TERM_GRACE, child.wait())
                .await
                .is_err()
            {
                guard.kill(Signal::SIGKILL);
                let _ = child.wait().await;
            }
            // Whatever the hook started goes with its group.
            guard.kill(Signal::SIGKILL);
            RunResult::Failed(format!("Hook timed out after {}ms", def.timeout_ms))
        }
        Ok((stdout, stderr, status)) => {
            // Children the hook left behind go with its group.
            guard.kill(Signal::SIGKILL);
            match status {
                Ok(s) => match s.code() {
                    Some(code) => RunResult::Exited {
                        code,
                        stdout,
                        stderr,
                    },
                    None => RunResult::Failed(format!("Hook was killed by a signal ({s})")),
                },
                Err(e) => RunResult::Failed(format!("cannot wait for the hook: {e}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_expanded() {
        let env = HookEnv {
            project_dir: PathBuf::from("/a b"),
            cwd: PathBuf::from("/a b"),
            session_id: "s1".into(),
            plans_dir: PathBuf::from("/p"),
            child_env: ChildEnvPolicy::default(),
        };
        assert_eq!(
            expand_command("cd $GEMINI_PROJECT_DIR && echo ${GEMINI_SESSION_ID}", &env),
            "cd '/a b' && echo s1"
        );
    }
}
