//! The Gemini provider against a real HTTP server on 127.0.0.1: the `troupe` binary
//! with `GOOGLE_GEMINI_BASE_URL` pointing at the loopback server.

use std::process::Output;

use serde_json::{json, Value};

use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

/// Runs `troupe` against `server` with tiny retry delays and a one-line system prompt.
pub fn run_against(s: &Scratch, env: &[(&str, &str)], args: &[&str]) -> Output {
    let prompt = s.root().join("system.md");
    std::fs::write(&prompt, "You are a test agent.").expect("system prompt");
    let mut cmd = s.command();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.arg("-c")
        .arg(format!("model.system_prompt_file={}", prompt.display()))
        .args(["-c", "model.retry.initial_delay_ms=1"])
        .args(["-c", "model.retry.max_delay_ms=5"])
        .args(args);
    cmd.output().expect("run troupe")
}

fn gemini(s: &Scratch, server: &Loopback, args: &[&str]) -> Output {
    run_against(
        s,
        &[
            ("GOOGLE_GEMINI_BASE_URL", &server.url),
            ("GEMINI_API_KEY", "test-key"),
        ],
        args,
    )
}

fn parts_chunk(parts: Value) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
           "usageMetadata": {"promptTokenCount": 50, "totalTokenCount": 50}})
}

fn text_chunk(t: &str) -> Value {
    parts_chunk(json!([{ "text": t }]))
}

fn finish_chunk(reason: &str) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
            "finishReason": reason, "index": 0}],
           "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 55}})
}

fn answer(text: &str) -> Reply {
    Reply::gemini_sse(&[text_chunk(text), finish_chunk("STOP")])
}

#[test]
fn parallel_calls_then_answer_send_exact_bodies() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("b.txt", "beta\n");
    let server = Loopback::start(vec![
        Reply::gemini_sse(&[
            parts_chunk(json!([{"text": "Let me think.", "thought": true}])),
            text_chunk("I will read "),
            text_chunk("both files."),
            parts_chunk(json!([
                {"functionCall": {"name": "read_file", "args": {"file_path": "a.txt"}}, "thoughtSignature": "sig-a"},
                {"functionCall": {"name": "read_file", "args": {"file_path": "b.txt"}}}
            ])),
            finish_chunk("STOP"),
        ]),
        Reply::gemini_sse(&[
            text_chunk("a is alpha, "),
            text_chunk("b is beta."),
            finish_chunk("STOP"),
        ]),
    ]);
    let out = gemini(
        &s,
        &server,
        &[
            "-p",
            "Read a.txt and b.txt",
            "--yolo",
            "-o",
            "json",
            "-m",
            "gemini-2.5-pro",
            "-c",
            "tools.core=read_file",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    // The response is the final round's text, as gemini-cli 0.61 gives it.
    assert_eq!(json_out(&out)["response"], "a is alpha, b is beta.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.method, "POST");
        assert_eq!(
            r.path,
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert_eq!(r.headers["x-goog-api-key"], "test-key");
    }
    let tools = requests[0].body["tools"].clone();
    let declarations = tools[0]["functionDeclarations"]
        .as_array()
        .expect("declarations");
    assert_eq!(declarations.len(), 1);
    assert_eq!(declarations[0]["name"], "read_file");
    assert_eq!(
        declarations[0]["parametersJsonSchema"]["required"],
        json!(["file_path"])
    );
    let config = json!({"temperature": 1.0, "topP": 0.95, "topK": 64, "maxOutputTokens": 16384,
        "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}});
    let system = json!({"role": "user", "parts": [{"text": "You are a test agent."}]});
    let user = json!({"role": "user", "parts": [{"text": "Read a.txt and b.txt"}]});
    assert_eq!(
        requests[0].body,
        json!({"contents": [user], "systemInstruction": system, "tools": tools, "generationConfig": config})
    );

    let model_parts = &requests[1].body["contents"][1]["parts"];
    let id = |i: usize| {
        model_parts[i]["functionCall"]["id"]
            .as_str()
            .expect("call id")
            .to_string()
    };
    let (id_a, id_b) = (id(1), id(2));
    assert!(
        id_a.starts_with("read_file_") && id_a.ends_with("_0"),
        "{id_a}"
    );
    assert!(
        id_b.starts_with("read_file_") && id_b.ends_with("_1"),
        "{id_b}"
    );
    assert_eq!(
        requests[1].body,
        json!({
            "contents": [
                user,
                {"role": "model", "parts": [
                    {"text": "I will read both files."},
                    {"functionCall": {"id": id_a, "name": "read_file", "args": {"file_path": "a.txt"}}, "thoughtSignature": "sig-a"},
                    {"functionCall": {"id": id_b, "name": "read_file", "args": {"file_path": "b.txt"}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"id": id_a, "name": "read_file", "response": {"output": "alpha\n"}}},
                    {"functionResponse": {"id": id_b, "name": "read_file", "response": {"output": "beta\n"}}}
                ]}
            ],
            "systemInstruction": system,
            "tools": tools,
            "generationConfig": config
        })
    );
}

#[test]
fn unsigned_calls_of_the_active_loop_get_the_skip_signature() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let server = Loopback::start(vec![
        Reply::gemini_sse(&[
            parts_chunk(
                json!([{"functionCall": {"id": "given-id", "name": "read_file", "args": {"file_path": "a.txt"}}}]),
            ),
            finish_chunk("STOP"),
        ]),
        answer("done"),
    ]);
    let out = gemini(&s, &server, &["-p", "read", "--yolo", "-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let second = &server.requests()[1].body;
    assert_eq!(
        second["contents"][1]["parts"][0],
        json!({"functionCall": {"id": "given-id", "name": "read_file", "args": {"file_path": "a.txt"}},
               "thoughtSignature": "skip_thought_signature_validator"})
    );
    assert_eq!(
        second["contents"][2]["parts"][0]["functionResponse"]["id"],
        "given-id"
    );
}

#[test]
fn rate_limits_are_retried_after_the_delay_the_server_asks() {
    let s = Scratch::new();
    let quota = |delay: Value| {
        json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED",
               "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}})
    };
    let server = Loopback::start(vec![
        Reply::json(429, &json!({"error": {"code": 429, "message": "Slow down", "status": "RESOURCE_EXHAUSTED"}}))
            .header("retry-after", "1"),
        Reply::json(429, &quota(json!("0.2s"))),
        answer("Made it."),
    ]);
    let out = gemini(&s, &server, &["-p", "hi"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Made it.");
    let err = stderr(&out);
    assert!(
        err.contains("troupe: retrying model request (attempt 2): gemini answered HTTP 429: Slow down (RESOURCE_EXHAUSTED); retrying in "),
        "{err}"
    );
    assert!(err.contains("(the server asked to wait 1s)"), "{err}");
    assert!(
        err.contains("(attempt 3)") && err.contains("(the server asked to wait 0.20s)"),
        "{err}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body, requests[2].body);
}

#[test]
fn server_errors_every_time_end_in_a_clear_error_after_bounded_attempts() {
    let s = Scratch::new();
    let server = Loopback::always(Reply::json(
        500,
        &json!({"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}),
    ));
    let out = gemini(
        &s,
        &server,
        &["-p", "hi", "-o", "json", "-c", "model.retry.max_attempts=3"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_out(&out)["error"]["message"],
        "gemini answered HTTP 500: Internal error encountered. (INTERNAL) (gave up after 3 attempts)"
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn client_errors_are_never_retried() {
    let s = Scratch::new();
    let example: Value = serde_json::from_str(
        r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#,
    )
    .expect("json");
    let server = Loopback::always(Reply::json(400, &example));
    let out = gemini(&s, &server, &["-p", "hi", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_out(&out)["error"]["message"],
        "gemini answered HTTP 400: API key not valid. Please pass a valid API key. (INVALID_ARGUMENT)"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_stream_cut_mid_event_is_retried_and_its_partial_output_dropped() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        // The connection drops inside an event.
        Reply::gemini_sse(&[text_chunk("Partial ")])
            .then_cut(r#"data: {"candidates":[{"content":{"par"#),
        // The body ends cleanly, but inside an event.
        Reply::events([
            format!("data: {}\r\n\r\n", text_chunk("Also partial ")),
            r#"data: {"candidates":[{"content""#.to_string(),
        ]),
        answer("Whole answer."),
    ]);
    let out = gemini(&s, &server, &["-p", "hi", "-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(json_out(&out)["response"], "Whole answer.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body, requests[1].body);
    assert_eq!(requests[1].body, requests[2].body);

    // With no stream retries left, the cut is the error the user sees.
    let s = Scratch::new();
    let server = Loopback::always(
        Reply::events([format!("data: {}\r\n\r\n", text_chunk("Partial "))]).then_cut("data: {"),
    );
    let out = gemini(
        &s,
        &server,
        &[
            "-p",
            "hi",
            "-o",
            "json",
            "-c",
            "model.retry.max_stream_attempts=2",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let message = json_out(&out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.starts_with("connection to gemini failed: "),
        "{message}"
    );
    assert!(message.ends_with("(gave up after 2 attempts)"), "{message}");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_body_that_is_not_json_is_a_clear_error() {
    let s = Scratch::new();
    let server = Loopback::always(Reply::raw(200, "text/html", "<html>Bad gateway</html>"));
    let out = gemini(&s, &server, &["-p", "hi", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_out(&out)["error"]["message"],
        "gemini sent a malformed response: expected an event stream, got a body that is not JSON (expected value at line 1 column 1): <html>Bad gateway</html>"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a malformed answer is not retried"
    );

    let s = Scratch::new();
    let server = Loopback::always(Reply::events(["data: not json\r\n\r\n".to_string()]));
    let out = gemini(&s, &server, &["-p", "hi", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_out(&out)["error"]["message"],
        "gemini sent a malformed response: an event is not JSON (expected ident at line 1 column 2): not json"
    );

    let s = Scratch::new();
    let server = Loopback::always(Reply::raw(502, "text/html", "<html>upstream down</html>"));
    let out = gemini(
        &s,
        &server,
        &["-p", "hi", "-o", "json", "-c", "model.retry.max_attempts=2"],
    );
    assert_eq!(
        json_out(&out)["error"]["message"],
        "gemini answered HTTP 502: <html>upstream down</html> (gave up after 2 attempts)"
    );
}

#[test]
fn a_safety_finish_is_reported_and_not_retried() {
    let s = Scratch::new();
    let server = Loopback::always(Reply::gemini_sse(&[json!({
        "candidates": [{"finishReason": "SAFETY", "index": 0,
            "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]}]
    })]));
    let out = gemini(&s, &server, &["-p", "hi", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_out(&out)["error"]["message"],
        "gemini sent an invalid stream (SAFETY_BLOCKED): the response was blocked by the model's safety filters"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn an_error_chunk_mid_stream_is_retried() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        Reply::gemini_sse(&[
            text_chunk("Half "),
            json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
        ]),
        answer("Recovered."),
    ]);
    let out = gemini(&s, &server, &["-p", "hi"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "gemini answered HTTP 503: The model is overloaded. (UNAVAILABLE); retrying in"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_stalled_stream_times_out_and_is_retried() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        Reply::gemini_sse(&[text_chunk("Slow "), finish_chunk("STOP")])
            .stall_before_last(std::time::Duration::from_secs(3)),
        answer("Fast."),
    ]);
    let out = gemini(
        &s,
        &server,
        &["-p", "hi", "-c", "model.network.idle_timeout_secs=1"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("connection to gemini failed: the stream stalled: no data for 1 s (model.network.idle_timeout_secs); retrying in"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn an_unreachable_server_is_retried_then_named() {
    let s = Scratch::new();
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = run_against(
        &s,
        &[("GOOGLE_GEMINI_BASE_URL", &url), ("GEMINI_API_KEY", "k")],
        &["-p", "hi", "-o", "json", "-c", "model.retry.max_attempts=2"],
    );
    assert_eq!(out.status.code(), Some(1));
    let message = json_out(&out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.starts_with(&format!(
            "connection to gemini at 127.0.0.1:{port} was refused: is the model server running there? (gave up after 2 attempts)"
        )),
        "{message}"
    );
    assert!(
        message.ends_with("check GOOGLE_GEMINI_BASE_URL or model.gemini.base_url"),
        "{message}"
    );
}

#[test]
fn a_recorded_gemini_stream_drives_a_turn() {
    // A real gemini-cli recording (text, a signed functionCall, an empty STOP chunk).
    let sse = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/gemini/run_shell_command.sse"
    ))
    .expect("fixture");
    let s = Scratch::new();
    let server = Loopback::start(vec![Reply::events([sse]), answer("Done.")]);
    let out = gemini(
        &s,
        &server,
        &[
            "-p",
            "run it",
            "--yolo",
            "-o",
            "json",
            "-c",
            "tools.core=run_shell_command",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    // The final round's text (gemini-cli's `response`).
    assert_eq!(json_out(&out)["response"], "Done.");
    let second = &server.requests()[1].body;
    let parts = &second["contents"][1]["parts"];
    assert_eq!(
        parts[0]["text"],
        "I will run the requested shell command to verify the policy configuration.\n"
    );
    assert_eq!(parts[1]["functionCall"]["name"], "run_shell_command");
    assert_eq!(
        parts[1]["functionCall"]["args"]["command"],
        "echo POLICY_TEST_ECHO_COMMAND"
    );
    assert!(
        parts[1]["thoughtSignature"]
            .as_str()
            .is_some_and(|s| s.starts_with("EpwFCpkFAb4")),
        "the model's own signature is sent back: {parts}"
    );
    let response = &second["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["id"], parts[1]["functionCall"]["id"]);
    assert!(
        response["response"]
            .to_string()
            .contains("POLICY_TEST_ECHO_COMMAND"),
        "{response}"
    );
}
