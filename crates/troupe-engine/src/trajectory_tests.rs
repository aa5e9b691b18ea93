use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::protocol::content::{CallArgs, FunctionResponse, Part};
use crate::protocol::{AgentTotals, CallStatus};

const T: &str = "2026-12-02T10:00:00.000Z";

fn agent() -> AgentInfo {
    AgentInfo {
        name: "troupe".into(),
        version: "0.1.0".into(),
        model_name: None,
        extra: None,
    }
}

fn completed(id: &str, name: &str, output: &str, data: Option<Value>) -> UiEvent {
    UiEvent::ToolCallCompleted(Arc::new(CompletedCall {
        call_id: id.into(),
        name: name.into(),
        args: CallArgs::new(json!({"file_path": "a.txt"})),
        status: CallStatus::Success,
        response_parts: vec![Part::function_response(FunctionResponse {
            id: Some(id.into()),
            name: name.into(),
            response: json!({"output": output}),
            parts: None,
        })],
        display: String::new(),
        error: None,
        duration: Duration::ZERO,
        data,
        timeline: Default::default(),
    }))
}

fn usage(prompt: u64, out: u64) -> UiEvent {
    UiEvent::Usage(Usage {
        prompt_token_count: prompt,
        candidates_token_count: out,
        total_token_count: prompt + out,
        ..Usage::default()
    })
}

fn feed(builder: &mut TrajectoryBuilder, events: Vec<UiEvent>) {
    for event in events {
        builder.observe(&event, T);
    }
}

#[test]
fn a_turn_is_a_user_step_then_a_step_per_model_request() {
    let mut b = TrajectoryBuilder::new(agent());
    assert!(b.is_empty());
    feed(
        &mut b,
        vec![
            UiEvent::SessionStarted {
                session_id: "s1".into(),
                model: "gemini-2.5-pro".into(),
            },
            UiEvent::TurnStarted {
                turn: 1,
                prompt: "read a.txt".into(),
            },
            UiEvent::ModelRequest { round: 1 },
            UiEvent::TextDelta("Let me look.".into()),
            usage(100, 10),
            completed("c1", "read_file", "hello", None),
            UiEvent::ModelRequest { round: 2 },
            UiEvent::TextDelta("half an answ".into()),
            UiEvent::Retry {
                attempt: 1,
                reason: "stream cut".into(),
            },
            UiEvent::TextDelta("It says hello.".into()),
            usage(120, 5),
            UiEvent::TurnFinished(TurnOutcome::Completed {
                response: "It says hello.".into(),
            }),
        ],
    );
    let doc = serde_json::to_value(b.document()).unwrap();
    assert_eq!(doc["schema_version"], SCHEMA_VERSION);
    assert_eq!(doc["session_id"], "s1");
    assert_eq!(doc["agent"]["model_name"], "gemini-2.5-pro");
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[0]["source"], "user");
    assert_eq!(steps[0]["message"], "read a.txt");
    assert_eq!(steps[1]["step_id"], 2);
    assert_eq!(steps[1]["message"], "Let me look.");
    assert_eq!(steps[1]["tool_calls"][0]["function_name"], "read_file");
    assert_eq!(steps[1]["tool_calls"][0]["arguments"]["file_path"], "a.txt");
    assert_eq!(
        steps[1]["observation"]["results"][0],
        json!({"source_call_id": "c1", "content": "hello", "extra": {"status": "success"}})
    );
    assert_eq!(steps[1]["metrics"]["prompt_tokens"], 100);
    // The retried attempt's text is gone; only the retry's answer is there.
    assert_eq!(steps[2]["message"], "It says hello.");
    assert!(steps[2].get("tool_calls").is_none());
    assert_eq!(doc["final_metrics"]["total_prompt_tokens"], 220);
    assert_eq!(doc["final_metrics"]["total_completion_tokens"], 15);
    assert_eq!(doc["final_metrics"]["total_steps"], 3);
    assert_eq!(doc["final_metrics"]["extra"]["tool_calls"], 1);
}

#[test]
fn a_turn_that_does_not_complete_ends_with_a_system_step() {
    let mut b = TrajectoryBuilder::new(agent());
    feed(
        &mut b,
        vec![
            UiEvent::TurnStarted {
                turn: 1,
                prompt: "go".into(),
            },
            UiEvent::ModelRequest { round: 1 },
            UiEvent::TurnFinished(TurnOutcome::Failed {
                message: "HTTP 400".into(),
            }),
        ],
    );
    let doc = serde_json::to_value(b.document()).unwrap();
    let last = doc["steps"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["source"], "system");
    assert_eq!(last["message"], "The turn failed: HTTP 400");
    assert!(last.get("metrics").is_none());
}

#[test]
fn a_subagent_is_embedded_and_referenced_from_the_call_that_ran_it() {
    let mut b = TrajectoryBuilder::new(agent());
    let update = |what: AgentStep| {
        UiEvent::Agent(Arc::new(AgentUpdate {
            agent_id: "generalist-1".into(),
            parent_id: "s1".into(),
            name: "generalist".into(),
            call_id: "c1".into(),
            what,
        }))
    };
    let inner = |event: UiEvent| update(AgentStep::Event(Box::new(event)));
    feed(
        &mut b,
        vec![
            UiEvent::SessionStarted {
                session_id: "s1".into(),
                model: "m".into(),
            },
            UiEvent::TurnStarted {
                turn: 1,
                prompt: "delegate".into(),
            },
            UiEvent::ModelRequest { round: 1 },
            update(AgentStep::Queued {
                prompt: "count the files".into(),
                running: 0,
            }),
            update(AgentStep::Started),
            inner(UiEvent::TurnStarted {
                turn: 1,
                prompt: "count the files".into(),
            }),
            inner(UiEvent::ModelRequest { round: 1 }),
            inner(completed("k1", "list_directory", "a.txt", None)),
            inner(UiEvent::ModelRequest { round: 2 }),
            inner(UiEvent::TextDelta("one file".into())),
            update(AgentStep::Finished(AgentTotals {
                reason: "GOAL".into(),
                ..AgentTotals::default()
            })),
            completed(
                "c1",
                "invoke_agent",
                "Subagent 'generalist' finished.",
                Some(json!({"agentId": "generalist-1"})),
            ),
            UiEvent::ModelRequest { round: 2 },
            UiEvent::TextDelta("There is one file.".into()),
            UiEvent::TurnFinished(TurnOutcome::Completed {
                response: String::new(),
            }),
        ],
    );
    let doc = serde_json::to_value(b.document()).unwrap();
    let reference = &doc["steps"][1]["observation"]["results"][0]["subagent_trajectory_ref"];
    assert_eq!(reference[0]["trajectory_id"], "generalist-1");
    let sub = &doc["subagent_trajectories"][0];
    assert_eq!(sub["trajectory_id"], "generalist-1");
    assert_eq!(sub["agent"]["extra"]["subagent"], "generalist");
    assert_eq!(sub["agent"]["extra"]["termination_reason"], "GOAL");
    let steps = sub["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[0]["message"], "count the files");
    assert_eq!(steps[1]["tool_calls"][0]["function_name"], "list_directory");
    assert_eq!(steps[2]["message"], "one file");
}

#[test]
fn a_request_still_in_flight_is_shown_as_far_as_it_got() {
    let mut b = TrajectoryBuilder::new(agent());
    feed(
        &mut b,
        vec![
            UiEvent::TurnStarted {
                turn: 1,
                prompt: "go".into(),
            },
            UiEvent::ModelRequest { round: 1 },
            UiEvent::TextDelta("partial".into()),
        ],
    );
    let doc = b.document();
    assert_eq!(doc.steps.len(), 2);
    assert_eq!(doc.steps[1].message, "partial");
    assert_eq!(doc.steps[1].step_id, 2);
}
