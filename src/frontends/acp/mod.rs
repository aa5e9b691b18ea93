//! `troupe --acp`: Troupe as an Agent Client Protocol agent over stdio, for editors
//! (Zed, JetBrains, Neovim plugins). The JSON-RPC layer and the message types are the
//! `agent-client-protocol` crate's (protocol v1); this module maps its requests onto
//! sessions ([`methods`], one function per method), each driven through its
//! `SessionHandle` by an event loop and renderer ([`front`]). Only protocol goes to stdout; logs go to the log file, warnings
//! to stderr.

mod agents;
pub mod auth;
pub mod convert;
pub mod editor;
pub mod front;
pub mod load;
mod methods;
pub mod models;
pub mod prompts;
pub mod session;
pub mod stdio;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actix::System;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, CancelNotification, CloseSessionRequest, InitializeRequest, PromptRequest,
    RequestPermissionRequest, RequestPermissionResponse, SessionNotification,
    SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, Error, UntypedMessage};
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::actors::session::EndReason;
use crate::frontends::options::RunArgs;
use crate::frontends::{init_logging, AppError};
use crate::protocol::Op;
use front::ClientLink;
use models::{LoadSessionParams, NewSessionParams, SetSessionModelRequest};
use session::AcpSession;

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

struct State {
    args: RunArgs,
    /// The client's `fs.readTextFile` / `fs.writeTextFile`.
    client_fs: Mutex<(bool, bool)>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// The key `authenticate` gave (memory only).
    credentials: auth::Credentials,
    /// Whether the configured provider takes audio (`promptCapabilities.audio`).
    audio: bool,
}

impl State {
    fn session(&self, id: &str) -> Option<Arc<AcpSession>> {
        self.sessions.lock().ok()?.get(id).cloned()
    }

    /// Takes session `id` out of the open ones.
    fn remove(&self, id: &str) -> Option<Arc<AcpSession>> {
        self.sessions.lock().ok()?.remove(id)
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

/// `message` as the schema type `T` writes it (checked against ACP's schema), with the
/// `kind` and `status` of the tool call at `call` (a JSON pointer) kept as given: the
/// schema leaves out their defaults (`other`, `pending`), which gemini-cli sends.
fn checked<T: DeserializeOwned + serde::Serialize>(
    method: &str,
    message: Value,
    call: &str,
) -> Result<UntypedMessage, Error> {
    let given = message.pointer(call).cloned();
    let mut out = value(&typed::<T>(message)?);
    if let (Some(Value::Object(given)), Some(Value::Object(at))) = (given, out.pointer_mut(call)) {
        for key in ["kind", "status"] {
            if let Some(v) = given.get(key) {
                at.insert(key.into(), v.clone());
            }
        }
    }
    UntypedMessage::new(method, out)
}

impl ClientLink for Link {
    fn update(&self, session_id: &str, update: Value) {
        let message = json!({"sessionId": session_id, "update": update});
        match checked::<SessionNotification>("session/update", message, "/update") {
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
            let request = checked::<RequestPermissionRequest>(
                "session/request_permission",
                params,
                "/toolCall",
            )
            .map_err(|e| format!("{e:?}"))?;
            let answer = cx
                .send_request(request)
                .block_task()
                .await
                .map_err(|e| format!("{e:?}"))?;
            // Read as the schema's answer, so a malformed one fails here.
            let answer: RequestPermissionResponse = typed(answer).map_err(|e| format!("{e:?}"))?;
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
        credentials: auth::Credentials::default(),
        audio: takes_audio(args, &loaded.settings),
    });
    let system = System::new();
    let result = system.block_on(serve(state.clone()));
    if let Err(e) = &result {
        tracing::error!(error = ?e, "ACP connection ended with an error");
    }
    Ok(0)
}

/// Routes requests of type `$req` to `$method(&state, req, responder, cx)`.
macro_rules! route {
    ($builder:expr, $state:expr, $req:ty => $method:path) => {{
        let state = $state.clone();
        $builder.on_receive_request(
            async move |req: $req, responder, cx| $method(&state, req, responder, cx).await,
            agent_client_protocol::on_receive_request!(),
        )
    }};
}

/// Answers the client until it closes the connection, then ends every open session.
async fn serve(state: Arc<State>) -> Result<(), Error> {
    let agent = Agent.v1().name("troupe");
    let agent = route!(agent, state, InitializeRequest => methods::initialize);
    let agent = route!(agent, state, AuthenticateRequest => methods::authenticate);
    let agent = route!(agent, state, NewSessionParams => methods::new_session);
    let agent = route!(agent, state, LoadSessionParams => methods::load_session);
    let agent = route!(agent, state, SetSessionModelRequest => methods::set_model);
    let agent = route!(agent, state, SetSessionConfigOptionRequest => methods::set_config_option);
    let agent = route!(agent, state, SetSessionModeRequest => methods::set_mode);
    let agent = route!(agent, state, PromptRequest => methods::prompt);
    let agent = route!(agent, state, CloseSessionRequest => methods::close_session);
    let agent = route!(agent, state, agents::ListAgentsRequest => agents::list);
    let agent = route!(agent, state, agents::CancelAgentRequest => agents::cancel);
    let cancels = state.clone();
    let result = agent
        .on_receive_notification(
            async move |n: CancelNotification, cx| methods::cancel(&cancels, n, cx).await,
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(stdio::transport())
        .await;
    close_all(&state).await;
    result
}

/// The client is gone: cancels every turn, ends every open session.
async fn close_all(state: &State) {
    let sessions: Vec<Arc<AcpSession>> = state
        .sessions
        .lock()
        .map(|mut m| m.drain().map(|(_, s)| s).collect())
        .unwrap_or_default();
    for s in &sessions {
        s.session.submit(Op::Cancel);
    }
    futures::future::join_all(sessions.iter().map(|s| session::close(s, EndReason::Exit))).await;
}

/// The `modes` of a session in `current`.
fn modes(current: &str) -> Value {
    json!({
        "currentModeId": current,
        "availableModes": MODES.iter().map(|(id, name, d)| json!({"id": id, "name": name, "description": d})).collect::<Vec<_>>(),
    })
}

/// `mcpCapabilities`: besides stdio, the MCP module opens Streamable HTTP and SSE
/// servers (`mcp::remote`), so the client may send both.
fn mcp_capabilities() -> Value {
    json!({"http": true, "sse": true})
}

/// Whether the provider the settings pick takes audio: Gemini does (inline data);
/// an OpenAI-compatible chat API does not.
fn takes_audio(args: &RunArgs, settings: &crate::settings::Settings) -> bool {
    if args.fake_responses.is_some() {
        // The scripted model (tests) records inline data as Gemini would get it.
        return true;
    }
    match settings.model.provider.as_str() {
        "gemini" => true,
        "auto" => {
            crate::providers::select::process_env("GEMINI_API_KEY").is_some()
                || !settings.model.gemini.api_key.is_empty()
        }
        _ => false,
    }
}
