//! `troupe --acp`: Troupe as an Agent Client Protocol agent over stdio, for editors
//! (Zed, JetBrains, Neovim plugins). The JSON-RPC layer and the message types are the
//! `agent-client-protocol` crate's (protocol v1); this module maps its requests onto
//! sessions, and each session gets an [`front::AcpFront`] actor beside the REPL and
//! headless fronts. Only protocol goes to stdout; logs go to the log file, warnings
//! to stderr.

pub mod convert;
pub mod editor;
pub mod front;
pub mod load;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, RequestPermissionRequest,
    SessionNotification, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, Error, Stdio};
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::actors::session::{start_session, Session, SessionOptions};
use crate::app::{init_logging, select_model, AppError};
use crate::cli::RunArgs;
use crate::engine::workspace::Workspace;
use crate::protocol::{ApprovalMode, CancelTurn, CompressHistory, Memory, UserInput};
use front::{AcpFront, AwaitTurn, ClientLink};
use load::RecordedSessions;

/// The modes a session offers (gemini-cli's, in Troupe's names).
const MODES: [(&str, &str, &str); 4] = [
    ("default", "Default", "Ask before edits and commands"),
    ("auto_edit", "Auto edit", "Apply edits without asking"),
    ("yolo", "YOLO", "Run everything without asking"),
    ("plan", "Plan", "Read-only: plan, do not change anything"),
];

/// Slash commands a prompt may start with.
const COMMANDS: [(&str, &str); 2] = [
    (
        "compress",
        "Summarise the conversation so far to save tokens",
    ),
    (
        "memory",
        "Show the loaded context files (AGENTS.md, GEMINI.md)",
    ),
];

struct AcpSession {
    session: Session,
    front: Addr<AcpFront>,
}

struct State {
    args: RunArgs,
    /// The client's `fs.readTextFile` / `fs.writeTextFile`.
    client_fs: Mutex<(bool, bool)>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

impl State {
    fn session(&self, id: &str) -> Option<Arc<AcpSession>> {
        self.sessions.lock().ok()?.get(id).cloned()
    }
}

/// The connection seen by a session's front and its editor file system.
#[derive(Clone)]
struct Link {
    cx: ConnectionTo<Client>,
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|e| Error::internal_error().data(json!(e.to_string())))
}

fn value<T: serde::Serialize>(item: &T) -> Value {
    serde_json::to_value(item).unwrap_or(Value::Null)
}

fn error(code: i32, message: impl Into<String>) -> Error {
    Error::new(code, message.into())
}

impl ClientLink for Link {
    fn update(&self, session_id: &str, update: Value) {
        match typed::<SessionNotification>(json!({"sessionId": session_id, "update": update})) {
            Ok(n) => {
                if let Err(e) = self.cx.send_notification(n) {
                    tracing::warn!(error = ?e, "cannot send session/update");
                }
            }
            Err(e) => tracing::error!(error = ?e, "bad session/update"),
        }
    }

    fn request_permission(&self, params: Value) -> BoxFuture<'static, Result<Value, String>> {
        let cx = self.cx.clone();
        Box::pin(async move {
            let request: RequestPermissionRequest = typed(params).map_err(|e| format!("{e:?}"))?;
            let answer = cx
                .send_request(request)
                .block_task()
                .await
                .map_err(|e| format!("{e:?}"))?;
            Ok(value(&answer))
        })
    }
}

/// Runs the agent until the client closes stdin; returns the exit code.
pub fn run(args: &RunArgs) -> Result<i32, AppError> {
    let cwd = std::env::current_dir()?;
    let loaded = crate::settings::load(&cwd, &args.overrides)?;
    let _guard = init_logging(&loaded.settings, args.log_file.as_deref());
    let state = Arc::new(State {
        args: args.clone(),
        client_fs: Mutex::new((false, false)),
        sessions: Mutex::new(HashMap::new()),
    });
    let system = System::new();
    let result = system.block_on(serve(state.clone()));
    if let Err(e) = &result {
        tracing::error!(error = ?e, "ACP connection ended with an error");
    }
    Ok(0)
}

async fn serve(state: Arc<State>) -> Result<(), Error> {
    let (s1, s2, s3, s4, s5, s6, s7) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    let result = Agent
        .v1()
        .name("troupe")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| {
                let req = value(&req);
                let fs = &req["clientCapabilities"]["fs"];
                if let Ok(mut caps) = s1.client_fs.lock() {
                    *caps = (
                        fs["readTextFile"].as_bool() == Some(true),
                        fs["writeTextFile"].as_bool() == Some(true),
                    );
                }
                responder.respond(typed::<InitializeResponse>(json!({
                    "protocolVersion": 1,
                    "agentCapabilities": {
                        "loadSession": true,
                        "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                        "mcpCapabilities": {"http": false, "sse": false},
                    },
                    "authMethods": [{"id": "api-key", "name": "API key", "description": "The key of the configured provider, from its environment variable or settings"}],
                    "agentInfo": {"name": "troupe", "title": "Troupe", "version": env!("CARGO_PKG_VERSION")},
                }))?)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: AuthenticateRequest, responder, _cx| {
                responder.respond(AuthenticateResponse::default())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx| {
                let req = value(&req);
                match new_session(&s2, &req, &cx, None) {
                    Ok((id, mode)) => {
                        responder.respond(typed::<NewSessionResponse>(json!({
                            "sessionId": id,
                            "modes": modes(mode),
                        }))?)?;
                        let commands: Vec<Value> = COMMANDS
                            .iter()
                            .map(|(n, d)| json!({"name": n, "description": d}))
                            .collect();
                        Link { cx }.update(
                            &id,
                            json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}),
                        );
                        Ok(())
                    }
                    Err(message) => responder.respond_with_error(error(-32603, message)),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx| {
                let req = value(&req);
                let id = req["sessionId"].as_str().unwrap_or("").to_string();
                let history = match load::GeminiJsonl::standard().history(&id) {
                    Ok(h) => h,
                    Err(message) => return responder.respond_with_error(error(-32603, message)),
                };
                let s = s7.clone();
                let link = Link { cx: cx.clone() };
                // Off the dispatch loop: the replay waits on the new session's Chat.
                cx.spawn(async move {
                    let mode = match new_session(&s, &req, &link.cx, Some(id.clone())) {
                        Ok((_, mode)) => mode,
                        Err(message) => return responder.respond_with_error(error(-32603, message)),
                    };
                    if let Some(session) = s.session(&id) {
                        let _ = session.session.chat.send(crate::actors::chat::SetHistory(history.clone())).await;
                    }
                    for update in load::replay(&history) {
                        link.update(&id, update);
                    }
                    responder.respond(typed::<LoadSessionResponse>(json!({"modes": modes(mode)}))?)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, cx| {
                let req = value(&req);
                let id = req["sessionId"].as_str().unwrap_or("").to_string();
                let mode = req["modeId"].as_str().and_then(ApprovalMode::parse);
                let (Some(session), Some(mode)) = (s3.session(&id), mode) else {
                    return responder
                        .respond_with_error(error(-32602, "unknown session or mode"));
                };
                if let Ok(mut policy) = session.session.policy.lock() {
                    policy.mode = mode;
                }
                responder.respond(typed::<SetSessionModeResponse>(json!({}))?)?;
                Link { cx }.update(
                    &id,
                    json!({"sessionUpdate": "current_mode_update", "currentModeId": mode.as_str()}),
                );
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx| {
                let req = value(&req);
                let id = req["sessionId"].as_str().unwrap_or("").to_string();
                let Some(session) = s4.session(&id) else {
                    return responder.respond_with_error(error(-32602, format!("unknown session {id}")));
                };
                let blocks = req["prompt"].as_array().cloned().unwrap_or_default();
                let text = convert::prompt_text(&blocks);
                let link = Link { cx: cx.clone() };
                cx.spawn(async move {
                    if let Some(reply) = slash_command(&session, &text).await {
                        link.update(&id, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": reply}}));
                        return responder.respond(typed::<PromptResponse>(json!({"stopReason": "end_turn"}))?);
                    }
                    let (tx, rx) = oneshot::channel();
                    let _ = session.front.send(AwaitTurn(tx)).await;
                    session.session.chat.do_send(UserInput { text });
                    match rx.await {
                        Ok(outcome) => match convert::stop_reason(&outcome) {
                            Ok(reason) => responder.respond(typed::<PromptResponse>(json!({"stopReason": reason}))?),
                            Err(message) => responder.respond_with_error(error(-32603, message)),
                        },
                        Err(_) => responder.respond_with_error(error(-32603, "the session stopped")),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                let n = value(&n);
                if let Some(session) = n["sessionId"].as_str().and_then(|id| s5.session(id)) {
                    session.session.chat.do_send(CancelTurn);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await;
    // The client is gone: cancel every turn, end what the sessions started.
    let sessions: Vec<Arc<AcpSession>> = s6
        .sessions
        .lock()
        .map(|mut m| m.drain().map(|(_, s)| s).collect())
        .unwrap_or_default();
    for s in &sessions {
        s.session.chat.do_send(CancelTurn);
    }
    for s in &sessions {
        crate::hooks::session_end(&s.session.hooks, "exit").await;
        s.session.shutdown().await;
    }
    result
}

/// The `modes` of a session in `current`.
fn modes(current: &str) -> Value {
    json!({
        "currentModeId": current,
        "availableModes": MODES.iter().map(|(id, name, d)| json!({"id": id, "name": name, "description": d})).collect::<Vec<_>>(),
    })
}

/// Starts a Troupe session for `session/new` (or `session/load`, under the loaded
/// session's id); its id and approval mode.
fn new_session(
    state: &State,
    req: &Value,
    cx: &ConnectionTo<Client>,
    loaded_id: Option<String>,
) -> Result<(String, &'static str), String> {
    let cwd = PathBuf::from(req["cwd"].as_str().unwrap_or(""));
    if !cwd.is_absolute() {
        return Err(format!(
            "cwd must be an absolute path, got {}",
            cwd.display()
        ));
    }
    if let Some(servers) = req["mcpServers"].as_array().filter(|s| !s.is_empty()) {
        tracing::info!(
            count = servers.len(),
            ?servers,
            "client MCP servers noted (no MCP client yet)"
        );
    }
    let workspace = Workspace::new(&cwd, &state.args.include_directories)
        .map(Arc::new)
        .map_err(|e| format!("workspace: {e}"))?;
    let loaded = crate::app::load_settings(&workspace, &state.args).map_err(|e| e.to_string())?;
    let model = select_model(&state.args, &loaded.settings).map_err(|e| e.to_string())?;
    let settings = Arc::new(loaded.settings);
    let mode = ApprovalMode::parse(&settings.approval.mode).unwrap_or_default();
    let (reads, writes) = state.client_fs.lock().map(|c| *c).unwrap_or((false, false));
    let link = Link { cx: cx.clone() };
    let id_slot: Arc<Mutex<String>> = Arc::new(Mutex::new(String::new()));
    let editor = (reads || writes).then(|| {
        Arc::new(editor::ClientFiles::new(
            cx.clone(),
            id_slot.clone(),
            reads,
            writes,
        )) as crate::actors::editor_files::SharedEditor
    });
    let front_id = id_slot.clone();
    let root = workspace.primary().to_path_buf();
    let front = AcpFront::new(String::new(), Arc::new(link), root).start();
    let session = start_session(
        SessionOptions {
            workspace,
            settings: settings.clone(),
            model,
            model_name: settings.model.name.clone(),
            approval_mode: mode,
            request_log: state.args.log_requests.clone(),
            test_tools: std::env::var("TROUPE_TEST_TOOLS").is_ok_and(|v| v == "1"),
            editor_files: editor,
        },
        front.clone().recipient(),
        front.clone().recipient(),
    )?;
    let id = loaded_id.unwrap_or_else(|| session.session_id.clone());
    if let Ok(mut slot) = front_id.lock() {
        *slot = id.clone();
    }
    front.do_send(front::SetSessionId(id.clone()));
    let hooks = session.hooks.clone();
    actix::spawn(async move {
        crate::hooks::session_start(&hooks, "startup").await;
    });
    if let Ok(mut sessions) = state.sessions.lock() {
        sessions.insert(id.clone(), Arc::new(AcpSession { session, front }));
    }
    Ok((id, mode.as_str()))
}

/// `/compress` and `/memory` answered without the model.
async fn slash_command(session: &AcpSession, text: &str) -> Option<String> {
    let name = text.trim().strip_prefix('/')?.split_whitespace().next()?;
    match name {
        "compress" => {
            let outcome = session
                .session
                .chat
                .send(CompressHistory { force: true })
                .await
                .ok()?;
            Some(format!("{outcome:?}"))
        }
        "memory" => {
            let report = session
                .session
                .chat
                .send(Memory { refresh: false })
                .await
                .ok()?;
            Some(if report.files.is_empty() {
                "No context files are loaded.".to_string()
            } else {
                format!("Context files:\n{}", report.files.join("\n"))
            })
        }
        _ => None,
    }
}
