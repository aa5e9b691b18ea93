//! The Gemini stream parser: an SSE body through Troupe's SSE reader, each event's data
//! as JSON into `gemini_chunk_events` — as `providers::gemini` reads a streamed answer.
//! The events must not depend on how the body was chunked, and only the last may be
//! marked unterminated.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use troupe::engine::model::{gemini_chunk_events, ModelEvent};

#[path = "../common/sse.rs"]
mod sse;

fuzz_target!(|data: &[u8]| {
    let (events, _) = sse::framed(data);
    for sse in events.into_iter().flatten() {
        let Ok(chunk) = serde_json::from_str::<Value>(&sse.data) else {
            continue;
        };
        let parts = chunk
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match gemini_chunk_events(&chunk) {
            Ok(events) => {
                let from_parts = events
                    .iter()
                    .filter(|e| {
                        matches!(
                            e,
                            ModelEvent::Text(_)
                                | ModelEvent::Thought(_)
                                | ModelEvent::FunctionCall { .. }
                        )
                    })
                    .count();
                assert!(from_parts <= parts, "more events than parts");
                assert!(chunk.get("error").is_none(), "an error chunk gave events");
            }
            Err(message) => assert!(!message.is_empty()),
        }
    }
});
