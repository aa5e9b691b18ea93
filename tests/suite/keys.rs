//! Keys stay secret: the model client follows no redirect to another origin with the
//! key and the conversation; a key given with `-c` leaves Troupe's command line (and
//! earns a warning); temp files and session files are the user's alone (0600) while
//! they fill.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use serde_json::json;

use super::gemini_wire::run_against;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn gemini_text(text: &str) -> Reply {
    Reply::gemini_sse(&[json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 6}
    })])
}

/// Waits until `check` holds (30 s at most).
fn wait_until(what: &str, check: impl Fn() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what} did not happen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_redirect_to_another_origin_is_not_followed_with_the_key() {
    let s = Scratch::new();
    let elsewhere = Loopback::always(gemini_text("you should never see this"));
    let target = format!(
        "{}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        elsewhere.url
    );
    let endpoint =
        Loopback::always(Reply::raw(307, "text/plain", "moved").header("location", &target));
    let out = run_against(
        &s,
        &[
            ("GOOGLE_GEMINI_BASE_URL", &endpoint.url),
            ("GEMINI_API_KEY", "key-never-elsewhere"),
        ],
        &["-p", "secret conversation"],
    );
    assert!(!out.status.success());
    assert!(
        elsewhere.requests().is_empty(),
        "the other origin received {:?}",
        elsewhere.requests()
    );
    let asked = endpoint.requests();
    assert_eq!(asked.len(), 1, "not retried: {asked:?}");
    assert_eq!(asked[0].headers["x-goog-api-key"], "key-never-elsewhere");
    let err = stderr(&out);
    let origin = elsewhere.url.clone();
    assert!(
        err.contains(&format!(
            "the endpoint redirected to another origin ({origin}); Troupe does not follow it with your key and conversation"
        )),
        "{err}"
    );
}

#[test]
fn a_key_given_with_c_leaves_the_command_line_with_a_warning() {
    let s = Scratch::new();
    // Holds the model request open: Troupe is mid-run while its command line is read.
    let server = Loopback::always(gemini_text("late").delayed(Duration::from_secs(120)));
    let prompt = s.root().join("system.md");
    std::fs::write(&prompt, "You are a test agent.").unwrap();
    let mut child = s
        .command()
        .env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .args(["-c", "model.gemini.api_key=SEKRIT123"])
        .arg("-c")
        .arg(format!("model.system_prompt_file={}", prompt.display()))
        .args(["-p", "hello"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the model request", || !server.requests().is_empty());
    // The key was used…
    assert_eq!(server.requests()[0].headers["x-goog-api-key"], "SEKRIT123");
    // …and is no longer on the command line.
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert!(!cmdline.contains("SEKRIT123"), "{cmdline}");
    assert!(
        cmdline.contains("-c model.gemini.api_key=********* "),
        "{cmdline}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("a secret was given on the command line (-c model.gemini.api_key=…)")
            && err.contains("GEMINI_API_KEY"),
        "{err}"
    );
    assert!(!err.contains("SEKRIT123"), "{err}");
}

fn mode_of(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// This process's umask (the child inherits it), from /proc/self/status.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .unwrap();
    u32::from_str_radix(line.trim(), 8).unwrap()
}

/// The temp file of an atomic write in `dir`, if one is there.
fn temp_in(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".troupe-write-"))
        })
}

#[test]
fn temp_files_are_private_while_they_fill_and_session_files_are_0600() {
    let s = Scratch::new();
    s.write("old.txt", "old\n");
    std::fs::set_permissions(
        s.ws().join("old.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let filled = s.root().join("filled");
    let renaming = s.root().join("renaming");
    let marker = |flag: &std::path::Path| {
        let mut p = flag.as_os_str().to_owned();
        p.push(".paused");
        std::path::PathBuf::from(p)
    };
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "new.txt", "content": "new secret content\n"}),
        )]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "old.txt", "content": "replaced\n"}),
        )]),
        turn(vec![text("written")]),
    ];
    let script = s.script(&turns);
    let child = s
        .command()
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "write", "--yolo"])
        .env("TROUPE_TEST_PAUSE_AFTER_TEMP_WRITE", &filled)
        .env("TROUPE_TEST_PAUSE_BEFORE_RENAME", &renaming)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ws = s.ws();
    // The new file's temp, caught with its content in and before its final mode.
    wait_until("the first write's pause", || marker(&filled).exists());
    let temp = temp_in(&ws).expect("a temp file mid-write");
    assert_eq!(
        std::fs::read_to_string(&temp).unwrap(),
        "new secret content\n"
    );
    assert_eq!(mode_of(&temp), 0o600, "{}", temp.display());
    std::fs::write(&filled, "").unwrap();
    // The existing file's temp, right before the rename: its final mode already set
    // (the replaced file's own), so the name never has another.
    wait_until("the second write's pause", || marker(&renaming).exists());
    let temp = temp_in(&ws).expect("a temp file before its rename");
    assert_eq!(std::fs::read_to_string(&temp).unwrap(), "replaced\n");
    assert_eq!(mode_of(&temp), 0o640);
    std::fs::write(&renaming, "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Final modes: a new file's from the umask, a replaced file's its own.
    assert_eq!(mode_of(&ws.join("new.txt")), 0o666 & !umask());
    assert_eq!(mode_of(&ws.join("old.txt")), 0o640);
    assert!(temp_in(&ws).is_none());
    // The session was recorded, in a file only the user can read.
    let chats: Vec<std::path::PathBuf> = walk(&s.home().join(".troupe"))
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl") && p.to_string_lossy().contains("/chats/")
        })
        .collect();
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(mode_of(&chats[0]), 0o600, "{}", chats[0].display());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
