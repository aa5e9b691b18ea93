//! Model requests and streamed model events, independent of any provider, and the
//! conversion of Gemini `GenerateContentResponse` chunks into those events (shared by
//! the Gemini provider and the scripted model, which replays Gemini chunks).

use serde_json::Value;

use crate::protocol::content::{Content, FunctionCall, FunctionDeclaration, Role, Usage};

/// One request to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub model: String,
    pub system_instruction: Option<String>,
    /// Shared: a request is cloned for each attempt, and the Chat keeps the curated
    /// history it built for the next request (which adds only the new turns to it).
    pub contents: std::sync::Arc<Vec<Content>>,
    /// Shared: the same declarations go with every request of a session.
    pub tools: std::sync::Arc<Vec<FunctionDeclaration>>,
    /// For utility calls that must answer JSON: the response schema.
    pub json_schema: Option<Value>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<u32>,
    /// The most tokens one answer may have (Gemini `maxOutputTokens`, OpenAI
    /// `max_tokens`).
    pub max_output_tokens: Option<u32>,
    /// Ask a thinking model to think (and stream its thoughts).
    pub thinking: Option<Thinking>,
    /// The answer must call a tool (OpenAI `tool_choice: "required"`, Gemini
    /// `toolConfig` mode `ANY`); only with tools.
    pub require_call: bool,
    /// The answer may not call a tool (OpenAI `tool_choice: "none"`, Gemini
    /// `toolConfig` mode `NONE`); the tools stay declared, for the history's calls.
    pub forbid_call: bool,
}

/// How much a thinking model may think.
#[derive(Debug, Clone, PartialEq)]
pub enum Thinking {
    /// A token budget (Gemini 2.5).
    Budget(u32),
    /// A named level (`HIGH`, Gemini 3).
    Level(String),
}

/// Injected as the thought signature of a function call that lacks one, so that Gemini
/// accepts a history whose calls it did not sign (gemini-cli does the same).
pub const SKIP_THOUGHT_SIGNATURE: &str = "skip_thought_signature_validator";

impl ModelRequest {
    pub fn new(model: impl Into<String>, contents: Vec<Content>) -> Self {
        Self {
            model: model.into(),
            system_instruction: None,
            contents: std::sync::Arc::new(contents),
            tools: Default::default(),
            json_schema: None,
            temperature: None,
            top_p: None,
            top_k: None,
            max_output_tokens: None,
            thinking: None,
            require_call: false,
            forbid_call: false,
        }
    }

    /// Fills unset options with gemini-cli's main-chat configuration for this model:
    /// temperature 1, topP 0.95, topK 64, and thinking (a budget of 8192 for Gemini 2.5,
    /// level `HIGH` for Gemini 3, none for older models).
    pub fn with_chat_defaults(mut self) -> Self {
        self.temperature.get_or_insert(1.0);
        self.top_p.get_or_insert(0.95);
        self.top_k.get_or_insert(64);
        if self.thinking.is_none() {
            let name = self.model.as_str();
            if name.starts_with("gemini-3") {
                self.thinking = Some(Thinking::Level("HIGH".into()));
            } else if name.starts_with("gemini-2.5") {
                self.thinking = Some(Thinking::Budget(8192));
            }
        }
        self
    }

    /// Fills unset options with the utility-call configuration (temperature 0, topP 1).
    pub fn with_utility_defaults(mut self) -> Self {
        self.temperature.get_or_insert(0.0);
        self.top_p.get_or_insert(1.0);
        self
    }

    /// The request body as the Gemini API takes it.
    pub fn gemini_body(&self) -> Value {
        let mut contents = Vec::clone(&self.contents);
        ensure_active_loop_has_thought_signatures(&mut contents);
        let mut body = serde_json::json!({ "contents": contents });
        if let Some(system) = &self.system_instruction {
            body["systemInstruction"] =
                serde_json::json!({"role": "user", "parts": [{"text": system}]});
        }
        if !self.tools.is_empty() {
            body["tools"] = serde_json::json!([{ "functionDeclarations": self.tools }]);
            if self.forbid_call {
                body["toolConfig"] = serde_json::json!({"functionCallingConfig": {"mode": "NONE"}});
            } else if self.require_call {
                body["toolConfig"] = serde_json::json!({"functionCallingConfig": {"mode": "ANY"}});
            }
        }
        let mut config = serde_json::Map::new();
        if let Some(t) = self.temperature {
            config.insert("temperature".into(), t.into());
        }
        if let Some(p) = self.top_p {
            config.insert("topP".into(), p.into());
        }
        if let Some(k) = self.top_k {
            config.insert("topK".into(), k.into());
        }
        if let Some(n) = self.max_output_tokens {
            config.insert("maxOutputTokens".into(), n.into());
        }
        match &self.thinking {
            Some(Thinking::Budget(b)) => {
                config.insert(
                    "thinkingConfig".into(),
                    serde_json::json!({"includeThoughts": true, "thinkingBudget": b}),
                );
            }
            Some(Thinking::Level(l)) => {
                config.insert(
                    "thinkingConfig".into(),
                    serde_json::json!({"includeThoughts": true, "thinkingLevel": l}),
                );
            }
            None => {}
        }
        if let Some(schema) = &self.json_schema {
            config.insert("responseMimeType".into(), "application/json".into());
            config.insert("responseJsonSchema".into(), schema.clone());
        }
        if !config.is_empty() {
            body["generationConfig"] = Value::Object(config);
        }
        body
    }
}

/// gemini-cli's `ensureActiveLoopHasThoughtSignatures`: after the last user message that
/// carries text (not function responses), the first function call of every model turn
/// must have a thought signature; a missing one gets [`SKIP_THOUGHT_SIGNATURE`].
pub fn ensure_active_loop_has_thought_signatures(contents: &mut [Content]) {
    let start = contents
        .iter()
        .rposition(|c| {
            c.role == Role::User
                && !c.has_function_response()
                && c.parts.iter().any(|p| p.text.is_some())
        })
        .map_or(0, |i| i + 1);
    for content in contents[start..]
        .iter_mut()
        .filter(|c| c.role == Role::Model)
    {
        if let Some(part) = content.parts.iter_mut().find(|p| p.function_call.is_some()) {
            part.thought_signature
                .get_or_insert_with(|| SKIP_THOUGHT_SIGNATURE.to_string());
        }
    }
}

/// One streamed event from a model.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    Text(String),
    Thought(String),
    FunctionCall {
        call: FunctionCall,
        thought_signature: Option<String>,
    },
    Usage(Usage),
    /// The finish reason (`STOP`, `MAX_TOKENS`, `SAFETY`, ...).
    Finished(String),
}

/// Converts one Gemini `GenerateContentResponse` chunk into events. An `{"error":…}`
/// chunk is returned as `Err(message)`.
pub fn gemini_chunk_events(chunk: &Value) -> Result<Vec<ModelEvent>, String> {
    let Some(obj) = chunk.as_object() else {
        return Err(format!(
            "a response chunk must be a JSON object, got: {chunk}"
        ));
    };
    if let Some(err) = obj.get("error") {
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("unknown error");
        return Err(message.to_string());
    }
    let mut events = Vec::new();
    if let Some(candidate) = obj
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    {
        let parts = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for part in parts {
            let signature = part
                .get("thoughtSignature")
                .and_then(Value::as_str)
                .map(str::to_string);
            if let Some(call) = part.get("functionCall") {
                let call = <FunctionCall as serde::Deserialize>::deserialize(call)
                    .map_err(|e| format!("malformed functionCall {call}: {e}"))?;
                events.push(ModelEvent::FunctionCall {
                    call,
                    thought_signature: signature,
                });
            } else if let Some(text) = part.get("text").and_then(Value::as_str) {
                if part.get("thought").and_then(Value::as_bool) == Some(true) {
                    events.push(ModelEvent::Thought(text.to_string()));
                } else if !text.is_empty() {
                    events.push(ModelEvent::Text(text.to_string()));
                }
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            events.push(ModelEvent::Finished(reason.to_string()));
        }
    }
    if let Some(usage) = obj.get("usageMetadata") {
        if let Ok(usage) = serde_json::from_value::<Usage>(usage.clone()) {
            events.push(ModelEvent::Usage(usage));
        }
    }
    Ok(events)
}

/// Like [`gemini_chunk_events`], but takes the chunk: each functionCall's arguments move
/// into its event instead of being copied, and each part is freed as soon as it is read,
/// so a scripted turn of 100,000 calls is not held twice (as JSON and as events).
pub fn gemini_chunk_events_owned(mut chunk: Value) -> Result<Vec<ModelEvent>, String> {
    if !chunk.is_object() || chunk.get("error").is_some() {
        return gemini_chunk_events(&chunk);
    }
    let parts = chunk
        .pointer_mut("/candidates/0/content/parts")
        .and_then(Value::as_array_mut)
        .map(std::mem::take)
        .unwrap_or_default();
    let mut events = Vec::with_capacity(parts.len() + 2);
    for part in parts {
        owned_part_events(part, &mut events)?;
    }
    // The parts are gone from the chunk: what is left gives the finish reason and usage.
    events.extend(gemini_chunk_events(&chunk)?);
    Ok(events)
}

fn owned_part_events(mut part: Value, events: &mut Vec<ModelEvent>) -> Result<(), String> {
    let signature = part
        .get("thoughtSignature")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(raw) = part.get_mut("functionCall").map(Value::take) {
        let plainly_valid = raw.get("name").is_some_and(Value::is_string)
            && raw
                .get("id")
                .is_none_or(|id| id.is_string() || id.is_null());
        if !plainly_valid {
            // The borrowed reading words the error, with the call in it.
            <FunctionCall as serde::Deserialize>::deserialize(&raw)
                .map_err(|e| format!("malformed functionCall {raw}: {e}"))?;
        }
        let call = serde_json::from_value::<FunctionCall>(raw)
            .map_err(|e| format!("malformed functionCall: {e}"))?;
        events.push(ModelEvent::FunctionCall {
            call,
            thought_signature: signature,
        });
        return Ok(());
    }
    let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
    if let Some(Value::String(text)) = part.get_mut("text").map(Value::take) {
        if thought {
            events.push(ModelEvent::Thought(text));
        } else if !text.is_empty() {
            events.push(ModelEvent::Text(text));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn owned_reading_gives_the_borrowed_events() {
        let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "a"}, {"text": "think", "thought": true}, {"text": ""},
            {"functionCall": {"name": "read_file", "args": {"file_path": "x"}}, "thoughtSignature": "s"},
            {"functionCall": {"id": "c1", "name": "glob"}}
        ]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 3}});
        assert_eq!(
            gemini_chunk_events_owned(chunk.clone()),
            gemini_chunk_events(&chunk)
        );
        let bad = json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]});
        assert_eq!(
            gemini_chunk_events_owned(bad.clone()),
            gemini_chunk_events(&bad)
        );
        assert!(gemini_chunk_events_owned(bad).is_err());
        let error = json!({"error": {"message": "quota"}});
        assert_eq!(gemini_chunk_events_owned(error), Err("quota".to_string()));
    }

    #[test]
    fn chunk_with_calls_text_and_finish() {
        let chunk = json!({"candidates":[{"content":{"role":"model","parts":[
            {"text":"thinking","thought":true},
            {"text":"I will read."},
            {"functionCall":{"name":"read_file","args":{"file_path":"a"}},"thoughtSignature":"s"}
        ]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":7}});
        let events = gemini_chunk_events(&chunk).unwrap();
        assert_eq!(events[0], ModelEvent::Thought("thinking".into()));
        assert_eq!(events[1], ModelEvent::Text("I will read.".into()));
        assert!(
            matches!(&events[2], ModelEvent::FunctionCall { call, thought_signature: Some(s) }
            if call.name == "read_file" && s == "s")
        );
        assert_eq!(events[3], ModelEvent::Finished("STOP".into()));
        assert!(matches!(events[4], ModelEvent::Usage(u) if u.prompt_token_count == 5));
    }

    #[test]
    fn active_loop_calls_get_a_signature() {
        let call = |name: &str| {
            crate::protocol::content::Part::function_call(FunctionCall {
                id: None,
                name: name.into(),
                args: json!({}),
            })
        };
        let mut contents = vec![
            Content::user_text("old"),
            Content {
                role: Role::Model,
                parts: vec![call("a")],
            },
            Content::user_text("new"),
            Content {
                role: Role::Model,
                parts: vec![call("b"), call("c")],
            },
        ];
        contents[3].parts[1].thought_signature = Some("kept".into());
        ensure_active_loop_has_thought_signatures(&mut contents);
        assert_eq!(contents[1].parts[0].thought_signature, None);
        assert_eq!(
            contents[3].parts[0].thought_signature.as_deref(),
            Some(SKIP_THOUGHT_SIGNATURE)
        );
        assert_eq!(
            contents[3].parts[1].thought_signature.as_deref(),
            Some("kept")
        );
    }

    #[test]
    fn chat_defaults_follow_the_model_family() {
        let body = ModelRequest::new("gemini-2.5-pro", vec![])
            .with_chat_defaults()
            .gemini_body();
        assert_eq!(
            body["generationConfig"],
            json!({"temperature": 1.0, "topP": 0.95, "topK": 64,
                   "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}})
        );
        let body = ModelRequest::new("gemini-3-pro-preview", vec![])
            .with_chat_defaults()
            .gemini_body();
        assert_eq!(
            body["generationConfig"]["thinkingConfig"]["thinkingLevel"],
            "HIGH"
        );
        let body = ModelRequest::new("m", vec![])
            .with_utility_defaults()
            .gemini_body();
        assert_eq!(
            body["generationConfig"],
            json!({"temperature": 0.0, "topP": 1.0})
        );
    }

    #[test]
    fn error_chunk_is_an_error() {
        let err = gemini_chunk_events(&json!({"error":{"code":500,"message":"boom"}})).unwrap_err();
        assert_eq!(err, "boom");
    }
}
