//! Differences from gemini-cli 0.61 found side by side and fixed: ordering of names as
//! JavaScript's `localeCompare`, the project temp directory in the workspace error,
//! the truncation note's parameter names, CRLF in new files, the failed-edit message,
//! and the edit correction's single time budget.

use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use super::gemini_wire::run_against;
use super::read_search::{answers, error, output};
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

/// Names whose order differs between byte order, case folding and ICU.
const AWKWARD: [&str; 24] = [
    "b",
    "B",
    "a",
    "A",
    "_x",
    "10",
    "2",
    "-a",
    "~a",
    "a_b",
    "a-b",
    "a.b",
    "ab",
    "aB",
    "Ab",
    "a1",
    "a10",
    "a2",
    "a~",
    "file_test.txt",
    "file-test.txt",
    "file.txt",
    "File.txt",
    "$x",
];

/// `AWKWARD` sorted by Node 22's `names.sort((x, y) => x.localeCompare(y))`.
const NODE_ORDER: [&str; 24] = [
    "_x",
    "-a",
    "~a",
    "$x",
    "10",
    "2",
    "a",
    "A",
    "a_b",
    "a-b",
    "a.b",
    "a~",
    "a1",
    "a10",
    "a2",
    "ab",
    "aB",
    "Ab",
    "b",
    "B",
    "file_test.txt",
    "file-test.txt",
    "file.txt",
    "File.txt",
];

#[test]
fn list_directory_and_glob_order_names_as_locale_compare() {
    let s = Scratch::new();
    let old = SystemTime::now() - Duration::from_secs(3 * 24 * 3600);
    for name in AWKWARD {
        let path = s.write(&format!("d/{name}"), "x");
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(old).unwrap();
    }
    let r = answers(
        &s,
        vec![
            call("list_directory", json!({"dir_path": "d"})),
            call("glob", json!({"pattern": "d/*"})),
        ],
        &[],
    );
    let listed: Vec<&str> = output(&r[0])
        .lines()
        .skip(1)
        .filter_map(|l| l.rsplit_once(" (").map(|(name, _)| name))
        .collect();
    assert_eq!(listed, NODE_ORDER, "{}", output(&r[0]));
    let dir = s.ws().join("d");
    let globbed: Vec<String> = output(&r[1])
        .lines()
        .skip(1)
        .map(|l| {
            l.strip_prefix(&format!("{}/", dir.display()))
                .unwrap_or(l)
                .to_string()
        })
        .collect();
    assert_eq!(globbed, NODE_ORDER, "{}", output(&r[1]));
}

#[test]
fn the_workspace_error_names_the_project_temp_directory_which_is_usable() {
    let s = Scratch::new();
    std::fs::write(s.root().join("outside.txt"), "secret").unwrap();
    let r = answers(
        &s,
        vec![call("read_file", json!({"file_path": "../outside.txt"}))],
        &[],
    );
    let message = error(&r[0]);
    let tmp_root = s.home().join(".troupe").join("tmp");
    let prefix = format!(
        "Path not in workspace: Attempted path \"{}\" resolves outside the allowed workspace directories: {} or the project temp directory: {}/",
        s.root().canonicalize().unwrap().join("outside.txt").display(),
        s.ws().display(),
        tmp_root.canonicalize().unwrap().display()
    );
    assert!(message.starts_with(&prefix), "{message}\nwanted: {prefix}");
    // The named directory exists and a tool may use it, as gemini-cli's may.
    let named = message.rsplit("project temp directory: ").next().unwrap();
    let note = std::path::Path::new(named).join("note.txt");
    std::fs::write(&note, "from the temp dir").unwrap();
    std::fs::remove_file(s.requests_path()).unwrap();
    let s2 = answers(
        &s,
        vec![call(
            "read_file",
            json!({"file_path": note.display().to_string()}),
        )],
        &[],
    );
    assert_eq!(output(&s2[0]), "from the temp dir");
}

#[test]
fn the_truncation_note_names_the_parameters_the_schema_declares() {
    let s = Scratch::new();
    let big: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    s.write("big.txt", &big);
    let r = answers(
        &s,
        vec![call(
            "read_file",
            json!({"file_path": "big.txt", "offset": 10, "limit": 5}),
        )],
        &[],
    );
    let text = output(&r[0]);
    assert!(
        text.contains("Status: Showing lines 11-15 of 51 total lines."),
        "{text}"
    );
    assert!(
        text.contains("use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 16."),
        "{text}"
    );
    assert!(!text.contains("'offset'"), "{text}");
}

#[test]
fn replace_creating_a_file_from_crlf_text_keeps_crlf() {
    let s = Scratch::new();
    let r = answers(
        &s,
        vec![call(
            "replace",
            json!({"file_path": "new.txt", "old_string": "", "new_string": "one\r\ntwo\r\n"}),
        )],
        &[],
    );
    assert!(output(&r[0]).starts_with("Created new file:"), "{r:?}");
    assert_eq!(
        std::fs::read(s.ws().join("new.txt")).unwrap(),
        b"one\r\ntwo\r\n"
    );
}

#[test]
fn a_failed_replace_resembling_nothing_says_only_what_gemini_cli_says() {
    let s = Scratch::new();
    s.write("a.py", "def f():\n    return 1\n");
    let r = answers(
        &s,
        vec![call(
            "replace",
            json!({"file_path": "a.py", "old_string": "zzzz qqqq ~~~~", "new_string": "y"}),
        )],
        &["-c", "edit.correction=false"],
    );
    assert_eq!(
        error(&r[0]),
        "Could not find an exact match for 'old_string' in 'a.py'. If previous edits modified the file or you are modifying lines outside your recent read window, please use ReadFile to inspect the target lines before retrying with an exact 'old_string'."
    );
}

/// A Gemini stream whose one chunk holds `parts`.
fn stream_of(parts: Value) -> Reply {
    Reply::gemini_sse(&[json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 55}
    })])
}

/// Runs one unmatched `replace` against `server`; returns the paths requested.
fn failing_edit_against(s: &Scratch, server: &Loopback, extra: &[&str]) -> Vec<String> {
    s.write("a.py", "def f():\n    return 1\n");
    let mut args = vec!["-p", "edit", "--yolo", "-o", "json"];
    args.extend_from_slice(extra);
    let out = run_against(
        s,
        &[
            ("GOOGLE_GEMINI_BASE_URL", &server.url),
            ("GEMINI_API_KEY", "test-key"),
        ],
        &args,
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(s.read("a.py"), "def f():\n    return 1\n");
    server.requests().into_iter().map(|r| r.path).collect()
}

fn unmatched_replace() -> Reply {
    stream_of(json!([{"functionCall": {"name": "replace", "args": {
        "file_path": "a.py", "instruction": "return two",
        "old_string": "    print('nothing like it')\n    x = compute(y)", "new_string": "    return 2"}}}]))
}

fn server_error() -> Reply {
    Reply::json(
        500,
        &json!({"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}),
    )
}

#[test]
fn a_failing_correction_model_is_retried_once_in_all() {
    let s = Scratch::new();
    let done = stream_of(json!([{"text": "gave up"}]));
    // Main-chat requests stream; correction requests are plain generateContent calls.
    let server = Loopback::start(vec![
        unmatched_replace(),
        server_error(),
        server_error(),
        done,
    ]);
    let paths = failing_edit_against(&s, &server, &["-c", "model.retry.max_attempts=4"]);
    let corrections = paths
        .iter()
        .filter(|p| p.contains(":generateContent"))
        .count();
    assert_eq!(corrections, 2, "{paths:?}");
    let last = server.requests().pop().unwrap();
    let response = function_responses(&last.body);
    assert!(
        response[0]["response"]["error"]
            .as_str()
            .unwrap()
            .starts_with("Could not find an exact match"),
        "{response:?}"
    );
}

#[test]
fn the_correction_time_budget_is_for_the_whole_correction() {
    let s = Scratch::new();
    let stalled = server_error().stall_before_last(Duration::from_secs(4));
    let server = Loopback::start(vec![
        unmatched_replace(),
        stalled.clone(),
        stream_of(json!([{"text": "gave up"}])),
    ]);
    let paths = failing_edit_against(&s, &server, &["-c", "edit.correction_timeout_secs=1"]);
    // Per-request timeouts would spend one second on each of the two kinds of
    // correction request; one budget for the whole correction is spent by the first.
    let corrections = paths
        .iter()
        .filter(|p| p.contains(":generateContent"))
        .count();
    assert_eq!(corrections, 1, "{paths:?}");
}
