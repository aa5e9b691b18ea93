//! Starts the actors of one session and wires them: FileSystem pool, one ToolActor per
//! tool, the Scheduler on its own arbiter, and the Chat actor.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::chat::{Chat, ChatConfig, ChatTuning};
use super::filesystem::{FileSystem, FsClient};
use super::scheduler::{PolicyState, Scheduler, SharedPolicy};
use crate::engine::prompt::{self, PromptVars};
use crate::engine::text::iso8601;
use crate::engine::workspace::Workspace;
use crate::protocol::{ApprovalMode, ApprovalRequest, UiEvent};
use crate::providers::ModelClient;
use crate::settings::Settings;
use crate::tools::registry::register_builtin;
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
}

/// The running session.
pub struct Session {
    pub session_id: String,
    pub chat: Addr<Chat>,
    pub scheduler: Addr<Scheduler>,
    pub policy: SharedPolicy,
    pub registry: Arc<ToolRegistry>,
    pub services: Arc<Services>,
}

/// A random id in UUID shape.
pub fn new_session_id() -> String {
    let hex: String = (0..32)
        .map(|_| format!("{:x}", fastrand::u8(0..16)))
        .collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Starts every actor of a session. Must run inside an actix `System`.
pub fn start_session(
    options: SessionOptions,
    events: Recipient<UiEvent>,
    approver: Recipient<ApprovalRequest>,
) -> Result<Session, String> {
    let session_id = new_session_id();
    let settings = options.settings.clone();
    let fs = FsClient::new(FileSystem::start_pool(
        options.workspace.clone(),
        settings.tools.fs_threads,
    ));
    let services = Arc::new(Services {
        workspace: options.workspace.clone(),
        fs,
        settings: settings.clone(),
        model: options.model.clone(),
        model_name: options.model_name.clone(),
        session_id: session_id.clone(),
    });
    let mut registry =
        ToolRegistry::new(Duration::from_secs(settings.tools.call_timeout_secs.max(1)));
    register_builtin(&mut registry);
    if options.test_tools {
        registry.register(test_tools::TestBarrier);
        registry.register(test_tools::TestPanic);
        registry.register(test_tools::TestSleep);
    }
    let core = settings.tools.core.clone();
    let exclude = settings.tools.exclude.clone();
    registry.retain(|name| {
        (core.is_empty() || core.iter().any(|c| c == name)) && !exclude.iter().any(|e| e == name)
    });
    let registry = Arc::new(registry);
    let policy: SharedPolicy = Arc::new(Mutex::new(PolicyState {
        mode: options.approval_mode,
        rules: Vec::new(),
    }));
    let scheduler_arbiter = Arbiter::new();
    let (reg, svc, ev, pol) = (
        registry.clone(),
        services.clone(),
        events.clone(),
        policy.clone(),
    );
    let scheduler = Scheduler::start_in_arbiter(&scheduler_arbiter.handle(), move |_| {
        Scheduler::new(reg, svc, approver, ev, pol)
    });
    let tools = registry.declarations();
    let system_prompt = system_prompt(&settings, &options.workspace, &tools)?;
    let tuning = ChatTuning::new(&settings, options.model.provider(), &options.model_name);
    let chat = Chat::new(
        ChatConfig {
            model: options.model,
            model_name: options.model_name.clone(),
            system_prompt: Some(system_prompt),
            tools,
            max_turns: settings.model.max_turns,
            request_log: options.request_log,
            tuning,
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
    })
}

fn system_prompt(
    settings: &Settings,
    workspace: &Workspace,
    tools: &[crate::engine::content::FunctionDeclaration],
) -> Result<String, String> {
    let template = if settings.model.system_prompt_file.is_empty() {
        prompt::DEFAULT_TEMPLATE.to_string()
    } else {
        let path = &settings.model.system_prompt_file;
        std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read system prompt file {path}: {e}"))?
    };
    Ok(prompt::render(
        &template,
        &PromptVars {
            tools,
            date: iso8601(std::time::SystemTime::now())[..10].to_string(),
            os: std::env::consts::OS.to_string(),
            roots: workspace
                .roots()
                .iter()
                .map(|r| r.display().to_string())
                .collect(),
        },
    ))
}
