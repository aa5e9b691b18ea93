//! An MCP server added to the project settings of an untrusted folder: `mcp add` says
//! it will not start and how to change that, `mcp list` and `mcp get` show it as not
//! applied, and the model's call of one of its tools is told why the tool is missing.

use serde_json::json;

use super::mcp::fixture;
use crate::common::*;

fn mcp(s: &Scratch, args: &[&str]) -> std::process::Output {
    s.bare_command().arg("mcp").args(args).output().unwrap()
}

#[test]
fn mcp_add_in_an_untrusted_folder_says_so_and_list_get_and_calls_explain() {
    let s = Scratch::new();
    let added = mcp(&s, &["add", "ev", fixture()]);
    assert!(added.status.success(), "{}", stderr(&added));
    let err = stderr(&added);
    assert!(
        err.contains("MCP server \"ev\" added to project settings. (stdio)"),
        "{err}"
    );
    assert!(err.contains("is not trusted"), "{err}");
    assert!(err.contains("`troupe trust`"), "{err}");
    assert!(err.contains("-s user"), "{err}");

    let listed = mcp(&s, &["list"]);
    let err = stderr(&listed);
    assert!(!err.contains("No MCP servers configured"), "{err}");
    assert!(
        err.contains("ev: ") && err.contains("not applied: folder not trusted"),
        "{err}"
    );
    assert!(err.contains("`troupe trust`"), "{err}");

    let got = mcp(&s, &["get", "ev"]);
    let out = stdout(&got);
    assert!(got.status.success(), "{}", stderr(&got));
    assert!(out.contains("ev (project settings)"), "{out}");
    assert!(out.contains("not applied: folder not trusted"), "{out}");

    let turns = [
        turn(vec![call("mcp_ev_echo", json!({"text": "hi"}))]),
        turn(vec![text("done")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "use ev"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    let error = responses[0]["response"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(
        error.starts_with("Tool \"mcp_ev_echo\" not found."),
        "{error}"
    );
    assert!(
        error.contains("MCP server \"ev\"") && error.contains("not trusted"),
        "{error}"
    );
    assert!(error.contains("`troupe trust`"), "{error}");

    // The user's settings apply anywhere: no warning.
    let added = mcp(&s, &["add", "-s", "user", "fx", fixture()]);
    assert!(
        !stderr(&added).contains("not trusted"),
        "{}",
        stderr(&added)
    );

    // Once trusted, the same server lists as connected, and adding warns no more.
    let trusted = s.bare_command().arg("trust").output().unwrap();
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    let err = stderr(&mcp(&s, &["list"]));
    assert!(
        err.contains("✓ ev: ") && err.contains("- Connected"),
        "{err}"
    );
    assert!(!err.contains("not trusted"), "{err}");
    let added = mcp(&s, &["add", "ev2", fixture()]);
    assert!(
        !stderr(&added).contains("not trusted"),
        "{}",
        stderr(&added)
    );
}
