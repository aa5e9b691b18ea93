//! `troupe --acp`: Troupe as an Agent Client Protocol agent over stdio, for editors
//! (Zed, JetBrains, Neovim plugins). The JSON-RPC layer and the message types are the
//! `agent-client-protocol` crate's (protocol v1); this module maps its requests onto
//! sessions, and each session gets an [`front::AcpFront`] actor beside the REPL and
//! headless fronts. Only protocol goes to stdout; logs go to the log file, warnings
//! to stderr.

pub mod auth;
pub mod convert;
pub mod editor;
pub mod front;
pub mod load;
pub mod models;
pub mod prompts;
pub mod session;
pub mod stdio;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, InitializeRequest, InitializeResponse, PromptRequest, PromptResponse,
    RequestPermissionRequest, SessionNotification, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, Error};
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::actors::session::EndReason;
use crate::frontends::options::RunArgs;
use crate::frontends::slash::Expansion;
use crate::frontends::{init_logging, AppError};
use crate::protocol::{ApprovalMode, CancelTurn, CompressHistory, Memory, SetModelName, UserParts};
use front::{AwaitTurn, ClientLink};
use models::{LoadSessionParams, NewSessionParams, RawResponse, SetSessionModelRequest};
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

async fn serve(state: Arc<State>) -> Result<(), Error> {
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9, s10) = (
        state.clone(),
        state.clone(),
        state.clone(),
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
                        "promptCapabilities": {"image": true, "audio": s1.audio, "embeddedContext": true},
                        "mcpCapabilities": mcp_capabilities(),
                        "sessionCapabilities": {"close": {}},
                    },
                    "authMethods": auth::methods(),
                    "agentInfo": {"name": "troupe", "title": "Troupe", "version": env!("CARGO_PKG_VERSION")},
                }))?)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: AuthenticateRequest, responder, _cx| {
                // The request holds the key: it is read here and never logged.
                match s8.credentials.authenticate(&value(&req)) {
                    Ok(()) => responder.respond(AuthenticateResponse::default()),
                    Err(e) => responder.respond_with_error(error(-32602, e.to_string())),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionParams, responder, cx| {
                let s = s2.clone();
                let link = Link { cx: cx.clone() };
                // Off the dispatch loop: starting waits on the model and MCP servers.
                cx.spawn(async move {
                    match session::start(&s, &req.0, link.clone(), None).await {
                        Ok(started) => {
                            responder.respond(RawResponse(json!({
                                "sessionId": started.id,
                                "modes": modes(started.mode),
                                "models": started.models,
                            })))?;
                            let commands: Vec<Value> = COMMANDS
                                .iter()
                                .map(|(n, d)| json!({"name": n, "description": d}))
                                .collect();
                            link.update(
                                &started.id,
                                json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}),
                            );
                            Ok(())
                        }
                        Err(message) => responder.respond_with_error(error(-32603, message)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionParams, responder, cx| {
                let id = req.0["sessionId"].as_str().unwrap_or("").to_string();
                let s = s7.clone();
                let link = Link { cx: cx.clone() };
                // Off the dispatch loop: the replay waits on the new session.
                cx.spawn(async move {
                    let started = match session::start(&s, &req.0, link.clone(), Some(&id)).await {
                        Ok(started) => started,
                        Err(message) => return responder.respond_with_error(error(-32603, message)),
                    };
                    for update in load::replay(&started.history, &started.edits, &started.tool_facts) {
                        link.update(&id, update);
                    }
                    responder.respond(RawResponse(json!({
                        "modes": modes(started.mode),
                        "models": started.models,
                    })))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModelRequest, responder, _cx| {
                let Some(session) = s9.session(&req.session_id) else {
                    return responder.respond_with_error(error(-32602, format!("unknown session {}", req.session_id)));
                };
                if let Err(message) = models::check(&req.model_id, &session.models) {
                    return responder.respond_with_error(error(-32602, message));
                }
                let name = req.model_id.trim().to_string();
                session.session.chat.do_send(SetModelName(name.clone()));
                if let Ok(mut current) = session.model.lock() {
                    *current = name;
                }
                responder.respond(models::SetSessionModelResponse {})
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
                session.session.policy.lock().mode = mode;
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
                let audio = matches!(session.session.services.model.provider(), "gemini" | "scripted");
                let media = match convert::prompt_media(&blocks, audio) {
                    Ok(media) => media,
                    Err(message) => return responder.respond_with_error(error(-32602, message)),
                };
                let link = Link { cx: cx.clone() };
                cx.spawn(async move {
                    if let Some(reply) = slash_command(&session, &text).await {
                        link.update(&id, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": reply}}));
                        return responder.respond(typed::<PromptResponse>(json!({"stopReason": "end_turn"}))?);
                    }
                    let chunk = |text: String| json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
                    // A custom command or an MCP prompt goes to the model expanded.
                    let model_text = match prompts::expand(&session, &text).await {
                        Ok(None) => text.clone(),
                        Ok(Some(Expansion::Prompt { text: expanded, notes })) => {
                            for note in notes {
                                link.update(&id, chunk(note));
                            }
                            expanded
                        }
                        Ok(Some(Expansion::Reply(lines))) => {
                            link.update(&id, chunk(lines.join("\n")));
                            return responder.respond(typed::<PromptResponse>(json!({"stopReason": "end_turn"}))?);
                        }
                        Err(message) => return responder.respond_with_error(error(-32602, message)),
                    };
                    let (tx, rx) = oneshot::channel();
                    let _ = session.front.send(AwaitTurn(tx)).await;
                    let mut parts = vec![crate::protocol::content::Part::text(model_text)];
                    parts.extend(media);
                    session.session.chat.do_send(UserParts { text, parts });
                    let ended = rx.await;
                    session::save_always_rules(&session);
                    match ended {
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
        .on_receive_request(
            async move |req: CloseSessionRequest, responder, cx| {
                let id = value(&req)["sessionId"].as_str().unwrap_or("").to_string();
                let Some(session) = s10.remove(&id) else {
                    return responder.respond_with_error(error(-32602, format!("unknown session {id}")));
                };
                // Off the dispatch loop: the shutdown waits on hooks, threads and processes.
                cx.spawn(async move {
                    session::close(&session, EndReason::Other).await;
                    responder.respond(CloseSessionResponse::default())
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
        .connect_to(stdio::transport())
        .await;
    // The client is gone: cancel every turn, end every open session.
    let sessions: Vec<Arc<AcpSession>> = s6
        .sessions
        .lock()
        .map(|mut m| m.drain().map(|(_, s)| s).collect())
        .unwrap_or_default();
    for s in &sessions {
        s.session.chat.do_send(CancelTurn);
    }
    futures::future::join_all(sessions.iter().map(|s| session::close(s, EndReason::Exit))).await;
    result
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
