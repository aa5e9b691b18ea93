//! gemini-cli 0.61's start flags in the interactive session: `-i/--prompt-interactive`,
//! `--screen-reader` and `-w/--worktree`.

use serde_json::json;

use super::confirm::all_function_responses;
use super::term::Term;
use super::EDIT_TOOL;
use crate::common::*;

/// The text parts of the user turns of a request.
fn user_texts(request: &serde_json::Value) -> Vec<String> {
    request["contents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "user")
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn prompt_interactive_runs_the_prompt_then_stays_in_the_session() {
    let s = Scratch::new();
    let turns = [
        turn(vec![text("First answer.")]),
        turn(vec![text("Second answer.")]),
    ];
    let t = Term::launch(&s, &turns, &[], &["-i", "the first question"]);
    t.wait_for("> the first question");
    t.wait_for("First answer.");
    t.wait_prompt();
    t.line("the second question");
    t.wait_for("Second answer.");
    t.wait_prompt();
    t.keys(&["C-d"]);
    t.wait_for("[troupe exited 0]");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    assert!(user_texts(&requests[0])
        .iter()
        .any(|t| t == "the first question"));
    assert!(user_texts(&requests[1])
        .iter()
        .any(|t| t == "the second question"));
}

fn edit_session(s: &Scratch, extra: &[&str]) -> (Term, String) {
    s.write("a.txt", "old value\n");
    let turns = [
        turn(vec![
            text("Editing a.txt.\n"),
            call(
                EDIT_TOOL,
                json!({"file_path": "a.txt", "instruction": "change it", "old_string": "old value", "new_string": "new value"}),
            ),
        ]),
        turn(vec![text("The value is new now.")]),
    ];
    let bytes = s.root().join("terminal.bytes");
    let t = Term::launch(s, &turns, &[("NO_COLOR", String::new())], extra);
    t.record_output(Some(&bytes));
    t.wait_for("Type a request");
    t.line("change the value");
    (t, bytes.display().to_string())
}

/// The CSI sequences (`ESC [ params final`) in `raw`, as `params` + `final`.
fn csi_sequences(raw: &str) -> Vec<String> {
    raw.split("\u{1b}[")
        .skip(1)
        .filter_map(|rest| {
            let end = rest.find(|c: char| c.is_ascii_alphabetic() || c == '~')?;
            Some(rest[..=end].to_string())
        })
        .collect()
}

/// Whether a CSI sequence moves the cursor up or sets colours or attributes.
fn redraws_or_styles(seq: &str) -> bool {
    seq.ends_with('A') || seq.ends_with('m')
}

#[test]
fn screen_reader_output_is_printed_once_in_order() {
    // Without the flag (colours allowed): the status line is redrawn under the prompt,
    // the menu is drawn with a marker, text is styled.
    let s = Scratch::new();
    let (t, bytes) = edit_session(&s, &[]);
    t.wait_for("Allow once");
    t.keys(&["Enter"]);
    t.wait_for("The value is new now.");
    t.wait_prompt();
    let raw = String::from_utf8_lossy(&std::fs::read(&bytes).unwrap()).into_owned();
    assert!(raw.contains('❯'), "{raw:?}");
    assert!(
        csi_sequences(&raw).iter().any(|q| redraws_or_styles(q)),
        "{raw:?}"
    );

    let s = Scratch::new();
    let (t, bytes) = edit_session(&s, &["--screen-reader"]);
    // The question is a numbered list answered with a typed line.
    t.wait_for("Choose 1-5: ");
    t.line("1");
    t.wait_for("Model: The value is new now.");
    t.wait_prompt();
    t.keys(&["C-d"]);
    t.wait_for("[troupe exited 0]");
    assert_eq!(s.read("a.txt"), "new value\n");
    let raw = String::from_utf8_lossy(&std::fs::read(&bytes).unwrap()).into_owned();
    assert!(!raw.contains('❯'), "{raw:?}");
    let moving: Vec<String> = csi_sequences(&raw)
        .into_iter()
        .filter(|q| redraws_or_styles(q))
        .collect();
    assert!(moving.is_empty(), "{moving:?} in {raw:?}");
    // Each model message is labelled; the status line is a line of its own after the turn.
    let screen = t.text();
    assert!(screen.contains("Model: Editing a.txt."), "{screen}");
    let status = screen
        .lines()
        .filter(|l| l.contains("% context left · "))
        .count();
    assert_eq!(status, 2, "{screen}");
    let responses = all_function_responses(&s.requests()[1]);
    assert!(responses[0]["response"]["output"]
        .as_str()
        .unwrap()
        .starts_with("Successfully modified file"));
}

#[test]
fn a_session_in_a_worktree_says_at_the_end_how_to_return_and_remove_it() {
    let s = Scratch::new();
    let git = super::super::worktree_flag::repository(&s);
    let t = Term::start(&s, &[turn(vec![text("ok")])], &[], &["-w", "review"]);
    let tree = s.ws().join(".gemini/worktrees/review");
    // The session's workspace is the worktree.
    let banner = t.text();
    assert!(banner.contains(&tree.display().to_string()), "{banner}");
    t.keys(&["C-d"]);
    let text = t.wait_for("[troupe exited 0]");
    let id = text
        .lines()
        .find_map(|l| l.split(" && troupe --resume ").nth(1))
        .unwrap_or_else(|| panic!("{text}"))
        .trim()
        .to_string();
    assert!(
        text.contains(&format!(
            "To resume work in this worktree: cd {} && troupe --resume {id}\nTo remove manually: git worktree remove {}",
            tree.display(),
            tree.display()
        )),
        "{text}"
    );
    assert!(tree.join("README.md").exists(), "kept");
    assert!(git(&["worktree", "list"]).contains(".gemini/worktrees/review"));
}

#[test]
fn a_session_started_inside_such_a_worktree_says_the_same_at_the_end() {
    let s = Scratch::new();
    let git = super::super::worktree_flag::repository(&s);
    git(&[
        "worktree",
        "add",
        ".gemini/worktrees/old",
        "-b",
        "worktree-old",
    ]);
    let tree = s.ws().join(".gemini/worktrees/old");
    let t = Term::launch_in(&s, &tree, &[turn(vec![text("ok")])], &[], &[]);
    t.wait_for("Type a request");
    t.keys(&["C-d"]);
    let shown = t.wait_for("[troupe exited 0]");
    let path = std::fs::canonicalize(&tree).unwrap();
    assert!(
        shown.contains(&format!(
            "To remove manually: git worktree remove {}",
            path.display()
        )),
        "{shown}"
    );

    // A checkout that is no such worktree: no such lines.
    let t = Term::launch(&s, &[turn(vec![text("ok")])], &[], &[]);
    t.wait_for("Type a request");
    t.keys(&["C-d"]);
    let shown = t.wait_for("[troupe exited 0]");
    assert!(!shown.contains("To remove manually"), "{shown}");
}
