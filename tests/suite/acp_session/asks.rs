//! `ask_user` and plan mode over ACP: the client is asked with
//! `session/request_permission`. A single choice question's options are the
//! permission's options (gemini-cli offers only Allow and Reject, which answer
//! nothing); the plan is shown in the request and "Allow" approves it; the client is
//! told of each switch of the mode (`current_mode_update`).

use serde_json::json;

use super::prompt;
use crate::common::*;
use crate::suite::acp::Editor;

fn permission_requests(ed: &Editor) -> Vec<serde_json::Value> {
    ed.asked
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .map(|m| m["params"].clone())
        .collect()
}

#[test]
fn the_client_answers_a_choice_by_picking_its_option() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "ask_user",
            json!({"questions": [{"question": "Which library?", "header": "Lib", "type": "choice",
                "options": [{"label": "serde", "description": "the usual one"},
                            {"label": "miniserde", "description": "smaller"}]}]}),
        )]),
        turn(vec![text("Going with it.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    ed.permission = "answer_1";
    let sid = ed.start_session(&s, false);
    let done = prompt(&mut ed, &sid, "pick one");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let asked = permission_requests(&ed);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["toolCall"]["title"], "Asking user: Which library?");
    assert_eq!(asked[0]["toolCall"]["kind"], "other");
    let ids: Vec<&str> = asked[0]["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| o["optionId"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["answer_0", "answer_1", "cancel"]);
    assert_eq!(asked[0]["options"][1]["name"], "miniserde");
    let requests = s.requests();
    assert_eq!(
        function_responses(&requests[1])[0]["response"]["output"],
        r#"{"answers":{"0":"miniserde"}}"#
    );
    assert!(ed.close().success());
}

#[test]
fn the_client_approves_entering_plan_mode_and_the_plan() {
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
        turn(vec![text("Implementing.")]),
    ];
    let mut ed = Editor::start(&s, &turns, &[]);
    ed.permission = "proceed_once";
    let sid = ed.start_session(&s, false);
    let done = prompt(&mut ed, &sid, "plan");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let asked = permission_requests(&ed);
    assert_eq!(
        asked.len(),
        2,
        "{asked:?} {:?}",
        s.requests()
            .iter()
            .map(function_responses)
            .collect::<Vec<_>>()
    );
    let plan_request = &asked[1];
    let title = plan_request["toolCall"]["title"].as_str().expect("title");
    assert!(
        title.starts_with("Requesting plan approval for: ") && title.ends_with("/plans/plan.md"),
        "{title}"
    );
    assert!(plan_request["toolCall"]["content"]
        .to_string()
        .contains("# Plan"));
    // The client hears of each switch of the mode.
    let modes: Vec<String> = ed
        .kinds("current_mode_update")
        .iter()
        .map(|u| u["currentModeId"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(modes, ["plan", "default"]);
    let requests = s.requests();
    assert_eq!(
        function_responses(&requests[1])[0]["response"]["output"],
        "Switching to Plan mode."
    );
    let path = title.trim_start_matches("Requesting plan approval for: ");
    assert_eq!(
        function_responses(&requests[3])[0]["response"]["output"],
        format!(
            "Plan approved. Switching to Default mode (edits will require confirmation).\n\nThe approved implementation plan is stored at: {path}\nRead and follow the plan strictly during implementation."
        )
    );
    assert!(ed.close().success());
}
