//! `replace` and `write_file` end to end: the binary on a scratch workspace with a
//! scripted model (and a scripted corrector model), checking the files on disk, what
//! the model was told and the `-o json` stats.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

const APP: &str = "import sys\n\n\nclass Greeter:\n    def greet(self, name):\n        if name:\n            return 'hello ' + name\n        return 'hello'\n";

/// One corrector (utility) model answer holding `value` as JSON text.
fn corrector_answer(value: Value) -> Value {
    json!({"method": "generateContent", "response": {"candidates": [{"content": {"role": "model", "parts": [{"text": value.to_string()}]}, "finishReason": "STOP"}]}})
}

fn single_response(s: &Scratch, request: usize) -> Value {
    let requests = s.requests();
    let responses = function_responses(&requests[request]);
    assert_eq!(responses.len(), 1, "{responses:?}");
    responses[0]["response"].clone()
}

#[test]
fn wrong_indentation_lands_with_the_files_indentation() {
    let s = Scratch::new();
    s.write("src/app.py", APP);
    let turns = [
        turn(vec![call(
            "replace",
            json!({"file_path": "src/app.py", "instruction": "greet politely",
                   "old_string": "if name:\n    return 'hello ' + name",
                   "new_string": "if name:\n    return 'good day, ' + name"}),
        )]),
        turn(vec![text("Edited.")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "edit", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(
        s.read("src/app.py"),
        APP.replace("'hello ' + name", "'good day, ' + name")
    );
    let response = single_response(&s, 1);
    let output = response["output"].as_str().expect("output");
    let path = s.ws().join("src/app.py");
    assert!(
        output.starts_with(&format!(
            "Successfully modified file: {} (1 replacements). Here is the updated code:\n",
            path.display()
        )),
        "{output}"
    );
    assert!(
        output.contains("            return 'good day, ' + name"),
        "{output}"
    );
    assert_eq!(out["stats"]["edits"]["strategies"]["flexible"], 1);
    assert_eq!(out["stats"]["files"]["totalLinesAdded"], 1);
    assert_eq!(out["stats"]["files"]["totalLinesRemoved"], 1);
}

#[test]
fn a_double_match_without_allow_multiple_changes_nothing_and_names_both_places() {
    let s = Scratch::new();
    let original = "x = 1\nprint(x)\nx = 1\n";
    s.write("dup.py", original);
    let turns = [
        turn(vec![call(
            "replace",
            json!({"file_path": "dup.py", "instruction": "set x", "old_string": "x = 1", "new_string": "x = 2"}),
        )]),
        turn(vec![text("Could not.")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "edit", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(s.read("dup.py"), original);
    let error = single_response(&s, 1)["error"]
        .as_str()
        .expect("error")
        .to_string();
    assert!(
        error.starts_with(
            "Failed to edit, Expected 1 occurrence but found 2 for old_string in file: dup.py."
        ),
        "{error}"
    );
    assert!(error.contains("- line 1:\n     1 | x = 1"), "{error}");
    assert!(error.contains("- line 3:\n     3 | x = 1"), "{error}");
    assert_eq!(out["stats"]["tools"]["totalFail"], 1);
}

#[test]
fn write_file_creates_nested_directories_and_keeps_crlf() {
    let s = Scratch::new();
    s.write("win.txt", "one\r\ntwo\r\n");
    let turns = [
        turn(vec![
            call(
                "write_file",
                json!({"file_path": "a/b/c/new.txt", "content": "fresh\n"}),
            ),
            call(
                "write_file",
                json!({"file_path": "win.txt", "content": "one\ntwo\nthree\n"}),
            ),
        ]),
        turn(vec![text("Written.")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "write", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(s.read("a/b/c/new.txt"), "fresh\n");
    assert_eq!(s.read("win.txt"), "one\r\ntwo\r\nthree\r\n");
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(
        responses[0]["response"]["output"],
        format!(
            "Successfully created and wrote to new file: {}. Here is the updated code:\nfresh\n",
            s.ws().join("a/b/c/new.txt").display()
        )
    );
    let second = responses[1]["response"]["output"].as_str().expect("output");
    assert!(
        second.starts_with("Successfully overwrote file: "),
        "{second}"
    );
    assert_eq!(out["stats"]["files"]["totalLinesAdded"], 2);
}

#[test]
fn the_corrector_fixes_an_unmatched_edit_and_serves_the_repeat_from_its_cache() {
    let s = Scratch::new();
    s.write("src/app.py", APP);
    let wrong = json!({"file_path": "src/app.py", "instruction": "Make the bare greeting polite.",
                       "old_string": "return 'hullo'   # bare", "new_string": "        return 'good day'"});
    // Exactly one corrector answer: the repeat must come from the cache, or the
    // scripted model fails it ("next response was for generateContentStream").
    let turns = [
        turn(vec![call("replace", wrong.clone())]),
        corrector_answer(
            json!({"search": "        return 'hello'\n", "replace": "        return 'good day'\n",
                                "explanation": "old_string did not match the file"}),
        ),
        turn(vec![call(
            "write_file",
            json!({"file_path": "src/app.py", "content": APP}),
        )]),
        turn(vec![call("replace", wrong)]),
        turn(vec![text("Done.")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "edit", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(out["response"], "Done.");
    let fixed = APP.replace("        return 'hello'\n", "        return 'good day'\n");
    assert_eq!(s.read("src/app.py"), fixed);
    for request in [1, 3] {
        let response = single_response(&s, request);
        assert!(
            response["output"]
                .as_str()
                .is_some_and(|o| o.starts_with("Successfully modified file: ")),
            "request {request}: {response}"
        );
    }
    assert_eq!(out["stats"]["edits"]["corrections"]["success"], 2);
    assert_eq!(out["stats"]["edits"]["strategies"]["exact"], 2);
}

#[test]
fn with_correction_off_the_unmatched_edit_fails_without_asking_a_model() {
    let s = Scratch::new();
    s.write("src/app.py", APP);
    let turns = [
        turn(vec![call(
            "replace",
            json!({"file_path": "src/app.py", "instruction": "x", "old_string": "return 'hullo'   # bare", "new_string": "y = 1"}),
        )]),
        turn(vec![text("Gave up.")]),
    ];
    let (_, proc) = s.run_json(
        &turns,
        &[
            "-p",
            "edit",
            "--approval-mode",
            "yolo",
            "-c",
            "edit.use_model=false",
        ],
    );
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    let error = single_response(&s, 1)["error"]
        .as_str()
        .expect("error")
        .to_string();
    assert!(
        error.starts_with("Could not find an exact match for 'old_string' in 'src/app.py'."),
        "{error}"
    );
    assert!(error.contains("The closest match is at line 8"), "{error}");
    assert_eq!(s.read("src/app.py"), APP);
}

#[test]
fn default_mode_headless_refuses_replace_and_leaves_the_file() {
    let s = Scratch::new();
    s.write("src/app.py", APP);
    let turns = [
        turn(vec![call(
            "replace",
            json!({"file_path": "src/app.py", "instruction": "x", "old_string": "import sys", "new_string": "import os"}),
        )]),
        turn(vec![text("Refused.")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "edit"]);
    // A refused call ends the run with 54.
    assert_eq!(proc.status.code(), Some(54), "stderr: {}", stderr(&proc));
    let error = single_response(&s, 1)["error"]
        .as_str()
        .expect("error")
        .to_string();
    assert!(
        error.starts_with("Tool execution denied by policy."),
        "{error}"
    );
    assert!(
        error.contains("\"replace\" needs the user's approval"),
        "{error}"
    );
    assert_eq!(s.read("src/app.py"), APP);
}

#[test]
fn a_file_rewritten_between_computing_and_writing_is_never_clobbered() {
    let s = Scratch::new();
    s.write("src/app.py", APP);
    let turns = [
        turn(vec![call(
            "replace",
            json!({"file_path": "src/app.py", "instruction": "x", "old_string": "import sys", "new_string": "import os"}),
        )]),
        turn(vec![text("Noted.")]),
    ];
    let script = s.script(&turns);
    let flag = s.root().join("go");
    let paused = s.root().join("go.paused");
    let child = s
        .command()
        .arg("--fake-responses")
        .arg(&script)
        .args(["-p", "edit", "--approval-mode", "yolo", "-o", "json"])
        .env("TROUPE_TEST_PAUSE_BEFORE_WRITE", &flag)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn troupe");
    let started = Instant::now();
    while !paused.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the edit never paused"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let external = "# rewritten by another process\nimport sys\n";
    std::fs::write(s.ws().join("src/app.py"), external).expect("rewrite");
    std::fs::write(&flag, "").expect("flag");
    let out = child.wait_with_output().expect("troupe output");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(s.read("src/app.py"), external);
    let error = single_response(&s, 1)["error"]
        .as_str()
        .expect("error")
        .to_string();
    assert!(
        error.contains(
            "was changed on disk after this edit was computed, so the edit was not written"
        ),
        "{error}"
    );
}

#[test]
fn create_with_empty_old_string_expected_replacements_and_placeholders() {
    let s = Scratch::new();
    s.write("two.txt", "a\nb\na\n");
    let turns = [
        turn(vec![
            call(
                "replace",
                json!({"file_path": "new/made.txt", "instruction": "create", "old_string": "", "new_string": "made\n"}),
            ),
            call(
                "replace",
                json!({"file_path": "two.txt", "instruction": "both", "old_string": "a", "new_string": "$1", "expected_replacements": 2}),
            ),
            call(
                "write_file",
                json!({"file_path": "p.py", "content": "def f():\n    # rest of code ...\n"}),
            ),
            call(
                "replace",
                json!({"file_path": "two.txt", "instruction": "x", "old_string": "b", "new_string": "b\n// rest of methods ..."}),
            ),
        ]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "edit", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(s.read("new/made.txt"), "made\n");
    assert_eq!(s.read("two.txt"), "$1\nb\n$1\n");
    assert!(!s.ws().join("p.py").exists());
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(
        responses[0]["response"]["output"],
        format!(
            "Created new file: {} with provided content. Here is the updated code:\nmade\n",
            s.ws().join("new/made.txt").display()
        )
    );
    assert_eq!(
        responses[2]["response"]["error"],
        "`content` contains an omission placeholder (for example 'rest of methods ...'). Provide complete file content."
    );
    assert_eq!(
        responses[3]["response"]["error"],
        "`new_string` contains an omission placeholder (for example 'rest of methods ...'). Provide exact literal replacement text."
    );
}

#[test]
fn a_relative_path_is_corrected_to_the_unique_file_and_ambiguity_is_an_error() {
    let s = Scratch::new();
    s.write("src/deep/module.py", "VALUE = 1\n");
    s.write("a/util.py", "X = 1\n");
    s.write("b/util.py", "X = 1\n");
    let turns = [
        turn(vec![
            call(
                "replace",
                json!({"file_path": "deep/module.py", "instruction": "bump",
                "old_string": "VALUE = 1", "new_string": "VALUE = 2"}),
            ),
            call(
                "replace",
                json!({"file_path": "util.py", "instruction": "bump",
                "old_string": "X = 1", "new_string": "X = 2"}),
            ),
        ]),
        turn(vec![text("done")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(s.read("src/deep/module.py"), "VALUE = 2\n");
    assert_eq!(s.read("a/util.py"), "X = 1\n");
    assert_eq!(s.read("b/util.py"), "X = 1\n");
    let r = function_responses(&s.requests()[1]);
    let ok = r[0]["response"]["output"].as_str().unwrap();
    let target = s.ws().join("src/deep/module.py");
    assert!(
        ok.starts_with(&format!("Successfully modified file: {}", target.display())),
        "{ok}"
    );
    let err = r[1]["response"]["error"].as_str().unwrap();
    assert!(
        err.starts_with("The file path 'util.py' is ambiguous and matches multiple files."),
        "{err}"
    );
    assert!(
        err.contains(&s.ws().join("a/util.py").display().to_string()),
        "{err}"
    );
    assert!(
        err.contains(&s.ws().join("b/util.py").display().to_string()),
        "{err}"
    );
}
