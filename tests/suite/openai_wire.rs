//! The OpenAI-compatible provider against a real HTTP server on 127.0.0.1: the
//! `troupe` binary with `OPENAI_BASE_URL` pointing at the loopback server. Chunks are
//! shaped like llama.cpp's server (extra `timings`, `created`, … fields included).

mod reasoning;

use std::process::Output;

use serde_json::{json, Value};

use super::gemini_wire::run_against;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

/// A headless run of `-m local-model` against the loopback server `server`.
pub(super) fn openai(s: &Scratch, server: &Loopback, args: &[&str]) -> Output {
    let base = format!("{}/v1", server.url);
    let mut all = vec!["-m", "local-model"];
    all.extend_from_slice(args);
    run_against(
        s,
        &[("OPENAI_BASE_URL", &base), ("OPENAI_API_KEY", "sk-test")],
        &all,
    )
}

/// A `chat.completion.chunk` shaped like llama.cpp's.
pub(super) fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
           "created": 1795302953, "id": "chatcmpl-1", "model": "qwen2.5-coder-1.5b-instruct",
           "system_fingerprint": "b0-unknown", "object": "chat.completion.chunk"})
}

fn usage_chunk() -> Value {
    json!({"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 6, "total_tokens": 46},
           "timings": {"prompt_n": 40, "predicted_n": 6}})
}

fn answer(text: &str) -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(json!({"content": text}), None),
        chunk(json!({}), Some("stop")),
        usage_chunk(),
    ])
}

fn error_message(out: &Output) -> String {
    json_out(out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn parallel_tool_calls_then_answer_send_exact_bodies() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("b.txt", "beta\n");
    let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut c = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            c["id"] = json!(id);
            c["type"] = json!("function");
        }
        if let Some(name) = name {
            c["function"]["name"] = json!(name);
        }
        chunk(json!({ "tool_calls": [c] }), None)
    };
    let server = Loopback::start(vec![
        Reply::openai_sse(&[
            chunk(json!({"role": "assistant", "content": null}), None),
            chunk(json!({"content": "I'll read both."}), None),
            call(0, Some("call_a"), Some("read_file"), "{"),
            call(0, None, None, "\"file_path\": \"a.txt\"}"),
            call(
                1,
                Some("call_b"),
                Some("read_file"),
                "{\n    \"file_path\": \"b.txt\"\n}",
            ),
            chunk(json!({}), Some("tool_calls")),
            usage_chunk(),
        ]),
        answer("a is alpha, b is beta."),
    ]);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "Read a.txt and b.txt",
            "--yolo",
            "-o",
            "json",
            "-c",
            "tools.core=read_file",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    // The final round's text (gemini-cli's `response`).
    assert_eq!(json_out(&out)["response"], "a is alpha, b is beta.");
    let stats = &json_out(&out)["stats"]["tools"];
    assert_eq!(stats["totalSuccess"], 2);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.headers["authorization"], "Bearer sk-test");
    }
    let tools = requests[0].body["tools"].clone();
    assert_eq!(tools.as_array().map(Vec::len), Some(1));
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "read_file");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["file_path"])
    );
    let system = json!({"role": "system", "content": "You are a test agent."});
    let user = json!({"role": "user", "content": "Read a.txt and b.txt"});
    let body = |messages: Value| {
        json!({"model": "local-model", "messages": messages, "stream": true,
               "stream_options": {"include_usage": true}, "tools": tools, "tool_choice": "auto",
               "max_tokens": 16384})
    };
    assert_eq!(requests[0].body, body(json!([system, user])));
    assert_eq!(
        requests[1].body,
        body(json!([
            system,
            user,
            {"role": "assistant", "content": "I'll read both.", "tool_calls": [
                {"id": "call_a", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"file_path\":\"a.txt\"}"}},
                {"id": "call_b", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"file_path\":\"b.txt\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_a", "content": "alpha\n"},
            {"role": "tool", "tool_call_id": "call_b", "content": "beta\n"}
        ]))
    );
}

#[test]
fn rate_limits_are_retried_after_retry_after() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}),
        )
        .header("retry-after", "1"),
        answer("Made it."),
    ]);
    let out = openai(&s, &server, &["-p", "hi"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Made it.");
    let err = stderr(&out);
    assert!(
        err.contains("troupe: retrying model request (attempt 2): openai-compatible answered HTTP 429: Rate limit reached; retrying in "),
        "{err}"
    );
    assert!(err.contains("(the server asked to wait 1s)"), "{err}");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn server_errors_every_time_end_after_bounded_attempts() {
    let s = Scratch::new();
    let server = Loopback::always(Reply::json(
        503,
        &json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}),
    ));
    let out = openai(
        &s,
        &server,
        &["-p", "hi", "-o", "json", "-c", "model.retry.max_attempts=4"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        error_message(&out),
        "openai-compatible answered HTTP 503: Loading model (gave up after 4 attempts)"
    );
    assert_eq!(server.requests().len(), 4);

    let s = Scratch::new();
    let server = Loopback::always(Reply::json(
        400,
        &json!({"error": {"message": "bad tools", "type": "invalid_request_error"}}),
    ));
    let out = openai(&s, &server, &["-p", "hi", "-o", "json"]);
    assert_eq!(
        error_message(&out),
        "openai-compatible answered HTTP 400: bad tools"
    );
    assert_eq!(server.requests().len(), 1, "400 is never retried");
}

#[test]
fn cut_and_unfinished_streams_are_retried() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        Reply::events([format!(
            "data: {}\n\n",
            chunk(json!({"content": "Partial "}), None)
        )])
        .then_cut(r#"data: {"choices":[{"delta":{"con"#),
        // Ends cleanly, but with neither a finish_reason nor [DONE].
        Reply::events([format!(
            "data: {}\n\n",
            chunk(json!({"content": "Also partial"}), None)
        )]),
        answer("Whole answer."),
    ]);
    let out = openai(&s, &server, &["-p", "hi", "-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(json_out(&out)["response"], "Whole answer.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body, requests[2].body);
}

#[test]
fn malformed_tool_arguments_are_retried_then_reported() {
    let s = Scratch::new();
    let bad = Reply::openai_sse(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "x", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"file_path\": "}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let server = Loopback::always(bad);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "hi",
            "-o",
            "json",
            "-c",
            "model.retry.max_stream_attempts=2",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        error_message(&out),
        "openai-compatible sent an invalid stream (MALFORMED_FUNCTION_CALL): the arguments of read_file are not JSON (EOF while parsing a value at line 1 column 14): {\"file_path\":  (gave up after 2 attempts)"
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_body_that_is_not_json_is_a_clear_error() {
    let s = Scratch::new();
    let server = Loopback::always(Reply::raw(200, "text/html", "<html>It works!</html>"));
    let out = openai(&s, &server, &["-p", "hi", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        error_message(&out),
        "openai-compatible sent a malformed response: the body is not JSON (expected value at line 1 column 1): <html>It works!</html>"
    );
    assert_eq!(server.requests().len(), 1);

    let s = Scratch::new();
    let server = Loopback::always(Reply::events(["data: {oops}\n\n".to_string()]));
    let out = openai(&s, &server, &["-p", "hi", "-o", "json"]);
    assert_eq!(
        error_message(&out),
        "openai-compatible sent a malformed response: an event is not JSON (key must be a string at line 1 column 2): {oops}"
    );
}

#[test]
fn a_content_filter_finish_is_a_safety_block() {
    let s = Scratch::new();
    let server = Loopback::always(Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({}), Some("content_filter")),
    ]));
    let out = openai(&s, &server, &["-p", "hi", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        error_message(&out),
        "openai-compatible sent an invalid stream (SAFETY_BLOCKED): the response was blocked by the model's safety filters"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_plain_completion_answers_a_streamed_request() {
    let s = Scratch::new();
    let server = Loopback::start(vec![Reply::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "Not streamed."}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
    )]);
    let out = openai(&s, &server, &["-p", "hi", "-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(json_out(&out)["response"], "Not streamed.");
}
