//! An external append racing Troupe's edits of the same file: no append that reached
//! the file while it held the file's name is lost without a word. Either it is in the
//! final file, or an edit reported the change and kept that version in a file it named.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::*;

/// What the appender wrote: markers it knows reached the named file, and the others.
struct Appended {
    certain: Vec<usize>,
    uncertain: usize,
}

/// Appends `marker-N` lines to `path` through a descriptor kept open (reopened when
/// the name moves to another file) until stopped. A marker is certain when, after its
/// write, the name still leads to the inode written: the write reached the file.
fn start_appender(path: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Appended> {
    std::thread::spawn(move || {
        let mut out = Appended {
            certain: Vec::new(),
            uncertain: 0,
        };
        let open = || OpenOptions::new().append(true).open(&path).expect("open");
        let mut file = open();
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) && n < 20_000 {
            file.write_all(format!("marker-{n}\n").as_bytes())
                .expect("append");
            let written = file.metadata().expect("fstat");
            let named = std::fs::metadata(&path).expect("stat");
            if written.ino() == named.ino() && written.nlink() > 0 {
                out.certain.push(n);
            } else {
                out.uncertain += 1;
                file = open();
            }
            n += 1;
            // Bursts as fast as it goes, with gaps in which edits can land.
            if n % 100 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        out
    })
}

/// Kept versions of `name` in `dir` (`<name>.troupe-kept-*`), concatenated.
fn kept_versions(dir: &Path, name: &str) -> String {
    let prefix = format!("{name}.troupe-kept-");
    std::fs::read_dir(dir)
        .expect("read_dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| std::fs::read_to_string(e.path()).expect("kept"))
        .collect()
}

#[test]
fn an_external_append_racing_the_edits_is_never_silently_lost() {
    let s = Scratch::new();
    let slots = 40;
    let initial: String = (0..slots).map(|i| format!("slot-{i:04}: old\n")).collect();
    let path = s.write("log.txt", &initial);
    // Batches of edits of one file run one after the other (the Scheduler's conflict
    // rule); a few batches stay under the turn limit.
    let edit = |i: usize| {
        call(
            "replace",
            json!({"file_path": "log.txt", "old_string": format!("slot-{i:04}: old"), "new_string": format!("slot-{i:04}: new")}),
        )
    };
    let mut turns: Vec<Value> = (0..slots)
        .collect::<Vec<_>>()
        .chunks(20)
        .map(|batch| turn(batch.iter().map(|&i| edit(i)).collect()))
        .collect();
    turns.push(turn(vec![text("done")]));
    let stop = Arc::new(AtomicBool::new(false));
    let appender = start_appender(path.clone(), stop.clone());
    let proc = s.run(&turns, &["-p", "go", "--approval-mode", "yolo"]);
    stop.store(true, Ordering::Relaxed);
    let appended = appender.join().expect("appender");
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));

    let responses: Vec<Value> = s.requests().iter().flat_map(function_responses).collect();
    assert_eq!(responses.len(), slots);
    let mut written = 0;
    for r in &responses {
        let out = r["response"].to_string();
        if out.contains("Successfully modified file") {
            written += 1;
        } else {
            assert!(
                out.contains("changed on disk") || out.contains("changed by another process"),
                "an edit failed for another reason: {out}"
            );
        }
    }
    // The race was run: edits landed while the appender ran (how many depends on the
    // machine's speed; on a quiet one most edits meet an append and are refused).
    assert!(written >= 1, "no edit landed");
    assert!(
        appended.certain.len() > 200,
        "{} appends",
        appended.certain.len()
    );

    let final_text = std::fs::read_to_string(&path).expect("final");
    let kept = kept_versions(&s.ws(), "log.txt");
    let found: std::collections::HashSet<usize> = final_text
        .lines()
        .chain(kept.lines())
        .filter_map(|l| l.strip_prefix("marker-")?.parse().ok())
        .collect();
    let present = |n: usize| found.contains(&n);
    let lost: Vec<usize> = appended
        .certain
        .iter()
        .copied()
        .filter(|&n| !present(n))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} appends lost (e.g. marker-{}); {} written while the name moved; {written} edits landed",
        lost.len(),
        appended.certain.len(),
        lost[0],
        appended.uncertain
    );
}
