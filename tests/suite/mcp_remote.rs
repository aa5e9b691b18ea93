//! Remote MCP servers: the fixture served over Streamable HTTP (rmcp's server side)
//! and over the older HTTP+SSE transport on 127.0.0.1, reached by the `troupe` binary
//! with `type = "http"`, `type = "sse"` and no type (HTTP, then SSE), with headers.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;
use crate::suite::mcp::{configure, fixture};

/// A fixture process serving over HTTP; killed when dropped.
struct RemoteFixture {
    child: Child,
    url: String,
    log: std::path::PathBuf,
}

impl RemoteFixture {
    fn start(s: &Scratch, name: &str, mode: &str, extra: &[&str]) -> Self {
        let file = s.root().join(format!("{name}.url"));
        let log = s.root().join(format!("{name}.log"));
        let child = Command::new(fixture())
            .arg(mode)
            .arg(&file)
            .arg("--log")
            .arg(&log)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let url = loop {
            if let Ok(url) = std::fs::read_to_string(&file) {
                break url;
            }
            assert!(Instant::now() < deadline, "the fixture never listened");
            std::thread::sleep(Duration::from_millis(20));
        };
        RemoteFixture { child, url, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for RemoteFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixture serving Streamable HTTP, configured as the trusted server `web`.
fn trusted_http_server(s: &Scratch) -> RemoteFixture {
    let web = RemoteFixture::start(s, "web", "--http", &[]);
    configure(
        s,
        &format!(
            "[mcp_servers.web]\nurl = {:?}\ntype = \"http\"\ntrust = true\n",
            web.url
        ),
    );
    web
}

fn echo_output(responses: &[serde_json::Value], name: &str) -> String {
    let r = responses
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no response for {name}: {responses:?}"));
    r["response"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: {r}"))
        .to_string()
}

#[test]
fn http_sse_and_the_fallback_reach_remote_servers_with_headers() {
    let s = Scratch::new();
    let web = RemoteFixture::start(&s, "web", "--http", &["--expect-header", "X-Token: t0k"]);
    let old = RemoteFixture::start(&s, "old", "--sse", &[]);
    configure(
        &s,
        &format!(
            "[mcp_servers.web]\nurl = {:?}\ntype = \"http\"\ntrust = true\n\
             headers = {{ \"X-Token\" = \"${{FIXTURE_TOKEN}}\", \"X-Model-Key\" = \"[$GEMINI_API_KEY]\" }}\n\n\
             [mcp_servers.old]\nurl = {:?}\ntype = \"sse\"\ntrust = true\n\n\
             [mcp_servers.auto]\nurl = {:?}\ntrust = true\n",
            web.url, old.url, old.url
        ),
    );
    let turns = [
        turn(vec![
            call("mcp_web_echo", json!({"text": "over http"})),
            call("mcp_old_echo", json!({"text": "over sse"})),
            call("mcp_auto_echo", json!({"text": "after the fallback"})),
            call("mcp_web_gather", json!({"n": 3})),
            call("mcp_web_gather", json!({"n": 3})),
            call("mcp_web_gather", json!({"n": 3})),
        ]),
        turn(vec![text("ok")]),
    ];
    let script = s.script(&turns);
    let out = s
        .command()
        .env("FIXTURE_TOKEN", "t0k")
        .env("GEMINI_API_KEY", "model-secret")
        .args(["--fake-responses"])
        .arg(script)
        .args(["-o", "json", "-p", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(
        echo_output(&responses, "mcp_web_echo"),
        "<untrusted_context>\nEcho: over http\n</untrusted_context>"
    );
    assert_eq!(
        echo_output(&responses, "mcp_old_echo"),
        "<untrusted_context>\nEcho: over sse\n</untrusted_context>"
    );
    assert_eq!(
        echo_output(&responses, "mcp_auto_echo"),
        "<untrusted_context>\nEcho: after the fallback\n</untrusted_context>"
    );
    // Three calls to one HTTP server were in flight at once (the echo to the same
    // server may still be running when they start: then four were).
    let gathered: Vec<&serde_json::Value> = responses
        .iter()
        .filter(|r| r["name"] == "mcp_web_gather")
        .collect();
    assert_eq!(gathered.len(), 3);
    for r in gathered {
        let output = r["response"]["output"].as_str().unwrap_or_default();
        let peak: usize = output
            .strip_prefix("<untrusted_context>\npeak ")
            .and_then(|rest| rest.strip_suffix("\n</untrusted_context>"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not a gather answer: {output}"));
        assert!((3..=4).contains(&peak), "{output}");
    }
    // The header was expanded from the environment; the model key never was.
    let log = web.log();
    assert!(log.contains("header x-token: t0k"), "{log}");
    assert!(log.contains("header x-model-key: []"), "{log}");
    assert!(!log.contains("model-secret"), "{log}");

    // `troupe mcp list` connects over each transport; without the token, the server
    // refuses and the listing says so.
    let list = s
        .bare_command()
        .env("FIXTURE_TOKEN", "t0k")
        .args(["mcp", "list"])
        .output()
        .unwrap();
    let text = stderr(&list);
    assert!(
        text.contains(&format!("✓ web: {} (http) - Connected", web.url)),
        "{text}"
    );
    assert!(
        text.contains(&format!("✓ old: {} (sse) - Connected", old.url)),
        "{text}"
    );
    assert!(
        text.contains(&format!("✓ auto: {} (http+sse) - Connected", old.url)),
        "{text}"
    );
    let list = s.bare_command().args(["mcp", "list"]).output().unwrap();
    let text = stderr(&list);
    assert!(
        text.contains(&format!("✗ web: {} (http) - Disconnected", web.url)),
        "{text}"
    );
    assert!(text.contains("401"), "{text}");
}

#[test]
fn mcp_add_http_and_sse_with_headers_round_trip() {
    let s = Scratch::new();
    let web = RemoteFixture::start(&s, "web", "--http", &["--expect-header", "X-Token: t0k"]);
    let old = RemoteFixture::start(&s, "old", "--sse", &[]);
    let run = |args: &[&str]| {
        let out = s
            .bare_command()
            .env("FIXTURE_TOKEN", "t0k")
            .arg("mcp")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    };
    let err = run(&[
        "add",
        "-s",
        "user",
        "-t",
        "http",
        "-H",
        "X-Token: ${FIXTURE_TOKEN}",
        "--trust",
        "web",
        &web.url,
    ]);
    assert_eq!(
        err.trim(),
        "MCP server \"web\" added to user settings. (http)"
    );
    let err = run(&["add", "-s", "user", "-t", "sse", "old", &old.url]);
    assert_eq!(
        err.trim(),
        "MCP server \"old\" added to user settings. (sse)"
    );
    // A URL without -t is a remote server (HTTP, then SSE), not a command to run.
    let err = run(&["add", "-s", "user", "auto", &old.url]);
    assert_eq!(
        err.trim(),
        "MCP server \"auto\" added to user settings. (http+sse)"
    );
    let refused = s
        .bare_command()
        .args([
            "mcp", "add", "-s", "user", "-t", "http", "extra", &web.url, "arg",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("a URL takes no arguments"),
        "{}",
        stderr(&refused)
    );
    let config = std::fs::read_to_string(s.home().join(".troupe/config.toml")).unwrap();
    let table: toml::Table = config.parse().unwrap();
    let entry = &table["mcp_servers"]["web"];
    assert_eq!(entry["url"].as_str(), Some(web.url.as_str()), "{config}");
    assert_eq!(entry["type"].as_str(), Some("http"), "{config}");
    assert_eq!(
        entry["headers"]["X-Token"].as_str(),
        Some("${FIXTURE_TOKEN}"),
        "{config}"
    );
    assert_eq!(entry["trust"].as_bool(), Some(true), "{config}");
    assert_eq!(table["mcp_servers"]["old"]["type"].as_str(), Some("sse"));
    let auto = &table["mcp_servers"]["auto"];
    assert_eq!(auto["url"].as_str(), Some(old.url.as_str()), "{config}");
    assert!(
        auto.get("type").is_none() && auto.get("command").is_none(),
        "{config}"
    );
    assert!(table["mcp_servers"].get("extra").is_none(), "{config}");
    let err = run(&["list"]);
    assert!(
        err.contains(&format!("✓ web: {} (http) - Connected", web.url)),
        "{err}"
    );
    assert!(
        err.contains(&format!("✓ old: {} (sse) - Connected", old.url)),
        "{err}"
    );
    assert!(
        err.contains(&format!("✓ auto: {} (http+sse) - Connected", old.url)),
        "{err}"
    );
    let get = s
        .bare_command()
        .env("FIXTURE_TOKEN", "t0k")
        .args(["mcp", "get", "web"])
        .output()
        .unwrap();
    assert!(
        stdout(&get).contains("  - mcp_web_echo"),
        "{}",
        stdout(&get)
    );
    assert_eq!(
        run(&["remove", "-s", "user", "web"]).trim(),
        "Server \"web\" removed from user settings."
    );
    let err = run(&["list"]);
    assert!(!err.contains("web:"), "{err}");
    assert!(err.contains("✓ old:"), "{err}");
}

#[test]
fn streamable_http_calls_reuse_their_connections() {
    let s = Scratch::new();
    let web = trusted_http_server(&s);
    // 20 calls one after the other: each could have opened a connection of its own.
    let calls = 20;
    let turns = [
        turn(
            (0..calls)
                .map(|i| {
                    call(
                        "mcp_web_echo",
                        json!({"text": format!("call {i}"), "wait_for_previous": true}),
                    )
                })
                .collect(),
        ),
        turn(vec![text("ok")]),
    ];
    let script = s.script(&turns);
    let out = s
        .command()
        .args(["--fake-responses"])
        .arg(script)
        .args(["-o", "json", "-p", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(responses.len(), calls);
    assert!(responses.iter().all(|r| r["response"]["output"]
        .as_str()
        .is_some_and(|o| o.contains("Echo: call"))));
    let log = web.log();
    let accepted = log.lines().filter(|l| *l == "accept").count();
    // initialize, the event stream, the listing and the 20 calls: a handful of
    // connections, not one per request.
    assert!(
        (1..=4).contains(&accepted),
        "{accepted} connections for {calls} calls:\n{log}"
    );
}

#[test]
fn bench_measures_a_streamable_http_server_and_its_floor() {
    let s = Scratch::new();
    let web = trusted_http_server(&s);
    let out = s
        .bare_command()
        .args(["bench", "--calls", "30", "--tool", "mcp:web/echo"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bench prints JSON ({e}): {}", stdout(&out)));
    assert_eq!(report["succeeded"], 30, "{report}");
    assert_eq!(report["mcp_transport"], "http", "{report}");
    for key in ["turn_wall_ms", "mcp_floor_ms", "mcp_ratio"] {
        assert!(
            report[key].as_f64().is_some_and(|v| v > 0.0),
            "{key}: {report}"
        );
    }
    // The turn's 30 calls and the floor client's 30 all reached the server.
    let calls = web.log().lines().filter(|l| *l == "start echo").count();
    assert_eq!(calls, 60);
}
