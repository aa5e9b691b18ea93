//! One MCP tool as a registry entry: declared as `mcp_<server>_<tool>`, approved by the
//! server's trust and the mode (in plan mode, a tool runs when its server both marks it
//! read-only and is trusted), executed over the server's live connection with the
//! server's timeout; cancellation drops the request, which tells the server.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use super::convert::{declared_schema, result_to_output, tool_name};
use super::hub::McpHub;
use super::server::Connection;
use crate::engine::policy::PolicyDecision;
use crate::protocol::content::FunctionDeclaration;
use crate::protocol::{ApprovalMode, ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};
use crate::settings::mcp::McpServerConfig;
use crate::tools::host::run_guarded;
use crate::tools::invoke::HostOutcome;
use crate::tools::registry::{Invocation, ToolHandle};
use crate::tools::{PolicyHint, Services, ToolContext, Touched};

/// An MCP server's tool.
pub struct McpTool {
    name: String,
    display: String,
    server: String,
    original: String,
    description: String,
    schema: Value,
    read_only: bool,
    trust: bool,
    timeout: Duration,
    conn: Arc<Connection>,
    hub: Arc<McpHub>,
}

impl McpTool {
    pub fn new(
        config: &McpServerConfig,
        tool: &rmcp::model::Tool,
        conn: Arc<Connection>,
        hub: Arc<McpHub>,
    ) -> Self {
        let input = Value::Object((*tool.input_schema).clone());
        Self {
            name: tool_name(&config.name, &tool.name),
            display: format!("{} ({} MCP Server)", tool.name, config.name),
            server: config.name.clone(),
            original: tool.name.to_string(),
            description: tool.description.as_deref().unwrap_or("").to_string(),
            schema: declared_schema(&input),
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            trust: config.entry.trust,
            timeout: config.timeout(),
            conn,
            hub,
        }
    }
}

/// The allow rule covering every tool of `server` ("all server tools for this session").
pub fn server_rule(server: &str) -> String {
    format!("{}*", tool_name(server, ""))
}

impl ToolHandle for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn display_name(&self) -> &str {
        &self.display
    }

    fn mcp_server(&self) -> Option<&str> {
        Some(&self.server)
    }

    fn kind(&self) -> ToolKind {
        if self.read_only {
            ToolKind::Read
        } else {
            ToolKind::Execute
        }
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn declaration(&self) -> FunctionDeclaration {
        FunctionDeclaration {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters_json_schema: self.schema.clone(),
        }
    }

    fn prepare(&self, args: &Value, _services: &Services) -> Result<Box<dyn Invocation>, String> {
        let mut args = match args {
            Value::Object(map) => map.clone(),
            Value::Null => serde_json::Map::new(),
            _ => return Err("Invalid parameters: the arguments must be an object".into()),
        };
        args.remove(crate::tools::wait_for_previous::PARAM);
        Ok(Box::new(McpCall {
            tool: Arc::new(self.snapshot()),
            args,
            touched: Touched::default(),
        }))
    }

    fn modified_args(&self, _args: &Value, _edited_content: &str) -> Option<Value> {
        None
    }
}

/// What one call needs of its tool.
struct CallTarget {
    name: String,
    server: String,
    original: String,
    read_only: bool,
    trust: bool,
    timeout: Duration,
    conn: Arc<Connection>,
    hub: Arc<McpHub>,
}

impl McpTool {
    fn snapshot(&self) -> CallTarget {
        CallTarget {
            name: self.name.clone(),
            server: self.server.clone(),
            original: self.original.clone(),
            read_only: self.read_only,
            trust: self.trust,
            timeout: self.timeout,
            conn: self.conn.clone(),
            hub: self.hub.clone(),
        }
    }
}

struct McpCall {
    tool: Arc<CallTarget>,
    args: serde_json::Map<String, Value>,
    touched: Touched,
}

impl Invocation for McpCall {
    fn touched(&self) -> &Touched {
        &self.touched
    }

    fn decide(&self, mode: ApprovalMode, _interactive: bool) -> Option<PolicyDecision> {
        let t = &self.tool;
        Some(match mode {
            ApprovalMode::Yolo => PolicyDecision::Allow,
            // A server's readOnlyHint is its own claim: it counts only when the user
            // trusts the server.
            ApprovalMode::Plan if t.read_only && t.trust => PolicyDecision::Allow,
            ApprovalMode::Plan if t.read_only => PolicyDecision::Deny(format!(
                "You are in Plan Mode with access to read-only tools. MCP tool \"{}\" is marked read-only (readOnlyHint) by server \"{}\", but a server's hint counts only when the server is trusted (trust = true in [mcp_servers.{}]).",
                t.original, t.server, t.server
            )),
            ApprovalMode::Plan => PolicyDecision::Deny(format!(
                "You are in Plan Mode with access to read-only tools. MCP tool \"{}\" is not marked read-only (readOnlyHint) by server \"{}\".",
                t.original, t.server
            )),
            _ if t.trust => PolicyDecision::Allow,
            _ => PolicyDecision::Ask,
        })
    }

    fn policy_hint(&self) -> Option<PolicyHint> {
        None
    }

    fn approval_keys(&self) -> &[String] {
        &[]
    }

    fn confirmation(&self, _ctx: &ToolContext) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let t = &self.tool;
        let details = ConfirmationDetails::Mcp {
            title: format!(
                "Allow execution of MCP tool \"{}\" from server \"{}\"?",
                t.original, t.server
            ),
            server: t.server.clone(),
            tool: t.original.clone(),
            server_rule: server_rule(&t.server),
        };
        Box::pin(async move { Some(details) })
    }

    /// MCP calls go to the server's client, not to a tool actor.
    fn actor_label(&self) -> Arc<str> {
        Arc::from(format!("mcp:{}", self.tool.server))
    }

    fn execute(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, HostOutcome> {
        let tool = self.tool.clone();
        let args = self.args;
        let span = tracing::info_span!("tool_call", tool = %tool.name, call_id = %ctx.call_id);
        let cancel = ctx.cancel.clone();
        let timeout = tool.timeout;
        let committed = ctx.committed_flag();
        Box::pin(tracing::Instrument::instrument(
            run_guarded(
                move || Box::pin(call(tool, args)),
                cancel,
                timeout,
                committed,
            ),
            span,
        ))
    }
}

async fn call(tool: Arc<CallTarget>, args: serde_json::Map<String, Value>) -> ToolOutput {
    let Some(peer) = tool.conn.peer() else {
        let why = tool
            .hub
            .status(&tool.server)
            .map(|s| {
                let mut text = format!("its state is {}", s.state.as_str());
                if let Some(e) = s.last_error {
                    text.push_str(&format!(": {e}"));
                }
                text
            })
            .unwrap_or_default();
        return ToolOutput::error(
            ToolErrorKind::ExecutionFailed,
            format!(
                "MCP tool '{}' cannot run: server '{}' is not connected ({why}).",
                tool.original, tool.server
            ),
            format!("Error: MCP server '{}' is not connected.", tool.server),
        );
    };
    // Kept for the message of a result the server marks as an error.
    let args_value = Value::Object(args.clone());
    let params =
        rmcp::model::CallToolRequestParams::new(tool.original.clone()).with_arguments(args);
    match peer.call_tool(params).await {
        Ok(result) => result_to_output(&tool.original, &args_value, &result),
        Err(rmcp::ServiceError::TransportClosed) => ToolOutput::error(
            ToolErrorKind::ExecutionFailed,
            format!(
                "MCP tool '{}' failed: server '{}' disconnected before answering.",
                tool.original, tool.server
            ),
            format!("Error: MCP server '{}' disconnected.", tool.server),
        ),
        Err(e) => ToolOutput::error(
            ToolErrorKind::ExecutionFailed,
            format!("MCP tool '{}' failed: {e}", tool.original),
            format!("Error: MCP tool '{}' failed: {e}", tool.original),
        ),
    }
}
