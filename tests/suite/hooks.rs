//! Hooks end to end: the binary with hooks in the user's config (or a project's
//! `.gemini/settings.json`), a scripted model, and hook scripts that record their input.

mod migrate;

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::*;

/// Writes the user's Troupe config with these `[[hooks.X]]` tables.
fn user_hooks(s: &Scratch, toml: &str) {
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), toml).unwrap();
}

/// Where a hook writes what it read on stdin.
fn seen(s: &Scratch, name: &str) -> PathBuf {
    s.root().join(format!("{name}.json"))
}

fn read_seen(s: &Scratch, name: &str) -> Value {
    let text = std::fs::read_to_string(seen(s, name))
        .unwrap_or_else(|e| panic!("hook {name} did not run: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("hook {name} input: {e}: {text}"))
}

/// A hook that records its input to `<name>.json` and prints `reply`.
fn recording(s: &Scratch, event: &str, matcher: &str, name: &str, reply: &str) -> String {
    format!(
        "[[hooks.{event}]]\nmatcher = '{matcher}'\nname = '{name}'\ncommand = '''cat > {} ; {reply}'''\n",
        seen(s, name).display()
    )
}

fn response_of(request: &Value) -> Value {
    function_responses(request)[0]["response"].clone()
}

#[test]
fn before_tool_exit_2_blocks_the_call_and_names_the_hook() {
    let s = Scratch::new();
    user_hooks(
        &s,
        &recording(
            &s,
            "BeforeTool",
            "write_file|replace",
            "guard",
            "echo 'no writes allowed' >&2; exit 2",
        ),
    );
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "a.txt", "content": "x"}),
        )]),
        turn(vec![text("ok")]),
    ];
    let out = s.run(&turns, &["-p", "write", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!s.ws().join("a.txt").exists());
    let requests = s.requests();
    assert_eq!(
        response_of(&requests[1])["error"],
        "Tool execution blocked: no writes allowed"
    );
    let input = read_seen(&s, "guard");
    assert_eq!(input["hook_event_name"], "BeforeTool");
    assert_eq!(input["tool_name"], "write_file");
    assert_eq!(input["tool_input"]["file_path"], "a.txt");
    assert_eq!(input["cwd"], s.ws().display().to_string());
    assert!(input["session_id"]
        .as_str()
        .is_some_and(|id| id.len() == 36));
    assert!(stderr(&out).contains("Hook \"guard\" failed for event BeforeTool (exit status 2)"));
}

#[test]
fn before_tool_matcher_json_deny_and_tool_input_rewrite() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("b.txt", "bravo\n");
    let mut hooks = recording(
        &s,
        "BeforeTool",
        "read_file",
        "redirect",
        r#"echo '{"hookSpecificOutput":{"tool_input":{"file_path":"b.txt"}}}'"#,
    );
    hooks.push_str(&recording(
        &s,
        "BeforeTool",
        "^glob$",
        "noglob",
        r#"echo '{"decision":"deny","reason":"json deny reason"}'"#,
    ));
    user_hooks(&s, &hooks);
    let turns = [
        turn(vec![
            call("read_file", json!({"file_path": "a.txt"})),
            call("glob", json!({"pattern": "*.txt"})),
            call("list_directory", json!({"dir_path": "."})),
        ]),
        turn(vec![text("ok")]),
    ];
    let out = s.run(&turns, &["-p", "read", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let responses = function_responses(&s.requests()[1]);
    let read = responses[0]["response"]["output"].as_str().unwrap();
    assert!(read.starts_with("bravo"), "{read}");
    assert!(read
        .ends_with("\n\n[System] Tool input parameters were modified by a hook before execution."));
    assert_eq!(
        responses[1]["response"]["error"],
        "Tool execution blocked: json deny reason"
    );
    assert!(responses[2]["response"]["output"].is_string());
    // Neither hook matched list_directory: the matchers are regexes on the tool name.
    assert_eq!(read_seen(&s, "noglob")["tool_name"], "glob");
}

#[test]
fn before_tool_ask_forces_a_confirmation_that_headless_refuses() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let mut hooks = recording(
        &s,
        "BeforeTool",
        "",
        "asker",
        r#"echo '{"decision":"ask"}'"#,
    );
    hooks.push_str(&recording(&s, "Notification", "", "notify", "true"));
    user_hooks(&s, &hooks);
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("ok")]),
    ];
    let out = s.run(&turns, &["-p", "read"]);
    // Refused for want of an approval: the run ends with 54.
    assert_eq!(out.status.code(), Some(54), "{}", stderr(&out));
    let response = response_of(&s.requests()[1]);
    assert!(response["error"].is_string(), "{response}");
    assert!(response.get("output").is_none());
    let note = read_seen(&s, "notify");
    assert_eq!(note["notification_type"], "ToolPermission");
    assert!(
        note["message"].as_str().unwrap().contains("read_file"),
        "{note}"
    );
}

#[test]
fn after_tool_context_and_deny() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let mut hooks = recording(
        &s,
        "AfterTool",
        "read_file",
        "ctx",
        r#"echo '{"hookSpecificOutput":{"additionalContext":"AFTER-CTX <b>"}}'"#,
    );
    hooks.push_str(&recording(
        &s,
        "AfterTool",
        "list_directory",
        "hide",
        r#"echo '{"decision":"deny","reason":"secret listing"}'"#,
    ));
    user_hooks(&s, &hooks);
    let turns = [
        turn(vec![
            call("read_file", json!({"file_path": "a.txt"})),
            call("list_directory", json!({"dir_path": "."})),
        ]),
        turn(vec![text("ok")]),
    ];
    let out = s.run(&turns, &["-p", "read", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let responses = function_responses(&s.requests()[1]);
    let read = responses[0]["response"]["output"].as_str().unwrap();
    assert!(
        read.ends_with("\n\n<hook_context>AFTER-CTX &lt;b&gt;</hook_context>"),
        "{read}"
    );
    assert_eq!(
        responses[1]["response"]["error"],
        "Tool result blocked: secret listing"
    );
    let input = read_seen(&s, "ctx");
    assert!(input["tool_response"]["llmContent"]
        .as_str()
        .unwrap()
        .starts_with("alpha"));
}

#[test]
fn before_agent_adds_context_or_blocks_the_prompt() {
    let s = Scratch::new();
    user_hooks(
        &s,
        &recording(
            &s,
            "BeforeAgent",
            "",
            "ba",
            r#"echo '{"hookSpecificOutput":{"additionalContext":"BA-CTX"}}'"#,
        ),
    );
    let out = s.run(
        &[turn(vec![text("hi")])],
        &["-p", "hello", "-c", "hooks.enabled=false"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !seen(&s, "ba").exists(),
        "a hook ran with hooks.enabled=false"
    );
    let out = s.run(&[turn(vec![text("hi")])], &["-p", "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read_seen(&s, "ba")["prompt"], "hello");
    let requests = s.requests();
    let parts = requests.last().unwrap()["contents"][0]["parts"].clone();
    assert_eq!(parts[0]["text"], "hello");
    assert_eq!(parts[1]["text"], "<hook_context>BA-CTX</hook_context>");

    let s = Scratch::new();
    user_hooks(
        &s,
        &recording(
            &s,
            "BeforeAgent",
            "",
            "ba",
            "echo 'prompts are closed' >&2; exit 2",
        ),
    );
    let out = s.run(&[turn(vec![text("hi")])], &["-p", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Agent execution blocked: prompts are closed"));
    assert!(s.requests().is_empty(), "the model was called");
}

#[test]
fn after_agent_deny_sends_the_reason_back_once() {
    let s = Scratch::new();
    user_hooks(
        &s,
        &format!(
            "[[hooks.AfterAgent]]\ncommand = '''cat >> {} ; echo >> {}; echo '{{\"decision\":\"deny\",\"reason\":\"run the tests too\"}}' '''\n",
            seen(&s, "aa").display(),
            seen(&s, "aa").display()
        ),
    );
    let turns = [
        turn(vec![text("first answer")]),
        turn(vec![text("tests run")]),
    ];
    let (json_out, out) = s.run_json(&turns, &["-p", "fix it"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The final round's text (gemini-cli's `response`).
    assert_eq!(json_out["response"], "tests run");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let contents = requests[1]["contents"].as_array().unwrap();
    assert_eq!(
        contents.last().unwrap()["parts"][0]["text"],
        "run the tests too"
    );
    let text = std::fs::read_to_string(seen(&s, "aa")).unwrap();
    let inputs: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0]["stop_hook_active"], false);
    assert_eq!(inputs[0]["prompt_response"], "first answer");
    assert_eq!(inputs[1]["stop_hook_active"], true);
}

#[test]
fn before_model_synthetic_reply_and_tool_selection() {
    let s = Scratch::new();
    user_hooks(
        &s,
        &recording(
            &s,
            "BeforeModel",
            "",
            "bm",
            r#"echo '{"decision":"block","hookSpecificOutput":{"llm_response":{"text":"cached answer"}}}'"#,
        ),
    );
    let (json_out, out) = s.run_json(&[turn(vec![text("from model")])], &["-p", "q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_out["response"], "cached answer");
    assert!(s.requests().is_empty());
    let input = read_seen(&s, "bm");
    assert_eq!(input["llm_request"]["messages"][0]["content"], "q");

    let s = Scratch::new();
    user_hooks(
        &s,
        &recording(
            &s,
            "BeforeToolSelection",
            "",
            "sel",
            r#"echo '{"hookSpecificOutput":{"toolConfig":{"mode":"ANY","allowedFunctionNames":["read_file"]}}}'"#,
        ),
    );
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let tools = s.requests()[0]["tools"].to_string();
    assert!(tools.contains("\"read_file\""), "{tools}");
    assert!(!tools.contains("\"write_file\""), "{tools}");
}

#[test]
fn after_model_stop_ends_the_turn_before_any_tool_runs() {
    let s = Scratch::new();
    user_hooks(
        &s,
        &recording(
            &s,
            "AfterModel",
            "",
            "am",
            r#"echo '{"continue":false,"stopReason":"enough"}'"#,
        ),
    );
    let turns = [turn(vec![
        text("writing"),
        call("write_file", json!({"file_path": "a.txt", "content": "x"})),
    ])];
    let out = s.run(&turns, &["-p", "q", "--yolo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Agent execution stopped by hook: enough"));
    assert!(!s.ws().join("a.txt").exists());
    assert_eq!(read_seen(&s, "am")["llm_response"]["text"], "writing");
}

#[test]
fn session_start_context_and_session_end() {
    let s = Scratch::new();
    let mut hooks = recording(
        &s,
        "SessionStart",
        "startup",
        "ss",
        r#"echo '{"systemMessage":"welcome","hookSpecificOutput":{"additionalContext":"SS-CONTEXT <b>"}}'"#,
    );
    hooks.push_str(&recording(&s, "SessionStart", "resume", "never", "true"));
    hooks.push_str(&recording(&s, "SessionEnd", "", "se", "true"));
    user_hooks(&s, &hooks);
    let out = s.run(&[turn(vec![text("hi")])], &["-p", "do it"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        s.requests()[0]["contents"][0]["parts"][0]["text"],
        "<hook_context>SS-CONTEXT &lt;b&gt;</hook_context>\n\ndo it"
    );
    assert_eq!(read_seen(&s, "ss")["source"], "startup");
    assert_eq!(read_seen(&s, "se")["reason"], "exit");
    assert!(!seen(&s, "never").exists(), "a resume hook ran at startup");
    assert!(stderr(&out).contains("welcome"));
}

#[test]
fn a_hook_that_hangs_is_killed_and_the_call_goes_on() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let pid_file = s.root().join("hook.pid");
    user_hooks(
        &s,
        &format!(
            "[[hooks.BeforeTool]]\nname = 'sleeper'\ntimeout_ms = 300\ncommand = '''echo $$ > {}; sleep 30 & wait'''\n",
            pid_file.display()
        ),
    );
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("ok")]),
    ];
    let out = s.run(&turns, &["-p", "read", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out)
        .contains("Hook \"sleeper\" failed for event BeforeTool: Hook timed out after 300ms"));
    let read = response_of(&s.requests()[1]);
    assert!(read["output"].as_str().unwrap().starts_with("alpha"));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The whole group is gone: neither the shell nor its sleeping child survives.
    wait_group_gone(pid);
}

/// Whether a process of group `pgid` is still running (zombies, which this machine's
/// init may never reap, are dead).
pub(crate) fn group_running(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp ...: split after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
    })
}

/// Waits (up to 10 s) for group `pgid` to stop running, then asserts it did.
pub(crate) fn wait_group_gone(pgid: i32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while group_running(pgid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !group_running(pgid),
        "processes of group {pgid} are still running"
    );
}

#[test]
fn crashing_garbage_and_huge_hooks_leave_the_session_running() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    user_hooks(
        &s,
        "[[hooks.BeforeTool]]\nname = 'huge'\ncommand = '''head -c 5000000 /dev/zero | tr '\\0' 'x' '''\n\
         [[hooks.AfterTool]]\nname = 'garbage'\ncommand = '''printf '\\x01{not json'; exit 1'''\n\
         [[hooks.BeforeAgent]]\nname = 'crash'\ncommand = 'kill -SEGV $$'\n",
    );
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("ok")]),
    ];
    let (json_out, out) = s.run_json(&turns, &["-p", "read", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_out["response"], "ok");
    let read = response_of(&s.requests()[1]);
    assert!(
        read["output"].as_str().unwrap().starts_with("alpha"),
        "{read}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("Hook \"crash\" failed for event BeforeAgent"),
        "{err}"
    );
    assert!(
        err.contains("Hook \"garbage\" failed for event AfterTool (exit status 1)"),
        "{err}"
    );
    // The hook's control character is shown, not sent to the terminal.
    assert!(err.contains("Warning: ^A{not json"), "{err}");
    assert!(!err.contains('\u{1}'), "{err}");
    // The huge output is shown clipped, not whole.
    assert!(err.len() < 100_000, "stderr is {} bytes", err.len());
}

#[test]
fn hooks_never_see_model_keys() {
    let s = Scratch::new();
    let env_file = s.root().join("env.txt");
    user_hooks(
        &s,
        &format!(
            "[[hooks.SessionStart]]\ncommand = 'env > {}'\n",
            env_file.display()
        ),
    );
    let script = s.script(&[turn(vec![text("ok")])]);
    let out = s
        .command()
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "q"])
        .env("GEMINI_API_KEY", "sekrit-gemini")
        .env("OPENAI_API_KEY", "sekrit-openai")
        .env("HOOK_VISIBLE", "yes")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let env = std::fs::read_to_string(env_file).unwrap();
    assert!(env.contains("HOOK_VISIBLE=yes"));
    assert!(env.contains(&format!("GEMINI_PROJECT_DIR={}", s.ws().display())));
    assert!(!env.contains("sekrit"), "{env}");
}

fn project_gemini_hook(s: &Scratch) {
    let hook = json!({"hooks": {"BeforeTool": [{"matcher": "read_file", "hooks": [
        {"type": "command", "name": "proj", "command": format!("cat > {}", seen(s, "proj").display())}
    ]}]}});
    s.write(".gemini/settings.json", &hook.to_string());
}

#[test]
fn project_hooks_run_only_in_a_trusted_folder_and_are_announced_once() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    project_gemini_hook(&s);
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("ok")]),
    ];
    let out = s.run(&turns, &["-p", "read", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!seen(&s, "proj").exists(), "an untrusted project hook ran");
    assert!(
        stderr(&out).contains("project hooks were NOT run: proj."),
        "{}",
        stderr(&out)
    );

    let trusted = |s: &Scratch| {
        let script = s.script(&turns);
        s.command()
            .arg("--fake-responses")
            .arg(script)
            .args(["-p", "read", "--yolo"])
            .env("TROUPE_TRUST_WORKSPACE", "1")
            .output()
            .unwrap()
    };
    let out = trusted(&s);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read_seen(&s, "proj")["tool_name"], "read_file");
    assert!(stderr(&out).contains(
        "WARNING: The following project-level hooks have been detected in this workspace: proj"
    ));
    let again = trusted(&s);
    assert!(!stderr(&again).contains("project-level hooks have been detected"));
}

#[test]
fn sequential_hooks_see_the_previous_rewrite_and_disabled_hooks_do_not_run() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("c.txt", "charlie\n");
    user_hooks(
        &s,
        &format!(
            "[hooks]\ndisabled = ['off']\n\
             [[hooks.BeforeTool]]\nsequential = true\ncommand = '''echo '{{\"hookSpecificOutput\":{{\"tool_input\":{{\"file_path\":\"c.txt\"}}}}}}' '''\n\
             [[hooks.BeforeTool]]\nname = 'second'\ncommand = 'cat > {}'\n\
             [[hooks.BeforeTool]]\nname = 'off'\ncommand = 'cat > {}'\n",
            seen(&s, "second").display(),
            seen(&s, "off").display()
        ),
    );
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("ok")]),
    ];
    let out = s.run(&turns, &["-p", "read", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read_seen(&s, "second")["tool_input"]["file_path"], "c.txt");
    assert!(!seen(&s, "off").exists());
    let read = response_of(&s.requests()[1]);
    assert!(read["output"].as_str().unwrap().starts_with("charlie"));
}

#[test]
fn migrate_from_claude_writes_gemini_hooks_that_troupe_runs() {
    let s = Scratch::new();
    s.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
            {"type": "command", "command": "echo denied-by-migrated >&2; exit 2", "timeout": 5}]}]}})
        .to_string(),
    );
    let out = s
        .bare_command()
        .args(["hooks", "migrate", "--from-claude"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("✓ Hooks successfully migrated to .gemini/settings.json"));
    let settings: Value = serde_json::from_str(&s.read(".gemini/settings.json")).unwrap();
    assert_eq!(
        settings["hooks"]["BeforeTool"][0],
        json!({"matcher": "write_file", "hooks": [
            {"command": "echo denied-by-migrated >&2; exit 2", "type": "command", "timeout": 5000}]})
    );
    let out = s
        .bare_command()
        .args(["hooks", "migrate"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn repl_lists_and_toggles_hooks_and_runs_pre_compress() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let mut hooks = recording(&s, "PreCompress", "manual", "pc", "true");
    hooks.push_str(&recording(&s, "BeforeTool", "read_file", "bt", "true"));
    hooks.push_str(&recording(&s, "SessionEnd", "", "se", "true"));
    user_hooks(&s, &hooks);
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("Read it.")]),
        json!({"method": "generateContent", "response": {"candidates": [{"content": {"role": "model",
            "parts": [{"text": "<state_snapshot>a.txt was read.</state_snapshot>"}]}, "finishReason": "STOP"}]}}),
    ];
    let t = super::repl::term::Term::start(&s, &turns, &[], &[]);
    t.line("/hooks");
    let text = t.wait_for("SessionEnd");
    assert!(text.contains("3 hook(s)"), "{text}");
    assert!(text.contains("BeforeTool"), "{text}");
    t.line("/hooks disable bt");
    t.wait_for("Disabled 1 hook(s) (bt).");
    t.line("read a.txt");
    t.wait_for("Read it.");
    t.wait_prompt();
    assert!(!seen(&s, "bt").exists(), "a disabled hook ran");
    t.line("/compress");
    t.wait_for("Conversation compressed from ");
    assert_eq!(read_seen(&s, "pc")["trigger"], "manual");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
    assert_eq!(read_seen(&s, "se")["reason"], "exit");
}
