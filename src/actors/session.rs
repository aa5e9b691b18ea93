//! A session's one way up and one way down.
//!
//! [`Session::start`] starts the actors of a session and wires them: the FileSystem
//! pool, the ToolActors of each tool (on the Scheduler's arbiter, or tool arbiters of
//! their own), the Scheduler on its own arbiter, the MCP servers, the Chat actor. It
//! waits for MCP discovery when asked, and fires SessionStart (`resume` for a resumed
//! session file, else `startup`), whose `additionalContext` goes before the first
//! prompt the session gets, whichever front end sends it.
//!
//! [`Session::shutdown`] fires SessionEnd and ends everything the session started:
//! the Chat, background shell processes, MCP servers (their processes reaped), the
//! FileSystem pool's threads and every arbiter, whose threads it waits for. A start
//! that fails half way ends what it already started.

mod build;
mod child;
mod event_order;
mod handle;
mod offer;
mod setup;
mod teardown;
mod trajectory_file;
mod tree_setup;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::approvals::Approvals;
use super::chat::{Chat, ChatConfig};
use super::recorder::SessionRecorder;
use super::scheduler::{Scheduler, SharedPolicy};
use crate::platform::sessions::plan::SessionPlan;
use crate::platform::workspace::Workspace;
use crate::protocol::{
    ApprovalMode, CallEvents, CancelTurn, EventSink, FlushRecords, StopChat, UiEvent,
};
pub use crate::protocol::{EndReason, ProcessAfter};
use crate::providers::ModelClient;
use crate::settings::Settings;
use crate::tools::{Services, ToolRegistry};

pub use crate::platform::sessions::new_session_id;
use build::{build, Outlets};
pub use child::{ChildRecords, ChildSpec, TreeParts};
pub use event_order::HandledEvents;
pub use handle::SessionHandle;
pub use setup::{saved_allow_rules, SAVED_ORIGIN, SYSTEM_MD_ENV};
use teardown::Teardown;
pub use teardown::JOIN_WAIT;
pub use trajectory_file::TrajectoryFile;

/// What a session is started with.
pub struct SessionOptions {
    pub workspace: Arc<Workspace>,
    pub settings: Arc<Settings>,
    pub model: Arc<dyn ModelClient>,
    pub model_name: String,
    pub approval_mode: ApprovalMode,
    pub request_log: Option<PathBuf>,
    /// Registers the synthetic bench tool, and in a `test-hooks` build the test tools
    /// (`TROUPE_TEST_TOOLS=1`).
    pub test_tools: bool,
    /// A client editor serving files (ACP); `None` elsewhere.
    pub editor_files: Option<crate::platform::filesystem::editor::SharedEditor>,
    /// The session file recorded into, and resumed from when it exists already
    /// (SessionStart then says `resume`); `None`: not recorded.
    pub plan: Option<SessionPlan>,
    /// Whether the front end takes each call's progress events ([`CallEvents`]): not
    /// one that prints one result at the end (`-o json`, `troupe bench`).
    pub call_progress: bool,
    /// Whether the start waits (at most `mcp.startup_wait_ms`) for MCP discovery, so
    /// that the first prompt sees the servers' tools (headless, ACP, bench); the REPL
    /// shows the servers' status instead.
    pub wait_for_mcp: bool,
    /// Whether a person answers the approvals (the REPL, ACP), which policy rules'
    /// `interactive` field tests; not headless, batch, bench or `mcp serve`.
    pub interactive: bool,
    /// `--trajectory FILE`: keep the run as an ATIF trajectory there
    /// ([`SessionHandle::record_trajectory`]).
    pub trajectory: Option<PathBuf>,
}

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot open the workspace: {0}")]
    Workspace(#[source] std::io::Error),
    #[error("cannot read system prompt file {}: {source}", path.display())]
    SystemPrompt {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start a thread for the session: {0}")]
    Thread(#[source] std::io::Error),
}

/// The running session's actors and services. Private to the actors layer: a front
/// end holds a [`SessionHandle`], whose ops this serves.
struct Session {
    session_id: String,
    chat: Addr<Chat>,
    scheduler: Addr<Scheduler>,
    /// The approval policy as the Scheduler last published it.
    published_policy: tokio::sync::watch::Receiver<crate::protocol::PolicySnapshot>,
    registry: Arc<ToolRegistry>,
    services: Arc<Services>,
    /// Writes the session file (none when recording is off).
    recorder: Option<Addr<SessionRecorder>>,
    /// The MCP servers and their status; `None` when none is configured.
    mcp: Option<Arc<crate::mcp::McpHub>>,
    /// The session's hooks (SessionStart and SessionEnd are fired by the session).
    hooks: crate::protocol::hooks::HookClient,
    /// The approval requests waiting for the front end; closed at the end.
    approvals: Approvals,
    /// What ends with the session; `None` once [`Session::end`] ran.
    teardown: tokio::sync::Mutex<Option<Teardown>>,
    /// A subagent's session: its end fires no SessionEnd and leaves the tree's
    /// approval table open.
    child: bool,
    /// The subagents of the main session's tree (`/agents`); `None` for a subagent's
    /// session or when agents are off.
    agents: Option<Arc<crate::actors::agents::AgentTree>>,
}

impl Session {
    /// The facts of the session's tools (how front ends label and treat their calls).
    pub fn tool_facts(&self) -> Arc<crate::protocol::ToolFactsTable> {
        Arc::new(self.registry.facts().clone())
    }

    /// Starts every actor of a session, waits for MCP discovery when
    /// `options.wait_for_mcp`, and fires SessionStart. Must run inside an actix
    /// `System`. On an error, what was started already is ended.
    async fn start(options: SessionOptions, outlets: Outlets) -> Result<Session, SessionError> {
        let mut teardown = Teardown::default();
        let approvals = outlets.approvals.clone();
        let Built {
            session_id,
            model_name,
            mut chat,
            scheduler,
            policy,
            registry,
            services,
            recorder,
            mcp,
            hooks,
            events,
            source,
            agents,
            mcp_wait,
            call_progress,
        } = build(options, outlets, &mut teardown)?;
        if !call_progress {
            scheduler.do_send(CallEvents {
                call_progress: false,
            });
        }
        if let (Some(hub), Some(wait)) = (&mcp, mcp_wait) {
            hub.settled_telling(wait).await;
        }
        // A hook that fails is told to the user as a warning by the hooks actor.
        let start = crate::actors::hooks::session_start(&hooks, source).await;
        chat.session_context = start.additional_context;
        let listed = services.settings.model.workspace_listing as usize;
        if listed > 0 && source == "startup" {
            let listing = services
                .fs
                .perform(crate::tools::workspace_listing::WorkspaceListing(listed))
                .await
                .ok()
                .flatten();
            chat.workspace_files = listing;
        }
        if services.settings.model.find_test_command {
            chat.test_command = find_test_command(&services).await;
        }
        let chat = Chat::new(chat, scheduler.clone(), events.clone()).start();
        events.do_send(UiEvent::SessionStarted {
            session_id: session_id.clone(),
            model: model_name,
        });
        Ok(Session {
            session_id,
            chat,
            scheduler,
            published_policy: policy.subscribe(),
            registry,
            services,
            recorder,
            mcp,
            hooks,
            approvals,
            teardown: tokio::sync::Mutex::new(Some(teardown)),
            child: false,
            agents,
        })
    }

    /// The one way down: a running turn is cancelled, the approvals still waiting are
    /// refused, SessionEnd fires with `reason`, the recorder flushes, the Chat stops;
    /// then background shell processes end, the MCP servers shut down (processes
    /// killed and reaped), and — unless the process exits right after
    /// ([`ProcessAfter::Exits`], whose idle threads are left to the exit) — the
    /// FileSystem pool and every arbiter the session started stop, and their threads
    /// are waited for (at most [`JOIN_WAIT`]). A second call waits for the first and
    /// does nothing.
    async fn end(&self, reason: EndReason, after: ProcessAfter) {
        let mut slot = self.teardown.lock().await;
        let Some(teardown) = slot.take() else {
            return;
        };
        self.chat.do_send(CancelTurn);
        if !self.child {
            self.approvals.close();
            crate::actors::hooks::session_end(&self.hooks, reason.as_str()).await;
        }
        if let Some(recorder) = &self.recorder {
            let _ = recorder.send(FlushRecords).await;
        }
        let _ = self.chat.send(StopChat).await;
        match after {
            ProcessAfter::GoesOn => teardown.finish().await,
            ProcessAfter::Exits => teardown.finish_before_exit().await,
        }
    }
}

/// A session started but for its Chat (which takes SessionStart's context).
struct Built {
    session_id: String,
    model_name: String,
    chat: ChatConfig,
    scheduler: Addr<Scheduler>,
    policy: SharedPolicy,
    registry: Arc<ToolRegistry>,
    services: Arc<Services>,
    recorder: Option<Addr<SessionRecorder>>,
    mcp: Option<Arc<crate::mcp::McpHub>>,
    hooks: crate::protocol::hooks::HookClient,
    events: EventSink,
    /// SessionStart's `source`.
    source: &'static str,
    /// The session's subagents; `None` when agents are off.
    agents: Option<Arc<crate::actors::agents::AgentTree>>,
    mcp_wait: Option<Duration>,
    call_progress: bool,
}

/// The test command the workspace's project files state (`model.find_test_command`).
async fn find_test_command(
    services: &crate::tools::Services,
) -> Option<crate::engine::test_command::TestCommand> {
    use crate::engine::test_command::{find, PROJECT_FILES};
    let mut texts = Vec::new();
    for name in PROJECT_FILES {
        let path = services.workspace.resolve(name);
        if let Ok(read) = services.fs.read(path).await {
            if read.bytes.len() <= 256 * 1024 {
                texts.push((*name, String::from_utf8_lossy(&read.bytes).into_owned()));
            }
        }
    }
    let files: Vec<(&str, &str)> = texts.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let found = find(&files);
    tracing::info!(?found, "test command");
    found
}
