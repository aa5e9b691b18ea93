//! A stdio MCP server's process: started in a process group of its own, kept in its
//! connection's [`ChildSlot`] from the moment it runs (so that a shutdown in the
//! middle of `initialize` still finds it), and ended: stdin closed, a grace of
//! [`EXIT_GRACE`], then SIGKILL to the group, and reaped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use tokio::io::AsyncBufReadExt;

use super::server::{Connected, TroupeClient};
use crate::platform::child_env::ChildEnvPolicy;
use crate::settings::mcp::{server_env, McpServerConfig};

/// How long a server process gets to exit after its stdin closed.
pub const EXIT_GRACE: Duration = Duration::from_secs(1);

/// The process of a connection, until the connection's watch or the server's
/// [`Shutdown`](super::server::Shutdown) takes it.
pub type ChildSlot = Arc<Mutex<Option<tokio::process::Child>>>;

/// Waits up to [`EXIT_GRACE`] for a server whose stdin closed to exit, then kills its
/// process group, and reaps it.
pub(super) async fn end_process(mut child: tokio::process::Child, name: &str) {
    if let Ok(Ok(_)) = tokio::time::timeout(EXIT_GRACE, child.wait()).await {
        return;
    }
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        // Started with a process group of its own (`process_group(0)`).
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.start_kill();
    if let Err(e) = child.wait().await {
        tracing::warn!(server = %name, error = %e, "cannot reap the MCP server process");
    }
}

pub(super) fn stderr_tail(stderr: &Mutex<VecDeque<String>>) -> String {
    let lines: Vec<String> = stderr
        .lock()
        .map(|l| l.iter().cloned().collect())
        .unwrap_or_default();
    if lines.is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", lines.join(" | "))
    }
}

/// Opens the transport the config names and runs `initialize`.
pub async fn open(
    config: &McpServerConfig,
    client: TroupeClient,
    workspace: Option<std::path::PathBuf>,
) -> Result<Connected, String> {
    let slot = ChildSlot::default();
    let mut connected = open_into(config, client, workspace, &slot).await?;
    connected.child = slot.lock().ok().and_then(|mut held| held.take());
    Ok(connected)
}

/// [`open`], with a server process put into `slot` as soon as it runs (it stays there
/// while it is connected; `Connected::child` is then `None`).
pub async fn open_into(
    config: &McpServerConfig,
    client: TroupeClient,
    workspace: Option<std::path::PathBuf>,
    slot: &ChildSlot,
) -> Result<Connected, String> {
    match &config.entry.command {
        Some(command) => open_stdio(config, command, client, workspace, slot).await,
        None => super::remote::open_remote(config, client).await,
    }
}

async fn open_stdio(
    config: &McpServerConfig,
    command: &str,
    client: TroupeClient,
    workspace: Option<std::path::PathBuf>,
    slot: &ChildSlot,
) -> Result<Connected, String> {
    let name = &config.name;
    let mut cmd = tokio::process::Command::new(command);
    // The children's policy first, then what every unsandboxed child gets (git runs
    // no program a repository names, Python keeps the working directory off
    // `sys.path`), then the server's own `env` on top of it.
    ChildEnvPolicy::new(config.env_pass.clone()).apply_std(cmd.as_std_mut());
    let configured = server_env(&config.entry.env, &crate::settings::secrets::env_var);
    crate::platform::child_env::unsandboxed::apply(cmd.as_std_mut(), &configured);
    cmd.args(&config.entry.args)
        .envs(configured)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    match (&config.entry.cwd, workspace) {
        (Some(cwd), Some(ws)) => {
            cmd.current_dir(ws.join(cwd));
        }
        (Some(cwd), None) => {
            cmd.current_dir(cwd);
        }
        (None, Some(ws)) => {
            cmd.current_dir(ws);
        }
        (None, None) => {}
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("MCP server '{name}': cannot start `{command}`: {e}"))?;
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(err) = child.stderr.take() {
        let (sink, server) = (stderr.clone(), name.clone());
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %server, "stderr: {line}");
                if let Ok(mut buf) = sink.lock() {
                    if buf.len() == 5 {
                        buf.pop_front();
                    }
                    buf.push_back(line);
                }
            }
        });
    }
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(format!("MCP server '{name}': no stdio pipes"));
    };
    if let Ok(mut held) = slot.lock() {
        *held = Some(child);
    }
    // The server's output reaches rmcp through the bounds of one message.
    let stdout = super::bounded::filter(stdout, name.clone());
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(stdout, stdin)
        .with_max_line_length(super::bounded::MAX_MESSAGE_BYTES + 1);
    match client.serve(transport).await {
        Ok(service) => {
            let instructions = service
                .peer()
                .peer_info()
                .and_then(|i| i.instructions.clone());
            Ok(Connected {
                service,
                child: None,
                stderr,
                instructions,
            })
        }
        Err(e) => {
            let child = slot.lock().ok().and_then(|mut held| held.take());
            let status = match child {
                Some(mut child) => tokio::time::timeout(Duration::from_millis(300), child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .map(|s| format!(" (the process exited: {s})"))
                    .unwrap_or_default(),
                None => String::new(),
            };
            // Let the stderr reader catch up with the last lines.
            tokio::time::sleep(Duration::from_millis(20)).await;
            Err(format!(
                "MCP server '{name}' failed to initialize: {e}{status}{}",
                stderr_tail(&stderr)
            ))
        }
    }
}
