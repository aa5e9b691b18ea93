//! The session's background processes: commands started with `is_background` (and
//! jobs a foreground command left running), their output as it keeps coming, and their
//! end. Everything still running is killed, group by group, when the session ends.

use std::sync::{Arc, Mutex, MutexGuard};

use nix::sys::signal::Signal;
use tokio_util::sync::CancellationToken;

use super::process::{
    group_alive, kill_group, signal_name, OutputBuffer, RunningCommand, Stop, TERM_GRACE,
};

/// The output kept of a background process once it has exited (the newest bytes).
pub const MAX_EXITED_OUTPUT_BYTES: usize = 1024 * 1024;

/// How many exited background processes are remembered (the newest).
pub const MAX_EXITED_KEPT: usize = 64;

/// Where a background process is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessStatus {
    Running,
    Exited {
        code: Option<i32>,
        signal: Option<String>,
    },
}

/// One line of `list_background_processes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSnapshot {
    pub pid: i32,
    pub command: String,
    pub status: ProcessStatus,
}

struct Entry {
    pid: i32,
    command: String,
    state: Mutex<EntryState>,
}

struct EntryState {
    output: OutputBuffer,
    status: ProcessStatus,
}

impl Entry {
    fn state(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The table of a session's background processes (shared through `Services`).
#[derive(Default)]
pub struct BackgroundProcesses {
    entries: Mutex<Vec<Arc<Entry>>>,
    /// Process groups whose leader exited while members kept running.
    leftovers: Mutex<Vec<i32>>,
    shutdown: CancellationToken,
}

impl BackgroundProcesses {
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> MutexGuard<'_, Vec<Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn leftovers(&self) -> MutexGuard<'_, Vec<i32>> {
        self.leftovers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes over a running command: its output keeps being collected by a task of
    /// its own until it exits or the session ends. Returns its pid.
    pub fn adopt(self: &Arc<Self>, mut run: RunningCommand, command: String) -> i32 {
        let pid = run.pid;
        let entry = Arc::new(Entry {
            pid,
            command,
            state: Mutex::new(EntryState {
                output: std::mem::take(&mut run.output),
                status: ProcessStatus::Running,
            }),
        });
        self.entries().push(entry.clone());
        let table = self.clone();
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let sink = entry.clone();
            let mut on_chunk = move |chunk: &[u8]| sink.state().output.push(chunk);
            let stop = run.wait(&shutdown, None, None, &mut on_chunk).await;
            let status = match stop {
                Stop::Exited(status) => {
                    use std::os::unix::process::ExitStatusExt;
                    if group_alive(pid) {
                        table.add_leftover(pid);
                    }
                    run.disarm();
                    // What it planted is moved aside, as for a command that ends in
                    // the foreground; the note is the last of its output.
                    if let Some(note) = run.refuse_created_protected() {
                        tracing::warn!(pid, "{note}");
                        entry.state().output.push(format!("\n{note}\n").as_bytes());
                    }
                    ProcessStatus::Exited {
                        code: status.code(),
                        signal: status.signal().map(signal_name),
                    }
                }
                _ => ProcessStatus::Exited {
                    code: None,
                    signal: Some("SIGKILL".into()),
                },
            };
            {
                let mut state = entry.state();
                state.status = status;
                // An exited process's output is kept small and its memory released.
                state.output.shrink_to_newest(MAX_EXITED_OUTPUT_BYTES);
            }
            table.forget_oldest_exited();
        });
        pid
    }

    /// Drops the oldest exited processes beyond [`MAX_EXITED_KEPT`].
    fn forget_oldest_exited(&self) {
        let mut entries = self.entries();
        let exited = entries
            .iter()
            .filter(|e| matches!(e.state().status, ProcessStatus::Exited { .. }))
            .count();
        let mut extra = exited.saturating_sub(MAX_EXITED_KEPT);
        entries.retain(|e| {
            if extra > 0 && matches!(e.state().status, ProcessStatus::Exited { .. }) {
                extra -= 1;
                false
            } else {
                true
            }
        });
    }

    /// Remembers a process group to kill at session end.
    pub fn add_leftover(&self, pgid: i32) {
        let mut leftovers = self.leftovers();
        if !leftovers.contains(&pgid) {
            leftovers.push(pgid);
        }
    }

    /// Every background process of the session, oldest first.
    pub fn list(&self) -> Vec<ProcessSnapshot> {
        self.entries()
            .iter()
            .map(|e| ProcessSnapshot {
                pid: e.pid,
                command: e.command.clone(),
                status: e.state().status.clone(),
            })
            .collect()
    }

    /// The output collected from `pid` so far; `None` when it is not in the table.
    pub fn output(&self, pid: i32) -> Option<String> {
        let entries = self.entries();
        let entry = entries.iter().find(|e| e.pid == pid)?;
        let text = entry.state().output.text();
        Some(text)
    }

    fn live_groups(&self) -> Vec<i32> {
        // Exited entries are left out: their pid may since have been reused.
        let mut groups: Vec<i32> = self
            .entries()
            .iter()
            .filter(|e| e.state().status == ProcessStatus::Running)
            .map(|e| e.pid)
            .chain(self.leftovers().iter().copied())
            .filter(|&pgid| group_alive(pgid))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// Ends every process the session started in the background: SIGTERM to each
    /// group, a short grace, then SIGKILL to whatever is left.
    pub async fn shutdown(&self) {
        let groups = self.live_groups();
        for &pgid in &groups {
            kill_group(pgid, Signal::SIGTERM);
        }
        if !groups.is_empty() {
            tokio::time::sleep(TERM_GRACE).await;
        }
        self.kill_all_now();
        // Let the reader tasks record the ends.
        tokio::task::yield_now().await;
    }

    /// SIGKILL to every group still alive (no waiting).
    pub fn kill_all_now(&self) {
        self.shutdown.cancel();
        for pgid in self.live_groups() {
            kill_group(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for BackgroundProcesses {
    fn drop(&mut self) {
        self.kill_all_now();
    }
}

#[cfg(test)]
mod tests {
    use super::super::process::{ShellSpec, MAX_BUFFER_BYTES};
    use super::*;

    /// What the table holds of `pid`: (exited, bytes held by its output buffer).
    fn held(table: &BackgroundProcesses, pid: i32) -> Option<(bool, usize)> {
        let entries = table.entries();
        let entry = entries.iter().find(|e| e.pid == pid)?;
        let state = entry.state();
        Some((
            matches!(state.status, ProcessStatus::Exited { .. }),
            state.output.held_bytes(),
        ))
    }

    #[tokio::test]
    async fn a_background_process_output_is_bounded_while_it_runs_and_released_when_it_exits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let table = Arc::new(BackgroundProcesses::new());
        // 40 MB of output, then a pause in which the process is still running.
        let spec = ShellSpec {
            script: "head -c 40000000 /dev/zero | tr '\\0' x; sleep 1".into(),
            cwd: dir.path().to_path_buf(),
            env: Vec::new(),
            env_remove: Vec::new(),
            env_policy: Default::default(),
            sandbox: None,
        };
        let run = RunningCommand::spawn(&spec).expect("spawn");
        let pid = table.adopt(run, "big".into());
        let bound_running = 2 * MAX_BUFFER_BYTES;
        let started = std::time::Instant::now();
        let mut peak = 0;
        loop {
            let (exited, bytes) = held(&table, pid).expect("the process is in the table");
            if exited {
                assert!(
                    bytes <= MAX_EXITED_OUTPUT_BYTES,
                    "{bytes} bytes kept after the exit"
                );
                break;
            }
            peak = peak.max(bytes);
            assert!(bytes <= bound_running, "{bytes} bytes held while running");
            assert!(started.elapsed() < std::time::Duration::from_secs(60));
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(
            peak > MAX_EXITED_OUTPUT_BYTES,
            "the output was seen running: {peak}"
        );
        let text = table
            .entries()
            .iter()
            .find(|e| e.pid == pid)
            .map(|e| e.state().output.text())
            .expect("entry");
        assert!(
            text.starts_with("[TROUPE_WARNING: Output truncated."),
            "{}",
            &text[..80]
        );
        assert!(text.ends_with('x'));
    }
}
