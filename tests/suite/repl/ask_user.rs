//! `ask_user` in the REPL: each question in turn, a choice in a picker (its options,
//! "Other" to type one), a free question on a typed line; the model gets gemini-cli's
//! `{"answers": {...}}`. Esc dismisses, which the model hears as a denial.

use serde_json::json;

use super::term::Term;
use crate::common::*;

fn questions() -> serde_json::Value {
    call(
        "ask_user",
        json!({"questions": [
            {"question": "Which library?", "header": "Lib", "type": "choice",
             "options": [{"label": "serde", "description": "the usual one"},
                         {"label": "miniserde", "description": "smaller"}]},
            {"question": "Why?", "header": "Reason", "type": "text", "placeholder": "a few words"}
        ]}),
    )
}

#[test]
fn the_picker_answers_a_choice_and_a_typed_line_answers_a_free_question() {
    let s = Scratch::new();
    let turns = [
        turn(vec![questions()]),
        turn(vec![text("Going with your choice.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("pick a library");
    let shown = t.wait_for("Other (type an answer)");
    assert!(shown.contains("? [Lib] Which library?"), "{shown}");
    assert!(shown.contains("2. miniserde — smaller"), "{shown}");
    t.keys(&["2"]);
    t.wait_for("Your answer (a few words):");
    t.line("it is small");
    t.wait_for("Going with your choice.");
    t.wait_prompt();
    let requests = s.requests();
    let responses = function_responses(&requests[1]);
    assert_eq!(
        responses[0]["response"]["output"],
        r#"{"answers":{"0":"miniserde","1":"it is small"}}"#
    );
    // A person answers here: the tool is declared.
    assert!(requests[0]["tools"][0]["functionDeclarations"]
        .to_string()
        .contains("\"ask_user\""));
}

#[test]
fn other_types_an_answer_and_escape_dismisses() {
    let s = Scratch::new();
    let turns = [
        turn(vec![questions()]),
        turn(vec![text("Noted.")]),
        turn(vec![questions()]),
        turn(vec![text("Fine, no answer.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("pick a library");
    t.wait_for("Other (type an answer)");
    t.keys(&["3"]);
    t.wait_for("Your answer: ");
    t.line("postcard");
    t.wait_for("Your answer (a few words):");
    t.line("");
    t.wait_for("Noted.");
    t.wait_prompt();
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(
        responses[0]["response"]["output"],
        r#"{"answers":{"0":"postcard"}}"#
    );
    t.line("again");
    t.wait_for_count("Other (type an answer)", 2);
    t.keys(&["Escape"]);
    t.wait_for("Request cancelled.");
    t.wait_prompt();
    t.line("and?");
    t.wait_for("Fine, no answer.");
    let requests = s.requests();
    let last = super::confirm::all_function_responses(&requests[3]);
    assert_eq!(
        last.last().expect("the dismissed call's answer")["response"]["error"],
        "[Operation Cancelled] Reason: User denied execution."
    );
}
