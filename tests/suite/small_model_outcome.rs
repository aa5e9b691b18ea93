//! An honest outcome (issue 47, `model.check_outcome`, on in the small profile): a
//! prompt that asks for a change and a turn that changed no file (or made only identity
//! edits) is sent back once with a note, then ends as `no_change` (exit code 56) in
//! every output format and in batch results; a prompt that asks to run the tests and a
//! turn that ran none ends as `tests_not_run`. And a required tool call answered in
//! prose is asked for again once over the OpenAI wire, then ends as `no_tool_call`.

use serde_json::{json, Value};

use super::openai_wire::{chunk, openai};
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

const CHECK: [&str; 2] = ["-c", "model.check_outcome=true"];
const NOTE: &str = "you have not changed any file yet";

/// The text parts of the last user content of a Gemini request.
fn last_user_text(request: &Value) -> String {
    let contents = request["contents"].as_array().cloned().unwrap_or_default();
    let last = contents.iter().rev().find(|c| c["role"] == "user");
    last.and_then(|c| c["parts"].as_array())
        .map(|parts| {
            let texts = parts.iter().filter_map(|p| p["text"].as_str());
            texts.collect::<Vec<_>>().join("\n")
        })
        .unwrap_or_default()
}

fn args<'a>(prompt: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["-p", prompt, "--yolo"];
    all.extend_from_slice(&CHECK);
    all.extend_from_slice(extra);
    all
}

#[test]
fn a_change_asked_for_and_only_identity_edits_made_is_sent_back_once_then_no_change() {
    let s = Scratch::new();
    s.write("a.py", "total = 1\n");
    // Alternating allow_multiple: the identity edit is refused either way.
    let same = |multiple: bool| {
        call(
            "replace",
            json!({"file_path": "a.py", "old_string": "total = 1", "new_string": "total = 1", "allow_multiple": multiple}),
        )
    };
    let turns = [
        turn(vec![text("Fixed it.")]),
        turn(vec![same(true)]),
        turn(vec![same(false)]),
        turn(vec![text("The file has been updated.")]),
    ];
    let (report, out) = s.run_json(&turns, &args("Fix the bug in a.py", &[]));
    assert_eq!(out.status.code(), Some(56), "{report}");
    assert_eq!(report["error"]["type"], "NoChange", "{report}");
    assert_eq!(report["error"]["code"], 56);
    assert_eq!(report["status"], "no_change", "{report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("changed no file"), "{message}");
    assert_eq!(report["response"], "The file has been updated.");
    assert_eq!(s.read("a.py"), "total = 1\n");
    let requests = s.requests();
    assert_eq!(requests.len(), 4, "sent back once, then it ends");
    assert!(!last_user_text(&requests[0]).contains(NOTE));
    assert!(
        last_user_text(&requests[1]).contains(NOTE),
        "{}",
        requests[1]
    );
    // The note is said once.
    let notes = requests[3].to_string().matches(NOTE).count();
    assert_eq!(notes, 1);
}

#[test]
fn a_change_made_after_the_note_is_a_success() {
    let s = Scratch::new();
    s.write("a.py", "total = 1\n");
    let turns = [
        turn(vec![text("You could change total to 2.")]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "a.py", "content": "total = 2\n"}),
        )]),
        turn(vec![text("Changed total to 2.")]),
    ];
    let out = s.run(
        &turns,
        &args("Change total to 2 in a.py", &["-o", "stream-json"]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(s.read("a.py"), "total = 2\n");
    let events = stream_events(&out);
    let result = events.last().expect("a result event");
    assert_eq!(result["status"], "success", "{result}");
    assert!(last_user_text(&s.requests()[1]).contains(NOTE));
}

#[test]
fn no_change_is_said_in_stream_json_and_in_text_mode() {
    let s = Scratch::new();
    s.write("notes.md", "# Notes\n");
    // Written with the text it had: no file changed.
    let rewrite = || {
        turn(vec![call(
            "write_file",
            json!({"file_path": "notes.md", "content": "# Notes\n"}),
        )])
    };
    let turns = [
        rewrite(),
        turn(vec![text("Done.")]),
        rewrite(),
        turn(vec![text("Done.")]),
    ];
    let out = s.run(
        &turns,
        &args("Add a line to notes.md", &["-o", "stream-json"]),
    );
    assert_eq!(out.status.code(), Some(56), "{}", stderr(&out));
    let events = stream_events(&out);
    let result = events.last().expect("a result event");
    assert_eq!(result["type"], "result");
    assert_eq!(result["status"], "no_change", "{result}");
    assert_eq!(result["error"]["type"], "NoChange", "{result}");

    let s = Scratch::new();
    s.write("notes.md", "# Notes\n");
    let turns = [turn(vec![text("Added.")]), turn(vec![text("Added it.")])];
    let out = s.run(&turns, &args("Add a line to notes.md", &[]));
    assert_eq!(out.status.code(), Some(56));
    assert_eq!(stdout(&out), "Added.\nAdded it.\n");
    assert!(
        stderr(&out)
            .contains("troupe: The request asks for a change, but the turn changed no file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn tests_asked_for_and_not_run_are_reported_and_a_run_after_the_note_succeeds() {
    let prompt = "Run the tests and tell me how many pass";
    let s = Scratch::new();
    let turns = [turn(vec![text("5 pass.")]), turn(vec![text("5 pass.")])];
    let (report, out) = s.run_json(&turns, &args(prompt, &[]));
    assert_eq!(out.status.code(), Some(56), "{report}");
    assert_eq!(report["error"]["type"], "TestsNotRun", "{report}");
    assert_eq!(report["status"], "tests_not_run", "{report}");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        last_user_text(&requests[1]).contains("no test command has run yet"),
        "{}",
        requests[1]
    );

    let s = Scratch::new();
    let turns = [
        turn(vec![text("5 pass.")]),
        turn(vec![call(
            "run_shell_command",
            json!({"command": "echo 5 tests passed"}),
        )]),
        turn(vec![text("5 tests pass.")]),
    ];
    let (report, out) = s.run_json(&turns, &args(prompt, &[]));
    assert!(out.status.success(), "{report}");
    assert!(report.get("error").is_none(), "{report}");
}

#[test]
fn without_the_setting_a_turn_that_changed_nothing_is_a_success() {
    let s = Scratch::new();
    s.write("a.py", "total = 1\n");
    let turns = [turn(vec![text("Fixed it.")])];
    let (report, out) = s.run_json(&turns, &["-p", "Fix the bug in a.py", "--yolo"]);
    assert!(out.status.success(), "{report}");
    assert!(report.get("status").is_none(), "{report}");
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn a_batch_task_that_changed_nothing_has_status_no_change() {
    let s = Scratch::new();
    s.write("a.py", "total = 1\n");
    let server = Loopback::routed(|_| crate::suite::agents::answer("Fixed."));
    let tasks = [json!({"id": "fix-1", "prompt": "Fix a.py", "workspace": "ws"})];
    let file = crate::suite::batch::tasks_file(&s, &tasks);
    let out = crate::suite::batch::batch(
        &s,
        &server,
        &file,
        &["--yolo", "-c", "model.check_outcome=true"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = crate::suite::batch::results(&s.root().join("tasks.out").join("results.jsonl"));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["status"], "no_change", "{}", lines[0]);
    let error = lines[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("changed no file"), "{error}");
    assert_eq!(server.requests().len(), 2, "sent back once");
}

fn prose(text: &str) -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

fn list_call() -> Reply {
    Reply::openai_sse(&[
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                   "function": {"name": "list_directory", "arguments": "{\"dir_path\": \".\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
}

const REQUIRED: [&str; 6] = [
    "-c",
    "model.first_answer_calls_a_tool=true",
    "-c",
    "tools.core=list_directory",
    "-o",
    "json",
];

#[test]
fn a_required_call_answered_in_prose_is_asked_again_with_the_requirement_restated() {
    let s = Scratch::new();
    s.write("a.txt", "a\n");
    let server = Loopback::start(vec![
        prose("You could list it."),
        list_call(),
        prose("a.txt"),
    ]);
    let mut all = vec!["-p", "What files are here?"];
    all.extend_from_slice(&REQUIRED);
    let out = openai(&s, &server, &all);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_out(&out)["response"], "a.txt");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let again = &requests[1].body;
    assert_eq!(again["tool_choice"], "required", "{again}");
    let messages = again["messages"].as_array().expect("messages");
    // The prose answer is dropped; the requirement is restated after the prompt.
    assert!(!again.to_string().contains("You could list it."), "{again}");
    let last = messages.last().expect("a message")["content"].to_string();
    assert!(last.contains("must call one of the tools"), "{last}");
    assert!(!requests[2]
        .body
        .to_string()
        .contains("must call one of the tools"));
}

#[test]
fn a_required_call_answered_in_prose_twice_ends_as_no_tool_call() {
    let s = Scratch::new();
    let server = Loopback::start(vec![prose("Use ls."), prose("Use ls, really.")]);
    let mut all = vec!["-p", "What files are here?"];
    all.extend_from_slice(&REQUIRED);
    let out = openai(&s, &server, &all);
    assert_eq!(out.status.code(), Some(56), "{}", stderr(&out));
    let report = json_out(&out);
    assert_eq!(report["error"]["type"], "NoToolCall", "{report}");
    assert_eq!(report["response"], "Use ls, really.");
    assert_eq!(server.requests().len(), 2);
}

/// An answer with one call of `name` over the OpenAI wire.
fn call_reply(name: &str, args: Value) -> Reply {
    Reply::openai_sse(&[
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "r1", "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
}

#[test]
fn a_llama_cpp_server_of_8192_tokens_gets_a_rename_claimed_but_not_made_sent_back_once() {
    let s = Scratch::new();
    s.write(
        "report.py",
        "def total(rows):\n    tmp = 0\n    for r in rows:\n        tmp += r\n    return tmp\n",
    );
    let rename = json!({"file_path": "report.py", "old_string": "tmp", "new_string": "lines", "allow_multiple": true});
    let server = Loopback::start(vec![
        prose("The variable has been renamed."),
        call_reply("replace", rename),
        prose("Renamed tmp to lines."),
    ]);
    server.route(
        "/props",
        Reply::json(
            200,
            &json!({"default_generation_settings": {"n_ctx": 8192}}),
        ),
    );
    // No --profile: the server's window chooses the small profile.
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "In report.py, rename the variable tmp to lines",
            "--yolo",
            "-o",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("using the small profile"),
        "{}",
        stderr(&out)
    );
    assert!(s.read("report.py").contains("lines += r"));
    let requests = server.requests();
    let chats: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 3);
    // The file was read before the first answer, so no call was required of it.
    assert!(
        chats[0]
            .body
            .get("tool_choice")
            .is_none_or(|c| c != "required"),
        "{}",
        chats[0].body
    );
    assert!(
        chats[1].body.to_string().contains(NOTE),
        "{}",
        chats[1].body
    );
    assert_eq!(json_out(&out)["response"], "Renamed tmp to lines.");
}
