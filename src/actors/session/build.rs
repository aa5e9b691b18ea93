//! How a session's actors are started and wired: the FileSystem pool, the Corrector,
//! the tools, the Scheduler, the MCP servers and the Chat's configuration.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::teardown::Teardown;
use super::{new_session_id, saved_allow_rules, setup, Built, SessionError, SessionOptions};
use crate::actors::chat::{ChatConfig, ChatMemory, ChatTuning};
use crate::actors::checkpointer::Checkpointer;
use crate::actors::recorder::{RecorderSetup, SessionRecorder};
use crate::actors::scheduler::{PolicyState, Scheduler, SharedPolicy};
use crate::platform::context_files::ContextFiles;
use crate::platform::filesystem::{FileSystem, FsClient};
use crate::platform::sessions::checkpoint::Checkpoints;
use crate::protocol::MemoryReport;
use crate::tools::corrector::{Corrector, CorrectorConfig};
use crate::tools::registry::register_builtin;
use crate::tools::registry::ToolArbiters;
use crate::tools::shell::background::BackgroundProcesses;
use crate::tools::{Services, ToolRegistry};

/// Starts the session's actors, every thread of them held by `teardown`.
pub(super) fn build(
    options: SessionOptions,
    teardown: &mut Teardown,
) -> Result<Built, SessionError> {
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
            registry.register(crate::tools::test_note::TestNote);
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
            .map(|decl| {
                let keep = registry.facts().get(&decl.name).compact_keeps;
                crate::engine::compact_tools::compact(decl, keep)
            })
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
        tool_facts: Arc::new(registry.facts().clone()),
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
