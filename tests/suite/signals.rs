//! SIGINT/SIGTERM/SIGHUP sent to a headless run: every process group Troupe started
//! (foreground and background) is killed, the result is still printed with the error,
//! and the exit status is 128 + the signal.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::processes::processes;
use crate::common::*;

/// Live processes whose arguments contain `marker`.
fn running(marker: &str) -> Vec<String> {
    processes()
        .into_iter()
        .filter(|(_, _, args)| args.contains(marker))
        .map(|(_, _, args)| args)
        .collect()
}

fn wait_until(mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Starts a yolo headless run that leaves `sleep <a>` in the background (tool) and
/// runs `sleep <b> & sleep <c>` in the foreground, signals it once all three run, and
/// returns (exit code, stdout).
fn signalled_run(signal: &str, format: &str, sleeps: [&str; 3]) -> (Option<i32>, String) {
    let s = Scratch::new();
    let script = s.script(&[
        turn(vec![call(
            "run_shell_command",
            json!({"command": format!("sleep {}", sleeps[0]), "is_background": true}),
        )]),
        turn(vec![call(
            "run_shell_command",
            json!({"command": format!("sleep {} & sleep {}", sleeps[1], sleeps[2])}),
        )]),
        turn(vec![text("never reached")]),
    ]);
    let mut child = s
        .command()
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "go", "--yolo", "-o", format])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn troupe");
    let all_running = wait_until(|| {
        sleeps
            .iter()
            .all(|n| !running(&format!("sleep {n}")).is_empty())
    });
    assert!(all_running, "the sleeps never started");
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(status.success());
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read");
    let code = child.wait().expect("wait").code();
    for n in sleeps {
        let marker = format!("sleep {n}");
        assert!(
            wait_until(|| running(&marker).is_empty()),
            "{marker} outlived Troupe: {:?}",
            running(&marker)
        );
    }
    (code, stdout)
}

#[test]
fn sigterm_kills_every_group_and_prints_the_json_result() {
    let (code, stdout) = signalled_run("TERM", "json", ["1003", "1001", "1002"]);
    assert_eq!(code, Some(143), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).expect("stdout is JSON");
    assert_eq!(report["error"]["type"], "Interrupted", "{report}");
    assert_eq!(report["error"]["code"], 143);
    assert!(report["error"]["message"]
        .as_str()
        .unwrap()
        .contains("SIGTERM"));
}

#[test]
fn sighup_and_sigint_end_a_stream_json_run_with_a_result_event() {
    for (signal, code, sleeps) in [
        ("HUP", 129, ["1013", "1011", "1012"]),
        ("INT", 130, ["1023", "1021", "1022"]),
    ] {
        let (status, stdout) = signalled_run(signal, "stream-json", sleeps);
        assert_eq!(status, Some(code), "{stdout}");
        let last: Value =
            serde_json::from_str(stdout.lines().last().expect("a line")).expect("JSON line");
        assert_eq!(last["type"], "result", "{last}");
        assert_eq!(last["status"], "error");
        assert_eq!(last["error"]["code"], code);
    }
}

#[test]
fn sigint_and_sighup_print_the_json_result_too() {
    for (signal, code, name, sleeps) in [
        ("INT", 130, "SIGINT", ["1033", "1031", "1032"]),
        ("HUP", 129, "SIGHUP", ["1043", "1041", "1042"]),
    ] {
        let (status, stdout) = signalled_run(signal, "json", sleeps);
        assert_eq!(status, Some(code), "{stdout}");
        let report: Value = serde_json::from_str(&stdout).expect("stdout is JSON");
        assert_eq!(report["error"]["type"], "Interrupted", "{report}");
        assert_eq!(report["error"]["code"], code);
        assert!(
            report["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(name),
            "{report}"
        );
    }
}
