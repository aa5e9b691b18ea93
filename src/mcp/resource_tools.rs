//! gemini-cli 0.61's `list_mcp_resources` and `read_mcp_resource`: the model lists the
//! resources the connected MCP servers offer and reads one by URI. Both are dynamic
//! tools of their own source, registered while at least one connected server lists a
//! resource and withdrawn when none does (gemini-cli declares them only then), so
//! they come after the built-in tools and before the servers' own tools.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::ResourceContents;
use serde_json::{json, Value};

use super::hub::{McpHub, ResourceInfo, ServerState};
use crate::protocol::content::FunctionDeclaration;
use crate::protocol::{ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};
use crate::tools::host::run_guarded;
use crate::tools::invoke::HostOutcome;
use crate::tools::registry::{Invocation, ToolHandle};
use crate::tools::{wait_for_previous, PolicyHint, Services, ToolContext, Touched};

/// The name the model calls to list resources.
pub const LIST_NAME: &str = "list_mcp_resources";
/// The name the model calls to read one resource.
pub const READ_NAME: &str = "read_mcp_resource";
/// The dynamic source the two tools are registered under: empty, so it sorts before
/// every server's name and can be no server's.
const SOURCE: &str = "";
/// How long listing may take (it reads the hub only).
const LIST_TIME: Duration = Duration::from_secs(10);

/// A resource of a connected server, as the two tools see it.
struct Found {
    server: String,
    info: ResourceInfo,
    timeout: Duration,
}

/// The resources of the connected servers, in the hub's server order.
fn all_resources(hub: &McpHub) -> Vec<Found> {
    hub.statuses()
        .into_iter()
        .filter(|s| s.state == ServerState::Connected)
        .flat_map(|s| {
            let (server, timeout) = (s.config.name.clone(), s.config.timeout());
            s.resources.into_iter().map(move |info| Found {
                server: server.clone(),
                info,
                timeout,
            })
        })
        .collect()
}

/// gemini-cli's lookup: `server:uri` first, then the URI alone (the first server
/// listing it).
fn find(resources: Vec<Found>, uri: &str) -> Option<Found> {
    let qualified = uri.split_once(':').filter(|(server, _)| !server.is_empty());
    let at = qualified
        .and_then(|(server, rest)| {
            resources
                .iter()
                .position(|f| f.server == server && f.info.uri == rest)
        })
        .or_else(|| resources.iter().position(|f| f.info.uri == uri))?;
    resources.into_iter().nth(at)
}

/// Registers the two tools when a connected server lists a resource, withdraws them
/// when none does (called on every change of the hub's status).
/// `tools.core` and `tools.exclude` apply to each, as to the built-in tools.
pub(super) fn refresh(hub: &McpHub, me: &Weak<McpHub>) {
    let wanted = !all_resources(hub).is_empty();
    let dynamic = hub.registry.dynamic();
    let registered = dynamic.get(READ_NAME).is_some() || dynamic.get(LIST_NAME).is_some();
    if wanted == registered {
        return;
    }
    if wanted {
        // gemini-cli's order: read, then list.
        let tools: Vec<Arc<dyn ToolHandle>> = [Which::Read, Which::List]
            .into_iter()
            .map(|which| ResourceTool::new(which, me.clone()))
            .filter(|tool| hub.registry.keeps(tool.name()))
            .map(|tool| Arc::new(tool) as Arc<dyn ToolHandle>)
            .collect();
        if !tools.is_empty() {
            dynamic.replace(SOURCE, tools);
        }
    } else {
        dynamic.remove(SOURCE);
    }
}

/// Withdraws the two tools (the session's shutdown).
pub(super) fn withdraw(hub: &McpHub) {
    hub.registry.dynamic().remove(SOURCE);
}

#[derive(Clone, Copy, PartialEq)]
enum Which {
    List,
    Read,
}

/// One of the two tools; it holds the hub weakly (the hub's registry holds the tool).
struct ResourceTool {
    which: Which,
    hub: Weak<McpHub>,
    schema: Value,
}

impl ResourceTool {
    fn new(which: Which, hub: Weak<McpHub>) -> Self {
        let schema = match which {
            Which::List => json!({
                "type": "object",
                "properties": {"serverName": {
                    "description": "Only the resources of this MCP server (optional).",
                    "type": "string"}},
                "required": []
            }),
            Which::Read => json!({
                "type": "object",
                "properties": {"uri": {
                    "description": "The resource's URI, as listed (optionally prefixed with its server's name and a colon).",
                    "type": "string"}},
                "required": ["uri"]
            }),
        };
        Self { which, hub, schema }
    }
}

impl ToolHandle for ResourceTool {
    fn name(&self) -> &str {
        match self.which {
            Which::List => LIST_NAME,
            Which::Read => READ_NAME,
        }
    }

    fn display_name(&self) -> &str {
        match self.which {
            Which::List => "List MCP Resources",
            Which::Read => "Read MCP Resource",
        }
    }

    fn kind(&self) -> ToolKind {
        match self.which {
            Which::List => ToolKind::Search,
            Which::Read => ToolKind::Read,
        }
    }

    fn description(&self) -> String {
        match self.which {
            Which::List => "Lists the resources (documents, data) that the connected MCP servers offer, with their URIs.".into(),
            Which::Read => "Reads one resource of a connected MCP server by its URI.".into(),
        }
    }

    fn declaration(&self) -> FunctionDeclaration {
        FunctionDeclaration {
            name: self.name().to_string(),
            description: self.description(),
            parameters_json_schema: wait_for_previous::declared(self.schema.clone()),
        }
    }

    fn prepare(&self, args: &Value, _services: &Services) -> Result<Box<dyn Invocation>, String> {
        let args = wait_for_previous::stripped(args);
        crate::engine::schema::validate(&self.schema, &args)?;
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        let request = match self.which {
            Which::List => Request::List(text("serverName").filter(|s| !s.is_empty())),
            Which::Read => Request::Read(text("uri").unwrap_or_default()),
        };
        Ok(Box::new(ResourceCall {
            request,
            hub: self.hub.clone(),
            touched: Touched::default(),
        }))
    }

    fn modified_args(&self, _args: &Value, _edited_content: &str) -> Option<Value> {
        None
    }
}

enum Request {
    /// The resources of every server, or of the one named.
    List(Option<String>),
    Read(String),
}

struct ResourceCall {
    request: Request,
    hub: Weak<McpHub>,
    touched: Touched,
}

impl Invocation for ResourceCall {
    fn touched(&self) -> &Touched {
        &self.touched
    }

    fn policy_hint(&self) -> Option<PolicyHint> {
        None
    }

    fn approval_keys(&self) -> &[String] {
        &[]
    }

    fn confirmation(&self, _ctx: &ToolContext) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn actor_label(&self) -> Arc<str> {
        Arc::from("mcp:resources")
    }

    fn execute(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, HostOutcome> {
        let ResourceCall { request, hub, .. } = *self;
        let timeout = match (&request, hub.upgrade()) {
            (Request::Read(uri), Some(h)) => find(all_resources(&h), uri)
                .map(|f| f.timeout)
                .unwrap_or(LIST_TIME),
            _ => LIST_TIME,
        };
        let (cancel, committed) = (ctx.cancel.clone(), ctx.committed_flag());
        Box::pin(run_guarded(
            move || Box::pin(run(request, hub)),
            cancel,
            timeout,
            committed,
        ))
    }
}

async fn run(request: Request, hub: Weak<McpHub>) -> ToolOutput {
    let Some(hub) = hub.upgrade() else {
        let message = "MCP Client Manager not available.";
        return ToolOutput::error(
            ToolErrorKind::ExecutionFailed,
            message,
            format!("Error: {message}"),
        );
    };
    match request {
        Request::List(server) => list(&hub, server),
        Request::Read(uri) => read(&hub, &uri).await,
    }
}

/// gemini-cli's list: `- server:uri | name | description` lines.
fn list(hub: &McpHub, server: Option<String>) -> ToolOutput {
    let resources: Vec<Found> = all_resources(hub)
        .into_iter()
        .filter(|f| server.as_ref().is_none_or(|s| &f.server == s))
        .collect();
    if resources.is_empty() {
        let message = match server {
            Some(s) => format!("No resources found for server: {s}"),
            None => "No MCP resources found.".to_string(),
        };
        return ToolOutput::text(message.clone(), message);
    }
    let mut text = String::from("Available MCP Resources:\n");
    for f in &resources {
        text.push_str(&format!("- {}:{}", f.server, f.info.uri));
        if !f.info.name.is_empty() {
            text.push_str(&format!(" | {}", f.info.name));
        }
        if let Some(d) = f.info.description.as_deref().filter(|d| !d.is_empty()) {
            text.push_str(&format!(" | {d}"));
        }
        text.push('\n');
    }
    ToolOutput::text(text, format!("Listed {} resources.", resources.len()))
}

fn failed(kind: ToolErrorKind, message: String) -> ToolOutput {
    let display = format!("Error: {message}");
    ToolOutput::error(kind, message, display)
}

/// gemini-cli's read: each text content and a line per binary one.
async fn read(hub: &McpHub, uri: &str) -> ToolOutput {
    if uri.is_empty() {
        return failed(ToolErrorKind::InvalidToolParams, "No URI provided.".into());
    }
    let Some(found) = find(all_resources(hub), uri) else {
        return failed(
            ToolErrorKind::McpResourceNotFound,
            format!("Resource not found for URI: {uri}"),
        );
    };
    let Some(peer) = hub.connection(&found.server).and_then(|c| c.peer()) else {
        return failed(
            ToolErrorKind::ExecutionFailed,
            format!("MCP Client not found for server: {}", found.server),
        );
    };
    let params: rmcp::model::ReadResourceRequestParams =
        match serde_json::from_value(json!({ "uri": found.info.uri })) {
            Ok(p) => p,
            Err(e) => return failed(ToolErrorKind::McpToolError, e.to_string()),
        };
    let result = match peer.read_resource(params).await {
        Ok(r) => r,
        Err(e) => {
            return failed(
                ToolErrorKind::McpToolError,
                format!("Failed to read resource: {e}"),
            )
        }
    };
    let mut text = String::new();
    for content in &result.contents {
        match content {
            ResourceContents::TextResourceContents { text: t, .. } if !t.is_empty() => {
                text.push_str(t);
                text.push('\n');
            }
            ResourceContents::BlobResourceContents {
                blob, mime_type, ..
            } if !blob.is_empty() => {
                let mime = mime_type.as_deref().unwrap_or("undefined");
                text.push_str(&format!("[Binary Data ({mime})]\n"));
            }
            _ => {}
        }
    }
    if text.is_empty() {
        text = "No content returned from resource.".into();
    }
    let display = format!(
        "Successfully read resource \"{}\" from server \"{}\"",
        found.info.name, found.server
    );
    ToolOutput::text(text, display)
}
