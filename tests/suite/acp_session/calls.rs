//! What a client sees of calls and commands over ACP: the `tool_call` before any
//! `fs/*` request of its call and the editor read no more than needed, an MCP tool's
//! call titled and kinded as gemini-cli does, the session's custom commands and MCP
//! prompts offered in `available_commands_update`, and `session/load` of a session
//! the connection has open.

use serde_json::json;

use super::{initialize, new_session, prompt};
use crate::common::*;
use crate::suite::acp::Editor;
use crate::suite::mcp::fixture;

#[test]
fn the_tool_call_comes_before_the_editor_reads_of_its_call() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\nsecond line\n");
    let turns = [
        turn(vec![
            call("read_file", json!({"file_path": "a.txt"})),
            call(
                "replace",
                json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "omega"}),
            ),
        ]),
        turn(vec![text("Edited.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    let path = s.ws().join("a.txt").canonicalize().unwrap();
    // An unsaved buffer: what the tools see is the editor's text.
    ed.buffers
        .insert(path.display().to_string(), "alpha\nunsaved line\n".into());
    let sid = ed.start_session(&s, true);
    let done = prompt(&mut ed, &sid, "edit a");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(s.read("a.txt"), "omega\nunsaved line\n");

    // The tool_calls and the editor requests, in the order the client got them.
    let order: Vec<&str> = ed
        .seen
        .iter()
        .filter_map(|m| match m["method"].as_str() {
            Some(fs) if fs.starts_with("fs/") => Some(fs),
            _ if m["params"]["update"]["sessionUpdate"] == "tool_call" => Some("tool_call"),
            _ => None,
        })
        .collect();
    // Both calls are of a.txt: the first request is one call's, the second may be the
    // other's, so each comes after that many tool_calls.
    let nth = |n: usize| {
        order
            .iter()
            .enumerate()
            .filter(|(_, m)| m.starts_with("fs/"))
            .nth(n)
            .map(|(i, _)| order[..i].iter().filter(|m| **m == "tool_call").count())
    };
    assert!(nth(0) >= Some(1), "{order:?}");
    assert!(nth(1) >= Some(2), "{order:?}");
    let reads = ed
        .seen
        .iter()
        .filter(|m| m["method"] == "fs/read_text_file")
        .count();
    let writes = ed
        .seen
        .iter()
        .filter(|m| m["method"] == "fs/write_text_file")
        .count();
    assert_eq!(writes, 1, "{:?}", ed.seen);
    // read_file: 1, the buffer it answers with. replace: 2 — the text its confirmation
    // shows, and the text it edits once approved (the user may have typed while asked:
    // a change asks again), which it writes over at once without asking for it again.
    // It was 5: the approved edit was read once more before it ran, and again right
    // before the write.
    assert_eq!(reads, 3, "{reads} editor reads: {:?}", ed.seen);
    assert!(ed.close().success());
}

#[test]
fn a_buffer_typed_into_while_the_edit_was_asked_is_asked_again_and_kept() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\nsecond line\n");
    let turns = [
        turn(vec![call(
            "replace",
            json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "omega"}),
        )]),
        turn(vec![text("Edited.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    let path = s.ws().join("a.txt").canonicalize().unwrap();
    let path = path.display().to_string();
    ed.buffers
        .insert(path.clone(), "alpha\nunsaved line\n".into());
    // While the first question is shown, the user types a line into the buffer.
    ed.typed_while_asked = Some((path, "alpha\nunsaved line\ntyped meanwhile\n".into()));
    let sid = ed.start_session(&s, true);
    let done = prompt(&mut ed, &sid, "edit a");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let asked: Vec<&serde_json::Value> = ed
        .seen
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .collect();
    // Asked again, with the diff of the buffer as it is now; the typed line is kept.
    assert_eq!(asked.len(), 2, "{:?}", ed.seen);
    assert!(
        asked[1].to_string().contains("typed meanwhile"),
        "{}",
        asked[1]
    );
    assert_eq!(s.read("a.txt"), "omega\nunsaved line\ntyped meanwhile\n");
    let writes = ed
        .seen
        .iter()
        .filter(|m| m["method"] == "fs/write_text_file")
        .count();
    assert_eq!(
        writes, 1,
        "nothing written on the stale approval: {:?}",
        ed.seen
    );
    assert!(ed.close().success());
}

#[test]
fn an_mcp_tool_call_is_titled_and_kinded_as_gemini_cli_does() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call("mcp_fx_echo", json!({"text": "hi"}))]),
        turn(vec![text("Echoed.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    initialize(&mut ed);
    let new = new_session(
        &mut ed,
        &s,
        json!([{"name": "fx", "command": fixture(), "args": [], "env": []}]),
    );
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    ed.permission = "proceed_once";
    let done = prompt(&mut ed, &sid, "echo it");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let call = ed
        .kinds("tool_call")
        .into_iter()
        .find(|u| u["rawInput"]["text"] == "hi")
        .unwrap_or_else(|| panic!("no tool_call: {:?}", ed.updates));
    assert_eq!(call["title"], "echo (fx MCP Server)", "{call}");
    assert_eq!(call["kind"], "other", "{call}");
    assert!(ed.close().success());
}

#[test]
fn custom_commands_and_mcp_prompts_are_offered_as_commands() {
    let s = Scratch::new();
    let commands = s.home().join(".gemini/commands/team");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("greet.toml"),
        "description = \"Greets someone\"\nprompt = \"Say hello to {{args}}.\"\n",
    )
    .unwrap();
    let mut ed = Editor::start(&s, &[], &[]);
    initialize(&mut ed);
    let new = new_session(
        &mut ed,
        &s,
        json!([{"name": "fx", "command": fixture(), "args": [], "env": []}]),
    );
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    ed.wait_update("available_commands_update", |u| {
        u["params"]["sessionId"] == sid
            && u["params"]["update"]["sessionUpdate"] == "available_commands_update"
    });
    let offered = &ed.kinds("available_commands_update")[0]["availableCommands"];
    let named = |name: &str| {
        offered
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {offered}"))
            .clone()
    };
    assert_eq!(named("compress")["name"], "compress");
    assert_eq!(named("memory")["name"], "memory");
    assert_eq!(named("team:greet")["description"], "Greets someone");
    assert_eq!(named("greet")["description"], "Greets someone.");
    assert_eq!(named("summary")["description"], "Asks for a summary.");
    assert!(ed.close().success());
}

#[test]
fn loading_a_session_open_on_the_connection_replays_it_in_its_place() {
    let s = Scratch::new();
    let turns = [
        turn(vec![text("First answer.")]),
        turn(vec![text("Second answer.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    let sid = ed.start_session(&s, false);
    assert_eq!(
        prompt(&mut ed, &sid, "first question")["result"]["stopReason"],
        "end_turn"
    );
    let before = ed.updates.len();
    let loaded = ed.call(
        "session/load",
        json!({"sessionId": sid, "cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    assert!(loaded.get("result").is_some(), "{loaded}");
    let replayed: Vec<(String, String)> = ed.updates[before..]
        .iter()
        .map(|u| &u["params"]["update"])
        .filter(|u| u["content"]["text"].is_string())
        .map(|u| {
            (
                u["sessionUpdate"].as_str().unwrap().to_string(),
                u["content"]["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        replayed,
        [
            (
                "user_message_chunk".to_string(),
                "first question".to_string()
            ),
            (
                "agent_message_chunk".to_string(),
                "First answer.".to_string()
            ),
        ]
    );
    // The loaded session is the one the connection goes on with.
    assert_eq!(
        prompt(&mut ed, &sid, "second question")["result"]["stopReason"],
        "end_turn"
    );
    let requests = s.requests();
    let last = requests.last().unwrap()["contents"].to_string();
    assert!(
        last.contains("first question") && last.contains("second question"),
        "{last}"
    );
    assert!(ed.close().success());
}
