//! Faults stay local: a panic in any per-call step fails that call only; two memory
//! saves of one batch both land.

use serde_json::json;

use crate::common::*;

#[test]
fn a_panic_while_validating_or_confirming_fails_that_call_only() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let turns = [
        turn(vec![
            call("test_panic", json!({"panic_in": "validate"})),
            call("test_panic", json!({"panic_in": "confirmation"})),
            call("test_panic", json!({"in_future": true})),
            call("test_panic", json!({"panic": false})),
            call("read_file", json!({"file_path": "a.txt"})),
        ]),
        turn(vec![text("done")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "go", "--approval-mode", "default"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(out["response"], "done");
    let requests = s.requests();
    let responses = function_responses(&requests[1]);
    assert_eq!(responses.len(), 5, "{responses:?}");
    let text_of = |i: usize| responses[i]["response"].to_string();
    assert!(
        text_of(0).contains("panicked while validating")
            || text_of(0).contains("while validating the call"),
        "{}",
        text_of(0)
    );
    assert!(
        text_of(1).contains("while building the confirmation"),
        "{}",
        text_of(1)
    );
    assert!(text_of(2).contains("panic"), "{}", text_of(2));
    assert!(text_of(3).contains("no panic this time"), "{}", text_of(3));
    assert!(text_of(4).contains("alpha"), "{}", text_of(4));
}

#[test]
fn two_memory_saves_in_one_batch_both_land() {
    let s = Scratch::new();
    let turns = [
        turn(
            (0..6)
                .map(|i| call("save_memory", json!({"fact": format!("fact number {i}")})))
                .collect(),
        ),
        turn(vec![text("done")]),
    ];
    let proc = s.run(&turns, &["-p", "go", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    let file = responses[0]["response"].to_string();
    assert!(file.contains("remembered"), "{file}");
    // Find the memory file (Markdown) under the scratch HOME.
    let mut found = String::new();
    let mut stack = vec![s.home()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                // The memory file (session records elsewhere hold the facts too).
                let t = std::fs::read_to_string(&p).unwrap_or_default();
                if t.contains("fact number") {
                    found = t;
                }
            }
        }
    }
    for i in 0..6 {
        assert!(found.contains(&format!("- fact number {i}\n")), "{found}");
    }
}

#[test]
fn a_panic_in_chat_ends_the_session_with_an_error_instead_of_a_hang() {
    let s = Scratch::new();
    let script = s.script(&[turn(vec![text("never reached")])]);
    let child = s
        .command()
        .arg("--fake-responses")
        .arg(&script)
        .args(["-p", "__troupe_test_panic_in_chat__", "-o", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = output_unless_hung(child, 60, "troupe hung after a panic in Chat");
    assert!(!out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json result");
    let message = json["error"]["message"].as_str().expect("error message");
    assert!(message.contains("chat actor stopped"), "{message}");
}

#[test]
fn the_file_system_pool_survives_panicking_jobs() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    // More panicking jobs than the pool has threads, then reads that need the pool.
    let threads = 2;
    // A call that does not panic, in the middle of the batch, fails nothing.
    let mut panics: Vec<serde_json::Value> = (0..threads * 4)
        .map(|i| {
            call(
                "test_panic",
                json!({"panic_in": "fs_job", "message": format!("job {i}")}),
            )
        })
        .collect();
    panics.insert(threads * 2, call("test_panic", json!({"panic": false})));
    let reads = (0..4)
        .map(|_| call("read_file", json!({"file_path": "a.txt"})))
        .collect();
    let script = s.script(&[turn(panics), turn(reads), turn(vec![text("done")])]);
    let child = s
        .command()
        .arg("--fake-responses")
        .arg(&script)
        .args(["-p", "go", "--yolo", "-o", "json"])
        .arg("-c")
        .arg(format!("tools.fs_threads={threads}"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = output_unless_hung(
        child,
        120,
        "troupe hung: the file system pool did not survive its panicking jobs",
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = s.requests();
    let mut failed = function_responses(&requests[1]);
    assert_eq!(failed.len(), threads * 4 + 1);
    let calm = failed.remove(threads * 2);
    assert!(calm.to_string().contains("no panic this time"), "{calm}");
    for r in &failed {
        assert!(r.to_string().contains("the file system job failed"), "{r}");
    }
    let reads = function_responses(&requests[2]);
    assert_eq!(reads.len(), 4);
    for r in &reads {
        assert!(r.to_string().contains("alpha"), "{r}");
    }
}

/// The child's output; a hang is a failure: after `seconds` (far longer than the run
/// needs) the child is killed and the test fails with `hung`.
fn output_unless_hung(
    mut child: std::process::Child,
    seconds: u64,
    hung: &str,
) -> std::process::Output {
    let started = std::time::Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(seconds) {
            let _ = child.kill();
            panic!("{hung}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}
