//! Tests of `answers`: one round's answers gathered in call order.
use super::*;
use crate::engine::responses::success_parts;
use crate::protocol::LlmContent;
use serde_json::json;

/// The facts of the tool these tests call, as the registry has them.
fn facts() -> Arc<ToolFactsTable> {
    use crate::tools::{read_file, Tool};
    Arc::new(
        [(read_file::NAME, read_file::ReadFile.facts())]
            .into_iter()
            .collect(),
    )
}

fn call(id: &str) -> Arc<FunctionCall> {
    Arc::new(FunctionCall {
        id: Some(id.into()),
        name: "read_file".into(),
        args: json!({"file_path": id}),
    })
}

fn done(call: &Arc<FunctionCall>, status: CallStatus) -> Arc<CompletedCall> {
    let id = call.id.clone().unwrap_or_default();
    Arc::new(CompletedCall {
        response_parts: success_parts(&call.name, &id, LlmContent::Text(id.clone()), "m"),
        call_id: id,
        name: call.name.clone(),
        args: CallArgs::of(call.clone()),
        status,
        display: String::new(),
        error: None,
        duration: std::time::Duration::ZERO,
        data: None,
        timeline: Default::default(),
    })
}

fn ids(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .filter_map(|p| p.function_response.as_ref()?.id.clone())
        .collect()
}

#[test]
fn calls_the_scheduler_did_not_answer_get_an_error_each_in_order() {
    let calls: Vec<_> = ["a", "b", "c"].into_iter().map(call).collect();
    let mut answers = RoundAnswers::new(&calls, None, None, facts());
    answers.add(done(&calls[0], CallStatus::Success));
    let answered = answers.finish("The scheduler was unavailable");
    assert_eq!(ids(&answered.parts), ["a", "b", "c"]);
    let error = |i: usize| {
        answered.parts[i]
            .function_response
            .as_ref()
            .map(|r| r.response.clone())
    };
    assert_eq!(error(0), Some(json!({"output": "a"})));
    assert_eq!(
        error(2),
        Some(json!({"error": "The scheduler was unavailable"}))
    );
    assert!(!answered.all_cancelled);
}

/// The ids of each `ToolResults` message, and its `done`.
type Batches = Arc<std::sync::Mutex<Vec<(Vec<String>, bool)>>>;

/// Collects what a recorder would be sent.
struct Collect(Batches);

impl actix::Actor for Collect {
    type Context = actix::Context<Self>;
}

impl actix::Handler<SessionEvent> for Collect {
    type Result = ();
    fn handle(&mut self, event: SessionEvent, _: &mut Self::Context) {
        if let SessionEvent::ToolResults { calls, done } = event {
            let ids = calls.iter().map(|c| c.call_id.clone()).collect();
            self.0.lock().unwrap().push((ids, done));
        }
    }
}

impl actix::Handler<crate::protocol::FlushRecords> for Collect {
    type Result = ();
    fn handle(&mut self, _: crate::protocol::FlushRecords, _: &mut Self::Context) {}
}

#[actix::test]
async fn finished_calls_go_to_the_recorder_as_they_come_then_the_rest() {
    use actix::Actor;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorder = Collect(seen.clone()).start();
    let n = RECORD_BATCH + 3;
    let calls: Vec<_> = (0..n).map(|i| call(&format!("c{i}"))).collect();
    let mut answers = RoundAnswers::new(&calls, Some(recorder.clone().recipient()), None, facts());
    for c in &calls[..RECORD_BATCH] {
        answers.add(done(c, CallStatus::Cancelled));
    }
    // A full batch leaves while the round runs; the rest waits for its end.
    recorder.send(crate::protocol::FlushRecords).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
    answers.add(done(&calls[RECORD_BATCH], CallStatus::Cancelled));
    let answered = answers.finish("The scheduler stopped");
    recorder.send(crate::protocol::FlushRecords).await.unwrap();
    assert!(!answered.all_cancelled, "the unanswered calls are errors");
    assert_eq!(ids(&answered.parts).len(), n);
    let seen = seen.lock().unwrap();
    let want =
        |range: std::ops::Range<usize>| -> Vec<String> { range.map(|i| format!("c{i}")).collect() };
    assert_eq!(
        *seen,
        vec![
            (want(0..RECORD_BATCH), false),
            (want(RECORD_BATCH..n), true)
        ]
    );
}

#[test]
fn identical_calls_run_once_and_every_copy_is_answered_under_its_own_id() {
    let same = |id: &str| {
        Arc::new(FunctionCall {
            id: Some(id.into()),
            name: "read_file".into(),
            args: json!({"file_path": "x"}),
        })
    };
    let calls = vec![same("a"), call("b"), same("c"), same("d")];
    let mut answers = RoundAnswers::new(&calls, None, Some(FailedCalls::default()), facts());
    let run = answers.to_run();
    assert_eq!(run.len(), 2);
    answers.add(done(&run[0], CallStatus::Success));
    answers.add(done(&run[1], CallStatus::Success));
    let answered = answers.finish("unused");
    assert_eq!(ids(&answered.parts), ["a", "b", "c", "d"]);
    let copies: Vec<&str> = answered.copies.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(copies, ["c", "d"]);
    let output = |i: usize| {
        answered.parts[i]
            .function_response
            .as_ref()
            .unwrap()
            .response
            .clone()
    };
    assert_eq!(output(2), output(0));
    assert_eq!(output(3), json!({"output": "a"}));
}

#[test]
fn the_third_failure_of_a_call_carries_the_nudge() {
    let mut failures = Some(FailedCalls::default());
    for round in 1..=3 {
        let c = call("gone");
        let mut answers =
            RoundAnswers::new(std::slice::from_ref(&c), None, failures.take(), facts());
        answers.add(Arc::new(unanswered(&c, "File not found")));
        let answered = answers.finish("unused");
        failures = answered.failures;
        let error = answered.parts[0]
            .function_response
            .as_ref()
            .unwrap()
            .response["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(error.contains("failed 3 times"), round == 3, "{error}");
    }
}

#[test]
fn a_call_nothing_else_holds_gives_up_its_parts_without_a_copy() {
    let c = call("a");
    let finished = done(&c, CallStatus::Success);
    let payload = finished.response_parts[0].function_response.clone();
    let mut answers = RoundAnswers::new(std::slice::from_ref(&c), None, None, facts());
    answers.add(finished);
    let answered = answers.finish("unused");
    // The history's part holds the very response the tool's call produced.
    let moved = answered.parts[0].function_response.as_ref();
    assert!(matches!((moved, payload.as_ref()), (Some(a), Some(b)) if Arc::ptr_eq(a, b)));
}
