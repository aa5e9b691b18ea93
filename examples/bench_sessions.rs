//! Session benchmark: `--list-sessions` over many long sessions, resuming one long
//! session, and starting a new session in a project that has many, through the real
//! binary (process start included), each against a baseline measured in the same run:
//! the time to merely read every byte of the same files, or a new session in a project
//! that has none.
//!
//!     cargo build --release && cargo run --release --example bench_sessions \
//!         [-- --sessions 500 --records 2000 --messages 10000 --iters 7]
//!
//! The binary is `target/release/troupe` (or `$TROUPE_BIN`). Generated data goes to a
//! temp dir, removed at the end.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A session of `records` records (after the metadata line) in gemini-cli's shape:
/// user prompt, model turn with a read_file call, the same record with its result,
/// `$set lastUpdated` after each message.
fn session_text(id: &str, start: &str, records: usize, prompt: &str) -> String {
    let mut out = json!({"sessionId": id, "projectHash": "0".repeat(64), "startTime": start,
                         "lastUpdated": start, "kind": "main"})
    .to_string();
    out.push('\n');
    let mut n = 0;
    let mut i = 0;
    while n < records {
        let user = json!({"id": format!("u{i}"), "timestamp": start, "type": "user",
                          "content": [{"text": format!("{prompt} {i}")}]});
        let call = json!({"id": format!("read_file__c{i}"), "name": "read_file",
                          "args": {"file_path": format!("src/file_{i}.rs")}});
        let mut done = call.clone();
        done["result"] = json!([{"functionResponse": {"id": format!("c{i}"), "name": "read_file",
                                  "response": {"output": format!("fn f{i}() {{ /* {} */ }}\n", "x".repeat(60))}}}]);
        done["status"] = json!("success");
        let model = |calls: serde_json::Value| {
            json!({"id": format!("g{i}"), "timestamp": start,
            "type": "gemini", "content": "Reading the file.", "thoughts": [], "model": "gemini-2.5-flash",
            "toolCalls": calls})
        };
        let set = json!({"$set": {"lastUpdated": start}});
        for record in [
            user,
            set.clone(),
            model(json!([call])),
            set.clone(),
            model(json!([done])),
            set,
        ] {
            if n == records {
                break;
            }
            out.push_str(&record.to_string());
            out.push('\n');
            n += 1;
        }
        i += 1;
    }
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 100_000.0).round() / 100.0
}

fn run(bin: &Path, home: &Path, ws: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let status = Command::new(bin)
        .args(args)
        .current_dir(ws)
        .env("TROUPE_HOME", home)
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run troupe");
    let elapsed = started.elapsed();
    assert!(status.success(), "troupe {args:?} failed");
    elapsed
}

/// Reads every byte of `files` (the naive baseline).
fn read_all(files: &[PathBuf]) -> Duration {
    let started = Instant::now();
    let mut total = 0;
    for f in files {
        total += std::fs::read(f).map(|b| b.len()).unwrap_or(0);
    }
    assert!(total > 0);
    started.elapsed()
}

/// Deletes the session files (and lock files) in `chats` that are not in `keep`.
fn remove_new_sessions(chats: &Path, keep: &[PathBuf]) {
    for entry in std::fs::read_dir(chats).expect("chats").flatten() {
        let path = entry.path();
        if !keep.contains(&path) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn main() {
    let sessions = arg("--sessions", 500);
    let records = arg("--records", 2000);
    let messages = arg("--messages", 10_000);
    let iters = arg("--iters", 7).max(1);
    let bin = std::env::var("TROUPE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/troupe")
        });
    let bin = if bin.exists() {
        bin
    } else {
        std::env::var("CARGO_TARGET_DIR")
            .map(|d| PathBuf::from(d).join("release/troupe"))
            .expect("build the release binary first")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let ws = std::fs::canonicalize(&ws).expect("ws");

    // 1. Many sessions for --list-sessions.
    let list_home = dir.path().join("list-home");
    let store = troupe::platform::sessions::SessionStore::open(&list_home, &ws).expect("store");
    std::fs::create_dir_all(&store.chats).expect("chats");
    let mut files = Vec::new();
    for s in 0..sessions {
        let id = format!("{s:08}-0000-4000-8000-000000000000");
        let start = format!(
            "2026-11-{:02}T{:02}:{:02}:00.000Z",
            1 + s / 1440 % 28,
            s / 60 % 24,
            s % 60
        );
        let path = store.chats.join(format!(
            "session-{}-{}.jsonl",
            &start[..16].replace(':', "-"),
            &id[..8]
        ));
        std::fs::write(
            &path,
            session_text(&id, &start, records, "please look at the code"),
        )
        .expect("write");
        files.push(path);
    }
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();

    // 2. One long session to resume (its own home).
    let resume_home = dir.path().join("resume-home");
    let store2 = troupe::platform::sessions::SessionStore::open(&resume_home, &ws).expect("store");
    std::fs::create_dir_all(&store2.chats).expect("chats");
    let long = store2.chats.join("session-2026-11-23T08-00-aaaaaaaa.jsonl");
    std::fs::write(
        &long,
        session_text(
            "aaaaaaaa-0000-4000-8000-000000000000",
            "2026-11-23T08:00:00.000Z",
            messages,
            "step",
        ),
    )
    .expect("write");
    let script = dir.path().join("answer.jsonl");
    std::fs::write(&script, json!({"method": "generateContentStream", "response": [{"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}]}]}).to_string() + "\n").expect("script");
    let script = script.display().to_string();
    // A fresh one-turn session: the process cost both figures include.
    let fresh_home = dir.path().join("fresh-home");

    let (mut list, mut list_base, mut resume, mut resume_base, mut fresh) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut start_among = Vec::new();
    // Interleaved A/B rounds; the median of each.
    for _ in 0..iters {
        list.push(run(&bin, &list_home, &ws, &["--list-sessions"]));
        list_base.push(read_all(&files));
        // Resuming appends to the session; a copy is resumed each time.
        let copy = long.with_file_name("session-2026-11-23T08-00-aaaaaaaa.jsonl.orig");
        if !copy.exists() {
            std::fs::copy(&long, &copy).expect("copy");
        }
        std::fs::copy(&copy, &long).expect("restore copy");
        resume.push(run(
            &bin,
            &resume_home,
            &ws,
            &[
                "--fake-responses",
                &script,
                "-r",
                "latest",
                "-p",
                "go on",
                "-c",
                "sessions.max_age_days=0",
            ],
        ));
        resume_base.push(read_all(std::slice::from_ref(&long)));
        let _ = std::fs::remove_dir_all(&fresh_home);
        fresh.push(run(
            &bin,
            &fresh_home,
            &ws,
            &["--fake-responses", &script, "-p", "go on"],
        ));
        // The same new one-turn session in a project that has `sessions` sessions (all
        // in date: the default retention has nothing to delete). Its own session is
        // removed again, so every round starts among the same files.
        start_among.push(run(
            &bin,
            &list_home,
            &ws,
            &["--fake-responses", &script, "-p", "go on"],
        ));
        remove_new_sessions(&store.chats, &files);
    }
    let (list, list_base) = (median(list), median(list_base));
    let (resume, resume_base, fresh) = (median(resume), median(resume_base), median(fresh));
    let start_among = median(start_among);
    let report = json!({
        "sessions": sessions, "records_per_session": records, "bytes_listed": bytes,
        "list_sessions_ms": ms(list),
        "baseline_read_all_files_ms": ms(list_base),
        "list_vs_read_all": (list.as_secs_f64() / list_base.as_secs_f64() * 1000.0).round() / 1000.0,
        "resume_messages": messages,
        "resume_ms": ms(resume),
        "fresh_one_turn_session_ms": ms(fresh),
        "new_session_among_them_ms": ms(start_among),
        "new_session_among_them_vs_fresh": (start_among.as_secs_f64() / fresh.as_secs_f64() * 1000.0).round() / 1000.0,
        "resume_minus_fresh_ms": ms(resume.saturating_sub(fresh)),
        "baseline_read_session_file_ms": ms(resume_base),
        "iters": iters,
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
}
