//! `troupe --acp` beyond the basic turn: `session/set_model`, `authenticate` with an
//! API key, image and audio prompt blocks, MCP servers sent by the client, sessions
//! recorded and loaded through the session store, and "Always allow" saved for later
//! sessions. A scripted client drives the binary; the model is scripted or a loopback
//! Gemini server.

mod asks;
mod calls;
mod edits;
mod lifecycle;

use serde_json::{json, Value};

use super::acp::Editor;
use super::mcp::fixture;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn chunk(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({"candidates": [candidate],
           "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 55}})
}

fn answer(text: &str) -> Reply {
    Reply::gemini_sse(&[chunk(json!([{"text": text}]), Some("STOP"))])
}

fn calls(parts: Value) -> Reply {
    Reply::gemini_sse(&[chunk(parts, Some("STOP"))])
}

/// `troupe --acp` against a loopback Gemini server, with `env` added.
fn gemini_editor(s: &Scratch, server: &Loopback, env: &[(&str, &str)]) -> Editor {
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .args(["-c", "model.retry.initial_delay_ms=1"])
        .args(["-c", "model.retry.max_delay_ms=5"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Editor::spawn(cmd)
}

fn prompt(ed: &mut Editor, sid: &str, text: &str) -> Value {
    ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
    )
}

fn new_session(ed: &mut Editor, s: &Scratch, servers: Value) -> Value {
    ed.call(
        "session/new",
        json!({"cwd": s.ws().display().to_string(), "mcpServers": servers}),
    )
}

fn initialize(ed: &mut Editor) -> Value {
    ed.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
}

#[test]
fn set_model_changes_the_model_of_the_next_request_and_refuses_unknown_ones() {
    let s = Scratch::new();
    let server = Loopback::start(vec![answer("one"), answer("two")]);
    let mut ed = gemini_editor(&s, &server, &[("GEMINI_API_KEY", "test-key")]);
    initialize(&mut ed);
    let new = new_session(&mut ed, &s, json!([]));
    let sid = new["result"]["sessionId"].as_str().expect("id").to_string();
    let models = &new["result"]["models"];
    assert_eq!(models["currentModelId"], "gemini-2.5-flash", "{new}");
    let ids: Vec<&str> = models["availableModels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["modelId"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"gemini-2.5-pro"), "{ids:?}");

    assert_eq!(
        prompt(&mut ed, &sid, "first")["result"]["stopReason"],
        "end_turn"
    );
    let set = ed.call(
        "session/set_model",
        json!({"sessionId": sid, "modelId": "gemini-2.5-pro"}),
    );
    assert!(set.get("result").is_some(), "{set}");
    assert_eq!(
        prompt(&mut ed, &sid, "second")["result"]["stopReason"],
        "end_turn"
    );
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        ]
    );

    let bad = ed.call(
        "session/set_model",
        json!({"sessionId": sid, "modelId": "gpt-nonsense"}),
    );
    let message = bad["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("unknown model `gpt-nonsense`"), "{bad}");
    assert!(message.contains("gemini-2.5-pro"), "{bad}");
    let bad = ed.call(
        "session/set_model",
        json!({"sessionId": "no-such-session", "modelId": "gemini-2.5-pro"}),
    );
    assert!(bad["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("unknown session"));
    assert!(ed.close().success());
}

#[test]
fn authenticate_keeps_the_key_in_memory_and_sends_it_to_the_model_only() {
    let s = Scratch::new();
    let key = "acp-secret-key-5f3a9";
    let server = Loopback::start(vec![
        calls(json!([{"functionCall": {"name": "run_shell_command", "args": {"command": "env"}}}])),
        answer("done"),
    ]);
    let log = s.root().join("troupe.log");
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("TROUPE_LOG", "trace")
        .arg("--log-file")
        .arg(&log)
        .args(["-c", "approval.mode=yolo"]);
    let mut ed = Editor::spawn(cmd);
    let init = initialize(&mut ed);
    let methods: Vec<&str> = init["result"]["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(methods.contains(&"gemini-api-key"), "{init}");
    // Without a key (none in the environment either) and with an unknown method: errors.
    let none = ed.call("authenticate", json!({"methodId": "gemini-api-key"}));
    assert!(
        none["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no API key"),
        "{none}"
    );
    let odd = ed.call("authenticate", json!({"methodId": "oauth-personal"}));
    assert!(odd["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("unknown authentication method"));
    // No key yet: a session cannot pick a model.
    let early = new_session(&mut ed, &s, json!([]));
    assert!(early.get("error").is_some(), "{early}");

    let auth = ed.call(
        "authenticate",
        json!({"methodId": "gemini-api-key", "_meta": {"api-key": key}}),
    );
    assert!(auth.get("result").is_some(), "{auth}");
    let new = new_session(&mut ed, &s, json!([]));
    let sid = new["result"]["sessionId"].as_str().expect("id").to_string();
    assert_eq!(
        prompt(&mut ed, &sid, "show env")["result"]["stopReason"],
        "end_turn"
    );
    assert!(ed.close().success());

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.headers["x-goog-api-key"], key);
    }
    // The shell command's environment did not hold the key.
    let env_output = requests[1].body["contents"].to_string();
    assert!(env_output.contains("HOME="), "{env_output}");
    assert!(!env_output.contains(key), "the key reached a child process");
    // Nothing on disk holds it: not the log (at trace level), the session file, the config.
    assert!(log.exists());
    for file in walk(s.root()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(key),
            "{} holds the key",
            file.display()
        );
    }
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

#[test]
fn image_and_audio_blocks_reach_the_model_as_inline_data() {
    let s = Scratch::new();
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let wav = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";
    let server = Loopback::start(vec![answer("a red dot")]);
    let mut ed = gemini_editor(&s, &server, &[("GEMINI_API_KEY", "test-key")]);
    let init = initialize(&mut ed);
    let caps = &init["result"]["agentCapabilities"]["promptCapabilities"];
    assert_eq!(caps["image"], true, "{init}");
    assert_eq!(caps["audio"], true, "{init}");
    let new = new_session(&mut ed, &s, json!([]));
    let sid = new["result"]["sessionId"].as_str().expect("id").to_string();
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "mimeType": "image/png", "data": png},
            {"type": "audio", "mimeType": "audio/wav", "data": wav},
        ]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let body = &server.requests()[0].body;
    let parts = body["contents"][0]["parts"]
        .as_array()
        .expect("parts")
        .clone();
    assert_eq!(parts[0]["text"], "what is this?", "{parts:?}");
    assert_eq!(
        parts[1]["inlineData"],
        json!({"mimeType": "image/png", "data": png})
    );
    assert_eq!(
        parts[2]["inlineData"],
        json!({"mimeType": "audio/wav", "data": wav})
    );

    // Bad data is refused with a clear error and no model call.
    let bad = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "image", "mimeType": "image/png", "data": "%%%"}]}),
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not valid base64"),
        "{bad}"
    );
    assert_eq!(server.requests().len(), 1);
    assert!(ed.close().success());
}

#[test]
fn an_openai_compatible_model_takes_images_but_audio_is_not_advertised() {
    let s = Scratch::new();
    let server = Loopback::start(vec![]);
    let mut cmd = s.command();
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args(["-m", "local-model"]);
    let mut ed = Editor::spawn(cmd);
    let init = initialize(&mut ed);
    let caps = &init["result"]["agentCapabilities"]["promptCapabilities"];
    assert_eq!(caps["image"], true, "{init}");
    assert_eq!(caps["audio"], false, "{init}");
    assert!(ed.close().success());
}

#[test]
fn client_mcp_servers_are_connected_and_their_tools_offered() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "mcp_fx_echo",
            json!({"text": "hello from the editor's server"}),
        )]),
        turn(vec![text("Echoed.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    let init = initialize(&mut ed);
    assert_eq!(
        init["result"]["agentCapabilities"]["mcpCapabilities"],
        json!({"http": true, "sse": true})
    );
    let new = new_session(
        &mut ed,
        &s,
        json!([{"name": "fx", "command": fixture(), "args": [], "env": [{"name": "FIXTURE_NOTE", "value": "x"}]}]),
    );
    let sid = new["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{new}"))
        .to_string();
    let done = prompt(&mut ed, &sid, "echo it");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let requests = s.requests();
    let declared = requests[0]["tools"].to_string();
    assert!(declared.contains("\"mcp_fx_echo\""), "{declared}");
    let responses = function_responses(&requests[1]);
    assert!(
        responses[0]
            .to_string()
            .contains("hello from the editor's server"),
        "{responses:?}"
    );
    // A server description without a command is refused with a clear error.
    let bad = new_session(
        &mut ed,
        &s,
        json!([{"name": "broken", "command": "", "args": [], "env": []}]),
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("needs a command"),
        "{bad}"
    );
    assert!(ed.close().success());
}

/// The recorded sessions' ids, from the session store's files.
fn recorded_ids(s: &Scratch) -> Vec<String> {
    let mut ids = Vec::new();
    for file in walk(&s.home().join(".troupe/tmp")) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("session-") && name.ends_with(".jsonl")) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let head: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        ids.push(head["sessionId"].as_str().unwrap().to_string());
    }
    ids
}

fn replayed(ed: &Editor, sid: &str) -> Vec<(String, String)> {
    ed.updates
        .iter()
        .filter(|u| u["params"]["sessionId"] == sid)
        .map(|u| &u["params"]["update"])
        .filter(|u| u["sessionUpdate"] != "available_commands_update")
        .map(|u| {
            (
                u["sessionUpdate"].as_str().unwrap_or("").to_string(),
                u["content"]["text"]
                    .as_str()
                    .or_else(|| u["title"].as_str())
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn sessions_recorded_headless_and_over_acp_both_load_over_acp() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    // 1. A headless run records a session.
    let out = s.run(
        &[
            turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
            turn(vec![text("It says alpha.")]),
        ],
        &["-p", "what is in a.txt?"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let headless = recorded_ids(&s);
    assert_eq!(headless.len(), 1, "{headless:?}");
    let headless = headless[0].clone();

    // 2. An ACP session is recorded the same way.
    let mut ed = Editor::start(&s, &[turn(vec![text("Hello from ACP.")])], &[]);
    let acp_sid = ed.start_session(&s, false);
    assert_eq!(
        prompt(&mut ed, &acp_sid, "hi over acp")["result"]["stopReason"],
        "end_turn"
    );
    assert!(ed.close().success());
    let ids = recorded_ids(&s);
    assert!(ids.contains(&acp_sid), "{ids:?}");

    // 3. Both load over ACP: replayed, and the next prompt carries the history.
    std::fs::remove_file(s.requests_path()).ok();
    let mut ed = Editor::start(
        &s,
        &[
            turn(vec![text("Still alpha.")]),
            turn(vec![text("Still hello.")]),
        ],
        &[],
    );
    initialize(&mut ed);
    let loaded = ed.call(
        "session/load",
        json!({"sessionId": headless, "cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    assert_eq!(
        loaded["result"]["modes"]["currentModeId"], "default",
        "{loaded}"
    );
    let replay = replayed(&ed, &headless);
    assert_eq!(
        replay.first(),
        Some(&(
            "user_message_chunk".to_string(),
            "what is in a.txt?".to_string()
        )),
        "{replay:?}"
    );
    assert!(
        replay
            .iter()
            .any(|(k, t)| k == "tool_call" && t.contains("read_file")),
        "{replay:?}"
    );
    assert_eq!(
        replay.last(),
        Some(&(
            "agent_message_chunk".to_string(),
            "It says alpha.".to_string()
        )),
        "{replay:?}"
    );
    assert_eq!(
        prompt(&mut ed, &headless, "and now?")["result"]["stopReason"],
        "end_turn"
    );

    let loaded = ed.call(
        "session/load",
        json!({"sessionId": acp_sid, "cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    assert!(loaded.get("result").is_some(), "{loaded}");
    assert_eq!(
        replayed(&ed, &acp_sid),
        [
            ("user_message_chunk".to_string(), "hi over acp".to_string()),
            (
                "agent_message_chunk".to_string(),
                "Hello from ACP.".to_string()
            ),
        ]
    );
    assert_eq!(
        prompt(&mut ed, &acp_sid, "again")["result"]["stopReason"],
        "end_turn"
    );
    let requests = s.requests();
    let first = requests[0]["contents"].to_string();
    assert!(
        first.contains("what is in a.txt?") && first.contains("It says alpha."),
        "{first}"
    );
    assert!(first.contains("and now?"), "{first}");
    let second = requests[1]["contents"].to_string();
    assert!(
        second.contains("hi over acp") && second.contains("Hello from ACP."),
        "{second}"
    );
    // The loaded session goes on recording into its own file.
    assert!(ed.close().success());
    let files: Vec<String> = walk(&s.home().join(".troupe/tmp"))
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(".jsonl"))
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    assert!(files
        .iter()
        .any(|t| t.contains("and now?") && t.contains("what is in a.txt?")));

    let missing = {
        let mut ed = Editor::start(&s, &[], &[]);
        initialize(&mut ed);
        ed.call(
            "session/load",
            json!({"sessionId": "nope", "cwd": s.ws().display().to_string(), "mcpServers": []}),
        )
    };
    assert!(missing["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("Invalid session identifier"));
}

#[test]
fn a_rule_given_for_one_run_is_used_but_never_written_to_the_user_config() {
    let s = Scratch::new();
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[approval]\nallowed = [\"glob\"]\n",
    )
    .unwrap();
    let turns = [
        turn(vec![call("test_note", json!({"key": "git status"}))]),
        turn(vec![call(
            "run_shell_command",
            json!({"command": "echo ran >> runs.txt"}),
        )]),
        turn(vec![text("ran")]),
    ];
    // `test_note` (an edit for the policy) is allowed for this run by the environment,
    // which replaces the user file's list; the shell command is saved by the user.
    let mut ed = Editor::start(
        &s,
        &turns,
        &[("TROUPE_APPROVAL_ALLOWED", "[\"test_note\"]")],
    );
    ed.permission = "proceed_always_and_save";
    let sid = ed.start_session(&s, false);
    assert_eq!(
        prompt(&mut ed, &sid, "note, then run")["result"]["stopReason"],
        "end_turn"
    );
    let asked: Vec<String> = ed
        .asked
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .map(|m| m["params"]["toolCall"]["title"].to_string())
        .collect();
    assert_eq!(asked.len(), 1, "only the shell command is asked: {asked:?}");
    assert!(ed.close().success());
    let config = std::fs::read_to_string(dir.join("config.toml")).expect("config");
    // The saved rule is added to what the file held; the run's own rule is not written.
    assert!(config.contains("\"glob\""), "{config}");
    assert!(
        config.contains("run_shell_command(=echo ran >> runs.txt)"),
        "{config}"
    );
    assert!(!config.contains("test_note"), "{config}");
}

#[test]
fn allow_always_is_saved_and_a_new_session_does_not_ask_again() {
    let s = Scratch::new();
    let shell = [
        turn(vec![call(
            "run_shell_command",
            json!({"command": "echo ran >> runs.txt"}),
        )]),
        turn(vec![text("ran")]),
    ];
    let mut ed = Editor::start(&s, &shell, &[]);
    ed.permission = "proceed_always_and_save";
    let sid = ed.start_session(&s, false);
    assert_eq!(
        prompt(&mut ed, &sid, "run")["result"]["stopReason"],
        "end_turn"
    );
    let asked: Vec<&Value> = ed
        .asked
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 1);
    let options: Vec<&str> = asked[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert!(options.contains(&"proceed_always_and_save"), "{options:?}");
    assert!(ed.close().success());
    let config = std::fs::read_to_string(s.home().join(".troupe/config.toml")).expect("config");
    assert!(
        config.contains("run_shell_command(=echo ran >> runs.txt)"),
        "{config}"
    );

    // A new process, a new session: the rule is read back, nothing is asked.
    let mut ed = Editor::start(&s, &shell, &[]);
    let sid = ed.start_session(&s, false);
    assert_eq!(
        prompt(&mut ed, &sid, "run")["result"]["stopReason"],
        "end_turn"
    );
    assert!(
        !ed.asked
            .iter()
            .any(|m| m["method"] == "session/request_permission"),
        "{:?}",
        ed.asked
    );
    assert!(ed.close().success());
    assert_eq!(s.read("runs.txt"), "ran\nran\n");
}
