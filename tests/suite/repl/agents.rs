//! Subagents in the REPL: while one runs, the lines under the spinner show it with its
//! current tool; its start and end are transcript lines; `/agents` lists it after the
//! turn; Ctrl+C stops it with the turn.

use serde_json::json;

use super::term::Term;
use crate::common::*;

#[test]
fn a_running_subagent_shows_under_the_spinner_and_ctrl_c_stops_it() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "invoke_agent",
            json!({"agent_name": "generalist", "prompt": "sleep for a while"}),
        )]),
        // The subagent's first answer: a call that runs until it is cancelled.
        turn(vec![call("test_sleep", json!({"secs": 30}))]),
        turn(vec![text("Back at the prompt.")]),
    ];
    let t = Term::start(&s, &turns, &[], &["--yolo"]);
    t.line("delegate a sleep");
    t.wait_for("generalist-1 (generalist) started");
    t.wait_for("generalist-1 (generalist) · running test_sleep · 1 turns");
    t.keys(&["C-c"]);
    t.wait_for("generalist-1 (generalist) ABORTED");
    t.wait_prompt();
    t.line("/agents");
    let text = t.wait_for("aborted");
    assert!(text.contains("generalist-1 (generalist)"), "{text}");
    // The spinner's lines are gone with the turn.
    let screen = t.screen();
    assert!(!screen.contains("· running test_sleep"), "{screen}");
}
