//! gemini-cli's policy files (`[[rule]]` TOML) decide calls before the approval mode:
//! the `troupe` binary, headless, with files in `~/.gemini/policies/`,
//! `~/.troupe/policies/`, `--policy` and `--admin-policy`, and the rules
//! `--allowed-tools` and `--allowed-mcp-server-names` stand for.

use serde_json::{json, Value};

use crate::common::*;

/// Writes a user policy file (`~/.gemini/policies/<name>`).
fn user_policy(s: &Scratch, name: &str, toml: &str) {
    let dir = s.home().join(".gemini").join("policies");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), toml).unwrap();
}

fn shell(command: &str) -> Value {
    call("run_shell_command", json!({ "command": command }))
}

/// Runs one answer of `calls` headless with `args`; the function responses the model
/// got back, in call order.
fn run_calls(s: &Scratch, calls: Vec<Value>, args: &[&str]) -> (Vec<Value>, String) {
    let _ = std::fs::remove_file(s.requests_path());
    let turns = [turn(calls), turn(vec![text("done")])];
    let mut all = vec!["-p", "go"];
    all.extend_from_slice(args);
    let out = s.run(&turns, &all);
    let requests = s.requests();
    assert!(requests.len() >= 2, "{}", stderr(&out));
    (function_responses(&requests[1]), stderr(&out))
}

fn error_of(response: &Value) -> Option<&str> {
    response["response"]["error"].as_str()
}

/// The shell rule of the policy-engine reference's schema (its denyMessage) and the
/// tools reference's `.env` rule, as the documentation writes them.
const DOCS_POLICY: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = "rm -rf"
decision = "deny"
priority = 100
denyMessage = "Deletion is permanent"

[[rule]]
toolName = "write_file"
argsPattern = '"file_path":".*\.env"'
decision = "deny"
priority = 100
denyMessage = "Writing to .env files is not allowed."
"#;

#[test]
fn documented_deny_rules_refuse_with_their_message_even_in_yolo() {
    let s = Scratch::new();
    user_policy(&s, "docs.toml", DOCS_POLICY);
    s.write("build/keep.txt", "x\n");
    let calls = vec![
        shell("rm -rf build"),
        call(
            "write_file",
            json!({"file_path": ".env", "content": "K=1\n"}),
        ),
        call(
            "write_file",
            json!({"file_path": "notes.txt", "content": "n\n"}),
        ),
    ];
    let (responses, err) = run_calls(&s, calls, &["--yolo"]);
    assert_eq!(
        error_of(&responses[0]),
        Some("Tool execution denied by policy. Deletion is permanent"),
        "{responses:#?}\n{err}"
    );
    assert_eq!(
        error_of(&responses[1]),
        Some("Tool execution denied by policy. Writing to .env files is not allowed."),
        "{responses:#?}"
    );
    assert!(error_of(&responses[2]).is_none(), "{responses:#?}");
    assert!(s.ws().join("build/keep.txt").exists());
    assert!(!s.ws().join(".env").exists());
    assert!(s.ws().join("notes.txt").exists());
}

#[test]
fn an_allowed_prefix_runs_unasked_in_default_mode_and_only_alone() {
    let s = Scratch::new();
    user_policy(
        &s,
        "touch.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"allow\"\npriority = 100\n",
    );
    let calls = vec![
        shell("touch made.txt"),
        shell("touch other.txt && mkdir sneaky"),
        shell("mkdir plain"),
    ];
    let (responses, err) = run_calls(&s, calls, &[]);
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}\n{err}");
    assert!(s.ws().join("made.txt").exists());
    // A command no rule allows leaves the line to the approval mode: asked, so refused.
    assert!(error_of(&responses[1]).is_some(), "{responses:#?}");
    assert!(error_of(&responses[2]).is_some(), "{responses:#?}");
    assert!(!s.ws().join("sneaky").exists() && !s.ws().join("plain").exists());
}

#[test]
fn the_higher_priority_rule_decides() {
    let s = Scratch::new();
    let file = |deny_priority: u32| {
        format!(
            "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"allow\"\npriority = 100\n\n\
             [[rule]]\ntoolName = \"run_shell_command\"\nargsPattern = \"secret\"\ndecision = \"deny\"\npriority = {deny_priority}\ndenyMessage = \"No secrets.\"\n"
        )
    };
    user_policy(&s, "p.toml", &file(200));
    let (responses, _) = run_calls(&s, vec![shell("touch secret.txt")], &[]);
    assert_eq!(
        error_of(&responses[0]),
        Some("Tool execution denied by policy. No secrets.")
    );
    user_policy(&s, "p.toml", &file(50));
    let (responses, err) = run_calls(&s, vec![shell("touch secret.txt")], &[]);
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}\n{err}");
    assert!(s.ws().join("secret.txt").exists());
}

#[test]
fn modes_limit_a_rule_to_those_approval_modes() {
    let s = Scratch::new();
    user_policy(
        &s,
        "m.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"allow\"\npriority = 100\n\n\
         [[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"deny\"\npriority = 200\nmodes = [\"autoEdit\"]\n",
    );
    let (responses, err) = run_calls(&s, vec![shell("touch a.txt")], &[]);
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}\n{err}");
    let (responses, _) = run_calls(
        &s,
        vec![shell("touch b.txt")],
        &["--approval-mode", "auto_edit"],
    );
    assert_eq!(
        error_of(&responses[0]),
        Some("Tool execution denied by policy.")
    );
    assert!(!s.ws().join("b.txt").exists());
}

#[test]
fn ask_user_asks_so_headless_refuses_a_call_that_would_run() {
    let s = Scratch::new();
    s.write("a.txt", "hello\n");
    user_policy(
        &s,
        "ask.toml",
        "[[rule]]\ntoolName = [\"read_file\"]\ndecision = \"ask_user\"\npriority = 1\n",
    );
    let (responses, _) = run_calls(
        &s,
        vec![call("read_file", json!({"file_path": "a.txt"}))],
        &["--yolo"],
    );
    let error = error_of(&responses[0]).unwrap_or_default();
    assert!(
        error.contains("needs the user's approval"),
        "{responses:#?}"
    );
}

#[test]
fn admin_beats_user_and_policy_flags_choose_the_files() {
    let s = Scratch::new();
    let allow = "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"allow\"\npriority = 999\n";
    user_policy(&s, "user.toml", allow);
    let admin = s.write(
        "admin/deny.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"deny\"\npriority = 0\ndenyMessage = \"Admins say no.\"\n",
    );
    let admin = admin.to_string_lossy().into_owned();
    let (responses, _) = run_calls(&s, vec![shell("touch x.txt")], &["--admin-policy", &admin]);
    assert_eq!(
        error_of(&responses[0]),
        Some("Tool execution denied by policy. Admins say no.")
    );
    // Without it, the user tier allows.
    let (responses, err) = run_calls(&s, vec![shell("touch y.txt")], &[]);
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}\n{err}");
    // --policy replaces the user directory: its rule is not read, so headless refuses.
    let other = s.write("p/empty.toml", "");
    let other = other.to_string_lossy().into_owned();
    let (responses, _) = run_calls(&s, vec![shell("touch z.txt")], &["--policy", &other]);
    assert!(error_of(&responses[0]).is_some(), "{responses:#?}");
    // ~/.troupe/policies/ is read too, and a user rule of any priority (here 0: 4.000)
    // comes before an allow rule of approval.allowed (3.950).
    std::fs::remove_dir_all(s.home().join(".gemini")).unwrap();
    let dir = s.home().join(".troupe").join("policies");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("t.toml"),
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"deny\"\npriority = 0\n",
    )
    .unwrap();
    std::fs::write(
        s.home().join(".troupe").join("config.toml"),
        "[approval]\nallowed = [\"run_shell_command(touch)\"]\n",
    )
    .unwrap();
    let (responses, _) = run_calls(&s, vec![shell("touch w.txt")], &[]);
    assert_eq!(
        error_of(&responses[0]),
        Some("Tool execution denied by policy.")
    );
}

#[test]
fn allowed_tools_run_unasked_and_narrow_the_shell() {
    let s = Scratch::new();
    let calls = vec![shell("touch t.txt"), shell("mkdir d")];
    let (responses, err) = run_calls(&s, calls, &["--allowed-tools", "run_shell_command(touch)"]);
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}\n{err}");
    assert!(s.ws().join("t.txt").exists());
    // gemini-cli's narrowing rule: the other shell commands are denied outright.
    assert_eq!(
        error_of(&responses[1]),
        Some("Tool execution denied by policy.")
    );
    let (responses, _) = run_calls(
        &s,
        vec![call(
            "write_file",
            json!({"file_path": "w.txt", "content": "w\n"}),
        )],
        &["--allowed-tools", "write_file"],
    );
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}");
}

#[test]
fn allowed_mcp_server_names_start_only_those_and_run_their_tools() {
    let s = Scratch::new();
    let servers = format!(
        "{}\n{}",
        super::mcp::server("fx", &[], ""),
        super::mcp::server("ev", &[], "")
    );
    super::mcp::configure(&s, &servers);
    let calls = vec![
        call("mcp_fx_echo", json!({"text": "x"})),
        call("mcp_ev_echo", json!({"text": "y"})),
    ];
    let (responses, err) = run_calls(&s, calls, &["--allowed-mcp-server-names", "fx"]);
    let requests = s.requests();
    let declared: Vec<String> = requests[0]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| {
            t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|d| d["name"].as_str().map(str::to_string))
        .collect();
    assert!(declared.iter().any(|n| n == "mcp_fx_echo"), "{declared:?}");
    assert!(
        !declared.iter().any(|n| n.starts_with("mcp_ev_")),
        "{declared:?}"
    );
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}\n{err}");
    assert!(
        error_of(&responses[1]).is_some_and(|e| e.contains("not found")),
        "{responses:#?}"
    );
}

#[test]
fn a_malformed_file_is_named_and_left_out() {
    let s = Scratch::new();
    s.write("a.txt", "hi\n");
    user_policy(
        &s,
        "bad.toml",
        "[[rule]]\ntoolName = \"read_file\"\ndecision = \"block\"\npriority = 10\n",
    );
    user_policy(&s, "broken.toml", "[[rule]\ntoolName = \n");
    let (responses, err) = run_calls(
        &s,
        vec![call("read_file", json!({"file_path": "a.txt"}))],
        &[],
    );
    assert!(
        err.contains("[USER] Policy file error in bad.toml:\n  Schema validation failed\nInvalid policy rule (rule #1):\n  - Field \"rule.0.decision\": Invalid enum value. Expected 'allow' | 'deny' | 'ask_user', received 'block'"),
        "{err}"
    );
    assert!(
        err.contains("[USER] Policy file error in broken.toml:\n  TOML parsing failed"),
        "{err}"
    );
    assert!(err.contains("Suggestion: Check for syntax errors"), "{err}");
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}");
}

#[test]
fn troupe_config_lists_the_rules_in_the_order_they_are_tried() {
    let s = Scratch::new();
    user_policy(
        &s,
        "a.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"git\"\ndecision = \"allow\"\npriority = 100\n",
    );
    let out = s
        .bare_command()
        .args(["config", "--allowed-tools", "write_file"])
        .output()
        .unwrap();
    let text = stdout(&out);
    let allowed = text
        .find("#     4.300 allow write_file  (Settings (Tools Allowed))")
        .unwrap_or_else(|| panic!("{text}"));
    let user = text
        .find("#     4.100 allow run_shell_command argsPattern")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(allowed < user, "{text}");
    assert!(text.contains("(User: a.toml)"), "{text}");
    assert!(
        text.contains("approval.allowed rules rank at 3.950"),
        "{text}"
    );
    let out = s
        .bare_command()
        .args(["config", "--json"])
        .output()
        .unwrap();
    let json = json_out(&out);
    let rules = &json["effective"]["policy"]["rules"];
    assert_eq!(rules[0]["decision"], "allow", "{json:#}");
    assert_eq!(rules[0]["priority"], "4.100", "{json:#}");
    assert_eq!(rules[0]["source"], "User: a.toml", "{json:#}");
}

#[test]
fn a_lookaround_pattern_is_left_out_and_a_denied_tool_stays_declared() {
    let s = Scratch::new();
    s.write("a.txt", "hi\n");
    user_policy(
        &s,
        "p.toml",
        "[[rule]]\ntoolName = \"read_file\"\nargsPattern = \"(?=a)\"\ndecision = \"deny\"\npriority = 10\n\n\
         [[rule]]\ntoolName = \"glob\"\ndecision = \"deny\"\npriority = 10\ndenyMessage = \"No globbing.\"\n",
    );
    let calls = vec![
        call("read_file", json!({"file_path": "a.txt"})),
        call("glob", json!({"pattern": "*.txt"})),
    ];
    let (responses, err) = run_calls(&s, calls, &[]);
    assert!(
        err.contains(
            "[USER] Policy file error in p.toml:\n  Invalid regex pattern\nPattern: (?=a)"
        ),
        "{err}"
    );
    assert!(error_of(&responses[0]).is_none(), "{responses:#?}");
    assert_eq!(
        error_of(&responses[1]),
        Some("Tool execution denied by policy. No globbing.")
    );
    let requests = s.requests();
    let declared = serde_json::to_string(&requests[0]["tools"]).unwrap();
    assert!(declared.contains("\"glob\""), "{declared}");
}

#[test]
fn interactive_rules_apply_only_where_a_person_answers() {
    let s = Scratch::new();
    s.write("a.txt", "hi\n");
    user_policy(
        &s,
        "i.toml",
        "[[rule]]\ntoolName = \"glob\"\ndecision = \"deny\"\npriority = 10\ninteractive = false\n\n\
         [[rule]]\ntoolName = \"read_file\"\ndecision = \"deny\"\npriority = 10\ninteractive = true\n",
    );
    let calls = vec![
        call("glob", json!({"pattern": "*.txt"})),
        call("read_file", json!({"file_path": "a.txt"})),
    ];
    let (responses, err) = run_calls(&s, calls, &[]);
    assert_eq!(
        error_of(&responses[0]),
        Some("Tool execution denied by policy."),
        "{responses:#?}\n{err}"
    );
    assert!(error_of(&responses[1]).is_none(), "{responses:#?}");
}

#[test]
fn a_rule_naming_a_legacy_tool_name_covers_the_tool() {
    let s = Scratch::new();
    s.write("a.txt", "hi\n");
    user_policy(
        &s,
        "legacy.toml",
        "[[rule]]\ntoolName = \"search_file_content\"\ndecision = \"deny\"\npriority = 10\ndenyMessage = \"No searching.\"\n",
    );
    let (responses, err) = run_calls(&s, vec![call("grep_search", json!({"pattern": "hi"}))], &[]);
    assert_eq!(
        error_of(&responses[0]),
        Some("Tool execution denied by policy. No searching."),
        "{responses:#?}\n{err}"
    );
}

#[test]
fn a_subagent_rule_covers_that_agents_calls_only() {
    use super::agents::{answer, invoke, parts, run, seen, tool};
    use crate::common::loopback::Loopback;
    let s = Scratch::new();
    s.write("a.txt", "FILE-TEXT\n");
    s.write(
        ".gemini/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews one file.\ntools:\n  - read_file\n---\nYou review code.\n",
    );
    user_policy(
        &s,
        "agents.toml",
        "[[rule]]\ntoolName = \"read_file\"\nsubagent = \"reviewer\"\ndecision = \"deny\"\npriority = 10\ndenyMessage = \"Not for reviewers.\"\n",
    );
    let read = json!({"functionCall": {"name": "read_file", "args": {"file_path": "a.txt"}}});
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        match (seen.first.contains("PARENT-TASK"), seen.rounds) {
            (true, 0) => parts(json!([invoke("reviewer", "CHILD: review a.txt"), read])),
            (true, _) => answer("done"),
            (false, 0) => tool("read_file", json!({"file_path": "a.txt"})),
            (false, _) => tool("complete_task", json!({"result": "could not read"})),
        }
    });
    let out = run(&s, &server, "PARENT-TASK: review", &[]);
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let child = bodies
        .iter()
        .find(|b| b.contains("CHILD: review") && b.contains("functionResponse"))
        .unwrap_or_else(|| panic!("{}\n{bodies:#?}", stderr(&out)));
    assert!(
        child.contains("Tool execution denied by policy. Not for reviewers."),
        "{child}"
    );
    let parent = bodies
        .iter()
        .rev()
        .find(|b| b.contains("PARENT-TASK") && b.contains("functionResponse"))
        .unwrap();
    assert!(parent.contains("FILE-TEXT"), "{parent}");
    assert!(!parent.contains("Not for reviewers"), "{parent}");
}

#[test]
fn workspace_policy_files_are_not_read_trusted_or_not_and_the_start_says_so() {
    // gemini-cli 0.61 has workspace policies switched off; Troupe too, but it says so.
    let s = Scratch::new();
    s.write("a.txt", "hi\n");
    let deny = "[[rule]]\ntoolName = \"read_file\"\ndecision = \"deny\"\npriority = 10\n";
    s.write(".gemini/policies/deny.toml", deny);
    s.write(".troupe/policies/deny.toml", deny);
    for trust in [&["--skip-trust"][..], &[][..]] {
        let (responses, err) = run_calls(
            &s,
            vec![call("read_file", json!({"file_path": "a.txt"}))],
            trust,
        );
        assert!(error_of(&responses[0]).is_none(), "{responses:#?}");
        assert!(
            err.contains("Not reading the policy files of this workspace (.gemini/policies (1), .troupe/policies (1)): workspace policies are off, as in gemini-cli 0.61"),
            "{err}"
        );
    }
    // A user policy file is read beside them.
    user_policy(&s, "deny.toml", deny);
    let (responses, err) = run_calls(
        &s,
        vec![call("read_file", json!({"file_path": "a.txt"}))],
        &["--skip-trust"],
    );
    assert!(error_of(&responses[0]).is_some(), "{responses:#?}");
    assert!(
        err.contains("Not reading the policy files of this workspace"),
        "{err}"
    );
}
