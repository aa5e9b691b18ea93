//! What the user is shown about a call is true of it: a failed `replace` whose
//! correction asks the model reports a duration that includes that request.

use std::time::Duration;

use serde_json::Value;

use super::gemini_wire::run_against;
use super::real_use::{openai_answer, tool_call};
use crate::common::loopback::Loopback;
use crate::common::*;

/// The model asks for a `replace` that matches nothing; every later request (the
/// Corrector's and the final turn's) is answered only after `pause`.
fn run_failing_replace(use_model: bool, pause: Duration) -> (Value, Vec<Value>, String) {
    let s = Scratch::new();
    s.write("a.txt", "alpha\nbeta\n");
    let server = Loopback::then_always(
        vec![tool_call(
            "replace",
            r#"{"file_path": "a.txt", "old_string": "gamma", "new_string": "delta"}"#,
            "tool_calls",
        )],
        openai_answer("done").delayed(pause),
    );
    let out = run_against(
        &s,
        &[("OPENAI_BASE_URL", &format!("{}/v1", server.url))],
        &[
            "-p",
            "edit",
            "--yolo",
            "-o",
            "json",
            "-m",
            "m",
            "-c",
            "tools.core=replace",
            "-c",
            &format!("edit.use_model={use_model}"),
            "-c",
            "edit.correction_timeout_secs=30",
        ],
    );
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stderr(&out)));
    let bodies = server.requests().iter().map(|r| r.body.clone()).collect();
    (report, bodies, stderr(&out))
}

#[test]
fn a_replace_duration_includes_the_correction_requests_to_the_model() {
    let pause = Duration::from_millis(1500);
    let (report, bodies, err) = run_failing_replace(true, pause);
    let stat = &report["stats"]["tools"]["byName"]["replace"];
    assert_eq!(stat["fail"], 1, "{report}\n{err}");
    // The first request is the turn; the Corrector's request(s) follow before the
    // final turn, each answered only after the pause.
    assert!(bodies.len() >= 3, "requests: {}", bodies.len());
    let shown = stat["durationMs"].as_u64().unwrap_or_default();
    assert!(
        shown >= pause.as_millis() as u64,
        "the call's duration ({shown} ms) leaves out the correction that waited {} ms\n{report}",
        pause.as_millis()
    );
}

#[test]
fn without_model_correction_the_replace_sends_no_extra_request() {
    let (report, bodies, err) = run_failing_replace(false, Duration::from_millis(10));
    assert_eq!(
        report["stats"]["tools"]["byName"]["replace"]["fail"], 1,
        "{report}\n{err}"
    );
    // The turn that asked for the call and the turn that got its result: nothing else.
    assert_eq!(bodies.len(), 2, "{bodies:?}");
}
