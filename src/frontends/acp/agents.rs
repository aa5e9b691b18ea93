//! Troupe's ACP extension methods for the subagents of a session (ACP reserves names
//! starting with `_` for extensions): `_troupe/agents/list {sessionId}` answers the
//! tree as `/agents` shows it, `_troupe/agents/cancel {sessionId, number}` stops one
//! subagent, whose `invoke_agent` call then answers `Termination Reason: ABORTED` while
//! the others go on.

use std::sync::Arc;

use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, JsonRpcRequest};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::models::RawResponse;
use super::{error, State};
use crate::protocol::{AgentState, Op, OpReply};

/// `_troupe/agents/list {sessionId}`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "_troupe/agents/list", response = RawResponse)]
#[serde(rename_all = "camelCase")]
pub struct ListAgentsRequest {
    pub session_id: String,
}

/// `_troupe/agents/cancel {sessionId, number}`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "_troupe/agents/cancel", response = RawResponse)]
#[serde(rename_all = "camelCase")]
pub struct CancelAgentRequest {
    pub session_id: String,
    pub number: u64,
}

/// Answers the session's subagents: `{"agents": [{number, agentId, parentId, name,
/// state, currentTool, turns, tokens, elapsedMs}]}`.
pub(super) async fn list(
    state: &Arc<State>,
    req: ListAgentsRequest,
    responder: Responder<RawResponse>,
    _cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let Some(session) = state.session(&req.session_id) else {
        return responder
            .respond_with_error(error(-32602, format!("unknown session {}", req.session_id)));
    };
    let rows = match session.session.request(Op::ListAgents).await {
        Ok(OpReply::Agents(rows)) => rows,
        Ok(_) => Vec::new(),
        Err(e) => return responder.respond_with_error(error(-32603, e.to_string())),
    };
    let agents: Vec<_> = rows
        .iter()
        .map(|r| {
            let state = match &r.state {
                AgentState::Queued => "queued".to_string(),
                AgentState::Running => "running".to_string(),
                AgentState::Finished(reason) => reason.clone(),
            };
            json!({"number": r.number, "agentId": r.agent_id, "parentId": r.parent_id,
                "name": r.name, "state": state, "currentTool": r.current_tool,
                "turns": r.turns, "tokens": r.tokens, "elapsedMs": r.elapsed_ms})
        })
        .collect();
    responder.respond(RawResponse(json!({ "agents": agents })))
}

/// Stops subagent `number`; an error when none of that number is queued or running.
pub(super) async fn cancel(
    state: &Arc<State>,
    req: CancelAgentRequest,
    responder: Responder<RawResponse>,
    _cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let Some(session) = state.session(&req.session_id) else {
        return responder
            .respond_with_error(error(-32602, format!("unknown session {}", req.session_id)));
    };
    match session.session.request(Op::CancelAgent(req.number)).await {
        Ok(_) => responder.respond(RawResponse(json!({}))),
        Err(e) => responder.respond_with_error(error(-32602, e.to_string())),
    }
}
