//! `troupe --acp` driven by a scripted ACP client over the binary's stdio, with a
//! scripted model: the client answers permission requests and serves its own file
//! system (with an unsaved buffer), as an editor would.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

const WAIT: Duration = Duration::from_secs(60);

/// A scripted editor talking ACP to the troupe binary.
pub struct Editor {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// Every notification received, in order.
    pub updates: Vec<Value>,
    /// Requests the agent made of the client (permission, fs), in order.
    pub asked: Vec<Value>,
    /// Every request and notification from the agent, in the order they came.
    pub seen: Vec<Value>,
    /// Unsaved buffers: served instead of the disk.
    pub buffers: HashMap<String, String>,
    /// The option chosen for permission requests.
    pub permission: &'static str,
    /// Buffers the user "types" into while the first permission request is shown
    /// (path, new text): set on that request, before it is answered.
    pub typed_while_asked: Option<(String, String)>,
}

impl Editor {
    pub fn start(s: &Scratch, turns: &[Value], extra_env: &[(&str, &str)]) -> Editor {
        let script = s.script(turns);
        let mut cmd = s.command();
        cmd.arg("--fake-responses").arg(script);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        Editor::spawn(cmd)
    }

    /// Runs `cmd --acp` as the agent.
    pub fn spawn(mut cmd: std::process::Command) -> Editor {
        cmd.arg("--acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("start troupe --acp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Editor {
            child,
            stdin,
            lines,
            next_id: 0,
            updates: Vec::new(),
            asked: Vec::new(),
            seen: Vec::new(),
            buffers: HashMap::new(),
            permission: "proceed_once",
            typed_while_asked: None,
        }
    }

    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to troupe");
        stdin.flush().expect("flush");
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write to troupe");
    }

    /// Writes `bytes` as they are (they need not be UTF-8).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to troupe");
        stdin.flush().expect("flush");
    }

    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Reads one message; answers the agent's own requests; returns responses.
    fn pump(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = self.lines.recv_timeout(left).ok()?;
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
        assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
        if msg.get("method").is_some() {
            self.seen.push(msg.clone());
        }
        match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
            (Some(method), Some(id)) => {
                let id = id.clone();
                self.asked.push(msg.clone());
                let reply = self.answer(method, &msg["params"]);
                let mut out = json!({"jsonrpc": "2.0", "id": id});
                match reply {
                    Ok(result) => out["result"] = result,
                    Err(error) => out["error"] = error,
                }
                self.send(&out);
                Some(json!({}))
            }
            (Some(_), None) => {
                self.updates.push(msg);
                Some(json!({}))
            }
            (None, _) => Some(msg),
        }
    }

    fn answer(&mut self, method: &str, params: &Value) -> Result<Value, Value> {
        match method {
            "session/request_permission" => {
                if let Some((path, text)) = self.typed_while_asked.take() {
                    self.buffers.insert(path, text);
                }
                Ok(json!({"outcome": {"outcome": "selected", "optionId": self.permission}}))
            }
            "fs/read_text_file" => {
                let path = params["path"].as_str().unwrap().to_string();
                if let Some(text) = self.buffers.get(&path) {
                    return Ok(json!({"content": text}));
                }
                match std::fs::read_to_string(&path) {
                    Ok(text) => Ok(json!({"content": text})),
                    Err(_) => Err(json!({"code": -32002, "message": "Resource not found"})),
                }
            }
            "fs/write_text_file" => {
                let path = params["path"].as_str().unwrap();
                std::fs::write(path, params["content"].as_str().unwrap()).unwrap();
                self.buffers.remove(path);
                Ok(json!(null))
            }
            other => Err(json!({"code": -32601, "message": format!("no {other}")})),
        }
    }

    /// Waits for the response to request `id`.
    pub fn response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let msg = self
                .pump(deadline)
                .unwrap_or_else(|| panic!("no response to {id}; updates: {:?}", self.updates));
            if msg.get("id") == Some(&json!(id)) && msg.get("method").is_none() {
                return msg;
            }
            if msg.get("id").is_some_and(Value::is_null) {
                self.updates.push(msg);
            }
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id)
    }

    /// Waits until an update satisfies `check`.
    pub fn wait_update(&mut self, what: &str, check: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !self.updates.iter().any(&check) {
            if self.pump(deadline).is_none() {
                panic!("no update: {what}; got {:?}", self.updates);
            }
        }
    }

    pub fn kinds(&self, kind: &str) -> Vec<Value> {
        self.updates
            .iter()
            .filter(|u| u["params"]["update"]["sessionUpdate"] == kind)
            .map(|u| u["params"]["update"].clone())
            .collect()
    }

    pub fn start_session(&mut self, s: &Scratch, fs: bool) -> String {
        let init = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs}}}),
        );
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        assert_eq!(
            init["result"]["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
            true
        );
        let new = self.call(
            "session/new",
            json!({"cwd": s.ws().display().to_string(), "mcpServers": []}),
        );
        let id = new["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{new}"))
            .to_string();
        assert_eq!(new["result"]["modes"]["currentModeId"], "default");
        id
    }

    pub fn close(mut self) -> std::process::ExitStatus {
        self.stdin.take();
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "troupe --acp did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn editor_prompt_with_parallel_reads_an_edit_permission_and_client_files() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("b.txt", "bravo on disk\n");
    let turns = [
        turn(vec![
            call("read_file", json!({"file_path": "a.txt"})),
            call("read_file", json!({"file_path": "b.txt"})),
            call(
                "replace",
                json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "omega"}),
            ),
        ]),
        turn(vec![text("Edited.")]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "new.txt", "content": "fresh\n"}),
        )]),
        turn(vec![text("Created.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    let b_path = s.ws().join("b.txt").display().to_string();
    ed.buffers
        .insert(b_path.clone(), "bravo UNSAVED in the editor\n".into());
    // A malformed line gets a parse error and the connection stays up.
    ed.send_raw("{not json");
    let sid = ed.start_session(&s, true);
    ed.wait_update("available commands", |u| {
        u["params"]["update"]["sessionUpdate"] == "available_commands_update"
    });
    assert!(
        ed.updates.iter().any(|u| u["error"]["code"] == -32700),
        "{:?}",
        ed.updates
    );

    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "edit a"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(s.read("a.txt"), "omega\n");

    // The permission request came with gemini-cli's options and the diff.
    let perm = ed
        .asked
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .expect("permission asked")
        .clone();
    let options: Vec<&str> = perm["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        [
            "proceed_always",
            "proceed_always_and_save",
            "proceed_once",
            "cancel"
        ]
    );
    let tool_call = &perm["params"]["toolCall"];
    assert_eq!(tool_call["kind"], "edit");
    assert_eq!(tool_call["content"][0]["type"], "diff");
    assert_eq!(tool_call["content"][0]["newText"], "omega\n");

    // Reads were announced with kind and locations, and finished with text.
    let calls = ed.kinds("tool_call");
    let reads: Vec<&Value> = calls.iter().filter(|c| c["kind"] == "read").collect();
    assert_eq!(reads.len(), 2, "{calls:?}");
    assert!(reads
        .iter()
        .any(|c| c["locations"][0]["path"] == b_path.as_str()));
    // Every call was announced (pending) when the model asked for it, the edit before
    // its permission request; then each started and completed.
    assert!(calls.iter().all(|c| c["status"] == "pending"), "{calls:?}");
    let updates = ed.kinds("tool_call_update");
    assert_eq!(updates.len(), 6, "{updates:?}");
    let started = updates.iter().filter(|u| u["status"] == "in_progress");
    assert_eq!(started.count(), 3, "{updates:?}");
    let edit = updates
        .iter()
        .find(|u| u["content"][0]["type"] == "diff")
        .expect("a diff update");
    assert_eq!(edit["status"], "completed");
    assert_eq!(edit["content"][0]["oldText"], "alpha\n");
    assert_eq!(edit["content"][0]["newText"], "omega\n");

    // The model saw the editor's unsaved buffer, not the disk.
    let responses = function_responses(&s.requests()[1]);
    assert!(
        responses[1]["response"]["output"]
            .as_str()
            .unwrap()
            .contains("bravo UNSAVED in the editor"),
        "{responses:?}"
    );
    // The edit went through the client.
    assert!(ed
        .asked
        .iter()
        .any(|m| m["method"] == "fs/write_text_file" && m["params"]["content"] == "omega\n"));

    // Yolo: a new file is created through the client (its "not found" is "absent").
    let mode = ed.call(
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "yolo"}),
    );
    assert!(mode.get("result").is_some(), "{mode}");
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "create"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(s.read("new.txt"), "fresh\n");
    assert!(ed
        .asked
        .iter()
        .any(|m| m["method"] == "fs/write_text_file" && m["params"]["content"] == "fresh\n"));
    assert!(ed.close().success());
}

#[test]
fn cancel_mid_turn_answers_every_call_and_ends_cancelled() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call("test_sleep", json!({"secs": 30}))]),
        turn(vec![text("After the cancel.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    let sid = ed.start_session(&s, false);
    ed.call(
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "yolo"}),
    );
    let id = ed.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "sleep"}]}),
    );
    ed.wait_update("the sleep runs", |u| {
        u["params"]["update"]["sessionUpdate"] == "tool_call"
    });
    ed.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}));
    let done = ed.response(id);
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    let update = ed.kinds("tool_call_update");
    assert_eq!(update.last().unwrap()["status"], "failed", "{update:?}");
    // The next prompt's history answers the cancelled call.
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "go on"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let history = s.requests()[1]["contents"].to_string();
    assert!(history.contains("\"functionResponse\""), "{history}");
    assert!(history.contains("test_sleep"), "{history}");
    assert!(ed.close().success());
}

#[test]
fn a_client_that_disconnects_mid_turn_leaves_nothing_running() {
    let s = Scratch::new();
    // Inside the workspace: the default sandbox (workspace-write) lets the command
    // write nowhere else.
    let pid_file = s.ws().join("shell.pid");
    let command = format!("echo $$ > {}; sleep 30", pid_file.display());
    let turns = [turn(vec![call(
        "run_shell_command",
        json!({"command": command}),
    )])];
    let mut ed = Editor::start(&s, &turns, &[]);
    let sid = ed.start_session(&s, false);
    ed.call(
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "yolo"}),
    );
    ed.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "sleep"}]}),
    );
    ed.wait_update("the command runs", |u| {
        u["params"]["update"]["sessionUpdate"] == "tool_call"
    });
    // The shell creates the file before it writes its pid: wait for the whole line.
    let deadline = Instant::now() + WAIT;
    let pid: i32 = loop {
        let written = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if let Some(pid) = written.strip_suffix('\n').and_then(|p| p.parse().ok()) {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    ed.close();
    // The shell runs in a process group of its own: nothing of it may survive.
    super::hooks::wait_group_gone(pid);
}

#[test]
fn hooks_fire_under_acp() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[[hooks.BeforeTool]]\ncommand = '''echo 'blocked in the editor' >&2; exit 2'''\n",
    )
    .unwrap();
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        turn(vec![text("ok")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    let sid = ed.start_session(&s, false);
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "read"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(
        function_responses(&s.requests()[1])[0]["response"]["error"],
        "Tool execution blocked: blocked in the editor"
    );
    assert!(ed.close().success());
}

#[test]
fn load_replays_a_recorded_session_and_continues_it() {
    let s = Scratch::new();
    let id = "2bf63e19-1111-4222-8333-444455556666";
    let chats = s.home().join(".troupe/tmp/ws/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let records = [
        json!({"sessionId": id, "projectHash": "abc", "startTime": "2026-11-23T08:51:00.000Z", "lastUpdated": "2026-11-23T08:52:00.000Z", "kind": "main"}),
        json!({"id": "m1", "timestamp": "t", "type": "user", "content": [{"text": "what is in a.txt?"}]}),
        json!({"id": "m2", "timestamp": "t", "type": "gemini", "content": "", "thoughts": [{"subject": "Plan", "description": "read it", "timestamp": "t"}],
               "toolCalls": [{"id": "read_file__read_file_1_0", "name": "read_file", "args": {"file_path": "a.txt"}, "status": "success",
                              "result": [{"functionResponse": {"id": "read_file_1_0", "name": "read_file", "response": {"output": "alpha"}}}]}]}),
        json!({"id": "m3", "timestamp": "t", "type": "gemini", "content": "It says alpha."}),
    ];
    let lines: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(chats.join("session-2026-11-23T08-51-2bf63e19.jsonl"), lines).unwrap();
    let turns = [turn(vec![text("Still alpha.")])];
    let mut ed = Editor::start(&s, &turns, &[]);
    let init = ed.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    let loaded = ed.call(
        "session/load",
        json!({"sessionId": id, "cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    assert_eq!(
        loaded["result"]["modes"]["currentModeId"], "default",
        "{loaded}"
    );
    let kinds: Vec<String> = ed
        .updates
        .iter()
        .filter(|u| u["params"]["sessionId"] == id)
        .map(|u| {
            u["params"]["update"]["sessionUpdate"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|k| k != "available_commands_update")
        .collect();
    assert_eq!(
        kinds,
        // Thoughts are not part of a resumed history (gemini-cli's resume drops them).
        ["user_message_chunk", "tool_call", "agent_message_chunk"]
    );
    let call = &ed.kinds("tool_call")[0];
    assert_eq!(call["status"], "completed");
    assert_eq!(call["content"][0]["content"]["text"], "alpha");
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "and now?"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let sent = s.requests()[0]["contents"].to_string();
    assert!(
        sent.contains("what is in a.txt?") && sent.contains("It says alpha."),
        "{sent}"
    );
    let missing = ed.call(
        "session/load",
        json!({"sessionId": "nope", "cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    assert!(missing["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Invalid session identifier"));
    assert!(ed.close().success());
}

#[test]
fn a_line_that_is_not_utf8_gets_a_parse_error_and_the_connection_stays_up() {
    let s = Scratch::new();
    let mut ed = Editor::start(&s, &[turn(vec![text("ok")])], &[]);
    ed.send_bytes(
        b"{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"initialize\",\"params\":{\"x\":\"\xff\xfe\"}}\n",
    );
    let sid = ed.start_session(&s, false);
    assert!(!sid.is_empty());
    let errors: Vec<&Value> = ed
        .updates
        .iter()
        .filter(|u| u.get("error").is_some())
        .collect();
    assert_eq!(errors.len(), 1, "{:?}", ed.updates);
    assert_eq!(errors[0]["error"]["code"], -32700, "{:?}", errors[0]);
    assert!(errors[0]["id"].is_null(), "{:?}", errors[0]);
    let status = ed.close();
    assert!(status.success(), "{status:?}");
}
