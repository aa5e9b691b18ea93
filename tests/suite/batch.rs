//! `troupe batch`, tried as an evaluation run would use it: the real binary, a tasks
//! file, and a loopback Gemini API that answers each request by the task's prompt (so
//! the sessions may send in any order). Each test observes what happened — a gate only
//! four requests in flight together can pass, the server's peak, the results file, the
//! copies on disk, the requests of a second run — never how long it took.

mod atif;
mod options;
mod stopping;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::common::loopback::{Gate, Loopback, Reply};
use crate::common::{stderr, Scratch};
use crate::suite::agents::{answer, seen, tool};

/// The results file's lines.
pub fn results(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a results line is JSON"))
        .collect()
}

/// Writes the tasks file in the scratch root: one line per task.
pub fn tasks_file(s: &Scratch, tasks: &[Value]) -> PathBuf {
    let path = s.root().join("tasks.jsonl");
    let text: String = tasks.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&path, text).expect("tasks file");
    path
}

/// `troupe batch TASKS` against `server` with `extra` arguments.
pub fn batch(s: &Scratch, server: &Loopback, tasks: &Path, extra: &[&str]) -> Output {
    batch_command(s, server, tasks, extra)
        .output()
        .expect("run troupe batch")
}

pub fn batch_command(
    s: &Scratch,
    server: &Loopback,
    tasks: &Path,
    extra: &[&str],
) -> std::process::Command {
    let mut cmd = s.bare_command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "test-key")
        .arg("batch")
        .arg(tasks)
        .args([
            "-c",
            "model.retry.initial_delay_ms=1",
            "-c",
            "model.retry.max_delay_ms=5",
        ])
        .args(["--skip-trust", "--progress", "json"])
        .args(extra);
    cmd
}

/// Every file under `dir` (but `skip`) with its contents.
pub fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = walk(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_default();
            (p.strip_prefix(dir).expect("under dir").to_path_buf(), bytes)
        })
        .collect();
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The number in a task's prompt (`TASK-7: …` → 7).
fn task_number(first: &str) -> Option<usize> {
    first.strip_prefix("TASK-")?.split(':').next()?.parse().ok()
}

#[test]
fn twelve_tasks_four_at_a_time_one_failing_resumed_without_a_request() {
    let s = Scratch::new();
    s.write("notes.txt", "the notes\n");
    s.write("src/lib.py", "x = 1\n");
    let before = tree(&s.ws());
    let gate = Gate::new(4);
    let g = gate.clone();
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        match (task_number(&seen.first), seen.rounds) {
            (Some(12), _) => Reply::json(
                400,
                &json!({"error": {"code": 400, "message": "this task's request is refused", "status": "INVALID_ARGUMENT"}}),
            ),
            (Some(_), 0) => tool("read_file", json!({"file_path": "notes.txt"})).at_gate(&g),
            (Some(n), 1) => tool(
                "write_file",
                json!({"file_path": "out.txt", "content": format!("task {n}\n")}),
            ),
            (Some(n), _) => answer(&format!("answer {n}")),
            (None, _) => answer("unexpected request"),
        }
    });
    let tasks: Vec<Value> = (1..=12)
        .map(|n| json!({"id": format!("t{n}"), "prompt": format!("TASK-{n}: read the notes"), "workspace": "ws"}))
        .collect();
    let file = tasks_file(&s, &tasks);
    let out = batch(&s, &server, &file, &["-j", "4", "--yolo"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "one task failed: {}",
        stderr(&out)
    );
    assert!(
        gate.met(),
        "four sessions' requests were never in flight together"
    );
    assert!(
        server.peak_in_flight() <= 4,
        "{} requests in flight at once with -j 4",
        server.peak_in_flight()
    );
    let out_dir = s.root().join("tasks.out");
    let lines = results(&out_dir.join("results.jsonl"));
    assert_eq!(lines.len(), 12, "a line per task: {lines:?}");
    for line in &lines {
        let id = line["id"].as_str().expect("id");
        let n: usize = id[1..].parse().expect("number");
        if n == 12 {
            assert_eq!(line["status"], "error", "{line}");
            let error = line["error"].as_str().unwrap_or("");
            assert!(
                error.contains("400") && error.contains("refused"),
                "{error}"
            );
            continue;
        }
        assert_eq!(line["status"], "ok", "{line}");
        assert_eq!(line["response"], format!("answer {n}"), "{line}");
        assert_eq!(line["turns"], 3, "{line}");
        assert_eq!(line["tool_calls"], 2, "{line}");
        assert_eq!(line["tokens"]["input"], 300, "{line}");
        assert_eq!(
            line["diff_stats"],
            json!({"files_changed": 1, "insertions": 1, "deletions": 0})
        );
        let copy = PathBuf::from(line["workspace"].as_str().expect("workspace"));
        assert_eq!(copy, out_dir.join("workspaces").join(id));
        assert_eq!(
            std::fs::read_to_string(copy.join("out.txt")).expect("out.txt"),
            format!("task {n}\n")
        );
        let trajectory = PathBuf::from(line["trajectory"].as_str().expect("trajectory"));
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&trajectory).expect("read"))
            .expect("json");
        let calls: Vec<&str> = doc["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter_map(|s| s["tool_calls"].as_array())
            .flatten()
            .filter_map(|c| c["function_name"].as_str())
            .collect();
        assert_eq!(calls, ["read_file", "write_file"], "{doc}");
        assert_eq!(
            doc["steps"][0]["message"],
            format!("TASK-{n}: read the notes")
        );
    }
    atif::assert_valid(&walk(&out_dir.join("tasks")));
    // The given workspace is as it was.
    assert_eq!(tree(&s.ws()), before);

    // Again: the eleven done are skipped, only the failed one is asked for again.
    let asked_before = server.requests().len();
    let again = batch(&s, &server, &file, &["-j", "4", "--yolo"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    let asked: Vec<Option<usize>> = server.requests()[asked_before..]
        .iter()
        .map(|r| task_number(&seen(&r.body).first))
        .collect();
    assert!(
        !asked.is_empty() && asked.iter().all(|n| *n == Some(12)),
        "second run asked {asked:?}"
    );
    let lines = results(&out_dir.join("results.jsonl"));
    assert_eq!(lines.len(), 13);
    assert_eq!(lines[12]["id"], "t12");
    assert!(
        stderr(&again).contains("11 done before"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_bad_tasks_file_names_its_line_and_runs_nothing() {
    let s = Scratch::new();
    let server = Loopback::always(answer("never"));
    let file = tasks_file(
        &s,
        &[
            json!({"id": "a", "prompt": "p"}),
            json!({"id": "a", "prompt": "q"}),
        ],
    );
    let out = batch(&s, &server, &file, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("tasks.jsonl: line 2") && err.contains("earlier line"),
        "{err}"
    );
    assert!(server.requests().is_empty());
    let missing = s.root().join("none.jsonl");
    let out = batch(&s, &server, &missing, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("none.jsonl"), "{}", stderr(&out));
}

#[test]
fn a_task_in_a_missing_workspace_is_an_error_of_its_own() {
    let s = Scratch::new();
    let server = Loopback::routed(|_| answer("fine"));
    let file = tasks_file(
        &s,
        &[
            json!({"id": "gone", "prompt": "TASK-1: x", "workspace": "no-such-dir"}),
            json!({"id": "here", "prompt": "TASK-2: y", "workspace": "ws", "in_place": true}),
        ],
    );
    let out = batch(&s, &server, &file, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = results(&s.root().join("tasks.out/results.jsonl"));
    let by_id = |id: &str| lines.iter().find(|l| l["id"] == id).cloned().expect("line");
    let gone = by_id("gone");
    assert_eq!(gone["status"], "error");
    assert!(
        gone["error"]
            .as_str()
            .unwrap_or("")
            .contains("is not a directory"),
        "{gone}"
    );
    let here = by_id("here");
    assert_eq!(here["status"], "ok");
    assert_eq!(here["response"], "fine");
    // In place: the workspace itself, nothing to compare it with.
    assert_eq!(here["workspace"], json!(s.ws()));
    assert_eq!(here["diff_stats"], Value::Null);
}
