//! `troupe hooks migrate --from-claude` on a Claude Code settings file with events
//! Troupe has no equivalent for and Claude's tool names in matchers: the migrated
//! hooks load without a warning and fire for Troupe's tools.

use serde_json::{json, Value};

use super::{read_seen, seen};
use crate::common::*;

#[test]
fn migrated_claude_hooks_start_cleanly_and_fire_for_troupes_tool_names() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let record = |name: &str| json!([{"type": "command", "command": format!("cat > {}", seen(&s, name).display())}]);
    s.write(
        ".claude/settings.json",
        &json!({"hooks": {
            "PreToolUse": [{"matcher": "Edit|Write", "hooks": record("write")}],
            "PostToolUse": [{"matcher": "^(Grep|LS)$", "hooks": record("search")}],
            "SubagentStop": [{"hooks": record("subagent")}],
            "Stop": [{"hooks": record("stop")}],
        }})
        .to_string(),
    );
    let out = s
        .bare_command()
        .args(["hooks", "migrate", "--from-claude"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains(
            "Skipped the SubagentStop hook(s): no equivalent (gemini-cli and Troupe fire no hook when a subagent stops)."
        ),
        "{said}"
    );
    let settings: Value = serde_json::from_str(&s.read(".gemini/settings.json")).unwrap();
    let mut events: Vec<&String> = settings["hooks"].as_object().unwrap().keys().collect();
    events.sort();
    assert_eq!(
        events,
        ["AfterAgent", "AfterTool", "BeforeTool"],
        "{settings}"
    );
    assert_eq!(
        settings["hooks"]["BeforeTool"][0]["matcher"],
        "replace|write_file"
    );
    assert_eq!(
        settings["hooks"]["AfterTool"][0]["matcher"],
        "^(grep_search|list_directory)$"
    );

    let turns = [
        turn(vec![
            call(
                "write_file",
                json!({"file_path": "b.txt", "content": "beta\n"}),
            ),
            call("grep_search", json!({"pattern": "alpha"})),
        ]),
        turn(vec![text("done")]),
    ];
    let script = s.script(&turns);
    let out = s
        .command()
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "write and search", "--yolo"])
        .env("TROUPE_TRUST_WORKSPACE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("Invalid hook event name"), "{err}");
    assert!(!err.to_lowercase().contains("skipping"), "{err}");
    assert_eq!(read_seen(&s, "write")["tool_name"], "write_file");
    assert_eq!(read_seen(&s, "search")["tool_name"], "grep_search");
    assert_eq!(read_seen(&s, "stop")["hook_event_name"], "AfterAgent");
    assert!(!seen(&s, "subagent").exists());
    assert_eq!(s.read("b.txt"), "beta\n");
}
