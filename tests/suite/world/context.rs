//! Context files, memory and the system prompt, seen in what the model is sent.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

fn system_text(request: &Value) -> String {
    request["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no system instruction in {request}"))
        .to_string()
}

fn block(path: &Path, text: &str) -> String {
    let p = path.display();
    format!("--- Context from: {p} ---\n{text}\n--- End of Context from: {p} ---")
}

#[test]
fn save_memory_then_a_new_session_has_the_fact_in_its_system_prompt() {
    let s = Scratch::new();
    let memory = s.home().join(".troupe/AGENTS.md");
    let turns = [
        turn(vec![call(
            "save_memory",
            json!({"fact": "- The user's favourite\ncolour is <teal>"}),
        )]),
        turn(vec![text("noted")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "remember this", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(out["stats"]["tools"]["totalSuccess"], 1);
    let r = &function_responses(&s.requests()[1])[0];
    assert_eq!(
        r["response"]["output"],
        json!({"success": true, "message": "Okay, I've remembered that: \"The user's favourite colour is  teal \""}).to_string()
    );
    assert_eq!(
        std::fs::read_to_string(&memory).expect("memory file"),
        "## Troupe Added Memories\n- The user's favourite colour is  teal \n"
    );
    let first_prompt = system_text(&s.requests()[0]);
    assert!(!first_prompt.contains("favourite colour"));

    let (_, proc) = s.run_json(&[turn(vec![text("hi")])], &["-p", "hello"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    let prompt = system_text(requests.last().unwrap());
    assert!(
        prompt.contains(&block(
            &memory,
            "## Troupe Added Memories\n- The user's favourite colour is  teal"
        )),
        "{prompt}"
    );
}

#[test]
fn save_memory_asks_in_default_mode() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call("save_memory", json!({"fact": "likes tea"}))]),
        turn(vec![text("ok")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    // A refused call ends the run with 54.
    assert_eq!(proc.status.code(), Some(54), "{}", stderr(&proc));
    let r = &function_responses(&s.requests()[1])[0];
    let err = r["response"]["error"].as_str().unwrap();
    assert!(err.contains("needs the user's approval"), "{err}");
    assert!(!s.home().join(".troupe/AGENTS.md").exists());
}

#[test]
fn context_files_from_the_git_root_down_to_the_workspace_in_order() {
    let s = Scratch::new();
    let ws = s.ws();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(s.home().join(".troupe")).unwrap();
    std::fs::write(s.home().join(".troupe/GEMINI.md"), "Global: be brief.\n").unwrap();
    s.write("AGENTS.md", "Root: run `make test`.\n");
    s.write("app/GEMINI.md", "App: Python 3.12 only.\n");
    s.write("app/AGENTS.md", "App: use pytest.\n");
    s.write("other/AGENTS.md", "Other: never shown.\n");
    let script = s.script(&[turn(vec![text("hi")])]);
    let out = s
        .command()
        .current_dir(ws.join("app"))
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "hello"])
        .output()
        .expect("run troupe");
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = system_text(&s.requests()[0]);
    let expected = [
        block(&s.home().join(".troupe/GEMINI.md"), "Global: be brief."),
        block(&ws.join("AGENTS.md"), "Root: run `make test`."),
        block(&ws.join("app/AGENTS.md"), "App: use pytest."),
        block(&ws.join("app/GEMINI.md"), "App: Python 3.12 only."),
    ]
    .join("\n\n");
    assert!(prompt.ends_with(&expected), "{prompt}");
    assert!(!prompt.contains("never shown"));
    assert!(prompt.contains("- Git repository: yes"));
    assert!(prompt.contains(&format!("- Workspace roots: {}", ws.join("app").display())));
}

#[test]
fn files_near_a_touched_path_join_that_tool_output_once() {
    let s = Scratch::new();
    s.write("AGENTS.md", "Root rule.\n");
    s.write("pkg/AGENTS.md", "Pkg rule: @docs/extra.md\n");
    s.write("pkg/docs/extra.md", "Imported detail.\n");
    s.write("pkg/a.py", "A = 1\n");
    s.write("pkg/b.py", "B = 2\n");
    let turns = [
        turn(vec![call("read_file", json!({"file_path": "pkg/a.py"}))]),
        turn(vec![call("read_file", json!({"file_path": "pkg/b.py"}))]),
        turn(vec![text("done")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    assert!(!system_text(&requests[0]).contains("Pkg rule"));
    let first = function_responses(&requests[1])[0]["response"]["output"].clone();
    let pkg = s.ws().join("pkg/AGENTS.md");
    assert_eq!(
        first,
        format!(
            "A = 1\n\n\n--- Newly Discovered Project Context ---\n{}\n--- End Project Context ---",
            block(
                &pkg,
                "Pkg rule: <!-- Imported from: docs/extra.md -->\nImported detail.\n<!-- End of import from: docs/extra.md -->"
            )
        )
    );
    let second = function_responses(&requests[2])[0]["response"]["output"].clone();
    assert_eq!(second, "B = 2\n");
}

#[test]
fn a_system_prompt_file_named_by_the_environment_replaces_the_built_in_one() {
    let s = Scratch::new();
    let custom = s.root().join("my-system.md");
    std::fs::write(&custom, "You are a terse test bot on {os} in {roots}.\n").unwrap();
    s.write("AGENTS.md", "Project rule.\n");
    let script = s.script(&[turn(vec![text("hi")])]);
    let out = s
        .command()
        .env("TROUPE_SYSTEM_MD", &custom)
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "hello"])
        .output()
        .expect("run troupe");
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = system_text(&s.requests()[0]);
    assert_eq!(
        prompt,
        format!(
            "You are a terse test bot on {} in {}.\n\n---\n\n# Context files and memory\n\n{}",
            std::env::consts::OS,
            s.ws().display(),
            block(&s.ws().join("AGENTS.md"), "Project rule.")
        )
    );

    let missing = s
        .command()
        .env("TROUPE_SYSTEM_MD", s.root().join("nope.md"))
        .arg("--fake-responses")
        .arg(s.script(&[turn(vec![text("hi")])]))
        .args(["-p", "hello"])
        .output()
        .expect("run troupe");
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("cannot read system prompt file"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn write_todos_returns_the_list() {
    let s = Scratch::new();
    let turns = [
        turn(vec![
            call(
                "write_todos",
                json!({"todos": [
                    {"description": "Run the tests", "status": "completed"},
                    {"description": "Fix the parser", "status": "in_progress"},
                    {"description": "Re-run the tests", "status": "pending"}
                ]}),
            ),
            call(
                "write_todos",
                json!({"todos": [
                    {"description": "a", "status": "in_progress"},
                    {"description": "b", "status": "in_progress"}
                ]}),
            ),
            call(
                "write_todos",
                json!({"todos": [{"description": "a", "status": "done"}]}),
            ),
            call("write_todos", json!({"todos": []})),
        ]),
        turn(vec![text("planned")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "plan", "--approval-mode", "plan"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    assert_eq!(
        r[0]["response"]["output"],
        "Successfully updated the todo list. The current list is now:\n1. [completed] Run the tests\n2. [in_progress] Fix the parser\n3. [pending] Re-run the tests"
    );
    assert_eq!(
        r[1]["response"]["error"],
        "Invalid parameters: Only one task can be \"in_progress\" at a time."
    );
    assert_eq!(
        r[2]["response"]["error"],
        "params/todos/0/status must be equal to one of the allowed values"
    );
    assert_eq!(
        r[3]["response"]["output"],
        "Successfully cleared the todo list."
    );
}

#[test]
fn an_import_through_a_link_leading_out_of_the_workspace_is_not_followed() {
    let s = Scratch::new();
    std::fs::write(s.root().join("secret.md"), "TOP SECRET OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink(s.root().join("secret.md"), s.ws().join("notes.md")).unwrap();
    s.write("docs/ok.md", "Inside detail.\n");
    s.write("AGENTS.md", "Rules: @notes.md and @docs/ok.md\n");
    let (_, proc) = s.run_json(&[turn(vec![text("done")])], &["-p", "go", "--skip-trust"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let system = system_text(&s.requests()[0]);
    assert!(system.contains("Inside detail."), "{system}");
    assert!(!system.contains("TOP SECRET OUTSIDE"), "{system}");
    assert!(
        system.contains("<!-- Import failed: notes.md -"),
        "{system}"
    );
}
