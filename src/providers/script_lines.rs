//! Reading a `--fake-responses` line without building a JSON tree of it.
//!
//! A stream answer is read straight into events through the typed chunk below: a
//! function call's arguments are the only `Value` built. A line the typed reading does
//! not take (another method, an `error` chunk, a field of an unexpected type) is only
//! checked at load ([`LineShape`] walks it: its syntax, `method`, and whether `response`
//! is an array) and kept as text; when it is used it is read as a `Value` and given to
//! [`gemini_chunk_events_owned`], which words the error or skips the field as it
//! always did.

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::engine::model::{gemini_chunk_events_owned, ModelEvent};
use crate::protocol::content::{FunctionCall, Usage};

/// What a line is, read without keeping its content.
#[derive(Debug, Deserialize)]
pub(super) struct LineShape {
    pub method: Option<String>,
    pub response: Option<Shape>,
}

/// The kind of a JSON value whose content was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    Array,
    Other,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ShapeVisitor;
        impl<'de> Visitor<'de> for ShapeVisitor {
            type Value = Shape;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Shape::Array)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Shape::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_unit<E>(self) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
        }
        d.deserialize_any(ShapeVisitor)
    }
}

/// A line's `response`, as a `Value` (generate answers, router lines, the fallback).
pub(super) fn response_value(line: &str) -> Result<Value, String> {
    #[derive(Deserialize)]
    struct Whole {
        #[serde(default)]
        response: Value,
    }
    match serde_json::from_str::<Whole>(line) {
        Ok(whole) => Ok(whole.response),
        // A key given twice: read as `JSON.parse` reads it, the last one winning.
        Err(e) => match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(mut map)) => Ok(map.remove("response").unwrap_or(Value::Null)),
            _ => Err(e.to_string()),
        },
    }
}

/// A `generateContentStream` line read straight into its events, when the typed
/// reading takes every chunk of it; `None` otherwise (another method, an `error`
/// chunk, a field of an unexpected type: [`stream_events`] reads such a line).
pub(super) fn typed_stream_events(line: &str) -> Option<Vec<ModelEvent>> {
    #[derive(Deserialize)]
    struct Stream {
        method: String,
        response: Vec<TypedChunk>,
    }
    let stream = serde_json::from_str::<Stream>(line).ok()?;
    let taken = stream.method == "generateContentStream"
        && line.trim_start().starts_with('{')
        && stream.response.iter().all(|c| c.error.is_none());
    taken.then(|| {
        stream
            .response
            .into_iter()
            .flat_map(TypedChunk::into_events)
            .collect()
    })
}

/// The events of a stream line's chunks by the general reading, in order; `Err` words
/// the first bad chunk.
pub(super) fn stream_events(line: &str) -> Vec<Result<ModelEvent, String>> {
    let chunks = match response_value(line) {
        Ok(Value::Array(chunks)) => chunks,
        Ok(_) => Vec::new(),
        Err(e) => return vec![Err(e)],
    };
    let mut items = Vec::new();
    for chunk in chunks {
        match gemini_chunk_events_owned(chunk) {
            Ok(events) => items.extend(events.into_iter().map(Ok)),
            Err(e) => {
                items.push(Err(e));
                break;
            }
        }
    }
    items
}

/// The fields of a `GenerateContentResponse` chunk that make events.
#[derive(Deserialize)]
struct TypedChunk {
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default)]
    candidates: Vec<TypedCandidate>,
    #[serde(default, rename = "usageMetadata")]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct TypedCandidate {
    #[serde(default)]
    content: Option<TypedContent>,
    #[serde(default, rename = "finishReason")]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct TypedContent {
    #[serde(default)]
    parts: Vec<TypedPart>,
}

#[derive(Deserialize)]
struct TypedPart {
    #[serde(default, rename = "thoughtSignature")]
    thought_signature: Option<String>,
    /// A `null` call is not "no call": it fails the typed reading, and the general one
    /// reports it as malformed.
    #[serde(default, rename = "functionCall", deserialize_with = "present")]
    function_call: Option<FunctionCall>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FunctionCall>, D::Error> {
    FunctionCall::deserialize(d).map(Some)
}

impl TypedChunk {
    fn into_events(self) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        if let Some(candidate) = self.candidates.into_iter().next() {
            let parts = candidate.content.map(|c| c.parts).unwrap_or_default();
            events.reserve(parts.len() + 2);
            for part in parts {
                if let Some(call) = part.function_call {
                    events.push(ModelEvent::FunctionCall {
                        call,
                        thought_signature: part.thought_signature,
                    });
                } else if let Some(text) = part.text {
                    if part.thought == Some(true) {
                        events.push(ModelEvent::Thought(text));
                    } else if !text.is_empty() {
                        events.push(ModelEvent::Text(text));
                    }
                }
            }
            if let Some(reason) = candidate.finish_reason {
                events.push(ModelEvent::Finished(reason));
            }
        }
        if let Some(usage) = self
            .usage
            .and_then(|u| serde_json::from_value::<Usage>(u).ok())
        {
            events.push(ModelEvent::Usage(usage));
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::gemini_chunk_events;
    use serde_json::json;

    /// The typed reading gives exactly the events of the general one.
    #[test]
    fn typed_and_general_readings_agree() {
        let chunks = [
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"text": "a"}, {"text": "think", "thought": true}, {"text": ""},
                {"functionCall": {"name": "read_file", "args": {"file_path": "x"}}, "thoughtSignature": "s"},
                {"functionCall": {"id": "c1", "name": "glob"}}, {"text": null}
            ]}, "finishReason": "STOP"}, {"content": {"parts": [{"text": "second"}]}}],
                "usageMetadata": {"promptTokenCount": 3}}),
            json!({"candidates": []}),
            json!({"usageMetadata": {"promptTokenCount": "x"}}),
            // Not taken by the typed reading: the general one answers.
            json!({"candidates": [{"content": {"parts": [{"functionCall": null}]}}]}),
            json!({"candidates": [{"content": {"parts": [{"text": 5}]}, "finishReason": 1}]}),
            json!({"candidates": {"not": "a list"}}),
            json!({"error": {"message": "quota"}}),
            json!(7),
        ];
        for chunk in chunks {
            let line = json!({"method": "generateContentStream", "response": [chunk.clone()]});
            let line = line.to_string();
            let typed: Vec<_> = match typed_stream_events(&line) {
                Some(events) => events.into_iter().map(Ok).collect(),
                None => stream_events(&line),
            };
            let general: Vec<_> = match gemini_chunk_events(&chunk) {
                Ok(events) => events.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            assert_eq!(typed, general, "{chunk}");
        }
    }

    #[test]
    fn shapes_are_read_without_content() {
        let shape = |s: &str| serde_json::from_str::<LineShape>(s).unwrap();
        let line = shape(r#"{"method": "m", "response": [{"a": [1, {"b": null}]}], "x": 1}"#);
        assert_eq!(line.method.as_deref(), Some("m"));
        assert_eq!(line.response, Some(Shape::Array));
        assert_eq!(
            shape(r#"{"response": {"a": 1}}"#).response,
            Some(Shape::Other)
        );
        assert_eq!(shape(r#"{"method": "m"}"#).response, None);
        assert!(serde_json::from_str::<LineShape>(r#"{"response": [1,}"#).is_err());
    }
}
