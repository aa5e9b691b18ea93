//! `session/load`: a session recorded in the project's `SessionStore` (by the REPL,
//! a headless run or an earlier ACP connection) is resumed, and its history replayed
//! to the editor as `session/update` notifications. An edit is replayed with the
//! same `diff` content it was shown with live: the texts its result carried, which the
//! session file records as gemini-cli's file-diff `resultDisplay`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::engine::result_display::edit_of_display;
use crate::engine::session_file::wire_call_id;

use crate::protocol::content::Content;
use crate::protocol::content::{FunctionResponse, Role};
use crate::protocol::ToolFactsTable;
use crate::tools::write_file;

/// How the MCP servers' instructions start in the first user turn (see the Chat).
const LOADED_CONTEXT: &str = "<loaded_context>";

/// The recorded file-diff `resultDisplay` of each edit in the session file `file`, by
/// call id as the history holds it (none when the file cannot be read).
pub fn recorded_edits(file: &Path) -> HashMap<String, Value> {
    let Ok(loaded) = crate::platform::sessions::plan::read(file) else {
        return HashMap::new();
    };
    let mut out = HashMap::new();
    for message in loaded.messages.values() {
        let calls = message.get("toolCalls").and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let (Some(id), Some(name), Some(display)) = (
                call.get("id").and_then(Value::as_str),
                call.get("name").and_then(Value::as_str),
                call.get("resultDisplay"),
            ) else {
                continue;
            };
            if edit_of_display(display).is_some() {
                out.insert(wire_call_id(name, id), display.clone());
            }
        }
    }
    out
}

/// The updates that show `history` in the editor: user and agent chunks, thoughts,
/// and each call as a finished `tool_call` (failed when its response is an error); a
/// successful edit shows its diff, from `edits` ([`recorded_edits`]) or, for a
/// `write_file` recorded without its texts, from its arguments (as live). `facts`
/// give each call's ACP kind, `mcp` the titles of the MCP tools connected now.
pub fn replay(
    history: &[Content],
    edits: &HashMap<String, Value>,
    facts: &ToolFactsTable,
    mcp: Option<&crate::mcp::McpHub>,
) -> Vec<Value> {
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
                let edited = edits.get(&key).and_then(edit_of_display);
                let content = match edited {
                    Some(e) if !failed => super::convert::diff(e.file_path, e.original, e.new),
                    _ if !failed && result.is_some() && call.name == write_file::NAME => {
                        super::convert::write_file_diff(&call.args)
                    }
                    _ => super::convert::text_content(text),
                };
                out.push(json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": key,
                    "status": if failed { "failed" } else { "completed" },
                    "title": super::convert::call_title(&call.name, &call.args, mcp),
                    "kind": super::convert::tool_kind(&call.name, facts),
                    "content": [content],
                }));
            } else if p.function_response.is_some() {
                continue;
            } else if let Some(text) = &p.text {
                if c.role == Role::User && text.starts_with(LOADED_CONTEXT) {
                    // The MCP servers' instructions went to the model, not from the user.
                    continue;
                }
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
