//! History rules and compression across several turns of one session: the session runs
//! in this process, driven through its handle, the model is the real Gemini provider talking to a loopback HTTP server, and
//! what the model was sent is read off the wire.

use std::path::Path;
use std::sync::Arc;

use actix::System;
use serde_json::{json, Value};

use troupe::actors::session::SessionHandle;
use troupe::protocol::content::{Content, Role};
use troupe::protocol::{
    ApprovalDecision, ApprovalMode, CompressionOutcome, Event, Op, OpReply, TurnOutcome, UiEvent,
};
use troupe::providers::select::{select, ModelChoice};

use crate::common::in_process::{start_session, user_turn};
use crate::common::loopback::{Captured, Loopback, Reply};
use crate::common::Scratch;

struct Harness {
    session: SessionHandle,
    notices: Vec<String>,
}

impl Harness {
    /// Starts a session in `ws` whose Gemini base URL is `server`. Must run inside a System.
    async fn start(ws: &Path, server: &Loopback, overrides: &[&str]) -> Self {
        let none = Path::new("/nonexistent");
        let mut all = vec![
            "model.retry.initial_delay_ms=1".to_string(),
            "model.retry.max_delay_ms=2".to_string(),
        ];
        all.extend(overrides.iter().map(|s| s.to_string()));
        let settings = troupe::settings::load_with(none, none, &[], &all)
            .expect("settings")
            .settings;
        let url = server.url.clone();
        let env = move |name: &str| match name {
            "GEMINI_API_KEY" => Some("test-key".to_string()),
            "GOOGLE_GEMINI_BASE_URL" => Some(url.clone()),
            _ => None,
        };
        let choice = ModelChoice {
            fake_responses: None,
            record_responses: None,
            env: &env,
        };
        let model = select(&settings, &choice).expect("model");
        let settings = Arc::new(settings);
        let session = start_session(ws, settings, model, ApprovalMode::Yolo, true).await;
        Self {
            session,
            notices: Vec::new(),
        }
    }

    /// Sends a prompt and waits for the turn to end.
    async fn turn(&mut self, text: &str) -> TurnOutcome {
        self.session.submit(user_turn(text));
        self.until_finished().await
    }

    /// Reads events until the turn ends; approves every call asked about (noting each
    /// request as a notice `approval asked: TOOL`).
    async fn until_finished(&mut self) -> TurnOutcome {
        loop {
            match self.session.next_event().await.expect("event stream") {
                Event::Ui(UiEvent::TurnFinished(outcome)) => return outcome,
                Event::Ui(UiEvent::Notice(n)) => self.notices.push(n),
                Event::Approval { id, request } => {
                    self.notices
                        .push(format!("approval asked: {}", request.tool_name));
                    self.session.submit(Op::Decide {
                        id,
                        decision: ApprovalDecision::ProceedOnce,
                    });
                }
                _ => {}
            }
        }
    }

    async fn history(&self) -> Vec<Content> {
        match self.session.request(Op::GetHistory).await {
            Ok(OpReply::History(history)) => history,
            other => panic!("no history: {other:?}"),
        }
    }

    async fn compress(&self, force: bool) -> CompressionOutcome {
        match self.session.request(Op::Compress { force }).await {
            Ok(OpReply::Compression(outcome)) => outcome,
            other => panic!("no compression outcome: {other:?}"),
        }
    }
}

fn text_chunk(text: &str, prompt_tokens: u64) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens + 5}})
}

fn answer(text: &str) -> Reply {
    Reply::gemini_sse(&[text_chunk(text, 50)])
}

fn calls(calls: Value) -> Reply {
    Reply::gemini_sse(&[
        json!({"candidates": [{"content": {"role": "model", "parts": calls},
        "finishReason": "STOP", "index": 0}]}),
    ])
}

fn server_error() -> Reply {
    Reply::json(
        500,
        &json!({"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}),
    )
}

fn user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

fn model(text: &str) -> Value {
    json!({"role": "model", "parts": [{"text": text}]})
}

fn contents(request: &Captured) -> Value {
    request.body["contents"].clone()
}

/// Every functionCall id sent is answered by exactly one functionResponse, in the
/// content right after it.
fn assert_calls_answered_once(contents: &Value) {
    let list = contents.as_array().expect("contents");
    for (i, content) in list.iter().enumerate() {
        for part in content["parts"].as_array().into_iter().flatten() {
            let Some(id) = part["functionCall"]["id"].as_str() else {
                continue;
            };
            let answers: usize = list
                .iter()
                .flat_map(|c| c["parts"].as_array().into_iter().flatten())
                .filter(|p| p["functionResponse"]["id"].as_str() == Some(id))
                .count();
            assert_eq!(
                answers, 1,
                "call {id} answered {answers} times in {contents}"
            );
            let next = &list[i + 1]["parts"];
            assert!(
                next.as_array()
                    .into_iter()
                    .flatten()
                    .any(|p| p["functionResponse"]["id"].as_str() == Some(id)),
                "call {id} is not answered right after it: {contents}"
            );
        }
    }
}

#[test]
fn a_turn_that_finally_fails_is_rolled_back() {
    let s = Scratch::new();
    let server = Loopback::start(vec![
        answer("one"),
        server_error(),
        server_error(),
        answer("three"),
    ]);
    System::new().block_on(async {
        let mut h = Harness::start(&s.ws(), &server, &["model.retry.max_attempts=2"]).await;
        assert_eq!(
            h.turn("first").await,
            TurnOutcome::Completed {
                response: "one".into()
            }
        );
        let before = h.history().await;
        let outcome = h.turn("second").await;
        assert_eq!(
            outcome,
            TurnOutcome::Failed {
                message: "gemini answered HTTP 500: boom (INTERNAL) (gave up after 2 attempts)"
                    .into()
            }
        );
        assert_eq!(h.history().await, before, "the failed input is rolled back");
        assert_eq!(
            h.turn("third").await,
            TurnOutcome::Completed {
                response: "three".into()
            }
        );
    });
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        contents(&requests[1]),
        json!([user("first"), model("one"), user("second")])
    );
    assert_eq!(
        contents(&requests[3]),
        json!([user("first"), model("one"), user("third")])
    );
}

#[test]
fn calls_stay_answered_when_the_follow_up_fails_or_is_cancelled() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let server = Loopback::start(vec![
        calls(json!([{"functionCall": {"name": "read_file", "args": {"file_path": "a.txt"}}}])),
        Reply::json(
            400,
            &json!({"error": {"code": 400, "message": "bad request", "status": "INVALID_ARGUMENT"}}),
        ),
        calls(
            json!([{"functionCall": {"name": "test_sleep", "args": {"secs": 30}}},
                     {"functionCall": {"name": "read_file", "args": {"file_path": "a.txt"}}}]),
        ),
        answer("all good"),
    ]);
    System::new().block_on(async {
        let mut h = Harness::start(&s.ws(), &server, &[]).await;
        let outcome = h.turn("read it").await;
        assert!(matches!(outcome, TurnOutcome::Failed { ref message } if message.contains("HTTP 400: bad request")), "{outcome:?}");
        // The tool result answers the input, so nothing is rolled back.
        let history = h.history().await;
        assert_eq!(history.len(), 3);
        assert_eq!(history[2].role, Role::User);
        assert!(history[2].has_function_response());

        // A turn cancelled while a tool runs: every call still gets its answer.
        h.session.submit(user_turn("sleep"));
        loop {
            match h.session.next_event().await.expect("event") {
                Event::Ui(UiEvent::ToolCallStatus { name, status, .. })
                    if name == "test_sleep" && status == troupe::protocol::CallStatus::Executing =>
                {
                    break
                }
                Event::Ui(UiEvent::TurnFinished(o)) => panic!("turn ended early: {o:?}"),
                _ => {}
            }
        }
        h.session.submit(Op::Cancel);
        assert_eq!(h.until_finished().await, TurnOutcome::Cancelled);
        assert_eq!(h.turn("go on").await, TurnOutcome::Completed { response: "all good".into() });
    });
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let last = contents(&requests[3]);
    assert_calls_answered_once(&last);
    let list = last.as_array().expect("contents");
    // read it, call, [response, note, sleep], calls, [responses, note, go on]: the
    // interruption is told in the user turn, not as a model turn the model might
    // take for an answer to repeat (not gemini-cli's marker).
    assert_eq!(list.len(), 5, "{last}");
    let note = json!({"text": troupe::actors::chat::INTERRUPTED_NOTE});
    assert!(note["text"].as_str().is_some_and(|n| n.starts_with(
        "(Note from Troupe, not from the user: your previous response was interrupted"
    )));
    assert_eq!(list[2]["parts"][1], note);
    assert_eq!(list[2]["parts"][2], json!({"text": "sleep"}));
    assert_eq!(list[3]["role"], "model");
    let responses = list[4]["parts"].as_array().expect("parts");
    assert_eq!(responses.len(), 4);
    assert_eq!(responses[0]["functionResponse"]["name"], "test_sleep");
    assert_eq!(responses[1]["functionResponse"]["name"], "read_file");
    assert_eq!(responses[2], note);
    assert_eq!(responses[3], json!({"text": "go on"}));
    assert!(!last
        .to_string()
        .contains("[The previous response was interrupted"));
}

#[test]
fn history_is_compressed_past_the_threshold_and_bad_summaries_are_discarded() {
    let s = Scratch::new();
    let long_question = format!("first {}", "q".repeat(3000));
    // Varied text: 3,000 times the same letter would be stopped as a loop.
    let long_answer: String = format!(
        "answer {}",
        (0..340).map(|i| format!("ans{i:05} ")).collect::<String>()
    );
    let summary =
        "<state_snapshot>The user asked a long question; it was answered.</state_snapshot>";
    let generated = |text: &str| {
        Reply::json(
            200,
            &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP", "index": 0}]}),
        )
    };
    let server = Loopback::start(vec![
        // Turn 1 reports 1,400 prompt tokens: with a prefix of about 200, the history
        // passes 0.5 × (2000 - 200).
        Reply::gemini_sse(&[text_chunk(&long_answer, 1400)]),
        generated(summary),
        answer("second answer"),
        generated("   "),
        generated(&"x".repeat(20_000)),
    ]);
    System::new().block_on(async {
        let prompt = s.root().join("short.md");
        std::fs::write(&prompt, "You are a test agent.").expect("prompt");
        let prompt_setting = format!("model.system_prompt_file={}", prompt.display());
        let mut h = Harness::start(
            &s.ws(),
            &server,
            &["model.compression.token_limits=gemini-*=2000", "tools.core=read_file", &prompt_setting],
        ).await;
        assert!(matches!(h.turn(&long_question).await, TurnOutcome::Completed { .. }));
        assert!(matches!(h.turn("second").await, TurnOutcome::Completed { .. }));
        assert_eq!(h.notices.len(), 1, "{:?}", h.notices);
        assert!(h.notices[0].starts_with("Chat history compressed from "), "{:?}", h.notices);
        let compressed = h.history().await;
        assert_eq!(compressed.len(), 4);

        let outcome = h.compress(true).await;
        assert_eq!(
            outcome,
            CompressionOutcome::Failed { reason: "the model returned an empty summary; the history is unchanged".into() }
        );
        let outcome = h.compress(true).await;
        assert!(
            matches!(&outcome, CompressionOutcome::Failed { reason } if reason.starts_with("the summary would grow the history from ")),
            "{outcome:?}"
        );
        assert_eq!(h.history().await, compressed);
        // Not forced and below the threshold: nothing to do, no model call.
        let outcome = h.compress(false).await;
        assert!(matches!(outcome, CompressionOutcome::Noop { .. }), "{outcome:?}");
    });
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let summary_call = &requests[1];
    assert_eq!(
        summary_call.path,
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(
        contents(summary_call),
        json!([
            user(&long_question),
            model(&long_answer),
            user("Write the <state_snapshot> of the history above.")
        ])
    );
    assert_eq!(
        summary_call.body["generationConfig"],
        json!({"temperature": 0.0, "topP": 1.0})
    );
    assert!(summary_call.body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("<state_snapshot>")));
    assert!(summary_call.body.get("tools").is_none());
    assert_eq!(
        contents(&requests[2]),
        json!([
            user(summary),
            model("Got it. Thanks for the additional context!"),
            user("second")
        ])
    );
}

#[test]
fn an_empty_answer_after_tool_results_keeps_the_results() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let server = Loopback::start(vec![
        calls(json!([{"functionCall": {"name": "read_file", "args": {"file_path": "a.txt"}}}])),
        Reply::gemini_sse(&[text_chunk("", 50)]),
        answer("next"),
    ]);
    System::new().block_on(async {
        let mut h = Harness::start(&s.ws(), &server, &[]).await;
        assert_eq!(
            h.turn("read").await,
            TurnOutcome::Completed {
                response: String::new()
            }
        );
        assert_eq!(
            h.turn("more").await,
            TurnOutcome::Completed {
                response: "next".into()
            }
        );
    });
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent = contents(&requests[2]);
    assert_calls_answered_once(&sent);
    let list = sent.as_array().expect("contents");
    assert_eq!(list.len(), 3, "{sent}");
    assert_eq!(list[2]["parts"][1], json!({"text": "more"}));
}

#[test]
fn the_fixed_prefix_alone_does_not_trigger_compression() {
    // A system prompt of about 4,000 tokens in an 8,192-token window: the first turn
    // reports 4,600 prompt tokens (past 0.5 × 8,192), but its history is small.
    let s = Scratch::new();
    let prompt = s.root().join("long.md");
    std::fs::write(&prompt, "Follow the house rules. ".repeat(670)).expect("prompt");
    let prompt_setting = format!("model.system_prompt_file={}", prompt.display());
    let server = Loopback::start(vec![
        Reply::gemini_sse(&[text_chunk("first answer", 4600)]),
        answer("second answer"),
    ]);
    System::new().block_on(async {
        let mut h = Harness::start(
            &s.ws(),
            &server,
            &[
                "model.compression.token_limits=gemini-*=8192",
                "tools.core=read_file",
                &prompt_setting,
            ],
        )
        .await;
        assert!(matches!(
            h.turn("first").await,
            TurnOutcome::Completed { .. }
        ));
        assert!(matches!(
            h.turn("second").await,
            TurnOutcome::Completed { .. }
        ));
        assert!(h.notices.is_empty(), "{:?}", h.notices);
        assert_eq!(h.history().await.len(), 4);
    });
    let requests = server.requests();
    // No summary call between the two turns.
    assert_eq!(requests.len(), 2);
    assert!(requests
        .iter()
        .all(|r| r.path.contains(":streamGenerateContent")));
}

#[test]
fn an_approver_that_lets_a_looping_turn_go_on_turns_detection_off_for_it() {
    // The approver here answers "proceed" (as a user at the REPL may): the loop found at
    // the fifth identical call is reported to it, and the turn then runs to its limit.
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let server = Loopback::always(calls(
        json!([{"functionCall": {"name": "read_file", "args": {"file_path": "a.txt"}}}]),
    ));
    System::new().block_on(async {
        let mut h = Harness::start(&s.ws(), &server, &["model.max_turns=8"]).await;
        let outcome = h.turn("read it").await;
        assert_eq!(outcome, TurnOutcome::MaxTurns { limit: 8 });
        assert_eq!(h.notices, ["approval asked: loop_detection"]);
    });
    assert_eq!(server.requests().len(), 8);
}
