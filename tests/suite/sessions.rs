//! Sessions through the binary: recorded in gemini-cli 0.61's JSONL, listed, resumed
//! (each functionResponse exactly once, however often), imported from a file the real
//! gemini-cli wrote, resumed after `kill -9` in the middle of a batch, and refused when
//! the input is bad or another process holds the session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::gemini_wire::run_against;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn chats(s: &Scratch) -> PathBuf {
    s.home().join(".troupe/tmp/ws/chats")
}

fn session_files(s: &Scratch) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(chats(s))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("session-"))
    });
    files.sort();
    files
}

/// The contents of the last logged request.
fn last_contents(s: &Scratch) -> Vec<Value> {
    let requests = s.requests();
    requests.last().expect("a request")["contents"]
        .as_array()
        .expect("contents")
        .clone()
}

/// Every functionCall id answered exactly once, by the next user turn; returns how
/// many functionResponses each id got.
fn answered_once(contents: &[Value]) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (i, c) in contents.iter().enumerate() {
        let parts = c["parts"].as_array().expect("parts");
        for p in parts {
            if let Some(r) = p.get("functionResponse") {
                *counts
                    .entry(r["id"].as_str().unwrap_or_default().to_string())
                    .or_default() += 1;
            }
            if let Some(call) = p.get("functionCall") {
                let id = call["id"].as_str().expect("call id");
                let next = &contents[i + 1];
                assert_eq!(next["role"], "user", "a call is answered by the next turn");
                let n = next["parts"]
                    .as_array()
                    .expect("parts")
                    .iter()
                    .filter(|q| {
                        q.pointer("/functionResponse/id").and_then(Value::as_str) == Some(id)
                    })
                    .count();
                assert_eq!(n, 1, "call {id} answered {n} times in {contents:#?}");
            }
        }
    }
    counts
}

fn two_reads() -> Vec<Value> {
    vec![
        turn(vec![
            text("Reading."),
            call("read_file", json!({"file_path": "a.txt"})),
            call("read_file", json!({"file_path": "b.txt"})),
        ]),
        turn(vec![text("Both read.")]),
    ]
}

#[test]
fn record_list_and_resume_give_each_response_once() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("b.txt", "beta\n");
    let out = s.run(&two_reads(), &["-p", "read the two files", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let files = session_files(&s);
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with(".jsonl") && name.len() == "session-2026-11-23T08-51-2bf63e19.jsonl".len(),
        "{name}"
    );
    let recorded = std::fs::read_to_string(&files[0]).unwrap();
    let first: Value = serde_json::from_str(recorded.lines().next().unwrap()).unwrap();
    assert_eq!(first["kind"], "main");
    assert!(first["projectHash"].as_str().unwrap().len() == 64);
    let id = first["sessionId"].as_str().unwrap().to_string();

    let out = s.bare_command().arg("--list-sessions").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        stdout(&out),
        format!("\nAvailable sessions for this project (1):\n  1. read the two files (Just now) [{id}]\n")
    );

    for round in 1..=2 {
        let out = s.run(
            &[turn(vec![text("I read them.")])],
            &["--resume", "latest", "-p", "what did you do?"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let contents = last_contents(&s);
        assert_eq!(contents[0]["parts"][0]["text"], "read the two files");
        let counts = answered_once(&contents);
        assert_eq!(counts.len(), 2, "round {round}: {contents:#?}");
        assert!(
            counts.values().all(|n| *n == 1),
            "round {round}: {counts:?}"
        );
        let last = contents.last().unwrap();
        assert_eq!(last["parts"][0]["text"], "what did you do?");
        // The resumed session keeps its one file.
        assert_eq!(session_files(&s), files, "round {round}");
    }
    // The second resume also saw the first resume's exchange.
    let texts: Vec<String> = last_contents(&s)
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap().clone())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        texts.iter().filter(|t| *t == "what did you do?").count(),
        2,
        "{texts:?}"
    );
}

#[test]
fn bad_session_arguments_get_gemini_cli_messages() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let out = s.bare_command().arg("--list-sessions").output().unwrap();
    assert_eq!(stdout(&out), "No previous sessions found for this project.");
    let out = s.run(
        &two_reads(),
        &["-p", "read", "--yolo", "--session-id", "my-id_1"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = s.run(&two_reads(), &["-p", "read", "--session-id", "my-id_1"]);
    assert_eq!(out.status.code(), Some(42));
    assert_eq!(stderr(&out).trim_end(), "Error starting session: Session ID \"my-id_1\" already exists. Use --resume to resume it, or provide a different ID.");
    let out = s.run(&two_reads(), &["-p", "read", "--session-id", "bad id!"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Invalid session ID \"bad id!\": Only alphanumeric characters, dashes, and underscores are allowed."), "{}", stderr(&out));
    let out = s.run(&two_reads(), &["-p", "read", "--resume", "7"]);
    assert_eq!(out.status.code(), Some(42));
    let chats_dir = chats(&s).display().to_string();
    assert_eq!(
        stderr(&out).trim_end(),
        format!("Error resuming session: Invalid session identifier \"7\".\n  Searched for sessions in {chats_dir}.\n  Use --list-sessions to see available sessions, then use --resume {{number}}, --resume {{uuid}}, or --resume latest.")
    );
    let out = s.run(
        &two_reads(),
        &["-p", "read", "--resume", "1", "--session-id", "x"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("mutually exclusive"),
        "{}",
        stderr(&out)
    );
    let out = s
        .bare_command()
        .args(["--delete-session", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stderr(&out),
        "Invalid session identifier \"5\". Use --list-sessions to see available sessions."
    );
    let out = s
        .bare_command()
        .args(["--delete-session", "1"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "Deleted session 1: read (Just now)");
    assert!(session_files(&s).is_empty());
    let out = s
        .bare_command()
        .args(["--delete-session", "1"])
        .output()
        .unwrap();
    assert_eq!(stderr(&out), "No sessions found for this project.");
}

#[test]
fn a_corrupt_line_is_skipped_with_its_file_and_line() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("b.txt", "beta\n");
    let out = s.run(&two_reads(), &["-p", "read the two files", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = session_files(&s).remove(0);
    let recorded = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = recorded.lines().collect();
    lines.insert(3, "{\"id\":\"cut off");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = s.run(&[turn(vec![text("ok")])], &["-r", "-p", "again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "{}:4: skipped a corrupt session record",
            file.display()
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(answered_once(&last_contents(&s)).len(), 2);
}

#[test]
fn a_file_that_is_not_a_session_is_refused_and_left_alone() {
    let s = Scratch::new();
    let notes = s.write("notes.json", "{\"title\": \"my notes\"}\n");
    let out = s.run(
        &two_reads(),
        &["-p", "hi", "--session-file", notes.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a session file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.read("notes.json"), "{\"title\": \"my notes\"}\n");
    assert!(s.requests().is_empty(), "no model call");
    assert!(session_files(&s).is_empty());
}

#[test]
fn session_file_written_by_gemini_cli_resumes_without_duplicated_responses() {
    let s = Scratch::new();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sessions/");
    let original =
        std::fs::read_to_string(format!("{fixture}gemini-cli-0.61-session.jsonl")).unwrap();
    let copy = s.root().join("gemini-session.jsonl");
    std::fs::write(&copy, &original).unwrap();
    let out = s.run(
        &[turn(vec![text("Resumed answer.")])],
        &[
            "--session-file",
            copy.to_str().unwrap(),
            "-p",
            "What did you do?",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&copy).unwrap(),
        original,
        "the file is only read"
    );
    let theirs: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{fixture}gemini-cli-0.61-resume-request.json")).unwrap(),
    )
    .unwrap();
    // gemini-cli's request minus its environment turn text (Troupe sends it in the
    // system instruction) and minus its duplicated responses.
    let mut seen = std::collections::HashSet::new();
    let expected: Vec<Value> = theirs["contents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let parts: Vec<Value> = c["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| {
                    !p["text"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("<session_context>"))
                })
                .filter(|p| match p.pointer("/functionResponse/id") {
                    Some(id) => seen.insert(id.to_string()),
                    None => true,
                })
                .map(strip_signature)
                .collect();
            json!({"role": c["role"], "parts": parts})
        })
        .collect();
    let ours: Vec<Value> = last_contents(&s)
        .iter()
        .map(|c| json!({"role": c["role"], "parts": c["parts"].as_array().unwrap().iter().map(strip_signature).collect::<Vec<_>>()}))
        .collect();
    assert_eq!(ours, expected);
    // Imported as a new session in a file of its own.
    let files = session_files(&s);
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains(&format!("Imported session from {}", copy.display())));
}

fn strip_signature(part: &Value) -> Value {
    let mut part = part.clone();
    if let Some(o) = part.as_object_mut() {
        o.remove("thoughtSignature");
    }
    part
}

/// Starts a headless run whose model asks for `calls`; returns it running, with its
/// session file, once that file contains `written`.
// The child is returned running; every caller kills and waits for it.
#[allow(clippy::zombie_processes)]
fn start_batch(s: &Scratch, calls: Vec<Value>, written: &str) -> (std::process::Child, PathBuf) {
    let script = s.script(&[turn(calls), turn(vec![text("never")])]);
    let mut child = s
        .bare_command()
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "run the batch", "--yolo"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let started = Instant::now();
    loop {
        let file = session_files(s)
            .first()
            .cloned()
            .filter(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(written)));
        if let Some(file) = file {
            return (child, file);
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the session file never showed {written}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The text of the last part of a request's last content.
fn last_text(contents: &[Value]) -> &str {
    let parts = contents.last().and_then(|c| c["parts"].as_array());
    parts
        .and_then(|p| p.last())
        .and_then(|p| p["text"].as_str())
        .unwrap_or_default()
}

/// Starts a headless run whose model asks for `n` slow calls; returns once the batch
/// is recorded and a call of it runs (it created its started file).
fn start_slow_batch(s: &Scratch, n: usize) -> std::process::Child {
    s.write("a.txt", "alpha\n");
    let started = s.root().join("sleep-started");
    let args = json!({"secs": 60, "started_file": started.display().to_string()});
    let calls: Vec<Value> = (0..n).map(|_| call("test_sleep", args.clone())).collect();
    let mut child = start_batch(s, calls, "\"toolCalls\"").0;
    let waited = Instant::now();
    while !started.exists() {
        if waited.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no call of the batch started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn kill_9_during_a_batch_resumes_with_every_call_answered_once() {
    let s = Scratch::new();
    let mut child = start_slow_batch(&s, 100);
    child.kill().expect("kill -9");
    let _ = child.wait();
    for round in 1..=2 {
        let out = s.run(&[turn(vec![text("Resumed.")])], &["-r", "-p", "go on"]);
        assert!(out.status.success(), "round {round}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).contains("100 tool call(s) were interrupted"),
            round == 1,
            "the repair is written once: {}",
            stderr(&out)
        );
        let contents = last_contents(&s);
        let counts = answered_once(&contents);
        assert_eq!(counts.len(), 100);
        assert!(counts.values().all(|n| *n == 1));
        let responses = &contents[2]["parts"];
        assert!(responses[0]["functionResponse"]["response"]["error"]
            .as_str()
            .unwrap()
            .contains("interrupted"));
        // Then the interruption note and the new prompt join the responses' user
        // turn: roles alternate.
        let roles: Vec<&str> = contents
            .iter()
            .map(|c| c["role"].as_str().unwrap())
            .collect();
        assert!(roles.windows(2).all(|w| w[0] != w[1]), "{roles:?}");
        assert_eq!(last_text(&contents), "go on");
    }
    // The OpenAI-compatible wire: each tool_call answered by one `tool` message.
    let server = Loopback::always(Reply::openai_sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "fine"}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]));
    let base = format!("{}/v1", server.url);
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &base), ("OPENAI_API_KEY", "sk-test")],
        &["-m", "local-model", "-r", "-p", "and now?"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[0].body;
    let messages = body["messages"].as_array().expect("messages");
    let at = messages
        .iter()
        .position(|m| m["tool_calls"].as_array().is_some_and(|c| c.len() == 100))
        .expect("the batch's assistant message");
    let ids: Vec<&str> = messages[at]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let answers: Vec<&str> = messages[at + 1..at + 101]
        .iter()
        .map(|m| {
            assert_eq!(m["role"], "tool");
            m["tool_call_id"].as_str().unwrap()
        })
        .collect();
    assert_eq!(answers, ids);
    // The interruption note and the prompt that followed: one user message.
    assert_eq!(messages[at + 101]["role"], "user");
    let resumed = messages[at + 101]["content"].as_str().unwrap_or_default();
    assert!(
        resumed.starts_with(
            "(Note from Troupe, not from the user: your previous response was interrupted"
        ),
        "{resumed}"
    );
    assert!(resumed.ends_with("\ngo on"), "{resumed}");
    assert_eq!(messages.last().unwrap()["content"], "and now?");
}

/// A round's results are written as its calls finish: a run killed while a later call
/// still runs leaves the round's line unfinished. The next run ends that line before
/// its own records, skips it when loading, and answers every call once.
#[test]
fn a_run_killed_while_a_round_is_written_resumes_on_a_line_of_its_own() {
    let s = Scratch::new();
    let lines: String = (0..100)
        .map(|i| format!("{i:03} {}\n", "y".repeat(36)))
        .collect();
    s.write("big.txt", &lines);
    let mut calls: Vec<Value> = (0..70)
        .map(|_| call("read_file", json!({"file_path": "big.txt"})))
        .collect();
    calls.push(call("test_sleep", json!({"secs": 60})));
    // The reads' results reach the file while the sleep still runs.
    let (mut child, file) = start_batch(&s, calls, "\"status\":\"success\"");
    child.kill().expect("kill -9");
    let _ = child.wait();
    let killed = std::fs::read_to_string(&file).expect("session file");
    assert!(!killed.ends_with('\n'), "the round's line is unfinished");

    let out = s.run(&[turn(vec![text("Resumed.")])], &["-r", "-p", "go on"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let contents = last_contents(&s);
    let counts = answered_once(&contents);
    assert_eq!(counts.len(), 71);
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
    assert_eq!(last_text(&contents), "go on");
    // Only the killed run's unfinished line is not JSON, and nothing was appended to
    // it: the next run's records are lines of their own.
    let partial = killed.rsplit('\n').next().unwrap_or_default();
    let resumed = std::fs::read_to_string(&file).expect("session file");
    let bad: Vec<&str> = resumed
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .collect();
    assert!(bad == [partial], "{} lines are not JSON", bad.len());
}

#[test]
fn a_session_open_in_another_process_is_refused() {
    let s = Scratch::new();
    let mut child = start_slow_batch(&s, 1);
    let out = s.run(
        &[turn(vec![text("x")])],
        &["--resume", "latest", "-p", "hi"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is in use by another Troupe process (pid "),
        "{}",
        stderr(&out)
    );
    let before = std::fs::read_to_string(&session_files(&s)[0]).unwrap();
    child.kill().expect("kill");
    let _ = child.wait();
    assert_eq!(
        std::fs::read_to_string(&session_files(&s)[0]).unwrap(),
        before,
        "nothing interleaved"
    );
    let out = s.run(
        &[turn(vec![text("x")])],
        &["--resume", "latest", "-p", "hi"],
    );
    assert!(
        out.status.success(),
        "a killed holder leaves no stale lock: {}",
        stderr(&out)
    );
}

#[test]
fn retention_keeps_the_newest_and_never_the_current() {
    let s = Scratch::new();
    for i in 0..3 {
        let out = s.run(&[turn(vec![text("ok")])], &["-p", &format!("prompt {i}")]);
        assert!(out.status.success());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(session_files(&s).len(), 3);
    let out = s.run(
        &[turn(vec![text("ok")])],
        &["-r", "1", "-p", "again", "-c", "sessions.max_count=2"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = s.bare_command().arg("--list-sessions").output().unwrap();
    let list = stdout(&out);
    assert!(list.contains("(2):"), "{list}");
    assert!(
        list.contains("prompt 0"),
        "the resumed (current) session stays: {list}"
    );
    assert!(list.contains("prompt 2"), "the newest stays: {list}");
}

/// Sets a file's modification time `days` days back.
fn age_file(path: &std::path::Path, days: u64) {
    let old = std::time::SystemTime::now() - Duration::from_secs(days * 86_400);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open to age");
    file.set_modified(old).expect("set mtime");
}

/// The default age limit (30 days) deletes a session whose file is older, and only
/// that: a session in date, a session whose newer file (same id) is in date, and an
/// old file that is not a session all stay. (A start reads only the expired files.)
#[test]
fn retention_by_age_deletes_only_expired_sessions() {
    let s = Scratch::new();
    for i in 0..3 {
        let out = s.run(&[turn(vec![text("ok")])], &["-p", &format!("prompt {i}")]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let files = session_files(&s);
    assert_eq!(files.len(), 3);
    let by_prompt = |n: &str| -> PathBuf {
        files
            .iter()
            .find(|f| std::fs::read_to_string(f).unwrap().contains(n))
            .expect("a session of that prompt")
            .clone()
    };
    let (expired, twinned, fresh) = (
        by_prompt("prompt 0"),
        by_prompt("prompt 1"),
        by_prompt("prompt 2"),
    );
    // The session of "prompt 1" also has a newer file (what `--list-sessions` shows).
    let name = twinned.file_name().unwrap().to_string_lossy().into_owned();
    let short = name.trim_end_matches(".jsonl").rsplit('-').next().unwrap();
    let twin = chats(&s).join(format!("session-2099-01-01T00-00-{short}.jsonl"));
    std::fs::copy(&twinned, &twin).unwrap();
    let not_a_session = chats(&s).join("session-2020-01-01T00-00-deadbeef.jsonl");
    std::fs::write(&not_a_session, "not json\n").unwrap();
    for old in [&expired, &twinned, &not_a_session] {
        age_file(old, 40);
    }

    let out = s.run(&[turn(vec![text("ok")])], &["-p", "prompt 3"]);
    assert!(out.status.success(), "{}", stderr(&out));

    assert!(!expired.exists(), "the expired session is deleted");
    for kept in [&twinned, &twin, &fresh, &not_a_session] {
        assert!(kept.exists(), "{} stays", kept.display());
    }
    let out = s.bare_command().arg("--list-sessions").output().unwrap();
    let list = stdout(&out);
    assert!(list.contains("(3):"), "{list}");
    assert!(!list.contains("prompt 0"), "{list}");
}

/// The signals a process catches (`SigCgt` of /proc/PID/status), as a bit mask.
fn caught_signals(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or(0)
}

#[test]
fn a_session_file_that_is_not_a_regular_file_is_refused() {
    let s = Scratch::new();
    let fifo = s.root().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let dir = s.root().join("a-directory");
    std::fs::create_dir(&dir).unwrap();
    for path in [std::path::Path::new("/dev/zero"), &fifo, &dir] {
        let (status, _, err) = s.run_within(
            &two_reads(),
            &["-p", "hi", "--session-file", path.to_str().unwrap()],
            Duration::from_secs(30),
        );
        assert_eq!(status.code(), Some(42), "{}: {err}", path.display());
        assert!(
            err.contains(&format!(
                "Error importing session from file: {} is not a regular file",
                path.display()
            )),
            "{err}"
        );
    }
    assert!(s.requests().is_empty(), "no model call");
    assert!(session_files(&s).is_empty());
}

#[test]
fn a_line_that_is_not_utf8_is_skipped_with_a_warning_on_resume() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("b.txt", "beta\n");
    let out = s.run(&two_reads(), &["-p", "read the two files", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = session_files(&s).remove(0);
    let recorded = std::fs::read(&file).unwrap();
    let mut lines: Vec<&[u8]> = recorded.split(|b| *b == b'\n').collect();
    // Before the first user message (the listing reads the head) and after it.
    let bad: &[u8] = b"{\"id\":\"x\xff\xfe\",\"type\":\"user\",\"content\":[{\"text\":\"\xc3\"}]}";
    lines.insert(1, bad);
    lines.insert(4, bad);
    std::fs::write(&file, lines.join(&b'\n')).unwrap();
    let out = s.run(&[turn(vec![text("ok")])], &["-r", "-p", "again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for line in [2, 5] {
        assert!(
            stderr(&out).contains(&format!(
                "{}:{line}: skipped a corrupt session record",
                file.display()
            )),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(answered_once(&last_contents(&s)).len(), 2);
}

#[test]
fn a_long_resume_ends_on_sigterm_and_sigint_with_128_plus_the_signal() {
    let s = Scratch::new();
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = session_files(&s).remove(0);
    let mut records = std::fs::read_to_string(&file).unwrap();
    for i in 0..100_000 {
        records.push_str(&format!(
            "{{\"id\":\"u{i}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"type\":\"user\",\"content\":[{{\"text\":\"question {i}\"}}]}}\n{{\"id\":\"g{i}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"type\":\"gemini\",\"content\":\"answer {i}\",\"thoughts\":[],\"tokens\":{{\"input\":1,\"output\":1,\"cached\":0,\"thoughts\":0,\"tool\":0,\"total\":2}},\"model\":\"m\"}}\n"
        ));
    }
    std::fs::write(&file, records).unwrap();
    for (signal, number) in [("TERM", libc::SIGTERM), ("INT", libc::SIGINT)] {
        let child = s.spawn_logged(&[turn(vec![text("ok")])], &["-r", "-p", "x"]);
        let pid = child.id();
        // Sent once the process is ready to honour it (it catches the signal).
        let bit = 1u64 << (number - 1);
        let started = Instant::now();
        while caught_signals(pid) & bit == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "SIG{signal} never caught"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let sent = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .expect("kill");
        assert!(sent.success());
        let (status, _, err) = s.wait_within(child, Duration::from_secs(20));
        assert_eq!(status.code(), Some(128 + number), "SIG{signal}: {err}");
    }
}
