//! `troupe bench --agents N [--calls M]`: one scripted parent turn starts N subagents
//! at once (`invoke_agent`, all in one answer); each child reads M files, one call per
//! model round, then calls `complete_task`; the parent answers once every report is
//! in. The model answers in process by what each request holds (whose it is and how
//! many rounds in), so children may send in any order. Prints the wall time, the time
//! per agent and the peak memory per agent.

use std::sync::Arc;
use std::time::Instant;

use actix::System;
use futures::stream;
use serde_json::json;

use super::measure::{peak_rss_mb, reset_peak_rss, round};
use super::BenchError;
use crate::actors::session::{SessionHandle, SessionOptions};
use crate::engine::model::{ModelEvent, ModelRequest};
use crate::frontends::headless::{self, HeadlessFront, OutputFormat};
use crate::platform::workspace::Workspace;
use crate::protocol::content::{FunctionCall, Role, Usage};
use crate::protocol::{ApprovalMode, EndReason, Op};
use crate::providers::{ModelClient, ModelStream};

const PARENT: &str = "bench-parent";
const CHILD: &str = "bench-child-";
/// Files the children read, in turn.
const FILES: usize = 64;

/// The parent's and the children's model, answering by request.
struct AgentsModel {
    agents: usize,
    calls: usize,
}

impl AgentsModel {
    fn answer(&self, request: &ModelRequest) -> Vec<ModelEvent> {
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
        let call = |name: &str, args: serde_json::Value| ModelEvent::FunctionCall {
            call: FunctionCall {
                id: None,
                name: name.into(),
                args,
            },
            thought_signature: None,
        };
        let mut events = match (first.contains(PARENT), rounds) {
            (true, 0) => (0..self.agents)
                .map(|i| {
                    call(
                        "invoke_agent",
                        json!({"agent_name": "generalist", "prompt": format!("{CHILD}{i}")}),
                    )
                })
                .collect(),
            (true, _) => vec![ModelEvent::Text(format!(
                "All {} agents reported.",
                self.agents
            ))],
            (false, r) if r < self.calls => {
                let i: usize = first.trim().trim_start_matches(CHILD).parse().unwrap_or(0);
                vec![call(
                    crate::tools::read_file::NAME,
                    json!({"file_path": file_name(i + r)}),
                )]
            }
            (false, _) => vec![call(
                crate::tools::complete_task::COMPLETE_TASK,
                json!({"result": {"response": "done"}}),
            )],
        };
        events.push(ModelEvent::Usage(Usage {
            prompt_token_count: 100,
            candidates_token_count: 10,
            total_token_count: 110,
            ..Usage::default()
        }));
        events.push(ModelEvent::Finished("STOP".into()));
        events
    }
}

impl ModelClient for AgentsModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        Box::pin(stream::iter(self.answer(&request).into_iter().map(Ok)))
    }
}

fn file_name(i: usize) -> String {
    format!("f{:03}.txt", i % FILES)
}

/// Runs the tree once; prints the report; 0 when all N reports reached the parent.
pub fn run(agents: usize, calls: usize, max_concurrent: Option<usize>) -> Result<i32, BenchError> {
    let dir = tempfile::Builder::new()
        .prefix("troupe-bench-agents-")
        .tempdir()?;
    for i in 0..FILES {
        std::fs::write(
            dir.path().join(file_name(i)),
            format!("file {i}: the quick brown fox\n").repeat(4),
        )?;
    }
    let concurrent = max_concurrent.unwrap_or(agents.max(1));
    let overrides = vec![
        "approval.mode=yolo".to_string(),
        format!("agents.max_concurrent={concurrent}"),
        "model.workspace_listing=0".to_string(),
        "sessions.record=false".to_string(),
    ];
    let loaded = crate::settings::load_with(
        std::path::Path::new("/nonexistent"),
        std::path::Path::new("/nonexistent"),
        &[],
        &overrides,
    )?;
    let workspace =
        Arc::new(Workspace::new(dir.path(), &[]).map_err(|e| BenchError::Usage(e.to_string()))?);
    reset_peak_rss();
    let base_rss = peak_rss_mb();
    let started = Instant::now();
    let reports = System::new().block_on(async move {
        let mut front = HeadlessFront::new(OutputFormat::Silent, "yolo", false);
        let session = SessionHandle::start(SessionOptions {
            workspace,
            settings: Arc::new(loaded.settings),
            model: Arc::new(AgentsModel { agents, calls }),
            model_name: "bench".into(),
            approval_mode: ApprovalMode::Yolo,
            request_log: None,
            test_tools: false,
            editor_files: None,
            plan: None,
            call_progress: false,
            wait_for_mcp: false,
            interactive: false,
            trajectory: None,
        })
        .await
        .map_err(|e| BenchError::Usage(e.to_string()))?;
        session.submit(Op::UserTurn {
            text: PARENT.into(),
            parts: Vec::new(),
        });
        let summary = headless::drive(&session, &mut front).await;
        let rows = match session.request(Op::ListAgents).await {
            Ok(crate::protocol::OpReply::Agents(rows)) => rows,
            _ => Vec::new(),
        };
        session.shutdown(EndReason::Exit).await;
        System::current().stop();
        let goals = rows
            .iter()
            .filter(|r| r.state == crate::protocol::AgentState::Finished("GOAL".into()))
            .count();
        Ok::<_, BenchError>((summary.is_some(), goals))
    })?;
    let wall = started.elapsed();
    let peak = peak_rss_mb();
    let (finished, goals) = reports;
    let report = json!({
        "agents": agents,
        "calls_per_agent": calls,
        "max_concurrent": concurrent,
        "reports": goals,
        "turn_finished": finished,
        "wall_ms": round(wall.as_secs_f64() * 1e3),
        "per_agent_ms": round(wall.as_secs_f64() * 1e3 / agents.max(1) as f64),
        "peak_rss_mb": peak,
        "rss_per_agent_kb": round((peak - base_rss).max(0.0) * 1024.0 / agents.max(1) as f64),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    Ok(if finished && goals == agents { 0 } else { 1 })
}
