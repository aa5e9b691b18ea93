//! A local OpenAI-compatible server's context window and models, read at start-up
//! (issue 31): llama.cpp's `/props`, vLLM's `max_model_len`, Ollama's `/api/show`; a
//! small window brings the small profile unless one was chosen; a model the server
//! does not list is warned about; and a run that fails before its turn still prints a
//! well-formed result with `-o json` and `stream-json`.

use std::process::Output;

use serde_json::{json, Value};

use super::gemini_wire::run_against;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

const NOTICE: &str = "using the small profile";

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
           "created": 1795302953, "id": "chatcmpl-1", "model": "served",
           "object": "chat.completion.chunk"})
}

fn answer(text: &str) -> Reply {
    Reply::openai_sse(&[
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

fn run(server: &Loopback, args: &[&str]) -> Output {
    let s = Scratch::new();
    let base = format!("{}/v1", server.url);
    // The server's one answer is prose: the small profile's required first call and
    // outcome check (tested in small_model_outcome) would send it back.
    let mut all = args.to_vec();
    all.extend([
        "-c",
        "model.first_answer_calls_a_tool=false",
        "-c",
        "model.check_outcome=false",
    ]);
    run_against(&s, &[("OPENAI_BASE_URL", &base)], &all)
}

/// The names of the tools the first chat request offered.
fn tools_sent(server: &Loopback) -> Vec<String> {
    let requests = server.requests();
    let chat = requests
        .iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .expect("a chat request");
    chat.body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .map(str::to_string)
        .collect()
}

fn max_tokens_sent(server: &Loopback) -> Value {
    server.requests()[0].body["max_tokens"].clone()
}

/// The small profile's tools, all offered to a prompt that asks for a change (a
/// question gets no tool that edits files: `model.edit_tools_when_asked`).
const SMALL_TOOLS: usize = 7;

fn llama_cpp(n_ctx: u64) -> Loopback {
    let server = Loopback::start(vec![answer("ok")]);
    server.route(
        "/props",
        Reply::json(
            200,
            &json!({"default_generation_settings": {"n_ctx": n_ctx, "temperature": 0.8},
                    "total_slots": 1, "model_path": "/models/qwen.gguf"}),
        ),
    );
    server
}

#[test]
fn a_llama_cpp_window_of_8192_brings_the_small_profile_and_says_so_once() {
    let server = llama_cpp(8192);
    let out = run(
        &server,
        &["-m", "local-model", "-p", "fix it", "-o", "json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        tools_sent(&server).len(),
        SMALL_TOOLS,
        "{:?}",
        tools_sent(&server)
    );
    assert_eq!(max_tokens_sent(&server), 512);
    let err = stderr(&out);
    assert_eq!(err.matches(NOTICE).count(), 1, "{err}");
    assert!(err.contains("context window is 8192 tokens"), "{err}");
    assert_eq!(json_out(&out)["response"], "ok");
    // A normal server costs at most two requests more than the chat itself.
    let probes: Vec<String> = server.probes().iter().map(|p| p.path.clone()).collect();
    assert!(probes.len() <= 2, "{probes:?}");
}

#[test]
fn a_chosen_profile_or_setting_wins_over_the_servers_window() {
    let server = llama_cpp(8192);
    let out = run(
        &server,
        &["-m", "local-model", "-p", "fix it", "--profile", "default"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(tools_sent(&server).len() > SMALL_TOOLS);
    assert!(!stderr(&out).contains(NOTICE), "{}", stderr(&out));

    let server = llama_cpp(8192);
    let out = run(
        &server,
        &["-m", "local-model", "-p", "fix it", "--profile", "small"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(tools_sent(&server).len(), SMALL_TOOLS);
    assert!(!stderr(&out).contains(NOTICE), "{}", stderr(&out));

    let server = llama_cpp(8192);
    let out = run(
        &server,
        &[
            "-m",
            "local-model",
            "-p",
            "fix it",
            "-c",
            "model.max_output_tokens=2048",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(tools_sent(&server).len(), SMALL_TOOLS);
    assert_eq!(max_tokens_sent(&server), 2048);
}

#[test]
fn a_big_window_keeps_the_default_profile_and_is_the_context_window() {
    // 32,768 tokens: above the small profile's threshold, a quarter of the 131,072 the
    // settings assume for a model they do not list.
    let s = Scratch::new();
    let line = format!("{}\n", "x".repeat(49));
    s.write("big.txt", &line.repeat(1000));
    let call = json!({"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "read_file", "arguments": "{\"file_path\": \"big.txt\"}"}});
    let server = Loopback::start(vec![
        Reply::openai_sse(&[
            chunk(json!({"role": "assistant", "tool_calls": [call]}), None),
            chunk(json!({}), Some("tool_calls")),
        ]),
        answer("read"),
    ]);
    server.route(
        "/props",
        Reply::json(
            200,
            &json!({"default_generation_settings": {"n_ctx": 32768}}),
        ),
    );
    let base = format!("{}/v1", server.url);
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &base)],
        &["-m", "local-model", "-p", "read big.txt"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(tools_sent(&server).len() > SMALL_TOOLS);
    assert_ne!(max_tokens_sent(&server), 512);
    assert!(!stderr(&out).contains(NOTICE), "{}", stderr(&out));
    // One tool result may take a quarter of the window (about 32,768 characters): the
    // 50,000-character file comes back cut, with the note naming the whole output.
    let requests = server.requests();
    let messages = requests[1].body["messages"].as_array().expect("messages");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .expect("the tool result");
    assert!(
        result.contains("Output too large"),
        "{}",
        &result[..200.min(result.len())]
    );
    assert!(result.len() < 40_000, "{}", result.len());
}

#[test]
fn vllm_max_model_len_and_ollama_num_ctx_are_windows_too() {
    let server = Loopback::start(vec![answer("ok")]);
    server.route(
        "/v1/models",
        Reply::json(
            200,
            &json!({"object": "list", "data": [{"id": "local-model", "object": "model",
                    "owned_by": "vllm", "max_model_len": 4096}]}),
        ),
    );
    let out = run(
        &server,
        &["-m", "local-model", "-p", "fix it", "-o", "json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(tools_sent(&server).len(), SMALL_TOOLS);
    assert!(stderr(&out).contains("context window is 4096 tokens"));
    assert!(json_out(&out).get("warnings").is_none(), "a listed model");
    let paths: Vec<String> = server.probes().iter().map(|p| p.path.clone()).collect();
    assert!(!paths.iter().any(|p| p == "/api/show"), "{paths:?}");

    let server = Loopback::start(vec![answer("ok")]);
    server.route(
        "/v1/models",
        Reply::json(
            200,
            &json!({"object": "list", "data": [{"id": "qwen2.5-coder:1.5b", "owned_by": "library"}]}),
        ),
    );
    server.route(
        "/api/show",
        Reply::json(
            200,
            &json!({"parameters": "num_ctx                        8192",
                    "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}),
        ),
    );
    let out = run(&server, &["-p", "fix it"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(server.requests()[0].body["model"], "qwen2.5-coder:1.5b");
    assert_eq!(tools_sent(&server).len(), SMALL_TOOLS);
    assert!(stderr(&out).contains("context window is 8192 tokens"));
    let show = server
        .probes()
        .into_iter()
        .find(|p| p.path == "/api/show")
        .expect("Ollama asked");
    assert_eq!(show.body["model"], "qwen2.5-coder:1.5b");
}

fn listing_server() -> Loopback {
    let server = Loopback::start(vec![answer("ok")]);
    server.route(
        "/v1/models",
        Reply::json(
            200,
            &json!({"object": "list", "data": [{"id": "qwen2.5-coder-1.5b"}, {"id": "other-model"}]}),
        ),
    );
    server
}

#[test]
fn a_model_the_server_does_not_list_is_warned_about_in_every_format() {
    let unlisted = "gpt-4o-does-not-exist";
    let server = listing_server();
    let out = run(&server, &["-m", unlisted, "-p", "fix it", "-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report = json_out(&out);
    let warnings = report["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{report}");
    let warning = warnings[0].as_str().unwrap_or_default();
    for name in [unlisted, "qwen2.5-coder-1.5b", "other-model"] {
        assert!(warning.contains(name), "{warning}");
    }
    assert_eq!(
        stderr(&out).matches(unlisted).count(),
        1,
        "{}",
        stderr(&out)
    );
    // Warned, not refused: the request goes out with the name asked for.
    assert_eq!(server.requests()[0].body["model"], unlisted);

    let server = listing_server();
    let out = run(
        &server,
        &["-m", unlisted, "-p", "fix it", "-o", "stream-json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let events = stream_events(&out);
    let warned: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "error" && e["severity"] == "warning")
        .collect();
    assert_eq!(warned.len(), 1, "{events:?}");
    assert!(warned[0]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("other-model"));
    assert_eq!(events[0]["type"], "init");

    let server = listing_server();
    let out = run(
        &server,
        &["-m", "other-model", "-p", "fix it", "-o", "json"],
    );
    assert!(json_out(&out).get("warnings").is_none(), "{}", stdout(&out));
}

fn assert_json_error(out: &Output, needle: &str) -> Value {
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(out));
    let report = json_out(out);
    let error = &report["error"];
    assert_eq!(error["code"], 1, "{report}");
    assert!(error["type"].is_string(), "{report}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{report}");
    assert!(stderr(out).contains(needle), "{}", stderr(out));
    report
}

fn assert_stream_error(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(out));
    let events = stream_events(out);
    let last = events.last().expect("a result event");
    assert_eq!(last["type"], "result", "{events:?}");
    assert_eq!(last["status"], "error", "{last}");
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(needle),
        "{last}"
    );
    assert!(stderr(out).contains(needle), "{}", stderr(out));
}

#[test]
fn failed_model_discovery_prints_a_result_on_stdout() {
    let server = Loopback::start(vec![]);
    server.route(
        "/v1/models",
        Reply::json(500, &json!({"error": {"message": "model loading failed"}})),
    );
    let out = run(&server, &["-p", "fix it", "-o", "json"]);
    let report = assert_json_error(&out, "model loading failed");
    assert_eq!(report["error"]["type"], "ModelError");
    let out = run(&server, &["-p", "fix it", "-o", "stream-json"]);
    assert_stream_error(&out, "model loading failed");

    // Nothing listens on the port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let s = Scratch::new();
    let base = format!("http://127.0.0.1:{port}/v1");
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &base)],
        &["-p", "fix it", "-o", "json"],
    );
    assert_json_error(&out, &format!("127.0.0.1:{port}"));
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &base)],
        &["-p", "fix it", "-o", "stream-json"],
    );
    assert_stream_error(&out, &format!("127.0.0.1:{port}"));
}

#[test]
fn early_failures_print_a_result_on_stdout() {
    let server = Loopback::start(vec![]);
    let cases: [&[&str]; 4] = [
        &["-c", "model.no_such_key=1"],
        &["--profile", "tiny"],
        &["--approval-mode", "sometimes"],
        &["--sandbox", "nowhere"],
    ];
    for case in cases {
        let needle = match case[0] {
            "-c" => "model.no_such_key",
            other => other,
        };
        let mut args = vec!["-m", "local-model", "-p", "fix it", "-o", "json"];
        args.extend_from_slice(case);
        assert_json_error(&run(&server, &args), needle);
        args[5] = "stream-json";
        assert_stream_error(&run(&server, &args), needle);
    }
    // A settings file that does not parse.
    let s = Scratch::new();
    std::fs::create_dir_all(s.home().join(".troupe")).expect("home");
    std::fs::write(s.home().join(".troupe/config.toml"), "[model\n").expect("config");
    let base = format!("{}/v1", server.url);
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &base)],
        &["-p", "fix it", "-o", "json"],
    );
    assert_json_error(&out, "config.toml");
    // A session that cannot be resumed.
    let out = run_against(
        &Scratch::new(),
        &[("OPENAI_BASE_URL", &base)],
        &["-m", "m", "-p", "fix it", "-o", "json", "--resume", "nope"],
    );
    assert_ne!(out.status.code(), Some(0));
    let report = json_out(&out);
    assert_eq!(report["error"]["type"], "SessionError", "{report}");
    assert_eq!(report["error"]["code"], out.status.code().unwrap_or(0));
    assert!(server.requests().is_empty());
}
