//! SIGTERM to an interactive session: every process group it started, background ones
//! included, is killed and Troupe exits 143.

use std::process::Command;

use serde_json::json;

use super::term::Term;
use crate::common::processes::processes;
use crate::common::*;

/// `(pid, args)` of live processes whose arguments contain `needle`.
fn processes_with(needle: &str) -> Vec<(i32, String)> {
    processes()
        .into_iter()
        .filter(|(_, _, args)| args.contains(needle))
        .map(|(pid, _, args)| (pid, args))
        .collect()
}

#[test]
fn sigterm_ends_the_session_and_its_process_groups() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "run_shell_command",
            json!({"command": "sleep 1031 & sleep 1032", "is_background": true}),
        )]),
        turn(vec![text("Started it.")]),
    ];
    let t = Term::start(&s, &turns, &[], &["--yolo"]);
    t.line("start a server");
    t.wait_for("Started it.");
    t.wait_until_true("sleep 1031 running", || {
        !processes_with("sleep 1031").is_empty()
    });
    let script = s.root().join("responses.jsonl");
    let troupe: Vec<i32> = processes_with(&script.display().to_string())
        .into_iter()
        .filter(|(_, args)| args.contains("--fake-responses") && !args.starts_with("sh"))
        .filter(|(_, args)| {
            args.split_whitespace()
                .next()
                .is_some_and(|a| a.ends_with("troupe"))
        })
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(troupe.len(), 1, "{:?}", processes_with("--fake-responses"));
    let killed = Command::new("kill")
        .args(["-TERM", &troupe[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    t.wait_for("[troupe exited 143]");
    // `sleep 1031` is not bash's direct child's exec: only a group kill reaches it.
    t.wait_until_true("sleep 1031 and 1032 killed", || {
        processes_with("sleep 1031").is_empty() && processes_with("sleep 1032").is_empty()
    });
}

#[test]
fn sigterm_ends_a_running_shell_line_and_its_process_group() {
    let s = Scratch::new();
    let t = Term::start(&s, &[], &[], &["--yolo"]);
    // The user's own `!` line, still running when the signal comes; `sleep 1041` is a
    // background job of the line's bash, which only a kill of its group reaches.
    t.line("!sleep 1041 & sleep 1042");
    t.wait_until_true("sleep 1041 and 1042 running", || {
        !processes_with("sleep 1041").is_empty() && !processes_with("sleep 1042").is_empty()
    });
    let (_, pgid, _) = processes()
        .into_iter()
        .find(|(_, _, args)| args.contains("sleep 1042"))
        .expect("sleep 1042 is running");
    let troupe = t.troupe_pid();
    assert_ne!(
        pgid,
        processes()
            .into_iter()
            .find(|(pid, _, _)| *pid == troupe as i32)
            .map(|(_, g, _)| g)
            .expect("troupe is running"),
        "the line runs in a process group of its own"
    );
    let killed = Command::new("kill")
        .args(["-TERM", &troupe.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    t.wait_for("[troupe exited 143]");
    let left = crate::common::processes::survivors(Some(pgid), "sleep 104");
    assert!(left.is_empty(), "still running after SIGTERM: {left:?}");
}
