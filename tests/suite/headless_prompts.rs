//! What a headless run (`-p`) makes of its prompt and tells its caller: custom commands
//! and MCP prompts expanded as the REPL expands them (folder trust respected), refused
//! calls said on stderr with their own exit code, warnings about project hooks left out
//! in an untrusted folder in every output format, the texts of successive rounds on
//! lines of their own, and session titles from what was typed.

use serde_json::{json, Value};

use super::mcp::{configure, server};
use crate::common::*;

/// A headless run on `turns` with `args`, the folder trusted for the run.
fn run_trusted(s: &Scratch, turns: &[Value], args: &[&str]) -> std::process::Output {
    s.command()
        .arg("--fake-responses")
        .arg(s.script(turns))
        .args(args)
        .env("TROUPE_TRUST_WORKSPACE", "1")
        .output()
        .expect("run troupe")
}

/// The text parts of the last user content of `request`.
fn last_user_texts(request: &Value) -> Vec<String> {
    let contents = request["contents"].as_array().expect("contents");
    let last = contents
        .iter()
        .rev()
        .find(|c| c["role"] == "user")
        .expect("a user content");
    last["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn custom_commands_are_expanded_in_a_trusted_folder_only() {
    let s = Scratch::new();
    s.write("notes.md", "the button's css\n");
    s.write(
        ".gemini/commands/git/fix.toml",
        "description = \"Fix a bug\"\nprompt = \"Fix this bug: {{args}}\\nNotes: @{notes.md}\"\n",
    );
    let typed = "/git:fix \"Button is misaligned\"";
    let answer = [turn(vec![text("Fixed.")])];

    let out = run_trusted(&s, &answer, &["-p", typed]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        last_user_texts(&s.requests()[0]),
        ["Fix this bug: \"Button is misaligned\"\nNotes: the button's css\n"]
    );
    // The session is titled with what was typed.
    let list = s.bare_command().arg("--list-sessions").output().unwrap();
    assert!(
        stdout(&list).contains(&format!("1. {typed} (")),
        "{}",
        stdout(&list)
    );

    // Untrusted, the project's commands are not loaded: the line goes as typed.
    std::fs::remove_file(s.requests_path()).unwrap();
    let out = s.run(&answer, &["-p", typed]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(last_user_texts(&s.requests()[0]), [typed]);
}

#[test]
fn a_custom_commands_shell_injection_runs_only_when_the_policy_allows_it() {
    let s = Scratch::new();
    s.write(
        ".troupe/commands/deploy.toml",
        "prompt = \"Deployed: !{touch deployed && echo done-{{args}}}\"\n",
    );
    let answer = [turn(vec![text("ok")])];

    // `touch` needs approval, which a headless run cannot give: nothing runs or is sent.
    let out = run_trusted(&s, &answer, &["-p", "/deploy now"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("/deploy: the shell command `touch deployed && echo done-now` was not run")
            && err.contains("needs the user's approval"),
        "{err}"
    );
    assert!(!s.ws().join("deployed").exists());
    assert!(s.requests().is_empty());

    // In yolo mode it runs and its output is the prompt.
    let out = run_trusted(&s, &answer, &["-p", "/deploy now", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(s.ws().join("deployed").exists());
    assert_eq!(last_user_texts(&s.requests()[0]), ["Deployed: done-now"]);
}

#[test]
fn mcp_prompts_are_expanded_and_their_help_is_answered_without_the_model() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], ""));
    let out = s.run(
        &[turn(vec![text("Hello Ada!")])],
        &["-p", "/greet Ada --mood=cheerful"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        last_user_texts(&s.requests()[0]),
        ["Say hello to Ada in a cheerful way."]
    );
    assert_eq!(stdout(&out), "Hello Ada!\n");

    std::fs::remove_file(s.requests_path()).unwrap();
    let out = s.run(&[], &["-p", "/greet help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("--name=\"…\" (required)"),
        "{}",
        stdout(&out)
    );
    assert!(s.requests().is_empty());

    let out = s.run(&[], &["-p", "/greet --mood=calm"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("Missing required argument(s): --name"),
        "{}",
        stderr(&out)
    );
}

/// A project whose `.troupe/config.toml` has a BeforeTool hook named `guard`.
fn project_with_a_hook(s: &Scratch) {
    s.write(
        ".troupe/config.toml",
        "[[hooks.BeforeTool]]\nmatcher = '.*'\nname = 'guard'\ncommand = 'exit 2'\n",
    );
}

const HOOKS_WARNING: &str =
    "WARNING: this folder is not trusted, so its project hooks were NOT run: guard.";

#[test]
fn skipped_project_hooks_are_said_first_in_text_json_and_stream_json() {
    let s = Scratch::new();
    project_with_a_hook(&s);
    let answer = || [turn(vec![text("ok")])];

    let out = s.run(&answer(), &["-p", "go", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!("troupe: {HOOKS_WARNING}")),
        "{err}"
    );
    assert!(
        first.contains("yolo mode: every tool call runs without the checks these hooks would make")
            && first.contains("troupe trust")
            && first.contains(".troupe/config.toml is not applied either"),
        "{first}"
    );
    assert_eq!(err.matches("not trusted").count(), 1, "{err}");

    let (report, out) = s.run_json(&answer(), &["-p", "go", "--approval-mode", "auto_edit"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings = report["warnings"].as_array().expect("warnings");
    let warning = warnings[0].as_str().unwrap();
    assert!(warning.starts_with(HOOKS_WARNING), "{report}");
    assert!(
        warning.contains("auto_edit mode: edits run without"),
        "{report}"
    );

    let out = s.run(&answer(), &["-p", "go", "--yolo", "-o", "stream-json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events = stream_events(&out);
    assert_eq!(events[0]["type"], "init", "{events:?}");
    assert_eq!(events[1]["type"], "error", "{events:?}");
    assert_eq!(events[1]["severity"], "warning", "{events:?}");
    assert!(
        events[1]["message"]
            .as_str()
            .unwrap()
            .starts_with(HOOKS_WARNING),
        "{events:?}"
    );
}

#[test]
fn a_refused_edit_is_said_on_stderr_and_ends_the_run_with_54() {
    let s = Scratch::new();
    s.write("a.txt", "misaligned\n");
    let turns = || {
        [
            turn(vec![
                text("Let me fix it."),
                call(
                    "replace",
                    json!({"file_path": "a.txt", "old_string": "misaligned", "new_string": "aligned"}),
                ),
                call("read_file", json!({"file_path": "missing.txt"})),
            ]),
            turn(vec![text("Fixed!")]),
        ]
    };
    let out = s.run(&turns(), &["-p", "fix a.txt"]);
    assert_eq!(out.status.code(), Some(54), "{}", stderr(&out));
    assert_eq!(s.read("a.txt"), "misaligned\n");
    // The texts of the two rounds are on lines of their own.
    assert_eq!(stdout(&out), "Let me fix it.\nFixed!\n");
    let err = stderr(&out);
    assert!(
        err.contains("troupe: refused: replace(file_path: a.txt, old_string: misaligned, new_string: aligned): Tool execution denied by policy. \"replace\" needs the user's approval"),
        "{err}"
    );
    assert!(
        err.contains("troupe: failed: read_file(file_path: missing.txt): "),
        "{err}"
    );
    assert!(
        err.lines()
            .last()
            .unwrap_or("")
            .starts_with("troupe: 1 tool call was refused"),
        "{err}"
    );

    let (report, out) = s.run_json(&turns(), &["-p", "fix a.txt"]);
    assert_eq!(out.status.code(), Some(54));
    // The final round's text, as gemini-cli gives it.
    assert_eq!(report["response"], "Fixed!");
    assert_eq!(report["error"]["type"], "ToolCallsRefused", "{report}");
    assert_eq!(report["error"]["code"], 54, "{report}");

    // A call that only failed leaves the exit status alone.
    let out = s.run(
        &[
            turn(vec![call("read_file", json!({"file_path": "missing.txt"}))]),
            turn(vec![text("No such file.")]),
        ],
        &["-p", "read missing.txt"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("troupe: failed: read_file"));
}

#[test]
fn a_title_comes_from_what_was_typed_not_the_files_read_in() {
    let s = Scratch::new();
    s.write("a.txt", "SECRET-CONTENT of the file\n");
    let out = s.run(&[turn(vec![text("Read.")])], &["-p", "explain @a.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(s.requests()[0].to_string().contains("SECRET-CONTENT"));
    let list = s.bare_command().arg("--list-sessions").output().unwrap();
    let listed = stdout(&list);
    assert!(listed.contains("1. explain @a.txt (Just now)"), "{listed}");
    assert!(!listed.contains("SECRET-CONTENT"), "{listed}");
}

#[test]
fn the_texts_of_successive_rounds_are_on_lines_of_their_own() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let out = s.run(
        &[
            turn(vec![
                text("Reading a.txt."),
                call("read_file", json!({"file_path": "a.txt"})),
            ]),
            turn(vec![
                text("It says alpha."),
                call("read_file", json!({"file_path": "a.txt"})),
            ]),
            turn(vec![text("Still alpha.")]),
        ],
        &["-p", "what is in a.txt?"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Reading a.txt.\nIt says alpha.\nStill alpha.\n"
    );
}
