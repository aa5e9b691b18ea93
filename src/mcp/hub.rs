//! The MCP side of a session: one [`McpServer`](super::server::McpServer) actor per
//! configured server, the status every front end reads (`/mcp`, `troupe mcp list`),
//! and the server instructions for the first user turn.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::server::{McpServer, Reload, Shutdown};
use crate::protocol::EventSink;
use crate::protocol::UiEvent;
use crate::settings::mcp::McpServerConfig;
use crate::tools::ToolRegistry;

/// How long a start waits for its MCP servers before it says which are still
/// connecting ([`McpHub::settled_telling`]).
pub const SLOW_START: Duration = Duration::from_secs(1);

/// The process prints the slow-start line (a headless run: stderr is its own).
static TELL_SLOW_START: AtomicBool = AtomicBool::new(false);

/// Makes the starts of this process say on stderr which MCP servers they still wait
/// for after [`SLOW_START`] (`troupe -p`; the REPL shows the servers' status itself).
pub fn tell_slow_start() {
    TELL_SLOW_START.store(true, Ordering::Relaxed);
}

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    Disconnected,
    Connecting,
    Connected,
    Disabled,
    /// Not started: a project server in an untrusted folder.
    Blocked,
    Failed,
}

impl ServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disconnected => "disconnected",
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::Disabled => "disabled",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
        }
    }

    /// Discovery for this server is over (for better or worse).
    pub fn settled(self) -> bool {
        !matches!(self, Self::Connecting | Self::Disconnected)
    }
}

/// A tool a server offers, as discovered.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    /// The name the model calls (`mcp_<server>_<tool>`).
    pub name: String,
    /// The server's own name for it.
    pub original: String,
    pub description: String,
    pub schema: Value,
}

/// A prompt a server offers.
#[derive(Debug, Clone)]
pub struct PromptInfo {
    pub name: String,
    pub description: String,
    /// `(name, required)`.
    pub arguments: Vec<(String, bool)>,
}

/// A resource a server offers.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    pub uri: String,
    pub name: String,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

/// What is known about one server.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub config: McpServerConfig,
    pub state: ServerState,
    pub last_error: Option<String>,
    pub tools: Vec<ToolInfo>,
    pub prompts: Vec<PromptInfo>,
    pub resources: Vec<ResourceInfo>,
    pub instructions: Option<String>,
    /// Restarts after the process died.
    pub restarts: u32,
    /// Tools the server offered that were not registered, with the reason.
    pub skipped: Vec<super::listing::SkippedTool>,
}

/// The servers of a session and their shared status.
pub struct McpHub {
    pub registry: Arc<ToolRegistry>,
    pub roots: Vec<PathBuf>,
    status: Mutex<BTreeMap<String, ServerStatus>>,
    addrs: Mutex<BTreeMap<String, Addr<McpServer>>>,
    conns: Mutex<BTreeMap<String, Arc<super::server::Connection>>>,
    changed: tokio::sync::watch::Sender<u64>,
    /// Instructions were already put into a user turn.
    instructions_sent: std::sync::atomic::AtomicBool,
    /// Where work for a front end without a runtime of its own runs (prompts/get).
    runtime: ArbiterHandle,
    /// The servers' arbiters, one each (handed over at [`McpHub::shutdown`]).
    arbiters: Mutex<Vec<Arbiter>>,
    /// Where what the user must be told goes (the front end), if anywhere.
    warnings: Option<EventSink>,
    /// The hub itself, for the resource tools it registers (they hold it weakly).
    me: std::sync::Weak<McpHub>,
}

impl McpHub {
    /// Starts one actor per server (each on an arbiter of its own); connections go on
    /// in the background. What the user must hear of (a server given up, a tool left
    /// out) goes to `warnings` as [`UiEvent::Warning`]. Must run inside an actix
    /// `System`.
    pub fn start(
        servers: &[McpServerConfig],
        registry: Arc<ToolRegistry>,
        roots: Vec<PathBuf>,
        warnings: Option<EventSink>,
    ) -> Arc<Self> {
        let (changed, _) = tokio::sync::watch::channel(0);
        let hub = Arc::new_cyclic(|me| Self {
            registry,
            roots,
            status: Mutex::new(BTreeMap::new()),
            addrs: Mutex::new(BTreeMap::new()),
            conns: Mutex::new(BTreeMap::new()),
            changed,
            instructions_sent: Default::default(),
            runtime: Arbiter::current(),
            arbiters: Mutex::new(Vec::new()),
            warnings,
            me: me.clone(),
        });
        for config in servers {
            hub.set_status(ServerStatus {
                config: config.clone(),
                state: ServerState::Disconnected,
                last_error: None,
                tools: Vec::new(),
                prompts: Vec::new(),
                resources: Vec::new(),
                instructions: None,
                restarts: 0,
                skipped: Vec::new(),
            });
            let arbiter = match Arbiter::try_new() {
                Ok(arbiter) => arbiter,
                Err(e) => {
                    hub.update(&config.name, |s| {
                        s.state = ServerState::Failed;
                        s.last_error = Some(format!("cannot start a thread for it: {e}"));
                    });
                    continue;
                }
            };
            let (c, h) = (config.clone(), hub.clone());
            let addr =
                McpServer::start_in_arbiter(&arbiter.handle(), move |_| McpServer::new(c, h));
            if let Ok(mut addrs) = hub.addrs.lock() {
                addrs.insert(config.name.clone(), addr);
            }
            if let Ok(mut arbiters) = hub.arbiters.lock() {
                arbiters.push(arbiter);
            }
        }
        hub
    }

    /// Ends every server for good (the session's shutdown): each closes its connection
    /// and its process is ended and reaped ([`Shutdown`]); their tools are withdrawn.
    /// Returns the servers' arbiters, for the caller to stop and join (off the actix
    /// arbiters: joining blocks). A second call does nothing.
    pub async fn shutdown(&self) -> Vec<Arbiter> {
        let addrs: Vec<Addr<McpServer>> = self
            .addrs
            .lock()
            .map(|mut a| std::mem::take(&mut *a).into_values().collect())
            .unwrap_or_default();
        futures::future::join_all(addrs.iter().map(|a| a.send(Shutdown))).await;
        if let Ok(mut conns) = self.conns.lock() {
            conns.clear();
        }
        // The tools hold the hub: withdrawing them ends that cycle too.
        for status in self.statuses() {
            self.registry.dynamic().remove(&status.config.name);
        }
        super::resource_tools::withdraw(self);
        self.arbiters
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default()
    }

    pub(super) fn set_status(&self, status: ServerStatus) {
        if let Ok(mut map) = self.status.lock() {
            map.insert(status.config.name.clone(), status);
        }
        super::resource_tools::refresh(self, &self.me);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Tells the user `message` (and logs it).
    pub(super) fn warn(&self, message: String) {
        tracing::warn!(%message, "mcp");
        if let Some(to) = &self.warnings {
            to.do_send(UiEvent::Warning(message));
        }
    }

    /// The tools of `server` that [`DynamicTools::replace`] left out (their name is
    /// another server's tool's): taken out of `infos`, the user warned, each returned
    /// with the reason.
    ///
    /// [`DynamicTools::replace`]: crate::tools::dynamic::DynamicTools::replace
    pub(super) fn left_out(
        &self,
        server: &str,
        refused: Vec<(String, String)>,
        infos: &mut Vec<ToolInfo>,
    ) -> Vec<super::listing::SkippedTool> {
        let mut skipped = Vec::new();
        for (name, holder) in refused {
            let Some(at) = infos.iter().position(|i| i.name == name) else {
                continue;
            };
            let info = infos.remove(at);
            let theirs = self
                .status(&holder)
                .and_then(|s| s.tools.into_iter().find(|t| t.name == name))
                .map(|t| t.original)
                .unwrap_or_default();
            let reason = format!(
                "its name {name} is already the name of tool '{theirs}' of MCP server '{holder}'"
            );
            self.warn(format!(
                "MCP tool '{}' of server '{server}' is not registered: {reason}.",
                info.original
            ));
            skipped.push(super::listing::SkippedTool {
                name: info.original,
                reason,
            });
        }
        skipped
    }

    /// Changes one server's status in place.
    pub(super) fn update(&self, name: &str, f: impl FnOnce(&mut ServerStatus)) {
        if let Ok(mut map) = self.status.lock() {
            if let Some(s) = map.get_mut(name) {
                f(s);
            }
        }
        super::resource_tools::refresh(self, &self.me);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Every server's status, in name order (user servers first).
    pub fn statuses(&self) -> Vec<ServerStatus> {
        let mut list: Vec<ServerStatus> = self
            .status
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        list.sort_by_key(|s| s.config.scope != crate::settings::mcp::Scope::User);
        list
    }

    pub fn status(&self, name: &str) -> Option<ServerStatus> {
        self.status.lock().ok()?.get(name).cloned()
    }

    /// The servers whose discovery is not over yet, in name order.
    pub fn connecting(&self) -> Vec<String> {
        self.statuses()
            .into_iter()
            .filter(|s| !s.state.settled())
            .map(|s| s.config.name)
            .collect()
    }

    /// [`McpHub::settled`], and when the wait passes [`SLOW_START`] (and a headless
    /// run asked for it, [`tell_slow_start`]) one line on stderr naming the servers
    /// still connecting.
    pub async fn settled_telling(&self, limit: Duration) {
        if !TELL_SLOW_START.load(Ordering::Relaxed) || limit <= SLOW_START {
            return self.settled(limit).await;
        }
        self.settled(SLOW_START).await;
        let waiting = self.connecting();
        if waiting.is_empty() {
            return;
        }
        let noun = if waiting.len() == 1 {
            "server"
        } else {
            "servers"
        };
        eprintln!(
            "troupe: waiting for MCP {noun} still connecting: {} (at most {} s more, mcp.startup_wait_ms)",
            waiting.join(", "),
            (limit - SLOW_START).as_secs_f64().ceil()
        );
        self.settled(limit - SLOW_START).await;
    }

    /// Waits until every server is connected or has failed, at most `limit`.
    pub async fn settled(&self, limit: Duration) {
        let mut rx = self.changed.subscribe();
        let done = |hub: &Self| hub.statuses().iter().all(|s| s.state.settled());
        let _ = tokio::time::timeout(limit, async {
            while !done(self) {
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }

    /// Reconnects every server (`/mcp reload`).
    pub fn reload(&self) {
        if let Ok(addrs) = self.addrs.lock() {
            for addr in addrs.values() {
                addr.do_send(Reload);
            }
        }
    }

    pub(super) fn register_connection(&self, name: &str, conn: Arc<super::server::Connection>) {
        if let Ok(mut conns) = self.conns.lock() {
            conns.insert(name.to_string(), conn);
        }
    }

    /// The `@server:uri` references in a prompt, for configured servers.
    pub fn resource_refs(&self, text: &str) -> Vec<(String, String)> {
        let names: Vec<String> = self.statuses().into_iter().map(|s| s.config.name).collect();
        text.split_whitespace()
            .filter_map(|w| w.strip_prefix('@'))
            .filter_map(|w| w.split_once(':'))
            .filter(|(server, uri)| names.iter().any(|n| n == server) && !uri.is_empty())
            .map(|(s, u)| (s.to_string(), u.to_string()))
            .collect()
    }

    /// Reads the referenced resources (`resources/read`) as the text parts that follow
    /// the prompt (gemini-cli's layout); an error names what failed.
    pub async fn read_resources(&self, refs: &[(String, String)]) -> Result<Vec<String>, String> {
        let mut parts = vec!["\n--- Content from referenced files ---".to_string()];
        for (server, uri) in refs {
            let conn = self.conns.lock().ok().and_then(|c| c.get(server).cloned());
            let Some(peer) = conn.and_then(|c| c.peer()) else {
                return Err(format!("Exiting due to an error processing the @ command: MCP server '{server}' is not connected."));
            };
            let params: rmcp::model::ReadResourceRequestParams =
                serde_json::from_value(serde_json::json!({ "uri": uri }))
                    .map_err(|e| e.to_string())?;
            let result = peer.read_resource(params).await.map_err(|e| {
                format!("Exiting due to an error processing the @ command: reading {uri} from MCP server '{server}' failed: {e}")
            })?;
            let mut text = String::new();
            for content in &result.contents {
                match content {
                    rmcp::model::ResourceContents::TextResourceContents { text: t, .. } => {
                        text.push_str(t)
                    }
                    rmcp::model::ResourceContents::BlobResourceContents {
                        blob, mime_type, ..
                    } => {
                        let bytes = base64::Engine::decode(
                            &base64::engine::general_purpose::STANDARD,
                            blob,
                        )
                        .map(|b| b.len())
                        .unwrap_or(blob.len() * 3 / 4);
                        text.push_str(&format!(
                            "[Binary resource content {}, {bytes} bytes]",
                            mime_type.as_deref().unwrap_or("application/octet-stream")
                        ))
                    }
                    #[allow(unreachable_patterns)]
                    _ => text.push_str("[Unknown resource content]"),
                }
            }
            parts.push(format!("\nContent from @{uri}:\n{text}"));
        }
        parts.push("\n--- End of content ---".to_string());
        Ok(parts)
    }

    pub(super) fn connection(&self, name: &str) -> Option<Arc<super::server::Connection>> {
        self.conns.lock().ok()?.get(name).cloned()
    }

    /// Runs `future` on the session's runtime and waits for it from a thread outside
    /// it (the REPL's); `None` if the runtime is gone.
    pub fn block_on<T: Send + 'static>(
        &self,
        future: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = futures::channel::oneshot::channel();
        let sent = self.runtime.spawn(async move {
            let _ = tx.send(future.await);
        });
        if !sent {
            return None;
        }
        futures::executor::block_on(rx).ok()
    }

    pub fn addr(&self, name: &str) -> Option<Addr<McpServer>> {
        self.addrs.lock().ok()?.get(name).cloned()
    }

    /// The servers' instructions, once: for the first user turn (gemini-cli's wording).
    pub fn take_instructions(&self) -> Option<String> {
        let texts: Vec<String> = self
            .statuses()
            .into_iter()
            .filter(|s| s.state == ServerState::Connected)
            .filter_map(|s| s.instructions.clone().map(|i| (s.config.name.clone(), i)))
            .filter(|(_, i)| !i.trim().is_empty())
            .map(|(name, text)| {
                format!("The following are instructions provided by the tool server '{name}':\n---[start of server instructions]---\n{text}\n---[end of server instructions]---")
            })
            .collect();
        if texts.is_empty() {
            return None;
        }
        if self
            .instructions_sent
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return None;
        }
        Some(texts.join("\n\n"))
    }
}
