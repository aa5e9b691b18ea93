//! Ctrl+C: during a turn it cancels every running call and the prompt comes back; at
//! an empty prompt twice (or Ctrl+D) it leaves.

use serde_json::json;

use super::confirm::all_function_responses;
use super::term::Term;
use crate::common::*;

/// A `sleep` no other test starts, so the process check cannot be fooled.
const SLEEP_ARGS: [&str; 2] = ["sleep", "30.0417"];

/// Whether a process runs with exactly the argv of [`SLEEP_ARGS`].
fn marked_sleep_running() -> bool {
    let wanted: Vec<u8> = SLEEP_ARGS.join("\0").into_bytes();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|cmd| cmd.strip_suffix(b"\0").unwrap_or(&cmd) == wanted.as_slice())
}

#[test]
fn ctrl_c_cancels_a_hundred_running_calls_and_every_call_is_answered() {
    let s = Scratch::new();
    let mut calls: Vec<_> = (0..100)
        .map(|_| call("test_sleep", json!({"secs": 30})))
        .collect();
    calls.push(call(
        "run_shell_command",
        json!({"command": SLEEP_ARGS.join(" "), "description": "wait"}),
    ));
    let total = calls.len();
    let turns = [turn(calls), turn(vec![text("Picking up again.")])];
    let t = Term::start(&s, &turns, &[], &["--yolo"]);
    t.line("sleep a lot");
    t.wait_for(&format!("{total} running"));
    t.wait_until_true("the shell's sleep to start", marked_sleep_running);
    t.keys(&["C-c"]);
    let text = t.wait_for("Request cancelled.");
    assert!(
        text.contains(&format!(
            "● {total} tool calls: 0 succeeded, 0 failed, {total} cancelled"
        )),
        "{text}"
    );
    t.wait_prompt();
    assert!(
        !marked_sleep_running(),
        "a cancelled command's process survived"
    );
    t.line("go on");
    t.wait_for("Picking up again.");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let responses = all_function_responses(&requests[1]);
    assert_eq!(responses.len(), total, "one functionResponse per call");
    let call_ids: Vec<String> = requests[1]["contents"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["functionCall"]["id"].as_str().unwrap().to_string())
        .collect();
    for (response, id) in responses.iter().zip(&call_ids) {
        assert_eq!(response["id"].as_str().unwrap(), id);
        let error = response["response"]["error"].as_str().unwrap();
        assert!(error.starts_with("[Operation Cancelled]"), "{response}");
    }
    // Each test_sleep call stopped and said so; what it produced while stopping is kept.
    for response in &responses[..100] {
        assert_eq!(
            response["response"]["error"], "[Operation Cancelled] User cancelled tool execution.",
            "{response}"
        );
        assert_eq!(response["response"]["output"], "woken early", "{response}");
    }
}

#[test]
fn two_ctrl_c_at_an_empty_prompt_leave() {
    let s = Scratch::new();
    let t = Term::start(&s, &[], &[], &[]);
    // The status line under the prompt shows once the line editor reads keys.
    t.wait_for("% context left");
    t.keys(&["C-c"]);
    t.wait_for("Press Ctrl+C again");
    t.keys(&["C-c"]);
    let text = t.wait_for("[troupe exited 0]");
    assert!(text.contains("Goodbye."), "{text}");
}

#[test]
fn ctrl_d_leaves() {
    let s = Scratch::new();
    let t = Term::start(&s, &[], &[], &[]);
    t.keys(&["C-d"]);
    t.wait_for("[troupe exited 0]");
}
