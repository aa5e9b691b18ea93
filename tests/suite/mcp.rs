//! The MCP client end to end: the `troupe` binary with servers run from the fixture
//! (`tests/fixtures/mcp_fixture.rs`, written with rmcp's server side) and a scripted
//! model; what the model was declared and sent back is read from the request log.

use serde_json::{json, Value};

use crate::common::*;

/// The MCP fixture server's binary: its own crate (`tests/mcp-fixture`), built next
/// to `troupe` (`bash .ci/test` builds it first; otherwise it is built here, once).
pub fn fixture() -> &'static str {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let troupe = std::path::Path::new(env!("CARGO_BIN_EXE_troupe"));
        let path = troupe.with_file_name("mcp-fixture");
        if !path.exists() {
            let target_dir = troupe
                .parent()
                .and_then(|d| d.parent())
                .expect("target dir");
            let mut build = std::process::Command::new(env!("CARGO"));
            build
                .args(["build", "--quiet", "-p", "mcp-fixture", "--target-dir"])
                .arg(target_dir)
                .current_dir(env!("CARGO_MANIFEST_DIR"));
            if troupe.parent().is_some_and(|d| d.ends_with("release")) {
                build.arg("--release");
            }
            let status = build.status().expect("run cargo build -p mcp-fixture");
            assert!(status.success(), "cargo build -p mcp-fixture failed");
        }
        path.to_string_lossy().into_owned()
    })
}

/// Writes the user config with `[mcp_servers.*]` tables (TOML text) under the scratch HOME.
pub fn configure(s: &Scratch, toml: &str) {
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), toml).unwrap();
}

/// A fixture server table.
pub fn server(name: &str, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [{}]\n{extra}\n",
        fixture(),
        args.join(", ")
    )
}

fn declarations(request: &Value) -> Vec<Value> {
    request["tools"][0]["functionDeclarations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn response_of<'a>(responses: &'a [Value], name: &str) -> &'a Value {
    responses
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no response for {name}: {responses:?}"))
}

fn parts_after_responses(request: &Value) -> Vec<Value> {
    let contents = request["contents"].as_array().unwrap();
    contents.last().unwrap()["parts"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn discovery_names_schemas_instructions_and_every_result_kind() {
    let s = Scratch::new();
    configure(
        &s,
        &server(
            "fx",
            &["--instructions", "Call echo first."],
            "trust = true",
        ),
    );
    let names = [
        "echo",
        "image",
        "audio",
        "resource",
        "link",
        "fail",
        "structured",
        "empty",
    ];
    let calls: Vec<Value> = names
        .iter()
        .map(|n| {
            let args = if *n == "echo" {
                json!({"text": "hello mcp"})
            } else {
                json!({})
            };
            call(&format!("mcp_fx_{n}"), args)
        })
        .collect();
    let (out, proc) = s.run_json(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(out["response"], "ok");
    let requests = s.requests();
    let decls = declarations(&requests[0]);
    let echo = decls
        .iter()
        .find(|d| d["name"] == "mcp_fx_echo")
        .expect("echo declared");
    assert_eq!(echo["description"], "Echoes the text back.");
    let schema = &echo["parametersJsonSchema"];
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(
        schema["properties"]["note"],
        json!({"type": "string", "nullable": true})
    );
    assert_eq!(schema["properties"]["wait_for_previous"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["text"]));
    // MCP tools come after the built-ins.
    let first_mcp = decls
        .iter()
        .position(|d| d["name"].as_str().unwrap().starts_with("mcp_"))
        .unwrap();
    assert!(decls[..first_mcp].iter().any(|d| d["name"] == "read_file"));
    assert!(decls[first_mcp..]
        .iter()
        .all(|d| d["name"].as_str().unwrap().starts_with("mcp_fx_")));
    // Server instructions in the first user turn, gemini-cli's wording.
    let first = requests[0]["contents"][0]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(first.contains("The following are instructions provided by the tool server 'fx':\n---[start of server instructions]---\nCall echo first.\n---[end of server instructions]---"), "{first}");

    let responses = function_responses(&requests[1]);
    let output = |n: &str| response_of(&responses, &format!("mcp_fx_{n}"))["response"].clone();
    assert_eq!(
        output("echo")["output"],
        "<untrusted_context>\nEcho: hello mcp\n</untrusted_context>"
    );
    assert_eq!(output("image")["output"], "<untrusted_context>\nHere's the image you requested:\n</untrusted_context>\n[Tool 'image' provided the following image data with mime-type: image/png]");
    assert_eq!(
        output("audio")["output"],
        "[Tool 'audio' provided the following audio data with mime-type: audio/wav]"
    );
    assert_eq!(output("resource")["output"], "<untrusted_context>\nembedded notes\n</untrusted_context>\n[Tool 'resource' provided the following embedded resource with mime-type: application/octet-stream]");
    assert_eq!(
        output("link")["output"],
        "Resource Link: The Doc at fixture://doc.md"
    );
    let fail = output("fail")["error"].as_str().unwrap().to_string();
    assert!(fail.starts_with("MCP tool 'fail' reported tool error for function call: {\"name\":\"fail\",\"args\":{}} with response: "), "{fail}");
    assert!(fail.contains("the fixture failed on purpose"), "{fail}");
    // Beyond gemini-cli: structured content reaches the model when there is no text.
    assert_eq!(
        output("structured")["output"],
        "<untrusted_context>\n{\"answer\":42}\n</untrusted_context>"
    );
    assert!(output("empty")["error"]
        .as_str()
        .unwrap()
        .contains("returned no content"));
    // Images, audio and blobs follow as sibling inlineData parts.
    let mimes: Vec<String> = parts_after_responses(&requests[1])
        .iter()
        .filter_map(|p| p["inlineData"]["mimeType"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        mimes,
        ["image/png", "audio/wav", "application/octet-stream"]
    );
    // The display (returnDisplay) follows gemini-cli's.
    let calls = out["stats"]["tools"]["totalCalls"].as_u64().unwrap();
    assert_eq!(calls, names.len() as u64);
}

#[test]
fn many_calls_to_one_server_run_at_once() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], "trust = true"));
    let n = 12;
    let calls: Vec<Value> = (0..n)
        .map(|_| call("mcp_fx_gather", json!({"n": n})))
        .collect();
    let (_, proc) = s.run_json(&[turn(calls), turn(vec![text("ok")])], &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(responses.len(), n);
    for r in &responses {
        // The fixture saw all n calls in flight at the same time.
        assert_eq!(
            r["response"]["output"],
            format!("<untrusted_context>\npeak {n}\n</untrusted_context>")
        );
    }
}

/// Waits (bounded: 60 s, which only a loaded machine comes near) for `needle` in the
/// file at `path`.
fn wait_for_line(path: &std::path::Path, needle: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!(
        "{needle:?} never appeared in {}:\n{}",
        path.display(),
        std::fs::read_to_string(path).unwrap_or_default()
    );
}

#[test]
fn a_call_past_the_server_timeout_is_cancelled_on_the_server() {
    let s = Scratch::new();
    let log = s.root().join("fx.log");
    configure(
        &s,
        &server(
            "fx",
            &["--log", log.to_str().unwrap()],
            "trust = true\ntimeout_ms = 700",
        ),
    );
    let turns = [
        turn(vec![
            call("mcp_fx_slow", json!({"ms": 20000})),
            call("mcp_fx_echo", json!({"text": "quick"})),
        ]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    let slow = response_of(&responses, "mcp_fx_slow")["response"]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(slow.contains("did not finish within"), "{slow}");
    assert_eq!(
        response_of(&responses, "mcp_fx_echo")["response"]["output"],
        "<untrusted_context>\nEcho: quick\n</untrusted_context>"
    );
    // The server was told (notifications/cancelled) and its tool noticed.
    let text = wait_for_line(&log, "cancelled slow");
    assert!(text.contains("notifications/cancelled"), "{text}");
}

#[test]
fn a_crashed_server_fails_only_its_calls_and_is_restarted() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], "trust = true"));
    let turns = [
        turn(vec![
            call("mcp_fx_stats", json!({})),
            call("read_file", json!({"file_path": "a.txt"})),
            // Crashes once the calls above answered, while `slow` is in flight.
            call("mcp_fx_crash", json!({"wait_for_previous": true})),
            call("mcp_fx_slow", json!({"ms": 5000})),
        ]),
        turn(vec![call("test_sleep", json!({"secs": 2}))]),
        turn(vec![call("mcp_fx_stats", json!({}))]),
        turn(vec![text("ok")]),
    ];
    s.write("a.txt", "alpha\n");
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    let first = function_responses(&requests[1]);
    let slow = response_of(&first, "mcp_fx_slow")["response"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(slow.contains("disconnected"), "{first:?}");
    assert_eq!(
        response_of(&first, "read_file")["response"]["output"],
        "alpha\n"
    );
    let pid = |r: &Value| -> u64 {
        let out = r["response"]["output"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"));
        let inner = out
            .trim_start_matches("<untrusted_context>\n")
            .trim_end_matches("\n</untrusted_context>");
        serde_json::from_str::<Value>(inner).unwrap()["pid"]
            .as_u64()
            .unwrap()
    };
    let before = pid(response_of(&first, "mcp_fx_stats"));
    let after = pid(&function_responses(&requests[3])[0]);
    assert_ne!(before, after, "the server was restarted");
}

#[test]
fn approvals_by_mode_and_trust() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], ""));
    let turns = [
        turn(vec![
            call("mcp_fx_echo", json!({"text": "x"})),
            call("mcp_fx_peek", json!({})),
        ]),
        turn(vec![text("ok")]),
    ];
    // Headless, default mode, untrusted server: declared, refused with the way out.
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    // A refused call ends the run with 54.
    assert_eq!(proc.status.code(), Some(54), "{}", stderr(&proc));
    let requests = s.requests();
    assert!(declarations(&requests[0])
        .iter()
        .any(|d| d["name"] == "mcp_fx_echo"));
    let responses = function_responses(&requests[1]);
    let refused = response_of(&responses, "mcp_fx_echo")["response"]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(refused.contains("approval mode \"default\""), "{refused}");
    assert!(
        refused.contains("trust = true") && refused.contains("[mcp_servers.fx]"),
        "{refused}"
    );
    assert!(refused.contains("--yolo"), "{refused}");

    // Plan mode: readOnlyHint tools of trusted servers only (this one is not).
    std::fs::remove_file(s.requests_path()).unwrap();
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--approval-mode", "plan"]);
    assert_eq!(proc.status.code(), Some(54), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    assert!(response_of(&responses, "mcp_fx_echo")["response"]["error"]
        .as_str()
        .unwrap()
        .contains("readOnlyHint"));
    assert!(response_of(&responses, "mcp_fx_peek")["response"]["error"]
        .as_str()
        .unwrap()
        .contains("trust = true"));

    // --yolo runs everything.
    std::fs::remove_file(s.requests_path()).unwrap();
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    assert!(response_of(&responses, "mcp_fx_echo")["response"]["output"].is_string());

    // trust = true runs without asking in default mode.
    configure(&s, &server("fx", &[], "trust = true"));
    std::fs::remove_file(s.requests_path()).unwrap();
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    assert!(response_of(&responses, "mcp_fx_echo")["response"]["output"].is_string());
}

#[test]
fn project_servers_wait_for_trust() {
    let s = Scratch::new();
    s.write(".troupe/config.toml", &server("proj", &[], "trust = true"));
    let turns = [
        turn(vec![call("mcp_proj_echo", json!({"text": "x"}))]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    assert!(responses[0]["response"]["error"]
        .as_str()
        .unwrap()
        .contains("not found"));
    // The project file cannot trust itself.
    s.write(
        ".troupe/config.toml",
        &format!(
            "[security]\nfolder_trust = false\n{}",
            server("proj", &[], "trust = true")
        ),
    );
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert!(function_responses(s.requests().last().unwrap())[0]["response"]["error"].is_string());
    // Trusting the folder (here for one run) starts them.
    s.write(".troupe/config.toml", &server("proj", &[], "trust = true"));
    std::fs::remove_file(s.requests_path()).unwrap();
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--skip-trust"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(
        function_responses(&s.requests()[1])[0]["response"]["output"],
        "<untrusted_context>\nEcho: x\n</untrusted_context>"
    );
}

#[test]
fn broken_servers_never_stop_the_session_and_say_what_is_wrong() {
    let s = Scratch::new();
    let mut toml = server("fx", &[], "trust = true");
    toml.push_str("[mcp_servers.missing]\ncommand = \"/nonexistent/mcp-server\"\n");
    toml.push_str(&server("quits", &["--exit"], ""));
    toml.push_str(&server("garbage", &["--garbage"], "trust = true"));
    toml.push_str(&server("mute", &["--silent"], "timeout_ms = 1500"));
    toml.push_str(&server("odd", &["--bad-schema"], "trust = true"));
    configure(&s, &toml);
    let turns = [
        turn(vec![
            call("mcp_fx_echo", json!({"text": "still here"})),
            call("mcp_quits_echo", json!({"text": "x"})),
            call("mcp_odd_fine", json!({})),
            call("mcp_odd_odd", json!({})),
        ]),
        turn(vec![text("ok")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(out["response"], "ok");
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(
        response_of(&responses, "mcp_fx_echo")["response"]["output"],
        "<untrusted_context>\nEcho: still here\n</untrusted_context>"
    );
    assert!(
        response_of(&responses, "mcp_quits_echo")["response"]["error"]
            .as_str()
            .unwrap()
            .contains("not found")
    );
    // One tool with a schema that is not an object: that tool only is left out.
    let declared: Vec<String> = declarations(&s.requests()[0])
        .iter()
        .map(|d| d["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        declared.contains(&"mcp_odd_fine".to_string()),
        "{declared:?}"
    );
    assert!(
        !declared.contains(&"mcp_odd_odd".to_string()),
        "{declared:?}"
    );
    assert_eq!(
        response_of(&responses, "mcp_odd_fine")["response"]["output"],
        "<untrusted_context>\nfine ran\n</untrusted_context>"
    );
    assert!(response_of(&responses, "mcp_odd_odd")["response"]["error"]
        .as_str()
        .unwrap()
        .contains("not found"));

    let list = s.bare_command().args(["mcp", "list"]).output().unwrap();
    assert!(list.status.success());
    let text = stderr(&list);
    assert!(text.contains("✓ fx: "), "{text}");
    let block = |name: &str| -> String {
        let start = text
            .find(&format!(" {name}: "))
            .unwrap_or_else(|| panic!("{name}:\n{text}"));
        text[start..].lines().take(2).collect::<Vec<_>>().join("\n")
    };
    assert!(
        block("missing").contains("cannot start `/nonexistent/mcp-server`"),
        "{text}"
    );
    assert!(
        block("quits").contains("exiting at once as asked"),
        "{text}"
    );
    assert!(block("mute").contains("no answer to initialize"), "{text}");
    // A line of garbage before the protocol is skipped, or reported; never a hang.
    assert!(block("garbage").contains("- Connected"), "{text}");
    assert!(block("odd").contains("- Connected"), "{text}");
    assert!(
        text.contains("    Skipped tool odd: its inputSchema is not an object (it is a string)"),
        "{text}"
    );
}

#[test]
fn mcp_add_list_get_remove_round_trip() {
    let s = Scratch::new();
    let run = |args: &[&str]| {
        let out = s.bare_command().arg("mcp").args(args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        (stdout(&out), stderr(&out))
    };
    let (_, err) = run(&["list"]);
    assert_eq!(err.trim(), "No MCP servers configured.");
    let (_, err) = run(&[
        "add",
        "-s",
        "user",
        "-e",
        "K=a=b",
        "--include-tools",
        "echo,peek",
        "--timeout",
        "9000",
        "fx",
        fixture(),
        "--prefix",
        "",
    ]);
    assert_eq!(
        err.trim(),
        "MCP server \"fx\" added to user settings. (stdio)"
    );
    let config = std::fs::read_to_string(s.home().join(".troupe/config.toml")).unwrap();
    let table: toml::Table = config.parse().unwrap();
    let fx = &table["mcp_servers"]["fx"];
    assert_eq!(fx["env"]["K"].as_str(), Some("a=b"));
    assert_eq!(fx["include_tools"].as_array().unwrap().len(), 2, "{config}");
    assert_eq!(fx["args"].as_array().unwrap()[0].as_str(), Some("--prefix"));
    assert_eq!(fx["timeout_ms"].as_integer(), Some(9000));
    let (_, err) = run(&["add", "-s", "user", "fx", fixture()]);
    assert!(err.contains("MCP server \"fx\" is already configured within user settings.\nMCP server \"fx\" updated in user settings."), "{err}");
    let (_, err) = run(&["list"]);
    assert!(
        err.starts_with("Configured MCP servers:\n\n✓ fx: "),
        "{err}"
    );
    assert!(err.contains("(stdio) - Connected"), "{err}");
    let (out, _) = run(&["get", "fx"]);
    assert!(out.contains("  - mcp_fx_echo"), "{out}");
    let (_, err) = run(&["remove", "-s", "user", "fx"]);
    assert_eq!(err.trim(), "Server \"fx\" removed from user settings.");
    let (_, err) = run(&["remove", "-s", "user", "fx"]);
    assert_eq!(err.trim(), "Server \"fx\" not found in user settings.");
    let (_, err) = run(&["list"]);
    assert_eq!(err.trim(), "No MCP servers configured.");
}

#[test]
fn troupe_serves_its_own_tools_to_troupe() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    configure(
        &s,
        &format!(
            "[mcp_servers.self]\ncommand = {:?}\nargs = [\"mcp\", \"serve\"]\ntrust = true\n",
            env!("CARGO_BIN_EXE_troupe")
        ),
    );
    let turns = [
        turn(vec![
            call("mcp_self_read_file", json!({"file_path": "a.txt"})),
            call("mcp_self_read_file", json!({"file_path": "../outside.txt"})),
            call(
                "mcp_self_write_file",
                json!({"file_path": "b.txt", "content": "beta\n"}),
            ),
        ]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    assert!(declarations(&requests[0])
        .iter()
        .any(|d| d["name"] == "mcp_self_replace"));
    let responses = function_responses(&requests[1]);
    assert_eq!(
        responses[0]["response"]["output"],
        "<untrusted_context>\nalpha\n\n</untrusted_context>"
    );
    // The served tools keep the workspace confinement.
    let outside = responses[1]["response"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(outside.contains("reported tool error"), "{responses:?}");
    // And the serving side's approval policy (default mode cannot ask): nothing written.
    let write = responses[2]["response"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(write.contains("cannot ask for"), "{write}");
    assert!(!s.ws().join("b.txt").exists());
}

/// Opt-in, against the reference server `@modelcontextprotocol/server-everything`:
/// `cargo test --test all everything -- --ignored`. It runs `npx -y
/// @modelcontextprotocol/server-everything stdio` (the npm registry must be reachable),
/// or the command in `TROUPE_MCP_EVERYTHING` (e.g. an installed
/// `node_modules/.bin/mcp-server-everything`).
#[test]
#[ignore]
fn server_everything_via_npx() {
    let s = Scratch::new();
    let (command, args) = match std::env::var("TROUPE_MCP_EVERYTHING") {
        Ok(cmd) => (cmd, vec!["stdio".to_string()]),
        Err(_) => (
            "npx".to_string(),
            vec![
                "-y".into(),
                "@modelcontextprotocol/server-everything".into(),
                "stdio".into(),
            ],
        ),
    };
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    configure(
        &s,
        &format!(
            "[mcp_servers.everything]\ncommand = {command:?}\nargs = [{}]\ntrust = true\ntimeout_ms = 180000\nenv = {{ LEAK = \"${{GEMINI_API_KEY}}\", SEEN = \"$HOME\" }}\n",
            args.join(", ")
        ),
    );
    let turns = [
        turn(vec![
            call("mcp_everything_echo", json!({"message": "hello mcp"})),
            call("mcp_everything_get-sum", json!({"a": 2, "b": 3})),
            call("mcp_everything_get-tiny-image", json!({})),
            call("mcp_everything_get-env", json!({})),
        ]),
        turn(vec![text("ok")]),
    ];
    let mut cmd = s.command();
    cmd.arg("--fake-responses")
        .arg(s.script(&turns))
        .args(["-o", "json", "-p", "go", "-c", "mcp.startup_wait_ms=180000"])
        .env("GEMINI_API_KEY", "not-for-servers-123");
    let proc = cmd.output().unwrap();
    assert!(proc.status.success(), "{}", stderr(&proc));
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(
        responses[0]["response"]["output"],
        "<untrusted_context>\nEcho: hello mcp\n</untrusted_context>"
    );
    assert!(responses[1]["response"]["output"]
        .as_str()
        .unwrap()
        .contains('5'));
    assert!(responses[2]["response"]["output"]
        .as_str()
        .unwrap()
        .contains("provided the following image data with mime-type: image/png"));
    let env = responses[3]["response"]["output"].as_str().unwrap();
    assert!(env.contains("\"SEEN\""), "{env}");
    assert!(
        !env.contains("not-for-servers-123"),
        "the model key leaked: {env}"
    );
}

#[test]
fn at_server_uri_reads_a_resource_into_the_prompt() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], ""));
    let (_, proc) = s.run_json(
        &[turn(vec![text("ok")])],
        &[
            "-p",
            "summarise @fx:fixture://notes.txt and @fx:fixture://blob.bin",
        ],
    );
    assert!(proc.status.success(), "{}", stderr(&proc));
    let parts = s.requests()[0]["contents"][0]["parts"].clone();
    let texts: Vec<&str> = parts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "summarise @fx:fixture://notes.txt and @fx:fixture://blob.bin",
            "\n--- Content from referenced files ---",
            "\nContent from @fixture://notes.txt:\nthe notes' text",
            "\nContent from @fixture://blob.bin:\n[Binary resource content application/octet-stream, 4 bytes]",
            "\n--- End of content ---",
        ]
    );
    // A resource that cannot be read stops the turn with the reason.
    let out = s.run(
        &[turn(vec![text("ok")])],
        &["-p", "read @fx:fixture://nope"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Exiting due to an error processing the @ command"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn tools_list_changed_adds_the_new_tool_between_rounds() {
    let s = Scratch::new();
    configure(&s, &server("fx", &[], "trust = true"));
    let turns = [
        turn(vec![call("mcp_fx_grow", json!({}))]),
        turn(vec![call("test_sleep", json!({"secs": 1}))]),
        turn(vec![call("mcp_fx_extra", json!({}))]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    assert!(!declarations(&requests[0])
        .iter()
        .any(|d| d["name"] == "mcp_fx_extra"));
    assert!(declarations(&requests[2])
        .iter()
        .any(|d| d["name"] == "mcp_fx_extra"));
    assert_eq!(
        function_responses(&requests[3])[0]["response"]["output"],
        "<untrusted_context>\nextra ran\n</untrusted_context>"
    );
}

#[test]
fn bench_calls_an_mcp_tool_and_every_call_succeeds() {
    let s = Scratch::new();
    let log = s.root().join("fx.log");
    let log_arg = log.display().to_string();
    configure(&s, &server("fx", &["--log", &log_arg], "trust = true"));
    let bench = |args: &[&str]| -> Value {
        let out = s.bare_command().arg("bench").args(args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("bench prints JSON ({e}): {}", stdout(&out)))
    };
    let mcp = bench(&["--calls", "30", "--tool", "mcp:fx/echo"]);
    let builtin = bench(&["--calls", "30"]);
    let alias = bench(&["--calls", "5", "--mcp", "fx/echo"]);
    assert_eq!(mcp["succeeded"], 30, "{mcp}");
    assert_eq!(alias["succeeded"], 5, "{alias}");
    assert_eq!(mcp["workload"], "mcp fx/echo", "{mcp}");
    assert_eq!(alias["workload"], "mcp fx/echo", "{alias}");
    // The same figures as the built-in run, so the two compare.
    for key in [
        "turn_wall_ms",
        "turn_calls_per_s",
        "p50_us",
        "p99_us",
        "session_start_ms",
    ] {
        assert!(mcp[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {mcp}");
        assert!(
            builtin[key].as_f64().is_some_and(|v| v > 0.0),
            "{key}: {builtin}"
        );
    }
    // The floor: the same calls by the bench's own minimal client, and the ratio.
    for report in [&mcp, &alias] {
        for key in ["mcp_floor_ms", "mcp_ratio"] {
            assert!(
                report[key].as_f64().is_some_and(|v| v > 0.0),
                "{key}: {report}"
            );
        }
        assert_eq!(report["mcp_transport"], "stdio", "{report}");
    }
    assert!(builtin["mcp_floor_ms"].is_null(), "{builtin}");
    // Every call reached the server: the turn's and the floor client's.
    let calls = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| *l == "start echo")
        .count();
    assert_eq!(calls, 2 * 35);
    // A tool name that is no MCP spec is refused with the accepted forms.
    let out = s
        .bare_command()
        .args(["bench", "--calls", "1", "--tool", "echo"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("mcp:SERVER/TOOL"), "{}", stderr(&out));
}
