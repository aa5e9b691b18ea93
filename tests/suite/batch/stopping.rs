//! A batch stopped by SIGINT keeps what is done and leaves the rest to the next run;
//! a task past its `timeout_s` ends `timeout` and disturbs no other.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::{json, Value};

use super::{batch, batch_command, results, tasks_file};
use crate::common::loopback::{Gate, Loopback};
use crate::common::{stderr, Scratch};
use crate::suite::agents::{answer, seen};

#[test]
fn sigint_cancels_the_running_tasks_and_keeps_the_done_ones() {
    let s = Scratch::new();
    // "done" answers at once; the two "slow" ones wait at a gate no third request
    // ever reaches, so they are running when the signal comes.
    let never = Gate::new(3);
    let g = never.clone();
    let server = Loopback::routed(move |body| {
        let first = seen(body).first;
        if first.starts_with("SLOW") {
            answer("too late").at_gate(&g)
        } else {
            answer("quick")
        }
    });
    let file = tasks_file(
        &s,
        &[
            json!({"id": "done", "prompt": "QUICK: answer", "workspace": "ws"}),
            json!({"id": "slow1", "prompt": "SLOW one", "workspace": "ws"}),
            json!({"id": "slow2", "prompt": "SLOW two", "workspace": "ws"}),
            json!({"id": "later", "prompt": "QUICK: never started", "workspace": "ws"}),
        ],
    );
    let mut child = batch_command(&s, &server, &file, &["-j", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut started = Vec::new();
    let mut ended = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let event: Value = serde_json::from_str(&line.expect("line")).expect("json line");
        match event["type"].as_str() {
            Some("task_started") => started.push(event["id"].as_str().unwrap_or("").to_string()),
            Some("task_ended") => ended.push(event["id"].as_str().unwrap_or("").to_string()),
            _ => {}
        }
        // The quick one is done and both slow ones are in their sessions.
        let slow = started.iter().filter(|id| id.starts_with("slow")).count();
        if (ended == ["done"] && slow == 2) || ended.len() > 1 {
            break;
        }
    }
    assert_eq!(ended, ["done"], "started {started:?}");
    // Both slow requests reach the gate: the tasks are mid-turn.
    let at_gate = || {
        server
            .requests()
            .iter()
            .filter(|r| seen(&r.body).first.starts_with("SLOW"))
            .count()
    };
    for _ in 0..3000 {
        if at_gate() == 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(at_gate(), 2, "the slow tasks' requests did not arrive");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("signal");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let lines = results(&s.root().join("tasks.out/results.jsonl"));
    let status = |id: &str| {
        lines
            .iter()
            .find(|l| l["id"] == id)
            .map(|l| l["status"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(status("done").as_deref(), Some("ok"));
    assert_eq!(status("slow1").as_deref(), Some("cancelled"));
    assert_eq!(status("slow2").as_deref(), Some("cancelled"));
    assert_eq!(
        status("later"),
        None,
        "a task never started has no line: {lines:?}"
    );
    assert!(!never.met());
}

#[test]
fn a_task_past_its_timeout_ends_timeout_and_the_others_finish() {
    let s = Scratch::new();
    let never = Gate::new(2);
    let g = never.clone();
    let server = Loopback::routed(move |body| {
        if seen(body).first.starts_with("STUCK") {
            answer("too late").at_gate(&g)
        } else {
            answer("on time")
        }
    });
    let file = tasks_file(
        &s,
        &[
            json!({"id": "stuck", "prompt": "STUCK forever", "workspace": "ws", "timeout_s": 1}),
            json!({"id": "fine", "prompt": "FINE", "workspace": "ws"}),
        ],
    );
    let out = batch(&s, &server, &file, &["-j", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = results(&s.root().join("tasks.out/results.jsonl"));
    let line = |id: &str| lines.iter().find(|l| l["id"] == id).cloned().expect("line");
    assert_eq!(line("stuck")["status"], "timeout");
    assert!(line("stuck")["error"]
        .as_str()
        .unwrap_or("")
        .contains("timeout_s"));
    assert_eq!(line("fine")["status"], "ok");
    assert_eq!(line("fine")["response"], "on time");
}
