//! Running one `bash -c` command: a session (and process group) of its own, stdin from
//! /dev/null, stdout and stderr interleaved into one pipe, read as it comes. The whole
//! group is killed on an inactivity timeout, on cancellation, and when the handle is
//! dropped, so no child outlives a call that was abandoned; the output read so far is
//! kept.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::platform::child_env::ChildEnvPolicy;
use crate::platform::sandbox::PreparedSandbox;

/// The most output kept in memory per command; older output is dropped past it.
pub const MAX_BUFFER_BYTES: usize = 16 * 1024 * 1024;

/// How long a group gets between SIGTERM and SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_millis(200);

/// Process groups started by this process that may still hold live processes (killed
/// all at once by [`kill_all_groups`] when Troupe itself is signalled).
static LIVE_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn live_groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    LIVE_GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills every process group Troupe started that is still alive (foreground and
/// background commands, and what they left running). A process that called `setsid`
/// itself has left its group and is not reached.
pub fn kill_all_groups(signal: Signal) {
    let groups: Vec<i32> = live_groups().clone();
    for pgid in groups {
        kill_group(pgid, signal);
    }
}

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot create the output pipe: {0}")]
    Pipe(io::Error),
    #[error("cannot start bash: {0}")]
    Spawn(io::Error),
}

/// Output collected from a command, capped at [`MAX_BUFFER_BYTES`] (the newest kept).
#[derive(Debug, Default)]
pub struct OutputBuffer {
    bytes: Vec<u8>,
    dropped: usize,
}

impl OutputBuffer {
    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > MAX_BUFFER_BYTES + MAX_BUFFER_BYTES / 4 {
            let excess = self.bytes.len() - MAX_BUFFER_BYTES;
            self.bytes.drain(..excess);
            self.dropped += excess;
        }
    }

    /// The text so far: ANSI escapes removed, invalid UTF-8 replaced, with a warning
    /// line first when older output was dropped.
    pub fn text(&self) -> String {
        let text = clean_text(&self.bytes);
        if self.dropped == 0 {
            return text;
        }
        format!(
            "[TROUPE_WARNING: Output truncated. The buffer is limited to {} MB; the first {} bytes were dropped.]\n{text}",
            MAX_BUFFER_BYTES / (1024 * 1024),
            self.dropped
        )
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The memory the buffer holds (its capacity), in bytes.
    pub fn held_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// Keeps only the newest `max` bytes and gives the rest of the memory back (for a
    /// process that has exited: its output no longer grows).
    pub fn shrink_to_newest(&mut self, max: usize) {
        if self.bytes.len() > max {
            let excess = self.bytes.len() - max;
            self.bytes.drain(..excess);
            self.dropped += excess;
        }
        self.bytes.shrink_to_fit();
    }
}

/// Bytes to display text: lossy UTF-8 without ANSI escape sequences.
pub fn clean_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&strip_ansi_escapes::strip(bytes)).into_owned()
}

/// Why [`RunningCommand::wait`] returned.
#[derive(Debug)]
pub enum Stop {
    /// bash exited (the group may still hold background jobs).
    Exited(ExitStatus),
    /// No output for the inactivity limit; the group was killed.
    Inactive,
    /// The call was cancelled; the group was killed.
    Cancelled,
    /// The deadline passed with the command still running (it is left running).
    Deadline,
}

/// A started command and the read end of its output pipe.
pub struct RunningCommand {
    child: Child,
    pub pid: i32,
    reader: Option<pipe::Receiver>,
    pub output: OutputBuffer,
    /// Kill the group when dropped (disarmed once the group is dealt with).
    armed: bool,
    /// The sandbox it runs in, for the check made when it ends.
    sandbox: Option<PreparedSandbox>,
}

/// The command to start.
pub struct ShellSpec {
    pub script: String,
    pub cwd: PathBuf,
    /// Variables set for this command only (e.g. git hardening), and removed ones.
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
    /// What the command inherits of Troupe's environment (secret-looking names go).
    pub env_policy: ChildEnvPolicy,
    /// The kernel sandbox the command runs in (`None`: unsandboxed).
    pub sandbox: Option<PreparedSandbox>,
}

impl RunningCommand {
    /// Starts `bash -c script` in `cwd`, in a new session (so a new process group whose
    /// id is the pid, and no controlling terminal), with stdin from /dev/null.
    pub fn spawn(spec: &ShellSpec) -> Result<Self, SpawnError> {
        let (reader, writer) = io::pipe().map_err(SpawnError::Pipe)?;
        let writer_err = writer.try_clone().map_err(SpawnError::Pipe)?;
        let mut command = Command::new("bash");
        // First: it clears the environment before the deliberate variables below.
        spec.env_policy.apply_std(command.as_std_mut());
        command
            .arg("-c")
            .arg(&spec.script)
            .current_dir(&spec.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(OwnedFd::from(writer)))
            .stderr(Stdio::from(OwnedFd::from(writer_err)))
            .env("TROUPE", "1")
            .env("TERM", "dumb")
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .env("GIT_TERMINAL_PROMPT", "0");
        for name in &spec.env_remove {
            command.env_remove(name);
        }
        if spec.sandbox.as_ref().is_some_and(PreparedSandbox::is_world) {
            // The host's sockets do not exist in the world, nor its temp dir.
            for name in crate::platform::sandbox::HOST_SOCKET_VARS {
                if !spec.env_policy.is_passed(name) {
                    command.env_remove(name);
                }
            }
            command.env("TMPDIR", "/tmp");
        }
        command.envs(spec.env.iter().map(|(k, v)| (k, v)));
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe system calls (setsid(2), prctl(2)).
        unsafe {
            command.pre_exec(|| {
                nix::unistd::setsid().map_err(io::Error::from)?;
                // If Troupe dies without cleaning up, bash dies with it. The spawning
                // thread is a tool actor's arbiter, which lives as long as the session.
                #[cfg(target_os = "linux")]
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
                Ok(())
            });
        }
        // After the hook above: the sandbox is entered last, right before exec.
        if let Some(sandbox) = &spec.sandbox {
            sandbox.apply_to(command.as_std_mut());
        }
        let child = command.spawn().map_err(SpawnError::Spawn)?;
        // The Command holds our copies of the write ends; drop them so the pipe reaches
        // end-of-file when the command's processes are gone.
        drop(command);
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or(0);
        if pid > 0 {
            let mut groups = live_groups();
            groups.retain(|g| group_alive(*g));
            groups.push(pid);
        }
        let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).ok();
        Ok(Self {
            child,
            pid,
            reader,
            output: OutputBuffer::default(),
            armed: true,
            sandbox: spec.sandbox.clone(),
        })
    }

    /// Reads output (handing each chunk to `on_chunk`) until bash exits, the call is
    /// cancelled, no output came for `inactivity`, or `deadline` passes. On
    /// cancellation and inactivity the whole group is killed before returning.
    pub async fn wait(
        &mut self,
        cancel: &CancellationToken,
        inactivity: Option<Duration>,
        deadline: Option<Instant>,
        on_chunk: &mut (dyn FnMut(&[u8]) + Send),
    ) -> Stop {
        let far = Duration::from_secs(365 * 24 * 3600);
        let mut idle_until = Instant::now() + inactivity.unwrap_or(far);
        let deadline = deadline.unwrap_or_else(|| Instant::now() + far);
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let read = async {
                match self.reader.as_mut() {
                    Some(r) => r.read(&mut buf).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    self.kill_group(Signal::SIGKILL);
                    let _ = self.child.wait().await;
                    self.drain(Duration::from_millis(20), on_chunk).await;
                    self.armed = false;
                    return Stop::Cancelled;
                }
                result = read => match result {
                    Ok(0) | Err(_) => self.reader = None,
                    Ok(n) => {
                        self.output.push(&buf[..n]);
                        on_chunk(&buf[..n]);
                        if let Some(limit) = inactivity {
                            idle_until = Instant::now() + limit;
                        }
                    }
                },
                status = self.child.wait() => {
                    let status = status.unwrap_or_else(|_| ExitStatus::from_raw(0));
                    self.drain(Duration::from_millis(100), on_chunk).await;
                    return Stop::Exited(status);
                }
                _ = tokio::time::sleep_until(idle_until) => {
                    self.terminate().await;
                    self.drain(Duration::from_millis(20), on_chunk).await;
                    return Stop::Inactive;
                }
                _ = tokio::time::sleep_until(deadline) => return Stop::Deadline,
            }
        }
    }

    /// Reads what is left in the pipe for at most `limit` (background jobs of the
    /// command may keep it open).
    async fn drain(&mut self, limit: Duration, on_chunk: &mut (dyn FnMut(&[u8]) + Send)) {
        let Some(reader) = self.reader.as_mut() else {
            return;
        };
        let until = Instant::now() + limit;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match tokio::time::timeout_at(until, reader.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => {
                    self.output.push(&buf[..n]);
                    on_chunk(&buf[..n]);
                }
                Ok(_) => {
                    self.reader = None;
                    return;
                }
                Err(_) => return,
            }
        }
    }

    /// SIGTERM to the group, then SIGKILL if bash has not exited within [`TERM_GRACE`].
    pub async fn terminate(&mut self) {
        self.kill_group(Signal::SIGTERM);
        if tokio::time::timeout(TERM_GRACE, self.child.wait())
            .await
            .is_err()
        {
            self.kill_group(Signal::SIGKILL);
            let _ = self.child.wait().await;
        }
        // Children that ignored SIGTERM are killed with the group either way.
        self.kill_group(Signal::SIGKILL);
        self.armed = false;
    }

    fn kill_group(&self, signal: Signal) {
        if self.pid > 0 {
            let _ = killpg(Pid::from_raw(self.pid), signal);
        }
    }

    /// Once it has ended: the `[sandbox] …` line for `.git`, `.troupe`, `.gemini` or `.agents`
    /// directories it made in a workspace root, which are moved aside
    /// ([`PreparedSandbox::refuse_created_protected`]).
    pub fn refuse_created_protected(&self) -> Option<String> {
        let moved = self.sandbox.as_ref()?.refuse_created_protected();
        crate::platform::sandbox::denial::moved_aside_note(&moved)
    }

    /// The group no longer needs killing on drop (it exited, or someone else owns it).
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for RunningCommand {
    fn drop(&mut self) {
        if self.armed {
            self.kill_group(Signal::SIGKILL);
        }
    }
}

/// Whether any process of group `pgid` is still alive.
pub fn group_alive(pgid: i32) -> bool {
    pgid > 0 && killpg(Pid::from_raw(pgid), None).is_ok()
}

/// Kills group `pgid` outright.
pub fn kill_group(pgid: i32, signal: Signal) {
    if pgid > 0 {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// The processes of group `pgid` other than `leader` (Linux: read from /proc).
pub fn group_members(pgid: i32, leader: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == leader {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(fields) = crate::engine::proc_stat::fields_after_name(&stat) else {
            continue;
        };
        let fields: Vec<&str> = fields.collect();
        // fields = state ppid pgrp ...
        let member = fields.get(2).and_then(|p| p.parse::<i32>().ok()) == Some(pgid);
        if member && fields[0] != "Z" && !is_sandbox_helper(&entry.path()) {
            members.push(pid);
        }
    }
    members.sort_unstable();
    members
}

/// Whether a process is the sandbox's own init or monitor (not a job).
fn is_sandbox_helper(proc_dir: &std::path::Path) -> bool {
    std::fs::read_to_string(proc_dir.join("comm"))
        .is_ok_and(|comm| matches!(comm.trim_end(), "troupe-sbx-init" | "troupe-sbx-mon"))
}

/// The name of a signal number (`SIGTERM`), or the number.
pub fn signal_name(signal: i32) -> String {
    Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| signal.to_string())
}
