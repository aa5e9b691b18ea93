//! Subagents (`invoke_agent`), tried as a user would: the real `troupe` binary against
//! a loopback Gemini API that answers each request by what it holds (the parent's
//! prompt or a child's, and how many rounds in), so the parent and its children may
//! send in any order. Each test observes what happened — a gate only several
//! requests in flight together can pass, the results the parent was sent, the file on
//! disk — never how long it took.

mod budget_and_limits;
mod files_and_steering;
mod in_process;

use std::process::Output;

use serde_json::{json, Value};

use crate::common::loopback::{Gate, Loopback, Reply};
use crate::common::{stderr, Scratch};

/// What a request is, read off its body.
pub struct Seen {
    /// The text of its first user content (the parent's prompt, or a child's query).
    pub first: String,
    /// The model turns already in its history.
    pub rounds: usize,
    /// The whole body as text.
    pub raw: String,
}

pub fn seen(body: &Value) -> Seen {
    let contents = body["contents"].as_array().cloned().unwrap_or_default();
    let first = contents
        .first()
        .and_then(|c| c["parts"].as_array())
        .map(|parts| {
            let texts = parts.iter().filter_map(|p| p["text"].as_str());
            texts.collect::<Vec<_>>().join("\n")
        })
        .unwrap_or_default();
    let rounds = contents.iter().filter(|c| c["role"] == "model").count();
    Seen {
        first,
        rounds,
        raw: body.to_string(),
    }
}

/// The names of the tools a request declares.
pub fn declared(body: &Value) -> Vec<String> {
    let decls = body["tools"][0]["functionDeclarations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    decls
        .iter()
        .filter_map(|d| d["name"].as_str().map(String::from))
        .collect()
}

/// A Gemini stream whose one chunk holds `parts`.
pub fn parts(parts: Value) -> Reply {
    Reply::gemini_sse(&[json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
    })])
}

pub fn answer(text: &str) -> Reply {
    parts(json!([{"text": text}]))
}

pub fn invoke(agent: &str, prompt: &str) -> Value {
    json!({"functionCall": {"name": "invoke_agent", "args": {"agent_name": agent, "prompt": prompt}}})
}

pub fn complete(response: &str) -> Reply {
    parts(
        json!([{"functionCall": {"name": "complete_task", "args": {"result": {"response": response}}}}]),
    )
}

pub fn tool(name: &str, args: Value) -> Reply {
    parts(json!([{"functionCall": {"name": name, "args": args}}]))
}

/// The parent's request after its children reported: the results it was sent.
pub fn parent_results(server: &Loopback, parent_marker: &str) -> String {
    server
        .requests()
        .iter()
        .rev()
        .map(|r| seen(&r.body))
        .find(|s| s.first.contains(parent_marker) && s.rounds >= 1)
        .map(|s| s.raw)
        .unwrap_or_default()
}

/// `troupe -p PROMPT` against `server`, headless, with `extra` arguments.
pub fn run(s: &Scratch, server: &Loopback, prompt: &str, extra: &[&str]) -> Output {
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "test-key")
        .args([
            "-c",
            "model.retry.initial_delay_ms=1",
            "-c",
            "model.retry.max_delay_ms=5",
        ])
        .args(["--skip-trust", "-p", prompt])
        .args(extra);
    cmd.output().expect("run troupe")
}

/// A result of the generalist as the parent is sent it (gemini-cli 0.61's text; the
/// JSON of the output is in the request as an escaped string).
pub fn goal_text(response: &str) -> String {
    let text = format!(
        "Subagent 'generalist' finished.\nTermination Reason: GOAL\nResult:\n{{\n  \"response\": \"{response}\"\n}}"
    );
    // As it appears inside the request's JSON.
    let quoted = Value::String(text).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

#[test]
fn three_generalists_of_one_answer_are_in_flight_together_and_each_reports() {
    let s = Scratch::new();
    let gate = Gate::new(3);
    let g = gate.clone();
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        match (seen.first.as_str(), seen.rounds) {
            (f, 0) if f.contains("PARENT-TASK") => parts(json!([
                invoke("generalist", "CHILD-A: report alpha"),
                invoke("generalist", "CHILD-B: report beta"),
                invoke("generalist", "CHILD-C: report gamma"),
            ])),
            (f, _) if f.contains("PARENT-TASK") => answer("All three reported."),
            (f, _) if f.starts_with("CHILD-A") => complete("alpha").at_gate(&g),
            (f, _) if f.starts_with("CHILD-B") => complete("beta").at_gate(&g),
            (f, _) if f.starts_with("CHILD-C") => complete("gamma").at_gate(&g),
            (f, r) => answer(&format!("unexpected request {r}: {f}")),
        }
    });
    let out = run(
        &s,
        &server,
        "PARENT-TASK: ask three helpers",
        &["-o", "json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(
        gate.met(),
        "the three children's requests were not in flight together"
    );
    let results = parent_results(&server, "PARENT-TASK");
    for word in ["alpha", "beta", "gamma"] {
        assert!(
            results.contains(&goal_text(word)),
            "no GOAL report {word} in {results}"
        );
    }
    // Each child's requests hold its own query and none of the parent's conversation.
    let children: Vec<Seen> = server
        .requests()
        .iter()
        .map(|r| seen(&r.body))
        .filter(|s| s.first.starts_with("CHILD-"))
        .collect();
    assert_eq!(children.len(), 3);
    for child in &children {
        assert!(
            !child.raw.contains("PARENT-TASK"),
            "a child saw the parent's prompt"
        );
    }
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["response"], "All three reported.");
    assert_eq!(report["stats"]["agents"]["generalist"]["count"], 3);
    assert_eq!(
        report["stats"]["agents"]["generalist"]["terminationReasons"]["GOAL"],
        3
    );
}

#[test]
fn two_children_rewriting_one_file_they_both_read_never_both_succeed() {
    let s = Scratch::new();
    s.write("shared.txt", "original\n");
    let gate = Gate::new(2);
    let g = gate.clone();
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        let child = |name: &str| seen.first.starts_with(name);
        match seen.rounds {
            0 if seen.first.contains("PARENT-TASK") => parts(json!([
                invoke("generalist", "CHILD-A: rewrite shared.txt"),
                invoke("generalist", "CHILD-B: rewrite shared.txt"),
            ])),
            _ if seen.first.contains("PARENT-TASK") => answer("done"),
            0 => tool("read_file", json!({"file_path": "shared.txt"})),
            // Both have read the file before either writes.
            1 if child("CHILD-A") => tool(
                "write_file",
                json!({"file_path": "shared.txt", "content": "from A\n"}),
            )
            .at_gate(&g),
            1 => tool(
                "write_file",
                json!({"file_path": "shared.txt", "content": "from B\n"}),
            )
            .at_gate(&g),
            _ => complete("wrote"),
        }
    });
    let out = run(
        &s,
        &server,
        "PARENT-TASK: two writers",
        &["-o", "json", "--yolo"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(
        gate.met(),
        "the two children did not both read before writing"
    );
    // The write_file results the children were sent, in their last requests.
    let mut written = 0;
    let mut refused = Vec::new();
    for r in server.requests() {
        let seen = seen(&r.body);
        if seen.rounds != 2 || !seen.first.starts_with("CHILD-") {
            continue;
        }
        let last = r.body["contents"]
            .as_array()
            .and_then(|c| c.last())
            .cloned()
            .unwrap_or_default();
        let response = last.to_string();
        if response.contains("Successfully overwrote file") {
            written += 1;
        } else {
            refused.push(response);
        }
    }
    assert_eq!(
        written, 1,
        "exactly one rewrite succeeds; refused: {refused:?}"
    );
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].contains("was changed") || refused[0].contains("changed on disk"),
        "the refusal says why: {}",
        refused[0]
    );
    let content = s.read("shared.txt");
    assert!(
        content == "from A\n" || content == "from B\n",
        "got {content:?}"
    );
}

#[test]
fn a_stale_whole_file_rewrite_after_another_agents_write_is_refused_naming_that_agent() {
    let s = Scratch::new();
    s.write("shared.txt", "original\n");
    let (both_read, a_wrote) = (Gate::new(2), Gate::new(2));
    let (g1, g2) = (both_read.clone(), a_wrote.clone());
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        let a = seen.first.starts_with("CHILD-A");
        match seen.rounds {
            0 if seen.first.contains("PARENT-TASK") => parts(json!([
                invoke("generalist", "CHILD-A: rewrite shared.txt"),
                invoke("generalist", "CHILD-B: rewrite shared.txt"),
            ])),
            _ if seen.first.contains("PARENT-TASK") => answer("done"),
            0 => tool("read_file", json!({"file_path": "shared.txt"})),
            1 if a => tool(
                "write_file",
                json!({"file_path": "shared.txt", "content": "from A\n"}),
            )
            .at_gate(&g1),
            // B writes only once A has written (A's next request is at the second gate).
            1 => tool(
                "write_file",
                json!({"file_path": "shared.txt", "content": "from B\n"}),
            )
            .at_gate(&g1)
            .at_gate(&g2),
            2 if a => complete("wrote").at_gate(&g2),
            _ => complete("refused"),
        }
    });
    let out = run(
        &s,
        &server,
        "PARENT-TASK: two writers, one after the other",
        &["-o", "json", "--yolo"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(both_read.met() && a_wrote.met());
    assert_eq!(s.read("shared.txt"), "from A\n", "A's change is kept");
    let b_result = server
        .requests()
        .iter()
        .map(|r| seen(&r.body))
        .find(|s| s.first.starts_with("CHILD-B") && s.rounds == 2)
        .expect("B's request after its write")
        .raw;
    assert!(
        b_result.contains("was changed by agent generalist-")
            && b_result.contains(" (generalist) after you last read it"),
        "{b_result}"
    );
}

#[test]
fn two_children_replacing_lines_of_one_file_at_once_both_apply() {
    let s = Scratch::new();
    s.write("shared.txt", "alpha = 1\nbeta = 2\n");
    let gate = Gate::new(2);
    let g = gate.clone();
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        let a = seen.first.starts_with("CHILD-A");
        match seen.rounds {
            0 if seen.first.contains("PARENT-TASK") => parts(json!([
                invoke("generalist", "CHILD-A: change alpha"),
                invoke("generalist", "CHILD-B: change beta"),
            ])),
            _ if seen.first.contains("PARENT-TASK") => answer("done"),
            0 => tool("read_file", json!({"file_path": "shared.txt"})),
            // Both have read the original; their edits go out together.
            1 if a => tool("replace", json!({"file_path": "shared.txt", "instruction": "alpha", "old_string": "alpha = 1", "new_string": "alpha = 10"})).at_gate(&g),
            1 => tool("replace", json!({"file_path": "shared.txt", "instruction": "beta", "old_string": "beta = 2", "new_string": "beta = 20"})).at_gate(&g),
            _ => complete("edited"),
        }
    });
    let out = run(
        &s,
        &server,
        "PARENT-TASK: two editors",
        &["-o", "json", "--yolo"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(gate.met());
    assert_eq!(
        s.read("shared.txt"),
        "alpha = 10\nbeta = 20\n",
        "both edits applied"
    );
}

#[test]
fn a_child_whose_model_fails_fails_alone_and_the_run_succeeds() {
    let s = Scratch::new();
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        match seen.first.as_str() {
            f if f.contains("PARENT-TASK") && seen.rounds == 0 => parts(json!([
                invoke("generalist", "CHILD-OK: report fine"),
                invoke("generalist", "CHILD-BAD: this one fails"),
            ])),
            f if f.contains("PARENT-TASK") => answer("One failed, one reported."),
            f if f.starts_with("CHILD-OK") => complete("fine"),
            _ => Reply::json(
                400,
                &json!({"error": {"code": 400, "message": "Invalid request for this child.", "status": "INVALID_ARGUMENT"}}),
            ),
        }
    });
    let out = run(
        &s,
        &server,
        "PARENT-TASK: one of two fails",
        &["-o", "json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let results = parent_results(&server, "PARENT-TASK");
    assert!(results.contains(&goal_text("fine")), "{results}");
    assert!(
        results.contains("Subagent 'generalist' failed. Error: "),
        "{results}"
    );
    assert!(
        results.contains("Invalid request for this child."),
        "{results}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["response"], "One failed, one reported.");
}

#[test]
fn with_max_concurrent_two_five_children_all_report_and_at_most_two_run_at_once() {
    let s = Scratch::new();
    // The first two children meet at the gate: two do run at once.
    let gate = Gate::new(2);
    let g = gate.clone();
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        match seen.first.as_str() {
            f if f.contains("PARENT-TASK") && seen.rounds == 0 => parts(Value::Array(
                (1..=5)
                    .map(|i| invoke("generalist", &format!("CHILD-{i}: report {i}")))
                    .collect(),
            )),
            f if f.contains("PARENT-TASK") => answer("five reported"),
            _ if seen.rounds == 0 => tool("list_directory", json!({"dir_path": "."})).at_gate(&g),
            f => complete(&format!("r{}", &f[6..7])),
        }
    });
    let out = run(
        &s,
        &server,
        "PARENT-TASK: five helpers",
        &["-o", "stream-json", "-c", "agents.max_concurrent=2"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(gate.met());
    assert!(
        server.peak_in_flight() <= 2,
        "{} requests in flight at once",
        server.peak_in_flight()
    );
    // The children as the run told them: never more than two between start and end,
    // and those that waited (up to three) said which setting held them.
    let (mut active, mut most, mut queued) = (0i32, 0i32, 0);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let event: Value = serde_json::from_str(line).expect("json line");
        match event["type"].as_str() {
            Some("agent_start") => active += 1,
            Some("agent_end") => active -= 1,
            Some("agent_queued") => {
                assert_eq!(event["reason"], "agents.max_concurrent");
                queued += 1;
            }
            _ => {}
        }
        most = most.max(active);
    }
    assert_eq!((most, active), (2, 0));
    assert!(
        (1..=3).contains(&queued),
        "{queued} children said they waited"
    );
    let results = parent_results(&server, "PARENT-TASK");
    for i in 1..=5 {
        assert!(
            results.contains(&goal_text(&format!("r{i}"))),
            "no report {i}: {results}"
        );
    }
}

#[test]
fn stream_json_shows_each_child_with_its_agent_id_and_parent_id() {
    let s = Scratch::new();
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        match seen.first.as_str() {
            f if f.contains("PARENT-TASK") && seen.rounds == 0 => {
                parts(json!([invoke("generalist", "CHILD-A: list and report")]))
            }
            f if f.contains("PARENT-TASK") => answer("ok"),
            _ if seen.rounds == 0 => tool("list_directory", json!({"dir_path": "."})),
            _ => complete("listed"),
        }
    });
    let out = run(&s, &server, "PARENT-TASK: stream", &["-o", "stream-json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let session_id = lines[0]["session_id"].as_str().expect("init").to_string();
    let start = lines
        .iter()
        .find(|l| l["type"] == "agent_start")
        .expect("agent_start");
    assert_eq!(start["name"], "generalist");
    assert_eq!(start["parent_id"], session_id);
    let agent_id = start["agent_id"].as_str().expect("agent_id").to_string();
    assert!(agent_id.starts_with("generalist-"));
    let child_call = lines
        .iter()
        .find(|l| l["type"] == "tool_use" && l["tool_name"] == "list_directory")
        .expect("the child's tool_use");
    assert_eq!(child_call["agent_id"], agent_id);
    assert_eq!(child_call["parent_id"], session_id);
    let end = lines
        .iter()
        .find(|l| l["type"] == "agent_end")
        .expect("agent_end");
    assert_eq!(end["termination_reason"], "GOAL");
    assert_eq!(end["turns"], 2);
    assert_eq!(end["tool_calls"], 2);
    // The parent's own invoke_agent call has no agent id.
    let parent_call = lines
        .iter()
        .find(|l| l["type"] == "tool_use" && l["tool_name"] == "invoke_agent")
        .expect("the parent's call");
    assert!(parent_call.get("agent_id").is_none());
    assert_eq!(end["tool_id"], parent_call["tool_id"]);
}

#[test]
fn over_acp_the_invoke_agent_call_streams_its_childs_steps_and_the_childs_approval_names_it() {
    let s = Scratch::new();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        match (seen.first.contains("PARENT-TASK"), seen.rounds) {
            (true, 0) => parts(json!([invoke("generalist", "CHILD: write a note")])),
            (true, _) => answer("noted"),
            (false, 0) => tool(
                "write_file",
                json!({"file_path": "note.txt", "content": "hi\n"}),
            ),
            (false, _) => complete("wrote the note"),
        }
    });
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "test-key")
        .arg("--skip-trust");
    let mut ed = super::acp::Editor::spawn(cmd);
    let sid = ed.start_session(&s, false);
    let done = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "PARENT-TASK: note"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let invoke_id = ed
        .kinds("tool_call")
        .into_iter()
        .find(|u| u["rawInput"]["agent_name"] == "generalist")
        .expect("the invoke_agent call")["toolCallId"]
        .clone();
    let progress: Vec<String> = ed
        .kinds("tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == invoke_id && u["status"] == "in_progress")
        .map(|u| u["content"].to_string())
        .collect();
    assert!(
        progress
            .iter()
            .any(|c| c.contains("generalist-1 (generalist) started")),
        "{progress:?}"
    );
    assert!(
        progress
            .iter()
            .any(|c| c.contains("generalist-1 (generalist) ✓ write_file")),
        "{progress:?}"
    );
    // The child's write asked the editor, named as the child's.
    let asked = ed
        .asked
        .iter()
        .find(|r| r["method"] == "session/request_permission")
        .expect("a permission request");
    let title = asked["params"]["toolCall"]["title"]
        .as_str()
        .unwrap_or_default();
    assert!(title.starts_with("[generalist-1 (generalist)] "), "{title}");
    assert_eq!(s.read("note.txt"), "hi\n");
    assert!(ed.close().success());
}

#[test]
fn an_acp_cancel_ends_every_subagent_and_the_next_prompt_sees_each_call_answered() {
    let s = Scratch::new();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        match (seen.first.contains("PARENT-TASK"), seen.rounds) {
            (true, 0) => parts(json!([
                invoke("generalist", "CHILD-A: wait"),
                invoke("generalist", "CHILD-B: wait"),
            ])),
            (true, _) => answer("after the cancel"),
            // The children's model never answers in time.
            (false, _) => answer("late").delayed(std::time::Duration::from_secs(60)),
        }
    });
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "test-key")
        .arg("--skip-trust");
    let mut ed = super::acp::Editor::spawn(cmd);
    let sid = ed.start_session(&s, false);
    let id = ed.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "PARENT-TASK: wait"}]}),
    );
    ed.wait_update("both children run", |u| {
        u["params"]["update"]["content"]
            .to_string()
            .contains("generalist-2 (generalist) started")
    });
    ed.wait_update("the first child runs", |u| {
        u["params"]["update"]["content"]
            .to_string()
            .contains("generalist-1 (generalist) started")
    });
    ed.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}));
    let done = ed.response(id);
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    // The next turn's history answers both invoke_agent calls.
    let next = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "PARENT-TASK: go on"}]}),
    );
    assert_eq!(next["result"]["stopReason"], "end_turn", "{next}");
    let last = server.requests().last().expect("a request").body.clone();
    let answered = last["contents"]
        .to_string()
        .matches("\"name\":\"invoke_agent\",\"response\"")
        .count();
    assert_eq!(answered, 2, "{last}");
    assert!(ed.close().success());
}

#[test]
fn over_acp_one_subagent_is_stopped_by_number_and_its_sibling_reports() {
    let s = Scratch::new();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        match (seen.first.as_str(), seen.rounds) {
            (f, 0) if f.contains("PARENT-TASK") => parts(json!([
                invoke("generalist", "CHILD-SLOW: wait"),
                invoke("generalist", "CHILD-FAST: report"),
            ])),
            (f, _) if f.contains("PARENT-TASK") => answer("one stopped, one reported"),
            (f, _) if f.starts_with("CHILD-FAST") => complete("fast report"),
            // The slow child's model never answers in time.
            _ => answer("late").delayed(std::time::Duration::from_secs(60)),
        }
    });
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "test-key")
        .arg("--skip-trust");
    let mut ed = super::acp::Editor::spawn(cmd);
    let sid = ed.start_session(&s, false);
    let id = ed.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "PARENT-TASK: two"}]}),
    );
    ed.wait_update("the fast child reported", |u| {
        u["params"]["update"]["content"]
            .to_string()
            .contains("(generalist) GOAL")
    });
    let listed = ed.call("_troupe/agents/list", json!({"sessionId": sid}));
    let agents = listed["result"]["agents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut states: Vec<String> = agents
        .iter()
        .map(|a| a["state"].as_str().unwrap().to_string())
        .collect();
    states.sort();
    assert_eq!(states, ["GOAL", "running"], "{listed}");
    let slow = agents.iter().find(|a| a["state"] == "running").unwrap()["number"]
        .as_u64()
        .unwrap();
    let cancelled = ed.call(
        "_troupe/agents/cancel",
        json!({"sessionId": sid, "number": slow}),
    );
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    let done = ed.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let results = parent_results(&server, "PARENT-TASK");
    assert!(results.contains("Termination Reason: ABORTED"), "{results}");
    assert!(results.contains(&goal_text("fast report")), "{results}");
    let again = ed.call(
        "_troupe/agents/cancel",
        json!({"sessionId": sid, "number": slow}),
    );
    let message = again["error"]["message"].as_str().unwrap_or("").to_string();
    assert!(
        message.contains(&format!("there is no running subagent {slow}")),
        "{again}"
    );
    assert!(ed.close().success());
}
