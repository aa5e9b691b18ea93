//! Real models in real use, against the loopback OpenAI and Gemini fakes: loop
//! detection, bounded answers, the first-byte timeout, configuration errors that fail
//! at once, refused connections, the context budget of tool results and the default
//! model asked of an OpenAI-compatible server.

use std::time::Duration;

use serde_json::{json, Value};

use super::gemini_wire::run_against;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn openai_env(server: &Loopback) -> String {
    format!("{}/v1", server.url)
}

pub(super) fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
           "object": "chat.completion.chunk"})
}

pub(super) fn tool_call(name: &str, args: &str, finish: &str) -> Reply {
    Reply::openai_sse(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call-1", "type": "function",
                   "function": {"name": name, "arguments": args}}]}),
            None,
        ),
        chunk(json!({}), Some(finish)),
    ])
}

pub(super) fn openai_answer(text: &str) -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

#[test]
fn a_model_repeating_one_call_is_stopped_at_the_threshold() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let server = Loopback::always(tool_call(
        "list_directory",
        r#"{"dir_path": "."}"#,
        "tool_calls",
    ));
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &openai_env(&server))],
        &[
            "-p",
            "list",
            "--yolo",
            "-o",
            "json",
            "-m",
            "m",
            "-c",
            "tools.core=list_directory",
        ],
    );
    assert_eq!(out.status.code(), Some(55), "stderr: {}", stderr(&out));
    let report = json_out(&out);
    assert_eq!(report["error"]["type"], "LoopDetected", "{report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("list_directory with the same arguments 5 times in a row"),
        "{message}"
    );
    // Five model turns asked for the call; the fifth was not run.
    assert_eq!(server.requests().len(), 5);
    assert_eq!(report["stats"]["tools"]["totalCalls"], 4, "{report}");

    // With loop detection off the same model runs into max_turns instead.
    let s = Scratch::new();
    let server = Loopback::always(tool_call(
        "list_directory",
        r#"{"dir_path": "."}"#,
        "tool_calls",
    ));
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &openai_env(&server))],
        &[
            "-p",
            "list",
            "--yolo",
            "-o",
            "json",
            "-m",
            "m",
            "-c",
            "tools.core=list_directory",
            "-c",
            "model.loop_detection=false",
            "-c",
            "model.max_turns=7",
        ],
    );
    assert_eq!(out.status.code(), Some(53), "stderr: {}", stderr(&out));
    assert_eq!(server.requests().len(), 7);
}

#[test]
fn a_model_repeating_its_text_is_stopped() {
    let s = Scratch::new();
    let sentence = "I will check the directory listing once more to be sure. ";
    let chunks: Vec<Value> = (0..40)
        .map(|_| json!({"candidates": [{"content": {"role": "model", "parts": [{"text": sentence}]}, "index": 0}]}))
        .collect();
    let server = Loopback::start(vec![Reply::gemini_sse(&chunks)]);
    let out = run_against(
        &s,
        &[
            ("GOOGLE_GEMINI_BASE_URL", &server.url),
            ("GEMINI_API_KEY", "k"),
        ],
        &["-p", "hi", "-o", "stream-json"],
    );
    assert_eq!(out.status.code(), Some(55), "stderr: {}", stderr(&out));
    let result: Value = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "result")
        .expect("a result event");
    assert_eq!(result["error"]["type"], "LoopDetected", "{result}");
    assert!(result["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("repeated the same text")));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_slow_first_byte_is_waited_for_up_to_its_own_timeout() {
    let slow = || {
        Reply::openai_sse(&[
            chunk(json!({"content": "late"}), None),
            chunk(json!({}), Some("stop")),
        ])
        .delayed(Duration::from_millis(2500))
    };
    // Past a 1 s first-byte timeout: the error names that setting.
    let s = Scratch::new();
    let server = Loopback::always(slow());
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &openai_env(&server))],
        &[
            "-p",
            "hi",
            "-o",
            "json",
            "-m",
            "m",
            "-c",
            "model.network.first_byte_timeout_secs=1",
            "-c",
            "model.retry.max_attempts=1",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let message = json_out(&out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("no answer within 1 s (model.network.first_byte_timeout_secs)"),
        "{message}"
    );
    // The same server within a longer first-byte timeout, the idle timeout short.
    let s = Scratch::new();
    let server = Loopback::always(slow());
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &openai_env(&server))],
        &[
            "-p",
            "hi",
            "-o",
            "json",
            "-m",
            "m",
            "-c",
            "model.network.first_byte_timeout_secs=30",
            "-c",
            "model.network.idle_timeout_secs=1",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(json_out(&out)["response"], "late");
    assert_eq!(server.requests().len(), 1);
    assert!(!stderr(&out).contains("retrying"), "{}", stderr(&out));
}

#[test]
fn a_base_url_without_scheme_fails_at_once_naming_the_variable() {
    let s = Scratch::new();
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", "localhost:8080/v1")],
        &["-p", "hi", "-o", "json", "-m", "m"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("OPENAI_BASE_URL is `localhost:8080/v1`"),
        "{err}"
    );
    assert!(err.contains("is the scheme missing?"), "{err}");
    assert!(!err.contains("retrying"), "{err}");
}

#[test]
fn http_401_and_404_are_not_retried_and_name_the_setting() {
    for (status, hint) in [
        (401, "OPENAI_API_KEY or model.openai.api_key"),
        (404, "the model name (-m or model.name)"),
    ] {
        let s = Scratch::new();
        let server = Loopback::always(Reply::json(status, &json!({"error": {"message": "nope"}})));
        let out = run_against(
            &s,
            &[("OPENAI_BASE_URL", &openai_env(&server))],
            &["-p", "hi", "-o", "json", "-m", "m"],
        );
        assert_eq!(out.status.code(), Some(1));
        let message = json_out(&out)["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(hint), "{status}: {message}");
        assert_eq!(server.requests().len(), 1, "{status} was retried");
    }
}

#[test]
fn a_refused_connection_gets_a_few_short_retries_naming_the_address() {
    let s = Scratch::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    // The default retry settings (10 attempts from 5 s up to 30 s), and -o json.
    let mut cmd = s.command();
    cmd.env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .args(["-p", "hi", "-o", "json", "-m", "m"]);
    let out = cmd.output().expect("run troupe");
    assert_eq!(out.status.code(), Some(1));
    let message = json_out(&out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(&format!("at 127.0.0.1:{port} was refused")),
        "{message}"
    );
    assert!(message.contains("(gave up after 3 attempts)"), "{message}");
    assert!(message.contains("OPENAI_BASE_URL"), "{message}");
    // The retries were announced on stderr even though stdout is JSON.
    let err = stderr(&out);
    assert_eq!(
        err.matches("troupe: retrying model request").count(),
        2,
        "{err}"
    );
}

#[test]
fn an_answer_cut_at_the_output_limit_is_asked_again_larger_once_then_reported() {
    let s = Scratch::new();
    let server = Loopback::always(tool_call("read_file", r#"{"file_path": "a.t"#, "length"));
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &openai_env(&server))],
        &[
            "-p",
            "hi",
            "-o",
            "json",
            "-m",
            "m",
            "-c",
            "model.max_output_tokens=64",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let message = json_out(&out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("model.max_output_tokens"), "{message}");
    // Asked again once with four times the limit (issue 47), then the turn fails.
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.requests()[0].body["max_tokens"], 64);
    assert_eq!(server.requests()[1].body["max_tokens"], 256);
}

#[test]
fn an_oversized_tool_result_is_cut_and_the_next_request_fits_the_window() {
    let s = Scratch::new();
    let big: String = (0..1500)
        .map(|i| format!("line {i:04} of a long generated file, padded to be wide\n"))
        .collect();
    s.write("big.txt", &big);
    let server = Loopback::start(vec![
        tool_call("read_file", r#"{"file_path": "big.txt"}"#, "tool_calls"),
        openai_answer("done"),
    ]);
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &openai_env(&server))],
        &[
            "-p",
            "read big.txt",
            "--yolo",
            "-o",
            "json",
            "-m",
            "small-model",
            "-c",
            "tools.core=read_file",
            "-c",
            "model.compression.token_limits=small-model=8192",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1].body;
    // The whole request, at four characters a token, fits the declared window.
    assert!(
        second.to_string().len() / 4 < 8192,
        "{} chars",
        second.to_string().len()
    );
    let tool_message = second["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool message")["content"]
        .as_str()
        .expect("content")
        .to_string();
    assert!(
        tool_message.starts_with("Output too large. Showing first "),
        "{tool_message}"
    );
    let saved = tool_message
        .lines()
        .next()
        .and_then(|l| l.split("For full output see: ").nth(1))
        .expect("saved path");
    assert!(
        std::path::Path::new(saved).starts_with(s.home().join(".troupe")),
        "{saved}"
    );
    let full = std::fs::read_to_string(saved).expect("the full output was saved");
    assert!(full.contains("line 0000 of") && full.contains("line 1499 of"));
    assert!(tool_message.contains("line 1499 of"), "the tail is kept");
}

#[test]
fn without_a_model_name_the_openai_server_is_asked_for_its_models() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        Reply::json(
            200,
            &json!({"object": "list", "data": [{"id": "served-model", "object": "model"}]}),
        ),
        openai_answer("hello"),
    ]);
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &openai_env(&server))],
        &["-p", "hi", "-o", "json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(requests[1].body["model"], "served-model");
}

#[test]
fn the_small_profile_sends_core_tools_a_short_prompt_and_bounds() {
    let s = Scratch::new();
    let out = s.run(
        &[turn(vec![text("ok")])],
        // A prompt that asks for a change: the tools that edit files are offered too.
        // (The one answer is prose: the required call and the outcome check, tested in
        // small_model_outcome, would send it back.)
        &[
            "-p",
            "fix it",
            "--profile",
            "small",
            "-c",
            "model.first_answer_calls_a_tool=false",
            "-c",
            "model.check_outcome=false",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let request = &s.requests()[0];
    let mut names: Vec<&str> = request["tools"][0]["functionDeclarations"]
        .as_array()
        .expect("declarations")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "glob",
            "grep_search",
            "list_directory",
            "read_file",
            "replace",
            "run_shell_command",
            "write_file"
        ]
    );
    let system = request["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .expect("system");
    assert!(system.len() < 2000, "{} chars:\n{system}", system.len());
    for name in &names {
        assert!(
            system.contains(&format!("{name},")) || system.contains(&format!("{name}.")),
            "{name} missing:\n{system}"
        );
    }
    assert!(
        !system.contains("write_todos") && !system.contains("save_memory"),
        "{system}"
    );
    assert_eq!(request["generationConfig"]["temperature"], 0.0);
    assert_eq!(request["generationConfig"]["maxOutputTokens"], 512);

    let out = s.run(
        &[turn(vec![text("ok")])],
        &["-p", "hi", "--profile", "huge"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("`huge` is not a profile"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_full_prompt_leaves_out_tools_that_tools_core_removed() {
    let s = Scratch::new();
    let out = s.run(
        &[turn(vec![text("ok")])],
        &["-p", "hi", "-c", "tools.core=read_file,list_directory"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let system = s.requests()[0]["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .expect("system")
        .to_string();
    for absent in ["run_shell_command", "write_todos", "save_memory", "replace"] {
        assert!(!system.contains(absent), "{absent} is described:\n{system}");
    }
    assert!(system.contains("- read_file: "), "{system}");
}

#[test]
fn a_request_refused_as_too_large_is_sent_again_smaller() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let history: String = (0..200).map(|i| format!("old message {i:04} ")).collect();
    let server = Loopback::start(vec![
        Reply::json(
            400,
            &json!({"error": {"code": 400, "type": "exceed_context_size_error",
                "message": "the request exceeds the available context size, try increasing it"}}),
        ),
        openai_answer("fits now"),
    ]);
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &openai_env(&server))],
        &["-p", &history, "-o", "json", "-m", "m"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(json_out(&out)["response"], "fits now");
    assert_eq!(server.requests().len(), 2);
}
