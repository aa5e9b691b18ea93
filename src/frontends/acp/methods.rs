//! One function per ACP method the agent answers; [`super::serve`] routes each
//! request to its function. A session is driven only through its handle: a prompt is
//! an [`Op::UserTurn`], a cancel [`Op::Cancel`], a mode or model change
//! [`Op::SetApprovalMode`] / [`Op::SetModel`].

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, InitializeRequest, InitializeResponse, PromptRequest, PromptResponse,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use serde_json::json;

use super::front::ClientLink;
use super::models::{
    self, LoadSessionParams, NewSessionParams, RawResponse, SetSessionModelRequest,
    SetSessionModelResponse,
};
use super::session::{self, AcpSession};
use super::{
    auth, convert, error, load, mcp_capabilities, modes, prompts, typed, value, Link, State,
};
use crate::actors::session::EndReason;
use crate::frontends::slash::Expansion;
use crate::protocol::content::Part;
use crate::protocol::{ApprovalMode, Op, OpReply};

/// `initialize`: notes the client's file system capabilities, answers the agent's.
pub(super) async fn initialize(
    state: &Arc<State>,
    req: InitializeRequest,
    responder: Responder<InitializeResponse>,
    _cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let req = value(&req);
    let fs = &req["clientCapabilities"]["fs"];
    if let Ok(mut caps) = state.client_fs.lock() {
        *caps = (
            fs["readTextFile"].as_bool() == Some(true),
            fs["writeTextFile"].as_bool() == Some(true),
        );
    }
    responder.respond(typed::<InitializeResponse>(json!({
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": state.audio, "embeddedContext": true},
            "mcpCapabilities": mcp_capabilities(),
            "sessionCapabilities": {"close": {}},
        },
        "authMethods": auth::methods(),
        "agentInfo": {"name": "troupe", "title": "Troupe", "version": env!("CARGO_PKG_VERSION")},
    }))?)
}

/// `authenticate`: keeps the key for the sessions started later.
pub(super) async fn authenticate(
    state: &Arc<State>,
    req: AuthenticateRequest,
    responder: Responder<AuthenticateResponse>,
    _cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    // The request holds the key: it is read here and never logged.
    match state.credentials.authenticate(&value(&req)) {
        Ok(()) => responder.respond(AuthenticateResponse::default()),
        Err(e) => responder.respond_with_error(error(-32602, e.to_string())),
    }
}

/// `session/new`: starts a session, then offers its slash commands.
pub(super) async fn new_session(
    state: &Arc<State>,
    req: NewSessionParams,
    responder: Responder<RawResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let state = state.clone();
    let link = Link { cx: cx.clone() };
    // Off the dispatch loop: starting waits on the model and MCP servers.
    cx.spawn(async move {
        match session::start(&state, &req.0, link.clone(), None).await {
            Ok(started) => {
                responder.respond(RawResponse(json!({
                    "sessionId": started.id,
                    "modes": modes(started.mode),
                    "models": started.models,
                    "configOptions": started.config_options,
                })))?;
                offer_commands(&state, &link, &started.id);
                Ok(())
            }
            Err(message) => responder.respond_with_error(error(-32603, message)),
        }
    })
}

/// `session/load`: resumes a recorded session and replays its history.
pub(super) async fn load_session(
    state: &Arc<State>,
    req: LoadSessionParams,
    responder: Responder<RawResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let id = req.0["sessionId"].as_str().unwrap_or("").to_string();
    let state = state.clone();
    let link = Link { cx: cx.clone() };
    // Off the dispatch loop: the replay waits on the new session.
    cx.spawn(async move {
        // A session this connection has open is loaded again, as gemini-cli does: the
        // open one ends (its turn cancelled, its file and lock released), then the
        // recorded one is resumed and replayed in its place.
        if let Some(open) = state.remove(&id) {
            session::close(&open, EndReason::Other).await;
        }
        let started = match session::start(&state, &req.0, link.clone(), Some(&id)).await {
            Ok(started) => started,
            Err(message) => return responder.respond_with_error(error(-32603, message)),
        };
        let open = state.session(&id);
        let mcp = open
            .as_ref()
            .and_then(|s| s.session.mcp().map(|hub| &**hub));
        for update in load::replay(&started.history, &started.edits, &started.tool_facts, mcp) {
            link.update(&id, update);
        }
        responder.respond(RawResponse(json!({
            "modes": modes(started.mode),
            "models": started.models,
            "configOptions": started.config_options,
        })))?;
        offer_commands(&state, &link, &id);
        Ok(())
    })
}

/// Tells the client the commands session `id` offers (after `session/new` and
/// `session/load`, as gemini-cli does).
fn offer_commands(state: &State, link: &Link, id: &str) {
    let Some(session) = state.session(id) else {
        return;
    };
    link.update(
        id,
        json!({"sessionUpdate": "available_commands_update", "availableCommands": prompts::available(&session)}),
    );
}

/// `session/set_model`: later requests go to the model chosen.
pub(super) async fn set_model(
    state: &Arc<State>,
    req: SetSessionModelRequest,
    responder: Responder<SetSessionModelResponse>,
    _cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    match switch_model(state, &req.session_id, &req.model_id).await {
        Ok(_) => responder.respond(SetSessionModelResponse {}),
        Err(e) => responder.respond_with_error(e),
    }
}

/// `session/set_config_option`: ACP's way to the same switch, for option `model`
/// (the only one); answers every option with its value now.
pub(super) async fn set_config_option(
    state: &Arc<State>,
    req: SetSessionConfigOptionRequest,
    responder: Responder<SetSessionConfigOptionResponse>,
    _cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let req = value(&req);
    let id = req["sessionId"].as_str().unwrap_or("");
    let option = req["configId"].as_str().unwrap_or("");
    if option != models::MODEL_OPTION {
        return responder.respond_with_error(error(
            -32602,
            format!(
                "unknown config option `{option}`; Troupe offers `{}`",
                models::MODEL_OPTION
            ),
        ));
    }
    let Some(model_id) = req["value"].as_str() else {
        return responder.respond_with_error(error(-32602, "option `model` takes a model name"));
    };
    match switch_model(state, id, model_id).await {
        Ok((name, available)) => responder.respond(typed::<SetSessionConfigOptionResponse>(
            json!({"configOptions": models::config_options(&name, &available)}),
        )?),
        Err(e) => responder.respond_with_error(e),
    }
}

/// Points session `id`'s next requests at `model_id` (one of its models); answers the
/// name and the session's list.
async fn switch_model(
    state: &State,
    id: &str,
    model_id: &str,
) -> Result<(String, Option<Vec<String>>), Error> {
    let Some(session) = state.session(id) else {
        return Err(error(-32602, format!("unknown session {id}")));
    };
    models::check(model_id, &session.models).map_err(|message| error(-32602, message))?;
    let name = model_id.trim().to_string();
    session
        .session
        .request(Op::SetModel(name.clone()))
        .await
        .map_err(|e| error(-32603, e.to_string()))?;
    if let Ok(mut current) = session.model.lock() {
        *current = name.clone();
    }
    tracing::info!(model = %name, "model switched");
    Ok((name, session.models.clone()))
}

/// `session/set_mode`: the approval mode of the calls approved from now on.
pub(super) async fn set_mode(
    state: &Arc<State>,
    req: SetSessionModeRequest,
    responder: Responder<SetSessionModeResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let req = value(&req);
    let id = req["sessionId"].as_str().unwrap_or("").to_string();
    let mode = req["modeId"].as_str().and_then(ApprovalMode::parse);
    let (Some(session), Some(mode)) = (state.session(&id), mode) else {
        return responder.respond_with_error(error(-32602, "unknown session or mode"));
    };
    if let Err(e) = session.session.request(Op::SetApprovalMode(mode)).await {
        return responder.respond_with_error(error(-32603, e.to_string()));
    }
    responder.respond(typed::<SetSessionModeResponse>(json!({}))?)?;
    session.turns.announce(mode);
    Link { cx }.update(
        &id,
        json!({"sessionUpdate": "current_mode_update", "currentModeId": mode.as_str()}),
    );
    Ok(())
}

/// `session/prompt`: a slash command answered at once, or a turn; answers how the
/// turn ended.
pub(super) async fn prompt(
    state: &Arc<State>,
    req: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let req = value(&req);
    let id = req["sessionId"].as_str().unwrap_or("").to_string();
    let Some(session) = state.session(&id) else {
        return responder.respond_with_error(error(-32602, format!("unknown session {id}")));
    };
    let blocks = req["prompt"].as_array().cloned().unwrap_or_default();
    let text = convert::prompt_text(&blocks);
    let audio = matches!(
        session.session.services().model.provider(),
        "gemini" | "scripted"
    );
    let media = match convert::prompt_media(&blocks, audio) {
        Ok(media) => media,
        Err(message) => return responder.respond_with_error(error(-32602, message)),
    };
    let link = Link { cx: cx.clone() };
    cx.spawn(async move {
        let prompt = Prompt {
            session,
            id,
            link,
            responder,
        };
        prompt.run(text, media).await
    })
}

/// A `session/prompt` on its way: the session, where its updates go, its answer.
struct Prompt {
    session: Arc<AcpSession>,
    id: String,
    link: Link,
    responder: Responder<PromptResponse>,
}

impl Prompt {
    /// Answers `text` (and the prompt's `media`): a slash command's reply, a custom
    /// command's or MCP prompt's expansion, or the turn the model takes.
    async fn run(self, text: String, media: Vec<Part>) -> Result<(), Error> {
        if let Some(reply) = slash_command(&self.session, &text).await {
            self.chunk(reply);
            return self.end_turn();
        }
        // A custom command or an MCP prompt goes to the model expanded.
        let model_text = match prompts::expand(&self.session, &text).await {
            Ok(None) => text.clone(),
            Ok(Some(Expansion::Prompt {
                text: expanded,
                notes,
            })) => {
                for note in notes {
                    self.chunk(note);
                }
                expanded
            }
            Ok(Some(Expansion::Reply(lines))) => {
                self.chunk(lines.join("\n"));
                return self.end_turn();
            }
            Err(message) => return self.responder.respond_with_error(error(-32602, message)),
        };
        let ended = self.session.turns.wait();
        let mut parts = vec![Part::text(model_text)];
        parts.extend(media);
        self.session.session.submit(Op::UserTurn { text, parts });
        let ended = ended.await;
        session::save_always_rules(&self.session);
        match ended {
            Ok(ended) => match convert::stop_reason(&ended.outcome) {
                Ok(reason) => {
                    let mut answer = json!({"stopReason": reason});
                    if let Some(usage) = convert::usage(&ended.stats) {
                        answer["usage"] = usage;
                    }
                    self.responder.respond(typed::<PromptResponse>(answer)?)
                }
                Err(message) => self.responder.respond_with_error(error(-32603, message)),
            },
            Err(_) => self
                .responder
                .respond_with_error(error(-32603, "the session stopped")),
        }
    }

    /// Sends `text` as an agent message chunk.
    fn chunk(&self, text: String) {
        self.link.update(
            &self.id,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}),
        );
    }

    /// Answers the prompt as a turn that ended without the model.
    fn end_turn(self) -> Result<(), Error> {
        self.responder
            .respond(typed::<PromptResponse>(json!({"stopReason": "end_turn"}))?)
    }
}

/// `/compress` and `/memory` answered without the model.
async fn slash_command(session: &AcpSession, text: &str) -> Option<String> {
    let name = text.trim().strip_prefix('/')?.split_whitespace().next()?;
    match name {
        "compress" => match session.session.request(Op::Compress { force: true }).await {
            Ok(OpReply::Compression(outcome)) => Some(format!("{outcome:?}")),
            _ => None,
        },
        "memory" => match session.session.request(Op::Memory { refresh: false }).await {
            Ok(OpReply::Memory(report)) => Some(if report.files.is_empty() {
                "No context files are loaded.".to_string()
            } else {
                format!("Context files:\n{}", report.files.join("\n"))
            }),
            _ => None,
        },
        _ => None,
    }
}

/// `session/close`: ends the session.
pub(super) async fn close_session(
    state: &Arc<State>,
    req: CloseSessionRequest,
    responder: Responder<CloseSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let id = value(&req)["sessionId"].as_str().unwrap_or("").to_string();
    let Some(session) = state.remove(&id) else {
        return responder.respond_with_error(error(-32602, format!("unknown session {id}")));
    };
    // Off the dispatch loop: the shutdown waits on hooks, threads and processes.
    cx.spawn(async move {
        session::close(&session, EndReason::Other).await;
        responder.respond(CloseSessionResponse::default())
    })
}

/// `session/cancel` (a notification): cancels the session's turn in flight.
pub(super) async fn cancel(
    state: &Arc<State>,
    n: CancelNotification,
    _cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let n = value(&n);
    if let Some(session) = n["sessionId"].as_str().and_then(|id| state.session(id)) {
        session.session.submit(Op::Cancel);
    }
    Ok(())
}
