//! Sessions run in this process through the library, for what a script cannot do: a
//! model that reacts to a value only known at run time (a PID), and the `Memory` op a
//! front end submits for `/memory show|refresh`, each driven through the session's
//! handle.

use std::path::Path;
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use futures::stream;
use serde_json::{json, Value};

use troupe::actors::session::{EndReason, SessionHandle};
use troupe::engine::model::{ModelEvent, ModelRequest};
use troupe::frontends::headless::OutputFormat;
use troupe::frontends::run_turn;
use troupe::platform::workspace::Workspace;
use troupe::protocol::content::{FunctionCall, Part};
use troupe::protocol::{
    ApprovalDecision, ApprovalMode, ApprovalRequest, ConfirmationDetails, Event, Op, OpReply,
    UiEvent,
};
use troupe::providers::{ModelClient, ModelStream};
use troupe::settings::{load_with, Settings};

use crate::common::in_process::{self, user_turn};
use crate::common::Scratch;

/// Starts an in-process session driven through its handle, in `default` mode without
/// the test tools. Must run inside a System.
async fn start_session(
    ws: Arc<Workspace>,
    settings: Arc<Settings>,
    model: Arc<dyn ModelClient>,
) -> SessionHandle {
    in_process::start_session(ws.primary(), settings, model, ApprovalMode::Default, false).await
}

/// Reads the session's events until its turn ends: each UI event goes to `seen`, each
/// approval request is answered by `decide`.
async fn until_turn_ends(
    session: &SessionHandle,
    mut decide: impl FnMut(&ApprovalRequest) -> ApprovalDecision,
    mut seen: impl FnMut(&UiEvent),
) {
    while let Some(event) = session.next_event().await {
        match event {
            Event::Ui(UiEvent::TurnFinished(_)) => return,
            Event::Ui(event) => seen(&event),
            Event::Approval { id, request } => {
                let decision = decide(&request);
                session.submit(Op::Decide { id, decision });
            }
            Event::OpDone { .. } => {}
        }
    }
    panic!("the session's events ended before its turn");
}

async fn memory(session: &SessionHandle, refresh: bool) -> troupe::protocol::MemoryReport {
    match session.request(Op::Memory { refresh }).await {
        Ok(OpReply::Memory(report)) => report,
        other => panic!("no memory report: {other:?}"),
    }
}

/// Settings for an in-process session whose global context files live in the scratch
/// home (never the real one).
fn settings(s: &Scratch, extra: &[&str]) -> Arc<Settings> {
    let mut overrides = vec![format!(
        "context.global_dir=\"{}\"",
        s.home().join(".troupe").display()
    )];
    overrides.extend(extra.iter().map(|o| o.to_string()));
    let loaded = load_with(
        Path::new("/nonexistent/user.toml"),
        Path::new("/nonexistent/project.toml"),
        &[],
        &overrides,
    )
    .expect("settings");
    Arc::new(loaded.settings)
}

/// The text of every functionResponse output in the request's last content.
fn last_outputs(request: &ModelRequest) -> Vec<String> {
    request
        .contents
        .last()
        .map(|c| c.parts.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|p: &Part| p.function_response.as_deref())
        .map(|fr| {
            fr.response["output"]
                .as_str()
                .or_else(|| fr.response["error"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

fn call(name: &str, args: Value) -> ModelEvent {
    ModelEvent::FunctionCall {
        call: FunctionCall {
            id: None,
            name: name.into(),
            args,
        },
        thought_signature: None,
    }
}

/// Starts a background server, then lists it and reads its output by the PID it was
/// given, then answers with what it saw.
struct FollowsBackground {
    step: Mutex<usize>,
    seen: Mutex<Vec<String>>,
}

impl ModelClient for FollowsBackground {
    fn provider(&self) -> &str {
        "reactive-test"
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let mut step = self.step.lock().unwrap();
        let outputs = last_outputs(&request);
        self.seen.lock().unwrap().extend(outputs.iter().cloned());
        let events = match *step {
            0 => vec![call(
                "run_shell_command",
                json!({
                    "command": "echo server-ready; echo listening on 8080; exec sleep 321.5",
                    "is_background": true,
                    "delay_ms": 1500
                }),
            )],
            1 => {
                let started = outputs.first().cloned().unwrap_or_default();
                let pid: i64 = started
                    .split("PID: ")
                    .nth(1)
                    .and_then(|rest| rest.split('.').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(-1);
                vec![
                    call("list_background_processes", json!({})),
                    call("read_background_output", json!({"pid": pid, "lines": 1})),
                    call("read_background_output", json!({"pid": 1})),
                ]
            }
            _ => vec![ModelEvent::Text("followed it".into())],
        };
        *step += 1;
        let mut events = events;
        events.push(ModelEvent::Finished("STOP".into()));
        Box::pin(stream::iter(events.into_iter().map(Ok)))
    }
}

#[test]
fn background_output_is_read_by_pid_and_the_server_dies_with_the_session() {
    let s = Scratch::new();
    let model = Arc::new(FollowsBackground {
        step: Mutex::new(0),
        seen: Mutex::new(Vec::new()),
    });
    let ws = Arc::new(Workspace::new(&s.ws(), &[]).unwrap());
    let summary = run_turn(
        ws,
        settings(&s, &["approval.mode=yolo"]),
        model.clone(),
        "start the server".into(),
        OutputFormat::Silent,
        None,
        true,
    )
    .expect("run");
    assert_eq!(summary.response, "followed it");
    let seen = model.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    let pid = seen[0]
        .split("PID: ")
        .nth(1)
        .and_then(|rest| rest.split('.').next())
        .unwrap()
        .to_string();
    assert_eq!(
        seen[1],
        format!(
            "- [PID {pid}] RUNNING: `echo server-ready; echo listening on 8080; exec sleep 321.5`"
        )
    );
    assert_eq!(seen[2], "Showing last 1 of 2 lines:\nlistening on 8080");
    assert_eq!(
        seen[3],
        "Access denied. Background process ID 1 not found in this session's history."
    );
    // The session ended: the server's process group is gone.
    let mut alive = true;
    for _ in 0..50 {
        let ps = std::process::Command::new("ps")
            .args(["-eo", "pgid=,stat=,args="])
            .output()
            .expect("ps");
        alive = String::from_utf8_lossy(&ps.stdout).lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&pid.as_str()) || l.contains("sleep 321.5"))
                && !f.get(1).is_some_and(|st| st.starts_with('Z'))
        });
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!alive, "the background server outlived its session");
}

/// Answers every request with text, keeping the system prompts it was sent.
struct RecordsPrompts {
    prompts: Mutex<Vec<String>>,
}

impl ModelClient for RecordsPrompts {
    fn provider(&self) -> &str {
        "recording-test"
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        self.prompts
            .lock()
            .unwrap()
            .push(request.system_instruction.clone().unwrap_or_default());
        Box::pin(stream::iter(vec![
            Ok(ModelEvent::Text("ok".into())),
            Ok(ModelEvent::Finished("STOP".into())),
        ]))
    }
}

#[test]
fn memory_show_and_refresh_update_the_system_prompt() {
    let s = Scratch::new();
    let agents = s.write("AGENTS.md", "First version.\n");
    let model = Arc::new(RecordsPrompts {
        prompts: Mutex::new(Vec::new()),
    });
    let ws = Arc::new(Workspace::new(&s.ws(), &[]).unwrap());
    let settings = settings(&s, &[]);
    let system = System::new();
    let recorded = model.clone();
    let file = agents.clone();
    let reports = system.block_on(async move {
        let session = start_session(ws, settings, recorded).await;
        let shown = memory(&session, false).await;
        std::fs::write(&file, "Second version.\n").unwrap();
        let unchanged = memory(&session, false).await;
        let refreshed = memory(&session, true).await;
        session.submit(user_turn("hi"));
        until_turn_ends(&session, |_| ApprovalDecision::ProceedOnce, |_| {}).await;
        session.shutdown(EndReason::Exit).await;
        (shown, unchanged, refreshed)
    });
    let (shown, unchanged, refreshed) = reports;
    let path = agents.display().to_string();
    assert_eq!(shown.files, vec![path.clone()]);
    assert_eq!(
        shown.text,
        format!(
            "--- Context from: {path} ---\nFirst version.\n--- End of Context from: {path} ---"
        )
    );
    assert_eq!(unchanged, shown);
    assert_eq!(refreshed.files, vec![path.clone()]);
    assert!(refreshed.text.contains("Second version."));
    let prompts = model.prompts.lock().unwrap();
    assert_eq!(prompts.len(), 1);
    assert!(prompts[0].contains("Second version."), "{}", prompts[0]);
    assert!(!prompts[0].contains("First version."));
}

/// Runs one shell command, then answers.
struct RunsOneCommand {
    command: String,
    step: Mutex<usize>,
}

impl ModelClient for RunsOneCommand {
    fn provider(&self) -> &str {
        "one-command-test"
    }

    fn stream(&self, _: ModelRequest) -> ModelStream {
        let mut step = self.step.lock().unwrap();
        let first = *step == 0;
        *step += 1;
        let event = if first {
            call("run_shell_command", json!({"command": self.command}))
        } else {
            ModelEvent::Text("done".into())
        };
        Box::pin(stream::iter(vec![
            Ok(event),
            Ok(ModelEvent::Finished("STOP".into())),
        ]))
    }
}

#[test]
fn live_output_streams_and_cancelling_kills_the_group_keeping_partial_output() {
    let s = Scratch::new();
    let command = "echo pgid=$$; echo partial-line; sleep 322.5; echo never";
    let model = Arc::new(RunsOneCommand {
        command: command.into(),
        step: Mutex::new(0),
    });
    let ws = Arc::new(Workspace::new(&s.ws(), &[]).unwrap());
    let settings = settings(&s, &[]);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let asked_by_front = asked.clone();
    let system = System::new();
    let (chunks, history) = system.block_on(async move {
        let session = start_session(ws, settings, model).await;
        session.submit(user_turn("run it"));
        let mut chunks = String::new();
        let mut cancelled = false;
        let approve = |request: &ApprovalRequest| {
            asked_by_front.lock().unwrap().push(request.details.clone());
            ApprovalDecision::ProceedOnce
        };
        until_turn_ends(&session, approve, |event| {
            if let UiEvent::ToolOutputChunk { chunk, .. } = event {
                chunks.push_str(chunk);
                if chunks.contains("partial-line") && !cancelled {
                    cancelled = true;
                    session.submit(Op::Cancel);
                }
            }
        })
        .await;
        let history = match session.request(Op::GetHistory).await {
            Ok(OpReply::History(history)) => history,
            other => panic!("no history: {other:?}"),
        };
        session.shutdown(EndReason::Exit).await;
        (chunks, history)
    });
    let asked = asked.lock().unwrap();
    assert!(
        matches!(&asked[..], [ConfirmationDetails::Exec { command: c, root_commands, .. }]
            if c == command && root_commands == &["echo", "sleep"]),
        "{asked:?}"
    );
    assert!(chunks.starts_with("pgid="), "{chunks}");
    let response = history
        .iter()
        .flat_map(|c| c.parts.iter())
        .find_map(|p| p.function_response.clone())
        .expect("a function response");
    let output = response.response["output"].as_str().unwrap_or_default();
    assert!(
        output.starts_with("<untrusted_context>\nCommand was cancelled by user before it could complete. Below is the output before it was cancelled:\npgid="),
        "{}",
        response.response
    );
    assert!(output.contains("partial-line") && !output.contains("never"));
    assert_eq!(
        response.response["error"],
        "[Operation Cancelled] User cancelled tool execution."
    );
    let pgid: String = chunks["pgid=".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let ps = std::process::Command::new("ps")
        .args(["-eo", "pgid=,stat=,args="])
        .output()
        .expect("ps");
    let left: Vec<String> = String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&pgid.as_str()) || l.contains("sleep 322.5"))
                && !f.get(1).is_some_and(|st| st.starts_with('Z'))
        })
        .map(str::to_string)
        .collect();
    assert!(left.is_empty(), "cancelled command left {left:?}");
}

/// Runs the given commands one model turn each, then answers.
struct RunsCommands {
    commands: Vec<&'static str>,
    step: Mutex<usize>,
}

impl ModelClient for RunsCommands {
    fn provider(&self) -> &str {
        "commands-test"
    }

    fn stream(&self, _: ModelRequest) -> ModelStream {
        let mut step = self.step.lock().unwrap();
        let event = match self.commands.get(*step) {
            Some(command) => call("run_shell_command", json!({"command": command})),
            None => ModelEvent::Text("done".into()),
        };
        *step += 1;
        Box::pin(stream::iter(vec![
            Ok(event),
            Ok(ModelEvent::Finished("STOP".into())),
        ]))
    }
}

#[test]
fn always_allowing_a_command_allows_its_subcommand_only() {
    let s = Scratch::new();
    let commands = vec![
        "git tag -l",
        "git tag --list 'v*'",
        "git remote -v",
        "bash -c 'git tag -l'",
        "git tag -l && git remote",
    ];
    let model = Arc::new(RunsCommands {
        commands: commands.clone(),
        step: Mutex::new(0),
    });
    let ws = Arc::new(Workspace::new(&s.ws(), &[]).unwrap());
    let settings = settings(&s, &[]);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let front_asked = asked.clone();
    let system = System::new();
    system.block_on(async move {
        let session = start_session(ws, settings, model).await;
        session.submit(user_turn("go"));
        // The first request is allowed "always", later ones once.
        let decide = |request: &ApprovalRequest| {
            let mut asked = front_asked.lock().unwrap();
            let first = asked.is_empty();
            let command = request.args["command"].as_str().unwrap_or_default();
            asked.push(command.to_string());
            match first {
                true => ApprovalDecision::ProceedAlways,
                false => ApprovalDecision::ProceedOnce,
            }
        };
        until_turn_ends(&session, decide, |_| {}).await;
        session.shutdown(EndReason::Exit).await;
    });
    let asked = asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        vec!["git tag -l", "git remote -v", "git tag -l && git remote"]
    );
}
