//! gemini-cli 0.61's plan mode from the model: `enter_plan_mode` switches the session
//! into plan mode, where writes are refused except plan files in the plans directory
//! (`<project temp dir>/<session id>/plans`), reads go on, and `exit_plan_mode` asks
//! for the plan's approval — which a non-interactive run gives unasked, going on in
//! the mode it had before plan mode (gemini-cli goes on in YOLO: a row of
//! docs/differences-from-gemini-cli.md). The answers are gemini-cli's texts (`tools/
//! enter-plan-mode.js`, `tools/exit-plan-mode.js`, `utils/planUtils.js`,
//! `policy/policies/plan.toml`, `scheduler/policy.js`'s `Tool execution denied by
//! policy. <denyMessage>`).

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::*;

fn output(response: &Value) -> &str {
    response["response"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("not a success: {response}"))
}

fn error(response: &Value) -> &str {
    response["response"]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

/// The names a request declares.
fn declared(request: &Value) -> Vec<String> {
    request["tools"][0]["functionDeclarations"]
        .as_array()
        .expect("declarations")
        .iter()
        .map(|d| d["name"].as_str().expect("name").to_string())
        .collect()
}

fn description<'a>(request: &'a Value, name: &str) -> &'a str {
    request["tools"][0]["functionDeclarations"]
        .as_array()
        .expect("declarations")
        .iter()
        .find(|d| d["name"] == name)
        .and_then(|d| d["description"].as_str())
        .unwrap_or_else(|| panic!("{name} not declared"))
}

/// The one plans directory under the scratch home's project temp directories.
fn plans_dir(s: &Scratch) -> PathBuf {
    let tmp = s.home().join(".troupe").join("tmp");
    let mut found = Vec::new();
    for project in std::fs::read_dir(&tmp).expect("tmp").flatten() {
        for session in std::fs::read_dir(project.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let plans = session.path().join("plans");
            if plans.is_dir() {
                found.push(plans);
            }
        }
    }
    assert_eq!(found.len(), 1, "plans directories: {found:?}");
    found.remove(0)
}

const DENIED_WRITE: &str = "Tool execution denied by policy. You are in Plan Mode and cannot modify source code. You may ONLY use write_file or replace to save plans to the designated plans directory as .md files.";
const DENIED_SCRIPT: &str = "Tool execution denied by policy. You are in Plan Mode with access to read-only tools. Execution of scripts (including those from skills) is blocked.";

#[test]
fn a_headless_run_plans_writes_only_its_plan_and_goes_on_in_its_mode_once_it_is_approved() {
    let s = Scratch::new();
    s.write("notes.txt", "read me\n");
    let turns = [
        turn(vec![call(
            "enter_plan_mode",
            json!({"reason": "design first"}),
        )]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "src.txt", "content": "code\n"}),
        )]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "plan.md", "content": "# Plan\n1. write src.txt\n"}),
        )]),
        turn(vec![call("read_file", json!({"file_path": "notes.txt"}))]),
        turn(vec![call("enter_plan_mode", json!({}))]),
        turn(vec![call(
            "run_shell_command",
            json!({"command": "echo hi"}),
        )]),
        turn(vec![call(
            "exit_plan_mode",
            json!({"plan_filename": "plan.md"}),
        )]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "src.txt", "content": "code\n"}),
        )]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-p", "plan it", "--approval-mode", "auto_edit"]);
    let _ = out;
    let requests = s.requests();
    assert_eq!(requests.len(), 9, "{requests:?}");
    let answer = |i: usize| function_responses(&requests[i])[0].clone();

    // Outside plan mode: enter_plan_mode declared, exit_plan_mode not; ask_user is
    // not declared in a run no person answers.
    let first = declared(&requests[0]);
    assert!(first.contains(&"enter_plan_mode".to_string()), "{first:?}");
    assert!(!first.contains(&"exit_plan_mode".to_string()), "{first:?}");
    assert!(!first.contains(&"ask_user".to_string()), "{first:?}");

    assert_eq!(output(&answer(1)), "Switching to Plan mode.");
    // In plan mode the declarations turn over and the edit tools name the plans dir.
    let planning = declared(&requests[1]);
    assert!(
        planning.contains(&"exit_plan_mode".to_string()),
        "{planning:?}"
    );
    assert!(
        !planning.contains(&"enter_plan_mode".to_string()),
        "{planning:?}"
    );

    assert_eq!(error(&answer(2)), DENIED_WRITE);

    let plans = plans_dir(&s);
    let plan = plans.join("plan.md");
    assert!(
        output(&answer(3)).contains(&plan.display().to_string()),
        "{}",
        answer(3)
    );
    assert_eq!(
        std::fs::read_to_string(&plan).expect("plan written"),
        "# Plan\n1. write src.txt\n"
    );
    assert!(!s.ws().join("plan.md").exists());
    let plans_text = format!("{}/", plans.display());
    assert!(description(&requests[3], "write_file").contains(&plans_text));
    assert!(description(&requests[3], "replace").contains(&plans_text));
    // The system prompt says what plan mode is while the session is in it.
    let system = |i: usize| requests[i]["systemInstruction"].to_string();
    assert!(!system(0).contains("# Plan mode"), "{}", system(0));
    assert!(system(2).contains("# Plan mode"), "{}", system(2));
    assert!(system(2).contains(&plans_text), "{}", system(2));
    assert!(!system(8).contains("# Plan mode"), "{}", system(8));

    assert!(output(&answer(4)).contains("read me"), "{}", answer(4));
    assert_eq!(
        error(&answer(5)),
        "Tool execution denied by policy. You are already in Plan Mode."
    );
    assert_eq!(error(&answer(6)), DENIED_SCRIPT);
    assert_eq!(
        output(&answer(7)),
        format!(
            "Plan approved. Switching to Auto-Edit mode (edits will be applied automatically).\n\nThe approved implementation plan is stored at: {}\nRead and follow the plan strictly during implementation.",
            plan.display()
        )
    );
    // Back in auto_edit, the mode the run had: the source file is written unasked.
    assert!(!declared(&requests[7]).contains(&"exit_plan_mode".to_string()));
    assert!(output(&answer(8)).contains("src.txt"), "{}", answer(8));
    assert_eq!(s.read("src.txt"), "code\n");
}

#[test]
fn exit_plan_mode_outside_plan_mode_and_without_a_plan_file_says_why_as_gemini_cli_does() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "exit_plan_mode",
            json!({"plan_filename": "p.md"}),
        )]),
        turn(vec![call("enter_plan_mode", json!({}))]),
        turn(vec![call(
            "exit_plan_mode",
            json!({"plan_filename": "nope.md"}),
        )]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "empty.md", "content": ""}),
        )]),
        turn(vec![call(
            "exit_plan_mode",
            json!({"plan_filename": "empty.md"}),
        )]),
        turn(vec![call(
            "exit_plan_mode",
            json!({"plan_filename": "../../../../x.md"}),
        )]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-p", "go"]);
    let _ = out;
    let requests = s.requests();
    let answer = |i: usize| function_responses(&requests[i])[0].clone();
    assert_eq!(
        error(&answer(1)),
        "Tool execution denied by policy. You are not currently in Plan Mode. Use enter_plan_mode first to design a plan."
    );
    assert_eq!(
        output(&answer(3)),
        "Plan file does not exist: nope.md. You must create the plan file before requesting approval."
    );
    assert_eq!(
        output(&answer(5)),
        "Plan file is empty. You must write content to the plan file before requesting approval."
    );
    let plans = plans_dir(&s);
    assert_eq!(
        error(&answer(6)),
        format!(
            "Access denied: plan path (../../../../x.md) must be within the designated plans directory ({}).",
            plans.display()
        )
    );
}

#[test]
fn a_session_started_in_plan_mode_declares_exit_plan_mode_and_refuses_a_replace() {
    let s = Scratch::new();
    s.write("a.txt", "one\n");
    let turns = [
        turn(vec![call(
            "replace",
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
        )]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["--approval-mode", "plan", "-p", "go"]);
    let _ = out;
    let requests = s.requests();
    let names = declared(&requests[0]);
    assert!(names.contains(&"exit_plan_mode".to_string()), "{names:?}");
    assert!(!names.contains(&"enter_plan_mode".to_string()), "{names:?}");
    assert!(description(&requests[0], "replace").starts_with("PLAN MODE"));
    assert_eq!(error(&function_responses(&requests[1])[0]), DENIED_WRITE);
    assert_eq!(s.read("a.txt"), "one\n");
}

#[test]
fn entering_plan_mode_makes_the_sessions_plans_directory() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call("enter_plan_mode", json!({}))]),
        turn(vec![text("planning")]),
    ];
    let (report, out) = s.run_json(&turns, &["-p", "plan"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plans = plans_dir(&s);
    // `<troupe home>/tmp/<project id>/<session id>/plans`, empty so far.
    let session = plans.parent().expect("session dir");
    assert_eq!(
        session.file_name().and_then(|n| n.to_str()),
        report["session_id"].as_str(),
        "{report}"
    );
    assert_eq!(std::fs::read_dir(&plans).expect("plans").count(), 0);
}

#[test]
fn an_edit_after_enter_plan_mode_in_the_same_answer_is_refused_when_it_runs() {
    let s = Scratch::new();
    let turns = [
        turn(vec![
            call("enter_plan_mode", json!({})),
            call(
                "write_file",
                json!({"file_path": "src.txt", "content": "code\n"}),
            ),
        ]),
        turn(vec![text("planning")]),
    ];
    // YOLO approves the write before enter_plan_mode has run; the write, which waits
    // for it, finds the session in plan mode.
    let out = s.run(&turns, &["--yolo", "-p", "go"]);
    let _ = out;
    let requests = s.requests();
    let answers = function_responses(&requests[1]);
    assert_eq!(output(&answers[0]), "Switching to Plan mode.");
    assert_eq!(error(&answers[1]), DENIED_WRITE);
    assert!(!s.ws().join("src.txt").exists());
}

#[test]
fn a_headless_exit_from_plan_mode_never_lifts_a_default_run_to_yolo() {
    // gemini-cli approves a headless plan into YOLO, so enter + exit would let the
    // model run any command in a run its user started in `default`. Troupe goes back
    // to the mode before plan mode.
    let s = Scratch::new();
    let turns = [
        turn(vec![call("enter_plan_mode", json!({}))]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "plan.md", "content": "# Plan\n"}),
        )]),
        turn(vec![call(
            "exit_plan_mode",
            json!({"plan_filename": "plan.md"}),
        )]),
        turn(vec![call(
            "run_shell_command",
            json!({"command": "touch made-by-shell"}),
        )]),
        turn(vec![text("done")]),
    ];
    s.run(&turns, &["-p", "plan it"]);
    let requests = s.requests();
    assert_eq!(requests.len(), 5, "{requests:?}");
    let answer = |i: usize| function_responses(&requests[i])[0].clone();
    assert!(
        output(&answer(3)).starts_with(
            "Plan approved. Switching to Default mode (edits will require confirmation)."
        ),
        "{}",
        answer(3)
    );
    assert!(
        error(&answer(4)).starts_with("Tool execution denied by policy."),
        "{}",
        answer(4)
    );
    assert!(!s.ws().join("made-by-shell").exists());
}
