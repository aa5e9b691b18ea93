//! Starts the actors of one session and wires them: FileSystem pool, the ToolActors of
//! each tool on the shared tool arbiters, the Scheduler on its own arbiter, and the Chat
//! actor.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::chat::{Chat, ChatConfig, ChatMemory, ChatTuning};
use super::checkpointer::Checkpointer;
use super::recorder::{RecorderSetup, SessionRecorder};
use super::scheduler::{AllowRule, PolicyState, Scheduler, SharedPolicy};
use crate::engine::prompt::{self, SystemPrompt};
use crate::engine::text::iso8601;
use crate::platform::context_files::{git_root, ContextConfig, ContextFiles};
use crate::platform::filesystem::{FileSystem, FsClient};
use crate::platform::sessions::checkpoint::Checkpoints;
use crate::platform::sessions::plan::SessionPlan;
use crate::platform::workspace::Workspace;
use crate::protocol::{ApprovalMode, ApprovalRequest, FlushRecords, MemoryReport, UiEvent};
use crate::providers::ModelClient;
use crate::settings::Settings;
use crate::tools::corrector::{Corrector, CorrectorConfig};
use crate::tools::registry::register_builtin;
use crate::tools::registry::ToolArbiters;
use crate::tools::shell::background::BackgroundProcesses;
use crate::tools::{test_tools, Services, ToolRegistry};

/// What a session is started with.
pub struct SessionOptions {
    pub workspace: Arc<Workspace>,
    pub settings: Arc<Settings>,
    pub model: Arc<dyn ModelClient>,
    pub model_name: String,
    pub approval_mode: ApprovalMode,
    pub request_log: Option<PathBuf>,
    /// Registers the test-only tools (`TROUPE_TEST_TOOLS=1`).
    pub test_tools: bool,
    /// A client editor serving files (ACP); `None` elsewhere.
    pub editor_files: Option<crate::platform::filesystem::editor::SharedEditor>,
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
    /// The session's hooks (front ends fire SessionStart and SessionEnd).
    pub hooks: crate::protocol::hooks::HookClient,
    /// The removal of temps an earlier, killed run left (it runs while the session does).
    sweep: tokio::sync::Mutex<crate::platform::filesystem::stale_temps::Sweep>,
}

impl Session {
    /// Ends what the session started that could outlive it: every background shell
    /// process group is terminated (SIGTERM, a short grace, then SIGKILL), and the
    /// sweep of stale temps is waited for.
    pub async fn shutdown(&self) {
        if let Some(recorder) = &self.recorder {
            let _ = recorder.send(FlushRecords).await;
        }
        self.services.processes.shutdown().await;
        self.sweep.lock().await.finished().await;
    }
}

pub use crate::platform::sessions::new_session_id;

/// Starts every actor of a session. Must run inside an actix `System`.
pub fn start_session(
    options: SessionOptions,
    events: Recipient<UiEvent>,
    approver: Recipient<ApprovalRequest>,
) -> Result<Session, String> {
    start_session_with(options, None, events, approver)
}

/// Starts a session that records into (and may resume from) `plan`'s session file.
pub fn start_session_with(
    options: SessionOptions,
    plan: Option<SessionPlan>,
    events: Recipient<UiEvent>,
    approver: Recipient<ApprovalRequest>,
) -> Result<Session, String> {
    let mut options = options;
    if options.model_name.trim().is_empty() {
        // Callers that did not resolve a default (tests, benchmarks): Gemini's.
        options.model_name = crate::providers::DEFAULT_GEMINI_MODEL.to_string();
    }
    let checkpointing = options.settings.general.checkpointing;
    let mut background = BackgroundArbiter::default();
    let (session_id, history, recorder, checkpoints) = match plan {
        None => (new_session_id(), Vec::new(), None, None),
        Some(plan) => {
            let checkpoints = checkpointing.then(|| {
                Checkpoints::new(
                    &crate::settings::troupe_home(),
                    &plan.store.slug,
                    options.workspace.primary(),
                    &plan.store.project_dir,
                )
            });
            let recorder = options.settings.sessions.record.then(|| {
                SessionRecorder::start_on(
                    &background.handle(),
                    RecorderSetup {
                        file: plan.file,
                        session_id: plan.session_id.clone(),
                        project_hash: plan.store.project_hash.clone(),
                        model: options.model_name.clone(),
                        existing: plan.existing,
                        repairs: plan.repairs,
                        lock: Some(plan.lock),
                    },
                )
            });
            (plan.session_id, plan.history, recorder, checkpoints)
        }
    };
    let checkpointer = checkpoints.map(|c| Checkpointer::start_own(c, events.clone()));
    let settings = options.settings.clone();
    let hooks = crate::actors::hooks::start(
        options.workspace.primary(),
        &session_id,
        &settings,
        events.clone(),
    );
    let confined = crate::platform::filesystem::Confined::new(options.workspace.clone())
        .map(Arc::new)
        .map_err(|e| format!("cannot open the workspace: {e}"))?;
    let writers = options
        .workspace
        .temp_dir()
        .map(crate::platform::filesystem::writers::writers_dir);
    if let Some(dir) = &writers {
        crate::platform::filesystem::writers::register(dir, &options.workspace.roots());
    }
    let sweep = crate::platform::filesystem::stale_temps::Sweep::start(
        confined.clone(),
        process_start(),
        writers,
    );
    let fs = FsClient::new(FileSystem::start_confined(
        confined,
        settings.tools.fs_threads,
    ))
    .with_editor(options.editor_files.clone());
    let corrector = settings.edit.correction.then(|| {
        let (model, name, fs, edit) = (
            options.model.clone(),
            options.model_name.clone(),
            fs.clone(),
            settings.edit.clone(),
        );
        Corrector::start_in_arbiter(&background.handle(), move |_| {
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
        })
    });
    let services = Arc::new(Services {
        workspace: options.workspace.clone(),
        fs,
        settings: settings.clone(),
        model: options.model.clone(),
        model_name: options.model_name.clone(),
        session_id: session_id.clone(),
        corrector,
        processes: Arc::new(BackgroundProcesses::new()),
        // Under the project temp directory when there is one, so that a saved output
        // the model is told about is readable by its tools.
        temp_dir: options
            .workspace
            .temp_dir()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(|| crate::settings::troupe_home().join("tmp"))
            .join(format!("session-{session_id}")),
        context: Arc::new(ContextFiles::new(context_config(
            &settings,
            &options.workspace,
        ))),
        hooks: hooks.clone(),
    });
    let scheduler_arbiter = Arbiter::new();
    let mut registry = ToolRegistry::new(
        Duration::from_secs(settings.tools.call_timeout_secs.max(1)),
        settings.tools.actors_per_tool,
        tool_arbiters(settings.tools.tool_threads, &scheduler_arbiter),
    );
    register_builtin(&mut registry);
    if options.test_tools {
        registry.register(test_tools::TestBarrier);
        registry.register(test_tools::TestPanic);
        registry.register(test_tools::TestSleep);
        registry.register(crate::tools::synthetic::Synthetic);
    }
    let core = settings.tools.core.clone();
    let exclude = settings.tools.exclude.clone();
    registry.retain(|name| {
        (core.is_empty() || core.iter().any(|c| c == name)) && !exclude.iter().any(|e| e == name)
    });
    let registry = Arc::new(registry);
    let mcp = (!settings.mcp_servers.is_empty()).then(|| {
        crate::mcp::McpHub::start(
            &settings.mcp_servers,
            registry.clone(),
            options.workspace.roots().to_vec(),
        )
    });
    let policy: SharedPolicy = Arc::new(Mutex::new(PolicyState {
        mode: options.approval_mode,
        rules: saved_allow_rules(&settings),
    }));
    let loop_approver = approver.clone();
    let (reg, svc, ev, pol) = (
        registry.clone(),
        services.clone(),
        events.clone(),
        policy.clone(),
    );
    let scheduler = Scheduler::start_in_arbiter(&scheduler_arbiter.handle(), move |_| {
        Scheduler::new(reg, svc, approver, ev, pol)
    });
    let mut tools = registry.declarations();
    if settings.tools.compact_declarations {
        tools = tools
            .iter()
            .map(crate::engine::compact_tools::compact)
            .collect();
    }
    let tuning = ChatTuning::new(&settings, options.model.provider(), &options.model_name);
    let prompt = system_prompt(&settings, &options.workspace, &tools)?;
    let loaded = services.context.load();
    let report = MemoryReport {
        files: loaded.paths(),
        text: loaded.text(),
    };
    let chat = Chat::new(
        ChatConfig {
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
            approver: Some(loop_approver),
            mcp: mcp.clone(),
            hooks: hooks.clone(),
        },
        scheduler.clone(),
        events.clone(),
    )
    .start();
    events.do_send(UiEvent::SessionStarted {
        session_id: session_id.clone(),
        model: options.model_name,
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
        sweep: tokio::sync::Mutex::new(sweep),
    })
}

/// The arbiter of the session's actors that stay off the turn's path: the
/// SessionRecorder and the Corrector share one thread, started (once) only when one of
/// them is. Each arbiter costs a thread, a runtime and a hand-shake with the starting
/// thread at every start.
#[derive(Default)]
struct BackgroundArbiter(Option<actix::ArbiterHandle>);

impl BackgroundArbiter {
    fn handle(&mut self) -> actix::ArbiterHandle {
        self.0
            .get_or_insert_with(|| Arbiter::new().handle())
            .clone()
    }
}

/// Where the tool actors live: with `tools.tool_threads = 0` (the default) on the
/// Scheduler's arbiter, so handing a call to its tool and the tool's answer back stay on
/// one thread; otherwise on that many arbiters of their own.
fn tool_arbiters(tool_threads: usize, scheduler: &Arbiter) -> ToolArbiters {
    match tool_threads {
        0 => ToolArbiters::Shared(scheduler.handle()),
        n => ToolArbiters::Own(n),
    }
}

/// The "Always allow" rules of `approval.allowed`, with origin `saved`.
pub fn saved_allow_rules(settings: &Settings) -> Vec<AllowRule> {
    settings
        .approval
        .allowed
        .iter()
        .filter_map(|text| crate::engine::policy::parse_rule(text))
        .map(|(tool, key)| AllowRule {
            tool,
            key,
            origin: SAVED_ORIGIN.to_string(),
        })
        .collect()
}

/// The origin of allow rules loaded from (and saved to) `approval.allowed`.
pub const SAVED_ORIGIN: &str = "saved";

/// The environment variable naming a file that replaces the built-in system prompt
/// (as gemini-cli's `GEMINI_SYSTEM_MD`): a path, or `1`/`true` for
/// `<troupe home>/system.md`. It wins over `model.system_prompt_file`.
pub const SYSTEM_MD_ENV: &str = "TROUPE_SYSTEM_MD";

/// The session's system prompt template and environment (context files come later).
fn system_prompt(
    settings: &Settings,
    workspace: &Workspace,
    tools: &[crate::protocol::content::FunctionDeclaration],
) -> Result<SystemPrompt, String> {
    let from_env = std::env::var(SYSTEM_MD_ENV)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
        .map(|v| {
            if v == "1" || v.eq_ignore_ascii_case("true") {
                crate::settings::troupe_home().join("system.md")
            } else if let Some(rest) = v.strip_prefix("~/") {
                crate::settings::home_dir().join(rest)
            } else {
                PathBuf::from(v)
            }
        });
    let file = from_env.or_else(|| {
        (!settings.model.system_prompt_file.is_empty())
            .then(|| PathBuf::from(&settings.model.system_prompt_file))
    });
    let template = match file {
        None if settings.model.prompt_style == "short" => prompt::SHORT_TEMPLATE.to_string(),
        None => prompt::DEFAULT_TEMPLATE.to_string(),
        Some(path) => std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read system prompt file {}: {e}", path.display()))?,
    };
    Ok(SystemPrompt {
        template,
        tools: tools.to_vec(),
        date: iso8601(std::time::SystemTime::now())[..10].to_string(),
        os: std::env::consts::OS.to_string(),
        roots: workspace
            .roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect(),
        git: git_root(workspace.primary()).is_some(),
    })
}

/// Where the session looks for context files.
fn context_config(settings: &Settings, workspace: &Workspace) -> ContextConfig {
    let global_dir = if settings.context.global_dir.is_empty() {
        crate::settings::troupe_home()
    } else {
        PathBuf::from(&settings.context.global_dir)
    };
    ContextConfig {
        file_names: settings.context.file_names.clone(),
        global_dir,
        roots: workspace.roots().to_vec(),
    }
}

/// When this process started (its temp files cannot be older).
fn process_start() -> std::time::SystemTime {
    static START: std::sync::OnceLock<std::time::SystemTime> = std::sync::OnceLock::new();
    *START.get_or_init(std::time::SystemTime::now)
}
