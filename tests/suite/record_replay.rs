//! `--record-responses` on a real (loopback) model, then `--fake-responses` on the
//! recording: the replayed session sends the same requests and ends the same way.

use serde_json::{json, Value};

use super::gemini_wire::run_against;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"choices": [{"finish_reason": finish, "index": 0, "delta": delta}], "object": "chat.completion.chunk"})
}

#[test]
fn a_recorded_session_replays_offline() {
    let s = Scratch::new();
    s.write("notes/todo.md", "- ship it\n");
    let server = Loopback::start(vec![
        // A failed attempt is retried and not recorded.
        Reply::json(503, &json!({"error": {"message": "warming up"}})),
        Reply::openai_sse(&[
            chunk(json!({"content": "Looking."}), None),
            chunk(
                json!({"tool_calls": [
                    {"index": 0, "id": "c1", "type": "function", "function": {"name": "list_directory", "arguments": "{\"dir_path\": \"notes\"}"}},
                    {"index": 1, "id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"file_path\": \"notes/todo.md\"}"}}
                ]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
            json!({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}}),
        ]),
        Reply::openai_sse(&[
            chunk(json!({"content": "One item: "}), None),
            chunk(json!({"content": "ship it."}), Some("stop")),
        ]),
    ]);
    let recording = s.root().join("recorded.jsonl");
    let base = format!("{}/v1", server.url);
    let args = [
        "-p",
        "What is in notes?",
        "--yolo",
        "-o",
        "json",
        "-m",
        "local",
    ];
    let live = run_against(
        &s,
        &[("OPENAI_BASE_URL", &base)],
        &[
            &args[..],
            &["--record-responses", recording.to_str().expect("path")],
        ]
        .concat(),
    );
    assert!(live.status.success(), "stderr: {}", stderr(&live));
    let live_requests = s.requests();
    assert_eq!(live_requests.len(), 3, "the failed attempt is logged too");
    let recorded = std::fs::read_to_string(&recording).expect("recording");
    assert_eq!(recorded.lines().count(), 2, "{recorded}");
    assert!(recorded
        .lines()
        .all(|l| l.starts_with("{\"method\":\"generateContentStream\"")));

    std::fs::remove_file(s.requests_path()).expect("clear request log");
    let replay = run_against(
        &s,
        &[],
        &[
            &args[..],
            &["--fake-responses", recording.to_str().expect("path")],
        ]
        .concat(),
    );
    assert!(replay.status.success(), "stderr: {}", stderr(&replay));
    let live_out: Value = serde_json::from_slice(&live.stdout).expect("live json");
    let replay_out: Value = serde_json::from_slice(&replay.stdout).expect("replay json");
    assert_eq!(live_out["response"], "One item: ship it.");
    assert_eq!(replay_out["response"], live_out["response"]);
    for key in ["totalCalls", "totalSuccess", "totalFail"] {
        assert_eq!(
            replay_out["stats"]["tools"][key],
            live_out["stats"]["tools"][key]
        );
    }
    assert_eq!(live_out["stats"]["tools"]["totalSuccess"], 2);
    // The same conversation, request for request (the live run's retry aside).
    assert_eq!(s.requests(), live_requests[1..].to_vec());
}

#[test]
fn a_scripted_model_is_named_for_its_script() {
    let s = Scratch::new();
    let turns = [turn(vec![text("Hello.")])];
    let (report, out) = s.run_json(&turns, &["-p", "hi"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let script = s.root().join("responses.jsonl");
    let name = format!("scripted: {}", script.display());
    let models: Vec<&String> = report["stats"]["models"]
        .as_object()
        .expect("stats.models")
        .keys()
        .collect();
    assert_eq!(models, [&name], "{report}");

    let out = s.run(&turns, &["-p", "hi", "-o", "stream-json"]);
    let init = stream_events(&out)
        .into_iter()
        .find(|e| e["type"] == "init")
        .expect("an init event");
    assert_eq!(init["model"], name.as_str(), "{init}");
}
