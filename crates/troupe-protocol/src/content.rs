//! The conversation's data model. It is Gemini's wire format (`Content`, `Part`,
//! `FunctionCall`, `FunctionResponse`), used as Troupe's internal format too, so a
//! history serialises to exactly what the Gemini API and `--fake-responses` files hold.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Who said a turn: the user (including function responses) or the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Model,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Content {
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
}

impl Content {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            parts: vec![Part::text(text)],
        }
    }

    pub fn model_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Model,
            parts: vec![Part::text(text)],
        }
    }

    /// The function calls of a model turn, in order.
    pub fn function_calls(&self) -> impl Iterator<Item = &FunctionCall> {
        self.parts.iter().filter_map(|p| p.function_call.as_deref())
    }

    /// True when this is a user turn carrying function responses.
    pub fn has_function_response(&self) -> bool {
        self.parts.iter().any(|p| p.function_response.is_some())
    }

    /// The visible text of the turn (thoughts excluded).
    pub fn text(&self) -> String {
        visible_text(&self.parts)
    }
}

/// The visible text of `parts` (thoughts excluded).
pub fn visible_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter(|p| p.thought != Some(true))
        .filter_map(|p| p.text.as_deref())
        .collect()
}

/// One part of a turn. Like Gemini's `Part`, a struct of optional fields of which
/// normally exactly one payload is set. The large payloads are boxed: a history of
/// 100,000 calls holds 200,000 parts, and an unboxed part took ~460 bytes whatever it
/// carried (now ~90). Calls and responses are shared (`Arc`), so the curated copy of
/// the history each model request takes does not copy them; change one with
/// `Arc::make_mut`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "shared")]
    pub function_call: Option<Arc<FunctionCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "shared")]
    pub function_response: Option<Arc<FunctionResponse>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<Box<Blob>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<Box<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    pub fn function_call(call: FunctionCall) -> Self {
        Self {
            function_call: Some(Arc::new(call)),
            ..Self::default()
        }
    }

    pub fn function_response(response: FunctionResponse) -> Self {
        Self {
            function_response: Some(Arc::new(response)),
            ..Self::default()
        }
    }

    pub fn inline(mime_type: impl Into<String>, base64_data: impl Into<String>) -> Self {
        Self {
            inline_data: Some(Box::new(Blob {
                mime_type: mime_type.into(),
                data: base64_data.into(),
            })),
            ..Self::default()
        }
    }

    /// A part with no payload at all (`{}`), which Gemini treats as invalid.
    pub fn is_empty(&self) -> bool {
        self.text.is_none()
            && self.function_call.is_none()
            && self.function_response.is_none()
            && self.inline_data.is_none()
            && self.file_data.is_none()
    }
}

/// (De)serialises a shared payload as the payload itself (Gemini's wire shape).
mod shared {
    use super::*;

    pub fn serialize<S: Serializer, T: Serialize>(
        value: &Option<Arc<T>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => serializer.serialize_some(&**inner),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        deserializer: D,
    ) -> Result<Option<Arc<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(|v| v.map(Arc::new))
    }
}

/// Inline binary data (base64) with its mime type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Blob {
    pub mime_type: String,
    pub data: String,
}

/// A tool call proposed by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub args: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Gives every object and array in `value` exactly the room its entries take. An
/// object parsed from JSON keeps room for 3 entries (~310 bytes) even when it has one;
/// the history keeps each call's arguments for the whole session, so a turn of
/// 100,000 one-argument calls saves ~20 MB. Key order is kept.
pub fn compact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let mut exact = serde_json::Map::with_capacity(map.len());
            for (key, mut entry) in std::mem::take(map) {
                compact(&mut entry);
                exact.insert(key, entry);
            }
            *map = exact;
        }
        Value::Array(items) => {
            items.iter_mut().for_each(compact);
            items.shrink_to_fit();
        }
        _ => {}
    }
}

/// A call's arguments as the runtime passes them around: the model turn's own
/// `Arc<FunctionCall>` from the history, shared (the Scheduler, the events and the
/// finished call read the arguments through it; nothing copies them). Arguments a hook
/// replaced get a call of their own.
#[derive(Debug, Clone, PartialEq)]
pub struct CallArgs(Arc<FunctionCall>);

impl CallArgs {
    /// The arguments of `call`, shared with it.
    pub fn of(call: Arc<FunctionCall>) -> Self {
        Self(call)
    }

    /// Arguments that belong to no call of the history (a hook's replacement, a call
    /// the runtime answers itself).
    pub fn new(args: Value) -> Self {
        Self(Arc::new(FunctionCall {
            id: None,
            name: String::new(),
            args,
        }))
    }
}

impl std::ops::Deref for CallArgs {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.args
    }
}

impl AsRef<Value> for CallArgs {
    fn as_ref(&self) -> &Value {
        &self.0.args
    }
}

impl Serialize for CallArgs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.args.serialize(serializer)
    }
}

/// The answer to one function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    pub response: Value,
    /// Multimodal parts nested in the response (Gemini 3 family).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<Part>>,
}

/// Token accounting reported by the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default)]
    pub prompt_token_count: u64,
    #[serde(default)]
    pub candidates_token_count: u64,
    #[serde(default)]
    pub total_token_count: u64,
    #[serde(default)]
    pub cached_content_token_count: u64,
    #[serde(default)]
    pub thoughts_token_count: u64,
}

/// A tool declaration as sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration {
    pub name: String,
    pub description: String,
    pub parameters_json_schema: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_round_trips_in_gemini_shape() {
        let raw = r#"{"functionCall":{"name":"read_file","args":{"file_path":"a"}},"thoughtSignature":"sig"}"#;
        let part: Part = serde_json::from_str(raw).unwrap();
        assert_eq!(part.function_call.as_deref().unwrap().name, "read_file");
        assert_eq!(part.thought_signature.as_deref(), Some("sig"));
        assert_eq!(serde_json::to_string(&part).unwrap(), raw);
    }

    #[test]
    fn a_part_stays_small() {
        assert!(
            std::mem::size_of::<Part>() <= 96,
            "{}",
            std::mem::size_of::<Part>()
        );
    }

    #[test]
    fn empty_part_is_detected() {
        let part: Part = serde_json::from_str("{}").unwrap();
        assert!(part.is_empty());
    }

    #[test]
    fn compacting_keeps_every_value_and_its_order() {
        let text = r#"{"z": 1, "a": {"y": [1, {"k": "v", "b": null}], "c": "s"}, "m": []}"#;
        let mut value: Value = serde_json::from_str(text).unwrap();
        let before = value.clone();
        compact(&mut value);
        assert_eq!(value, before);
        assert_eq!(value.to_string(), before.to_string(), "key order is kept");
    }
}
