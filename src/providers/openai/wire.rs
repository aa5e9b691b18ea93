//! The OpenAI chat-completions wire format (Ollama, vLLM, llama.cpp's server, any `/v1`
//! endpoint), converted to and from Troupe's Gemini-shaped history and events.
//!
//! Requests: the system instruction becomes a `system` message, model turns become
//! `assistant` messages with `tool_calls` (arguments as a JSON string), function
//! responses become `tool` messages answering their call id. Streams: text deltas pass
//! through, tool-call deltas are accumulated by `index` and emitted when the stream
//! finishes, unknown fields are ignored.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::engine::model::{ModelEvent, ModelRequest};
use crate::protocol::content::{Content, FunctionCall, Role, Usage};

/// What went wrong reading an OpenAI-format answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    /// The server reported an error inside the stream or body.
    #[error("{message}")]
    Server { code: Option<u16>, message: String },
    /// A tool call whose `arguments` are not a JSON object.
    #[error("{0}")]
    MalformedCall(String),
    /// The answer reached the output token limit (`finish_reason: "length"`) in the
    /// middle of a tool call: sending the same request again ends the same way.
    #[error("{message}")]
    CutAtLimit { tool: String, message: String },
    #[error("{0}")]
    Malformed(String),
}

/// The request body. `stream` asks for deltas (and the usage in the last chunk).
pub fn chat_body(request: &ModelRequest, stream: bool) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": messages(request.system_instruction.as_deref(), &request.contents),
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|d| {
                json!({"type": "function", "function": {
                    "name": d.name,
                    "description": d.description,
                    "parameters": d.parameters_json_schema,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!(if request.forbid_call {
            "none"
        } else if request.require_call {
            "required"
        } else {
            "auto"
        });
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = request.max_output_tokens {
        body["max_tokens"] = json!(n);
    }
    if let Some(p) = request.top_p {
        body["top_p"] = json!(p);
    }
    if let Some(schema) = &request.json_schema {
        body["response_format"] = json!({"type": "json_schema",
            "json_schema": {"name": "response", "schema": schema}});
    }
    body
}

/// The conversation as OpenAI messages.
pub fn messages(system: Option<&str>, contents: &[Content]) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = system.filter(|s| !s.is_empty()) {
        out.push(json!({"role": "system", "content": system}));
    }
    for content in contents {
        match content.role {
            Role::Model => {
                if let Some(message) = assistant_message(content) {
                    out.push(message);
                }
            }
            Role::User => user_messages(content, &mut out),
        }
    }
    out
}

fn assistant_message(content: &Content) -> Option<Value> {
    let text = content.text();
    let calls: Vec<Value> = content
        .function_calls()
        .map(|call| {
            json!({
                "id": call.id.clone().unwrap_or_default(),
                "type": "function",
                "function": {"name": call.name, "arguments": call.args.to_string()},
            })
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        if text.is_empty() {
            message["content"] = Value::Null;
        }
        message["tool_calls"] = Value::Array(calls);
    }
    Some(message)
}

/// Function responses become `tool` messages (first, answering the calls); text and
/// images of the same turn follow as one `user` message.
fn user_messages(content: &Content, out: &mut Vec<Value>) {
    let mut rest: Vec<Value> = Vec::new();
    for part in &content.parts {
        if let Some(fr) = &part.function_response {
            out.push(json!({
                "role": "tool",
                "tool_call_id": fr.id.clone().unwrap_or_default(),
                "content": tool_result_text(&fr.response),
            }));
        } else if let Some(text) = &part.text {
            if part.thought != Some(true) {
                rest.push(json!({"type": "text", "text": text}));
            }
        } else if let Some(blob) = &part.inline_data {
            if blob.mime_type.starts_with("image/") {
                let url = format!("data:{};base64,{}", blob.mime_type, blob.data);
                rest.push(json!({"type": "image_url", "image_url": {"url": url}}));
            } else {
                rest.push(json!({"type": "text",
                    "text": format!("[{} content omitted: not supported by this provider]", blob.mime_type)}));
            }
        }
    }
    if rest.is_empty() {
        return;
    }
    let all_text = rest.iter().all(|p| p["type"] == "text");
    let content = if all_text {
        let texts: Vec<&str> = rest.iter().filter_map(|p| p["text"].as_str()).collect();
        Value::String(texts.join("\n"))
    } else {
        Value::Array(rest)
    };
    out.push(json!({"role": "user", "content": content}));
}

/// A tool result as text: the `output` itself when that is all there is, else the
/// response as JSON (`{"error": …}` and richer shapes stay recognisable).
fn tool_result_text(response: &Value) -> String {
    match response.as_object() {
        Some(map) if map.len() == 1 => match map.get("output") {
            Some(Value::String(s)) => s.clone(),
            _ => response.to_string(),
        },
        _ => response.to_string(),
    }
}

/// Gemini's name for an OpenAI `finish_reason`.
pub fn finish_reason(reason: &str) -> String {
    match reason {
        "stop" | "tool_calls" | "function_call" => "STOP".into(),
        "length" => "MAX_TOKENS".into(),
        "content_filter" => "SAFETY".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// The usage in Gemini's terms. OpenAI's `completion_tokens` include the reasoning
/// tokens; Gemini's `candidatesTokenCount` excludes the thoughts (counted apart in
/// `thoughtsTokenCount`), so the reasoning tokens move from one to the other.
fn usage(value: &Value) -> Option<Usage> {
    let count = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
    let reasoning = value
        .pointer("/completion_tokens_details/reasoning_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    value.is_object().then(|| Usage {
        prompt_token_count: count("prompt_tokens"),
        candidates_token_count: count("completion_tokens").saturating_sub(reasoning),
        total_token_count: count("total_tokens"),
        cached_content_token_count: value
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        thoughts_token_count: reasoning,
    })
}

/// The fields a reasoning model's thinking comes in: `reasoning_content` (vLLM,
/// llama.cpp, DeepSeek) or `reasoning` (Ollama, OpenRouter).
const REASONING_FIELDS: [&str; 2] = ["reasoning_content", "reasoning"];

/// The thinking of a `delta` or `message`, as thought events (shown as Gemini's
/// `thought: true` parts are; never part of the history sent back).
fn thought_events(message: &Value, events: &mut Vec<ModelEvent>) {
    for key in REASONING_FIELDS {
        if let Some(t) = message.get(key).and_then(Value::as_str) {
            if !t.is_empty() {
                events.push(ModelEvent::Thought(t.to_string()));
            }
        }
    }
}

fn server_error(error: &Value) -> WireError {
    let message = match error {
        Value::String(s) => s.clone(),
        _ => error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| error.to_string()),
    };
    let code = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c));
    WireError::Server { code, message }
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default, Clone)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

/// Adds a streamed piece of an id or name. Some servers repeat the whole value in
/// every delta instead of sending it once; a repeat is not appended.
fn merge_piece(field: &mut String, piece: &str) {
    if field != piece {
        field.push_str(piece);
    }
}

/// Turns the chunks of one streamed answer into events.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    calls: BTreeMap<u64, PendingCall>,
    finish: Option<String>,
}

impl StreamDecoder {
    /// The events of one `chat.completion.chunk` (text and thoughts at once; tool
    /// calls wait for [`finish`](Self::finish)).
    pub fn push(&mut self, chunk: &Value) -> Result<Vec<ModelEvent>, WireError> {
        if let Some(error) = chunk.get("error") {
            return Err(server_error(error));
        }
        let mut events = Vec::new();
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        if let Some(choice) = choice {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            thought_events(delta, &mut events);
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                if !t.is_empty() {
                    events.push(ModelEvent::Text(t.to_string()));
                }
            }
            for (position, call) in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(position as u64);
                let pending = self.calls.entry(index).or_default();
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    merge_piece(&mut pending.id, id);
                }
                if let Some(f) = call.get("function") {
                    if let Some(name) = f.get("name").and_then(Value::as_str) {
                        merge_piece(&mut pending.name, name);
                    }
                    if let Some(args) = f.get("arguments").and_then(Value::as_str) {
                        pending.arguments.push_str(args);
                    }
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(finish_reason(reason));
            }
        }
        if let Some(u) = chunk.get("usage").and_then(usage) {
            events.push(ModelEvent::Usage(u));
        }
        Ok(events)
    }

    /// Has a chunk carried a `finish_reason`?
    pub fn has_finish_reason(&self) -> bool {
        self.finish.is_some()
    }

    /// The accumulated tool calls, in index order, and the finish reason (if the
    /// server sent one).
    pub fn finish(&mut self) -> Result<Vec<ModelEvent>, WireError> {
        let mut events = Vec::new();
        let cut = self.finish.as_deref() == Some("MAX_TOKENS");
        for pending in std::mem::take(&mut self.calls).into_values() {
            match call_event(&pending.id, &pending.name, &pending.arguments) {
                Ok(event) => events.push(event),
                Err(WireError::MalformedCall(message)) if cut => {
                    return Err(WireError::CutAtLimit {
                        tool: pending.name.clone(),
                        message: format!(
                        "the answer reached the output token limit in the middle of a call ({message})"
                    ),
                    })
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(reason) = self.finish.take() {
            events.push(ModelEvent::Finished(reason));
        }
        Ok(events)
    }
}

fn call_event(id: &str, name: &str, arguments: &str) -> Result<ModelEvent, WireError> {
    let args = if arguments.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str::<Value>(arguments).map_err(|e| {
            WireError::MalformedCall(format!(
                "the arguments of {name} are not JSON ({e}): {arguments}"
            ))
        })?
    };
    if !args.is_object() {
        return Err(WireError::MalformedCall(format!(
            "the arguments of {name} are not a JSON object: {arguments}"
        )));
    }
    Ok(ModelEvent::FunctionCall {
        call: FunctionCall {
            id: (!id.is_empty()).then(|| id.to_string()),
            name: name.to_string(),
            args,
        },
        thought_signature: None,
    })
}

/// The events of a non-streamed `chat.completion`.
pub fn response_events(body: &Value) -> Result<Vec<ModelEvent>, WireError> {
    if let Some(error) = body.get("error") {
        return Err(server_error(error));
    }
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| WireError::Malformed(format!("no choices in the response: {body}")))?;
    let message = choice.get("message").unwrap_or(&Value::Null);
    let mut events = Vec::new();
    thought_events(message, &mut events);
    if let Some(t) = message.get("content").and_then(Value::as_str) {
        if !t.is_empty() {
            events.push(ModelEvent::Text(t.to_string()));
        }
    }
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |k: &str| call.pointer(k).and_then(Value::as_str).unwrap_or("");
        events.push(call_event(
            field("/id"),
            field("/function/name"),
            field("/function/arguments"),
        )?);
    }
    if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
        events.push(ModelEvent::Finished(finish_reason(reason)));
    }
    if let Some(u) = body.get("usage").and_then(usage) {
        events.push(ModelEvent::Usage(u));
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::content::{FunctionDeclaration, FunctionResponse, Part};

    #[test]
    fn history_becomes_messages_with_tool_results() {
        let call = FunctionCall {
            id: Some("c1".into()),
            name: "read_file".into(),
            args: json!({"file_path": "a"}),
        };
        let contents = vec![
            Content::user_text("read a"),
            Content {
                role: Role::Model,
                parts: vec![Part::text("Reading."), Part::function_call(call)],
            },
            Content {
                role: Role::User,
                parts: vec![Part::function_response(FunctionResponse {
                    id: Some("c1".into()),
                    name: "read_file".into(),
                    response: json!({"output": "hello"}),
                    parts: None,
                })],
            },
        ];
        let mut request = ModelRequest::new("m", contents);
        request.system_instruction = Some("be brief".into());
        request.tools = std::sync::Arc::new(vec![FunctionDeclaration {
            name: "read_file".into(),
            description: "reads".into(),
            parameters_json_schema: json!({"type": "object"}),
        }]);
        let body = chat_body(&request, true);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "read a"},
                {"role": "assistant", "content": "Reading.", "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"file_path\":\"a\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "hello"}
            ])
        );
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    #[test]
    fn deltas_are_accumulated_by_index() {
        let mut d = StreamDecoder::default();
        let chunks = [
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"timings":{}}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"glob","arguments":"{\n  \"pattern\""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"ls","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"glob","arguments":": \"*\"\n}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}),
        ];
        let mut events = Vec::new();
        for c in &chunks {
            events.extend(d.push(c).unwrap());
        }
        events.extend(d.finish().unwrap());
        assert_eq!(events[0], ModelEvent::Text("ok".into()));
        assert!(matches!(&events[1], ModelEvent::Usage(u) if u.prompt_token_count == 9));
        assert!(
            matches!(&events[2], ModelEvent::FunctionCall { call, .. } if call.name == "ls" && call.id.as_deref() == Some("a") && call.args == json!({}))
        );
        assert!(
            matches!(&events[3], ModelEvent::FunctionCall { call, .. } if call.args == json!({"pattern": "*"}) && call.id.as_deref() == Some("b") && call.name == "glob")
        );
        assert_eq!(events[4], ModelEvent::Finished("STOP".into()));
    }

    #[test]
    fn bad_arguments_are_a_malformed_call() {
        let mut d = StreamDecoder::default();
        d.push(&json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"ls","arguments":"{oops"}}]}}]}))
            .unwrap();
        assert!(matches!(d.finish(), Err(WireError::MalformedCall(_))));
    }
}
