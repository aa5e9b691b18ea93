//! gemini-cli 0.61's `wait_for_previous` and batching rule, and its `update_topic`
//! tool. The calls of one answer run in waves: contiguous calls that may run together
//! do; a call with `wait_for_previous: true` (or an `update_topic`) runs alone, after
//! every earlier call and before every later one; contiguous edits run after the calls
//! before them and before the calls after them. Order is observed through files a
//! `test_sleep` writes when it has finished and through barriers that open only when
//! calls overlap, never through how long anything took.

use serde_json::{json, Value};

use crate::common::*;

/// gemini-cli 0.61's core tools whose declarations are written out per model family
/// (`tools/definitions/coreTools.js`, each tool's `getSchema` override returns
/// `resolveToolDeclaration(...)`), so they never pass through the base class's
/// `addWaitForPreviousParameter` (`tools/tools.js`) and carry no `wait_for_previous`.
/// Every other declaration (`update_topic`, the background-process tools, subagents,
/// MCP tools, …) gets it from the base class. Checked by loading 0.61's classes in node:
/// `ReadFileTool.prototype.getSchema()` lists `file_path, start_line, end_line` only;
/// `new UpdateTopicTool(...).getSchema()` ends with `wait_for_previous`.
const WITHOUT: [&str; 14] = [
    "list_directory",
    "read_file",
    "grep_search",
    "glob",
    "replace",
    "write_file",
    "web_fetch",
    "run_shell_command",
    "write_todos",
    "read_many_files",
    "get_internal_docs",
    "enter_plan_mode",
    "exit_plan_mode",
    "ask_user",
];

fn output(response: &Value) -> &str {
    response["response"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("not a success: {response}"))
}

#[test]
fn declarations_carry_wait_for_previous_as_gemini_cli_declares_them() {
    let s = Scratch::new();
    let proc = s.run(&[turn(vec![text("ok")])], &["-p", "hi"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    let declarations = requests[0]["tools"][0]["functionDeclarations"]
        .as_array()
        .expect("declarations")
        .clone();
    let names: Vec<&str> = declarations
        .iter()
        .map(|d| d["name"].as_str().expect("name"))
        .collect();
    // (`get_internal_docs` only with its docs, `exit_plan_mode` only in plan mode,
    // `ask_user` only when a person answers.)
    let sometimes = ["get_internal_docs", "exit_plan_mode", "ask_user"];
    for core in WITHOUT.iter().filter(|n| !sometimes.contains(*n)) {
        assert!(names.contains(core), "{core} not declared: {names:?}");
    }
    for name in ["update_topic", "list_background_processes", "test_barrier"] {
        assert!(names.contains(&name), "{name} not declared: {names:?}");
    }
    // The system prompt tells the model what the parameter and the tool are for.
    let system = requests[0]["systemInstruction"].to_string();
    assert!(system.contains("`wait_for_previous: true`"), "{system}");
    assert!(system.contains("`update_topic`"), "{system}");
    for d in &declarations {
        let name = d["name"].as_str().expect("name");
        let properties = d["parametersJsonSchema"]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name} has no properties"));
        let declared = properties.get("wait_for_previous");
        if WITHOUT.contains(&name) {
            assert!(declared.is_none(), "{name} declares wait_for_previous");
            continue;
        }
        let declared = declared.unwrap_or_else(|| panic!("{name} lacks wait_for_previous"));
        assert_eq!(declared["type"], "boolean", "{name}");
        assert!(declared["description"].is_string(), "{name}");
        // Added after the tool's own properties, optional.
        assert_eq!(
            properties.keys().next_back().map(String::as_str),
            Some("wait_for_previous")
        );
        let required = d["parametersJsonSchema"]["required"].to_string();
        assert!(
            !required.contains("wait_for_previous"),
            "{name}: {required}"
        );
    }
}

#[test]
fn a_call_with_wait_for_previous_starts_after_every_earlier_call_finished() {
    // Two calls sleep and then write their marker; the reads that wait find both
    // markers. Had they started with the sleeps, the files would not exist yet.
    let s = Scratch::new();
    let ws = s.ws();
    let marker = |name: &str| ws.join(name).display().to_string();
    let calls = vec![
        call(
            "test_sleep",
            json!({"secs": 1, "finished_file": marker("a.done")}),
        ),
        call(
            "test_sleep",
            json!({"secs": 1, "finished_file": marker("b.done")}),
        ),
        call(
            "read_file",
            json!({"file_path": "a.done", "wait_for_previous": true}),
        ),
        call(
            "glob",
            json!({"pattern": "*.done", "wait_for_previous": true}),
        ),
    ];
    let proc = s.run(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(responses.len(), 4);
    assert_eq!(output(&responses[0]), "slept");
    assert_eq!(output(&responses[1]), "slept");
    // The read found the file (an empty one) instead of "File not found".
    assert!(
        responses[2]["response"].get("error").is_none(),
        "{}",
        responses[2]
    );
    let found = output(&responses[3]);
    assert!(
        found.contains("a.done") && found.contains("b.done"),
        "{found}"
    );
}

#[test]
fn the_calls_after_a_waiting_call_wait_for_it_and_run_together() {
    // [two barrier calls] [the sleep that waits] [a read, two barrier calls]: the
    // first two meet, the read after the waiting sleep finds its marker, and the calls
    // of the last wave meet each other (one says `wait_for_previous: false`).
    let s = Scratch::new();
    let done = s.ws().join("s.done").display().to_string();
    let calls = vec![
        call("test_barrier", json!({"group": "before", "parties": 2})),
        call("test_barrier", json!({"group": "before", "parties": 2})),
        call(
            "test_sleep",
            json!({"secs": 1, "finished_file": done, "wait_for_previous": true}),
        ),
        call("read_file", json!({"file_path": "s.done"})),
        call(
            "test_barrier",
            json!({"group": "after", "parties": 2, "wait_for_previous": false}),
        ),
        call("test_barrier", json!({"group": "after", "parties": 2})),
    ];
    let proc = s.run(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    assert_eq!(output(&r[0]), "barrier before passed");
    assert_eq!(output(&r[1]), "barrier before passed");
    assert_eq!(output(&r[2]), "slept");
    assert!(r[3]["response"].get("error").is_none(), "{}", r[3]);
    assert_eq!(output(&r[4]), "barrier after passed");
    assert_eq!(output(&r[5]), "barrier after passed");
}

#[test]
fn an_edit_starts_after_the_calls_before_it_and_the_calls_after_it_wait_for_it() {
    // The sleep writes e.txt empty when it ends; the edit after it writes "edited".
    // Run in that order, the file ends "edited"; run together, the sleep's late write
    // would have emptied it. The read after the edits sees both files written.
    let s = Scratch::new();
    let e = s.ws().join("e.txt").display().to_string();
    let calls = vec![
        call("test_sleep", json!({"secs": 1, "finished_file": e})),
        call(
            "write_file",
            json!({"file_path": "e.txt", "content": "edited"}),
        ),
        call(
            "write_file",
            json!({"file_path": "f.txt", "content": "other"}),
        ),
        call("read_many_files", json!({"include": ["e.txt", "f.txt"]})),
    ];
    let proc = s.run(
        &[turn(calls), turn(vec![text("ok")])],
        &["-p", "go", "--approval-mode", "yolo"],
    );
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(s.read("e.txt"), "edited");
    assert_eq!(s.read("f.txt"), "other");
    let r = function_responses(&s.requests()[1]);
    let read = r[3]["response"].to_string();
    assert!(read.contains("edited") && read.contains("other"), "{read}");
}

#[test]
fn tools_given_wait_for_previous_do_not_reject_it() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let calls = vec![
        call(
            "read_file",
            json!({"file_path": "a.txt", "wait_for_previous": false}),
        ),
        call(
            "list_directory",
            json!({"dir_path": ".", "wait_for_previous": true}),
        ),
        call(
            "grep_search",
            json!({"pattern": "alpha", "wait_for_previous": true}),
        ),
        // write_todos's schema says `additionalProperties: false`: the argument is
        // taken out before the tool's own validation.
        call(
            "write_todos",
            json!({"todos": [], "wait_for_previous": true}),
        ),
        call(
            "update_topic",
            json!({"strategic_intent": "Look around.", "wait_for_previous": true}),
        ),
    ];
    let proc = s.run(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    assert_eq!(r.len(), 5);
    for response in &r {
        assert!(response["response"].get("error").is_none(), "{response}");
    }
    assert_eq!(output(&r[0]), "alpha\n");
}

#[test]
fn update_topic_answers_with_gemini_clis_texts() {
    // The expected bytes follow gemini-cli 0.61's tools/topicTool.js: a title that is
    // not the current topic answers `Current topic: "<title>"\nTopic summary:
    // <summary or ...>` plus `\n\nStrategic Intent: <intent trimmed>`; the same title
    // again, or none, answers `Strategic Intent: <intent>` only. Titles are trimmed and
    // their line breaks made spaces (config/topicState.js). Checked by running 0.61's
    // own UpdateTopicTool in node on these three calls: the same bytes, and the same
    // returnDisplay as the stream-json output below.
    let s = Scratch::new();
    let first = vec![
        call(
            "update_topic",
            json!({"title": " Fix the\nparser ", "summary": "Read the code. Found the bug.",
                   "strategic_intent": "Patch the tokenizer."}),
        ),
        call(
            "update_topic",
            json!({"title": "Fix the parser", "summary": "ignored",
                   "strategic_intent": "Run the tests."}),
        ),
    ];
    let second = vec![call(
        "update_topic",
        json!({"title": "Ship it", "strategic_intent": "  Write the notes.  "}),
    )];
    let out = s.run(
        &[turn(first), turn(second), turn(vec![text("ok")])],
        &["-p", "go", "-o", "stream-json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = s.requests();
    let r = function_responses(&requests[1]);
    assert_eq!(
        output(&r[0]),
        "Current topic: \"Fix the parser\"\nTopic summary: Read the code. Found the bug.\n\nStrategic Intent: Patch the tokenizer."
    );
    assert_eq!(output(&r[1]), "Strategic Intent: Run the tests.");
    let r = function_responses(&requests[2]);
    assert_eq!(
        output(&r[0]),
        "Current topic: \"Ship it\"\nTopic summary: ...\n\nStrategic Intent: Write the notes."
    );
    // Its declaration: gemini-cli's parameter names, only the intent required.
    let declared = requests[0]["tools"][0]["functionDeclarations"]
        .as_array()
        .expect("declarations")
        .iter()
        .find(|d| d["name"] == "update_topic")
        .cloned()
        .expect("update_topic declared");
    let schema = &declared["parametersJsonSchema"];
    let keys: Vec<&String> = schema["properties"]
        .as_object()
        .expect("props")
        .keys()
        .collect();
    assert_eq!(
        keys,
        ["title", "summary", "strategic_intent", "wait_for_previous"]
    );
    assert_eq!(schema["required"], json!(["strategic_intent"]));
    // In stream-json, a tool_use and its tool_result with the shown text.
    let events = stream_events(&out);
    let uses: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_use" && e["tool_name"] == "update_topic")
        .collect();
    assert_eq!(uses.len(), 3);
    assert_eq!(uses[2]["parameters"]["title"], "Ship it");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool_id"] == uses[2]["tool_id"])
        .expect("tool_result");
    assert_eq!(result["status"], "success");
    assert_eq!(
        result["output"],
        "## 📂 Topic: **Ship it**\n\n**Summary:**\n...\n\n> [!STRATEGY]\n> **Intent:** Write the notes."
    );
}

#[test]
fn update_topic_runs_without_asking_and_requires_the_intent() {
    // Headless default mode refuses what needs approval; update_topic runs (a note,
    // gemini-cli's read-only policy allows it) and is refused without its intent.
    let s = Scratch::new();
    let calls = vec![
        call("update_topic", json!({"strategic_intent": "Start."})),
        call("update_topic", json!({"title": "No intent"})),
    ];
    let proc = s.run(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    assert_eq!(output(&r[0]), "Strategic Intent: Start.");
    let error = r[1]["response"]["error"].as_str().expect("an error");
    assert!(error.contains("strategic_intent"), "{error}");
}

#[test]
fn update_topic_runs_alone_where_the_model_put_it() {
    // gemini-cli moves update_topic to the front; Troupe runs it alone in its place
    // (docs/differences-from-gemini-cli.md): the calls before it meet each other, the
    // read after it finds the marker the sleep before it wrote, the answers keep the
    // model's order.
    let s = Scratch::new();
    let done = s.ws().join("t.done").display().to_string();
    let calls = vec![
        call("test_barrier", json!({"group": "t", "parties": 2})),
        call("test_sleep", json!({"secs": 1, "finished_file": done})),
        call("test_barrier", json!({"group": "t", "parties": 2})),
        call(
            "update_topic",
            json!({"title": "Next", "strategic_intent": "Go on."}),
        ),
        call("read_file", json!({"file_path": "t.done"})),
    ];
    let proc = s.run(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    let names: Vec<&str> = r
        .iter()
        .map(|x| x["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "test_barrier",
            "test_sleep",
            "test_barrier",
            "update_topic",
            "read_file"
        ]
    );
    assert_eq!(output(&r[0]), "barrier t passed");
    assert_eq!(output(&r[2]), "barrier t passed");
    assert_eq!(
        output(&r[3]),
        "Current topic: \"Next\"\nTopic summary: ...\n\nStrategic Intent: Go on."
    );
    assert!(r[4]["response"].get("error").is_none(), "{}", r[4]);
}

#[test]
fn the_repl_shows_a_topic_as_a_chapter_line() {
    use crate::suite::repl::term::Term;
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "update_topic",
            json!({"title": "Fix the parser", "summary": "Found the bug.",
                   "strategic_intent": "Patch the tokenizer."}),
        )]),
        turn(vec![call(
            "update_topic",
            json!({"strategic_intent": "Run the tests."}),
        )]),
        turn(vec![text("Chapter done.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.wait_prompt();
    t.line("go");
    let screen = t.wait_for("Chapter done.");
    assert!(screen.contains("📂 Fix the parser"), "{screen}");
    assert!(screen.contains("↳ Patch the tokenizer."), "{screen}");
    assert!(screen.contains("↳ Run the tests."), "{screen}");
    // The chapter replaces the call's usual `✓ update_topic(...)` line.
    assert!(!screen.contains("✓ update_topic"), "{screen}");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn a_subagent_is_not_offered_update_topic_and_cannot_call_it() {
    // gemini-cli's local-executor.js skips update_topic when it equips a subagent.
    use crate::common::loopback::Loopback;
    use crate::suite::agents::{answer, declared, invoke, parts, run, seen};
    let s = Scratch::new();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        if seen.first.contains("PARENT-TASK") {
            return match seen.rounds {
                0 => parts(json!([invoke("generalist", "CHILD: step")])),
                _ => answer("done"),
            };
        }
        match seen.rounds {
            0 => parts(json!([{"functionCall": {"name": "update_topic",
                "args": {"strategic_intent": "Mine now."}}}])),
            _ => parts(json!([{"functionCall": {"name": "complete_task",
                "args": {"result": {"response": "ok"}}}}])),
        }
    });
    let out = run(&s, &server, "PARENT-TASK: topic", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = server.requests();
    let parent = requests
        .iter()
        .find(|r| seen(&r.body).first.contains("PARENT-TASK"))
        .expect("the parent's request");
    assert!(declared(&parent.body).contains(&"update_topic".to_string()));
    let children: Vec<_> = requests
        .iter()
        .filter(|r| seen(&r.body).first.starts_with("CHILD"))
        .collect();
    assert!(children.len() >= 2, "{} child requests", children.len());
    assert!(!declared(&children[0].body).contains(&"update_topic".to_string()));
    let raw = seen(&children[1].body).raw;
    assert!(
        raw.contains("Unauthorized tool call: 'update_topic' is not available to this agent."),
        "{raw}"
    );
}

#[test]
fn clear_starts_the_topic_over_as_a_new_gemini_cli_session_does() {
    // gemini-cli's /clear starts a new session, whose topic state is reset
    // (config.js resetNewSessionState → setSessionId → topicState.reset()): the same
    // title after /clear opens a chapter again.
    use crate::suite::repl::term::Term;
    let s = Scratch::new();
    let topic = || {
        turn(vec![call(
            "update_topic",
            json!({"title": "Same", "strategic_intent": "Begin."}),
        )])
    };
    let turns = [
        topic(),
        turn(vec![text("First done.")]),
        topic(),
        turn(vec![text("Second done.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.wait_prompt();
    t.line("one");
    t.wait_for("First done.");
    t.line("/clear");
    t.wait_for("Conversation cleared.");
    t.line("two");
    t.wait_for("Second done.");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
    let requests = s.requests();
    let answers: Vec<String> = [&requests[1], &requests[3]]
        .iter()
        .map(|r| output(&function_responses(r)[0]).to_string())
        .collect();
    let opened = "Current topic: \"Same\"\nTopic summary: ...\n\nStrategic Intent: Begin.";
    assert_eq!(answers, [opened, opened]);
}
