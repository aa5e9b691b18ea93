//! `troupe mcp serve`: Troupe's built-in tools as an MCP server on stdio. Each
//! `tools/call` goes through a real session's Scheduler, so workspace confinement, the
//! edit matcher, parallel execution and the approval policy of the settings all apply;
//! a call that would need a person's approval is refused with what would allow it
//! ([`refusal`]). Each tool carries MCP's annotations from its kind; the workspace's
//! files are offered as resources ([`resources`]) and its custom commands as prompts
//! ([`prompts`]). The server calls itself `troupe` with Troupe's version.

mod prompts;
mod refusal;
mod resources;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::System;
use clap::Args;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::actors::session::{EndReason, SessionHandle, SessionOptions};
use crate::frontends::slash::custom::CustomCommand;
use crate::frontends::AppError;
use crate::protocol::content::{FunctionCall, FunctionDeclaration};
use crate::protocol::{ApprovalDecision, Event, Op, OpReply, ToolKind};

/// `troupe mcp serve` options.
#[derive(Debug, Clone, Args, Default)]
pub struct ServeArgs {
    /// How much runs without asking: plan, default, auto_edit or yolo.
    #[arg(long = "approval-mode", value_name = "MODE")]
    pub approval_mode: Option<String>,
    /// Run every call without asking (same as --approval-mode yolo).
    #[arg(short = 'y', long = "yolo")]
    pub yolo: bool,
    /// Override a setting: -c key=value (repeatable).
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
}

/// The session's event loop: nobody watches a served session, so its events are
/// dropped and every approval request is refused, with what would allow the call
/// (by the approval policy as it stands). Ends with the session's event stream.
async fn answer_unattended(handle: Arc<SessionHandle>) {
    while let Some(event) = handle.next_event().await {
        if let Event::Approval { id, request } = event {
            let decision = ApprovalDecision::Deny {
                reason: refusal::refusal(&request, handle.approval_mode()),
            };
            handle.submit(Op::Decide { id, decision });
        }
    }
}

/// The MCP server over a session, driven through its handle.
#[derive(Clone)]
struct ToolServer {
    session: Arc<SessionHandle>,
    /// Each tool's declaration and kind.
    tools: Arc<Vec<(FunctionDeclaration, ToolKind)>>,
    next_id: Arc<AtomicU64>,
    /// The workspace's custom commands, offered as prompts.
    commands: Arc<Vec<CustomCommand>>,
}

/// MCP's tool annotations for a tool of `kind`: whether it only reads, may destroy
/// what is there (rather than only add), gives the same result when repeated with the
/// same arguments, and reaches outside the workspace (the web, any command).
fn annotations(kind: ToolKind) -> Value {
    let read_only = kind.is_read_only();
    let destructive = matches!(
        kind,
        ToolKind::Edit | ToolKind::Delete | ToolKind::Move | ToolKind::Execute
    );
    let idempotent = matches!(
        kind,
        ToolKind::Read
            | ToolKind::Search
            | ToolKind::Fetch
            | ToolKind::Edit
            | ToolKind::Delete
            | ToolKind::Other
    );
    let open_world = matches!(kind, ToolKind::Fetch | ToolKind::Execute);
    json!({
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": open_world,
    })
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("troupe", env!("CARGO_PKG_VERSION")).with_title("Troupe"),
            )
            .with_instructions(
                "Troupe's built-in coding tools, confined to the workspace Troupe was started in; its files as resources, its custom commands as prompts.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|(d, kind)| {
                json!({"name": d.name, "description": d.description,
                "inputSchema": d.parameters_json_schema, "annotations": annotations(*kind)})
            })
            .collect();
        serde_json::from_value(json!({ "tools": tools }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        resources::list(self.session.services(), cursor).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(self.session.services(), &request.uri)
            .await
            .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        prompts::list(&self.commands)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        prompts::get(
            &self.commands,
            self.session.services(),
            self.session.policy(),
            &request.name,
            request.arguments.as_ref(),
        )
        .await
        .map(Into::into)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let call = FunctionCall {
            id: Some(format!("{}_mcp_{n}", request.name)),
            name: request.name.to_string(),
            args: Value::Object(request.arguments.unwrap_or_default()),
        };
        let cancel = CancellationToken::new();
        let guard = cancel.clone().drop_guard();
        let ct = context.ct.clone();
        let watch = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = ct.cancelled() => watch.cancel(),
                _ = watch.cancelled() => {}
            }
        });
        let answered = self
            .session
            .request(Op::RunCalls {
                calls: vec![Arc::new(call)],
                cancel,
            })
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        drop(guard);
        let OpReply::Calls(completed) = answered else {
            return Err(ErrorData::internal_error("no result", None));
        };
        let Some(completed) = completed.first() else {
            return Err(ErrorData::internal_error("no result", None));
        };
        Ok(to_result(completed).into())
    }
}

/// A completed call as a `CallToolResult`: the output text (or the error), then any
/// images the tool returned.
fn to_result(call: &crate::protocol::CompletedCall) -> CallToolResult {
    let response = call
        .response_parts
        .first()
        .and_then(|p| p.function_response.as_deref())
        .map(|fr| fr.response.clone())
        .unwrap_or(Value::Null);
    let mut content = Vec::new();
    let is_error = call.error.is_some();
    let text = match (&response["output"], &response["error"]) {
        (Value::String(out), _) if !is_error => out.clone(),
        (_, Value::String(err)) => err.clone(),
        _ => response.to_string(),
    };
    content.push(json!({"type": "text", "text": text}));
    for part in call.response_parts.iter().skip(1) {
        if let Some(blob) = &part.inline_data {
            content.push(json!({"type": "image", "data": blob.data, "mimeType": blob.mime_type}));
        }
    }
    serde_json::from_value(json!({"content": content, "isError": is_error}))
        .unwrap_or_else(|_| CallToolResult::error(vec![]))
}

/// The session's tools with their declarations and kinds, as the server lists them.
async fn tool_declarations(
    session: &SessionHandle,
) -> Result<Vec<(FunctionDeclaration, ToolKind)>, AppError> {
    match session.request(Op::ListToolDeclarations).await {
        // The tools that talk to the session's user or switch its approval mode
        // (`ask_user`, the plan-mode tools) are not a served tool's business.
        Ok(OpReply::Declarations(mut tools)) => {
            let facts = session.tool_facts();
            tools.retain(|(d, _)| {
                let f = facts.get(&d.name);
                !f.interactive_only && f.offered == crate::protocol::Offered::Always
            });
            Ok(tools)
        }
        Ok(other) => Err(AppError::Usage(format!(
            "mcp serve: the session answered {other:?} for its tools"
        ))),
        Err(e) => Err(AppError::Usage(format!("mcp serve: {e}"))),
    }
}

/// Runs the server until stdin closes; returns the exit code.
pub fn run(args: ServeArgs, _cwd: &Path) -> Result<i32, AppError> {
    let run_args = crate::frontends::options::RunArgs {
        approval_mode: args.approval_mode.clone(),
        yolo: args.yolo,
        overrides: args.overrides.clone(),
        ..Default::default()
    };
    let usage = |e: AppError| e;
    let ws = crate::frontends::workspace(&run_args).map_err(usage)?;
    let loaded = crate::frontends::load_settings(&ws, &run_args).map_err(usage)?;
    let _guard = crate::frontends::init_logging(&loaded.settings, None);
    let mut settings = loaded.settings;
    // Troupe serving its tools does not start the MCP servers it is itself configured with.
    settings.mcp_servers.clear();
    let model = crate::frontends::select_model(&run_args, &settings).or_else(|_| {
        crate::providers::scripted::ScriptedModel::from_text("mcp serve", "")
            .map(|m| Arc::new(m) as Arc<dyn crate::providers::ModelClient>)
            .map_err(|e| crate::frontends::AppError::Model(e.to_string()))
    });
    let model = model.map_err(usage)?;
    let mode = crate::protocol::ApprovalMode::parse(&settings.approval.mode).unwrap_or_default();
    let model_name = settings.model.name.clone();
    let system = System::new();
    system.block_on(async move {
        let session = SessionHandle::start(SessionOptions {
            workspace: ws,
            settings: Arc::new(settings),
            model,
            model_name,
            approval_mode: mode,
            request_log: None,
            test_tools: crate::platform::test_hooks::enabled(),
            editor_files: None,
            plan: None,
            call_progress: true,
            wait_for_mcp: false,
            interactive: false,
            trajectory: None,
        })
        .await
        .map(Arc::new)
        .map_err(|e| AppError::Usage(e.to_string()))?;
        actix::spawn(answer_unattended(session.clone()));
        let (commands, problems) = crate::frontends::slash::load_custom(session.services());
        for problem in problems {
            let problem = crate::engine::sanitize::for_terminal(&problem);
            eprintln!("troupe: custom command not offered as a prompt: {problem}");
        }
        let tools = match tool_declarations(&session).await {
            Ok(tools) => tools,
            Err(e) => {
                session.shutdown(EndReason::Exit).await;
                return Err(e);
            }
        };
        let server = ToolServer {
            session: session.clone(),
            tools: Arc::new(tools),
            next_id: Arc::new(AtomicU64::new(0)),
            commands: Arc::new(commands),
        };
        let served = match server.serve(rmcp::transport::stdio()).await {
            Ok(running) => {
                let _ = running.waiting().await;
                Ok(())
            }
            Err(e) => Err(AppError::Usage(format!("mcp serve: {e}"))),
        };
        // The client is gone (or never came): SessionEnd, the session's threads ended.
        session.shutdown(EndReason::Exit).await;
        served?;
        Ok(0)
    })
}
