//! Faults in the interactive session: a panic in Chat ends the session with an error
//! instead of a prompt that never answers again; a call cancelled after its write
//! started is reported as written.

use serde_json::json;

use super::confirm::all_function_responses;
use super::term::Term;
use crate::common::*;

#[test]
fn a_panic_in_chat_ends_the_repl_session_with_an_error_instead_of_a_hang() {
    let s = Scratch::new();
    let t = Term::start(&s, &[turn(vec![text("never reached")])], &[], &[]);
    t.line("__troupe_test_panic_in_chat__");
    let text = t.wait_for("[troupe exited 1]");
    assert!(text.contains("the chat actor stopped"), "{text}");
    assert!(text.contains("the session ends"), "{text}");
}

#[test]
fn a_call_cancelled_after_its_write_started_is_reported_as_written() {
    let s = Scratch::new();
    s.write("f.txt", "old\n");
    let release = s.root().join("release");
    let paused = s.root().join("release.paused");
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "f.txt", "content": "new\n"}),
        )]),
        turn(vec![text("Picking up again.")]),
    ];
    let t = Term::start(
        &s,
        &turns,
        &[(
            "TROUPE_TEST_PAUSE_AFTER_COMMIT",
            release.display().to_string(),
        )],
        &["--yolo"],
    );
    t.line("write it");
    // The write has started (past its point of no return) and is held there.
    t.wait_until_true("the write to start", || paused.exists());
    t.keys(&["C-c"]);
    // The cancellation reaches the call while the write is held.
    let cancelled = s.root().join("release.cancelled");
    t.wait_until_true("the cancellation to reach the call", || cancelled.exists());
    std::fs::write(&release, "").expect("release");
    t.wait_prompt();
    assert_eq!(s.read("f.txt"), "new\n");
    t.line("go on");
    t.wait_for("Picking up again.");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let responses = all_function_responses(&requests[1]);
    assert_eq!(responses.len(), 1, "{responses:?}");
    let response = &responses[0]["response"];
    assert!(response.get("error").is_none(), "{response}");
    let output = response["output"].as_str().expect("output");
    assert!(
        output.starts_with("Successfully overwrote file"),
        "{output}"
    );
}
