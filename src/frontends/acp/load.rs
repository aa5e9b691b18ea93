//! `session/load`: a session recorded in the project's `SessionStore` (by the REPL,
//! a headless run or an earlier ACP connection) is resumed, and its history replayed
//! to the editor as `session/update` notifications.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::protocol::content::Content;
use crate::protocol::content::{FunctionResponse, Role};

/// The updates that show `history` in the editor: user and agent chunks, thoughts,
/// and each call as a finished `tool_call` (failed when its response is an error).
pub fn replay(history: &[Content]) -> Vec<Value> {
    let mut results: HashMap<String, &FunctionResponse> = HashMap::new();
    for c in history {
        for p in &c.parts {
            if let Some(fr) = &p.function_response {
                results.insert(fr.id.clone().unwrap_or_else(|| fr.name.clone()), fr);
            }
        }
    }
    let mut out = Vec::new();
    let chunk = |kind: &str, text: &str| json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
    for c in history {
        for p in &c.parts {
            if let Some(call) = &p.function_call {
                let key = call.id.clone().unwrap_or_else(|| call.name.clone());
                let result = results.get(&key);
                let failed = result.is_some_and(|r| r.response.get("error").is_some());
                let text = result
                    .and_then(|r| r.response.get("output").or_else(|| r.response.get("error")))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                out.push(json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": key,
                    "status": if failed { "failed" } else { "completed" },
                    "title": super::convert::tool_title(&call.name, &call.args),
                    "kind": super::convert::tool_kind(&call.name),
                    "content": [super::convert::text_content(text)],
                }));
            } else if p.function_response.is_some() {
                continue;
            } else if let Some(text) = &p.text {
                let kind = match (c.role == Role::User, p.thought == Some(true)) {
                    (true, _) => "user_message_chunk",
                    (false, true) => "agent_thought_chunk",
                    (false, false) => "agent_message_chunk",
                };
                out.push(chunk(kind, text));
            }
        }
    }
    out
}
