//! End to end with a real model: an OpenAI-compatible server on this machine (see
//! `shared/peers/local-llm`: Qwen2.5-Coder-1.5B under llama.cpp). Opt-in (ignored by
//! default): `TROUPE_LOCAL_LLM_URL=http://127.0.0.1:8080 cargo test --test all local_llm
//! -- --ignored`.
//! A 1.5B model's judgement varies, so the checks are on the protocol: it lists and
//! reads files of the scratch workspace through Troupe, the results reach it, and it
//! answers; the recorded session then replays offline.

use serde_json::Value;

use super::gemini_wire::run_against;
use crate::common::*;

const SYSTEM_PROMPT: &str = "You are a coding agent. Use the provided tools to inspect the workspace. After a tool result arrives, answer the user's question in plain text.";

/// The local model server's URL (`TROUPE_LOCAL_LLM_URL`), which must be on this machine.
pub(super) fn local_llm_url() -> String {
    let url = std::env::var("TROUPE_LOCAL_LLM_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            panic!("set TROUPE_LOCAL_LLM_URL=http://127.0.0.1:8080 (see shared/peers/local-llm)")
        });
    assert!(
        url.starts_with("http://127.0.0.1") || url.starts_with("http://localhost"),
        "tests only talk to this machine: {url}"
    );
    url
}

/// Did a `tool` call of the stream `events` succeed?
pub(super) fn tool_succeeded(events: &[Value], tool: &str) -> bool {
    events.iter().any(|e| {
        e["type"] == "tool_use"
            && e["tool_name"] == tool
            && events.iter().any(|r| {
                r["type"] == "tool_result"
                    && r["tool_id"] == e["tool_id"]
                    && r["status"] == "success"
            })
    })
}

/// The stream-json events of a run, and a short human transcript of them.
pub(super) fn transcript(stdout: &str) -> (Vec<Value>, String) {
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut lines = Vec::new();
    let mut text = String::new();
    for e in &events {
        if e["type"] == "message" && e["role"] == "assistant" {
            text.push_str(e["content"].as_str().unwrap_or(""));
            continue;
        }
        if !text.is_empty() {
            lines.push(format!("model: {}", std::mem::take(&mut text)));
        }
        match e["type"].as_str() {
            Some("message") => lines.push(format!("user: {}", e["content"].as_str().unwrap_or(""))),
            Some("tool_use") => lines.push(format!("call {} {}", e["tool_name"], e["parameters"])),
            Some("tool_result") => lines.push(format!(
                "  -> {} {}",
                e["status"],
                e.get("output").or(e.get("error")).unwrap_or(&Value::Null)
            )),
            Some("result") => lines.push(format!("result: {} {}", e["status"], e["stats"])),
            _ => {}
        }
    }
    if !text.is_empty() {
        lines.push(format!("model: {text}"));
    }
    (events, lines.join("\n"))
}

#[test]
#[ignore = "needs a local model server: TROUPE_LOCAL_LLM_URL=http://127.0.0.1:8080 cargo test --test all local_llm -- --ignored"]
fn a_real_local_model_lists_reads_and_answers() {
    let url = local_llm_url();
    let s = Scratch::new();
    s.write(
        "Cargo.toml",
        "[package]\nname = \"demo-agent\"\nversion = \"0.1.0\"\n",
    );
    s.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    let system = s.root().join("short-system.md");
    std::fs::write(&system, SYSTEM_PROMPT).expect("system prompt");
    let recording = s.root().join("real.jsonl");
    let base = format!("{}/v1", url.trim_end_matches('/'));
    let args = [
        "-p",
        "List the files in the current directory, then read Cargo.toml and tell me the package name.",
        "--yolo",
        "-o",
        "stream-json",
        "-m",
        "qwen2.5-coder-1.5b-instruct",
        "-c",
        "tools.core=list_directory,read_file",
        "-c",
        "model.temperature=0",
        "-c",
        "model.max_turns=6",
        "-c",
        "model.compression.token_limits=qwen*=8192",
    ];
    let mut live_args: Vec<&str> = args.to_vec();
    let recording_arg = recording.to_str().expect("path").to_string();
    live_args.extend(["--record-responses", &recording_arg]);
    // run_against sets its own one-line prompt file; ours comes later and wins.
    let system_arg = format!("model.system_prompt_file={}", system.display());
    live_args.extend(["-c", &system_arg]);
    let out = run_against(&s, &[("OPENAI_BASE_URL", &base)], &live_args);
    let (events, text) = transcript(&stdout(&out));
    eprintln!(
        "--- transcript ---\n{text}\n--- stderr ---\n{}",
        stderr(&out)
    );
    assert!(out.status.success(), "the run failed");

    let succeeded = |tool: &str| tool_succeeded(&events, tool);
    assert!(
        succeeded("list_directory"),
        "no successful list_directory call"
    );
    assert!(succeeded("read_file"), "no successful read_file call");
    let requests = s.requests();
    let saw_file = requests.iter().any(|r| {
        function_responses(r).iter().any(|fr| {
            fr["response"]["output"]
                .as_str()
                .is_some_and(|o| o.contains("name = \"demo-agent\""))
        })
    });
    assert!(saw_file, "the model was never sent Cargo.toml's text");
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "message" && e["role"] == "assistant")
        .filter_map(|e| e["content"].as_str())
        .collect();
    assert!(!answer.trim().is_empty(), "the model did not answer");

    // The real session, recorded, replays offline to the same answer.
    std::fs::remove_file(s.requests_path()).expect("clear request log");
    let mut replay_args: Vec<&str> = args.to_vec();
    replay_args.extend(["--fake-responses", &recording_arg, "-c", &system_arg]);
    let replay = run_against(&s, &[], &replay_args);
    assert!(
        replay.status.success(),
        "replay failed: {}",
        stderr(&replay)
    );
    let (replayed, _) = transcript(&stdout(&replay));
    let replay_answer: String = replayed
        .iter()
        .filter(|e| e["type"] == "message" && e["role"] == "assistant")
        .filter_map(|e| e["content"].as_str())
        .collect();
    assert_eq!(replay_answer, answer);
    assert_eq!(s.requests(), requests);
}

/// One task for the small-profile run: a prompt, a workspace, and how success is judged.
struct Task {
    name: &'static str,
    prompt: &'static str,
    files: &'static [(&'static str, &'static str)],
}

const TASKS: &[Task] = &[
    Task {
        name: "list files",
        prompt: "List the files in the current directory.",
        files: &[
            ("notes.txt", "shopping list\n"),
            ("Cargo.toml", "[package]\nname = \"demo\"\n"),
        ],
    },
    Task {
        name: "find a definition",
        prompt: "In which file is the function parse_config defined? Answer with its path.",
        files: &[
            ("src/main.py", "from settings import parse_config\n\nprint(parse_config('a=1'))\n"),
            (
                "src/settings.py",
                "def parse_config(text):\n    key, value = text.split('=')\n    return {key: value}\n",
            ),
        ],
    },
    Task {
        name: "fix a one-line bug",
        prompt: "Running `python3 test_calc.py` fails. Fix the bug in calc.py so that the test passes.",
        files: &[
            ("calc.py", "def add(a, b):\n    return a - b\n"),
            (
                "test_calc.py",
                "from calc import add\n\nassert add(2, 3) == 5, 'add(2, 3) should be 5'\nprint('ok')\n",
            ),
        ],
    },
];

/// Runs `cmd`, killing it after `limit`; returns its output and whether it was killed.
pub(super) fn run_bounded(
    mut cmd: std::process::Command,
    limit: std::time::Duration,
) -> (std::process::Output, bool) {
    use std::process::Stdio;
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn troupe");
    let started = std::time::Instant::now();
    let mut killed = false;
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            killed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    (child.wait_with_output().expect("output"), killed)
}

fn succeeded(task: &Task, s: &Scratch, events: &[Value], answer: &str) -> bool {
    let tool_ok = |tool: &str| tool_succeeded(events, tool);
    match task.name {
        "list files" => {
            (tool_ok("list_directory") || tool_ok("glob"))
                && answer.contains("notes.txt")
                && answer.contains("Cargo.toml")
        }
        "find a definition" => answer.contains("settings.py"),
        _ => std::process::Command::new("python3")
            .arg("test_calc.py")
            .current_dir(s.ws())
            .output()
            .is_ok_and(|o| o.status.success()),
    }
}

#[test]
#[ignore = "needs a local model server: TROUPE_LOCAL_LLM_URL=http://127.0.0.1:8080 cargo test --test all local_llm -- --ignored"]
fn three_small_tasks_with_the_small_profile() {
    let url = local_llm_url();
    let limit = std::time::Duration::from_secs(600);
    let mut report = Vec::new();
    let mut successes = 0;
    let (mut overran, mut looped): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for task in TASKS {
        let s = Scratch::new();
        for (path, text) in task.files {
            s.write(path, text);
        }
        let mut cmd = s.command();
        // No -m: the server is asked for its model (GET /v1/models).
        cmd.env(
            "OPENAI_BASE_URL",
            format!("{}/v1", url.trim_end_matches('/')),
        )
        .args([
            "-p",
            task.prompt,
            "--profile",
            "small",
            "--yolo",
            "-o",
            "stream-json",
        ])
        .args(["-c", "model.max_turns=12"]);
        let started = std::time::Instant::now();
        let (out, killed) = run_bounded(cmd, limit);
        let elapsed = started.elapsed();
        let (events, text) = transcript(&stdout(&out));
        let answer: String = events
            .iter()
            .filter(|e| e["type"] == "message" && e["role"] == "assistant")
            .filter_map(|e| e["content"].as_str())
            .collect();
        let ok = !killed && out.status.success() && succeeded(task, &s, &events, &answer);
        successes += usize::from(ok);
        let code = out.status.code();
        eprintln!(
            "=== {}: {} in {:.0} s (exit {code:?}{})\n{text}\n--- stderr ---\n{}",
            task.name,
            if ok { "SUCCESS" } else { "FAILURE" },
            elapsed.as_secs_f64(),
            if killed { ", killed at 10 min" } else { "" },
            stderr(&out)
        );
        report.push(format!(
            "{}: {} in {:.0} s (exit {code:?})",
            task.name,
            if ok { "success" } else { "failure" },
            elapsed.as_secs_f64()
        ));
        if killed {
            overran.push(task.name);
        }
        if code == Some(53) {
            looped.push(task.name);
        }
    }
    eprintln!(
        "=== {successes}/{} tasks succeeded\n{}",
        TASKS.len(),
        report.join("\n")
    );
    // Never past 10 minutes, never into the turn limit (a loop goes on until it).
    assert!(overran.is_empty(), "ran past 10 minutes: {overran:?}");
    assert!(looped.is_empty(), "looped into model.max_turns: {looped:?}");
}
