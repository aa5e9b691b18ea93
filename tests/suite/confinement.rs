//! The FileSystem actor's confinement, end to end: a second process swapping a
//! directory for a link leading out while parallel reads, searches and writes run;
//! file modes, edits through links; non-regular files; a killed run's temp files.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

const SENTINEL: &str = "SENTINEL-OUTSIDE-THE-WORKSPACE";

/// Every function response of every request, as text.
fn all_responses(s: &Scratch) -> Vec<Value> {
    s.requests().iter().flat_map(function_responses).collect()
}

/// The names under `dir`, recursively, relative.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let path = entry.path();
            out.push(
                path.strip_prefix(dir)
                    .expect("prefix")
                    .display()
                    .to_string(),
            );
            if entry.file_type().expect("type").is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Swaps `ws/d` (a real directory) and `ws/swap` (a link to the outside directory)
/// with `renameat2(RENAME_EXCHANGE)` until stopped; returns the number of swaps.
fn start_swapper(
    ws: PathBuf,
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let dir = rustix::fs::open(
            &ws,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .expect("open ws");
        while !stop.load(Ordering::Relaxed) {
            rustix::fs::renameat_with(&dir, "d", &dir, "swap", rustix::fs::RenameFlags::EXCHANGE)
                .expect("exchange");
            swaps.fetch_add(1, Ordering::Relaxed);
            std::thread::yield_now();
        }
        // Leave `d` the real directory.
        if std::fs::symlink_metadata(ws.join("d"))
            .expect("d")
            .file_type()
            .is_symlink()
        {
            rustix::fs::renameat_with(&dir, "d", &dir, "swap", rustix::fs::RenameFlags::EXCHANGE)
                .expect("exchange back");
        }
    })
}

#[test]
fn a_directory_swapped_for_a_link_never_leads_reads_or_writes_outside() {
    let s = Scratch::new();
    let ws = s.ws();
    let outside = s.root().join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("f.txt"), format!("{SENTINEL}\n")).expect("sentinel");
    let before = tree(&outside);
    s.write("d/f.txt", "inside\n");
    std::os::unix::fs::symlink(&outside, ws.join("swap")).expect("link");

    let mut calls = Vec::new();
    for i in 0..40 {
        calls.push(call("read_file", json!({"file_path": "d/f.txt"})));
        calls.push(call("read_many_files", json!({"include": ["d/*.txt"]})));
        calls.push(call(
            "grep_search",
            json!({"pattern": "SENTINEL|inside", "dir_path": "d"}),
        ));
        calls.push(call("glob", json!({"pattern": "*.txt", "dir_path": "d"})));
        calls.push(call(
            "write_file",
            json!({"file_path": format!("d/w{i}.txt"), "content": "written\n"}),
        ));
    }
    let turns = [turn(calls), turn(vec![text("done")])];

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = start_swapper(ws.clone(), stop.clone(), swaps.clone());
    // The race is exercised when calls met both sides of it: `d` the real directory
    // (a read of d/f.txt answered "inside") and `d` the link (a call refused because
    // its path resolved outside). Runs go on until both were seen — at least 6 runs,
    // at most 30 — however much time the swapping thread is given.
    let refused = format!(
        "resolves outside the allowed workspace directories: {}",
        ws.display()
    );
    let (mut runs, mut answered, mut met_dir, mut met_link) = (0, 0, 0, 0);
    while runs < 6 || ((met_dir == 0 || met_link == 0) && runs < 30) {
        runs += 1;
        let _ = std::fs::remove_file(s.requests_path());
        let proc = s.run(&turns, &["-p", "go", "--approval-mode", "yolo"]);
        assert!(proc.status.success(), "stderr: {}", stderr(&proc));
        assert!(!stdout(&proc).contains(SENTINEL), "{}", stdout(&proc));
        let responses = all_responses(&s);
        answered += responses.len();
        for r in &responses {
            let out = r.to_string();
            assert!(!out.contains(SENTINEL), "read outside: {out}");
            // A write that resolved outside is refused, never written there.
            assert!(
                !out.contains(&outside.display().to_string()) || out.contains("error"),
                "{out}"
            );
            if r["name"] == "read_file" && r["response"]["output"] == "inside\n" {
                met_dir += 1;
            }
            if r["response"]["error"]
                .as_str()
                .is_some_and(|e| e.contains(&refused))
            {
                met_link += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    let swapped = swaps.load(Ordering::Relaxed);
    assert!(
        met_dir > 0 && met_link > 0,
        "in {runs} runs ({swapped} swaps) {met_dir} calls met the directory and {met_link} the link"
    );
    assert_eq!(answered, runs * 200);
    assert_eq!(tree(&outside), before, "something was written outside");
    assert_eq!(
        std::fs::read_to_string(outside.join("f.txt")).expect("sentinel"),
        format!("{SENTINEL}\n")
    );
}

#[test]
fn new_files_follow_the_umask_and_replaced_files_keep_mode_and_link() {
    use std::os::unix::process::CommandExt;
    let s = Scratch::new();
    let ws = s.ws();
    let script_path = s.write("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&script_path, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    s.write("real/target.txt", "alpha\n");
    std::os::unix::fs::symlink("real/target.txt", ws.join("link.txt")).expect("link");
    let outside = s.root().join("outside.txt");
    std::fs::write(&outside, "untouched\n").expect("outside");
    std::os::unix::fs::symlink(&outside, ws.join("out_link.txt")).expect("out link");
    let turns = [
        turn(vec![
            call(
                "write_file",
                json!({"file_path": "fresh.txt", "content": "new\n"}),
            ),
            call(
                "write_file",
                json!({"file_path": "run.sh", "content": "#!/bin/sh\necho new\n"}),
            ),
            call(
                "replace",
                json!({"file_path": "link.txt", "instruction": "x", "old_string": "alpha", "new_string": "beta"}),
            ),
            call(
                "write_file",
                json!({"file_path": "out_link.txt", "content": "pwned\n"}),
            ),
        ]),
        turn(vec![text("done")]),
    ];
    let script = s.script(&turns);
    let mut cmd = s.command();
    cmd.arg("--fake-responses")
        .arg(&script)
        .args(["-p", "go", "--approval-mode", "yolo"]);
    // SAFETY: umask is async-signal-safe; it only sets the child's file mode mask.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o027);
            Ok(())
        });
    }
    let proc = cmd.output().expect("troupe");
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode(&ws.join("fresh.txt")), 0o640, "0666 & !umask");
    assert_eq!(s.read("run.sh"), "#!/bin/sh\necho new\n");
    assert_eq!(mode(&ws.join("run.sh")), 0o750, "mode kept");
    assert!(std::fs::symlink_metadata(ws.join("link.txt"))
        .expect("link")
        .file_type()
        .is_symlink());
    assert_eq!(s.read("real/target.txt"), "beta\n");
    assert_eq!(
        std::fs::read_to_string(&outside).expect("outside"),
        "untouched\n"
    );
    let responses = all_responses(&s);
    let out_link = responses
        .iter()
        .find(|r| r.to_string().contains("out_link") || r.to_string().contains("outside.txt"))
        .expect("the refused write's response");
    assert!(
        out_link.to_string().contains("Path not in workspace")
            || out_link
                .to_string()
                .contains("outside the allowed workspace"),
        "{out_link}"
    );
    // Owner kept (the test's own uid: the best effort always succeeds here).
    assert_eq!(
        std::fs::metadata(ws.join("run.sh")).expect("meta").uid(),
        unsafe { libc::getuid() }
    );
}

#[test]
fn devices_and_fifos_are_refused_without_reading() {
    let s = Scratch::new();
    let ws = s.ws();
    let fifo = std::ffi::CString::new(ws.join("pipe").display().to_string()).expect("c");
    // SAFETY: plain libc calls on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0, "mkfifo");
    let dev = std::ffi::CString::new(ws.join("null_dev").display().to_string()).expect("c");
    // A character device (the null device's numbers) when we may create one.
    let have_device =
        unsafe { libc::mknod(dev.as_ptr(), libc::S_IFCHR | 0o644, libc::makedev(1, 3)) } == 0;
    let mut calls = vec![
        call("read_file", json!({"file_path": "pipe"})),
        call("write_file", json!({"file_path": "pipe", "content": "x"})),
    ];
    if have_device {
        calls.push(call("read_file", json!({"file_path": "null_dev"})));
    }
    let turns = [turn(calls), turn(vec![text("done")])];
    let proc = s.run(&turns, &["-p", "go", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    let responses = all_responses(&s);
    assert_eq!(responses.len(), if have_device { 3 } else { 2 });
    for r in &responses {
        let text = r.to_string();
        assert!(
            text.contains("not a regular file") || text.contains("Not a regular file"),
            "{text}"
        );
    }
}

/// Runs 200 parallel `write_file` calls of 256 KiB each over existing files and kills
/// the process with SIGKILL while they run.
#[test]
fn kill_9_during_parallel_writes_leaves_no_torn_file_and_the_next_start_cleans_up() {
    let s = Scratch::new();
    let ws = s.ws();
    let old = "o".repeat(256 * 1024);
    let new_body = |i: usize| format!("{i:04}{}", "n".repeat(256 * 1024 - 4));
    for i in 0..200 {
        s.write(&format!("w/{i}.txt"), &old);
    }
    let calls: Vec<Value> = (0..200)
        .map(|i| {
            call(
                "write_file",
                json!({"file_path": format!("w/{i}.txt"), "content": new_body(i)}),
            )
        })
        .collect();
    let mut child = s.spawn(
        &[turn(calls), turn(vec![text("done")])],
        &["-p", "go", "--approval-mode", "yolo"],
    );
    // Kill as soon as some writes have started (a temp file or a new file shows).
    let started = Instant::now();
    let temps = |ws: &Path| -> usize {
        std::fs::read_dir(ws.join("w"))
            .map(|r| {
                r.flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .starts_with(".troupe-write-")
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    while temps(&ws) == 0 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().expect("kill -9");
    child.wait().expect("wait");
    let mut fresh = 0;
    for i in 0..200 {
        let body = std::fs::read_to_string(ws.join(format!("w/{i}.txt"))).expect("file");
        if body != old {
            assert_eq!(body, new_body(i), "w/{i}.txt is torn");
            fresh += 1;
        }
    }
    let left = temps(&ws);
    // The next start removes what the killed run left.
    let left_files: Vec<PathBuf> = std::fs::read_dir(ws.join("w"))
        .expect("w")
        .flatten()
        .map(|e| e.path())
        .collect();
    wait_until_written_before_now(&left_files);
    let proc = s.run(&[turn(vec![text("hi")])], &["-p", "hi"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(
        temps(&ws),
        0,
        "temp files left after the next start ({left} before, {fresh} written)"
    );
}

/// Waits until the clock is past the modification time of each of `files`: a start
/// sweeps only the temps written before it started.
fn wait_until_written_before_now(files: &[PathBuf]) {
    let latest = files
        .iter()
        .filter_map(|f| std::fs::symlink_metadata(f).and_then(|m| m.modified()).ok())
        .max();
    let Some(latest) = latest else {
        return;
    };
    let waited = Instant::now();
    while std::time::SystemTime::now() <= latest {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the clock never passed {latest:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A pid no process has now.
fn gone_pid() -> u32 {
    (1_000_000..4_000_000)
        .rev()
        .find(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        .expect("a free pid")
}

/// The project's writers directory (under the scratch home) once a start made it.
fn writers_dir(s: &Scratch) -> PathBuf {
    let tmp = s.home().join(".troupe").join("tmp");
    std::fs::read_dir(&tmp)
        .expect("project temp directories")
        .flatten()
        .map(|e| e.path().join("writers"))
        .find(|p| p.is_dir())
        .expect("a writers directory")
}

/// A start walks the workspace for stale temps only when a writer that announced
/// itself is gone, or the project has no writers directory yet; a run that writes and
/// ends cleanly withdraws its announcement, so the next start walks nothing.
#[test]
fn only_a_start_after_a_writer_that_did_not_end_cleanly_sweeps_the_workspace() {
    let s = Scratch::new();
    let dead = gone_pid();
    let plant = |tag: &str| {
        let temp = s.write(&format!("deep/dir/.troupe-write-{dead}-{tag}"), "x");
        wait_until_written_before_now(std::slice::from_ref(&temp));
        temp
    };
    let hi = || {
        let proc = s.run(&[turn(vec![text("hi")])], &["-p", "hi"]);
        assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    };
    // No writers directory yet (a new project, or one from before the journal): sweep.
    let first = plant("00000000000000a1");
    hi();
    assert!(!first.exists(), "the first start did not sweep");
    let writers = writers_dir(&s);
    assert!(tree(&writers).is_empty(), "{:?}", tree(&writers));

    // Every writer ended cleanly: the next start leaves the tree alone.
    let unannounced = plant("00000000000000b2");
    hi();
    assert!(unannounced.exists(), "a start walked with no stale writer");

    // A run that writes announces itself and withdraws at its clean exit.
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "written.txt", "content": "new"}),
        )]),
        turn(vec![text("done")]),
    ];
    let proc = s.run(&turns, &["-p", "go", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(s.read("written.txt"), "new");
    assert!(tree(&writers).is_empty(), "{:?}", tree(&writers));
    assert!(unannounced.exists());

    // A writer that is gone without withdrawing: the next start sweeps and forgets it.
    let root = std::fs::canonicalize(s.ws()).expect("canonical workspace");
    let marker = writers.join(dead.to_string());
    std::fs::write(&marker, format!("start=12345\n{}\n", root.display())).expect("marker");
    hi();
    assert!(
        !unannounced.exists(),
        "the stale writer's temp was not removed"
    );
    assert!(!marker.exists(), "the stale writer was not forgotten");
}

#[test]
fn parallel_rewrites_of_5_mb_files_whose_every_line_changes_stay_bounded() {
    let s = Scratch::new();
    let line = |tag: char, i: usize| format!("{tag}{i:09}{}\n", "x".repeat(40));
    // The 200 files ran for 14 minutes at 10 GB; 10 here (a debug build on
    // a shared CI machine), the full 200 in bench/rewrite_5mb.sh.
    let files = 10;
    let lines = 5 * 1024 * 1024 / 51;
    let old: String = (0..lines).map(|i| line('a', i)).collect();
    let new: String = (0..lines).map(|i| line('b', i)).collect();
    for i in 0..files {
        s.write(&format!("big{i}.txt"), &old);
    }
    let calls: Vec<Value> = (0..files)
        .map(|i| {
            call(
                "write_file",
                json!({"file_path": format!("big{i}.txt"), "content": new}),
            )
        })
        .collect();
    let turns = [turn(calls), turn(vec![text("done")])];

    // The same batch refused (headless, default approval mode): the process holds
    // what the model sent — the script, the calls' arguments, the history and the
    // next request, with their copies — and does none of the edits' work. Its peak,
    // measured here on this build and machine, is what the rewrite run must hold too.
    let (status, held_kib) = wait_with_peak_rss(s.spawn(&turns, &["-p", "go", "-o", "json"]));
    // Exit status 54 (in the wait status word): the calls were refused, as meant.
    assert_eq!(status, 54 << 8, "the refused run failed");
    for i in 0..files {
        assert_eq!(s.read(&format!("big{i}.txt")), old, "a refused call wrote");
    }
    std::fs::remove_file(s.requests_path()).expect("clear the request log");

    let child = s.spawn(
        &turns,
        &["-p", "go", "--approval-mode", "yolo", "-o", "json"],
    );
    let (status, peak_kib) = wait_with_peak_rss(child);
    assert_eq!(status, 0, "troupe failed");
    for i in 0..files {
        assert_eq!(s.read(&format!("big{i}.txt")), new);
    }
    let responses = all_responses(&s);
    assert_eq!(responses.len(), files);
    for r in &responses {
        let out = r["response"]["output"].as_str().expect("output");
        assert!(
            out.starts_with("Successfully overwrote file"),
            "{}",
            &out[..200.min(out.len())]
        );
        // What goes back to the model is capped too.
        assert!(out.len() < 1024 * 1024, "{} bytes", out.len());
    }
    // Beyond what the refused run held, the rewrites add only transient work — the
    // old file, the new bytes, the diff — for which the edits in flight share a budget
    // of bytes (EDIT_MEMORY_BUDGET_BYTES, 128 MiB: about half of this batch at a time),
    // and each call's capped result (output < 1 MiB, diff text ≤ 256 KiB, their
    // record): 2 MiB a call. Measured, the rewrites add a few MiB to what the refused
    // run holds. Before the budget every edit of the batch ran at once, ~20 MiB each
    // (old and new text, a copy of each for the diff): 200 MiB here, over the bound.
    // The bound follows the refused run rather than a multiple of the content: how
    // many transient copies of the calls' arguments (the request log, the session
    // record, the next request) are alive together depends on the machine's load.
    let content_kib = (files * new.len() / 1024) as i64;
    let budget_kib = (troupe::tools::file_edit::EDIT_MEMORY_BUDGET_BYTES / 1024) as i64;
    let bound_kib = held_kib + budget_kib + files as i64 * 2 * 1024;
    assert!(
        peak_kib < bound_kib,
        "peak RSS {peak_kib} KiB, {held_kib} KiB with the same calls refused, for \
         {content_kib} KiB of content (bound {bound_kib} KiB)"
    );
}

#[test]
fn grep_with_no_ignore_does_not_read_what_read_file_refuses() {
    let s = Scratch::new();
    s.write(".env", "API_KEY=TOPSECRET-ENV\n");
    s.write(".git/config", "[core]\n\tTOPSECRET-GIT = 1\n");
    s.write("src/a.txt", "TOPSECRET-VISIBLE\n");
    let turns = [
        turn(vec![call(
            "grep_search",
            json!({"pattern": "TOPSECRET", "no_ignore": true}),
        )]),
        turn(vec![text("done")]),
    ];
    let proc = s.run(&turns, &["-p", "go", "--approval-mode", "yolo"]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    let out = all_responses(&s)[0].to_string();
    assert!(out.contains("TOPSECRET-VISIBLE"), "{out}");
    assert!(!out.contains("TOPSECRET-ENV"), "{out}");
    assert!(!out.contains("TOPSECRET-GIT"), "{out}");
}
