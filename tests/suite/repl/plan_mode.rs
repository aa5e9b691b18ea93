//! Plan mode in the REPL: `enter_plan_mode` asks like any confirmation; in plan mode
//! the plan file is written unasked; `exit_plan_mode` shows the plan and asks how to go
//! on — approved (edits then asked or applied unasked) or rejected with feedback —
//! and the model gets gemini-cli's texts.

use serde_json::json;

use super::term::Term;
use crate::common::*;

fn plans_dir(s: &Scratch) -> std::path::PathBuf {
    let tmp = s.home().join(".troupe").join("tmp");
    for project in std::fs::read_dir(&tmp).expect("tmp").flatten() {
        for session in std::fs::read_dir(project.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if session.path().join("plans").is_dir() {
                return session.path().join("plans");
            }
        }
    }
    panic!("no plans directory under {}", tmp.display());
}

fn planning_turns(after_exit: &str) -> Vec<serde_json::Value> {
    vec![
        turn(vec![call(
            "enter_plan_mode",
            json!({"reason": "a big change"}),
        )]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "plan.md", "content": "# The plan\n- step one\n"}),
        )]),
        turn(vec![call(
            "exit_plan_mode",
            json!({"plan_filename": "plan.md"}),
        )]),
        turn(vec![text(after_exit)]),
    ]
}

#[test]
fn a_plan_is_shown_and_approved_and_the_session_leaves_plan_mode() {
    let s = Scratch::new();
    let t = Term::start(&s, &planning_turns("Implementing."), &[], &[]);
    t.line("plan a change");
    let shown = t.wait_for("Allow once");
    assert!(shown.contains("Enter Plan Mode"), "{shown}");
    assert!(shown.contains("Reason: a big change"), "{shown}");
    t.keys(&["Enter"]);
    let shown = t.wait_for("No, keep planning");
    assert!(shown.contains("│ # The plan"), "{shown}");
    assert!(shown.contains("│ - step one"), "{shown}");
    t.keys(&["2"]);
    t.wait_for("Implementing.");
    t.wait_prompt();
    let requests = s.requests();
    assert_eq!(
        function_responses(&requests[1])[0]["response"]["output"],
        "Switching to Plan mode."
    );
    let plan = plans_dir(&s).join("plan.md");
    assert_eq!(
        std::fs::read_to_string(&plan).expect("plan"),
        "# The plan\n- step one\n"
    );
    assert_eq!(
        function_responses(&requests[3])[0]["response"]["output"],
        format!(
            "Plan approved. Switching to Default mode (edits will require confirmation).\n\nThe approved implementation plan is stored at: {}\nRead and follow the plan strictly during implementation.",
            plan.display()
        )
    );
    assert!(!requests[3]["tools"][0]["functionDeclarations"]
        .to_string()
        .contains("\"exit_plan_mode\""));
}

#[test]
fn a_rejected_plan_keeps_planning_with_the_feedback() {
    let s = Scratch::new();
    let t = Term::start(&s, &planning_turns("Revising."), &[], &[]);
    t.line("plan a change");
    t.wait_for("Allow once");
    t.keys(&["Enter"]);
    t.wait_for("No, keep planning");
    t.keys(&["3"]);
    t.wait_for("What should change in the plan?");
    t.line("add tests");
    t.wait_for("Revising.");
    t.wait_prompt();
    let requests = s.requests();
    let plan = plans_dir(&s).join("plan.md");
    assert_eq!(
        function_responses(&requests[3])[0]["response"]["output"],
        format!(
            "Plan rejected. User feedback: add tests\n\nThe plan is stored at: {}\nRevise the plan based on the feedback.",
            plan.display()
        )
    );
    // Still in plan mode: exit_plan_mode stays declared.
    assert!(requests[3]["tools"][0]["functionDeclarations"]
        .to_string()
        .contains("\"exit_plan_mode\""));
}
