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

mod setup;
mod teardown;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::chat::{Chat, ChatConfig, ChatMemory, ChatTuning, StopChat};
use super::checkpointer::Checkpointer;
use super::recorder::{RecorderSetup, SessionRecorder};
use super::scheduler::{PolicyState, Scheduler, SharedPolicy};
use crate::platform::context_files::ContextFiles;
use crate::platform::filesystem::{FileSystem, FsClient};
use crate::platform::sessions::checkpoint::Checkpoints;
use crate::platform::sessions::plan::SessionPlan;
use crate::platform::workspace::Workspace;
use crate::protocol::{
    ApprovalMode, ApprovalRequest, CallEvents, CancelTurn, FlushRecords, MemoryReport, UiEvent,
};
use crate::providers::ModelClient;
use crate::settings::Settings;
use crate::tools::corrector::{Corrector, CorrectorConfig};
use crate::tools::registry::register_builtin;
use crate::tools::registry::ToolArbiters;
use crate::tools::shell::background::BackgroundProcesses;
use crate::tools::{Services, ToolRegistry};

pub use crate::platform::sessions::new_session_id;
pub use setup::{saved_allow_rules, SAVED_ORIGIN, SYSTEM_MD_ENV};
use teardown::Teardown;
pub use teardown::JOIN_WAIT;

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
    /// Where the session's events go (the front end).
    pub events: Recipient<UiEvent>,
    /// Who answers the session's approval requests (the front end).
    pub approver: Recipient<ApprovalRequest>,
    /// Whether the front end takes each call's progress events ([`CallEvents`]): not
    /// one that prints one result at the end (`-o json`, `troupe bench`).
    pub call_progress: bool,
    /// Whether the start waits (at most `mcp.startup_wait_ms`) for MCP discovery, so
    /// that the first prompt sees the servers' tools (headless, ACP, bench); the REPL
    /// shows the servers' status instead.
    pub wait_for_mcp: bool,
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

/// Why a session ends: SessionEnd's `reason` (gemini-cli's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The program ends (end of a headless run, `/quit`, Ctrl+D, a signal, the ACP
    /// client gone).
    Exit,
    /// `/clear`.
    Clear,
    /// The user logged out.
    Logout,
    /// The user left at the prompt.
    PromptInputExit,
    /// Anything else (an ACP `session/close`).
    Other,
}

impl EndReason {
    /// The value hooks see.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exit => "exit",
            Self::Clear => "clear",
            Self::Logout => "logout",
            Self::PromptInputExit => "prompt_input_exit",
            Self::Other => "other",
        }
    }
}

/// The running session.
pub struct Session {
    pub session_id: String,
    pub chat: Addr<Chat>,
    pub scheduler: Addr<Scheduler>,
    pub policy: SharedPolicy,
    pub registry: Arc<ToolRegistry>,
    pub services: Arc<Services>,
    /// Writes the session file (none when recording is off).
    pub recorder: Option<Addr<SessionRecorder>>,
    /// The MCP servers and their status; `None` when none is configured.
    pub mcp: Option<Arc<crate::mcp::McpHub>>,
    /// The session's hooks (SessionStart and SessionEnd are fired by the session).
    pub hooks: crate::protocol::hooks::HookClient,
    /// What ends with the session; `None` once [`Session::shutdown`] ran.
    teardown: tokio::sync::Mutex<Option<Teardown>>,
}

impl Session {
    /// Starts every actor of a session, waits for MCP discovery when
    /// `options.wait_for_mcp`, and fires SessionStart. Must run inside an actix
    /// `System`. On an error, what was started already is ended.
    pub async fn start(options: SessionOptions) -> Result<Session, SessionError> {
        let mut teardown = Teardown::default();
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
            mcp_wait,
            call_progress,
        } = build(options, &mut teardown)?;
        if !call_progress {
            scheduler.do_send(CallEvents {
                call_progress: false,
            });
        }
        if let (Some(hub), Some(wait)) = (&mcp, mcp_wait) {
            hub.settled(wait).await;
        }
        // A hook that fails is told to the user as a warning by the hooks actor.
        let start = crate::actors::hooks::session_start(&hooks, source).await;
        chat.session_context = start.additional_context;
        let listed = services.settings.model.workspace_listing as usize;
        if listed > 0 && source == "startup" {
            let listing = services
                .fs
                .run(move |ws| crate::tools::workspace_listing::listing(ws, listed))
                .await
                .ok()
                .flatten();
            chat.workspace_files = listing;
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
            policy,
            registry,
            services,
            recorder,
            mcp,
            hooks,
            teardown: tokio::sync::Mutex::new(Some(teardown)),
        })
    }

    /// The one way down: a running turn is cancelled, SessionEnd fires with `reason`,
    /// the recorder flushes, the Chat stops; then background shell processes end, the
    /// MCP servers shut down (processes killed and reaped), the FileSystem pool and
    /// every arbiter the session started (the Scheduler's and its tools', the
    /// recorder's, the checkpointer's, the servers') stop, and their threads are waited
    /// for (at most [`JOIN_WAIT`]). A second call waits for the first and does nothing.
    pub async fn shutdown(&self, reason: EndReason) {
        let mut slot = self.teardown.lock().await;
        let Some(teardown) = slot.take() else {
            return;
        };
        self.chat.do_send(CancelTurn);
        crate::actors::hooks::session_end(&self.hooks, reason.as_str()).await;
        if let Some(recorder) = &self.recorder {
            let _ = recorder.send(FlushRecords).await;
        }
        let _ = self.chat.send(StopChat).await;
        teardown.finish().await;
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
    events: Recipient<UiEvent>,
    /// SessionStart's `source`.
    source: &'static str,
    mcp_wait: Option<Duration>,
    call_progress: bool,
}

/// Starts the session's actors, every thread of them held by `teardown`.
fn build(options: SessionOptions, teardown: &mut Teardown) -> Result<Built, SessionError> {
    let mut options = options;
    if options.model_name.trim().is_empty() {
        // Callers that did not resolve a default (tests, benchmarks): Gemini's.
        options.model_name = crate::providers::DEFAULT_GEMINI_MODEL.to_string();
    }
    let events = options.events.clone();
    let settings = options.settings.clone();
    let source = match &options.plan {
        Some(plan) if plan.existing => "resume",
        _ => "startup",
    };
    let confined = crate::platform::filesystem::Confined::new(options.workspace.clone())
        .map(Arc::new)
        .map_err(SessionError::Workspace)?;
    let mut background = None;
    let (session_id, history, recorder, checkpoints) = match options.plan.take() {
        None => (new_session_id(), Vec::new(), None, None),
        Some(plan) => {
            let checkpoints = settings.general.checkpointing.then(|| {
                Checkpoints::new(
                    &crate::settings::troupe_home(),
                    &plan.store.slug,
                    options.workspace.primary(),
                    &plan.store.project_dir,
                )
            });
            let recorder = match settings.sessions.record {
                false => None,
                true => Some(SessionRecorder::start_on(
                    &background_arbiter(&mut background, teardown)?,
                    RecorderSetup {
                        file: plan.file,
                        session_id: plan.session_id.clone(),
                        project_hash: plan.store.project_hash.clone(),
                        model: options.model_name.clone(),
                        existing: plan.existing,
                        repairs: plan.repairs,
                        lock: Some(plan.lock),
                        warnings: Some(events.clone()),
                    },
                )),
            };
            (plan.session_id, plan.history, recorder, checkpoints)
        }
    };
    let checkpointer = match checkpoints {
        Some(c) => Some(Checkpointer::start_on(
            &teardown.arbiter()?,
            c,
            events.clone(),
        )),
        None => None,
    };
    let hooks = crate::actors::hooks::start(
        options.workspace.primary(),
        &session_id,
        &settings,
        events.clone(),
    );
    let writers = options
        .workspace
        .temp_dir()
        .map(crate::platform::filesystem::writers::writers_dir);
    if let Some(dir) = &writers {
        crate::platform::filesystem::writers::register(dir, &options.workspace.roots());
    }
    teardown.sweep(crate::platform::filesystem::stale_temps::Sweep::start(
        confined.clone(),
        setup::process_start(),
        writers,
    ));
    let mailbox = FileSystem::start_confined(confined, settings.tools.fs_threads);
    teardown.fs(mailbox.clone());
    let fs = FsClient::new(mailbox).with_editor(options.editor_files.clone());
    let corrector = match settings.edit.correction {
        false => None,
        true => {
            let (model, name, fs, edit) = (
                options.model.clone(),
                options.model_name.clone(),
                fs.clone(),
                settings.edit.clone(),
            );
            let arbiter = background_arbiter(&mut background, teardown)?;
            Some(Corrector::start_in_arbiter(&arbiter, move |_| {
                Corrector::new(
                    model,
                    name,
                    fs,
                    CorrectorConfig {
                        use_model: edit.use_model,
                        timeout: Duration::from_secs(edit.correction_timeout_secs.max(1)),
                        cache_entries: edit.correction_cache_entries,
                    },
                )
            }))
        }
    };
    let processes = Arc::new(BackgroundProcesses::new());
    teardown.processes(processes.clone());
    let services = Arc::new(Services {
        workspace: options.workspace.clone(),
        fs,
        settings: settings.clone(),
        model: options.model.clone(),
        model_name: options.model_name.clone(),
        session_id: session_id.clone(),
        corrector,
        processes,
        // Under the project temp directory when there is one, so that a saved output
        // the model is told about is readable by its tools.
        temp_dir: options
            .workspace
            .temp_dir()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(|| crate::settings::troupe_home().join("tmp"))
            .join(format!("session-{session_id}")),
        context: Arc::new(ContextFiles::new(setup::context_config(
            &settings,
            &options.workspace,
        ))),
        hooks: hooks.clone(),
    });
    let scheduler_arbiter = teardown.arbiter()?;
    let tool_arbiters = match settings.tools.tool_threads {
        // On the Scheduler's arbiter: handing a call to its tool and the tool's answer
        // back stay on one thread.
        0 => ToolArbiters::Shared(scheduler_arbiter.clone()),
        n => ToolArbiters::Own(
            (0..n)
                .map(|_| teardown.arbiter())
                .collect::<Result<_, _>>()?,
        ),
    };
    let mut registry = ToolRegistry::new(
        Duration::from_secs(settings.tools.call_timeout_secs.max(1)),
        settings.tools.actors_per_tool,
        tool_arbiters,
    );
    register_builtin(&mut registry);
    registry.withhold_servers(
        settings
            .untrusted_mcp_servers
            .iter()
            .map(|s| s.name.clone())
            .collect(),
    );
    if options.test_tools {
        #[cfg(feature = "test-hooks")]
        {
            registry.register(crate::tools::test_tools::TestBarrier);
            registry.register(crate::tools::test_tools::TestPanic);
            registry.register(crate::tools::test_tools::TestSleep);
        }
        registry.register(crate::tools::synthetic::Synthetic);
    }
    let core = settings.tools.core.clone();
    let exclude = settings.tools.exclude.clone();
    registry.retain(|name| {
        (core.is_empty() || core.iter().any(|c| c == name)) && !exclude.iter().any(|e| e == name)
    });
    let registry = Arc::new(registry);
    let mut tools = registry.declarations();
    if settings.tools.compact_declarations {
        tools = tools
            .iter()
            .map(crate::engine::compact_tools::compact)
            .collect();
    }
    // The last step that may fail: the MCP servers start after it.
    let prompt = setup::system_prompt(&settings, &options.workspace, &tools)?;
    let mcp = (!settings.mcp_servers.is_empty()).then(|| {
        crate::mcp::McpHub::start(
            &settings.mcp_servers,
            registry.clone(),
            options.workspace.roots().to_vec(),
            Some(events.clone()),
        )
    });
    if let Some(hub) = &mcp {
        teardown.mcp(hub.clone());
    }
    let policy: SharedPolicy = Arc::new(Mutex::new(PolicyState {
        mode: options.approval_mode,
        rules: saved_allow_rules(&settings),
    }));
    let (reg, svc, ev, pol, approver) = (
        registry.clone(),
        services.clone(),
        events.clone(),
        policy.clone(),
        options.approver.clone(),
    );
    let scheduler = Scheduler::start_in_arbiter(&scheduler_arbiter, move |_| {
        Scheduler::new(reg, svc, approver, ev, pol)
    });
    let tuning = ChatTuning::new(&settings, options.model.provider(), &options.model_name);
    let loaded = services.context.load();
    let report = MemoryReport {
        files: loaded.paths(),
        text: loaded.text(),
    };
    let chat = ChatConfig {
        model: options.model,
        model_name: options.model_name.clone(),
        system_prompt: Some(prompt.render(&report.text)),
        tools: Arc::new(tools),
        max_turns: settings.model.max_turns,
        request_log: options.request_log,
        tuning,
        memory: Some(ChatMemory {
            prompt,
            context: services.context.clone(),
            report,
        }),
        recorder: recorder.clone().map(Addr::recipient),
        history,
        checkpointer: checkpointer.map(Addr::recipient),
        approver: Some(options.approver),
        mcp: mcp.clone(),
        hooks: hooks.clone(),
        session_context: None,
        workspace_files: None,
        undo: settings
            .model
            .undo_failed_turn
            .then(|| crate::actors::chat::UndoFiles {
                fs: services.fs.clone(),
                workspace: services.workspace.clone(),
            }),
    };
    Ok(Built {
        session_id,
        model_name: options.model_name,
        chat,
        scheduler,
        policy,
        registry,
        services,
        recorder,
        mcp,
        hooks,
        events,
        source,
        mcp_wait: options
            .wait_for_mcp
            .then(|| Duration::from_millis(settings.mcp.startup_wait_ms)),
        call_progress: options.call_progress,
    })
}

/// The arbiter of the session's actors that stay off the turn's path: the
/// SessionRecorder and the Corrector share one thread, started (once) only when one of
/// them is. Each arbiter costs a thread, a runtime and a hand-shake with the starting
/// thread at every start.
fn background_arbiter(
    slot: &mut Option<ArbiterHandle>,
    teardown: &mut Teardown,
) -> Result<ArbiterHandle, SessionError> {
    if let Some(handle) = slot {
        return Ok(handle.clone());
    }
    let handle = teardown.arbiter()?;
    *slot = Some(handle.clone());
    Ok(handle)
}
