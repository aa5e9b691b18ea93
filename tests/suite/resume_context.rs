//! What a resumed session and an ACP prompt make of what is not the user's own words:
//! the MCP servers' instructions (`<loaded_context>`) go to the model once however often
//! the session is resumed, and are not replayed to an editor as a user message; a custom
//! command typed in an editor is expanded as `-p` and the REPL expand it.

use serde_json::{json, Value};

use super::acp::Editor;
use super::mcp::{configure, server};
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn answer(text: &str) -> Reply {
    Reply::gemini_sse(&[json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 55}
    })])
}

/// How many times the servers' instructions appear in a request body.
fn loaded_contexts(body: &Value) -> usize {
    body["contents"]
        .to_string()
        .matches("<loaded_context>")
        .count()
}

#[test]
fn server_instructions_are_sent_once_however_often_the_session_is_resumed() {
    let s = Scratch::new();
    configure(
        &s,
        &server(
            "fx",
            &["--instructions", "Call echo first."],
            "trust = true",
        ),
    );
    let server = Loopback::start((0..4).map(|i| answer(&format!("answer {i}"))).collect());
    let run = |args: &[&str]| {
        let out = s
            .bare_command()
            .env("GOOGLE_GEMINI_BASE_URL", &server.url)
            .env("GEMINI_API_KEY", "test-key")
            .args(args)
            .output()
            .expect("run troupe");
        assert!(out.status.success(), "{}", stderr(&out));
    };
    run(&["-p", "first"]);
    for prompt in ["second", "third", "fourth"] {
        run(&["--resume", "latest", "-p", prompt]);
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let last = &requests[3].body;
    assert!(last["contents"].to_string().contains("fourth"));
    assert!(last["contents"].to_string().contains("Call echo first."));
    assert_eq!(loaded_contexts(last), 1, "{}", last["contents"]);
}

#[test]
fn session_load_does_not_replay_server_instructions_as_the_users_words() {
    let s = Scratch::new();
    configure(
        &s,
        &server(
            "fx",
            &["--instructions", "Call echo first."],
            "trust = true",
        ),
    );
    let out = s.run(&[turn(vec![text("Hi.")])], &["-p", "hello there"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let recorded = s.requests()[0]["contents"].to_string();
    assert!(recorded.contains("<loaded_context>"), "{recorded}");
    let list = s.bare_command().arg("--list-sessions").output().unwrap();
    let listed = stdout(&list);
    let id = listed
        .rsplit_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(id, _)| id.to_string())
        .unwrap_or_else(|| panic!("{listed}"));

    let mut ed = Editor::start(&s, &[], &[]);
    ed.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let loaded = ed.call(
        "session/load",
        json!({"sessionId": id, "cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    assert!(loaded.get("result").is_some(), "{loaded}");
    let users: Vec<String> = ed
        .updates
        .iter()
        .map(|u| &u["params"]["update"])
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(users, ["hello there"]);
    assert!(ed.close().success());
}

#[test]
fn a_custom_command_typed_in_an_editor_is_expanded() {
    let s = Scratch::new();
    s.write(
        ".troupe/commands/review.toml",
        "prompt = \"Review {{args}} carefully.\"\n",
    );
    let mut ed = Editor::start(
        &s,
        &[turn(vec![text("Reviewed.")])],
        &[("TROUPE_TRUST_WORKSPACE", "1")],
    );
    let sid = ed.start_session(&s, false);
    let answer = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "/review the parser"}]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let contents = s.requests()[0]["contents"].clone();
    let last = contents.as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["parts"][0]["text"], "Review the parser carefully.",
        "{last}"
    );
    assert!(ed.close().success());
}
