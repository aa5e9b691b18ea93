//! Confirmations of an edit: the diff of this call, and each answer.

use serde_json::json;

use super::term::Term;
use super::EDIT_TOOL;
use crate::common::*;

const ORIGINAL: &str = "line 1\nline 2\nold value\nline 4\n";

fn edit(file: &str, old: &str, new: &str) -> serde_json::Value {
    call(
        EDIT_TOOL,
        json!({"file_path": file, "instruction": "change the value", "old_string": old, "new_string": new}),
    )
}

/// Every functionResponse anywhere in a request's history.
pub fn all_function_responses(request: &serde_json::Value) -> Vec<serde_json::Value> {
    request["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap().iter())
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect()
}

#[test]
fn allow_once_shows_the_diff_and_applies_the_edit() {
    let s = Scratch::new();
    s.write("a.txt", ORIGINAL);
    let turns = [
        turn(vec![
            text("Editing a.txt.\n"),
            edit("a.txt", "old value", "new value"),
        ]),
        turn(vec![text("The value is new now.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("change the value");
    let shown = t.wait_for("Allow once");
    // The diff of this call, with old/new line numbers and the size of the change.
    assert!(shown.contains("a.txt  +1 -1"), "{shown}");
    assert!(shown.contains("3   - old value"), "{shown}");
    assert!(shown.contains("  3 + new value"), "{shown}");
    assert!(shown.contains("2 2   line 2"), "{shown}");
    assert_eq!(
        s.read("a.txt"),
        ORIGINAL,
        "nothing is written before the answer"
    );
    t.keys(&["Enter"]);
    t.wait_for("The value is new now.");
    t.wait_prompt();
    assert_eq!(s.read("a.txt"), "line 1\nline 2\nnew value\nline 4\n");
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(responses.len(), 1);
    let output = responses[0]["response"]["output"].as_str().unwrap();
    assert!(output.starts_with("Successfully modified file"), "{output}");
}

#[test]
fn no_leaves_the_file_and_the_model_gets_the_denial_and_the_feedback() {
    let s = Scratch::new();
    s.write("a.txt", ORIGINAL);
    let turns = [
        turn(vec![edit("a.txt", "old value", "new value")]),
        turn(vec![text("Understood, I will use a constant.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("change the value");
    t.wait_for("Allow once");
    // Arrow keys: up from the first option wraps to the last, "No".
    t.keys(&["Up"]);
    t.wait_for("❯ 5. No");
    t.keys(&["Enter"]);
    t.wait_for("Tell the model what to do differently");
    t.line("use a constant instead");
    t.wait_for("Request cancelled.");
    t.wait_prompt();
    assert_eq!(s.read("a.txt"), ORIGINAL);
    t.line("what now?");
    t.wait_for("Understood, I will use a constant.");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let responses = all_function_responses(&requests[1]);
    assert_eq!(responses.len(), 1);
    assert_eq!(
        responses[0]["response"]["error"],
        "[Operation Cancelled] Reason: User denied execution. The user said: use a constant instead"
    );
}

#[test]
fn escape_answers_no_without_asking_for_feedback() {
    let s = Scratch::new();
    s.write("a.txt", ORIGINAL);
    let turns = [turn(vec![edit("a.txt", "old value", "new value")])];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("change the value");
    t.wait_for("Allow once");
    t.keys(&["Escape"]);
    let text = t.wait_for("Request cancelled.");
    assert!(!text.contains("Tell the model"), "{text}");
    assert_eq!(s.read("a.txt"), ORIGINAL);
}

#[test]
fn allow_for_this_session_stops_asking_about_edits() {
    let s = Scratch::new();
    s.write("a.txt", ORIGINAL);
    s.write("b.txt", "beta\n");
    let turns = [
        turn(vec![edit("a.txt", "old value", "new value")]),
        turn(vec![text("First edit done.")]),
        turn(vec![edit("b.txt", "beta", "BETA")]),
        turn(vec![text("Second edit done.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("first edit");
    t.wait_for("Allow once");
    t.keys(&["2"]);
    t.wait_for("First edit done.");
    t.wait_prompt();
    assert!(t.screen().contains("[auto_edit] >"), "{}", t.screen());
    t.line("second edit");
    let text = t.wait_for("Second edit done.");
    assert_eq!(
        text.matches("Allow once").count(),
        1,
        "asked again:\n{text}"
    );
    assert_eq!(s.read("b.txt"), "BETA\n");
    t.wait_prompt();
    t.line("/approvals");
    let text = t.wait_for("removes an entry");
    assert!(text.contains("Approval mode: auto_edit"), "{text}");
    let file = s.ws().join("a.txt");
    assert!(
        text.contains(&format!(
            "1. {EDIT_TOOL} {}  (this session)",
            file.display()
        )),
        "{text}"
    );
}

#[test]
fn always_allow_is_saved_loaded_next_time_and_revocable() {
    let s = Scratch::new();
    s.write("a.txt", ORIGINAL);
    let turns = [
        turn(vec![edit("a.txt", "old value", "new value")]),
        turn(vec![text("Saved.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("edit");
    t.wait_for("Allow once");
    t.keys(&["3"]);
    t.wait_for("Saved.");
    t.wait_prompt();
    let config = s.home().join(".troupe/config.toml");
    let rule = format!("{EDIT_TOOL}({})", s.ws().join("a.txt").display());
    let saved = std::fs::read_to_string(&config).unwrap();
    assert!(
        saved.contains(&format!("allowed = [\"{rule}\"]")),
        "{saved}"
    );
    drop(t);

    // A new session loads the rule: the same file is edited without asking.
    let turns = [
        turn(vec![edit("a.txt", "new value", "newer value")]),
        turn(vec![text("Edited again.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("edit again");
    let text = t.wait_for("Edited again.");
    assert!(!text.contains("Allow once"), "{text}");
    assert_eq!(s.read("a.txt"), "line 1\nline 2\nnewer value\nline 4\n");
    t.wait_prompt();
    t.line("/approvals");
    let text = t.wait_for("removes an entry");
    assert!(
        text.contains(&format!("saved in {}", config.display())),
        "{text}"
    );
    t.line("/approvals revoke 1");
    t.wait_for("Revoked");
    let saved = std::fs::read_to_string(&config).unwrap();
    assert!(saved.contains("allowed = []"), "{saved}");
}

#[test]
fn a_rule_from_a_flag_is_shown_as_such_and_revoking_it_writes_nothing() {
    let s = Scratch::new();
    let turns = [turn(vec![text("Nothing to do.")])];
    let t = Term::start(&s, &turns, &[], &["-c", "approval.allowed=[\"glob\"]"]);
    t.line("/approvals");
    let text = t.wait_for("removes an entry");
    assert!(
        text.contains("(from flag -c approval.allowed=[\"glob\"])"),
        "{text}"
    );
    assert!(!text.contains("saved in"), "{text}");
    t.line("/approvals revoke 1");
    t.wait_for("Revoked");
    t.wait_prompt();
    assert!(
        !s.home().join(".troupe/config.toml").exists(),
        "revoking a rule of this run wrote the user config"
    );
}

#[test]
fn modify_with_external_editor_lands_the_edited_content() {
    let s = Scratch::new();
    s.write("a.txt", ORIGINAL);
    let log = s.root().join("editor.log");
    let editor = s.root().join("fake-editor.sh");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\necho \"$# $1 $(stat -c %a \"$1\")\" >> {log}\nprintf 'edited by the user\\n' > \"$1\"\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let turns = [
        turn(vec![edit("a.txt", "old value", "new value")]),
        turn(vec![text("Took your version.")]),
    ];
    let t = Term::start(&s, &turns, &[("EDITOR", editor.display().to_string())], &[]);
    t.line("edit");
    t.wait_for("Allow once");
    t.keys(&["4"]);
    // The proposal came back edited: the prompt asks again with the new diff.
    let text = t.wait_for_count("Allow once", 2);
    assert!(text.contains("+ edited by the user"), "{text}");
    t.keys(&["1"]);
    t.wait_for("Took your version.");
    assert_eq!(s.read("a.txt"), "edited by the user\n");
    let logged = std::fs::read_to_string(&log).unwrap();
    let words: Vec<&str> = logged.split_whitespace().collect();
    assert_eq!(
        words[0], "1",
        "a plain editor gets the proposal only: {logged}"
    );
    assert_eq!(words[2], "600", "temp files are private: {logged}");
    assert!(
        !std::path::Path::new(words[1]).exists(),
        "temp file left behind"
    );
}

#[test]
fn the_diff_is_coloured_on_a_terminal_unless_no_color_is_set() {
    for (no_color, coloured) in [("", true), ("1", false)] {
        let s = Scratch::new();
        s.write("a.txt", ORIGINAL);
        let turns = [turn(vec![edit("a.txt", "old value", "new value")])];
        let t = Term::start(&s, &turns, &[("NO_COLOR", no_color.to_string())], &[]);
        t.line("change the value");
        t.wait_for("Allow once");
        let text = t.text_with_escapes();
        let removed = text
            .lines()
            .find(|l| l.contains("- old value"))
            .unwrap_or_else(|| panic!("no removed line:\n{text}"));
        assert_eq!(
            removed.contains('\u{1b}'),
            coloured,
            "NO_COLOR={no_color:?}: {removed:?}"
        );
    }
}
