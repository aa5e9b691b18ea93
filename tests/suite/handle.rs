//! The Chat and the Scheduler driven in-process through the session's handle, with a
//! scripted model: ops in, events out. Each test observes what happened (a barrier
//! that only opens when calls overlap, the order of the answers, the events of a
//! cancelled call), never how long it took.

use std::path::Path;
use std::sync::Arc;

use actix::System;
use serde_json::{json, Value};

use troupe::actors::session::{EndReason, SessionHandle};
use troupe::protocol::content::{Content, Role};
use troupe::protocol::{
    ApprovalDecision, ApprovalId, ApprovalMode, CallStatus, CompletedCall, Event, Op, OpError,
    OpReply, TurnOutcome, UiEvent,
};
use troupe::providers::scripted::ScriptedModel;
use troupe::settings::load_with;

use crate::common::in_process::{start_session, user_turn};
use crate::common::{call, text, turn, Scratch};

/// Starts a session in `s`'s workspace on the model turns `script`, with the test tools.
async fn start(s: &Scratch, script: &[Value], mode: ApprovalMode, extra: &[&str]) -> SessionHandle {
    let mut overrides = vec![format!(
        "context.global_dir=\"{}\"",
        s.home().join(".troupe").display()
    )];
    overrides.extend(extra.iter().map(|o| o.to_string()));
    let none = Path::new("/nonexistent/settings.toml");
    let settings = load_with(none, none, &[], &overrides)
        .expect("settings")
        .settings;
    let lines: Vec<String> = script.iter().map(Value::to_string).collect();
    let model = ScriptedModel::from_text("handle-test", &lines.join("\n")).expect("script");
    start_session(&s.ws(), Arc::new(settings), Arc::new(model), mode, true).await
}

/// What a turn showed, read off the event stream until it ended.
#[derive(Default)]
struct Seen {
    completed: Vec<Arc<CompletedCall>>,
    approvals: Vec<(ApprovalId, String)>,
    op_answers: Vec<Result<OpReply, OpError>>,
    outcome: Option<TurnOutcome>,
}

/// Reads events until the turn ends, answering approval requests with `decision`.
/// `on_event` sees each UI event first (and may submit ops).
async fn until_turn_ends(
    session: &SessionHandle,
    decision: ApprovalDecision,
    mut on_event: impl FnMut(&UiEvent),
) -> Seen {
    let mut seen = Seen::default();
    while let Some(event) = session.next_event().await {
        match event {
            Event::Ui(event) => {
                on_event(&event);
                match event {
                    UiEvent::ToolCallCompleted(call) => seen.completed.push(call),
                    UiEvent::TurnFinished(outcome) => {
                        seen.outcome = Some(outcome);
                        return seen;
                    }
                    _ => {}
                }
            }
            Event::Approval { id, request } => {
                seen.approvals.push((id, request.tool_name.clone()));
                session.submit(Op::Decide {
                    id,
                    decision: decision.clone(),
                });
            }
            Event::OpDone { result, .. } => seen.op_answers.push(result),
        }
    }
    panic!("the event stream ended before the turn");
}

async fn history(session: &SessionHandle) -> Vec<Content> {
    match session.request(Op::GetHistory).await {
        Ok(OpReply::History(history)) => history,
        other => panic!("no history: {other:?}"),
    }
}

/// The call ids the function responses of the history's last answered content name,
/// in order.
fn answered_ids(history: &[Content]) -> Vec<String> {
    let last = history
        .iter()
        .rev()
        .find(|c| c.role == Role::User && c.has_function_response())
        .expect("a content with function responses");
    last.parts
        .iter()
        .filter_map(|p| p.function_response.as_ref())
        .map(|r| r.id.clone().unwrap_or_default())
        .collect()
}

fn completed(turn_text: &str) -> TurnOutcome {
    TurnOutcome::Completed {
        response: turn_text.into(),
    }
}

#[test]
fn the_calls_of_one_answer_overlap_and_are_answered_in_call_order() {
    let s = Scratch::new();
    // Three calls that only all pass when all three are in flight together: run one
    // after another, the first two would time out.
    let meet = || {
        call(
            "test_barrier",
            json!({"group": "handle-overlap", "parties": 3}),
        )
    };
    let script = [
        turn(vec![meet(), meet(), meet()]),
        turn(vec![text("all met")]),
    ];
    System::new().block_on(async {
        let session = start(&s, &script, ApprovalMode::Default, &[]).await;
        session.submit(user_turn("meet"));
        let mut requested = Vec::new();
        let seen = until_turn_ends(&session, ApprovalDecision::ProceedOnce, |event| {
            if let UiEvent::ToolCallRequested { call_id, .. } = event {
                requested.push(call_id.clone());
            }
        })
        .await;
        assert_eq!(seen.outcome, Some(completed("all met")));
        assert_eq!(seen.completed.len(), 3);
        assert!(
            seen.completed
                .iter()
                .all(|c| c.status == CallStatus::Success),
            "{:?}",
            seen.completed.iter().map(|c| &c.error).collect::<Vec<_>>()
        );
        // Each finished call is shown once; the model gets the answers in call order.
        let mut shown: Vec<String> = seen.completed.iter().map(|c| c.call_id.clone()).collect();
        shown.sort();
        let mut asked = requested.clone();
        asked.sort();
        assert_eq!(shown, asked);
        assert_eq!(answered_ids(&history(&session).await), requested);
        assert!(seen.approvals.is_empty(), "a read asks nothing");
        session.shutdown(EndReason::Exit).await;
    });
}

/// The statuses of three calls of barrier `group` (three parties) run with at most
/// `window` calls in flight.
fn barrier_of_three(window: usize, group: &str, timeout_secs: u64) -> Vec<CallStatus> {
    let s = Scratch::new();
    let wait = || {
        call(
            "test_barrier",
            json!({"group": group, "parties": 3, "timeout_secs": timeout_secs}),
        )
    };
    let script = [turn(vec![wait(), wait(), wait()]), turn(vec![text("done")])];
    let in_flight = format!("tools.max_in_flight={window}");
    System::new().block_on(async {
        let session = start(&s, &script, ApprovalMode::Default, &[&in_flight]).await;
        session.submit(user_turn("go"));
        let seen = until_turn_ends(&session, ApprovalDecision::ProceedOnce, |_| {}).await;
        session.shutdown(EndReason::Exit).await;
        seen.completed.iter().map(|c| c.status).collect()
    })
}

#[test]
fn the_window_bounds_the_calls_in_flight() {
    // With two calls in flight the third cannot start until one of the first two ends,
    // which only a timeout can do: at least one call times out. With three, all meet.
    let bounded = barrier_of_three(2, "handle-window-2", 1);
    assert_eq!(bounded.len(), 3);
    assert!(
        bounded.contains(&CallStatus::Error),
        "a barrier of three opened with two calls in flight: {bounded:?}"
    );
    let wide = barrier_of_three(3, "handle-window-3", 20);
    assert_eq!(wide, vec![CallStatus::Success; 3]);
}

#[test]
fn a_panicking_tool_fails_its_call_alone_and_the_session_goes_on() {
    let s = Scratch::new();
    s.write("notes.txt", "kept\n");
    let script = [
        turn(vec![
            call("test_panic", json!({"message": "boom"})),
            call("read_file", json!({"file_path": "notes.txt"})),
        ]),
        turn(vec![text("survived")]),
        turn(vec![text("second turn")]),
    ];
    System::new().block_on(async {
        let session = start(&s, &script, ApprovalMode::Default, &[]).await;
        session.submit(user_turn("go"));
        let seen = until_turn_ends(&session, ApprovalDecision::ProceedOnce, |_| {}).await;
        assert_eq!(seen.outcome, Some(completed("survived")));
        let by_name = |name: &str| {
            seen.completed
                .iter()
                .find(|c| c.name == name)
                .expect(name)
                .clone()
        };
        let panicked = by_name("test_panic");
        assert_eq!(panicked.status, CallStatus::Error);
        assert!(
            panicked
                .error
                .as_ref()
                .is_some_and(|e| e.message.contains("boom")),
            "{:?}",
            panicked.error
        );
        assert_eq!(by_name("read_file").status, CallStatus::Success);
        session.submit(user_turn("again"));
        let again = until_turn_ends(&session, ApprovalDecision::ProceedOnce, |_| {}).await;
        assert_eq!(again.outcome, Some(completed("second turn")));
        session.shutdown(EndReason::Exit).await;
    });
}

#[test]
fn cancel_ends_a_running_call_and_a_history_change_meanwhile_is_refused() {
    let s = Scratch::new();
    let script = [
        turn(vec![call("test_sleep", json!({"secs": 300}))]),
        turn(vec![text("after the cancel")]),
    ];
    System::new().block_on(async {
        let session = start(&s, &script, ApprovalMode::Default, &[]).await;
        session.submit(user_turn("sleep"));
        let mut refused = None;
        let seen = until_turn_ends(&session, ApprovalDecision::ProceedOnce, |event| {
            if let UiEvent::ToolCallStatus {
                status: CallStatus::Executing,
                ..
            } = event
            {
                // The call runs: a history change is refused, then the turn cancelled.
                if refused.is_none() {
                    refused = Some(session.submit(Op::SetHistory(Vec::new())));
                    session.submit(Op::Cancel);
                }
            }
        })
        .await;
        assert!(refused.is_some(), "the call never ran");
        assert_eq!(seen.outcome, Some(TurnOutcome::Cancelled));
        assert_eq!(seen.completed.len(), 1);
        assert_eq!(seen.completed[0].status, CallStatus::Cancelled);
        // The refusal is an answer of its own, not a silent drop (it may come after
        // the turn's end).
        let mut answers = seen.op_answers;
        while answers.iter().filter(|a| a.is_err()).count() == 0 {
            if let Event::OpDone { result, .. } = session.next_event().await.expect("event") {
                answers.push(result);
            }
        }
        assert!(
            answers.iter().any(|a| matches!(
                a,
                Err(OpError::Busy {
                    op: "set_history",
                    ..
                })
            )),
            "{answers:?}"
        );
        // Every call is still answered exactly once in the history.
        let history = history(&session).await;
        assert_eq!(answered_ids(&history).len(), 1);
        // The same change once the turn is over is taken.
        assert!(matches!(
            session.request(Op::SetHistory(history.clone())).await,
            Ok(OpReply::Done)
        ));
        session.shutdown(EndReason::Exit).await;
    });
}

#[test]
fn approvals_go_out_as_events_and_come_back_as_ops() {
    let s = Scratch::new();
    let script = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "made.txt", "content": "approved\n"}),
        )]),
        turn(vec![text("written")]),
        turn(vec![call(
            "write_file",
            json!({"file_path": "refused.txt", "content": "no\n"}),
        )]),
        turn(vec![text("not written")]),
    ];
    System::new().block_on(async {
        let session = start(&s, &script, ApprovalMode::Default, &[]).await;
        session.submit(user_turn("write"));
        let seen = until_turn_ends(&session, ApprovalDecision::ProceedOnce, |_| {}).await;
        assert_eq!(seen.outcome, Some(completed("written")));
        assert_eq!(seen.approvals.len(), 1);
        assert_eq!(seen.approvals[0].1, "write_file");
        assert_eq!(
            std::fs::read_to_string(s.ws().join("made.txt")).expect("made"),
            "approved\n"
        );
        // An answer to a request that is no longer waiting is an error, not a no-op.
        let late = session
            .request(Op::Decide {
                id: seen.approvals[0].0,
                decision: ApprovalDecision::ProceedOnce,
            })
            .await;
        assert_eq!(
            late.map(|_| ()),
            Err(OpError::UnknownApproval(seen.approvals[0].0 .0))
        );
        session.submit(user_turn("write again"));
        let refused = until_turn_ends(
            &session,
            ApprovalDecision::Cancel { feedback: None },
            |_| {},
        )
        .await;
        assert_eq!(refused.approvals.len(), 1);
        assert!(!s.ws().join("refused.txt").exists());
        session.shutdown(EndReason::Exit).await;
    });
}

#[test]
fn the_policy_changes_through_ops_and_is_read_back_without_locks() {
    let s = Scratch::new();
    let script = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "yolo.txt", "content": "unasked\n"}),
        )]),
        turn(vec![text("done")]),
    ];
    System::new().block_on(async {
        let session = start(&s, &script, ApprovalMode::Default, &[]).await;
        assert_eq!(session.approval_mode(), ApprovalMode::Default);
        assert!(matches!(
            session
                .request(Op::SetApprovalMode(ApprovalMode::Yolo))
                .await,
            Ok(OpReply::Done)
        ));
        assert_eq!(session.approval_mode(), ApprovalMode::Yolo);
        match session.request(Op::GetPolicy).await {
            Ok(OpReply::Policy(policy)) => assert_eq!(policy.mode, ApprovalMode::Yolo),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            session.request(Op::RevokeRule(1)).await.map(|_| ()),
            Err(OpError::NoSuchRule(1))
        );
        session.submit(user_turn("write"));
        let seen = until_turn_ends(
            &session,
            ApprovalDecision::Cancel { feedback: None },
            |_| {},
        )
        .await;
        assert!(seen.approvals.is_empty(), "yolo asked");
        assert!(s.ws().join("yolo.txt").exists());
        // After the end, ops answer that the session has ended and the stream ends.
        session.shutdown(EndReason::Exit).await;
        assert!(matches!(
            session.request(Op::GetHistory).await,
            Err(OpError::Ended { .. })
        ));
        while session.next_event().await.is_some() {}
    });
}
