//! Identity edits and repeats (issue 47): `replace X → X` calls count as one failing
//! call whatever `allow_multiple` says, and are nudged toward the real change; a read
//! that repeats one of Troupe's own lookups is answered from what was already sent;
//! the test files a prompt names are not edited unless it asks to change tests.

use serde_json::{json, Value};

use crate::common::*;

/// The text of every function response's output or error in a request.
fn answers(request: &Value) -> Vec<String> {
    function_responses(request)
        .iter()
        .map(|r| {
            let out = &r["response"];
            out["output"]
                .as_str()
                .or(out["error"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn identity_edits_alternating_allow_multiple_are_nudged_then_stop_the_turn() {
    let s = Scratch::new();
    s.write("a.py", "total = 1\n");
    let same = |multiple: bool| {
        turn(vec![call(
            "replace",
            json!({"file_path": "a.py", "old_string": "total = 1", "new_string": "total = 1", "allow_multiple": multiple}),
        )])
    };
    let turns = [
        same(true),
        same(false),
        same(true),
        same(false),
        turn(vec![text("x")]),
    ];
    let (report, out) = s.run_json(&turns, &["-p", "Fix a.py", "--yolo"]);
    assert_eq!(out.status.code(), Some(55), "{report}");
    assert_eq!(report["error"]["type"], "LoopDetected", "{report}");
    let requests = s.requests();
    // The fourth identity edit is not run: the turn stops at the fourth answer.
    assert_eq!(requests.len(), 4);
    let first = answers(&requests[1]).concat();
    assert!(
        first.contains("old_string and new_string are the same text"),
        "{first}"
    );
    let third = answers(&requests[3]).concat();
    assert!(third.contains("failed 3 times"), "{third}");
    assert_eq!(s.read("a.py"), "total = 1\n");
}

#[test]
fn a_read_that_repeats_a_lookup_is_answered_from_what_was_sent() {
    let s = Scratch::new();
    s.write("a.py", "MARKER_4711 = 1\n");
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.py"}))]),
        turn(vec![text("It sets a constant.")]),
    ];
    let args = [
        "-p",
        "Explain a.py",
        "-c",
        "model.look_up_prompt_names=true",
        "-c",
        "model.workspace_listing=60",
        "-o",
        "json",
    ];
    let out = s.run(&turns, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let looked_up = answers(&requests[0]).concat();
    assert!(looked_up.contains("MARKER_4711"), "{looked_up}");
    let last = &requests[1];
    let said = answers(last).concat();
    assert!(
        said.contains("already ran before your first answer"),
        "{said}"
    );
    // The file's text is in the request once.
    assert_eq!(last.to_string().matches("MARKER_4711").count(), 1, "{last}");
}

#[test]
fn the_test_file_a_prompt_names_is_not_edited_unless_it_asks_to_change_tests() {
    let s = Scratch::new();
    s.write("acronym.py", "def abbreviate(words):\n    pass\n");
    s.write("acronym_test.py", "import acronym\n");
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "acronym_test.py", "content": "# emptied\n"}),
        )]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "acronym.py", "content": "def abbreviate(words):\n    return ''\n"}),
        )]),
        turn(vec![text("Done.")]),
    ];
    let args = |prompt: &'static str| {
        [
            "-p",
            prompt,
            "--yolo",
            "-c",
            "model.protect_named_tests=true",
            "-c",
            "model.workspace_listing=60",
        ]
    };
    let out = s.run(
        &turns,
        &args("Implement acronym.py so that the tests in acronym_test.py pass"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(s.read("acronym_test.py"), "import acronym\n");
    assert_eq!(
        s.read("acronym.py"),
        "def abbreviate(words):\n    return ''\n"
    );
    let refused = answers(&s.requests()[1]).concat();
    assert!(refused.contains("model.protect_named_tests"), "{refused}");

    let s = Scratch::new();
    s.write("acronym_test.py", "import acronym\n");
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "acronym_test.py", "content": "import acronym\n# more\n"}),
        )]),
        turn(vec![text("Added.")]),
    ];
    let out = s.run(&turns, &args("Add a test to acronym_test.py"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(s.read("acronym_test.py"), "import acronym\n# more\n");
}
