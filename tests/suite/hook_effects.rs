//! BeforeModel and AfterModel hooks change what is sent and what is kept, as
//! gemini-cli 0.61 does: a BeforeModel `llm_request` rewrites the model, the texts
//! and the sampling config of the request; an AfterModel `llm_response` with parts
//! replaces the model's answer.

use serde_json::{json, Value};

use super::gemini_wire::run_against;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn user_hooks(s: &Scratch, toml: &str) {
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), toml).unwrap();
}

fn hook(event: &str, reply: &Value) -> String {
    format!("[[hooks.{event}]]\ncommand = '''echo '{reply}' '''\n")
}

fn answer(text: &str) -> Reply {
    Reply::gemini_sse(&[json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1, "totalTokenCount": 6}
    })])
}

#[test]
fn before_model_llm_request_rewrites_model_texts_and_config() {
    let s = Scratch::new();
    let reply = json!({"hookSpecificOutput": {"llm_request": {
        "model": "gemini-2.5-pro",
        "messages": [{"role": "user", "content": "REWRITTEN by the hook"}],
        "config": {"temperature": 0.25, "topP": 0.5, "topK": 7, "maxOutputTokens": 99},
    }}});
    user_hooks(&s, &hook("BeforeModel", &reply));
    let server = Loopback::start(vec![answer("fine")]);
    let out = run_against(
        &s,
        &[
            ("GOOGLE_GEMINI_BASE_URL", &server.url),
            ("GEMINI_API_KEY", "test-key"),
        ],
        &["-p", "the original prompt", "-m", "gemini-2.5-flash"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    let body = &requests[0].body;
    assert_eq!(
        body["contents"][0]["parts"][0]["text"],
        "REWRITTEN by the hook"
    );
    assert!(!body.to_string().contains("the original prompt"), "{body}");
    let config = &body["generationConfig"];
    assert_eq!(config["temperature"], 0.25, "{config}");
    assert_eq!(config["topP"], 0.5, "{config}");
    assert_eq!(config["topK"], 7, "{config}");
    assert_eq!(config["maxOutputTokens"], 99, "{config}");
}

#[test]
fn before_model_messages_keep_calls_and_responses_in_place() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    // Two messages: the first two contents with text get them, in order; on a shorter
    // request the second is added as a new content.
    let reply = json!({"hookSpecificOutput": {"llm_request": {"messages": [
        {"role": "user", "content": "READ A"},
        {"role": "model", "content": "READING"},
    ]}}});
    user_hooks(&s, &hook("BeforeModel", &reply));
    let out = s.run(
        &[
            turn(vec![
                text("reading"),
                call("read_file", json!({"file_path": "a.txt"})),
            ]),
            turn(vec![text("done")]),
        ],
        &["-p", "read a"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let first = &s.requests()[0]["contents"];
    assert_eq!(first[0]["parts"][0]["text"], "READ A", "{first}");
    assert_eq!(
        first[1],
        json!({"role": "model", "parts": [{"text": "READING"}]})
    );
    let second = &s.requests()[1]["contents"];
    assert_eq!(second[0]["parts"][0]["text"], "READ A", "{second}");
    assert_eq!(second[1]["parts"][0]["text"], "READING", "{second}");
    assert_eq!(
        second[1]["parts"][1]["functionCall"]["name"], "read_file",
        "{second}"
    );
    assert!(
        second[2]["parts"][0]["functionResponse"]["response"]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("alpha"),
        "{second}"
    );
}

#[test]
fn after_model_llm_response_replaces_the_answer_and_its_calls_do_not_run() {
    let s = Scratch::new();
    let reply = json!({"hookSpecificOutput": {"llm_response": {
        "candidates": [{"content": {"role": "model", "parts": ["REPLACED ", "answer"]}, "finishReason": "STOP", "index": 0}],
    }}});
    user_hooks(&s, &hook("AfterModel", &reply));
    let (out, raw) = s.run_json(
        &[
            turn(vec![
                text("original"),
                call("write_file", json!({"file_path": "x.txt", "content": "x"})),
            ]),
            turn(vec![text("never asked")]),
        ],
        &["-p", "write x", "--yolo"],
    );
    assert!(raw.status.success(), "{}", stderr(&raw));
    assert!(
        out["response"]
            .as_str()
            .unwrap_or_default()
            .ends_with("REPLACED answer"),
        "{out}"
    );
    assert!(
        !s.ws().join("x.txt").exists(),
        "the replaced answer's call ran"
    );
    assert_eq!(s.requests().len(), 1);

    // A response without parts changes nothing.
    let s = Scratch::new();
    let reply = json!({"hookSpecificOutput": {"llm_response": {"candidates": []}}});
    user_hooks(&s, &hook("AfterModel", &reply));
    let (out, _) = s.run_json(&[turn(vec![text("kept")])], &["-p", "q"]);
    assert_eq!(out["response"], "kept");
}
