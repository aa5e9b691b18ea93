//! `session/load`: a recorded session replayed to the editor as `session/update`
//! notifications, and its history given to the new session's Chat.
//!
//! Recorded sessions are being built on branch `issue11` (a `SessionStore` writing
//! gemini-cli 0.61 JSONL). Until it is merged, load goes through the small
//! [`RecordedSessions`] interface, and [`GeminiJsonl`] implements it by reading
//! gemini-cli 0.61 session files (`<dir>/tmp/<slug>/chats/session-*.jsonl`) under
//! Troupe's home and `~/.gemini`. When issue11 lands, implement the trait on its
//! store (or replace `GeminiJsonl` with its reader) and keep the replay.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::engine::content::{Content, FunctionCall, FunctionResponse, Part, Role};

/// Where recorded sessions come from.
pub trait RecordedSessions: Send + Sync {
    /// The model history of session `session_id`, or why it cannot be had.
    fn history(&self, session_id: &str) -> Result<Vec<Content>, String>;
}

/// gemini-cli 0.61 JSONL session files found under `dirs` (each a home holding
/// `tmp/<slug>/chats/`).
pub struct GeminiJsonl {
    pub dirs: Vec<PathBuf>,
}

impl GeminiJsonl {
    /// Troupe's home and gemini-cli's.
    pub fn standard() -> Self {
        Self {
            dirs: vec![
                crate::settings::troupe_home(),
                crate::settings::home_dir().join(".gemini"),
            ],
        }
    }

    fn find(&self, session_id: &str) -> Option<PathBuf> {
        let short: String = session_id.chars().take(8).collect();
        for dir in &self.dirs {
            let Ok(projects) = std::fs::read_dir(dir.join("tmp")) else {
                continue;
            };
            for project in projects.flatten() {
                let Ok(files) = std::fs::read_dir(project.path().join("chats")) else {
                    continue;
                };
                for file in files.flatten() {
                    let path = file.path();
                    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    if name.ends_with(&format!("-{short}.jsonl"))
                        && head_id(&path) == Some(session_id.to_string())
                    {
                        return Some(path);
                    }
                }
            }
        }
        None
    }
}

fn head_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("projectHash").is_some())
        .filter_map(|v| v["sessionId"].as_str().map(str::to_string))
        .next_back()
}

impl RecordedSessions for GeminiJsonl {
    fn history(&self, session_id: &str) -> Result<Vec<Content>, String> {
        let path = self
            .find(session_id)
            .ok_or_else(|| format!("Invalid session identifier \"{session_id}\""))?;
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(history_of(&text))
    }
}

/// gemini-cli's loading rules (§1.3–1.4), reduced to what a replay needs: messages by
/// id (a later record replaces an earlier one), `$rewindTo`, `$set.messages`; user
/// parts as they are; a `gemini` record as thoughts, text and calls, then the calls'
/// results as the next user turn.
pub fn history_of(text: &str) -> Vec<Content> {
    let mut order: Vec<String> = Vec::new();
    let mut messages: HashMap<String, Value> = HashMap::new();
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(id) = record.get("$rewindTo").and_then(Value::as_str) {
            match order.iter().position(|m| m == id) {
                Some(i) => order.truncate(i),
                None => order.clear(),
            }
        } else if let Some(id) = record.get("id").and_then(Value::as_str) {
            if !messages.contains_key(id) || !order.iter().any(|m| m == id) {
                order.push(id.to_string());
            }
            messages.insert(id.to_string(), record.clone());
        } else if let Some(all) = record.pointer("/$set/messages").and_then(Value::as_array) {
            order.clear();
            for m in all {
                if let Some(id) = m.get("id").and_then(Value::as_str) {
                    order.push(id.to_string());
                    messages.insert(id.to_string(), m.clone());
                }
            }
        }
    }
    let mut history = Vec::new();
    for id in order {
        let Some(m) = messages.get(&id) else { continue };
        match m["type"].as_str() {
            Some("user") => {
                let parts: Vec<Part> = match &m["content"] {
                    Value::String(s) => vec![Part::text(s.clone())],
                    other => serde_json::from_value(other.clone()).unwrap_or_default(),
                };
                if !parts.is_empty() {
                    history.push(Content {
                        role: Role::User,
                        parts,
                    });
                }
            }
            Some("gemini") => gemini_turns(m, &mut history),
            _ => {}
        }
    }
    history
}

fn gemini_turns(m: &Value, history: &mut Vec<Content>) {
    let mut parts = Vec::new();
    for t in m["thoughts"].as_array().into_iter().flatten() {
        let mut p = Part::text(format!(
            "**{}**\n{}",
            t["subject"].as_str().unwrap_or(""),
            t["description"].as_str().unwrap_or("")
        ));
        p.thought = Some(true);
        parts.push(p);
    }
    if let Some(text) = m["content"].as_str().filter(|t| !t.is_empty()) {
        parts.push(Part::text(text));
    }
    let mut responses = Vec::new();
    for call in m["toolCalls"].as_array().into_iter().flatten() {
        let name = call["name"].as_str().unwrap_or("").to_string();
        let id = call["id"].as_str().map(|i| match i.split_once("__") {
            Some((_, raw)) => raw.to_string(),
            None => i.to_string(),
        });
        parts.push(Part::function_call(FunctionCall {
            id: id.clone(),
            name: name.clone(),
            args: call["args"].clone(),
        }));
        match &call["result"] {
            Value::Array(items) => responses.extend(
                items
                    .iter()
                    .filter_map(|p| serde_json::from_value::<Part>(p.clone()).ok()),
            ),
            Value::String(s) => responses.push(Part::function_response(FunctionResponse {
                id,
                name,
                response: json!({"output": s}),
                parts: None,
            })),
            _ => {}
        }
    }
    if !parts.is_empty() {
        history.push(Content {
            role: Role::Model,
            parts,
        });
    }
    if !responses.is_empty() {
        history.push(Content {
            role: Role::User,
            parts: responses,
        });
    }
}

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
