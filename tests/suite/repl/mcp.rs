//! `/mcp` and MCP confirmations in the interactive session.

use serde_json::json;

use super::term::Term;
use crate::common::*;
use crate::suite::mcp::{configure, server};

#[test]
fn slash_mcp_shows_servers_and_the_server_wide_approval_covers_its_tools() {
    let s = Scratch::new();
    let mut toml = server("fx", &[], "");
    toml.push_str(&server("quits", &["--exit"], ""));
    configure(&s, &toml);
    let turns = [
        turn(vec![call("mcp_fx_echo", json!({"text": "one"}))]),
        turn(vec![text("Echoed.")]),
        turn(vec![call("mcp_fx_peek", json!({}))]),
        turn(vec![text("Peeked.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.wait_prompt();
    // Discovery runs in the background (the prompt never waits for it): ask until ready.
    for _ in 0..100 {
        t.line("/mcp");
        std::thread::sleep(std::time::Duration::from_millis(200));
        if t.text().contains("🟢 fx - Ready") && t.text().contains("exiting at once") {
            break;
        }
    }
    let shown = t.wait_for("🟢 fx - Ready (14 tools, 2 prompts, 2 resources)");
    assert!(shown.contains("  - mcp_fx_echo"), "{shown}");
    let shown = t.wait_for("exiting at once as asked");
    assert!(shown.contains("🔴 quits - Disconnected"), "{shown}");
    t.line("/mcp schema");
    t.wait_for("Parameters:");
    t.line("say one");
    let shown = t.wait_for("Allow all server tools for this session");
    assert!(
        shown.contains("Allow execution of MCP tool \"echo\" from server \"fx\"?"),
        "{shown}"
    );
    t.keys(&["3"]);
    t.wait_for("Echoed.");
    t.wait_prompt();
    // Another tool of the same server runs without asking now.
    t.line("peek");
    t.wait_for("Peeked.");
    t.wait_prompt();
    let requests = s.requests();
    assert_eq!(
        function_responses(&requests[3])[0]["response"]["output"],
        "<untrusted_context>\nnothing to see\n</untrusted_context>"
    );
    t.line("/approvals");
    t.wait_for("mcp_fx_*");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

/// Every text part the user sent in `request`.
fn user_texts(request: &serde_json::Value) -> Vec<String> {
    request["contents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "user")
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn mcp_prompts_are_slash_commands_and_reload_restarts_the_servers() {
    let s = Scratch::new();
    let log = s.root().join("fx.log");
    let log_arg = log.display().to_string();
    configure(&s, &server("fx", &["--log", &log_arg], ""));
    let turns = [
        turn(vec![text("Hello Ada!")]),
        turn(vec![text("Summary done.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.wait_prompt();
    for _ in 0..100 {
        t.line("/mcp desc");
        std::thread::sleep(std::time::Duration::from_millis(200));
        if t.text().contains("🟢 fx - Ready") {
            break;
        }
    }
    let shown = t.wait_for("Echoes the text back.");
    assert!(
        shown.contains("  Prompts:\n  - greet\n  - summary"),
        "{shown}"
    );
    t.line("/greet help");
    t.wait_for("--name=\"…\" (required)");
    t.line("/greet --mood=cheerful");
    t.wait_for("Missing required argument(s): --name");
    t.line("/greet Ada Lovelace --mood=cheerful");
    t.wait_for("Hello Ada!");
    t.wait_prompt();
    t.line("/summary");
    t.wait_for("Summary done.");
    t.wait_prompt();
    let requests = s.requests();
    assert_eq!(requests.len(), 2, "the failed /greet sent nothing");
    assert!(
        user_texts(&requests[0])
            .contains(&"Say hello to Ada Lovelace in a cheerful way.".to_string()),
        "{:?}",
        user_texts(&requests[0])
    );
    assert!(
        user_texts(&requests[1]).contains(&"Summarise the notes.".to_string()),
        "{:?}",
        user_texts(&requests[1])
    );

    // /mcp reload starts the server again: a second process logs its start.
    let starts = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == "start")
            .count()
    };
    assert_eq!(starts(), 1);
    t.line("/mcp reload");
    t.wait_for("Restarting MCP servers...");
    t.wait_until_true("a second server process", || starts() == 2);
    // The actor is connecting the new process now: the next Ready is the new one.
    let ready = "🟢 fx - Ready (14 tools, 2 prompts, 2 resources)";
    let before = t.text().matches(ready).count();
    for _ in 0..100 {
        t.line("/mcp");
        std::thread::sleep(std::time::Duration::from_millis(200));
        if t.text().matches(ready).count() > before {
            break;
        }
    }
    t.wait_for_count(ready, before + 1);
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}
