//! A task's own fields and the batch's flags: `max_turns`, `model`, `--worktree`, and
//! `model.max_concurrent_requests` bounding the requests of the whole pool.

use std::process::Command;

use serde_json::json;

use super::{batch, results, tasks_file};
use crate::common::loopback::{Gate, Loopback};
use crate::common::{stderr, Scratch};
use crate::suite::agents::{answer, seen, tool};

#[test]
fn a_tasks_own_max_turns_and_model_apply_to_it_alone() {
    let s = Scratch::new();
    s.write("a.txt", "a\n");
    // Every request of "LOOP" asks for another read: only its turn limit ends it.
    let server = Loopback::routed(|body| {
        if seen(body).first.starts_with("LOOP") {
            tool("read_file", json!({"file_path": "a.txt"}))
        } else {
            answer("fine")
        }
    });
    let file = tasks_file(
        &s,
        &[
            json!({"id": "limited", "prompt": "LOOP forever", "workspace": "ws", "max_turns": 2}),
            json!({"id": "pro", "prompt": "PRO: answer", "workspace": "ws", "model": "gemini-2.5-pro"}),
        ],
    );
    let out = batch(&s, &server, &file, &["-j", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = results(&s.root().join("tasks.out/results.jsonl"));
    let line = |id: &str| lines.iter().find(|l| l["id"] == id).cloned().expect("line");
    assert_eq!(line("limited")["status"], "max_turns", "{lines:?}");
    assert_eq!(line("limited")["turns"], 2);
    assert_eq!(line("pro")["status"], "ok");
    let paths: Vec<(String, String)> = server
        .requests()
        .iter()
        .map(|r| (seen(&r.body).first, r.path.clone()))
        .collect();
    for (first, path) in &paths {
        let model = if first.starts_with("PRO") {
            "gemini-2.5-pro"
        } else {
            "gemini-2.5-flash"
        };
        assert!(
            path.contains(&format!("models/{model}:")),
            "{first}: {path}"
        );
    }
}

#[test]
fn the_request_limit_holds_for_the_whole_pool() {
    let s = Scratch::new();
    let gate = Gate::new(2);
    let g = gate.clone();
    let server = Loopback::routed(move |_| answer("ok").at_gate(&g));
    let tasks: Vec<_> = (1..=6)
        .map(|n| json!({"id": format!("t{n}"), "prompt": format!("TASK-{n}: go"), "workspace": "ws"}))
        .collect();
    let file = tasks_file(&s, &tasks);
    let out = batch(
        &s,
        &server,
        &file,
        &["-j", "6", "-c", "model.max_concurrent_requests=2"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(gate.met(), "two requests were never in flight together");
    assert_eq!(
        server.peak_in_flight(),
        2,
        "six sessions, two request slots"
    );
    // Six sessions ran at once all the same.
    let most = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "task_started")
        .filter_map(|e| e["running"].as_u64())
        .max();
    assert!(most.is_some_and(|m| m > 2), "running at most {most:?}");
}

#[test]
fn with_worktree_a_git_workspace_gets_a_worktree_and_stays_as_it_was() {
    let s = Scratch::new();
    s.write("README.md", "hello\n");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(s.ws())
            .env("HOME", s.home())
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    git(&["add", "README.md"]);
    git(&["commit", "-qm", "one"]);
    let server = Loopback::routed(|body| {
        if seen(body).rounds == 0 {
            tool(
                "write_file",
                json!({"file_path": "new.txt", "content": "made in the worktree\n"}),
            )
        } else {
            answer("wrote it")
        }
    });
    let file = tasks_file(
        &s,
        &[json!({"id": "w", "prompt": "TASK-1: write", "workspace": "ws"})],
    );
    let out = batch(&s, &server, &file, &["--worktree", "--yolo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = results(&s.root().join("tasks.out/results.jsonl"));
    let copy = std::path::PathBuf::from(lines[0]["workspace"].as_str().expect("workspace"));
    // A worktree: its `.git` is a file pointing at the repository.
    assert!(
        copy.join(".git").is_file(),
        "{} is no worktree",
        copy.display()
    );
    assert_eq!(
        std::fs::read_to_string(copy.join("new.txt")).expect("written"),
        "made in the worktree\n"
    );
    assert!(!s.ws().join("new.txt").exists());
    assert_eq!(
        git(&["status", "--porcelain"]),
        "",
        "the repository's own tree is untouched"
    );
    assert!(git(&["worktree", "list"]).contains("tasks.out/workspaces/w"));
    assert_eq!(lines[0]["diff_stats"]["files_changed"], 1, "{}", lines[0]);
}
