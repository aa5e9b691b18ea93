//! The commands a gemini-cli or Claude Code user reaches for: `/diff`, `/undo`, the
//! `/resume` picker, `/settings`, `/theme` and `/vim`.

use serde_json::json;

use super::term::Term;
use crate::common::*;

fn write(file: &str, content: &str) -> serde_json::Value {
    call("write_file", json!({"file_path": file, "content": content}))
}

fn replace(file: &str, old: &str, new: &str) -> serde_json::Value {
    call(
        "replace",
        json!({"file_path": file, "instruction": "change it", "old_string": old, "new_string": new}),
    )
}

#[test]
fn diff_shows_the_sessions_changes_and_undo_walks_them_back() {
    let s = Scratch::new();
    s.write("a.txt", "one\ntwo\nthree\n");
    let turns = [
        turn(vec![replace("a.txt", "two", "TWO")]),
        turn(vec![replace("a.txt", "three", "THREE \u{1b}[2J")]),
        turn(vec![write("new.txt", "fresh\n")]),
        turn(vec![text("All done.")]),
    ];
    let t = Term::start(&s, &turns, &[], &["--yolo"]);
    t.line("/diff");
    t.wait_for("No files were changed in this session.");
    t.line("edit the files");
    t.wait_for("All done.");
    t.wait_prompt();
    t.line("/diff");
    let shown = t.wait_for("2 files changed");
    for line in [
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,3 +1,3 @@",
        " one",
        "-two",
        "+TWO",
        "-three",
        "+THREE \\e[2J",
        "--- /dev/null",
        "+++ b/new.txt",
        "+fresh",
    ] {
        assert!(
            shown.lines().any(|l| l == line),
            "no line {line:?} in:\n{shown}"
        );
    }
    // Undo goes back one edit at a time: the created file goes first.
    t.line("/undo");
    t.wait_for("Undone: new.txt was created by the edit and is removed. (2 more edit(s) to undo)");
    assert!(!s.ws().join("new.txt").exists());
    t.line("/undo");
    t.wait_for("Undone: a.txt is back as it was before the edit. (1 more edit(s) to undo)");
    assert_eq!(s.read("a.txt"), "one\nTWO\nthree\n");
    // A change made outside the session since is never overwritten.
    s.write("a.txt", "one\nTWO\nthree\nmine\n");
    t.line("/undo");
    t.wait_for("a.txt changed on disk since that edit, so it was left as it is");
    assert_eq!(s.read("a.txt"), "one\nTWO\nthree\nmine\n");
    s.write("a.txt", "one\nTWO\nthree\n");
    t.line("/undo");
    t.wait_for_count("Undone: a.txt is back as it was before the edit.", 2);
    assert_eq!(s.read("a.txt"), "one\ntwo\nthree\n");
    t.line("/undo");
    t.wait_for("There is no edit of this session to undo.");
    t.line("/diff");
    t.wait_for_count("No files were changed in this session.", 2);
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn diff_is_coloured_on_a_terminal() {
    let s = Scratch::new();
    s.write("a.txt", "old\n");
    let turns = [
        turn(vec![replace("a.txt", "old", "new")]),
        turn(vec![text("Done.")]),
    ];
    let t = Term::start(&s, &turns, &[("NO_COLOR", String::new())], &["--yolo"]);
    t.line("change it");
    t.wait_for("Done.");
    t.wait_prompt();
    t.line("/diff");
    t.wait_for("1 file changed");
    let text = t.text_with_escapes();
    assert!(
        text.contains("\u{1b}[31m-old"),
        "removed lines red:\n{text}"
    );
    assert!(
        text.contains("\u{1b}[32m+new"),
        "added lines green:\n{text}"
    );
}

#[test]
fn resume_without_an_argument_offers_a_picker() {
    let s = Scratch::new();
    for question in ["the first old question", "the second old question"] {
        let out = s.run(&[turn(vec![text("Old answer.")])], &["-p", question]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let turns = [turn(vec![text("Continued.")])];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("/resume");
    t.wait_for("Enter to resume, Esc to stay in this session");
    // The newest other session is marked first.
    let shown = t.wait_for("❯ 2. the second old question");
    assert!(shown.contains("   1. the first old question"), "{shown}");
    t.keys(&["Up"]);
    t.wait_for("❯ 1. the first old question");
    t.keys(&["Enter"]);
    t.wait_for("Resumed session ");
    t.wait_prompt();
    t.line("and now?");
    t.wait_for("Continued.");
    t.wait_prompt();
    let last = s.requests().pop().unwrap();
    let texts: Vec<&str> = last["contents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "user")
        .filter_map(|c| c["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(texts, ["the first old question", "and now?"]);
    // Esc keeps the current session.
    t.line("/resume");
    t.wait_for_count("Enter to resume, Esc to stay in this session", 2);
    t.keys(&["Escape"]);
    t.wait_for("Staying in this session");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn settings_are_shown_and_one_changes_for_the_session() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("never reached")]),
    ];
    s.write("a.txt", "x\n");
    let t = Term::start(&s, &turns, &[], &["-c", "model.max_turns=9"]);
    t.line("/settings model.max_turns");
    t.wait_for("model.max_turns = 9  # flag -c model.max_turns=9");
    t.line("/settings model.max_turn 3");
    t.wait_for("unknown setting `model.max_turn` in /settings");
    t.line("/settings model.max_turns many");
    t.wait_for("setting `model.max_turns` in /settings must be");
    t.line("/settings ui.theme purple");
    t.wait_for("setting `ui.theme` in /settings: `purple` is not one of default, light, no-color");
    t.line("/settings shell.inactivity_timeout_secs 5");
    t.wait_for("is read when the session starts, so it was not changed");
    t.line("/settings model.max_turns 2");
    t.wait_for("model.max_turns = 2 (for this session)");
    t.line("/settings model.max_turns");
    t.wait_for("model.max_turns = 2  # /settings");
    t.line("read it again and again");
    t.wait_for("Stopped after 2 model turns (model.max_turns).");
    t.wait_prompt();
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn themes_are_listed_and_switched_and_vim_mode_toggles() {
    let s = Scratch::new();
    let t = Term::start(&s, &[], &[("NO_COLOR", String::new())], &[]);
    t.line("/theme");
    let shown = t.wait_for("/theme NAME switches");
    for name in ["default", "light", "no-color"] {
        assert!(shown.contains(name), "{shown}");
    }
    t.line("/theme purple");
    t.wait_for("Unknown theme `purple`: use default, light, no-color.");
    let help_output = |name: &str| {
        let file = s.root().join(name);
        t.record_output(Some(&file));
        t.line("/help");
        t.wait_for_count("show this help", if name == "before.bin" { 1 } else { 2 });
        t.wait_prompt();
        t.record_output(None);
        String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned()
    };
    let before = help_output("before.bin");
    assert!(
        before.contains("\u{1b}[36m/help"),
        "cyan names by default: {before:?}"
    );
    t.line("/theme no-color");
    t.wait_for("Theme set to no-color for this session.");
    let after = help_output("after.bin");
    assert!(after.contains("/help"), "{after:?}");
    for colour in ["\u{1b}[36m", "\u{1b}[1m", "\u{1b}[2m"] {
        assert!(
            !after.contains(colour),
            "no colours after /theme no-color: {after:?}"
        );
    }
    t.line("/theme light");
    t.wait_for("Theme set to light for this session.");
    // Vim mode: shown in the status line; Esc then `0` and `i` edit in vi style.
    assert!(!t.screen().contains(" · vim · "), "{}", t.screen());
    t.line("/vim");
    t.wait_for("Entered Vim mode. Run /vim again to exit.");
    t.wait_for(" · vim · ");
    t.tmux_literal("default");
    t.keys(&["Escape"]);
    // Past rustyline's 500 ms wait for the rest of an escape sequence, so `0` is a key
    // of its own (not Alt+0).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    t.tmux_literal("0i/theme ");
    t.keys(&["Enter"]);
    t.wait_for("Theme set to default for this session.");
    t.line("/vim");
    t.wait_for("Exited Vim mode.");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn vim_mode_is_the_default_with_ui_vim_mode() {
    let s = Scratch::new();
    let t = Term::start(&s, &[], &[], &["-c", "ui.vim_mode=true"]);
    t.wait_for(" · vim · ");
    t.line("/help");
    let help = t.wait_for("toggle vi keys");
    for command in ["/diff", "/undo", "/settings", "/theme", "/vim"] {
        assert!(help.contains(command), "{help}");
    }
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}
