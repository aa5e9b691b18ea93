//! gemini-cli 0.61's own answers as the oracle: each fixture in
//! `tests/fixtures/gemini/wire-parity/` holds a scripted conversation and the
//! functionResponses the real gemini-cli sent back on it through a loopback Gemini API
//! (recorded by `bench/wire-parity.sh --record tests/fixtures/gemini/wire-parity`).
//! Troupe runs the same conversation on the scripted model and must send the same
//! answers (ids and the workspace path aside; the key order of a `functionResponse`
//! is a row of `docs/differences-from-gemini-cli.md`).

use serde_json::{json, Value};

use crate::common::*;

/// Replaces every functionResponse id by `<ID>` and the workspace path by `<WS>`.
fn normalized(responses: Vec<Value>, s: &Scratch) -> Value {
    let ids_blind: Vec<Value> = responses
        .into_iter()
        .map(|mut r| {
            if r.get("id").is_some() {
                r["id"] = Value::from("<ID>");
            }
            r
        })
        .collect();
    let text = serde_json::to_string(&ids_blind).unwrap();
    let ws = s.ws().canonicalize().unwrap();
    let text = text
        .replace(&ws.display().to_string(), "<WS>")
        .replace(&s.ws().display().to_string(), "<WS>");
    serde_json::from_str(&text).unwrap()
}

/// Runs the fixture's conversation on Troupe and compares every answer with gemini-cli's,
/// except the answers in `known` (index, Troupe's answer): each a row of
/// `docs/differences-from-gemini-cli.md`. `exit_code` is Troupe's (54 when a call was
/// refused, where gemini-cli exits 0: the row "headless tool call refused").
fn replay(scenario: &str, known: &[(usize, Value)], exit_code: i32) {
    let path = format!(
        "{}/tests/fixtures/gemini/wire-parity/{scenario}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let s = Scratch::new();
    for (rel, text) in fixture["ws"].as_object().unwrap() {
        s.write(rel, text.as_str().unwrap());
    }
    let mut turns: Vec<Value> = fixture["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|parts| turn(parts.as_array().unwrap().clone()))
        .collect();
    turns.push(turn(vec![text("done")]));
    let approval = fixture["approval"].as_str().unwrap();
    let out = s.run(
        &turns,
        &[
            "-p",
            "follow the script",
            "--approval-mode",
            approval,
            "--skip-trust",
        ],
    );
    assert_eq!(out.status.code(), Some(exit_code), "{}", stderr(&out));
    let requests = s.requests();
    let last = requests.last().expect("a request");
    let sent: Vec<Value> = last["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect();
    let mut expected = fixture["gemini_function_responses"].clone();
    for (index, troupe_answer) in known {
        assert_ne!(
            &expected[index], troupe_answer,
            "{scenario}: not a difference"
        );
        expected[index] = troupe_answer.clone();
    }
    assert_eq!(
        sent.len(),
        expected.as_array().unwrap().len(),
        "{scenario}: {sent:#?}"
    );
    assert_eq!(normalized(sent, &s), expected, "{scenario}");
}

#[test]
fn activate_skill_of_a_project_skill_and_of_an_unknown_name_answer_as_gemini_cli() {
    replay("skills", &[], 0);
}

#[test]
fn update_topic_with_and_without_a_summary_answers_as_gemini_cli() {
    replay("topic", &[], 0);
}

#[test]
fn reads_with_wait_for_previous_answer_as_gemini_cli() {
    replay("wait", &[], 0);
}

#[test]
fn plan_mode_enter_a_write_a_read_and_enter_again_answer_as_gemini_cli() {
    // Row "plan mode: `enter_plan_mode` while in plan mode": gemini-cli answers that the
    // tool is not found; Troupe gives the deny message of gemini-cli's own plan policy.
    let again = json!({"id": "<ID>", "name": "enter_plan_mode", "response": {
        "error": "Tool execution denied by policy. You are already in Plan Mode."}});
    replay("plan", &[(3, again)], 54);
}
