//! What the user sees of a slow, small local model (issue 31): progress while it
//! writes, honest token counts when a run is interrupted, a retried answer shown once,
//! an `@file` fitted to a small window. Against a loopback OpenAI-compatible server.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::openai_wire::{chunk, openai};
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn content(text: &str) -> String {
    format!("data: {}\n\n", chunk(json!({ "content": text }), None))
}

/// A whole answer in `pieces`, with usage.
fn answer(pieces: &[&str]) -> Reply {
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": null}), None)];
    chunks.extend(pieces.iter().map(|p| chunk(json!({ "content": p }), None)));
    chunks.push(chunk(json!({}), Some("stop")));
    chunks.push(json!({"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 6, "total_tokens": 46}}));
    Reply::openai_sse(&chunks)
}

/// The first attempt streams part of the answer and the connection breaks; the second
/// streams the whole answer.
fn broken_then_whole() -> Loopback {
    Loopback::start(vec![
        Reply::events([content("A Python "), content("package")])
            .then_cut(r#"data: {"choices":[{"delta":{"con"#),
        answer(&["A Python ", "package is a folder", " with __init__.py."]),
    ])
}

const WHOLE: &str = "A Python package is a folder with __init__.py.";

#[test]
fn a_slow_stream_shows_progress_events_with_growing_token_counts() {
    let s = Scratch::new();
    // The answer's text comes, then the server is silent for a while before it ends.
    let server = Loopback::start(vec![Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(
            json!({"content": "Working on a long answer, slowly."}),
            None,
        ),
        chunk(json!({}), Some("stop")),
    ])
    .stall_before_last(Duration::from_millis(2600))]);
    let out = openai(&s, &server, &["-p", "hi", "-o", "stream-json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let events = stream_events(&out);
    let progress: Vec<&Value> = events.iter().filter(|e| e["type"] == "progress").collect();
    assert!(
        progress
            .iter()
            .any(|e| e["phase"] == "generating" && e["output_tokens"].as_u64() > Some(0)),
        "{events:#?}"
    );
    let counts: Vec<u64> = progress
        .iter()
        .map(|e| e["output_tokens"].as_u64().expect("output_tokens"))
        .collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert!(progress.iter().all(|e| e["elapsed_ms"].is_u64()));
    let result = events.iter().position(|e| e["type"] == "result");
    let first = events.iter().position(|e| e["type"] == "progress");
    assert!(first < result, "{events:#?}");
}

#[test]
fn an_interrupted_generation_reports_estimated_tokens_not_zero() {
    let s = Scratch::new();
    s.write(
        "notes.md",
        &"Some context for the model to read.\n".repeat(40),
    );
    // The model writes, then never finishes.
    let server = Loopback::start(vec![Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(json!({"content": "The first part of a long answer"}), None),
    ])
    .stall_before_last(Duration::from_secs(60))]);
    let prompt = s.root().join("system.md");
    std::fs::write(&prompt, "You are a test agent.").expect("system prompt");
    let mut cmd: Command = s.command();
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "sk-test");
    let mut child = cmd
        .arg("-c")
        .arg(format!("model.system_prompt_file={}", prompt.display()))
        .args([
            "-m",
            "local-model",
            "-p",
            "summarise @notes.md",
            "-o",
            "stream-json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn troupe");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("a line");
        let event: Value = serde_json::from_str(&line).expect("a stream-json line");
        // Interrupted as soon as the model has written something.
        let written = event["type"] == "message" && event["role"] == "assistant";
        seen.push(event);
        if written {
            break;
        }
    }
    assert!(
        seen.last().is_some_and(|e| e["type"] == "message"),
        "the model wrote nothing: {seen:#?}"
    );
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let rest: Vec<Value> = lines
        .map(|l| serde_json::from_str(&l.expect("a line")).expect("a stream-json line"))
        .collect();
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    assert_eq!(child.wait().expect("wait").code(), Some(130), "{err}");
    let result = rest.last().expect("a result event");
    assert_eq!(result["type"], "result", "{rest:#?}");
    let stats = &result["stats"];
    assert!(stats["input_tokens"].as_u64() > Some(100), "{stats}");
    assert!(stats["output_tokens"].as_u64() > Some(0), "{stats}");
    assert!(stats["total_tokens"].as_u64() > Some(100), "{stats}");
    assert_eq!(stats["tokens_estimated"], true, "{stats}");
}

#[test]
fn stream_json_voids_the_deltas_of_a_failed_attempt() {
    let s = Scratch::new();
    let server = broken_then_whole();
    let out = openai(&s, &server, &["-p", "hi", "-o", "stream-json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let events = stream_events(&out);
    let retry = events
        .iter()
        .position(|e| e["type"] == "retry")
        .unwrap_or_else(|| panic!("no retry event: {events:#?}"));
    assert_eq!(events[retry]["attempt"], 2);
    assert_eq!(events[retry]["discard"], "attempt");
    let deltas = |range: &[Value]| -> String {
        range
            .iter()
            .filter(|e| e["type"] == "message" && e["role"] == "assistant")
            .filter_map(|e| e["content"].as_str())
            .collect()
    };
    assert_eq!(deltas(&events[..retry]), "A Python package");
    assert_eq!(deltas(&events[retry..]), WHOLE);
}

#[test]
fn text_output_shows_a_retried_answer_once() {
    let s = Scratch::new();
    let server = broken_then_whole();
    let out = openai(&s, &server, &["-p", "hi"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), format!("{WHOLE}\n"));
    assert!(
        stderr(&out).contains("retrying model request (attempt 2)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_retried_answer_that_differs_starts_a_marked_line() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        Reply::events([content("A Python "), content("module")])
            .then_cut(r#"data: {"choices":[{"delta":{"con"#),
        answer(&["A Python ", "package is a folder", " with __init__.py."]),
    ]);
    let out = openai(&s, &server, &["-p", "hi"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("A Python module\n[retry] {WHOLE}\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn json_response_holds_only_the_successful_attempt() {
    let s = Scratch::new();
    let server = broken_then_whole();
    let out = openai(&s, &server, &["-p", "hi", "-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(report["response"], WHOLE);
}

#[test]
fn an_at_file_larger_than_the_window_is_cut_with_a_note_and_a_warning() {
    let s = Scratch::new();
    let big: String = (1..=9000)
        .map(|i| format!("def function_{i}(x):\n    return x + {i}\n"))
        .collect();
    s.write("big.py", &big);
    let server = Loopback::start(vec![answer(&["It defines functions."])]);
    let window = 4000;
    let out = openai(
        &s,
        &server,
        &[
            "-p",
            "explain @big.py",
            "-o",
            "json",
            "-c",
            &format!("model.compression.default_token_limit={window}"),
            "-c",
            "tools.core=read_file",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "sent once");
    let body = requests[0].body.to_string();
    assert!(
        body.len() / 4 < window,
        "the request ({} bytes) does not fit a window of {window} tokens",
        body.len()
    );
    assert!(body.contains("def function_1(x):"), "the head is kept");
    assert!(
        body.contains("[troupe: big.py was cut to fit the context window: lines 1-"),
        "{body}"
    );
    assert!(
        body.contains(" of 18,001 kept; read the rest with read_file start_line="),
        "{body}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("troupe: @big.py is too large for the model's context window (18,001 lines): only lines 1-"),
        "{err}"
    );
}

#[test]
fn repl_compress_shows_progress_and_moves_the_context_gauge() {
    use super::repl::term::Term;
    let s = Scratch::new();
    let notes: String = (1..=60)
        .map(|i| format!("note {i}: something worth keeping in mind\n"))
        .collect();
    s.write("notes.txt", &notes);
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "notes.txt"}))]),
        turn(vec![text("Read it.")]),
        // The summary /compress asks for.
        json!({"method": "generateContent", "response": {"candidates": [{"content": {"role": "model",
            "parts": [{"text": "<state_snapshot>notes.txt was read.</state_snapshot>"}]}, "finishReason": "STOP"}]}}),
    ];
    // A 400-token window: each scripted request reports a 100-token prompt.
    let t = Term::start(
        &s,
        &turns,
        &[],
        &["-c", "model.compression.token_limits=scripted*=400"],
    );
    t.line("read notes.txt");
    t.wait_for("Read it.");
    t.wait_for("default · 75% context left");
    t.wait_prompt();
    t.line("/compress");
    let text = t.wait_for("Context left: 75% → ");
    assert!(
        text.contains("Compressing the conversation: the model is summarising the older history (the last prompt was 100 tokens)"),
        "{text}"
    );
    assert!(text.contains("Conversation compressed from "), "{text}");
    let after: u64 = text
        .split("Context left: 75% → ")
        .nth(1)
        .and_then(|rest| rest.split('%').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no gauge after:\n{text}"));
    assert!(after > 75, "{text}");
    t.wait_for(&format!("default · {after}% context left"));
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}
