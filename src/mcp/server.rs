//! The `McpServer` actor: owns one server's connection (an rmcp client over a child
//! process's stdio, or over HTTP), discovers its tools and registers them, follows
//! `tools/list_changed`, and restarts the server with backoff when it dies. Calls do
//! not queue behind it: each tool call uses the connection's peer directly, so many
//! run at once and dropping one (cancel, timeout) sends `notifications/cancelled`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use actix::prelude::*;
#[allow(deprecated)]
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ListRootsResult};
use rmcp::service::{NotificationContext, Peer, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use super::hub::{McpHub, PromptInfo, ResourceInfo, ServerState, ToolInfo};
use super::tool::McpTool;
use crate::settings::mcp::{child_env, McpServerConfig};
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

/// An open client session with what it discovered.
pub struct Connected {
    pub service: RunningService<RoleClient, TroupeClient>,
    pub child: Option<tokio::process::Child>,
    pub stderr: Arc<Mutex<VecDeque<String>>>,
    pub instructions: Option<String>,
}

/// How many consecutive restarts are tried after a server dies.
const MAX_RESTARTS: u32 = 5;

/// The actor of one MCP server.
pub struct McpServer {
    config: McpServerConfig,
    hub: Arc<McpHub>,
    conn: Arc<Connection>,
    stop: Option<rmcp::service::RunningServiceCancellationToken>,
    generation: u64,
    failures: u32,
}

impl McpServer {
    pub fn new(config: McpServerConfig, hub: Arc<McpHub>) -> Self {
        Self {
            config,
            hub,
            conn: Arc::new(Connection::default()),
            stop: None,
            generation: 0,
            failures: 0,
        }
    }

    fn connect(&mut self, ctx: &mut Context<Self>) {
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
        let future = async move {
            match tokio::time::timeout(timeout, open(&config, client, cwd)).await {
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
        self.stop = Some(connected.service.cancellation_token());
        self.conn.set(Some(peer.clone()));
        let instructions = connected.instructions.clone();
        self.hub.update(&self.config.name, |s| {
            s.instructions = instructions;
        });
        self.discover(peer, ctx);
        let (service, mut child, stderr) = (connected.service, connected.child, connected.stderr);
        let name = self.config.name.clone();
        let watch = async move {
            let reason = service.waiting().await;
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
            if act.failures >= MAX_RESTARTS {
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
            let infos: Vec<ToolInfo> = handles
                .iter()
                .zip(&kept)
                .map(|(h, t)| ToolInfo {
                    name: h.name().to_string(),
                    original: t.name.to_string(),
                    description: t.description.as_deref().unwrap_or("").to_string(),
                    schema: h.declaration().parameters_json_schema,
                })
                .collect();
            for clash in act.hub.registry.dynamic().replace(&config.name, handles) {
                tracing::warn!(tool = %clash, "Tool with name \"{clash}\" is already registered. Overwriting.");
            }
            act.failures = 0;
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
        if self.config.blocked.is_some() || !self.config.enabled() {
            return;
        }
        self.failures = 0;
        self.connect(ctx);
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
                mime_type: r.mime_type.clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok((tools, prompts, resources))
}

fn stderr_tail(stderr: &Mutex<VecDeque<String>>) -> String {
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
    match &config.entry.command {
        Some(command) => open_stdio(config, command, client, workspace).await,
        None => super::remote::open_remote(config, client).await,
    }
}

async fn open_stdio(
    config: &McpServerConfig,
    command: &str,
    client: TroupeClient,
    workspace: Option<std::path::PathBuf>,
) -> Result<Connected, String> {
    let name = &config.name;
    let parent: Vec<(String, String)> = std::env::vars().collect();
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&config.entry.args)
        .env_clear()
        .envs(child_env(&parent, &config.entry.env))
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
    match client.serve((stdout, stdin)).await {
        Ok(service) => {
            let instructions = service
                .peer()
                .peer_info()
                .and_then(|i| i.instructions.clone());
            Ok(Connected {
                service,
                child: Some(child),
                stderr,
                instructions,
            })
        }
        Err(e) => {
            let status = tokio::time::timeout(Duration::from_millis(300), child.wait())
                .await
                .ok()
                .and_then(Result::ok)
                .map(|s| format!(" (the process exited: {s})"))
                .unwrap_or_default();
            // Let the stderr reader catch up with the last lines.
            tokio::time::sleep(Duration::from_millis(20)).await;
            Err(format!(
                "MCP server '{name}' failed to initialize: {e}{status}{}",
                stderr_tail(&stderr)
            ))
        }
    }
}
