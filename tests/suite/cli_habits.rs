//! The command-line habits of a gemini-cli or Claude Code user, through the binary:
//! `-v`, `--continue`, `troupe completion SHELL`, `troupe man`, and an allow rule for a
//! whole MCP server given with `-c`, in the config file or in the environment.

use std::process::Output;

use serde_json::{json, Value};

use super::mcp::{configure, server};
use crate::common::*;

/// The user texts of a request's history, in order.
fn user_texts(request: &Value) -> Vec<String> {
    request["contents"]
        .as_array()
        .expect("contents")
        .iter()
        .filter(|c| c["role"] == "user")
        .flat_map(|c| c["parts"].as_array().expect("parts").iter())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

/// The session files of the scratch workspace's project.
fn session_count(s: &Scratch) -> usize {
    std::fs::read_dir(s.home().join(".troupe/tmp/ws/chats"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("session-"))
                .count()
        })
        .unwrap_or(0)
}

/// `troupe ARGS` as an interactive session on `turns` (stdin closed: the first prompt
/// runs, then the session ends).
fn interactive(s: &Scratch, turns: &[Value], args: &[&str]) -> Output {
    let script = s.script(turns);
    s.command()
        .arg("--fake-responses")
        .arg(script)
        .args(args)
        .output()
        .expect("run troupe")
}

#[test]
fn v_and_capital_v_and_long_version_print_the_version() {
    let s = Scratch::new();
    let expected = format!("troupe {}\n", env!("CARGO_PKG_VERSION"));
    for flag in ["-v", "-V", "--version"] {
        let out = s.bare_command().arg(flag).output().unwrap();
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
        assert_eq!(stdout(&out), expected, "{flag}");
    }
}

#[test]
fn completion_prints_a_script_for_each_shell_and_calls_no_model() {
    let s = Scratch::new();
    let marks = [
        ("bash", "complete -F _troupe"),
        ("zsh", "#compdef troupe"),
        ("fish", "complete -c troupe"),
    ];
    for (shell, mark) in marks {
        let out = s
            .bare_command()
            .args(["completion", shell])
            .output()
            .expect("run troupe");
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains(mark), "{shell}: {script}");
        // The flags of this build, subcommands included.
        for word in ["continue", "resume", "output-format", "mcp"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    assert_eq!(session_count(&s), 0, "no session was recorded");
}

#[test]
fn the_word_completion_in_a_prompt_still_reaches_the_model() {
    let s = Scratch::new();
    let answer = [turn(vec![text("Answered.")])];
    let prompts: [&[&str]; 3] = [
        &["completion is slow"],
        &["--", "completion"],
        &["-p", "completion bash"],
    ];
    for args in prompts {
        let _ = std::fs::remove_file(s.requests_path());
        let out = interactive(&s, &answer, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let requests = s.requests();
        assert_eq!(requests.len(), 1, "{args:?}");
        let typed = args.last().copied().unwrap_or_default();
        assert_eq!(user_texts(&requests[0]), [typed], "{args:?}");
    }
    // Alone as the first argument, the word is the subcommand, which names the shells
    // and the way to send the word as a prompt.
    let out = s.bare_command().arg("completion").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(
        message.contains("bash, zsh, fish") && message.contains("troupe -- completion"),
        "{message}"
    );
    assert_eq!(
        session_count(&s),
        3,
        "one session for each prompt, none more"
    );
}

#[test]
fn man_prints_a_troff_page_of_every_flag() {
    let s = Scratch::new();
    let out = s.bare_command().arg("man").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH troupe 1"), "{page}");
    assert!(
        page.contains(".SH NAME") && page.contains(".SH OPTIONS"),
        "{page}"
    );
    // troff writes a flag's dashes as `\-`.
    for flag in [r"\-\-continue", r"\-\-resume", r"\-\-approval\-mode"] {
        assert!(page.contains(flag), "{flag} missing");
    }
    assert!(page.contains("completion") && page.contains("troupe\\-mcp"));
}

#[test]
fn continue_picks_up_the_latest_session_headless_and_interactive() {
    let s = Scratch::new();
    // No session yet: a new one starts, with a warning.
    let out = s.run(
        &[turn(vec![text("A.")])],
        &["--continue", "-p", "older task"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(user_texts(&s.requests()[0]), ["older task"]);
    let out = s.run(&[turn(vec![text("B.")])], &["-p", "latest task"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(session_count(&s), 2);

    // Headless: the latest session's history goes ahead of the new prompt.
    std::fs::remove_file(s.requests_path()).unwrap();
    let out = s.run(&[turn(vec![text("C.")])], &["--continue", "-p", "go on"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(user_texts(&s.requests()[0]), ["latest task", "go on"]);

    // Interactive (no -p): the same session, now with the headless exchange too.
    std::fs::remove_file(s.requests_path()).unwrap();
    let out = interactive(&s, &[turn(vec![text("D.")])], &["--continue", "and more"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        user_texts(&s.requests()[0]),
        ["latest task", "go on", "and more"]
    );
    assert_eq!(session_count(&s), 2, "continued, not copied");

    // It is one of the session flags: never with --resume.
    let out = s.run(&[], &["--continue", "--resume", "1", "-p", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'--continue' cannot be used with '--resume"));
}

/// One call of the fixture server's `echo`, then an answer.
fn echo_turns() -> [Value; 2] {
    [
        turn(vec![call("mcp_fx_echo", json!({"text": "by rule"}))]),
        turn(vec![text("ok")]),
    ]
}

/// The echo call's functionResponse in the run's second request.
fn echo_response(s: &Scratch) -> Value {
    let requests = s.requests();
    let responses = function_responses(&requests[1]);
    responses
        .into_iter()
        .find(|r| r["name"] == "mcp_fx_echo")
        .unwrap_or_else(|| panic!("no echo response: {requests:?}"))
}

#[test]
fn a_rule_for_a_whole_mcp_server_runs_its_calls_headless_without_asking() {
    let s = Scratch::new();
    let untrusted = server("fx", &[], "");
    configure(&s, &untrusted);
    // Without a rule, default mode headless refuses the call (exit 54).
    let (_, proc) = s.run_json(&echo_turns(), &["-p", "go"]);
    assert_eq!(proc.status.code(), Some(54), "{}", stderr(&proc));
    assert!(echo_response(&s)["response"]["error"].is_string());

    // From -c.
    std::fs::remove_file(s.requests_path()).unwrap();
    let rule = r#"approval.allowed=["mcp_fx_*"]"#;
    let (_, proc) = s.run_json(&echo_turns(), &["-p", "go", "-c", rule]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert!(echo_response(&s)["response"]["output"]
        .as_str()
        .is_some_and(|o| o.contains("by rule")));

    // A rule for another server allows nothing here.
    std::fs::remove_file(s.requests_path()).unwrap();
    let other = r#"approval.allowed=["mcp_other_*"]"#;
    let (_, proc) = s.run_json(&echo_turns(), &["-p", "go", "-c", other]);
    assert_eq!(proc.status.code(), Some(54), "{}", stderr(&proc));

    // From the environment.
    std::fs::remove_file(s.requests_path()).unwrap();
    let out = s
        .command()
        .arg("--fake-responses")
        .arg(s.script(&echo_turns()))
        .args(["-p", "go"])
        .env("TROUPE_APPROVAL_ALLOWED", r#"["mcp_fx_*"]"#)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(echo_response(&s)["response"]["output"].is_string());

    // From the config file, shown by /approvals as the rule "Allow all server tools" makes.
    configure(
        &s,
        &format!("[approval]\nallowed = [\"mcp_fx_*\"]\n\n{untrusted}"),
    );
    std::fs::remove_file(s.requests_path()).unwrap();
    let (_, proc) = s.run_json(&echo_turns(), &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert!(echo_response(&s)["response"]["output"].is_string());
    let mut repl = s.command();
    repl.arg("--fake-responses")
        .arg(s.script(&[]))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = repl.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"/approvals\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        stdout(&out).contains("1. mcp_fx_* (every call)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_wildcard_that_is_no_server_rule_is_refused_with_the_forms() {
    let s = Scratch::new();
    for rule in ["*", "mcp_*", "read_*"] {
        let flag = format!("approval.allowed=[\"{rule}\"]");
        let out = s.run(&[], &["-p", "x", "-c", &flag]);
        assert_eq!(out.status.code(), Some(1), "{rule}");
        assert!(
            stderr(&out).contains(&format!(
                "`{rule}` is not `tool`, `tool(key)` or `mcp_<server>_*`"
            )),
            "{}",
            stderr(&out)
        );
    }
}
