//! Model turns that a small local model gets wrong (issue 31), against a loopback
//! OpenAI-compatible server shaped like llama.cpp's and the scripted model: an answer
//! cut at the output limit runs none of its calls, identical calls of one answer run
//! once, a call that keeps failing gets a nudge and then stops the turn.

use serde_json::{json, Value};

use super::openai_wire::{chunk, openai};
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

/// One answer of `calls` (`(id, name, arguments)`), ended with `finish`.
fn calls_reply(text: &str, calls: &[(&str, &str, Value)], finish: &str) -> Reply {
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": text}), None)];
    for (index, (id, name, args)) in calls.iter().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        ));
    }
    chunks.push(chunk(json!({}), Some(finish)));
    Reply::openai_sse(&chunks)
}

fn answer(text: &str) -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

fn write(path: &str, content: &str) -> Value {
    json!({"file_path": path, "content": content})
}

/// The ids of the calls the assistant messages of a request hold, and the ids the
/// tool messages answer.
fn call_ids(messages: &Value) -> (Vec<String>, Vec<String>) {
    let list = messages.as_array().expect("messages");
    let asked = list
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .filter_map(|c| c["id"].as_str().map(String::from))
        .collect();
    let answered = list
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str().map(String::from))
        .collect();
    (asked, answered)
}

#[test]
fn an_answer_cut_at_the_output_limit_runs_none_of_its_calls_and_is_asked_again() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        calls_reply(
            "```\ncargo test\n```",
            &[
                ("cut_1", "write_file", write("a.txt", "one\n")),
                ("cut_2", "write_file", write("b.txt", "two\n")),
                ("cut_3", "read_file", json!({"file_path": "a.txt"})),
            ],
            "length",
        ),
        calls_reply(
            "",
            &[("ok_1", "write_file", write("c.txt", "three\n"))],
            "tool_calls",
        ),
        answer("Wrote c.txt."),
    ]);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "Write the files",
            "--yolo",
            "-o",
            "json",
            "-c",
            "model.max_output_tokens=1024",
            "-c",
            "tools.core=read_file,write_file",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(!s.ws().join("a.txt").exists(), "a cut answer's call ran");
    assert!(!s.ws().join("b.txt").exists(), "a cut answer's call ran");
    assert_eq!(s.read("c.txt"), "three\n");
    // The cut answer's text is dropped like a failed attempt's.
    assert_eq!(json_out(&out)["response"], "Wrote c.txt.");
    assert!(
        stderr(&out).contains("cut at the output limit (1024 tokens) with 3 tool calls"),
        "{}",
        stderr(&out)
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let again = &requests[1].body;
    // Asked again with a larger limit and a note; the cut calls are not in it.
    assert_eq!(again["max_tokens"], 2048);
    let messages = again["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2, "{again}");
    let note = messages[1]["content"].as_str().expect("user text");
    assert!(note.starts_with("Write the files"), "{note}");
    assert!(
        note.contains(
            "cut at the output limit (1024 tokens) and none of its 3 tool calls were run"
        ),
        "{note}"
    );
    // Then the note has done its work; every call in the history is answered.
    let last = &requests[2].body["messages"];
    assert!(!last.to_string().contains("cut_1"), "{last}");
    assert!(!last.to_string().contains("none of its"), "{last}");
    let (asked, answered) = call_ids(last);
    assert_eq!(asked, ["ok_1"]);
    assert_eq!(answered, ["ok_1"]);
}

#[test]
fn answers_cut_again_and_again_end_the_turn_without_running_anything() {
    let s = Scratch::new();
    let cut = || {
        calls_reply(
            "",
            &[
                ("c1", "write_file", write("a.txt", "x\n")),
                ("c2", "write_file", write("a.txt", "y\n")),
            ],
            "length",
        )
    };
    let server = Loopback::start(vec![cut(), cut(), answer("unused")]);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "Write it",
            "--yolo",
            "-o",
            "json",
            "-c",
            "model.max_output_tokens=1024",
            "-c",
            "tools.core=write_file",
        ],
    );
    assert!(!out.status.success());
    assert!(!s.ws().join("a.txt").exists());
    let message = json_out(&out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("cut at the output limit"), "{message}");
    assert!(message.contains("2 times in this turn"), "{message}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].body["max_tokens"], 2048);
}

#[test]
fn identical_calls_of_one_answer_run_once_and_each_is_answered() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let append = json!({"command": "echo ran >> log.txt"});
    let read = json!({"file_path": "a.txt"});
    let turns = [
        turn(vec![
            call("read_file", read.clone()),
            call("run_shell_command", append.clone()),
            call("read_file", read),
            call("run_shell_command", append),
        ]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-p", "go", "--yolo", "-o", "stream-json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        s.read("log.txt"),
        "ran\n",
        "the identical command ran twice"
    );

    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let asked: Vec<String> = requests[1]["contents"][1]["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["functionCall"]["id"].as_str().map(String::from))
        .collect();
    let responses = function_responses(&requests[1]);
    let answered: Vec<String> = responses
        .iter()
        .filter_map(|r| r["id"].as_str().map(String::from))
        .collect();
    assert_eq!(asked.len(), 4);
    assert_eq!(answered, asked, "every call answered once, in order");
    assert_eq!(responses[2]["response"], responses[0]["response"]);
    assert_eq!(responses[3]["response"], responses[1]["response"]);
    assert_eq!(responses[0]["response"]["output"], "alpha\n");
    // Every call is shown; the copies are marked as such.
    let events = stream_events(&out);
    let uses = events.iter().filter(|e| e["type"] == "tool_use").count();
    assert_eq!(uses, 4, "{events:?}");
    let copies: Vec<&Value> = (events.iter())
        .filter(|e| e["type"] == "tool_result")
        .filter(|e| {
            e["output"]
                .as_str()
                .is_some_and(|o| o.contains("it ran once"))
        })
        .collect();
    assert_eq!(copies.len(), 2, "{events:?}");
    assert_eq!(copies[0]["tool_id"], asked[2].as_str());
    assert_eq!(copies[1]["tool_id"], asked[3].as_str());
}

#[test]
fn a_call_that_keeps_failing_gets_a_nudge_then_stops_the_turn() {
    let s = Scratch::new();
    let missing = || turn(vec![call("read_file", json!({"file_path": "gone.txt"}))]);
    let turns = [
        missing(),
        missing(),
        missing(),
        missing(),
        turn(vec![text("x")]),
    ];
    let (report, out) = s.run_json(&turns, &["-p", "read it", "--yolo"]);
    assert!(!out.status.success());
    assert_eq!(report["error"]["type"], "LoopDetected", "{report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("after it failed 3 times"), "{message}");

    let requests = s.requests();
    // The fourth identical call is not run: the turn stops at the fourth answer.
    assert_eq!(requests.len(), 4);
    let error = |i: usize| {
        function_responses(&requests[i])[0]["response"]["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(!error(2).contains("failed 2 times"), "{}", error(2));
    assert!(!error(2).contains("Note from Troupe"), "{}", error(2));
    let nudged = error(3);
    assert!(
        nudged.contains(
            "has now failed 3 times with this error; do not repeat it, try something else"
        ),
        "{nudged}"
    );
    assert_eq!(report["stats"]["tools"]["totalCalls"], 3, "{report}");
}

#[test]
fn an_identical_command_asked_twice_over_acp_is_approved_once_and_runs_once() {
    let s = Scratch::new();
    let append = json!({"command": "echo ran >> log.txt", "description": "append"});
    let turns = [
        turn(vec![
            call("run_shell_command", append.clone()),
            call("run_shell_command", append),
        ]),
        turn(vec![text("Appended.")]),
    ];
    let mut ed = crate::suite::acp::Editor::start(&s, &turns, &[]);
    let sid = ed.start_session(&s, false);
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "append"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(s.read("log.txt"), "ran\n");
    let permissions = (ed.seen.iter())
        .filter(|m| m["method"] == "session/request_permission")
        .count();
    assert_eq!(permissions, 1, "{:?}", ed.seen);
    // Both calls are shown to the editor, each finished.
    let shown: std::collections::HashSet<String> = ed
        .kinds("tool_call")
        .iter()
        .filter_map(|u| u["toolCallId"].as_str().map(String::from))
        .collect();
    assert_eq!(shown.len(), 2, "{:?}", ed.updates);
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(responses.len(), 2);
    assert_ne!(responses[0]["id"], responses[1]["id"]);
    assert_eq!(responses[0]["response"], responses[1]["response"]);
}

/// An answer whose one call of `name` is cut in the middle of its arguments (a
/// string not closed), ended at the output limit.
fn cut_mid_string(name: &str, arguments: &str) -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "cut_1", "type": "function",
                   "function": {"name": name, "arguments": arguments}}]}),
            None,
        ),
        chunk(json!({}), Some("length")),
    ])
}

/// The declared properties of tool `name` in a request body.
fn declared(body: &Value, name: &str) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let tool = tools.iter().find(|t| t["function"]["name"] == name);
    tool.and_then(|t| {
        t["function"]["parameters"]["properties"]
            .as_object()
            .cloned()
    })
    .map(|p| p.keys().cloned().collect())
    .unwrap_or_default()
}

#[test]
fn a_write_file_cut_mid_string_is_asked_again_larger_and_written_in_parts() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        cut_mid_string(
            "write_file",
            r##"{"file_path": "NOTES.md", "content": "# Notes\n\nThe first line of a long"##,
        ),
        calls_reply(
            "",
            &[("p1", "write_file", write("NOTES.md", "# Notes\n"))],
            "tool_calls",
        ),
        calls_reply(
            "",
            &[(
                "p2",
                "write_file",
                json!({"file_path": "NOTES.md", "content": "Part two.\n", "append": true}),
            )],
            "tool_calls",
        ),
        answer("Wrote NOTES.md in two parts."),
    ]);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "Write NOTES.md",
            "--yolo",
            "-o",
            "json",
            "-c",
            "model.max_output_tokens=512",
            "-c",
            "tools.core=read_file,write_file",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(s.read("NOTES.md"), "# Notes\nPart two.\n");
    assert_eq!(json_out(&out)["response"], "Wrote NOTES.md in two parts.");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The first request declares write_file as gemini-cli does; from the cut on, the
    // turn's requests declare `append` and a larger limit.
    assert_eq!(
        declared(&requests[0].body, "write_file"),
        ["file_path", "content"]
    );
    assert_eq!(requests[0].body["max_tokens"], 512);
    let again = &requests[1].body;
    assert!(
        declared(again, "write_file").contains(&"append".to_string()),
        "{again}"
    );
    assert!(declared(&requests[3].body, "write_file").contains(&"append".to_string()));
    assert_eq!(again["max_tokens"], 2048);
    let note = again["messages"]
        .as_array()
        .expect("messages")
        .last()
        .expect("a message")["content"]
        .to_string();
    assert!(
        note.contains("in the middle of the arguments of write_file"),
        "{note}"
    );
    assert!(note.contains("Write the file in parts"), "{note}");
    assert!(note.contains(r#"\"append\": true"#), "{note}");
    // The note was for that request only.
    assert!(!requests[2]
        .body
        .to_string()
        .contains("Write the file in parts"));
}

#[test]
fn a_call_cut_mid_string_twice_ends_the_turn_saying_so() {
    let s = Scratch::new();
    let cut = || cut_mid_string("read_file", r#"{"file_path": "a very long na"#);
    let server = Loopback::start(vec![cut(), cut(), answer("unused")]);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "Read it",
            "--yolo",
            "-o",
            "json",
            "-c",
            "model.max_output_tokens=512",
            "-c",
            "tools.core=read_file",
        ],
    );
    assert!(!out.status.success());
    let message = json_out(&out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("in the middle of a call of read_file, 2 times"),
        "{message}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].body["max_tokens"], 2048);
    // Not a tool that appends: it is not told to write in parts.
    let again = requests[1].body.to_string();
    assert!(again.contains("shorter arguments"), "{again}");
    assert!(!declared(&requests[1].body, "read_file").contains(&"append".to_string()));
}
