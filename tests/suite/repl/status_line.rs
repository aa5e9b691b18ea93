//! The status line under the prompt (gemini-cli's footer): drawn on the row below the
//! input while the prompt waits, kept there through editing, wide characters, a mode
//! change and a resize, and erased when the line is accepted or abandoned.

use super::term::Term;
use crate::common::*;

/// The status line of a fresh session on the scratch workspace's script: the scripted
/// model is named for its file.
fn status(s: &Scratch, mode: &str) -> String {
    format!(
        "scripted: {} · {mode} · 100% context left · 0 context files",
        s.root().join("responses.jsonl").display()
    )
}

/// The visible rows, trailing blanks trimmed.
fn rows(t: &Term) -> Vec<String> {
    t.screen()
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// The row of the last prompt on the screen.
fn prompt_row(rows: &[String]) -> usize {
    rows.iter()
        .rposition(|r| r.starts_with("> ") || r == ">")
        .expect("a prompt on the screen")
}

#[test]
fn the_status_line_sits_under_the_prompt_while_editing() {
    let s = Scratch::new();
    let t = Term::start(&s, &[turn(vec![text("Hello back.")])], &[], &[]);
    let status_line = status(&s, "default");
    t.wait_for(&status_line);
    let screen = rows(&t);
    let at = prompt_row(&screen);
    assert_eq!(screen[at], ">", "{screen:#?}");
    assert_eq!(screen[at + 1], status_line, "{screen:#?}");
    assert_eq!(t.cursor(), (2, at), "the cursor stays on the input line");

    // Wide characters: the cursor is after them, the status stays one row down.
    t.tmux_literal("héllo 日本語");
    t.wait_for("> héllo 日本語");
    let screen = rows(&t);
    let at = prompt_row(&screen);
    assert_eq!(screen[at + 1], status_line, "{screen:#?}");
    assert_eq!(t.cursor(), (2 + 6 + 6, at));
    t.keys(&["Left", "Left"]);
    t.tmux_literal("x");
    t.wait_for("> héllo 日x本語");
    assert_eq!(t.cursor(), (2 + 6 + 2 + 1, at));
    assert_eq!(rows(&t)[at + 1], status_line);

    // Shift+Tab changes the mode in the status line at once.
    t.keys(&["BTab"]);
    t.wait_for(&status(&s, "auto_edit"));
    t.keys(&["BTab", "BTab"]);
    t.wait_for_count(&status_line, 1);

    // Accepted: the line stays as typed, the status moves under the next prompt.
    t.keys(&["C-u"]);
    t.line("hi");
    t.wait_for("Hello back.");
    t.wait_prompt();
    let text = t.text();
    assert_eq!(
        text.matches("context left").count(),
        1,
        "only the waiting prompt has a status line:\n{text}"
    );
    let screen = rows(&t);
    let at = prompt_row(&screen);
    assert!(screen[at + 1].contains(" · default · "), "{screen:#?}");
    assert!(screen[at + 1].ends_with("% context left · 0 context files"));

    // Abandoned with Ctrl+C: the status line is erased, not left behind.
    t.tmux_literal("never mind");
    t.keys(&["C-c"]);
    t.wait_for("Press Ctrl+C again");
    t.wait_prompt();
    let text = t.text();
    assert_eq!(text.matches("context left").count(), 1, "{text}");

    // A narrower terminal: the status wraps under the input, the cursor stays put.
    t.resize(40);
    t.tmux_literal("héllo 日xy本語");
    t.wait_until_true("the line is redrawn at 40 columns", || {
        let screen = rows(&t);
        let at = prompt_row(&screen);
        let status: String = screen[at + 1..].concat();
        screen[at] == "> héllo 日xy本語"
            && status.starts_with("scripted: ")
            && status.contains(" · default · ")
            && status.ends_with("% context left · 0 context files")
    });
    t.keys(&["C-u"]);
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}
