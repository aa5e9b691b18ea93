//! A tool added in the test build (`test_note`: one file, a `mod` line and one
//! registration line) is seen by every front end, each following the tool's facts, not
//! a list of names: the model is offered it, headless approves and refuses it as an
//! edit whose allow rules name command prefixes and runs each of its identical calls,
//! ACP labels it `move`, and `troupe mcp serve` offers it annotated as an edit.

use serde_json::{json, Value};

use super::acp::Editor;
use super::mcp_serve::Served;
use crate::common::*;

fn note(key: &str) -> Value {
    call("test_note", json!({ "key": key }))
}

/// What each function response of `request` said: its output, or `error: …`.
fn answers(request: &Value) -> Vec<String> {
    function_responses(request)
        .iter()
        .map(|r| match r["response"]["output"].as_str() {
            Some(output) => output.to_string(),
            None => format!("error: {}", r["response"]["error"]),
        })
        .collect()
}

#[test]
fn headless_offers_the_tool_and_approves_and_runs_it_per_its_facts() {
    let s = Scratch::new();
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[approval]\nallowed = [\"test_note(git)\"]\n",
    )
    .unwrap();
    let turns = [
        turn(vec![note("git status"), note("gitk"), note("git status")]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-p", "note them"]);
    let requests = s.requests();
    assert_eq!(requests.len(), 2, "{}", stderr(&out));
    let declared: Vec<&str> = requests[0]["tools"][0]["functionDeclarations"]
        .as_array()
        .expect("declarations")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(declared.contains(&"test_note"), "{declared:?}");
    let said = answers(&requests[1]);
    assert_eq!(said.len(), 3, "{said:?}");
    // `git` is a command prefix: it covers `git status`, never `gitk`, which (an edit,
    // in the default mode, with nobody to ask) is refused.
    assert!(said[0].starts_with("noted git status (run "), "{said:?}");
    assert!(said[1].starts_with("error: "), "{said:?}");
    // Its identical calls each ran (it does not run once): two runs, not one shared.
    assert!(said[2].starts_with("noted git status (run "), "{said:?}");
    assert_ne!(said[0], said[2], "{said:?}");

    // In auto_edit mode an edit runs without asking.
    let out = s.run(&turns, &["-p", "note them", "--approval-mode", "auto_edit"]);
    let requests = s.requests();
    let said = answers(requests.last().expect("a request"));
    assert!(
        said[1].starts_with("noted gitk (run "),
        "{said:?}\n{}",
        stderr(&out)
    );
}

#[test]
fn acp_labels_the_tool_with_its_acp_kind() {
    let s = Scratch::new();
    let turns = [turn(vec![note("labelled")]), turn(vec![text("Noted.")])];
    let mut ed = Editor::start(&s, &turns, &[]);
    let sid = ed.start_session(&s, false);
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "note"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let perm = ed
        .asked
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .expect("permission asked (the tool is an edit)")
        .clone();
    assert_eq!(perm["params"]["toolCall"]["kind"], "move", "{perm}");
    let calls = ed.kinds("tool_call");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["kind"], "move", "{calls:?}");
}

#[test]
fn mcp_serve_offers_the_tool_annotated_as_an_edit() {
    let s = Scratch::new();
    let mut served = Served::start(&s, &[]);
    let tools = served.call("tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "test_note"))
        .unwrap_or_else(|| panic!("no test_note: {tools}"));
    assert_eq!(
        tool["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true,
               "idempotentHint": true, "openWorldHint": false}),
        "{tool}"
    );
}
