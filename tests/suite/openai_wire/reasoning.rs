//! Local reasoning models (Qwen3, DeepSeek-R1 under vLLM, llama.cpp or Ollama) stream
//! their thinking as `delta.reasoning_content` (or `delta.reasoning`): Troupe shows it
//! as thoughts, as it shows Gemini's `thought: true` parts, counts the reasoning tokens
//! as thought tokens, and never sends the thinking back (gemini-cli drops thought parts
//! from the history).

use serde_json::{json, Value};

use super::{chunk, openai};
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;
use crate::suite::acp::Editor;

const THINKING_1: &str = "The user wants a.txt. ";
const THINKING_2: &str = "I should read it first.";
const THINKING_3: &str = "It says alpha.";

fn usage(completion: u64, reasoning: u64) -> Value {
    json!({"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": completion,
           "total_tokens": 40 + completion,
           "completion_tokens_details": {"reasoning_tokens": reasoning}}})
}

/// Thinks (in two `reasoning_content` deltas), then reads a.txt.
fn think_then_read() -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(json!({"reasoning_content": THINKING_1}), None),
        chunk(json!({"reasoning_content": THINKING_2}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                   "function": {"name": "read_file", "arguments": "{\"file_path\": \"a.txt\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage(30, 20),
    ])
}

/// Thinks (in a `reasoning` delta, as some servers name it), then answers.
fn think_then_answer() -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(json!({"reasoning": THINKING_3}), None),
        chunk(json!({"content": "a is alpha."}), None),
        chunk(json!({}), Some("stop")),
        usage(9, 5),
    ])
}

#[test]
fn reasoning_deltas_count_as_thoughts_and_are_never_sent_back() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let server = Loopback::start(vec![think_then_read(), think_then_answer()]);
    let out = openai(
        &s,
        &server,
        &["-p", "What is in a.txt?", "--yolo", "-o", "json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report = json_out(&out);
    assert_eq!(report["response"], "a is alpha.", "{report}");
    let tokens = &report["stats"]["models"]["local-model"]["tokens"];
    assert_eq!(tokens["thoughts"], 25, "{report}");
    // Gemini's candidates exclude the thoughts; OpenAI's completion tokens include them.
    assert_eq!(tokens["candidates"], 14, "{report}");
    assert_eq!(tokens["total"], 119, "{report}");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body.to_string();
    for thinking in [THINKING_1, THINKING_2] {
        assert!(
            !second.contains(thinking.trim()),
            "the thinking went back to the server: {second}"
        );
    }
    assert_eq!(
        requests[1].body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"file_path\":\"a.txt\"}"}}]})
    );
}

#[test]
fn reasoning_streams_as_thought_events_apart_from_the_message_deltas() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let server = Loopback::start(vec![think_then_read(), think_then_answer()]);
    let out = openai(
        &s,
        &server,
        &["-p", "What is in a.txt?", "--yolo", "-o", "stream-json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    let thoughts: String = of("thought")
        .iter()
        .map(|e| {
            assert_eq!(e["delta"], true, "{e}");
            assert!(e["timestamp"].is_string(), "{e}");
            e["content"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(thoughts, format!("{THINKING_1}{THINKING_2}{THINKING_3}"));
    let said: String = of("message")
        .iter()
        .filter(|e| e["role"] == "assistant")
        .map(|e| e["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(said, "a is alpha.");
    // The first thought comes before the call it led to, the last before the answer.
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred);
    let first_thought = at(&|e| e["type"] == "thought");
    let tool_use = at(&|e| e["type"] == "tool_use");
    assert!(first_thought < tool_use, "{events:?}");
    let result = of("result");
    assert_eq!(result.len(), 1, "{events:?}");
    // The reasoning tokens are in the total (40 + 30 and 40 + 9).
    assert_eq!(result[0]["stats"]["total_tokens"], 119, "{}", result[0]);
}

/// The same, as a server that ignores `stream: true` answers: one `chat.completion`
/// whose message carries the thinking in `reasoning`.
fn think_then_answer_unstreamed() -> Reply {
    Reply::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "reasoning": THINKING_3, "content": "a is alpha."}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
    )
}

#[test]
fn reasoning_is_shown_as_thought_chunks_in_acp() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let server = Loopback::start(vec![
        Reply::json(
            200,
            &json!({"object": "list", "data": [{"id": "local-model"}]}),
        ),
        think_then_read(),
        think_then_answer_unstreamed(),
    ]);
    let mut cmd = s.command();
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args(["-m", "local-model"]);
    let mut ed = Editor::spawn(cmd);
    let sid = ed.start_session(&s, false);
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "What is in a.txt?"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let thoughts: String = ed
        .kinds("agent_thought_chunk")
        .iter()
        .map(|u| {
            u["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(thoughts, format!("{THINKING_1}{THINKING_2}{THINKING_3}"));
    let said: String = ed
        .kinds("agent_message_chunk")
        .iter()
        .map(|u| {
            u["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(said, "a is alpha.");
    ed.close();
}
