//! The actor runtime end to end: the binary on a scratch workspace with a scripted model.

use serde_json::json;

use crate::common::*;

#[test]
fn parallel_read_tools_then_answer() {
    let s = Scratch::new();
    s.write("src/app.py", "print('hi')\n");
    s.write("src/util.py", "X = 1\n");
    s.write("README.md", "# demo\n");
    let turns = [
        turn(vec![
            call("list_directory", json!({"dir_path": "."})),
            call("read_file", json!({"file_path": "src/app.py"})),
            call("glob", json!({"pattern": "**/*.py"})),
        ]),
        turn(vec![text("Done reading.")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "look around", "--yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(out["response"], "Done reading.");
    assert!(out["session_id"].as_str().is_some_and(|id| id.len() == 36));
    let tools = &out["stats"]["tools"];
    assert_eq!(tools["totalCalls"], 3);
    assert_eq!(tools["totalSuccess"], 3);
    assert_eq!(tools["totalFail"], 0);
    assert_eq!(tools["byName"]["read_file"]["count"], 1);
    assert_eq!(tools["byName"]["glob"]["success"], 1);
    assert!(tools["byName"]["list_directory"]["durationMs"].is_u64());

    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let first_call_ids: Vec<String> = requests[1]["contents"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["functionCall"]["id"].as_str().map(str::to_string))
        .collect();
    let responses = function_responses(&requests[1]);
    assert_eq!(responses.len(), 3);
    let ws = s.ws();
    assert_eq!(responses[0]["name"], "list_directory");
    assert_eq!(
        responses[0]["response"]["output"],
        format!(
            "Directory listing for {}:\n[DIR] src\nREADME.md (7 bytes)",
            ws.display()
        )
    );
    assert_eq!(responses[1]["name"], "read_file");
    assert_eq!(responses[1]["response"]["output"], "print('hi')\n");
    assert_eq!(responses[2]["name"], "glob");
    let glob_out = responses[2]["response"]["output"].as_str().unwrap();
    assert!(
        glob_out.starts_with(&format!(
            "Found 2 file(s) matching \"**/*.py\" within {}",
            ws.display()
        )),
        "{glob_out}"
    );
    assert!(glob_out.contains(&format!("{}/src/app.py", ws.display())));
    // Every response answers its call by id, in call order.
    for (resp, id) in responses.iter().zip(&first_call_ids) {
        assert_eq!(resp["id"].as_str().unwrap(), id);
    }
    assert!(first_call_ids[0].starts_with("list_directory_"));
    // The declarations went to the model.
    let names: Vec<&str> = requests[0]["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"read_file")
            && names.contains(&"glob")
            && names.contains(&"list_directory")
    );
}

#[test]
fn calls_of_one_turn_overlap() {
    // Five calls wait on a barrier of five: they pass only if all five run at once.
    let s = Scratch::new();
    let calls: Vec<_> = (0..5)
        .map(|_| {
            call(
                "test_barrier",
                json!({"group": "g", "parties": 5, "timeout_secs": 30}),
            )
        })
        .collect();
    let (out, proc) = s.run_json(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(out["stats"]["tools"]["totalSuccess"], 5, "{out}");
    for r in function_responses(&s.requests()[1]) {
        assert_eq!(r["response"]["output"], "barrier g passed");
    }
}

#[test]
fn a_panicking_tool_fails_alone_and_keeps_working() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let turns = [
        turn(vec![
            call("test_panic", json!({"message": "kaboom"})),
            call("read_file", json!({"file_path": "a.txt"})),
            call("test_panic", json!({"message": "later", "in_future": true})),
        ]),
        turn(vec![call("test_panic", json!({"panic": false}))]),
        turn(vec![text("survived")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(out["response"], "survived");
    let requests = s.requests();
    let first = function_responses(&requests[1]);
    assert_eq!(
        first[0]["response"]["error"],
        "Tool \"test_panic\" crashed: kaboom"
    );
    assert_eq!(first[1]["response"]["output"], "alpha\n");
    assert_eq!(
        first[2]["response"]["error"],
        "Tool \"test_panic\" crashed: later"
    );
    let second = function_responses(&requests[2]);
    assert_eq!(second[0]["response"]["output"], "no panic this time");
    assert_eq!(out["stats"]["tools"]["byName"]["test_panic"]["fail"], 2);
    assert_eq!(out["stats"]["tools"]["byName"]["test_panic"]["success"], 1);
}

#[test]
fn reads_outside_the_workspace_are_refused() {
    let s = Scratch::new();
    std::fs::write(s.root().join("outside"), "TOP SECRET\n").unwrap();
    std::os::unix::fs::symlink(s.root().join("outside"), s.ws().join("link")).unwrap();
    let turns = [
        turn(vec![
            call("read_file", json!({"file_path": "../outside"})),
            call("read_file", json!({"file_path": "link"})),
            call(
                "read_file",
                json!({"file_path": s.root().join("outside").to_str().unwrap()}),
            ),
        ]),
        turn(vec![text("refused")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(out["stats"]["tools"]["totalFail"], 3);
    let requests = s.requests();
    let responses = function_responses(&requests[1]);
    for r in &responses {
        let err = r["response"]["error"].as_str().unwrap();
        assert!(
            err.starts_with("Path not in workspace: Attempted path"),
            "{err}"
        );
        assert!(
            err.contains("resolves outside the allowed workspace directories"),
            "{err}"
        );
        assert!(r["response"].get("output").is_none());
    }
    let all = serde_json::to_string(&requests).unwrap();
    assert!(
        !all.contains("TOP SECRET"),
        "outside content reached the model"
    );
}

#[test]
fn unknown_tools_and_bad_params_get_precise_errors() {
    let s = Scratch::new();
    let turns = [
        turn(vec![
            call("read_fil", json!({"file_path": "x"})),
            call("read_file", json!({})),
            call("read_file", json!({"file_path": "x", "start_line": 0})),
            call("read_file", json!({"file_path": "missing.txt"})),
        ]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    let err = r[0]["response"]["error"].as_str().unwrap();
    assert!(
        err.starts_with("Tool \"read_fil\" not found. Did you mean one of: \"read_file\""),
        "{err}"
    );
    assert_eq!(
        r[1]["response"]["error"],
        "params must have required property 'file_path'"
    );
    assert_eq!(r[2]["response"]["error"], "params/start_line must be >= 1");
    assert_eq!(
        r[3]["response"]["error"],
        format!("File not found: {}/missing.txt", s.ws().display())
    );
}

#[test]
fn legacy_parameter_names_are_accepted() {
    let s = Scratch::new();
    s.write("d/f.txt", "1\n2\n3\n");
    let turns = [
        turn(vec![
            call(
                "read_file",
                json!({"absolute_path": s.ws().join("d/f.txt").to_str().unwrap(), "offset": 1, "limit": 1}),
            ),
            call("list_directory", json!({"path": "d"})),
        ]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    let out = r[0]["response"]["output"].as_str().unwrap();
    assert!(
        out.contains("use start_line: 3.") && out.ends_with("\n2"),
        "{out}"
    );
    assert!(r[1]["response"]["output"]
        .as_str()
        .unwrap()
        .ends_with("f.txt (6 bytes)"));
}

#[test]
fn script_errors_name_the_line() {
    let s = Scratch::new();
    let path = s.root().join("bad.jsonl");
    std::fs::write(&path, format!("{}\n{{not json\n", turn(vec![text("x")]))).unwrap();
    let out = s
        .command()
        .args(["-p", "go", "--fake-responses"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bad.jsonl:2: malformed JSON"),
        "{}",
        stderr(&out)
    );

    // Too few lines: the run ends with an error saying where the script ran out.
    let s = Scratch::new();
    s.write("a.txt", "a");
    let (out, proc) = s.run_json(
        &[turn(vec![call("read_file", json!({"file_path": "a.txt"}))])],
        &["-p", "go"],
    );
    assert_eq!(proc.status.code(), Some(1));
    let msg = out["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("No more mock responses for generateContentStream"),
        "{msg}"
    );
    assert!(msg.contains("ended after line 1"), "{msg}");
}

#[test]
fn stream_json_reports_each_event() {
    let s = Scratch::new();
    s.write("a.txt", "a\n");
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("all done")]),
    ];
    let out = s.run(&turns, &["-p", "go", "-o", "stream-json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events = stream_events(&out);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "init",
            "message",
            "tool_use",
            "tool_result",
            "message",
            "result"
        ]
    );
    assert_eq!(events[2]["tool_name"], "read_file");
    assert_eq!(events[3]["status"], "success");
    assert_eq!(events[3]["tool_id"], events[2]["tool_id"]);
    assert_eq!(events[4]["content"], "all done");
    assert_eq!(events[5]["status"], "success");
    assert_eq!(events[5]["stats"]["tool_calls"], 1);
}

#[test]
fn text_output_and_exit_status() {
    let s = Scratch::new();
    let out = s.run(&[turn(vec![text("plain answer")])], &["-p", "hi"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "plain answer\n");
    // Max turns: the loop stops and says so.
    let looping: Vec<_> = (0..3)
        .map(|_| turn(vec![call("list_directory", json!({"dir_path": "."}))]))
        .collect();
    let out = s.run(&looping, &["-p", "hi", "-c", "model.max_turns=2"]);
    assert_eq!(out.status.code(), Some(53));
    assert!(
        stderr(&out).contains("limit of 2 model turns"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn settings_errors_name_key_and_file() {
    let s = Scratch::new();
    std::fs::create_dir_all(s.ws().join(".troupe")).unwrap();
    std::fs::write(s.ws().join(".troupe/config.toml"), "[tools]\nbogus = 1\n").unwrap();
    let out = s.run(&[turn(vec![text("x")])], &["-p", "hi", "--skip-trust"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("unknown setting `tools.bogus`") && err.contains(".troupe/config.toml"),
        "{err}"
    );
    std::fs::remove_file(s.ws().join(".troupe/config.toml")).unwrap();
    let out = s.run(
        &[turn(vec![text("x")])],
        &["-p", "hi", "--approval-mode", "sometimes"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("--approval-mode: `sometimes` is not one of plan, default, auto_edit, yolo"),
        "{}",
        stderr(&out)
    );
    let out = s
        .bare_command()
        .args(["config", "-c", "model.max_turns=5"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("model.max_turns = 5  # flag -c model.max_turns=5"),
        "{text}"
    );
    assert!(
        text.contains("approval.mode = \"default\"  # default"),
        "{text}"
    );
}

#[test]
fn calls_writing_the_same_path_run_in_call_order() {
    // Two barrier calls of two parties: on different paths they meet and pass; on the
    // same path the second waits for the first, so the first times out alone.
    let s = Scratch::new();
    let different = vec![
        call(
            "test_barrier",
            json!({"group": "d", "parties": 2, "writes": "a.txt"}),
        ),
        call(
            "test_barrier",
            json!({"group": "d", "parties": 2, "writes": "b.txt"}),
        ),
    ];
    let same = vec![
        call(
            "test_barrier",
            json!({"group": "s", "parties": 2, "writes": "c.txt", "timeout_secs": 1}),
        ),
        call(
            "test_barrier",
            json!({"group": "s", "parties": 2, "writes": "./c.txt", "timeout_secs": 1}),
        ),
    ];
    let (out, proc) = s.run_json(
        &[turn(different), turn(same), turn(vec![text("ok")])],
        &["-p", "go"],
    );
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    for r in function_responses(&requests[1]) {
        assert_eq!(r["response"]["output"], "barrier d passed");
    }
    let serial = function_responses(&requests[2]);
    assert_eq!(
        serial[0]["response"]["error"],
        "barrier s timed out: the calls did not run at the same time"
    );
    // The second ran only after the first had given up (it then finds the first's
    // arrival still counted by the barrier and passes).
    assert_eq!(serial[1]["response"]["output"], "barrier s passed");
    assert_eq!(out["stats"]["tools"]["totalFail"], 1);
}

#[test]
fn piped_input_goes_ahead_of_the_prompt_and_a_silent_pipe_does_not_hang() {
    use std::io::Write;
    use std::process::Stdio;

    let s = Scratch::new();
    let script = s.script(&[turn(vec![text("seen")]), turn(vec![text("again")])]);
    let mut child = s
        .command()
        .args(["-p", "what failed?", "--fake-responses"])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"error: linker failed\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let first = &s.requests()[0];
    let contents = first["contents"].as_array().unwrap();
    let user = contents.last().unwrap()["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(user, "error: linker failed\n\n\nwhat failed?");

    // A pipe that stays open and silent: the run goes on with the prompt alone.
    let s = Scratch::new();
    let script = s.script(&[turn(vec![text("alone")])]);
    let mut child = s
        .command()
        .args(["-p", "just this", "--fake-responses"])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _open_stdin = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "alone\n");
    let user = s.requests()[0]["contents"][0]["parts"][0]["text"].clone();
    assert_eq!(user, "just this");

    // A file redirected to standard input is read whole (without the pipe's thread),
    // and /dev/null is nothing.
    let s = Scratch::new();
    s.write("notes.txt", "from a file\n");
    let script = s.script(&[turn(vec![text("read")]), turn(vec![text("none")])]);
    for (input, want) in [
        (s.ws().join("notes.txt"), "from a file\n\n\nsummarise"),
        (std::path::PathBuf::from("/dev/null"), "summarise"),
    ] {
        let out = s
            .command()
            .args(["-p", "summarise", "--fake-responses"])
            .arg(&script)
            .stdin(std::fs::File::open(&input).unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let requests = s.requests();
        let last = requests.last().unwrap()["contents"]
            .as_array()
            .unwrap()
            .clone();
        let user = last.last().unwrap()["parts"][0]["text"].clone();
        assert_eq!(user, want, "stdin from {}", input.display());
    }
}

#[test]
fn answers_keep_call_order_when_later_calls_finish_first() {
    // The first call sleeps while the reads after it finish: the Scheduler hands the
    // finished calls on in call order, so the reads wait for the first call only in
    // the answer, and every call is answered once, by id, in call order.
    // The reads must really finish before the sleep does: a sleep of 1 s is plenty on
    // an idle machine; on a loaded one the run is repeated with a longer sleep (a
    // bounded number of times) until they did, rather than failing on what the
    // machine allowed within one second.
    let s = Scratch::new();
    for i in 0..20 {
        s.write(&format!("f{i}.txt"), &format!("file {i}\n"));
    }
    let mut requested = Vec::new();
    for secs in [1, 4, 16] {
        let mut calls = vec![call("test_sleep", json!({"secs": secs}))];
        for i in 0..20 {
            calls.push(call("read_file", json!({"file_path": format!("f{i}.txt")})));
        }
        calls.push(call("read_file", json!({"file_path": "missing.txt"})));
        let turns = [turn(calls), turn(vec![text("done")])];
        let _ = std::fs::remove_file(s.requests_path());
        let out = s.run(&turns, &["-p", "go", "-o", "stream-json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let events = stream_events(&out);
        let ids = |kind: &str| -> Vec<String> {
            events
                .iter()
                .filter(|e| e["type"] == kind)
                .map(|e| e["tool_id"].as_str().unwrap().to_string())
                .collect()
        };
        let finished = ids("tool_result");
        requested = ids("tool_use");
        assert_eq!(requested.len(), 22);
        assert_eq!(finished.len(), 22);
        if finished.last() == requested.first() {
            break;
        }
        assert!(
            secs < 16,
            "the reads did not finish within a 16 s sleep: {finished:?}"
        );
    }
    let responses = function_responses(&s.requests()[1]);
    let answered: Vec<&str> = responses
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(answered, requested, "one response per call, in call order");
    assert_eq!(responses[0]["response"]["output"], "slept");
    assert_eq!(responses[1]["response"]["output"], "file 0\n");
    assert_eq!(responses[20]["response"]["output"], "file 19\n");
    assert!(
        responses[21]["response"]["error"].is_string(),
        "{}",
        responses[21]
    );
}

/// The session's threads, read by a shell command from `/proc` while the turn runs: the
/// SessionRecorder and the Corrector share one background arbiter, so a session with
/// both has two actix arbiters (that one and the Scheduler's), not one per actor.
#[test]
fn the_recorder_and_the_corrector_share_one_background_arbiter() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "run_shell_command",
            json!({"command": "cat /proc/$PPID/task/*/comm"}),
        )]),
        turn(vec![text("done")]),
    ];
    let proc = s.run(
        &turns,
        &[
            "-p",
            "threads",
            "--yolo",
            // The command looks at Troupe's own threads: outside the sandbox's world.
            "--sandbox",
            "off",
            "-c",
            "sessions.record=true",
            "-c",
            "edit.correction=true",
        ],
    );
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    let requests = s.requests();
    let answer = function_responses(requests.last().expect("a second request"))
        .first()
        .expect("the shell call's answer")
        .to_string();
    // Thread names are cut to 15 bytes: every arbiter reads `actix-rt|system`.
    let arbiters = answer.matches("actix-rt|system").count();
    assert_eq!(arbiters, 2, "{answer}");
    assert!(answer.contains("troupe-fs-0"), "{answer}");
}
