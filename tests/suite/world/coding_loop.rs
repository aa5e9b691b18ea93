//! The loop of a coding agent on `tests/fixtures/coding-loop/project`: run the
//! project's tests, read the failing code, edit it, run the tests again to green.
//! `replace.responses.jsonl` edits with the `replace` tool; `shell-edit.responses.jsonl`
//! edits with `sed` through `run_shell_command`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/coding-loop")
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn output(request: &Value) -> String {
    function_responses(request)[0]["response"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("no output in {request}"))
        .to_string()
}

/// Runs the loop on a copy of the fixture project; returns the scratch dir, the JSON
/// report and the requests the model received, after the checks both scripts share.
fn run_loop(script: &str) -> (Scratch, Value, Vec<Value>) {
    let s = Scratch::new();
    copy_tree(&fixture().join("project"), &s.ws());
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(s.ws())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", s.home())
        .env("TROUPE_HOME", s.home().join(".troupe"))
        .arg("--log-requests")
        .arg(s.requests_path())
        .arg("--fake-responses")
        .arg(fixture().join(script))
        .args(["-p", "Make the tests pass", "--yolo", "-o", "json"])
        .output()
        .expect("run troupe");
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert!(report["response"].as_str().unwrap().ends_with(
        "Fixed `maximum` in src/stats.sh: it kept the smallest value. All checks pass now."
    ));
    let requests = s.requests();
    assert_eq!(requests.len(), 5);
    let system = requests[0]["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(system.contains("Run the tests with `bash tests/run.sh`"));

    let first_run = output(&requests[1]);
    assert!(
        first_run.contains(
            "not ok - maximum 3 7 5: expected 7, got 3\nFAILED: 1 of 2 checks\nExit Code: 1\n"
        ),
        "{first_run}"
    );
    assert!(output(&requests[2]).contains("if [ \"$n\" -lt \"$best\" ]"));
    let last_run = output(&requests[4]);
    assert!(
        last_run.starts_with("<untrusted_context>\nOutput: ok - mean 2 4 6\nok - maximum 3 7 5\nall 2 checks passed\nProcess Group PGID: "),
        "{last_run}"
    );
    assert!(!last_run.contains("Exit Code"));
    assert!(s
        .read("src/stats.sh")
        .contains("if [ \"$n\" -gt \"$best\" ]"));
    assert_eq!(report["stats"]["tools"]["totalSuccess"], 4);
    (s, report, requests)
}

#[test]
fn tests_fail_the_code_is_read_and_fixed_with_replace_and_the_tests_pass() {
    let (s, report, requests) = run_loop("replace.responses.jsonl");
    let edit = output(&requests[3]);
    assert!(
        edit.starts_with(&format!(
            "Successfully modified file: {} (1 replacements).",
            s.ws().join("src/stats.sh").display()
        )),
        "{edit}"
    );
    assert_eq!(report["stats"]["tools"]["byName"]["replace"]["success"], 1);
    assert_eq!(report["stats"]["edits"]["strategies"]["exact"], 1);
    assert_eq!(report["stats"]["files"]["totalLinesAdded"], 1);
    assert_eq!(report["stats"]["files"]["totalLinesRemoved"], 1);
}

#[test]
fn the_same_loop_with_an_edit_through_the_shell() {
    let (_, report, _) = run_loop("shell-edit.responses.jsonl");
    assert_eq!(
        report["stats"]["tools"]["byName"]["run_shell_command"]["success"],
        3
    );
}
