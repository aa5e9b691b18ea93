//! Slash commands, the approval-mode chord and multi-line input.

use serde_json::json;

use super::term::Term;
use crate::common::*;

#[test]
fn stats_tools_help_and_suggestions() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let turns = [
        turn(vec![
            call("read_file", json!({"file_path": "a.txt"})),
            call("read_file", json!({"file_path": "missing.txt"})),
        ]),
        turn(vec![text("Read it.")]),
        // The summary /compress asks for.
        json!({"method": "generateContent", "response": {"candidates": [{"content": {"role": "model",
            "parts": [{"text": "<state_snapshot>a.txt was read.</state_snapshot>"}]}, "finishReason": "STOP"}]}}),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("read a.txt");
    t.wait_for("Read it.");
    t.wait_prompt();
    t.line("/stats");
    let text = t.wait_for("Corrections");
    assert!(text.contains("Model requests   2"), "{text}");
    assert!(
        text.contains("prompt 200 · output 20 · total 220"),
        "{text}"
    );
    assert!(text.contains("Tool calls       2 (✓ 1, ✗ 1)"), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("read_file"))
        .unwrap_or_else(|| panic!("no read_file row:\n{text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..4], ["read_file", "2", "1", "1"], "{row}");
    t.line("/tools");
    let text = t.wait_for("test_sleep ");
    assert!(text.contains("[edit]"), "{text}");
    t.line("/stat");
    t.wait_for("Unknown command /stat. Did you mean /stats?");
    t.line("/help");
    let text = t.wait_for("/approvals [revoke N]");
    assert!(text.contains("/memory show|refresh"), "{text}");
    t.line("/memory show");
    t.wait_for("No context files are loaded.");
    t.line("/compress");
    let text = t.wait_for("Conversation compressed from ");
    assert!(
        !text.contains("Chat history compressed"),
        "one message, not two:\n{text}"
    );
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn approval_mode_by_command_and_by_chord() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let turns = [
        turn(vec![call(
            super::EDIT_TOOL,
            json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "omega"}),
        )]),
        turn(vec![text("Refused by plan mode.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("/approval-mode yolo");
    t.wait_for("Approval mode set to yolo.");
    t.wait_for("[yolo] >");
    t.keys(&["C-y"]);
    t.wait_for("Approval mode: default");
    t.keys(&["BTab"]);
    t.wait_for("Approval mode: auto_edit");
    t.keys(&["BTab"]);
    t.wait_for("Approval mode: plan");
    t.line("");
    t.wait_for("[plan] >");
    t.line("try an edit");
    t.wait_for("Refused by plan mode.");
    assert_eq!(s.read("a.txt"), "alpha\n");
    let responses = function_responses(&s.requests()[1]);
    let error = responses[0]["response"]["error"].as_str().unwrap();
    assert!(error.contains("Plan Mode"), "{error}");
    t.line("/approval-mode sometimes");
    t.wait_for("Unknown approval mode `sometimes`");
}

#[test]
fn a_trailing_backslash_continues_the_prompt() {
    let s = Scratch::new();
    let turns = [turn(vec![text("Two lines received.")])];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("first line\\");
    t.line("second line");
    t.wait_for("Two lines received.");
    let request = &s.requests()[0];
    let contents = request["contents"].as_array().unwrap();
    assert_eq!(
        contents.last().unwrap()["parts"][0]["text"],
        "first line\nsecond line"
    );
    // The line editor keeps its history under the troupe home, per project.
    let dir = s.home().join(".troupe/histories");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let history = std::fs::read_to_string(file).unwrap();
    assert!(history.contains("second line"), "{history}");
}

#[test]
fn clear_starts_the_conversation_afresh() {
    let s = Scratch::new();
    let turns = [
        turn(vec![text("First answer.")]),
        turn(vec![text("Second answer.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("remember this");
    t.wait_for("First answer.");
    t.wait_prompt();
    t.line("/clear");
    t.wait_for("Conversation cleared.");
    t.line("fresh start");
    t.wait_for("Second answer.");
    let requests = s.requests();
    let contents = requests[1]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{contents:?}");
    assert_eq!(contents[0]["parts"][0]["text"], "fresh start");
}

#[test]
fn a_query_argument_starts_the_first_turn() {
    let s = Scratch::new();
    let turns = [turn(vec![text("Answered at once.")])];
    let t = Term::start(&s, &turns, &[], &["what is here?"]);
    t.wait_for("Answered at once.");
    t.wait_prompt();
    assert_eq!(
        s.requests()[0]["contents"][0]["parts"][0]["text"],
        "what is here?"
    );
}
