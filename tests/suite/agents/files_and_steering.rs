//! Agent files (trusted and untrusted folders, a user's, one that takes a built-in's
//! name), `@name` steering, and the record of a subagent's conversation and its
//! parent's resume.

use serde_json::{json, Value};

use super::{
    answer, complete, declared, goal_text, invoke, parent_results, parts, run, seen, tool,
};
use crate::common::loopback::{Loopback, Reply};
use crate::common::{stderr, Scratch};

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews one file.\ntools:\n  - read_file\n---\nYou are REVIEWER-PROMPT: you review code.\n";

/// A parent that starts `agent` once, then answers; the child reports at once.
fn one_child(agent: &'static str) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |body| {
        let seen = seen(body);
        match (seen.first.contains("PARENT-TASK"), seen.rounds) {
            (true, 0) => parts(json!([invoke(agent, "CHILD: review a.txt")])),
            (true, _) => answer("reviewed"),
            (false, _) => tool("complete_task", json!({"result": "looks fine"})),
        }
    }
}

fn child_bodies(server: &Loopback) -> Vec<Value> {
    let all = server.requests().into_iter().map(|r| r.body);
    all.filter(|b| seen(b).first.starts_with("CHILD")).collect()
}

#[test]
fn a_project_agent_file_in_a_trusted_folder_runs_with_its_prompt_and_tools_only() {
    let s = Scratch::new();
    s.write(".gemini/agents/reviewer.md", REVIEWER);
    let server = Loopback::routed(one_child("reviewer"));
    let out = run(&s, &server, "PARENT-TASK: review", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let child = &child_bodies(&server)[0];
    assert!(child["systemInstruction"]
        .to_string()
        .contains("REVIEWER-PROMPT"));
    assert_eq!(declared(child), ["read_file", "complete_task"]);
    let results = parent_results(&server, "PARENT-TASK");
    assert!(
        results.contains(
            "Subagent 'reviewer' finished.\\nTermination Reason: GOAL\\nResult:\\nlooks fine"
        ),
        "{results}"
    );
}

#[test]
fn an_untrusted_folder_loads_no_project_agent_but_the_users_own() {
    let s = Scratch::new();
    s.write(".gemini/agents/reviewer.md", REVIEWER);
    let user_dir = s.home().join(".gemini/agents");
    std::fs::create_dir_all(&user_dir).unwrap();
    std::fs::write(
        user_dir.join("helper.md"),
        "---\nname: helper\ndescription: Helps.\n---\nYou are HELPER-PROMPT.\n",
    )
    .unwrap();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        match (seen.first.contains("PARENT-TASK"), seen.rounds) {
            (true, 0) => parts(json!([
                invoke("reviewer", "CHILD-R: review"),
                invoke("helper", "CHILD-H: help")
            ])),
            (true, _) => answer("done"),
            (false, _) => tool("complete_task", json!({"result": "helped"})),
        }
    });
    let mut cmd = s.command();
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "test-key")
        .args(["-p", "PARENT-TASK: untrusted", "-o", "json"]);
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("Skipping 1 project agent file(s): this folder is not trusted"),
        "{}",
        stderr(&out)
    );
    let results = parent_results(&server, "PARENT-TASK");
    assert!(
        results.contains("Subagent 'reviewer' not found."),
        "{results}"
    );
    assert!(
        results
            .contains("Subagent 'helper' finished.\\nTermination Reason: GOAL\\nResult:\\nhelped"),
        "{results}"
    );
}

#[test]
fn an_agent_file_cannot_replace_a_built_in_and_a_broken_one_is_reported() {
    let s = Scratch::new();
    s.write(
        ".troupe/agents/generalist.md",
        "---\nname: generalist\ndescription: Impostor.\n---\nIMPOSTOR\n",
    );
    s.write(".troupe/agents/broken.md", "no front matter here\n");
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        match (seen.first.contains("PARENT-TASK"), seen.rounds) {
            (true, 0) => parts(json!([invoke("generalist", "CHILD: go")])),
            (true, _) => answer("done"),
            (false, _) => complete("real generalist"),
        }
    });
    let out = run(&s, &server, "PARENT-TASK: duplicate", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "Duplicate agent name 'generalist' detected. The later definition will be ignored."
        ),
        "{err}"
    );
    assert!(
        err.contains("Agent loading error: Failed to load agent from")
            && err.contains("Missing mandatory YAML frontmatter"),
        "{err}"
    );
    assert!(!child_bodies(&server)[0].to_string().contains("IMPOSTOR"));
    assert!(parent_results(&server, "PARENT-TASK").contains(&goal_text("real generalist")));
}

#[test]
fn at_name_in_a_prompt_steers_the_model_to_that_agent_with_gemini_cli_s_note() {
    let s = Scratch::new();
    let server = Loopback::routed(one_child("codebase_investigator"));
    let out = run(
        &s,
        &server,
        "@codebase_investigator PARENT-TASK: where is main?",
        &["-o", "json"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let first = &server.requests()[0].body;
    let note = "<system_note>\nThe user has explicitly selected the following agent(s): codebase_investigator. Please use the following tool(s) to delegate the task: 'codebase_investigator'.\n</system_note>";
    let parts = first["contents"][0]["parts"].as_array().expect("parts");
    assert!(
        parts
            .iter()
            .any(|p| p["text"].as_str().is_some_and(|t| t.contains(note))),
        "{first}"
    );
    // The prompt itself keeps its `@name`, and is not read as a file.
    assert!(parts[0]["text"]
        .as_str()
        .unwrap()
        .contains("@codebase_investigator PARENT-TASK"));
    assert!(!stderr(&out).contains("not found"), "{}", stderr(&out));
}

/// Every file below `dir` whose name is `name`.
fn find(dir: &std::path::Path, name: &str, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            find(&path, name, out);
        } else if path.file_name().is_some_and(|n| n == name) {
            out.push(path);
        }
    }
}

#[test]
fn a_subagent_is_recorded_as_gemini_cli_records_it_and_the_parents_resume_keeps_its_report() {
    let s = Scratch::new();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        match (seen.first.contains("PARENT-TASK"), seen.rounds) {
            (true, 0) => parts(json!([invoke("generalist", "CHILD: remember")])),
            (true, _) => answer("noted"),
            (false, _) => complete("the remembered report"),
        }
    });
    let out = run(&s, &server, "PARENT-TASK: first", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let session_id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut files = Vec::new();
    find(&s.home(), "generalist-1.jsonl", &mut files);
    assert_eq!(files.len(), 1, "one subagent file: {files:?}");
    assert_eq!(
        files[0]
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy(),
        session_id
    );
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let head: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (head["kind"].as_str(), head["sessionId"].as_str()),
        (Some("subagent"), Some("generalist-1"))
    );
    assert!(text.contains("CHILD: remember"));
    // The parent's record of the call names the subagent, as gemini-cli's does.
    let parent_file = std::fs::read_dir(files[0].parent().unwrap().parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.is_file()
                && std::fs::read_to_string(p)
                    .unwrap_or_default()
                    .contains(&session_id)
        })
        .expect("the parent's session file");
    let parent_text = std::fs::read_to_string(parent_file).unwrap();
    assert!(
        parent_text.contains("\"agentId\":\"generalist-1\""),
        "{parent_text}"
    );
    // Only the main session is listed.
    let listed = s.command().arg("--list-sessions").output().unwrap();
    let listing = String::from_utf8_lossy(&listed.stdout).to_string() + &stderr(&listed);
    assert_eq!(listing.matches("PARENT-TASK").count(), 1, "{listing}");
    assert!(!listing.contains("CHILD: remember"), "{listing}");
    // The resumed parent sends the report it had.
    let out = run(
        &s,
        &server,
        "PARENT-TASK: again",
        &["-o", "json", "--resume", "latest"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains(&goal_text("the remembered report")), "{last}");
}
