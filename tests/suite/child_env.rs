//! One environment policy for every child: secret-named variables in Troupe's
//! environment reach neither a hook nor an MCP server, unless `[environment] pass`
//! names them; a server's own configured `env` is set on top of the policy.

use serde_json::json;

use crate::common::*;
use crate::suite::mcp::{configure, server};

const SECRETS: [(&str, &str); 3] = [
    ("GITHUB_TOKEN", "gh-sekrit-1"),
    ("AWS_SECRET_ACCESS_KEY", "aws-sekrit-2"),
    ("GITHUB_PAT", "pat-sekrit-3"),
];

/// Runs one headless session with a SessionStart hook and an MCP server that both
/// write their environment to a file; returns (hook's, server's).
fn children_env(s: &Scratch, extra_config: &str) -> (String, String) {
    let hook_file = s.root().join("hook-env.txt");
    let mcp_file = s.root().join("mcp-env.txt");
    let _ = std::fs::remove_file(&hook_file);
    let _ = std::fs::remove_file(&mcp_file);
    let mcp_path = mcp_file.display().to_string();
    let mut config = server(
        "fx",
        &["--env-file", &mcp_path],
        "trust = true\nenv = { CONFIGURED = \"on-top\" }",
    );
    config.push_str(&format!(
        "\n[[hooks.SessionStart]]\ncommand = 'env > {}'\n{extra_config}\n",
        hook_file.display()
    ));
    configure(s, &config);
    let turns = [
        turn(vec![call("mcp_fx_echo", json!({"text": "hi"}))]),
        turn(vec![text("ok")]),
    ];
    let mut cmd = s.command();
    cmd.arg("--fake-responses")
        .arg(s.script(&turns))
        .args(["-p", "go"])
        .env("PLAIN_VISIBLE", "yes");
    for (name, value) in SECRETS {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |f: &std::path::Path| {
        std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
    };
    (read(&hook_file), read(&mcp_file))
}

#[test]
fn secrets_reach_no_hook_and_no_mcp_server_unless_passed() {
    let s = Scratch::new();
    let (hook, mcp) = children_env(&s, "");
    for (who, env) in [("hook", &hook), ("MCP server", &mcp)] {
        assert!(env.contains("PLAIN_VISIBLE=yes"), "{who}: {env}");
        for (name, value) in SECRETS {
            assert!(
                !env.contains(value),
                "{who} saw {name} without a pass-list:\n{env}"
            );
        }
    }
    assert!(mcp.contains("CONFIGURED=on-top"), "{mcp}");

    // `[environment] pass` lets the one named variable through, to both.
    let (hook, mcp) = children_env(&s, "[environment]\npass = [\"GITHUB_PAT\"]");
    for (who, env) in [("hook", &hook), ("MCP server", &mcp)] {
        assert!(env.contains("GITHUB_PAT=pat-sekrit-3"), "{who}: {env}");
        assert!(!env.contains("gh-sekrit-1"), "{who}: {env}");
        assert!(!env.contains("aws-sekrit-2"), "{who}: {env}");
    }
}
