//! What the user approves is exactly what runs, and nothing a model or a server sends
//! is obeyed by the terminal: escape sequences are shown (`\e]52;…^G`), so the
//! clipboard, the window title and the screen stay the user's.

use serde_json::json;

use super::term::Term;
use crate::common::*;
use crate::suite::mcp::{configure, server};

#[test]
fn the_shell_confirmation_shows_the_exact_command_and_its_escapes_do_nothing() {
    let s = Scratch::new();
    let command = "touch P #\u{1b}]52;c;ZXZpbA==\u{7}\r\u{1b}[2K  $ ls -la";
    let turns = [turn(vec![call(
        "run_shell_command",
        json!({"command": command}),
    )])];
    let t = Term::start(&s, &turns, &[], &[]);
    t.enable_clipboard();
    let clipboard_before = t.clipboard();
    let title_before = t.pane_title();
    t.line("list the files");
    let shown = t.wait_for("Allow once");
    // The whole command on one line, its escapes visible, nothing hidden by `\r`.
    assert!(
        shown.contains("$ touch P #\\e]52;c;ZXZpbA==^G^M\\e[2K  $ ls -la"),
        "{shown}"
    );
    // Nothing reached the terminal's clipboard or title.
    assert_eq!(t.clipboard(), clipboard_before);
    assert!(!t.clipboard().contains("evil"));
    assert_eq!(t.pane_title(), title_before);
    // Refused: nothing runs.
    t.keys(&["Escape"]);
    t.wait_for("Request cancelled.");
    t.wait_prompt();
    assert!(!s.ws().join("P").exists());
    assert_eq!(t.clipboard(), clipboard_before);
}

#[test]
fn slash_mcp_shows_a_description_with_escapes_visibly() {
    let s = Scratch::new();
    configure(&s, &server("fx", &["--evil"], ""));
    let t = Term::start(&s, &[turn(vec![text("unused")])], &[], &[]);
    let title_before = t.pane_title();
    t.wait_prompt();
    // Discovery runs in the background: ask until the server is ready.
    for _ in 0..100 {
        if t.text().contains("🟢 fx - Ready") {
            break;
        }
        t.line("/mcp");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    t.line("/mcp desc");
    let shown = t.wait_for("Second line");
    assert!(shown.contains("  - mcp_fx_evil"), "{shown}");
    assert!(
        shown.contains("      Second line \\e]0;pwned-title^G\\e[2J after."),
        "{shown}"
    );
    assert!(
        shown.contains("  - bad\\e]0;pwned-name^G\\nname: its inputSchema has type"),
        "{shown}"
    );
    assert_eq!(t.pane_title(), title_before);
    assert!(!t.pane_title().contains("pwned"));
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}
