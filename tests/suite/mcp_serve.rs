//! `troupe mcp serve` driven over stdio with raw JSON-RPC: it names itself `troupe`
//! with Troupe's version, annotates each tool from its kind, offers the workspace's
//! files as resources (read through the confined file system) and its custom commands
//! as prompts, and a refused call names what would really allow it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{json, Value};

use crate::common::*;

/// A `troupe mcp serve` process and its pipes.
pub struct Served {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    /// The answer to `initialize`.
    init: Option<Value>,
}

impl Served {
    pub fn start(s: &Scratch, args: &[&str]) -> Served {
        let mut child = s
            .bare_command()
            .args(["mcp", "serve"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start troupe mcp serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut served = Served {
            child,
            stdin,
            stdout,
            next: 0,
            init: None,
        };
        let init = served.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        );
        served.notify("notifications/initialized");
        served.init = Some(init);
        served
    }

    fn notify(&mut self, method: &str) {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and returns its response (`result` or `error`).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "troupe mcp serve closed stdout waiting for {method}");
            let answer: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if answer["id"] == id {
                return answer;
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_server_names_itself_and_annotates_its_tools() {
    let s = Scratch::new();
    let mut served = Served::start(&s, &[]);
    let init = served.init.clone().expect("initialized");
    assert_eq!(init["result"]["serverInfo"]["name"], "troupe", "{init}");
    assert_eq!(
        init["result"]["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    let caps = &init["result"]["capabilities"];
    assert!(
        caps["resources"].is_object() && caps["prompts"].is_object(),
        "{caps}"
    );
    let tools = served.call("tools/list", json!({}));
    let hints = |name: &str| {
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {tools}"))["annotations"]
            .clone()
    };
    let expect = |name: &str, ro: bool, destructive: bool, idem: bool, open: bool| {
        assert_eq!(
            hints(name),
            json!({"readOnlyHint": ro, "destructiveHint": destructive,
                   "idempotentHint": idem, "openWorldHint": open}),
            "{name}"
        );
    };
    expect("read_file", true, false, true, false);
    expect("grep_search", true, false, true, false);
    expect("web_fetch", true, false, true, true);
    expect("write_file", false, true, true, false);
    expect("replace", false, true, true, false);
    expect("run_shell_command", false, true, false, true);
    expect("save_memory", false, false, false, false);
    // Talking to the session's user and switching its approval mode are not served.
    let listed = tools["result"]["tools"].to_string();
    for name in ["ask_user", "enter_plan_mode", "exit_plan_mode"] {
        assert!(!listed.contains(&format!("\"{name}\"")), "{name} served");
    }
}

#[test]
fn workspace_files_are_resources_read_through_the_confined_file_system() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("src/lib.rs", "fn main() {}\n");
    s.write(".env", "TOKEN=secret\n");
    s.write(".gitignore", "ignored.log\n");
    s.write("ignored.log", "noise\n");
    std::fs::create_dir_all(s.ws().join(".git")).unwrap();
    std::fs::write(s.root().join("outside.txt"), "outside\n").unwrap();
    let mut served = Served::start(&s, &[]);
    let listed = served.call("resources/list", json!({}));
    let uris: Vec<String> = listed["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_string())
        .collect();
    let uri = |rel: &str| format!("file://{}", s.ws().join(rel).display());
    assert!(uris.contains(&uri("a.txt")), "{uris:?}");
    assert!(uris.contains(&uri("src/lib.rs")), "{uris:?}");
    assert!(!uris.iter().any(|u| u.ends_with("/.env")), "{uris:?}");
    assert!(!uris.iter().any(|u| u.ends_with("ignored.log")), "{uris:?}");

    let read = served.call("resources/read", json!({"uri": uri("a.txt")}));
    assert_eq!(read["result"]["contents"][0]["text"], "alpha\n", "{read}");
    for refused in [
        uri(".env"),
        format!("file://{}", s.root().join("outside.txt").display()),
        uri("../outside.txt"),
        "https://example.com/a.txt".to_string(),
    ] {
        let read = served.call("resources/read", json!({"uri": refused}));
        assert!(read.get("error").is_some(), "{refused}: {read}");
        assert!(!read.to_string().contains("secret") && !read.to_string().contains("outside\\n"));
    }
}

#[test]
fn custom_commands_are_prompts_filled_like_a_headless_run() {
    let s = Scratch::new();
    s.write("notes.md", "Be brief.\n");
    let commands = s.home().join(".gemini/commands/team");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("greet.toml"),
        "description = \"Greets someone\"\nprompt = \"Say hello to {{args}}. @{notes.md}\"\n",
    )
    .unwrap();
    let mut served = Served::start(&s, &[]);
    let listed = served.call("prompts/list", json!({}));
    let prompt = listed["result"]["prompts"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .find(|p| p["name"] == "team:greet")
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    assert_eq!(prompt["description"], "Greets someone");
    assert_eq!(prompt["arguments"][0]["name"], "args");
    let got = served.call(
        "prompts/get",
        json!({"name": "team:greet", "arguments": {"args": "Ada"}}),
    );
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "Say hello to Ada. Be brief.\n",
        "{got}"
    );
    assert_eq!(got["result"]["messages"][0]["role"], "user");
    let missing = served.call("prompts/get", json!({"name": "nope"}));
    assert!(missing.get("error").is_some(), "{missing}");
}

#[test]
fn a_refusal_under_auto_edit_names_what_really_allows_the_call() {
    let s = Scratch::new();
    // A command that writes (a read-only one runs unasked under the read-only sandbox).
    let call = json!({"name": "run_shell_command", "arguments": {"command": "touch served.txt"}});
    let mut served = Served::start(&s, &["--approval-mode", "auto_edit"]);
    let refused = served.call("tools/call", call.clone());
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!text.contains("--approval-mode auto_edit"), "{text}");
    assert!(text.contains("--yolo"), "{text}");
    // The allow rule it names, given as it says, lets the call run.
    let flag = text
        .split("-c '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or_else(|| panic!("no -c flag in: {text}"))
        .to_string();
    assert!(flag.contains("run_shell_command(touch"), "{flag}");
    assert!(!s.ws().join("served.txt").exists());
    drop(served);
    let mut served = Served::start(&s, &["--approval-mode", "auto_edit", "-c", &flag]);
    let ran = served.call("tools/call", call);
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    assert!(s.ws().join("served.txt").exists(), "{ran}");
}

/// The error `read_file` answered the model for each of `rels`, read in one headless
/// turn.
fn read_file_errors(s: &Scratch, rels: &[&str]) -> Vec<String> {
    let calls = rels
        .iter()
        .map(|rel| call("read_file", json!({"file_path": rel})))
        .collect();
    let out = s.run(
        &[turn(calls), turn(vec![text("done")])],
        &["-p", "read them"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = s.requests();
    let responses = function_responses(&requests[1]);
    assert_eq!(responses.len(), rels.len(), "{responses:?}");
    responses
        .iter()
        .map(|r| {
            r["response"]["error"]
                .as_str()
                .unwrap_or_else(|| panic!("read_file served it: {r}"))
                .to_string()
        })
        .collect()
}

#[test]
fn resources_are_confined_and_ignored_exactly_as_read_file() {
    let s = Scratch::new();
    std::fs::create_dir_all(s.ws().join(".git")).unwrap();
    s.write(".gitignore", "build.log\n");
    s.write(".geminiignore", "private.md\n");
    s.write(".troupeignore", "drafts/\n");
    s.write("build.log", "built\n");
    s.write("private.md", "gemini-ignored\n");
    s.write("drafts/plan.txt", "troupe-ignored\n");
    s.write(".env", "TOKEN=secret\n");
    s.write("kept.txt", "kept\n");
    let ignored = ["build.log", "private.md", "drafts/plan.txt"];
    let read_file = read_file_errors(&s, &ignored);

    let mut served = Served::start(&s, &[]);
    let listed = served.call("resources/list", json!({}));
    let names: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"kept.txt"), "{names:?}");
    let uri = |rel: &str| format!("file://{}", s.ws().join(rel).display());
    for (rel, reason) in ignored.iter().zip(&read_file) {
        assert!(!names.contains(rel), "{rel} listed: {names:?}");
        let read = served.call("resources/read", json!({"uri": uri(rel)}));
        let message = read["error"]["message"].as_str().unwrap_or_default();
        assert!(
            reason.contains("is ignored by configured ignore patterns"),
            "{reason}"
        );
        assert!(
            message.ends_with(reason.as_str()),
            "{rel}: read_file said {reason:?}, resources/read {read}"
        );
    }
    // A secret inside the workspace is refused as one, not as a path outside it.
    let read = served.call("resources/read", json!({"uri": uri(".env")}));
    let message = read["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("sensitive path"), "{read}");
    assert!(!message.contains("outside"), "{read}");
    assert!(!read.to_string().contains("secret"), "{read}");
    let kept = served.call("resources/read", json!({"uri": uri("kept.txt")}));
    assert_eq!(kept["result"]["contents"][0]["text"], "kept\n", "{kept}");
}
