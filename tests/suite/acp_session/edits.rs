//! Edits over ACP: a call that needs permission is announced by its `tool_call`
//! (`pending`) before `session/request_permission`, then updated as it runs; and
//! `session/load` replays each edit with the very `diff` content it was shown with
//! live (not its result text).

use serde_json::{json, Value};

use crate::common::*;
use crate::suite::acp::Editor;

/// The one update of `kind` for call `id` (panics when there is none).
fn update_of(ed: &Editor, kind: &str, id: &str) -> Value {
    ed.kinds(kind)
        .into_iter()
        .find(|u| u["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no {kind} for {id}: {:?}", ed.updates))
}

#[test]
fn a_permission_is_preceded_by_its_tool_call_and_load_replays_the_live_diffs() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\nsecond line\n");
    s.write("b.txt", "bravo\n");
    let turns = [
        turn(vec![
            call("read_file", json!({"file_path": "a.txt"})),
            call("read_file", json!({"file_path": "b.txt"})),
            call(
                "replace",
                json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "omega"}),
            ),
            call(
                "write_file",
                json!({"file_path": "c.txt", "content": "charlie\n"}),
            ),
        ]),
        turn(vec![text("Edited.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    let sid = ed.start_session(&s, false);
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "edit a"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(s.read("a.txt"), "omega\nsecond line\n");

    // Each permission request came after its call's `pending` tool_call.
    let permissions: Vec<&Value> = ed
        .seen
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .collect();
    assert_eq!(permissions.len(), 2, "{:?}", ed.seen);
    let mut live = Vec::new();
    for perm in permissions {
        let id = perm["params"]["toolCall"]["toolCallId"].as_str().unwrap();
        let at = |check: &dyn Fn(&Value) -> bool| ed.seen.iter().position(check);
        let announced = at(&|m| {
            m["params"]["update"]["sessionUpdate"] == "tool_call"
                && m["params"]["update"]["toolCallId"] == id
        })
        .unwrap_or_else(|| panic!("no tool_call for {id}: {:?}", ed.seen));
        let asked = at(&|m| *m == *perm).unwrap();
        assert!(announced < asked, "{:?}", ed.seen);
        let call = update_of(&ed, "tool_call", id);
        // ACP's default status, `pending`, may travel as an absent field.
        assert!(
            call["status"] == "pending" || call["status"].is_null(),
            "{call}"
        );
        assert_eq!(call["kind"], "edit", "{call}");
        let started = ed
            .kinds("tool_call_update")
            .into_iter()
            .any(|u| u["toolCallId"] == id && u["status"] == "in_progress");
        assert!(started, "{:?}", ed.updates);
        let finished = ed
            .kinds("tool_call_update")
            .into_iter()
            .find(|u| u["toolCallId"] == id && u["status"] == "completed")
            .unwrap_or_else(|| panic!("{id} not completed: {:?}", ed.updates));
        assert_eq!(finished["content"][0]["type"], "diff", "{finished}");
        live.push((id.to_string(), finished["content"].clone()));
    }
    assert!(ed.close().success());

    // Loaded in a new connection: each edit comes back with the same diff.
    let mut ed = Editor::start(&s, &[turn(vec![text("ok")])], &[]);
    ed.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let loaded = ed.call(
        "session/load",
        json!({"sessionId": sid, "cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    assert!(loaded.get("result").is_some(), "{loaded}");
    for (id, content) in &live {
        let replayed = update_of(&ed, "tool_call", id);
        assert_eq!(replayed["content"], *content, "{replayed}");
    }
    let replace = &live[0].1[0];
    assert_eq!(replace["oldText"], "alpha\nsecond line\n");
    assert_eq!(replace["newText"], "omega\nsecond line\n");
    assert!(ed.close().success());
}
