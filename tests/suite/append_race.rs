//! An external append racing Troupe's edit of the same file is never lost without a
//! word: either it is in the final file, or the edit failed with the documented error
//! and the appended version is kept in a file the error names.
//!
//! The race is made deterministic with the atomic write's test-only pause points
//! (`src/actors/filesystem/test_pause.rs`): the edit stops in the exact window under
//! test, the test appends, then lets it go on.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

const OLD: &str = "slot: old\n";
const APPENDED: &str = "appended by another process\n";

/// Starts `troupe -p` running one `replace` of `log.txt` (old → new), paused at the
/// point named by `pause_env` on the flag `<root>/go`.
fn start_paused_edit(s: &Scratch, pause_env: &str) -> (Child, PathBuf) {
    let turns = [
        turn(vec![call(
            "replace",
            json!({"file_path": "log.txt", "old_string": "slot: old", "new_string": "slot: new"}),
        )]),
        turn(vec![text("done")]),
    ];
    let script = s.script(&turns);
    let flag = s.root().join("go");
    let child = s
        .command()
        .arg("--fake-responses")
        .arg(&script)
        .args(["-p", "edit", "--approval-mode", "yolo", "-o", "json"])
        .env(pause_env, &flag)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn troupe");
    (child, flag)
}

/// Waits until the edit paused (`true`) or the process ended without pausing
/// (`false`: a build without that pause point, where the window is not reached).
fn wait_for_pause(child: &mut Child, flag: &Path) -> bool {
    let mut paused = flag.as_os_str().to_owned();
    paused.push(".paused");
    let paused = PathBuf::from(paused);
    let started = Instant::now();
    loop {
        if paused.exists() {
            return true;
        }
        if child.try_wait().expect("try_wait").is_some() {
            return paused.exists();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the edit never paused"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn finish(child: Child, flag: &Path) -> Output {
    std::fs::write(flag, "").expect("flag");
    let out = child.wait_with_output().expect("troupe output");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    out
}

/// The tool's answer to the edit: `Ok(output)` or `Err(error)`.
fn edit_answer(s: &Scratch) -> Result<String, String> {
    let requests = s.requests();
    let responses = function_responses(requests.get(1).expect("a second request"));
    assert_eq!(responses.len(), 1, "{responses:?}");
    let r = &responses[0]["response"];
    match r.get("error").and_then(Value::as_str) {
        Some(e) => Err(e.to_string()),
        None => Ok(r.to_string()),
    }
}

/// `<name>.troupe-kept-*` files of the workspace: (path, content).
fn kept_versions(ws: &Path) -> Vec<(PathBuf, String)> {
    std::fs::read_dir(ws)
        .expect("read_dir")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("log.txt.troupe-kept-")
        })
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).expect("kept");
            (e.path(), text)
        })
        .collect()
}

/// The invariant: the append is in the final file, or the edit failed saying so and
/// named a kept file that holds it. A success answer must be true of the final file.
fn assert_append_not_silently_lost(s: &Scratch, answer: &Result<String, String>) {
    let final_text = s.read("log.txt");
    let kept = kept_versions(&s.ws());
    if let Ok(out) = answer {
        assert!(
            final_text.contains("slot: new"),
            "the edit said it was written ({out}) but the file is {final_text:?}"
        );
    }
    if final_text.contains(APPENDED) {
        return;
    }
    let Err(error) = answer else {
        panic!(
            "the append was lost without a word: the edit reported success and the file is {final_text:?} (kept files: {kept:?})"
        );
    };
    assert!(
        error.contains("changed by another process"),
        "the append is not in the file and the error does not say why: {error}"
    );
    let named: Vec<_> = kept
        .iter()
        .filter(|(path, text)| {
            error.contains(&path.display().to_string()) && text.contains(APPENDED)
        })
        .collect();
    assert_eq!(
        named.len(),
        1,
        "the error must name the kept file holding the append: {error}; kept: {kept:?}"
    );
}

#[test]
fn an_append_between_the_last_check_and_the_rename_is_never_silently_lost() {
    let s = Scratch::new();
    s.write("log.txt", OLD);
    let (mut child, flag) = start_paused_edit(&s, "TROUPE_TEST_PAUSE_BEFORE_RENAME");
    assert!(
        wait_for_pause(&mut child, &flag),
        "the edit ended without reaching the rename"
    );
    // Another process appends through the name while the edit is past its last check.
    let mut other = OpenOptions::new()
        .append(true)
        .open(s.ws().join("log.txt"))
        .expect("open");
    other.write_all(APPENDED.as_bytes()).expect("append");
    drop(other);
    finish(child, &flag);
    let answer = edit_answer(&s);
    assert_append_not_silently_lost(&s, &answer);
    // What Troupe does today: the edit is refused with the documented error and the
    // other process's version stays in place.
    assert_eq!(s.read("log.txt"), format!("{OLD}{APPENDED}"));
    let error = answer.expect_err("the edit must fail");
    assert!(
        error.contains(
            "was changed on disk after this edit was computed, so the edit was not written"
        ),
        "{error}"
    );
    assert!(kept_versions(&s.ws()).is_empty());
}

#[test]
fn an_append_through_a_descriptor_held_across_the_exchange_is_kept_and_named() {
    let s = Scratch::new();
    s.write("log.txt", OLD);
    // Opened before the edit, so it keeps writing into the file it opened, whatever
    // name that file has by then (a log writer, an editor holding the file).
    let mut held = OpenOptions::new()
        .append(true)
        .open(s.ws().join("log.txt"))
        .expect("open");
    let (mut child, flag) = start_paused_edit(&s, "TROUPE_TEST_PAUSE_BEFORE_UNLINK");
    let paused = wait_for_pause(&mut child, &flag);
    // Paused after the re-check, the replaced file still has a name; a build without
    // that point has already renamed over it.
    held.write_all(APPENDED.as_bytes()).expect("append");
    drop(held);
    finish(child, &flag);
    let answer = edit_answer(&s);
    assert_append_not_silently_lost(&s, &answer);
    assert!(paused, "the edit ended without reaching the unlink");
    // Today: the edit is written and the other version is kept and named.
    assert_eq!(s.read("log.txt"), "slot: new\n");
    let error = answer.expect_err("the edit must report the other change");
    assert!(error.contains("the edit was written"), "{error}");
    let kept = kept_versions(&s.ws());
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].1, format!("{OLD}{APPENDED}"));
}
