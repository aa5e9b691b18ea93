//! The first interactive start in an untrusted folder with project settings asks once;
//! so does a start in a trusted folder whose configuration changed since.

use serde_json::json;

use super::term::Term;
use crate::common::*;

fn folder_with_settings() -> Scratch {
    let s = Scratch::new();
    s.write(".troupe/config.toml", "[approval]\nmode = \"auto_edit\"\n");
    s
}

#[test]
fn trusting_at_the_prompt_applies_the_settings_and_is_remembered() {
    let s = folder_with_settings();
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "a.txt", "content": "x\n"}),
        )]),
        turn(vec![text("Wrote it.")]),
    ];
    let t = Term::launch(&s, &turns, &[], &[]);
    let screen = t.wait_for("Choose 1, 2 or 3");
    assert!(
        screen.contains("Do you trust the files in this folder?"),
        "{screen}"
    );
    assert!(
        screen.contains("project settings (.troupe/config.toml)"),
        "{screen}"
    );
    t.line("1");
    t.wait_for("Type a request");
    let list = std::fs::read_to_string(s.home().join(".troupe/trusted_folders.toml")).unwrap();
    assert!(list.contains(&*s.ws().to_string_lossy()), "{list}");
    // The project's auto_edit applies: the edit runs without a confirmation.
    t.line("write a.txt");
    t.wait_for("Wrote it.");
    assert_eq!(s.read("a.txt"), "x\n");
}

#[test]
fn not_now_ignores_the_settings_and_remembers_nothing() {
    let s = folder_with_settings();
    let t = Term::launch(&s, &[turn(vec![text("hi")])], &[], &[]);
    t.wait_for("Choose 1, 2 or 3");
    t.line("3");
    let screen = t.wait_for("Type a request");
    assert!(screen.contains("not trusted"), "{screen}");
    assert!(!s.home().join(".troupe/trusted_folders.toml").exists());
}

#[test]
fn a_context_file_with_imports_alone_asks_and_the_parent_can_be_trusted() {
    // No project settings: only a context file that imports another file.
    let s = Scratch::new();
    s.write("GEMINI.md", "Project rules: see @notes.md\n");
    s.write("notes.md", "Be brief.\n");
    let t = Term::launch(&s, &[turn(vec![text("hi")])], &[], &[]);
    let screen = t.wait_for("Choose 1, 2 or 3");
    assert!(
        screen.contains("a context file with @ imports (GEMINI.md)"),
        "{screen}"
    );
    t.line("2");
    t.wait_for("Type a request");
    let list = std::fs::read_to_string(s.home().join(".troupe/trusted_folders.toml")).unwrap();
    let folder = s.ws().canonicalize().unwrap();
    let parent = folder.parent().unwrap();
    assert!(list.contains(&*parent.to_string_lossy()), "{list}");
    // The parent, not the folder itself (whose path the parent's is a prefix of).
    assert!(!list.contains(&*folder.to_string_lossy()), "{list}");
}

#[test]
fn the_prompt_lists_servers_hooks_commands_and_env_one_by_one() {
    let s = Scratch::new();
    s.write(
        ".troupe/config.toml",
        "[mcp_servers.ev]\ncommand = \"node\"\nargs = [\"ev-server.js\", \"--port\", \"9\"]\n\n[[hooks.BeforeTool]]\ncommand = \"./audit-every-call.sh\"\n",
    );
    s.write(".troupe/commands/deploy.toml", "prompt = \"ship it\"\n");
    s.write(".gemini/commands/git/commit.toml", "prompt = \"commit\"\n");
    s.write(".env", "TOKEN=1\n");
    let t = Term::launch(&s, &[turn(vec![text("hi")])], &[], &[]);
    let screen = t.wait_for("Choose 1, 2 or 3");
    for item in [
        "MCP server \"ev\" runs: node ev-server.js --port 9",
        "hook BeforeTool runs: ./audit-every-call.sh (.troupe/config.toml)",
        "custom command /deploy (.troupe/commands/deploy.toml)",
        "custom command /git:commit (.gemini/commands/git/commit.toml)",
        ".env: Troupe never loads it",
    ] {
        assert!(screen.contains(item), "{item} missing from:\n{screen}");
    }
    t.line("3");
    t.wait_for("Type a request");
}

#[test]
fn a_trusted_folder_whose_settings_changed_asks_again_and_the_answer_pins_them() {
    let s = Scratch::new();
    s.write(".troupe/config.toml", "[model]\nmax_turns = 9\n");
    let out = s.bare_command().arg("trust").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    s.write(".troupe/config.toml", "[approval]\nmode = \"auto_edit\"\n");
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "a.txt", "content": "x\n"}),
        )]),
        turn(vec![text("Wrote it.")]),
    ];
    let t = Term::launch(&s, &turns, &[], &[]);
    let screen = t.wait_for("Choose 1, 2 or 3");
    assert!(screen.contains("changed since you trusted"), "{screen}");
    assert!(screen.contains("changed: .troupe/config.toml"), "{screen}");
    t.line("1");
    t.wait_for("Type a request");
    // Trusted again: the changed settings apply (auto_edit: no confirmation).
    t.line("write a.txt");
    t.wait_for("Wrote it.");
    assert_eq!(s.read("a.txt"), "x\n");
    let config = s.bare_command().arg("config").output().unwrap();
    assert!(
        !stderr(&config).contains("changed since"),
        "{}",
        stderr(&config)
    );
}
