//! Stopping subagents, driven in-process through the session's handle: one child
//! (`Op::CancelAgent`) while its sibling reports, and the whole
//! tree (`Op::Cancel`, Ctrl+C). The children's model hangs until they are stopped, so
//! what is observed is the stop itself.

use std::path::Path;
use std::sync::{Arc, Mutex};

use actix::System;
use futures::stream;
use serde_json::json;

use troupe::actors::session::{EndReason, SessionHandle};
use troupe::engine::model::{ModelEvent, ModelRequest};
use troupe::protocol::content::{FunctionCall, Role};
use troupe::protocol::{
    AgentState, AgentStep, ApprovalMode, Event, Op, OpReply, TurnOutcome, UiEvent,
};
use troupe::providers::{ModelClient, ModelStream};
use troupe::settings::load_with;

use crate::common::in_process::{start_session, user_turn};
use crate::common::Scratch;

/// A model that answers by request: the parent starts two generalists; child A
/// reports; child B hangs (or both hang).
struct Routed {
    both_hang: bool,
    parent_requests: Mutex<Vec<ModelRequest>>,
}

fn call(name: &str, args: serde_json::Value) -> ModelEvent {
    ModelEvent::FunctionCall {
        call: FunctionCall {
            id: None,
            name: name.into(),
            args,
        },
        thought_signature: None,
    }
}

impl ModelClient for Routed {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let first = request
            .contents
            .iter()
            .find(|c| c.role == Role::User)
            .map(|c| c.text())
            .unwrap_or_default();
        let rounds = request
            .contents
            .iter()
            .filter(|c| c.role == Role::Model)
            .count();
        let events = if first.contains("PARENT") {
            self.parent_requests.lock().unwrap().push(request.clone());
            match rounds {
                0 => vec![
                    call(
                        "invoke_agent",
                        json!({"agent_name": "generalist", "prompt": "CHILD-A"}),
                    ),
                    call(
                        "invoke_agent",
                        json!({"agent_name": "generalist", "prompt": "CHILD-B"}),
                    ),
                ],
                _ => vec![ModelEvent::Text("parent done".into())],
            }
        } else if first.contains("CHILD-A") && !self.both_hang {
            vec![call(
                "complete_task",
                json!({"result": {"response": "A reported"}}),
            )]
        } else {
            return Box::pin(stream::pending());
        };
        Box::pin(stream::iter(events.into_iter().map(Ok)))
    }
}

async fn start(s: &Scratch, model: Arc<Routed>) -> SessionHandle {
    let none = Path::new("/nonexistent/settings.toml");
    let overrides = [format!(
        "context.global_dir=\"{}\"",
        s.home().join(".troupe").display()
    )];
    let settings = load_with(none, none, &[], &overrides)
        .expect("settings")
        .settings;
    start_session(
        &s.ws(),
        Arc::new(settings),
        model,
        ApprovalMode::Yolo,
        false,
    )
    .await
}

/// Reads events until `started` subagents have started; answers the turn's end if it
/// came first.
async fn until_started(session: &SessionHandle, started: usize) {
    let mut seen = 0;
    while seen < started {
        match session.next_event().await.expect("event") {
            Event::Ui(UiEvent::Agent(update)) if matches!(update.what, AgentStep::Started) => {
                seen += 1
            }
            Event::Ui(UiEvent::TurnFinished(outcome)) => {
                panic!("the turn ended first: {outcome:?}")
            }
            _ => {}
        }
    }
}

async fn turn_end(session: &SessionHandle) -> TurnOutcome {
    loop {
        if let Event::Ui(UiEvent::TurnFinished(outcome)) =
            session.next_event().await.expect("event")
        {
            return outcome;
        }
    }
}

async fn agents(session: &SessionHandle) -> Vec<troupe::protocol::AgentRow> {
    match session.request(Op::ListAgents).await {
        Ok(OpReply::Agents(rows)) => rows,
        other => panic!("agents: {other:?}"),
    }
}

#[test]
fn cancelling_one_child_answers_its_call_aborted_while_its_sibling_reports() {
    let s = Scratch::new();
    let model = Arc::new(Routed {
        both_hang: false,
        parent_requests: Mutex::default(),
    });
    let m = model.clone();
    System::new().block_on(async move {
        let session = start(&s, m.clone()).await;
        session.submit(user_turn("PARENT: two helpers"));
        until_started(&session, 2).await;
        // A reports at once; B, whichever number it got, still runs.
        loop {
            match session.next_event().await.expect("event") {
                Event::Ui(UiEvent::Agent(update))
                    if matches!(&update.what, AgentStep::Finished(t) if t.reason == "GOAL") =>
                {
                    break
                }
                _ => {}
            }
        }
        let rows = agents(&session).await;
        let b = rows
            .iter()
            .find(|r| r.state == AgentState::Running)
            .expect("B running");
        session
            .request(Op::CancelAgent(b.number))
            .await
            .expect("cancel B");
        assert!(matches!(
            turn_end(&session).await,
            TurnOutcome::Completed { .. }
        ));
        let rows = agents(&session).await;
        let mut states: Vec<String> = rows.iter().map(|r| format!("{:?}", r.state)).collect();
        states.sort();
        assert_eq!(states, ["Finished(\"ABORTED\")", "Finished(\"GOAL\")"]);
        let results =
            serde_json::to_string(&m.parent_requests.lock().unwrap()[1].contents[2]).unwrap();
        assert!(results.contains("Termination Reason: GOAL"), "{results}");
        assert!(results.contains("Termination Reason: ABORTED"), "{results}");
        // A stopped agent cannot be stopped again.
        assert!(session.request(Op::CancelAgent(b.number)).await.is_err());
        session.shutdown(EndReason::Exit).await;
    });
}

#[test]
fn cancelling_the_turn_ends_every_child_of_the_tree() {
    let s = Scratch::new();
    let model = Arc::new(Routed {
        both_hang: true,
        parent_requests: Mutex::default(),
    });
    System::new().block_on(async move {
        let session = start(&s, model).await;
        session.submit(user_turn("PARENT: two helpers that never answer"));
        until_started(&session, 2).await;
        session.submit(Op::Cancel);
        assert_eq!(turn_end(&session).await, TurnOutcome::Cancelled);
        // Every child has ended (its slot freed) by the time the turn has.
        let mut rows = agents(&session).await;
        for _ in 0..200 {
            if rows
                .iter()
                .all(|r| matches!(r.state, AgentState::Finished(_)))
            {
                break;
            }
            tokio::task::yield_now().await;
            rows = agents(&session).await;
        }
        let states: Vec<_> = rows.iter().map(|r| r.state.clone()).collect();
        assert_eq!(
            states,
            [
                AgentState::Finished("ABORTED".into()),
                AgentState::Finished("ABORTED".into())
            ]
        );
        session.shutdown(EndReason::Exit).await;
    });
}
