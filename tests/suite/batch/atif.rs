//! ATIF trajectories checked by Harbor's own model (`harbor.models.trajectories.
//! Trajectory`, from the `harbor` package in `target/harbor-venv`, which `.ci/test`
//! makes), and `--trajectory` on a `-p` run.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{call, stderr, text, turn, Scratch};

/// Every `trajectory.json` among `files` validates as Harbor's `Trajectory`.
pub fn assert_valid(files: &[PathBuf]) {
    let trajectories: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n == "trajectory.json" || n.to_string_lossy().ends_with(".json"))
        })
        .collect();
    assert!(!trajectories.is_empty(), "no trajectory among {files:?}");
    let python = crate::common::harbor::venv_python();
    let check = "import sys\nfrom harbor.models.trajectories import Trajectory\nfor p in sys.argv[1:]:\n    t = Trajectory.model_validate_json(open(p).read())\n    print(p, len(t.steps))\n";
    let out = Command::new(python)
        .arg("-c")
        .arg(check)
        .args(&trajectories)
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "Harbor's Trajectory model refused a trajectory:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        trajectories.len()
    );
}

#[test]
fn a_p_run_keeps_its_trajectory_with_the_calls_and_their_results() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let path = s.root().join("run/trajectory.json");
    let path_arg = path.to_string_lossy().into_owned();
    let out = s.run(
        &[
            turn(vec![
                text("Reading."),
                call("read_file", json!({"file_path": "a.txt"})),
            ]),
            turn(vec![text("It says alpha.")]),
        ],
        &["-p", "what does a.txt say?", "--trajectory", &path_arg],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("trajectory written"))
            .expect("json");
    assert_eq!(doc["agent"]["name"], "troupe");
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 3, "{doc}");
    assert_eq!(steps[0]["source"], "user");
    assert_eq!(steps[0]["message"], "what does a.txt say?");
    assert_eq!(steps[1]["message"], "Reading.");
    assert_eq!(steps[1]["tool_calls"][0]["function_name"], "read_file");
    let result = &steps[1]["observation"]["results"][0];
    assert_eq!(
        result["source_call_id"],
        steps[1]["tool_calls"][0]["tool_call_id"]
    );
    assert!(
        result["content"].as_str().unwrap_or("").contains("alpha"),
        "{result}"
    );
    assert_eq!(steps[2]["message"], "It says alpha.");
    assert_eq!(doc["final_metrics"]["total_steps"], 3);
    assert_valid(&[path]);
}

#[test]
fn a_subagents_run_is_embedded_in_its_parents_trajectory() {
    use crate::common::loopback::Loopback;
    use crate::suite::agents::{answer, complete, invoke, parts, seen, tool};
    let s = Scratch::new();
    s.write("notes.txt", "alpha\n");
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        match (seen.first.starts_with("CHILD"), seen.rounds) {
            (false, 0) => parts(json!([invoke("generalist", "CHILD: read notes.txt")])),
            (false, _) => answer("The child read it."),
            (true, 0) => tool("read_file", json!({"file_path": "notes.txt"})),
            (true, _) => complete("it says alpha"),
        }
    });
    let path = s.root().join("agents.json");
    let path_arg = path.to_string_lossy().into_owned();
    let out = crate::suite::agents::run(
        &s,
        &server,
        "delegate the reading",
        &["--trajectory", &path_arg],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("written")).expect("json");
    let call = &doc["steps"][1];
    assert_eq!(
        call["tool_calls"][0]["function_name"], "invoke_agent",
        "{doc}"
    );
    let reference = &call["observation"]["results"][0]["subagent_trajectory_ref"][0];
    let id = reference["trajectory_id"].as_str().expect("a reference");
    let sub = &doc["subagent_trajectories"][0];
    assert_eq!(sub["trajectory_id"], id);
    assert_eq!(sub["agent"]["extra"]["subagent"], "generalist");
    assert_eq!(sub["steps"][0]["message"], "CHILD: read notes.txt");
    let child_calls: Vec<&str> = sub["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["tool_calls"].as_array())
        .flatten()
        .filter_map(|c| c["function_name"].as_str())
        .collect();
    assert_eq!(child_calls, ["read_file", "complete_task"], "{sub}");
    assert_valid(&[path]);
}

#[test]
fn an_acp_session_keeps_a_trajectory_of_its_own() {
    use crate::common::loopback::{Loopback, Reply};
    use crate::suite::acp::Editor;
    let s = Scratch::new();
    s.write("notes.txt", "some notes\n");
    let chunk = |parts: Value| {
        Reply::gemini_sse(&[
            json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 55}}),
        ])
    };
    let server = Loopback::start(vec![
        chunk(json!([{"functionCall": {"name": "read_file", "args": {"file_path": "notes.txt"}}}])),
        chunk(json!([{"text": "Read it."}])),
    ]);
    let base = s.root().join("acp.json");
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "k")
        .arg("--trajectory")
        .arg(&base);
    let mut ed = Editor::spawn(cmd);
    ed.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let new = ed.call(
        "session/new",
        json!({"cwd": s.ws().display().to_string(), "mcpServers": []}),
    );
    let sid = new["result"]["sessionId"]
        .as_str()
        .expect("session id")
        .to_string();
    let answer = ed.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Read notes.txt"}]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // Written before the turn's end was reported: there as soon as the answer is.
    let path = s.root().join(format!("acp.{sid}.json"));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("per-session file"))
            .expect("json");
    assert_eq!(doc["session_id"], sid.as_str());
    assert_eq!(
        doc["steps"][1]["tool_calls"][0]["function_name"],
        "read_file"
    );
    assert_eq!(doc["steps"][2]["message"], "Read it.");
    assert!(ed.close().success());
    assert_valid(&[path]);
}
