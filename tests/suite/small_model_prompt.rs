//! What a small model is told (issue 31): the small profile lists the workspace's files
//! in the first prompt of a new session (a small model guessed `src/report.py` for
//! `shop/report.py`), and a call that succeeds again unchanged, right after it
//! succeeded, is answered with a note not to repeat it (a small model wrote the same
//! file four times until loop detection stopped it).

use serde_json::{json, Value};

use crate::common::*;

/// The text of the first user content of a request.
fn first_user_text(request: &Value) -> String {
    request["contents"][0]["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[test]
fn the_small_profile_lists_the_workspace_files_in_the_first_prompt() {
    let s = Scratch::new();
    s.write("shop/cart.py", "x = 1\n");
    s.write("shop/report.py", "y = 2\n");
    s.write("tests/test_shop.py", "z = 3\n");
    s.write("node_modules/dep/index.js", "pruned\n");
    let answers = [turn(vec![text("ok")]), turn(vec![text("ok again")])];
    let out = s.run(
        &answers[..1],
        &[
            "-p",
            "What is here?",
            "--profile",
            "small",
            // The scripted answer is prose (a required call would be asked again).
            "-c",
            "model.first_answer_calls_a_tool=false",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let first = first_user_text(&s.requests()[0]);
    assert!(first.contains("<workspace_files>"), "{first}");
    for file in ["shop/cart.py", "shop/report.py", "tests/test_shop.py"] {
        assert!(first.contains(file), "{file} not listed: {first}");
    }
    assert!(!first.contains("node_modules"), "{first}");
    assert!(
        first.ends_with("What is here?"),
        "the prompt comes last: {first}"
    );

    // Without the profile nothing is listed (the setting is 0 by default) ...
    std::fs::remove_file(s.requests_path()).expect("clear the log");
    let out = s.run(&answers[1..], &["-p", "What is here?"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(first_user_text(&s.requests()[0]), "What is here?");
}

#[test]
fn a_long_listing_stops_at_its_limit_and_says_so() {
    let s = Scratch::new();
    for i in 0..12 {
        s.write(&format!("f{i:02}.txt"), "x\n");
    }
    let out = s.run(
        &[turn(vec![text("ok")])],
        &["-p", "hi", "-c", "model.workspace_listing=5"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let first = first_user_text(&s.requests()[0]);
    let listed = first.lines().filter(|l| l.ends_with(".txt")).count();
    assert_eq!(listed, 5, "{first}");
    assert!(first.contains("the first 5 found"), "{first}");
}

#[test]
fn a_call_that_succeeds_again_unchanged_gets_a_note_not_to_repeat_it() {
    let s = Scratch::new();
    let write = || {
        call(
            "write_file",
            json!({"file_path": "SUMMARY.md", "content": "cart\n"}),
        )
    };
    let out = s.run(
        &[
            turn(vec![write()]),
            turn(vec![write()]),
            turn(vec![call("read_file", json!({"file_path": "SUMMARY.md"}))]),
            turn(vec![text("done")]),
        ],
        &["-p", "Write SUMMARY.md", "--yolo"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = s.requests();
    assert_eq!(requests.len(), 4);
    let output = |i: usize| {
        function_responses(&requests[i])[0]["response"]["output"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(!output(1).contains("already succeeded"), "{}", output(1));
    assert!(
        output(2).contains("already succeeded in this turn"),
        "{}",
        output(2)
    );
    // Another call in between starts a new row: the read is not a repeat.
    assert!(!output(3).contains("already succeeded"), "{}", output(3));
    assert_eq!(s.read("SUMMARY.md"), "cart\n");
}
