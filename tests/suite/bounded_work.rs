//! Bounded work on hostile input (issue 10): an edit of a 1 GB file is refused with a
//! clear error before it is read, and a 10 MB `grep_search` pattern is refused before
//! it is compiled — both in bounded memory, the file untouched.

use serde_json::{json, Value};

use crate::common::*;

/// Runs a headless yolo session on `turns` and returns (exit status, peak RSS in KiB)
/// through `wait4`.
fn run_measured(s: &Scratch, turns: &[Value]) -> (i32, i64) {
    wait_with_peak_rss(s.spawn(turns, &["-p", "go", "--approval-mode", "yolo"]))
}

fn responses(s: &Scratch) -> Vec<Value> {
    function_responses(s.requests().get(1).expect("a second request"))
}

#[test]
fn edits_of_a_1_gb_file_are_refused_without_reading_it() {
    let s = Scratch::new();
    let big = s.ws().join("huge.log");
    // A sparse 1 GiB file that starts with the text the edit looks for.
    std::fs::write(&big, "needle\n").expect("write");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .expect("open")
        .set_len(1 << 30)
        .expect("set_len");
    let turns = [
        turn(vec![
            call(
                "replace",
                json!({"file_path": "huge.log", "old_string": "needle", "new_string": "pin"}),
            ),
            call(
                "write_file",
                json!({"file_path": "huge.log", "content": "small\n"}),
            ),
        ]),
        turn(vec![text("done")]),
    ];
    let (status, peak_kib) = run_measured(&s, &turns);
    assert_eq!(status, 0, "troupe failed");
    let answers = responses(&s);
    assert_eq!(answers.len(), 2, "{answers:?}");
    for answer in &answers {
        let error = answer["response"]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("the edit was not refused: {answer}"));
        assert!(
            error.contains("exceeds the 20MB limit") || error.contains("File too large"),
            "{error}"
        );
    }
    let meta = std::fs::metadata(&big).expect("meta");
    assert_eq!(meta.len(), 1 << 30, "the file changed size");
    let mut head = [0u8; 7];
    std::io::Read::read_exact(&mut std::fs::File::open(&big).expect("open"), &mut head)
        .expect("read");
    assert_eq!(&head, b"needle\n");
    // Reading it whole would take a gigabyte (the issue measured 10 GB).
    assert!(peak_kib < 300_000, "peak RSS {peak_kib} KiB");
}

#[test]
fn a_10_mb_grep_pattern_is_refused_before_it_is_compiled() {
    let s = Scratch::new();
    s.write("a.txt", "hello world\n");
    let huge: String = (0..10 * 1024 * 1024 / 8)
        .map(|i| format!("w{i:06}|"))
        .collect();
    let turns = [
        turn(vec![
            call("grep_search", json!({"pattern": huge})),
            call(
                "grep_search",
                json!({"pattern": "hello", "exclude_pattern": huge}),
            ),
            call("grep_search", json!({"pattern": "hel+o"})),
        ]),
        turn(vec![text("done")]),
    ];
    let (status, peak_kib) = run_measured(&s, &turns);
    assert_eq!(status, 0, "troupe failed");
    let answers = responses(&s);
    assert_eq!(answers.len(), 3);
    for (answer, what) in answers[..2].iter().zip(["pattern", "exclude_pattern"]) {
        let error = answer["response"]["error"].as_str().expect("an error");
        assert!(
            error.contains(&format!("The {what} is ")) && error.contains("at most 65536 bytes"),
            "{error:.300}"
        );
        // The pattern is not echoed back to the model.
        assert!(error.len() < 1000, "{} bytes of error", error.len());
    }
    // A normal search in the same batch still works.
    assert!(
        answers[2].to_string().contains("hello world"),
        "{}",
        answers[2]
    );
    // Compiling it took 3.6 GB (the issue) and 2–4 GB here before the limit; the
    // script alone holds the 10 MB pattern a few times.
    assert!(peak_kib < 400_000, "peak RSS {peak_kib} KiB");
}
