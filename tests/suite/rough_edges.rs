//! Small things a user meets on the way: a hook's line on stderr starts a line of its
//! own in text mode, a slow MCP start says which servers it waits for, a session copied
//! for gemini-cli is titled with its first prompt, `hooks migrate` writes each tool once
//! in a matcher, and `troupe bench` on a debug build warns that its figures are not
//! Troupe's.

use std::process::Stdio;

use serde_json::{json, Value};

use super::mcp::{configure, server};
use crate::common::*;

/// Runs `cmd` with stdout and stderr into one file (as a terminal shows them) and
/// returns what the file holds.
fn merged_output(s: &Scratch, mut cmd: std::process::Command) -> String {
    let path = s.root().join("merged.txt");
    let file = std::fs::File::create(&path).expect("merged file");
    let status = cmd
        .stdout(file.try_clone().expect("clone"))
        .stderr(file)
        .status()
        .expect("run troupe");
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(&path).unwrap()
    );
    std::fs::read_to_string(&path).expect("read merged")
}

#[test]
fn a_hook_message_after_the_answer_starts_a_line_of_its_own() {
    let s = Scratch::new();
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[[hooks.AfterAgent]]\ncommand = '''echo '{\"continue\":false,\"stopReason\":\"stop\"}' '''\n",
    )
    .unwrap();
    let mut cmd = s.command();
    cmd.arg("--fake-responses")
        .arg(s.script(&[turn(vec![text("OK noted.")])]))
        .args(["-p", "note it"]);
    let shown = merged_output(&s, cmd);
    // Before: `OK noted.troupe: Agent execution stopped by hook: stop\n\n`.
    assert_eq!(
        shown, "OK noted.\ntroupe: Agent execution stopped by hook: stop\n",
        "{shown:?}"
    );
}

#[test]
fn a_slow_mcp_start_names_the_servers_still_connecting() {
    let s = Scratch::new();
    configure(
        &s,
        &format!(
            "{}{}[mcp]\nstartup_wait_ms = 20000\n",
            server("slow", &["--delay-start", "3000"], ""),
            server("quick", &[], "")
        ),
    );
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("MCP server")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("troupe: waiting for MCP server still connecting: slow (at most "),
        "{err}"
    );
    assert_eq!(stdout(&out), "ok\n");
}

#[test]
fn a_quick_mcp_start_prints_nothing() {
    let s = Scratch::new();
    configure(&s, &server("quick", &[], ""));
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("waiting for MCP"),
        "{}",
        stderr(&out)
    );
}

/// The session files of the scratch workspace.
fn session_files(s: &Scratch) -> Vec<std::path::PathBuf> {
    let chats = s.home().join(".troupe/tmp/ws/chats");
    let mut files: Vec<_> = std::fs::read_dir(&chats)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
    files
}

#[test]
fn a_session_is_titled_for_gemini_cli_with_its_first_prompt() {
    let s = Scratch::new();
    configure(
        &s,
        &server("fx", &["--instructions", "Call echo first."], ""),
    );
    let turns = [turn(vec![text("ok")]), turn(vec![text("again")])];
    let out = s.run(&turns[..1], &["-p", "Explain the build"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let files = session_files(&s);
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    // The first user message leads with the MCP instructions (gemini-cli would show
    // them as the title); the file's `summary`, which gemini-cli shows first, is the
    // prompt.
    let first_user = records
        .iter()
        .find(|r| r["type"] == "user")
        .expect("a user message");
    let first_text = first_user["content"][0]["text"].as_str().unwrap_or("");
    assert!(first_text.contains("Call echo first."), "{first_user}");
    let summaries: Vec<&Value> = records
        .iter()
        .filter_map(|r| r.pointer("/$set/summary"))
        .collect();
    assert_eq!(summaries, [&json!("Explain the build")], "{text}");

    // Resumed: the title stays (no second summary).
    let out = s.run(&turns[1..], &["-p", "And the tests?", "--resume", "latest"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(text.matches("\"summary\"").count(), 1, "{text}");
}

#[test]
fn hooks_migrate_writes_each_tool_once_in_a_matcher() {
    let s = Scratch::new();
    s.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Edit|MultiEdit|Write", "hooks": [
            {"type": "command", "command": "true"}]}]}})
        .to_string(),
    );
    let out = s
        .bare_command()
        .args(["hooks", "migrate", "--from-claude"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let written: Value = serde_json::from_str(&s.read(".gemini/settings.json")).unwrap();
    assert_eq!(
        written["hooks"]["BeforeTool"][0]["matcher"], "replace|write_file",
        "{written:#}"
    );
}

#[test]
fn bench_on_a_debug_build_warns_that_its_figures_are_not_troupes() {
    let s = Scratch::new();
    let out = s
        .bare_command()
        .args(["bench", "--calls", "5"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let warned = stderr(&out).contains("this is a debug build (unoptimised)");
    // The tests run the binary of their own profile.
    assert_eq!(warned, cfg!(debug_assertions), "{}", stderr(&out));
}
