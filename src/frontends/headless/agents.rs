//! A headless run's view of its subagents: in stream-json, an `agent_start` and an
//! `agent_end` line for each, and its tool calls as `tool_use` / `tool_result` lines
//! that carry `agent_id` and `parent_id` (a subagent's text is not streamed: a
//! consumer that joins the `message` deltas gets the main session's answer only).

use serde_json::{json, Value};

use super::{now, HeadlessFront, OutputFormat};
use crate::protocol::{AgentStep, AgentUpdate, CallStatus, UiEvent};

impl HeadlessFront {
    pub(super) fn on_agent(&mut self, update: &AgentUpdate) {
        if let (true, AgentStep::Event(event)) = (self.keep_calls, &update.what) {
            if let UiEvent::ToolCallCompleted(call) = event.as_ref() {
                self.calls
                    .push(super::CallRecord::of_agent(call, &update.agent_id));
            }
        }
        if self.format != OutputFormat::StreamJson {
            return;
        }
        let tag = |mut line: Value| {
            line["agent_id"] = json!(update.agent_id);
            line["parent_id"] = json!(update.parent_id);
            line
        };
        let line = match &update.what {
            AgentStep::Queued { running, .. } => json!({"type": "agent_queued", "timestamp": now(),
                "name": update.name, "tool_id": update.call_id,
                "reason": "agents.max_concurrent", "running": running}),
            AgentStep::Started => json!({"type": "agent_start", "timestamp": now(),
                "name": update.name, "tool_id": update.call_id}),
            AgentStep::Finished(t) => json!({"type": "agent_end", "timestamp": now(),
                "name": update.name, "tool_id": update.call_id,
                "termination_reason": t.reason, "turns": t.turns, "tool_calls": t.tool_calls,
                "tokens": t.tokens, "duration_ms": t.elapsed_ms}),
            AgentStep::Event(event) => match event.as_ref() {
                UiEvent::ToolCallRequested {
                    call_id,
                    name,
                    args,
                } => {
                    json!({"type": "tool_use", "timestamp": now(), "tool_name": name,
                        "tool_id": call_id, "parameters": args})
                }
                UiEvent::ToolCallCompleted(call) => {
                    let status = match call.status {
                        CallStatus::Success => "success",
                        _ => "error",
                    };
                    let mut ev = json!({"type": "tool_result", "timestamp": now(),
                        "tool_id": call.call_id, "status": status});
                    match &call.error {
                        Some(err) => {
                            ev["error"] = json!({"type": err.kind.as_str(), "message": err.message})
                        }
                        None => ev["output"] = Value::String(call.display.clone()),
                    }
                    ev
                }
                _ => return,
            },
        };
        self.json_line(tag(line));
    }
}
