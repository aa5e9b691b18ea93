//! A session's life from start to shutdown: `session/close` (of 50 sessions, each
//! with an MCP server) leaves no thread and no child process of troupe behind, nor
//! does a start that fails half way; the SessionStart hook's `additionalContext`
//! reaches the first model request of an ACP session; `--resume` fires SessionStart
//! with source `resume`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;
use crate::suite::acp::Editor;
use crate::suite::mcp::{configure, server};

/// How long the counts get to come back down after the last close.
const SETTLE: Duration = Duration::from_secs(30);

/// The `troupe --acp` serving scratch `s`: the process named troupe whose cwd is its
/// workspace (by name: a rebuild may have replaced the binary it runs).
fn troupe_pid(s: &Scratch) -> u32 {
    let ws = s.ws();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|pid| {
                let dir = PathBuf::from(format!("/proc/{pid}"));
                std::fs::read_to_string(dir.join("comm")).is_ok_and(|c| c.trim() == "troupe")
                    && std::fs::read_link(dir.join("cwd")).is_ok_and(|p| p == ws)
            });
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < deadline, "no troupe process in {ws:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `Threads:` of `/proc/<pid>/status`, less the threads of the `blocking` crate's
/// pool ([`POOL`]).
///
/// That pool is process-wide and not a session's: the ACP crate's stdio transport
/// reads stdin and writes stdout on it, it grows when those overlap and its threads
/// never exit (they stop only above `BLOCKING_MAX_THREADS`), so 50 sessions' worth of
/// requests may leave it a thread larger than one session's did.
fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let all: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("Threads: line");
    let pool = thread_names(pid)
        .iter()
        .filter(|n| n.starts_with(POOL))
        .count();
    all.saturating_sub(pool)
}

/// The name prefix of the `blocking` crate's threads.
const POOL: &str = "blocking-";

/// The names of `pid`'s threads, for a failure's message.
fn thread_names(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect();
    names.sort();
    names
}

/// The processes whose parent is `pid` (zombies included: an unreaped child leaks too).
fn children(pid: u32) -> usize {
    let parent = pid.to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                return false;
            };
            // pid (comm) state ppid ...: split after the last ')'.
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.split_whitespace().nth(1) == Some(&parent))
        })
        .count()
}

/// `(threads, children)` once they are at most `limit`, or the last reading after
/// `within` (bounded polling: the threads of a stopped arbiter end just after it).
fn settle(pid: u32, limit: (usize, usize), within: Duration) -> (usize, usize) {
    let deadline = Instant::now() + within;
    loop {
        let now = (threads(pid), children(pid));
        if (now.0 <= limit.0 && now.1 <= limit.1) || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn new_session(ed: &mut Editor, s: &Scratch) -> String {
    let new = ed.call(
        "session/new",
        json!({"cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    new["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{new}"))
        .to_string()
}

fn close_session(ed: &mut Editor, sid: &str) -> Value {
    ed.call("session/close", json!({"sessionId": sid}))
}

#[test]
fn fifty_sessions_closed_leave_no_thread_and_no_mcp_server_behind() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], ""));
    let mut ed = Editor::start(&s, &[turn(vec![text("unused")])], &[]);
    let init = ed.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let pid = troupe_pid(&s);
    let mut closes = Vec::new();

    // The first session starts what lives as long as the process (the log writer, the
    // runtime's blocking threads): the counts after it are the baseline.
    let first = new_session(&mut ed, &s);
    assert_eq!(children(pid), 1, "the MCP fixture runs as troupe's child");
    closes.push(close_session(&mut ed, &first));
    let baseline = settle(pid, (usize::MAX, 0), SETTLE);
    // Threads a closed session ends may still be on their way out: the lowest of a
    // few readings.
    let baseline = (0..5)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(50));
            (threads(pid), children(pid))
        })
        .fold(baseline, |a, b| (a.0.min(b.0), a.1.min(b.1)));
    let baseline_names = thread_names(pid);

    let sids: Vec<String> = (0..50).map(|_| new_session(&mut ed, &s)).collect();
    let open = (threads(pid), children(pid));
    assert!(open.1 >= 50, "every session runs its MCP server: {open:?}");
    for sid in &sids {
        closes.push(close_session(&mut ed, sid));
    }
    let after = settle(pid, baseline, SETTLE);
    eprintln!("threads/children: baseline {baseline:?}, 50 open {open:?}, all closed {after:?}");
    assert!(
        after.0 <= baseline.0 && after.1 <= baseline.1,
        "after 50 sessions were closed troupe has {after:?} (threads, children): {:?}; after the first one {baseline:?}: {baseline_names:?}",
        thread_names(pid)
    );
    for close in &closes {
        assert!(close.get("result").is_some(), "{close}");
    }
    assert_eq!(
        init["result"]["agentCapabilities"]["sessionCapabilities"]["close"],
        json!({}),
        "{init}"
    );
    // A closed session is gone; closing it again is an error.
    assert!(close_session(&mut ed, &first).get("error").is_some());
    assert!(ed.close().success());
}

#[test]
fn sessions_that_fail_to_start_leave_no_thread_behind() {
    let s = Scratch::new();
    // The system prompt is read after the session's threads started.
    let missing = s.root().join("no-such-system.md");
    let missing = missing.display().to_string();
    let mut ed = Editor::start(
        &s,
        &[turn(vec![text("unused")])],
        &[("TROUPE_SYSTEM_MD", &missing)],
    );
    ed.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let pid = troupe_pid(&s);
    let fail = |ed: &mut Editor| {
        let new = ed.call(
            "session/new",
            json!({"cwd": s.ws().display().to_string(), "mcpServers": []}),
        );
        let message = new["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("cannot read system prompt file"), "{new}");
    };
    fail(&mut ed);
    let baseline = settle(pid, (0, 0), Duration::from_secs(2));
    for _ in 0..10 {
        fail(&mut ed);
    }
    let after = settle(pid, baseline, SETTLE);
    assert!(
        after.0 <= baseline.0 && after.1 <= baseline.1,
        "after 10 failed starts troupe has {after:?} (threads, children): {:?}; after the first {baseline:?}",
        thread_names(pid)
    );
    assert!(ed.close().success());
}

/// Writes the user's config with these hook tables.
fn user_hooks(s: &Scratch, toml: &str) {
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), toml).unwrap();
}

/// A SessionStart hook that appends its input, one line each, to `file` and prints
/// `reply`.
fn session_start_hook(file: &Path, reply: &str) -> String {
    format!(
        "[[hooks.SessionStart]]\nname = 'start'\ncommand = '''cat >> {0} ; echo >> {0} ; {reply}'''\n",
        file.display()
    )
}

fn start_sources(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let input: Value = serde_json::from_str(l).expect("hook input");
            input["source"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

#[test]
fn session_start_context_reaches_the_first_request_of_an_acp_session() {
    let s = Scratch::new();
    let seen = s.root().join("starts.jsonl");
    user_hooks(
        &s,
        &session_start_hook(
            &seen,
            r#"echo '{"hookSpecificOutput":{"additionalContext":"ACP-START"}}'"#,
        ),
    );
    let turns = [turn(vec![text("one")]), turn(vec![text("two")])];
    let mut ed = Editor::start(&s, &turns, &[]);
    let sid = ed.start_session(&s, false);
    for q in ["first", "second"] {
        let done = ed.call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": q}]}),
        );
        assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    }
    let requests = s.requests();
    assert_eq!(
        requests[0]["contents"][0]["parts"][0]["text"],
        "<hook_context>ACP-START</hook_context>\n\nfirst"
    );
    // Only the first prompt carries it.
    let second = &requests[1]["contents"][2];
    assert_eq!(second["parts"][0]["text"], "second", "{second}");
    assert!(ed.close().success());
    assert_eq!(start_sources(&seen), ["startup"]);
}

#[test]
fn resume_fires_session_start_with_source_resume() {
    let s = Scratch::new();
    let seen = s.root().join("starts.jsonl");
    user_hooks(&s, &session_start_hook(&seen, "true"));
    let out = s.run(&[turn(vec![text("one")])], &["-p", "first"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = s.run(
        &[turn(vec![text("two")])],
        &["--resume", "latest", "-p", "second"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(start_sources(&seen), ["startup", "resume"]);
}
