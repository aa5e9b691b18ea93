//! Rebuilding the model history from a session's messages (gemini-cli's
//! `convertSessionToClientHistory`), answering calls left without an answer.

use std::collections::HashSet;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{is_prompt_text, is_resumable, user_text, wire_call_id, INTERRUPTED_CALL};
use crate::protocol::content::{Content, FunctionCall, FunctionResponse, Part, Role};

/// The history rebuilt from a session's messages.
#[derive(Debug, Clone, Default)]
pub struct Rebuilt {
    pub history: Vec<Content>,
    /// Calls left without an answer (the process died while they ran): each got an
    /// error response saying so. Their `gemini` records, with the answers filled in, to
    /// be appended so the file says the same from now on.
    pub repaired_records: Vec<Value>,
    pub interrupted_calls: usize,
}

/// Rebuilds the model history (`convertSessionToClientHistory`): info/error/warning
/// messages dropped, non-resumable user messages dropped, each `gemini` message turned
/// into a model turn (its own Part[] content, or text + functionCalls from `toolCalls`)
/// followed by the responses its calls recorded. A functionResponse already given is
/// never given again (gemini-cli records each one twice and multiplies them on every
/// resume); a call nobody answered is answered with [`INTERRUPTED_CALL`].
pub fn rebuild(messages: &IndexMap<String, Value>) -> Rebuilt {
    let mut out = Rebuilt::default();
    let mut answered: HashSet<String> = HashSet::new();
    // Calls made and not answered yet: (message index in `pending_records`, id, name).
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut pending_record: Option<Value> = None;
    let mut synth = 0usize;
    for message in messages.values() {
        match message.get("type").and_then(Value::as_str) {
            Some("user") => {
                if !is_prompt_text(&user_text(message)) {
                    continue;
                }
                let parts = parts_of(message.get("content"));
                let mut kept = Vec::new();
                for mut part in parts {
                    if let Some(fr) = &part.function_response {
                        let id = wire_call_id(&fr.name, fr.id.as_deref().unwrap_or(""));
                        if !answered.insert(id.clone()) {
                            continue;
                        }
                        pending.retain(|(p, _)| *p != id);
                        if let Some(fr) = part
                            .function_response
                            .as_mut()
                            .map(std::sync::Arc::make_mut)
                        {
                            fr.id = Some(id);
                        }
                        kept.push(part);
                    } else {
                        kept.push(part);
                    }
                }
                if kept.is_empty() {
                    continue;
                }
                let only_responses = kept.iter().all(|p| p.function_response.is_some());
                if !only_responses {
                    close_pending(&mut out, &mut pending, &mut pending_record, &mut answered);
                }
                out.history.push(Content {
                    role: Role::User,
                    parts: kept,
                });
            }
            Some("gemini") => {
                if !is_resumable(message) {
                    continue;
                }
                close_pending(&mut out, &mut pending, &mut pending_record, &mut answered);
                let (model, calls) = model_turn(message, &mut synth);
                if !model.parts.is_empty() {
                    out.history.push(model);
                }
                let mut responses = Vec::new();
                for (id, name, result) in &calls {
                    match result {
                        Some(parts) if !answered.contains(id) => {
                            answered.insert(id.clone());
                            responses.extend(parts.iter().cloned().map(|mut p| {
                                if let Some(fr) =
                                    p.function_response.as_mut().map(std::sync::Arc::make_mut)
                                {
                                    fr.id = Some(wire_call_id(
                                        &fr.name,
                                        fr.id.as_deref().unwrap_or(id),
                                    ));
                                }
                                p
                            }));
                        }
                        Some(_) => {}
                        None if !answered.contains(id) => pending.push((id.clone(), name.clone())),
                        None => {}
                    }
                }
                if !pending.is_empty() {
                    pending_record = Some(message.clone());
                }
                if !responses.is_empty() {
                    out.history.push(Content {
                        role: Role::User,
                        parts: responses,
                    });
                }
            }
            _ => {}
        }
    }
    close_pending(&mut out, &mut pending, &mut pending_record, &mut answered);
    out
}

/// Answers every pending call with an "interrupted" error, right after its model turn.
fn close_pending(
    out: &mut Rebuilt,
    pending: &mut Vec<(String, String)>,
    record: &mut Option<Value>,
    answered: &mut HashSet<String>,
) {
    if pending.is_empty() {
        return;
    }
    let mut parts = Vec::new();
    for (id, name) in pending.drain(..) {
        answered.insert(id.clone());
        parts.push(Part::function_response(FunctionResponse {
            id: Some(id),
            name,
            response: json!({"error": INTERRUPTED_CALL}),
            parts: None,
        }));
        out.interrupted_calls += 1;
    }
    // Merge into a response turn right after the model turn if one is already there.
    match out.history.last_mut() {
        Some(last) if last.role == Role::User && last.has_function_response() => {
            last.parts.extend(parts)
        }
        _ => out.history.push(Content {
            role: Role::User,
            parts,
        }),
    }
    if let Some(mut record) = record.take() {
        if let Some(Value::Array(calls)) = record.get_mut("toolCalls") {
            for call in calls.iter_mut() {
                if call.get("result").is_none_or(Value::is_null) {
                    let name = call["name"].as_str().unwrap_or_default().to_string();
                    let id = call["id"].as_str().unwrap_or_default().to_string();
                    call["result"] = json!([{"functionResponse": {"id": id, "name": name,
                        "response": {"error": INTERRUPTED_CALL}}}]);
                    call["status"] = json!("cancelled");
                    call["resultDisplay"] = json!("Interrupted");
                }
            }
        }
        out.repaired_records.push(record);
    }
}

type CallResult = (String, String, Option<Vec<Part>>);

/// The model turn of a `gemini` message and its calls with their recorded results.
fn model_turn(message: &Value, synth: &mut usize) -> (Content, Vec<CallResult>) {
    let mut calls = Vec::new();
    let tool_calls: &[Value] = message
        .get("toolCalls")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    for tc in tool_calls {
        let name = tc
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let id = match tc.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => wire_call_id(&name, id),
            _ => {
                *synth += 1;
                format!("synth_{name}_{synth}")
            }
        };
        let result = match tc.get("result") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(vec![Part::function_response(FunctionResponse {
                id: Some(id.clone()),
                name: name.clone(),
                response: json!({"output": s}),
                parts: None,
            })]),
            Some(Value::Array(a)) => Some(parts_of_array(a)),
            Some(other) => Some(parts_of_array(std::slice::from_ref(other))),
        };
        calls.push((id, name, result));
    }
    let content = message.get("content");
    let own_parts = match content {
        Some(Value::Array(_)) => parts_of(content),
        _ => Vec::new(),
    };
    let has_own_calls = own_parts.iter().any(|p| p.function_call.is_some());
    let mut parts: Vec<Part> = Vec::new();
    if has_own_calls || !own_parts.is_empty() {
        // Already a model turn (a rewrite by gemini-cli's resume, or a Troupe record).
        parts = own_parts
            .into_iter()
            .filter(|p| p.thought != Some(true))
            .map(|mut p| {
                if let Some(fc) = p.function_call.as_mut().map(std::sync::Arc::make_mut) {
                    let id = fc.id.clone().unwrap_or_default();
                    fc.id = Some(wire_call_id(&fc.name, &id));
                }
                p
            })
            .collect();
        if !has_own_calls {
            append_calls(&mut parts, tool_calls, &calls);
        }
    } else {
        if let Some(Value::String(text)) = content {
            if !text.is_empty() {
                parts.push(Part::text(text.clone()));
            }
        }
        append_calls(&mut parts, tool_calls, &calls);
    }
    // Calls whose ids the content holds but `toolCalls` does not: known through content.
    let known: HashSet<String> = calls.iter().map(|c| c.0.clone()).collect();
    for p in &parts {
        if let Some(fc) = &p.function_call {
            let id = fc.id.clone().unwrap_or_default();
            if !known.contains(&id) {
                calls.push((id, fc.name.clone(), None));
            }
        }
    }
    (
        Content {
            role: Role::Model,
            parts,
        },
        calls,
    )
}

fn append_calls(parts: &mut Vec<Part>, tool_calls: &[Value], calls: &[CallResult]) {
    for (tc, (id, name, _)) in tool_calls.iter().zip(calls) {
        parts.push(Part::function_call(FunctionCall {
            id: Some(id.clone()),
            name: name.clone(),
            args: tc.get("args").cloned().unwrap_or_else(|| json!({})),
        }));
    }
}

/// Parts from a message's `content` (a string becomes one text part).
pub fn parts_of(content: Option<&Value>) -> Vec<Part> {
    match content {
        Some(Value::String(s)) => vec![Part::text(s.clone())],
        Some(Value::Array(a)) => parts_of_array(a),
        _ => Vec::new(),
    }
}

/// The parts of a JSON array, read in place (a part that is not one is skipped).
fn parts_of_array(values: &[Value]) -> Vec<Part> {
    values
        .iter()
        .filter_map(|p| Part::deserialize(p).ok())
        .filter(|p| !p.is_empty())
        .collect()
}
