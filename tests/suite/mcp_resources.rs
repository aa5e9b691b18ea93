//! `list_mcp_resources` and `read_mcp_resource` end to end: declared only while a
//! connected MCP server offers resources, and answering with gemini-cli 0.61's texts
//! (the functionResponses gemini-cli 0.61 itself sent for the same calls on this
//! fixture, through a loopback Gemini API).

use serde_json::{json, Value};

use super::mcp::{configure, server};
use crate::common::*;

fn declared(request: &Value) -> Vec<Value> {
    request["tools"][0]["functionDeclarations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn names(request: &Value) -> Vec<String> {
    declared(request)
        .iter()
        .filter_map(|d| d["name"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn resources_are_listed_and_read_with_gemini_cli_texts() {
    let s = Scratch::new();
    let servers = format!(
        "{}{}",
        server("fx", &[], ""),
        server("bare", &["--no-resources"], "")
    );
    configure(&s, &servers);
    let calls = vec![
        call("list_mcp_resources", json!({})),
        call("list_mcp_resources", json!({"serverName": "bare"})),
        call("read_mcp_resource", json!({"uri": "fixture://notes.txt"})),
        call("read_mcp_resource", json!({"uri": "fx:fixture://blob.bin"})),
        call("read_mcp_resource", json!({"uri": "fixture://missing.txt"})),
        call("read_mcp_resource", json!({"uri": ""})),
    ];
    let (out, proc) = s.run_json(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(out["response"], "ok");
    let requests = s.requests();
    let decls = declared(&requests[0]);
    let decl = |n: &str| {
        decls
            .iter()
            .find(|d| d["name"] == n)
            .unwrap_or_else(|| panic!("{n} not declared: {:?}", names(&requests[0])))
            .clone()
    };
    let list = decl("list_mcp_resources")["parametersJsonSchema"].clone();
    let keys: Vec<&String> = list["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["serverName", "wait_for_previous"]);
    assert_eq!(list["properties"]["serverName"]["type"], "string");
    assert_eq!(list["required"], json!([]));
    let read = decl("read_mcp_resource")["parametersJsonSchema"].clone();
    let keys: Vec<&String> = read["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["uri", "wait_for_previous"]);
    assert_eq!(read["required"], json!(["uri"]));
    // After the built-in tools, before the servers' own; read first, as gemini-cli.
    let all = names(&requests[0]);
    let at = |n: &str| all.iter().position(|x| x == n).unwrap();
    assert_eq!(at("list_mcp_resources"), at("read_mcp_resource") + 1);
    assert!(at("read_file") < at("read_mcp_resource"));
    assert!(at("list_mcp_resources") < at("mcp_fx_echo"));

    let responses: Vec<Value> = function_responses(&requests[1])
        .into_iter()
        .map(|r| r["response"].clone())
        .collect();
    assert_eq!(
        responses,
        [
            json!({"output": "Available MCP Resources:\n- fx:fixture://notes.txt | notes.txt | The notes.\n- fx:fixture://blob.bin | blob.bin\n"}),
            json!({"output": "No resources found for server: bare"}),
            json!({"output": "the notes' text\n"}),
            json!({"output": "[Binary Data (application/octet-stream)]\n"}),
            json!({"error": "Resource not found for URI: fixture://missing.txt"}),
            json!({"error": "No URI provided."}),
        ]
    );
}

#[test]
fn no_resource_tools_without_a_server_offering_resources() {
    let s = Scratch::new();
    configure(&s, &server("bare", &["--no-resources"], ""));
    let (_, proc) = s.run_json(&[turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let all = names(&s.requests()[0]);
    assert!(all.iter().any(|n| n == "mcp_bare_echo"), "{all:?}");
    assert!(!all.iter().any(|n| n.contains("mcp_resource")), "{all:?}");

    // A call anyway is an unknown tool.
    let s = Scratch::new();
    let turns = [
        turn(vec![call("list_mcp_resources", json!({}))]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    assert!(!names(&requests[0])
        .iter()
        .any(|n| n.contains("mcp_resource")));
    let error = function_responses(&requests[1])[0]["response"]["error"].clone();
    assert!(
        error
            .as_str()
            .unwrap()
            .starts_with("Tool \"list_mcp_resources\" not found."),
        "{error}"
    );
}

#[test]
fn both_run_unasked_in_plan_mode() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], ""));
    let calls = vec![
        call("list_mcp_resources", json!({"serverName": "fx"})),
        call("read_mcp_resource", json!({"uri": "fixture://notes.txt"})),
    ];
    let (_, proc) = s.run_json(
        &[turn(calls), turn(vec![text("ok")])],
        &["--approval-mode", "plan", "-p", "go"],
    );
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    assert!(responses[0]["response"]["output"]
        .as_str()
        .unwrap()
        .starts_with("Available MCP Resources:\n- fx:fixture://notes.txt"));
    assert_eq!(responses[1]["response"]["output"], "the notes' text\n");
}

#[test]
fn tools_exclude_and_core_apply_to_them_as_to_the_built_ins() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], ""));
    let exclude = ["-c", r#"tools.exclude=["list_mcp_resources"]"#, "-p", "go"];
    let (_, proc) = s.run_json(&[turn(vec![text("ok")])], &exclude);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let all = names(&s.requests()[0]);
    assert!(all.iter().any(|n| n == "read_mcp_resource"), "{all:?}");
    assert!(!all.iter().any(|n| n == "list_mcp_resources"), "{all:?}");

    let s = Scratch::new();
    configure(&s, &server("fx", &[], ""));
    let core = ["-c", r#"tools.core=["read_file"]"#, "-p", "go"];
    let (_, proc) = s.run_json(&[turn(vec![text("ok")])], &core);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let all = names(&s.requests()[0]);
    assert!(!all.iter().any(|n| n.contains("mcp_resource")), "{all:?}");
    assert!(all.iter().any(|n| n == "mcp_fx_echo"), "{all:?}");
}
