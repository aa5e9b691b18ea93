//! MCP servers that misbehave within the protocol: one that dies right after it
//! listed its tools (restarted as the docs promise, then given up, with a warning),
//! results over the size, item or nesting bounds (refused at once, naming the bound),
//! two servers whose tools join to the same name, plan mode's use of readOnlyHint, and
//! a server that is gone when the `-p` run that started it has ended.

use std::time::Duration;

use serde_json::{json, Value};

use super::mcp::{configure, fixture, server};
use crate::common::processes::survivors;
use crate::common::*;

/// [`Scratch::run_within`] with the exit code.
fn run_within(
    s: &Scratch,
    turns: &[Value],
    args: &[&str],
    limit: Duration,
) -> (i32, String, String) {
    let (status, out, err) = s.run_within(turns, args, limit);
    (status.code().unwrap_or(-1), out, err)
}

fn error_of<'a>(responses: &'a [Value], name: &str) -> &'a str {
    responses
        .iter()
        .find(|r| r["name"] == name)
        .and_then(|r| r["response"]["error"].as_str())
        .unwrap_or_else(|| panic!("no error for {name}: {responses:#?}"))
}

#[test]
fn a_server_that_exits_after_listing_is_restarted_five_times_then_given_up() {
    let s = Scratch::new();
    let starts = s.ws().join("starts.log");
    let starts_arg = starts.to_str().unwrap().to_string();
    configure(
        &s,
        &server("brief", &["--exit-after-list", &starts_arg], ""),
    );
    // The turn lasts until the sixth start has been seen, and 5 s more (with the
    // backoff the 7th would come 4 s after the 6th; without it, 250 ms after).
    let wait = format!(
        "seq 900 | while read i; do awk 'END {{ exit NR < 6 }}' {starts_arg} && break; sleep 0.1; done; sleep 5; wc -l < {starts_arg}"
    );
    let turns = [
        turn(vec![call("run_shell_command", json!({"command": wait}))]),
        turn(vec![text("ok")]),
    ];
    let (code, _, err) = run_within(
        &s,
        &turns,
        &["-p", "go", "--yolo"],
        Duration::from_secs(150),
    );
    assert_eq!(code, 0, "{err}");
    let count = std::fs::read_to_string(&starts).unwrap().lines().count();
    assert_eq!(
        count, 6,
        "1 start + 5 restarts, then no more; stderr:\n{err}"
    );
    assert!(
        err.contains("MCP server 'brief'") && err.contains("gave up restarting it"),
        "{err}"
    );
}

#[test]
fn results_over_the_bounds_are_refused_at_once_naming_the_bound() {
    let s = Scratch::new();
    configure(&s, &server("huge", &["--huge"], "trust = true"));
    let turns = [
        turn(vec![
            call("mcp_huge_big", json!({"mb": 17})),
            call("mcp_huge_many", json!({"n": 1_000_000})),
            call("mcp_huge_deep", json!({"depth": 100_000})),
            call(
                "mcp_huge_many",
                json!({"n": 20_000, "wait_for_previous": true}),
            ),
            call("mcp_huge_fine", json!({"wait_for_previous": true})),
        ]),
        turn(vec![text("ok")]),
    ];
    // The server's timeout is 600 s: a refusal that waited for it would not end here.
    let (code, _, err) = run_within(
        &s,
        &turns,
        &["-p", "go", "-o", "json"],
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
    let requests = s.requests();
    let responses = function_responses(&requests[1]);
    let errors: Vec<&str> = responses
        .iter()
        .filter_map(|r| r["response"]["error"].as_str())
        .collect();
    assert_eq!(errors.len(), 4, "{responses:#?}");
    let big = error_of(&responses, "mcp_huge_big");
    assert!(big.contains("over the size bound of 16 MiB"), "{big}");
    assert!(
        errors
            .iter()
            .filter(|e| e.contains("over the size bound of 16 MiB"))
            .count()
            == 2,
        "a million items are over 16 MiB: {errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("nested deeper than the bound of 100 levels")),
        "{errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("20000 content items, over the bound of 10000")),
        "{errors:#?}"
    );
    // The connection stays usable.
    let fine = responses
        .iter()
        .find(|r| r["name"] == "mcp_huge_fine")
        .expect("fine answered");
    assert_eq!(
        fine["response"]["output"],
        "<untrusted_context>\nfine ran\n</untrusted_context>"
    );
}

#[test]
fn two_servers_whose_tools_join_to_one_name_are_refused_naming_both() {
    let s = Scratch::new();
    // `a_b` + `echo` and `a` + `b_echo` are both `mcp_a_b_echo`.
    let mut toml = server("a_b", &[], "trust = true");
    toml.push_str(&server("a", &["--prefix", "b_"], "trust = true"));
    configure(&s, &toml);
    let turns = [
        turn(vec![call("mcp_a_b_echo", json!({"text": "x"}))]),
        turn(vec![text("ok")]),
    ];
    let (code, _, err) = run_within(&s, &turns, &["-p", "go"], Duration::from_secs(60));
    assert_eq!(code, 0, "{err}");
    let warning = err
        .lines()
        .find(|l| l.contains("mcp_a_b_echo"))
        .unwrap_or_else(|| panic!("no warning about mcp_a_b_echo:\n{err}"));
    assert!(
        warning.contains("'a_b'") && warning.contains("'a'") && warning.contains("not registered"),
        "{warning}"
    );
    let requests = s.requests();
    let declared: Vec<&str> = requests[0]["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .filter(|n| *n == "mcp_a_b_echo")
        .collect();
    assert_eq!(declared.len(), 1);
    assert_eq!(
        function_responses(&requests[1])[0]["response"]["output"],
        "<untrusted_context>\nEcho: x\n</untrusted_context>"
    );
}

#[test]
fn plan_mode_takes_read_only_hints_only_from_trusted_servers() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call("mcp_fx_peek", json!({}))]),
        turn(vec![text("ok")]),
    ];
    configure(&s, &server("fx", &[], ""));
    let args = ["-p", "go", "--approval-mode", "plan"];
    run_within(&s, &turns, &args, Duration::from_secs(60));
    let refused = function_responses(&s.requests()[1])[0]["response"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        refused.contains("readOnlyHint") && refused.contains("trust = true"),
        "{refused}"
    );
    std::fs::remove_file(s.requests_path()).unwrap();
    configure(&s, &server("fx", &[], "trust = true"));
    let (code, _, err) = run_within(&s, &turns, &args, Duration::from_secs(60));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        function_responses(&s.requests()[1])[0]["response"]["output"],
        "<untrusted_context>\nnothing to see\n</untrusted_context>"
    );
}

/// A `-p` run leaves its own idle threads to the exit, but not its servers: the MCP
/// server it started is ended, process group and all, before the process ends. This
/// server outlives its stdin (a shell that, once the fixture is done, becomes a long
/// `sleep`), so only Troupe's shutdown ends it.
#[test]
fn the_server_of_a_p_run_is_gone_when_the_run_has_ended() {
    let s = Scratch::new();
    let marker = "sleep 311.75";
    let script = format!("{:?} \"$@\"; exec {marker}", fixture());
    configure(
        &s,
        &format!(
            "[mcp_servers.fx]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}, \"sh\"]\ntrust = true\n"
        ),
    );
    let turns = [
        turn(vec![call("mcp_fx_echo", json!({"text": "hi"}))]),
        turn(vec![text("ok")]),
    ];
    let (code, _, err) = run_within(&s, &turns, &["-p", "go"], Duration::from_secs(60));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        function_responses(&s.requests()[1])[0]["response"]["output"],
        "<untrusted_context>\nEcho: hi\n</untrusted_context>"
    );
    let left = survivors(None, marker);
    assert!(left.is_empty(), "the server outlived the run: {left:?}");
}
