//! gemini-cli 0.61's `ask_user`: a run with no person to answer neither declares it
//! nor runs it; the REPL asks each question in a picker (`repl/ask_user.rs`), ACP asks
//! the client (`acp_session`). Answers are gemini-cli's `{"answers": {...}}`.

use serde_json::json;

use crate::common::*;

#[test]
fn a_headless_run_refuses_ask_user_saying_no_user_is_there() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "ask_user",
            json!({"questions": [{"question": "Which?", "header": "Lib", "type": "choice",
                "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}]}]}),
        )]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-p", "go"]);
    let _ = out;
    let requests = s.requests();
    let names = requests[0]["tools"][0]["functionDeclarations"].to_string();
    assert!(
        !names.contains("\"ask_user\""),
        "declared headless: {names}"
    );
    assert_eq!(
        function_responses(&requests[1])[0]["response"]["error"],
        "Tool execution denied by policy. No user is there to answer: this session is not interactive. Decide yourself, or say what you need in your final answer."
    );
}
