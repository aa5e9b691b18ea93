//! `troupe --acp` as Harbor's ACP runner (harbor 0.26, on the Python SDK
//! `agent-client-protocol`) talks to it: its `initialize` capabilities, the model
//! chosen through the session config option `model` (`session/set_config_option`,
//! first with Harbor's `provider/model` name, then without the provider), and the
//! token `usage` of `session/prompt`'s answer, which Harbor reads into its trial
//! result and trajectory. The model is a loopback Gemini server.

use serde_json::{json, Value};

use super::acp::Editor;
use crate::common::loopback::{Loopback, Reply};
use crate::common::*;

fn chunk(parts: Value, prompt: u64, output: u64, cached: u64) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": output,
                             "totalTokenCount": prompt + output, "cachedContentTokenCount": cached}})
}

fn harbor_editor(s: &Scratch, server: &Loopback) -> Editor {
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "harbor-test-key")
        .args(["-c", "model.retry.initial_delay_ms=1"]);
    Editor::spawn(cmd)
}

/// The `model` option of a `configOptions` list.
fn model_option(options: &Value) -> Value {
    options
        .as_array()
        .and_then(|list| list.iter().find(|o| o["category"] == "model"))
        .cloned()
        .unwrap_or_else(|| panic!("no model option in {options}"))
}

#[test]
fn harbors_runner_picks_the_model_by_config_option_and_reads_the_turns_usage() {
    let s = Scratch::new();
    s.write("notes.txt", "some notes\n");
    let server = Loopback::start(vec![
        Reply::gemini_sse(&[chunk(
            json!([{"functionCall": {"name": "read_file", "args": {"file_path": "notes.txt"}}}]),
            120,
            15,
            0,
        )]),
        Reply::gemini_sse(&[chunk(json!([{"text": "Read it."}]), 200, 9, 80)]),
    ]);
    let mut ed = harbor_editor(&s, &server);
    // Harbor's runner: terminal auth off, the editor file system, terminals.
    let init = ed.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {
            "auth": {"terminal": false},
            "fs": {"readTextFile": true, "writeTextFile": true},
            "terminal": true}}),
    );
    assert_eq!(init["result"]["agentInfo"]["name"], "troupe", "{init}");
    let new = ed.call(
        "session/new",
        json!({"cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    let sid = new["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{new}"))
        .to_string();
    let option = model_option(&new["result"]["configOptions"]);
    assert_eq!(option["id"], "model", "{option}");
    assert_eq!(option["type"], "select", "{option}");
    assert_eq!(option["currentValue"], "gemini-2.5-flash", "{option}");
    let values: Vec<&str> = option["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["value"].as_str())
        .collect();
    assert!(values.contains(&"gemini-2.5-pro"), "{values:?}");

    // Harbor tries `google/gemini-2.5-pro` first when no option value matches it
    // exactly; it is refused with the list, and the provider-less name is taken.
    let refused = ed.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "model", "value": "google/gemini-2.5-pro"}),
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unknown model `google/gemini-2.5-pro`")
            && message.contains("gemini-2.5-pro"),
        "{refused}"
    );
    let set = ed.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "model", "value": "gemini-2.5-pro"}),
    );
    assert_eq!(
        model_option(&set["result"]["configOptions"])["currentValue"],
        "gemini-2.5-pro",
        "{set}"
    );
    let unknown = ed.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "temperature", "value": "1"}),
    );
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown config option `temperature`"),
        "{unknown}"
    );

    let answer = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Read notes.txt"}]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // Both model requests of the turn, as ACP's `usage` (Harbor's n_input_tokens…).
    assert_eq!(
        answer["result"]["usage"],
        json!({"totalTokens": 344, "inputTokens": 320, "outputTokens": 24, "cachedReadTokens": 80}),
        "{answer}"
    );
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert!(
        paths
            .iter()
            .all(|p| p.starts_with("/v1beta/models/gemini-2.5-pro:streamGenerateContent")),
        "{paths:?}"
    );
    assert!(ed.close().success());
}
