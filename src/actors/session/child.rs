//! A subagent's session: a Chat and a Scheduler of its own (its own history, none of
//! its parent's), on the arbiter it is started from, sharing everything else with the
//! tree — the FileSystem pool, the model client, the tool actors, the MCP servers, the
//! hooks, the approval table and policy, the file ledger. It starts no thread and owns
//! no process, so a child costs two actors and its history; its end stops those two.

use std::sync::Arc;

use actix::prelude::*;

use super::handle::SessionHandle;
use super::teardown::Teardown;
use super::Session;
use crate::actors::approvals::Approvals;
use crate::actors::chat::{Chat, ChatConfig, ChatTuning};
use crate::actors::recorder::{RecorderSetup, SessionRecorder};
use crate::actors::scheduler::{Scheduler, SharedPolicy};
use crate::protocol::content::FunctionDeclaration;
use crate::protocol::{EventSink, ToolFactsTable};
use crate::tools::invoke_agent::ToolFilter;
use crate::tools::{Services, ToolRegistry};

/// What a session shares with the subagents it starts.
#[derive(Clone)]
pub struct TreeParts {
    pub registry: Arc<ToolRegistry>,
    pub approvals: Approvals,
    pub policy: SharedPolicy,
    pub mcp: Option<Arc<crate::mcp::McpHub>>,
    pub tool_facts: Arc<ToolFactsTable>,
    /// The main session's system prompt (the generalist's), rendered for each
    /// subagent's own tools, with the context files read at the session's start.
    pub main_prompt: Option<(crate::engine::prompt::SystemPrompt, String)>,
    /// Where subagents record their conversations; `None`: not recorded.
    pub records: Option<ChildRecords>,
}

/// Where the subagents of a recorded session record their conversations.
#[derive(Clone)]
pub struct ChildRecords {
    /// `chats/<main session id>/`.
    pub dir: std::path::PathBuf,
    pub project_hash: String,
    /// The arbiter the main session's recorder writes on.
    pub arbiter: ArbiterHandle,
    /// The workspace directories, for the first line.
    pub directories: Vec<String>,
}

impl ChildRecords {
    fn recorder(&self, agent_id: &str, model: &str, warnings: &EventSink) -> Addr<SessionRecorder> {
        // gemini-cli's: anything but letters, digits, `_` and `-` becomes `_`.
        let safe: String = agent_id
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    true => c,
                    false => '_',
                },
            )
            .collect();
        let file = self.dir.join(format!("{safe}.jsonl"));
        SessionRecorder::start_on(
            &self.arbiter,
            RecorderSetup {
                file,
                session_id: agent_id.to_string(),
                project_hash: self.project_hash.clone(),
                model: model.to_string(),
                existing: false,
                repairs: Vec::new(),
                lock: None,
                warnings: Some(warnings.clone()),
                subagent_dirs: Some(self.directories.clone()),
            },
        )
    }
}

/// One subagent's session as its launcher specifies it.
pub struct ChildSpec {
    /// The agent's id in the tree (its session id).
    pub agent_id: String,
    pub name: String,
    pub services: Arc<Services>,
    pub model_name: String,
    pub system_prompt: String,
    /// What the model is offered (the agent's tools and `complete_task`).
    pub declarations: Arc<Vec<FunctionDeclaration>>,
    /// What its Scheduler runs.
    pub allowed: Arc<ToolFilter>,
    /// Model rounds it may make in one turn.
    pub max_turns: u32,
    pub temperature: Option<f64>,
    /// Whether the MCP servers' tools are declared as they are discovered.
    pub with_mcp: bool,
}

impl SessionHandle {
    /// Starts a subagent's session on the current arbiter (see the module docs). Its
    /// first event is `UiEvent::SessionStarted`.
    pub fn start_child(parts: &TreeParts, spec: ChildSpec) -> SessionHandle {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = EventSink::new(tx);
        let approvals = parts.approvals.for_agent(&spec.agent_id, &spec.name);
        let scheduler = Scheduler::new(
            parts.registry.clone(),
            spec.services.clone(),
            approvals.clone(),
            sink.clone(),
            parts.policy.clone(),
        )
        .limited_to(spec.allowed.clone())
        .for_agent(&spec.name)
        .start();
        let services = &spec.services;
        let settings = &services.settings;
        let mut tuning = ChatTuning::new(settings, services.model.provider(), &spec.model_name);
        if spec.temperature.is_some() {
            tuning.temperature = spec.temperature;
        }
        // The agent keeps its own limits (turns, time); the main session's turn time
        // limit is not one of them.
        tuning.turn_time_limit = None;
        // A subagent's prompt is its parent's words, and its report is checked there.
        tuning.check_outcome = false;
        let recorder = parts
            .records
            .as_ref()
            .map(|r| r.recorder(&spec.agent_id, &spec.model_name, &sink));
        let config = ChatConfig {
            model: services.model.clone(),
            model_name: spec.model_name.clone(),
            system_prompt: Some(spec.system_prompt),
            tools: spec.declarations,
            max_turns: spec.max_turns.max(1),
            request_log: None,
            tuning,
            memory: None,
            recorder: recorder.clone().map(Addr::recipient),
            history: Vec::new(),
            checkpointer: None,
            approver: Some(approvals.clone()),
            mcp: parts.mcp.clone().filter(|_| spec.with_mcp),
            hooks: services.hooks.clone(),
            session_context: None,
            workspace_files: None,
            test_command: None,
            undo: None,
            outcome_fs: None,
            tool_facts: parts.tool_facts.clone(),
            agent_names: Vec::new(),
            plan_tools: None,
        };
        let chat = Chat::new(config, scheduler.clone(), sink.clone()).start();
        sink.do_send(crate::protocol::UiEvent::SessionStarted {
            session_id: spec.agent_id.clone(),
            model: spec.model_name,
        });
        let hooks = spec.services.hooks.clone();
        let session = Session {
            session_id: spec.agent_id,
            chat,
            scheduler,
            published_policy: parts.policy.subscribe(),
            registry: parts.registry.clone(),
            services: spec.services,
            recorder,
            mcp: parts.mcp.clone(),
            hooks,
            approvals,
            teardown: tokio::sync::Mutex::new(Some(Teardown::default())),
            child: true,
            agents: None,
        };
        SessionHandle::from_parts(session, sink, rx)
    }
}
