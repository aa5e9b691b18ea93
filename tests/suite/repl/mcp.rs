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
    let shown = t.wait_for("🟢 fx - Ready (14 tools, 0 prompts, 2 resources)");
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
