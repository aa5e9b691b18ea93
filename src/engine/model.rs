//! Model requests and streamed model events, independent of any provider, and the
//! conversion of Gemini `GenerateContentResponse` chunks into those events (shared by
//! the Gemini provider and the scripted model, which replays Gemini chunks).

use serde_json::Value;

use super::content::{Content, FunctionCall, FunctionDeclaration, Usage};

/// One request to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub model: String,
    pub system_instruction: Option<String>,
    pub contents: Vec<Content>,
    pub tools: Vec<FunctionDeclaration>,
    /// For utility calls that must answer JSON: the response schema.
    pub json_schema: Option<Value>,
    pub temperature: Option<f64>,
}

impl ModelRequest {
    pub fn new(model: impl Into<String>, contents: Vec<Content>) -> Self {
        Self {
            model: model.into(),
            system_instruction: None,
            contents,
            tools: Vec::new(),
            json_schema: None,
            temperature: None,
        }
    }

    /// The request body as the Gemini API takes it.
    pub fn gemini_body(&self) -> Value {
        let mut body = serde_json::json!({ "contents": self.contents });
        if let Some(system) = &self.system_instruction {
            body["systemInstruction"] =
                serde_json::json!({"role": "user", "parts": [{"text": system}]});
        }
        if !self.tools.is_empty() {
            body["tools"] = serde_json::json!([{ "functionDeclarations": self.tools }]);
        }
        let mut config = serde_json::Map::new();
        if let Some(t) = self.temperature {
            config.insert("temperature".into(), t.into());
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
                let call: FunctionCall = serde_json::from_value(call.clone())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn error_chunk_is_an_error() {
        let err = gemini_chunk_events(&json!({"error":{"code":500,"message":"boom"}})).unwrap_err();
        assert_eq!(err, "boom");
    }
}
