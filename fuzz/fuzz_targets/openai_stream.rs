//! The OpenAI stream parser: an SSE body through Troupe's SSE reader, each event's data
//! (up to `[DONE]`) as JSON into `StreamDecoder` — as `providers::openai` reads a
//! streamed answer. Beyond not panicking: the text events are exactly the chunks'
//! `delta.content`, one call per tool-call index comes out, and a finish reason is
//! reported iff a chunk carried one.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use troupe::engine::model::ModelEvent;
use troupe::providers::openai::wire::{response_events, StreamDecoder};

#[path = "../common/sse.rs"]
mod sse;

fuzz_target!(|data: &[u8]| {
    let (events, body) = sse::framed(data);
    let mut decoder = StreamDecoder::default();
    let (mut text, mut want_text) = (String::new(), String::new());
    let mut indices = BTreeSet::new();
    let mut finish_sent = false;
    for sse in events.into_iter().flatten() {
        if sse.data.trim() == "[DONE]" {
            break;
        }
        let Ok(chunk) = serde_json::from_str::<Value>(&sse.data) else {
            return;
        };
        let Ok(out) = decoder.push(&chunk) else {
            assert!(chunk.get("error").is_some(), "a chunk without error failed");
            return;
        };
        let choice = chunk.pointer("/choices/0");
        if let Some(t) = choice
            .and_then(|c| c.pointer("/delta/content"))
            .and_then(Value::as_str)
        {
            want_text.push_str(t);
        }
        let calls = choice
            .and_then(|c| c.pointer("/delta/tool_calls"))
            .and_then(Value::as_array);
        for (position, call) in calls.into_iter().flatten().enumerate() {
            let index = call.get("index").and_then(Value::as_u64);
            indices.insert(index.unwrap_or(position as u64));
        }
        if choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
            .is_some()
        {
            finish_sent = true;
        }
        for event in out {
            if let ModelEvent::Text(t) = event {
                text.push_str(&t);
            }
        }
    }
    assert_eq!(
        text, want_text,
        "text events differ from the deltas' content"
    );
    assert_eq!(decoder.has_finish_reason(), finish_sent);
    if let Ok(out) = decoder.finish() {
        let calls = out
            .iter()
            .filter(|e| matches!(e, ModelEvent::FunctionCall { .. }))
            .count();
        assert_eq!(calls, indices.len(), "tool calls lost or invented");
        let finished = out.iter().any(|e| matches!(e, ModelEvent::Finished(_)));
        assert_eq!(finished, finish_sent);
    }
    // A server that answers a streamed request with one JSON completion.
    if let Ok(whole) = serde_json::from_slice::<Value>(&body) {
        let _ = response_events(&whole);
    }
});
