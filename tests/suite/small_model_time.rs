//! The turn time limit (issue 47): a turn cut by it keeps what the model had streamed
//! and says what was cut and why; the limit follows the server's measured speed
//! (`model.fit_turn_time_limit`), and a batch task's own `timeout_s` turns it off.

use std::time::Duration;

use serde_json::json;

use super::openai_wire::{chunk, openai};
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

/// An answer that streams `text`, then stalls for a minute before it ends.
fn stalled_answer(text: &str) -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({"content": " and the rest"}), None),
        chunk(json!({}), Some("stop")),
    ])
    .stall_before_last(Duration::from_secs(60))
}

#[test]
fn a_turn_cut_by_its_time_limit_keeps_what_was_streamed_and_says_what_was_cut() {
    let s = Scratch::new();
    let server = Loopback::start(vec![stalled_answer("The constant is 0.2")]);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "What is TAX_RATE?",
            "-o",
            "json",
            "-c",
            "model.turn_time_limit_secs=2",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = json_out(&out);
    let response = report["response"].as_str().unwrap_or_default();
    assert!(response.starts_with("The constant is 0.2"), "{report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("time limit of 2 s"), "{message}");
    assert!(
        message.contains("in the middle of the model's answer"),
        "{message}"
    );
    assert!(message.contains("kept"), "{message}");

    // Text mode prints what was streamed, and says why it stopped on stderr.
    let s = Scratch::new();
    let server = Loopback::start(vec![stalled_answer("The constant is 0.2")]);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "What is TAX_RATE?",
            "-c",
            "model.turn_time_limit_secs=2",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).starts_with("The constant is 0.2"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("in the middle of the model's answer"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_turn_cut_while_a_tool_runs_names_the_tool() {
    let s = Scratch::new();
    let (value, out) = s.run_json(
        &[
            turn(vec![call(
                "run_shell_command",
                json!({"command": "sleep 60"}),
            )]),
            turn(vec![text("never asked")]),
        ],
        &["-p", "wait", "--yolo", "-c", "model.turn_time_limit_secs=2"],
    );
    assert!(!out.status.success(), "{value}");
    let message = value["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("while run_shell_command ran"), "{message}");
}

#[test]
fn fitted_to_the_servers_speed_the_first_answer_is_not_cut_and_the_limit_grows() {
    let s = Scratch::new();
    s.write("a.txt", "a\n");
    let list = Reply::openai_sse(&[
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                   "function": {"name": "list_directory", "arguments": "{\"dir_path\": \".\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
    .delayed(Duration::from_secs(2));
    let server = Loopback::start(vec![list, stalled_answer("a.txt is")]);
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "What files are here?",
            "-o",
            "json",
            "-c",
            "model.turn_time_limit_secs=1",
            "-c",
            "model.fit_turn_time_limit=true",
            "-c",
            "tools.core=list_directory",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // The first answer, slower than the limit, was not cut: its call ran and the
    // model was asked again.
    assert_eq!(server.requests().len(), 2);
    let report = json_out(&out);
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("fitted to the server's speed"),
        "{message}"
    );
    assert!(
        message.contains("in the middle of the model's answer"),
        "{message}"
    );
    assert!(
        report["response"]
            .as_str()
            .unwrap_or_default()
            .starts_with("a.txt is"),
        "{report}"
    );
}

#[test]
fn a_batch_task_with_its_own_timeout_has_no_turn_limit() {
    let s = Scratch::new();
    s.write("a.txt", "a\n");
    let server =
        Loopback::routed(|_| crate::suite::agents::answer("done").delayed(Duration::from_secs(2)));
    let tasks = [
        json!({"id": "own", "prompt": "What is here?", "workspace": "ws", "timeout_s": 60}),
        json!({"id": "none", "prompt": "What is here?", "workspace": "ws"}),
    ];
    let file = crate::suite::batch::tasks_file(&s, &tasks);
    let out =
        crate::suite::batch::batch(&s, &server, &file, &["-c", "model.turn_time_limit_secs=1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = crate::suite::batch::results(&s.root().join("tasks.out").join("results.jsonl"));
    let status = |id: &str| {
        let line = lines.iter().find(|l| l["id"] == id).expect("a line");
        (line["status"].clone(), line["error"].clone())
    };
    assert_eq!(status("own").0, "ok", "{lines:?}");
    let (none, error) = status("none");
    assert_eq!(none, "error", "{lines:?}");
    assert!(error.to_string().contains("time limit of 1 s"), "{error}");
}
