//! gemini-cli's sessions of the same project on a shared HOME: `--list-sessions` shows
//! them beside Troupe's, marked "(gemini-cli)"; resuming one copies it into Troupe's
//! store and continues the copy, gemini-cli's file left as it was; Troupe never deletes
//! one.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::*;

const GEMINI_ID: &str = "a661c424-cc54-48b7-81d8-8412f033c66d";
const FILE_NAME: &str = "session-2026-11-23T11-02-a661c424.jsonl";

/// A gemini-cli 0.61 session of the workspace where gemini-cli keeps it (its project
/// registry and marker written as gemini-cli writes them); returns the file.
fn gemini_cli_session(s: &Scratch) -> PathBuf {
    let gemini = s.home().join(".gemini");
    let project = gemini.join("tmp/ws");
    std::fs::create_dir_all(project.join("chats")).unwrap();
    std::fs::write(project.join(".project_root"), s.ws().display().to_string()).unwrap();
    let registry = serde_json::json!({"projects": {s.ws().display().to_string(): "ws"}});
    std::fs::write(gemini.join("projects.json"), registry.to_string()).unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sessions/gemini-cli-0.61-session.jsonl"
    );
    let file = project.join("chats").join(FILE_NAME);
    std::fs::copy(fixture, &file).unwrap();
    file
}

fn list(s: &Scratch) -> String {
    let out = s.bare_command().arg("--list-sessions").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn gemini_cli_sessions_are_listed_and_resumed_from_a_copy() {
    let s = Scratch::new();
    let theirs = gemini_cli_session(&s);
    let original = std::fs::read(&theirs).unwrap();
    let listed = list(&s);
    assert!(
        listed.contains("Available sessions for this project (1):"),
        "{listed}"
    );
    let line = listed
        .lines()
        .find(|l| l.contains(GEMINI_ID))
        .unwrap_or_else(|| panic!("not listed:\n{listed}"));
    assert!(line.ends_with("(gemini-cli)"), "{line}");

    let out = s.run(
        &[turn(vec![text("Resumed in Troupe.")])],
        &["-r", "1", "-p", "What did you do?"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // The model got gemini-cli's conversation.
    let sent = s.requests()[0]["contents"].to_string();
    assert!(sent.contains("What did you do?"), "{sent}");
    assert!(
        s.requests()[0]["contents"].as_array().unwrap().len() > 2,
        "{sent}"
    );
    // gemini-cli's file is untouched; Troupe continued a copy with the same id.
    assert_eq!(std::fs::read(&theirs).unwrap(), original);
    let copy = s.home().join(".troupe/tmp/ws/chats").join(FILE_NAME);
    let text = std::fs::read_to_string(&copy).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["sessionId"], GEMINI_ID);
    assert!(text.contains("Resumed in Troupe."), "{text}");
    // Listed once, now as Troupe's own.
    let listed = list(&s);
    assert!(
        listed.contains("Available sessions for this project (1):"),
        "{listed}"
    );
    assert!(!listed.contains("(gemini-cli)"), "{listed}");
}

#[test]
fn troupe_never_deletes_a_gemini_cli_session() {
    let s = Scratch::new();
    let theirs = gemini_cli_session(&s);
    let out = s
        .bare_command()
        .args(["--delete-session", "1"])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("gemini-cli"), "{}", stderr(&out));
    assert!(theirs.exists());
    // Nor does retention, however strict.
    let out = s.run(
        &[turn(vec![text("new")])],
        &["-c", "sessions.max_count=1", "-p", "hi"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(theirs.exists());
}
