//! The read and search tools end to end: read_file, read_many_files, list_directory,
//! glob and grep_search run by the binary on scratch trees, asserting the
//! functionResponses the scripted model received.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::*;

mod search;

/// Runs one model turn making `calls` in parallel, then a text answer; returns every
/// part of the user content that answered the calls.
pub(super) fn answer_parts(s: &Scratch, calls: Vec<Value>, extra: &[&str]) -> Vec<Value> {
    let turns = [turn(calls), turn(vec![text("ok")])];
    let mut args = vec!["-p", "go", "--yolo"];
    args.extend_from_slice(extra);
    let (_, proc) = s.run_json(&turns, &args);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    let requests = s.requests();
    assert_eq!(requests.len(), 2, "one call turn, one answer turn");
    requests[1]["contents"].as_array().unwrap().last().unwrap()["parts"]
        .as_array()
        .unwrap()
        .clone()
}

/// The functionResponse objects, in call order.
pub(super) fn answers(s: &Scratch, calls: Vec<Value>, extra: &[&str]) -> Vec<Value> {
    answer_parts(s, calls, extra)
        .into_iter()
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect()
}

pub(super) fn output(resp: &Value) -> &str {
    resp["response"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("no output in {resp}"))
}

pub(super) fn error(resp: &Value) -> &str {
    resp["response"]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error in {resp}"))
}

pub(super) fn git_repo(s: &Scratch) {
    std::fs::create_dir_all(s.ws().join(".git")).unwrap();
    s.write(".git/config", "[core]\n");
}

#[test]
fn read_file_windows_encodings_and_long_lines() {
    let s = Scratch::new();
    let big: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    s.write("big.txt", &big);
    s.write("crlf.txt", "one\r\ntwo\r\nthree");
    let mut utf16 = vec![0xFF, 0xFE];
    for unit in "grüße\nzwei".encode_utf16() {
        utf16.extend(unit.to_le_bytes());
    }
    std::fs::write(s.ws().join("utf16.txt"), utf16).unwrap();
    let mut utf32 = vec![0, 0, 0xFE, 0xFF];
    for c in "Ω32".chars() {
        utf32.extend((c as u32).to_be_bytes());
    }
    std::fs::write(s.ws().join("utf32.txt"), utf32).unwrap();
    s.write("bom8.txt", "\u{feff}with bom");
    s.write("long.txt", &format!("short\n{}\nend", "x".repeat(2500)));
    s.write("empty.txt", "");
    let r = answers(
        &s,
        vec![
            call("read_file", json!({"file_path": "big.txt"})),
            call(
                "read_file",
                json!({"file_path": "big.txt", "start_line": 4990, "end_line": 4992}),
            ),
            call(
                "read_file",
                json!({"absolute_path": s.ws().join("big.txt"), "offset": 10, "limit": 2}),
            ),
            call("read_file", json!({"path": "crlf.txt"})),
            call("read_file", json!({"file_path": "utf16.txt"})),
            call("read_file", json!({"file_path": "utf32.txt"})),
            call("read_file", json!({"file_path": "bom8.txt"})),
            call("read_file", json!({"file_path": "long.txt"})),
            call("read_file", json!({"file_path": "empty.txt"})),
            call(
                "read_file",
                json!({"file_path": "big.txt", "start_line": 9, "end_line": 3}),
            ),
        ],
        &[],
    );
    let first = output(&r[0]);
    assert!(first.starts_with("\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 1-2000 of 5001 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 2001.\n\n--- FILE CONTENT (truncated) ---\nline 1\n"), "{first}");
    assert!(first.ends_with("\nline 2000"));
    assert!(output(&r[1])
        .ends_with("--- FILE CONTENT (truncated) ---\nline 4990\nline 4991\nline 4992"));
    assert!(output(&r[1]).contains("use start_line: 4993."));
    let seed = output(&r[2]);
    assert!(
        seed.contains("Status: Showing lines 11-12 of 5001 total lines."),
        "{seed}"
    );
    // The note names the parameters the schema declares, whichever the call used.
    assert!(seed.contains("use start_line: 13."), "{seed}");
    assert!(seed.ends_with("line 11\nline 12"));
    assert_eq!(output(&r[3]), "one\ntwo\nthree");
    assert_eq!(output(&r[4]), "grüße\nzwei");
    assert_eq!(output(&r[5]), "Ω32");
    assert_eq!(output(&r[6]), "with bom");
    let long = output(&r[7]);
    assert!(
        long.contains(&format!(
            "\nshort\n{}... [truncated]\nend",
            "x".repeat(2000)
        )),
        "{long}"
    );
    assert!(long.contains("Status: Showing lines 1-3 of 3 total lines."));
    assert_eq!(output(&r[8]), "");
    assert_eq!(error(&r[9]), "start_line cannot be greater than end_line");
}

#[test]
fn read_file_media_binary_and_refusals() {
    let s = Scratch::new();
    git_repo(&s);
    let png = [
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D,
    ];
    std::fs::write(s.ws().join("pic.png"), png).unwrap();
    std::fs::write(s.ws().join("doc.pdf"), b"%PDF-1.4\n%\xE2\xE3\n").unwrap();
    std::fs::write(s.ws().join("blob.dat"), [1u8, 2, 3, 0, 4]).unwrap();
    std::fs::write(s.ws().join("raw"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    s.write("icon.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>");
    let huge = std::fs::File::create(s.ws().join("huge.txt")).unwrap();
    huge.set_len(21 * 1024 * 1024).unwrap();
    s.write(".gitignore", "secret.txt\n");
    s.write("secret.txt", "hidden");
    s.write("dir/inner.txt", "x");
    std::fs::write(s.root().join("outside.txt"), "outside").unwrap();
    std::os::unix::fs::symlink(s.root().join("outside.txt"), s.ws().join("escape.txt")).unwrap();
    std::os::unix::fs::symlink(s.ws().join("loop_b"), s.ws().join("loop_a")).unwrap();
    std::os::unix::fs::symlink(s.ws().join("loop_a"), s.ws().join("loop_b")).unwrap();
    let ws = s.ws();
    let parts = answer_parts(
        &s,
        vec![
            call("read_file", json!({"file_path": "pic.png"})),
            call("read_file", json!({"file_path": "doc.pdf"})),
            call("read_file", json!({"file_path": "blob.dat"})),
            call("read_file", json!({"file_path": "raw"})),
            call("read_file", json!({"file_path": "icon.svg"})),
            call("read_file", json!({"file_path": "huge.txt"})),
            call("read_file", json!({"file_path": "missing.txt"})),
            call("read_file", json!({"file_path": "dir"})),
            call("read_file", json!({"file_path": "secret.txt"})),
            call("read_file", json!({"file_path": ".git/config"})),
            call("read_file", json!({"file_path": "escape.txt"})),
            call("read_file", json!({"file_path": "loop_a"})),
        ],
        &[],
    );
    // Media are sibling inlineData parts after all functionResponses (Gemini 2.x).
    let inline: Vec<&Value> = parts
        .iter()
        .filter(|p| p.get("inlineData").is_some())
        .collect();
    assert_eq!(inline.len(), 2);
    assert_eq!(inline[0]["inlineData"]["mimeType"], "image/png");
    let b64 = base64::engine::general_purpose::STANDARD;
    assert_eq!(
        b64.decode(inline[0]["inlineData"]["data"].as_str().unwrap())
            .unwrap(),
        png
    );
    assert_eq!(inline[1]["inlineData"]["mimeType"], "application/pdf");
    let r: Vec<Value> = parts
        .iter()
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect();
    assert_eq!(output(&r[0]), "Binary content provided (1 item(s)).");
    assert_eq!(output(&r[1]), "Binary content provided (1 item(s)).");
    assert_eq!(
        output(&r[2]),
        "Cannot display content of binary file: blob.dat"
    );
    assert_eq!(output(&r[3]), "Cannot display content of binary file: raw");
    assert_eq!(output(&r[4]), "<svg xmlns=\"http://www.w3.org/2000/svg\"/>");
    assert_eq!(
        error(&r[5]),
        format!(
            "File size exceeds the 20MB limit: {}/huge.txt (21.00MB)",
            ws.display()
        )
    );
    assert_eq!(
        error(&r[6]),
        format!("File not found: {}/missing.txt", ws.display())
    );
    assert_eq!(
        error(&r[7]),
        format!("Path is a directory, not a file: {}/dir", ws.display())
    );
    assert_eq!(
        error(&r[8]),
        format!(
            "File path '{}/secret.txt' is ignored by configured ignore patterns.",
            ws.display()
        )
    );
    assert!(
        error(&r[9]).starts_with("Path not in workspace: Attempted path"),
        "{}",
        r[9]
    );
    assert!(
        error(&r[10]).starts_with("Path not in workspace: Attempted path"),
        "{}",
        r[10]
    );
    assert!(
        error(&r[11]).contains("Infinite recursion detected"),
        "{}",
        r[11]
    );
}

#[test]
fn list_directory_ignore_files_globs_and_errors() {
    let s = Scratch::new();
    git_repo(&s);
    s.write(".gitignore", "*.log\nbuild/\n");
    s.write(".geminiignore", "private.md\n");
    s.write("a.log", "log");
    s.write("build/out.o", "o");
    s.write("src/main.rs", "fn main() {}\n");
    s.write("README.md", "# r\n");
    s.write("private.md", "p");
    s.write("notes.txt", "n");
    let ws = s.ws();
    let r = answers(
        &s,
        vec![
            call("list_directory", json!({"dir_path": "."})),
            call(
                "list_directory",
                json!({"path": ".", "ignore": ["*.md", "*.txt"],
                "file_filtering_options": {"respect_git_ignore": false}}),
            ),
            call("list_directory", json!({"dir_path": "nowhere"})),
            call("list_directory", json!({"dir_path": "notes.txt"})),
            call("list_directory", json!({"dir_path": "../"})),
        ],
        &[],
    );
    assert_eq!(
        output(&r[0]),
        format!(
            "Directory listing for {}:\n[DIR] src\n.geminiignore (11 bytes)\n.gitignore (13 bytes)\nnotes.txt (1 bytes)\nREADME.md (4 bytes)\n\n(4 ignored)",
            ws.display()
        )
    );
    assert_eq!(
        output(&r[1]),
        format!(
            "Directory listing for {}:\n[DIR] build\n[DIR] src\n.geminiignore (11 bytes)\n.gitignore (13 bytes)\na.log (3 bytes)\n\n(1 ignored)",
            ws.display()
        )
    );
    assert_eq!(
        error(&r[2]),
        format!(
            "Error listing directory: ENOENT: no such file or directory, stat '{}/nowhere'",
            ws.display()
        )
    );
    assert_eq!(
        error(&r[3]),
        format!("Error: Path is not a directory: {}/notes.txt", ws.display())
    );
    assert!(error(&r[4]).starts_with("Path not in workspace"));
}
