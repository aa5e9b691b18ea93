//! The `McpServer` actor: owns one server's connection (an rmcp client over a child
//! process's stdio, or over HTTP), discovers its tools and registers them, follows
//! `tools/list_changed`, and restarts the server with backoff when it dies. Calls do
//! not queue behind it: each tool call uses the connection's peer directly, so many
//! run at once and dropping one (cancel, timeout) sends `notifications/cancelled`.
//! [`Shutdown`] ends it for good: the connection closes and the process is reaped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use actix::prelude::*;
#[allow(deprecated)]
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ListRootsResult};
use rmcp::service::{NotificationContext, Peer, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};

use super::hub::{McpHub, PromptInfo, ResourceInfo, ServerState, ToolInfo};
use super::process::{end_process, stderr_tail};
pub use super::process::{open, open_into, ChildSlot, EXIT_GRACE};
use super::tool::McpTool;
use crate::settings::mcp::McpServerConfig;
use crate::tools::registry::ToolHandle;

/// The live peer of a server, shared with its tools (empty while not connected).
#[derive(Default)]
pub struct Connection {
    peer: RwLock<Option<Peer<RoleClient>>>,
}

impl Connection {
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.read().ok()?.clone()
    }

    fn set(&self, peer: Option<Peer<RoleClient>>) {
        if let Ok(mut slot) = self.peer.write() {
            *slot = peer;
        }
    }
}

/// Troupe's side of the MCP session: names itself, answers `roots/list` with the
/// workspace roots, and passes list changes to its actor.
#[derive(Clone)]
pub struct TroupeClient {
    roots: Vec<std::path::PathBuf>,
    changed: Option<Recipient<ListChanged>>,
}

impl TroupeClient {
    pub fn new(roots: Vec<std::path::PathBuf>, changed: Option<Recipient<ListChanged>>) -> Self {
        Self { roots, changed }
    }
}

// Roots are deprecated by a later protocol revision; gemini-cli still declares them.
#[allow(deprecated)]
impl ClientHandler for TroupeClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_roots()
                .enable_roots_list_changed()
                .build(),
            Implementation::new("troupe-mcp-client", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots: Vec<serde_json::Value> = self
            .roots
            .iter()
            .map(|r| serde_json::json!({"uri": format!("file://{}", r.display()), "name": r.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}))
            .collect();
        serde_json::from_value(serde_json::json!({ "roots": roots }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(r) = &self.changed {
            r.do_send(ListChanged);
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(r) = &self.changed {
            r.do_send(ListChanged);
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(r) = &self.changed {
            r.do_send(ListChanged);
        }
    }
}

/// A server said its tools (prompts, resources) changed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ListChanged;

/// Reconnect now (`/mcp reload`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reload;

/// Ends the server for good (the session's shutdown): no reconnect or restart; the
/// connection is closed, and a server process that has not exited within
/// [`EXIT_GRACE`] is killed with its process group. Answered once the process is
/// reaped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

/// An open client session with what it discovered.
pub struct Connected {
    pub service: RunningService<RoleClient, TroupeClient>,
    /// A server process not already in the connection's slot (see [`open`]).
    pub child: Option<tokio::process::Child>,
    pub stderr: Arc<Mutex<VecDeque<String>>>,
    pub instructions: Option<String>,
}

/// How many consecutive restarts are tried after a server dies.
const MAX_RESTARTS: u32 = 5;

/// A connection that lived this long before it closed starts the count of
/// restarts afresh; one that closed sooner counts as one more failure in a row (a
/// server that lists its tools and exits is not restarted for ever).
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// The actor of one MCP server.
pub struct McpServer {
    config: McpServerConfig,
    hub: Arc<McpHub>,
    conn: Arc<Connection>,
    stop: Option<rmcp::service::RunningServiceCancellationToken>,
    /// The process of the open connection (stdio servers).
    child: ChildSlot,
    generation: u64,
    /// Connections in a row that failed or closed before [`STABLE_AFTER`].
    failures: u32,
    /// When the open connection was made.
    connected_at: Option<std::time::Instant>,
    /// [`Shutdown`] arrived: nothing connects again.
    ended: bool,
}

impl McpServer {
    pub fn new(config: McpServerConfig, hub: Arc<McpHub>) -> Self {
        Self {
            config,
            hub,
            conn: Arc::new(Connection::default()),
            stop: None,
            child: ChildSlot::default(),
            generation: 0,
            failures: 0,
            connected_at: None,
            ended: false,
        }
    }

    fn connect(&mut self, ctx: &mut Context<Self>) {
        if self.ended {
            return;
        }
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
        self.conn.set(None);
        self.generation += 1;
        let generation = self.generation;
        self.hub.update(&self.config.name, |s| {
            s.state = ServerState::Connecting;
        });
        let client = TroupeClient::new(self.hub.roots.clone(), Some(ctx.address().recipient()));
        let config = self.config.clone();
        let cwd = self.hub.roots.first().cloned();
        let timeout = config.timeout();
        let span = tracing::info_span!("mcp_connect", server = %config.name);
        // The process goes into a slot of this connection's own as soon as it runs, so
        // that a shutdown in the middle of `initialize` still reaps it.
        let slot = ChildSlot::default();
        self.child = slot.clone();
        let future = async move {
            match tokio::time::timeout(timeout, open_into(&config, client, cwd, &slot)).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "MCP server '{}' did not answer initialize within {} ms",
                    config.name,
                    timeout.as_millis()
                )),
            }
        };
        ctx.spawn(
            tracing::Instrument::instrument(future, span)
                .into_actor(self)
                .map(move |result, act, ctx| act.on_open(generation, result, ctx)),
        );
    }

    fn on_open(
        &mut self,
        generation: u64,
        result: Result<Connected, String>,
        ctx: &mut Context<Self>,
    ) {
        if generation != self.generation {
            return;
        }
        let connected = match result {
            Ok(c) => c,
            Err(error) => return self.failed(error, ctx),
        };
        let peer = connected.service.peer().clone();
        self.connected_at = Some(std::time::Instant::now());
        self.stop = Some(connected.service.cancellation_token());
        self.conn.set(Some(peer.clone()));
        let instructions = connected.instructions.clone();
        self.hub.update(&self.config.name, |s| {
            s.instructions = instructions;
        });
        self.discover(peer, ctx);
        let (service, stderr) = (connected.service, connected.stderr);
        // Each connection its own slot: a watch takes only its own process.
        let slot = self.child.clone();
        if let (Some(child), Ok(mut held)) = (connected.child, slot.lock()) {
            *held = Some(child);
        }
        let name = self.config.name.clone();
        let watch = async move {
            let reason = service.waiting().await;
            let mut child = slot.lock().ok().and_then(|mut c| c.take());
            let status = match child.as_mut() {
                Some(c) => tokio::time::timeout(Duration::from_millis(500), c.wait())
                    .await
                    .ok()
                    .and_then(Result::ok),
                None => None,
            };
            let mut message = format!("MCP server '{name}' disconnected");
            if let Some(status) = status {
                message.push_str(&format!(" (the process exited: {status})"));
            } else if let Ok(reason) = reason {
                message.push_str(&format!(" ({reason:?})"));
            }
            message.push_str(&stderr_tail(&stderr));
            message
        };
        ctx.spawn(watch.into_actor(self).map(move |message, act, ctx| {
            if generation != act.generation {
                return;
            }
            tracing::warn!(server = %act.config.name, %message, "mcp server closed");
            act.conn.set(None);
            act.stop = None;
            if act.connected_at.take().is_some_and(|at| at.elapsed() >= STABLE_AFTER) {
                act.failures = 0;
            }
            if act.failures >= MAX_RESTARTS {
                act.hub.warn(format!(
                    "MCP server '{}' stopped {} times in a row; Troupe gave up restarting it (`/mcp reload` starts it again): {message}",
                    act.config.name,
                    act.failures + 1
                ));
                return act.failed(message, ctx);
            }
            let delay = Duration::from_millis(250u64 << act.failures.min(7));
            act.failures += 1;
            act.hub.update(&act.config.name, |s| {
                s.state = ServerState::Failed;
                s.last_error = Some(format!("{message}; restarting in {} ms", delay.as_millis()));
                s.restarts += 1;
            });
            ctx.run_later(delay, move |act, ctx| {
                if generation == act.generation {
                    act.connect(ctx);
                }
            });
        }));
    }

    fn failed(&mut self, error: String, _ctx: &mut Context<Self>) {
        tracing::warn!(server = %self.config.name, %error, "mcp server failed");
        self.hub.update(&self.config.name, |s| {
            s.state = ServerState::Failed;
            s.last_error = Some(error);
        });
    }

    /// Lists tools (and prompts, resources) and registers the tools.
    fn discover(&mut self, peer: Peer<RoleClient>, ctx: &mut Context<Self>) {
        let generation = self.generation;
        let config = self.config.clone();
        let conn = self.conn.clone();
        let timeout = config.timeout();
        let future = async move {
            tokio::time::timeout(timeout, list_everything(&peer))
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "listing timed out after {} ms",
                        timeout.as_millis()
                    ))
                })
        };
        ctx.spawn(future.into_actor(self).map(move |listed, act, _| {
            if generation != act.generation {
                return;
            }
            let (listing, prompts, resources) = match listed {
                Ok(l) => l,
                Err(e) => {
                    act.hub.registry.dynamic().remove(&config.name);
                    act.hub.update(&config.name, |s| {
                        s.state = ServerState::Failed;
                        s.last_error = Some(format!("MCP server '{}': {e}", config.name));
                    });
                    return;
                }
            };
            for skipped in &listing.skipped {
                tracing::warn!(server = %config.name, tool = %skipped.name, reason = %skipped.reason, "MCP tool skipped");
            }
            let skipped = listing.skipped;
            let kept: Vec<rmcp::model::Tool> = listing
                .tools
                .into_iter()
                .filter(|t| config.keeps_tool(&t.name))
                .collect();
            let handles: Vec<Arc<dyn ToolHandle>> = kept
                .iter()
                .map(|t| Arc::new(McpTool::new(&config, t, conn.clone(), act.hub.clone())) as Arc<dyn ToolHandle>)
                .collect();
            let mut infos: Vec<ToolInfo> = handles
                .iter()
                .zip(&kept)
                .map(|(h, t)| ToolInfo {
                    name: h.name().to_string(),
                    original: t.name.to_string(),
                    description: t.description.as_deref().unwrap_or("").to_string(),
                    schema: h.declaration().parameters_json_schema,
                })
                .collect();
            let refused = act.hub.registry.dynamic().replace(&config.name, handles);
            let mut skipped = skipped;
            skipped.extend(act.hub.left_out(&config.name, refused, &mut infos));
            let error = (infos.is_empty() && prompts.is_empty() && resources.is_empty())
                .then(|| "No prompts, tools, or resources found on the server.".to_string());
            act.hub.update(&config.name, |s| {
                s.state = ServerState::Connected;
                s.last_error = error;
                s.tools = infos;
                s.prompts = prompts;
                s.resources = resources;
                s.skipped = skipped;
            });
        }));
    }
}

impl Actor for McpServer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.hub
            .register_connection(&self.config.name, self.conn.clone());
        if let Some(reason) = self.config.blocked.clone() {
            return self.hub.update(&self.config.name, |s| {
                s.state = ServerState::Blocked;
                s.last_error = Some(reason);
            });
        }
        if !self.config.enabled() {
            return self
                .hub
                .update(&self.config.name, |s| s.state = ServerState::Disabled);
        }
        self.connect(ctx);
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
    }
}

impl Handler<ListChanged> for McpServer {
    type Result = ();

    fn handle(&mut self, _: ListChanged, ctx: &mut Self::Context) {
        if let Some(peer) = self.conn.peer() {
            self.discover(peer, ctx);
        }
    }
}

impl Handler<Reload> for McpServer {
    type Result = ();

    fn handle(&mut self, _: Reload, ctx: &mut Self::Context) {
        if self.ended || self.config.blocked.is_some() || !self.config.enabled() {
            return;
        }
        self.failures = 0;
        self.connect(ctx);
    }
}

impl Handler<Shutdown> for McpServer {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Shutdown, _: &mut Self::Context) -> Self::Result {
        self.ended = true;
        // A watch, a restart or a connection still opening now finds itself outdated.
        self.generation += 1;
        // Taken before the connection is cancelled, so that its watch finds nothing.
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
        self.conn.set(None);
        let name = self.config.name.clone();
        Box::pin(async move {
            if let Some(child) = child {
                end_process(child, &name).await;
            }
        })
    }
}

type Listed = (
    super::listing::ToolListing,
    Vec<PromptInfo>,
    Vec<ResourceInfo>,
);

/// `tools/list`, `prompts/list` and `resources/list` for what the server declared.
async fn list_everything(peer: &Peer<RoleClient>) -> Result<Listed, String> {
    let caps = peer.peer_info().map(|i| i.capabilities.clone());
    let has = |f: fn(&rmcp::model::ServerCapabilities) -> bool| caps.as_ref().is_none_or(f);
    let tools = if has(|c| c.tools.is_some()) {
        super::listing::list_tools(peer).await?
    } else {
        super::listing::ToolListing::default()
    };
    let prompts = if has(|c| c.prompts.is_some()) {
        peer.list_all_prompts()
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|p| PromptInfo {
                name: p.name.to_string(),
                description: p.description.clone().unwrap_or_default(),
                arguments: p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| (a.name, a.required.unwrap_or(false)))
                    .collect(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let resources = if has(|c| c.resources.is_some()) {
        peer.list_all_resources()
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|r| ResourceInfo {
                uri: r.uri.clone(),
                name: r.name.clone(),
                description: r.description.clone(),
                mime_type: r.mime_type.clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok((tools, prompts, resources))
}
