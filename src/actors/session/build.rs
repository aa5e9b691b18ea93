//! How a session's actors are started and wired, one phase at a time: the session's
//! records (file, recorder, checkpoints), the FileSystem pool and the services the
//! tools share, the tool registry, the MCP servers, the Scheduler and the Chat's
//! configuration.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::teardown::Teardown;
use super::tree_setup::{agent_catalog, agents_on, skill_catalog, start_tree};
use super::{new_session_id, saved_allow_rules, setup, Built, SessionError, SessionOptions};
use crate::actors::agents::AgentCatalog;
use crate::actors::approvals::Approvals;
use crate::actors::chat::{ChatConfig, ChatMemory, ChatTuning};
use crate::actors::checkpointer::Checkpointer;
use crate::actors::recorder::{RecorderSetup, SessionRecorder};
use crate::actors::scheduler::{PolicyCell, PolicyState, Scheduler};
use crate::engine::prompt::SystemPrompt;
use crate::platform::context_files::ContextFiles;
use crate::platform::filesystem::{Confined, FileSystem, FsClient};
use crate::platform::sessions::checkpoint::Checkpoints;
use crate::protocol::content::{Content, FunctionDeclaration};
use crate::protocol::{EventSink, MemoryReport};
use crate::tools::corrector::{Corrector, CorrectorConfig};
use crate::tools::registry::{register_builtin, ToolArbiters};
use crate::tools::shell::background::BackgroundProcesses;
use crate::tools::{Services, ToolRegistry};

/// Where a session's actors tell the front end things, and ask it.
pub(super) struct Outlets {
    pub(super) events: EventSink,
    pub(super) approvals: Approvals,
}

/// The threads a start has made so far, and the lazily started background arbiter.
struct Threads<'a> {
    teardown: &'a mut Teardown,
    /// The SessionRecorder and the Corrector share one thread, started (once) only
    /// when one of them is: each arbiter costs a thread, a runtime and a hand-shake
    /// with the starting thread at every start.
    background: Option<ArbiterHandle>,
}

impl<'a> Threads<'a> {
    fn new(teardown: &'a mut Teardown) -> Self {
        Self {
            teardown,
            background: None,
        }
    }

    fn background(&mut self) -> Result<ArbiterHandle, SessionError> {
        if let Some(handle) = &self.background {
            return Ok(handle.clone());
        }
        let handle = self.teardown.arbiter()?;
        self.background = Some(handle.clone());
        Ok(handle)
    }
}

/// Starts the session's actors, every thread of them held by `teardown`.
pub(super) fn build(
    mut options: SessionOptions,
    outlets: Outlets,
    teardown: &mut Teardown,
) -> Result<Built, SessionError> {
    if options.model_name.trim().is_empty() {
        // Callers that did not resolve a default (tests, benchmarks): Gemini's.
        options.model_name = crate::providers::DEFAULT_GEMINI_MODEL.to_string();
    }
    let events = outlets.events;
    // SessionStart's `source`.
    let source = match options.plan.as_ref().is_some_and(|plan| plan.existing) {
        true => "resume",
        false => "startup",
    };
    let confined = Confined::new(options.workspace.clone())
        .map(Arc::new)
        .map_err(SessionError::Workspace)?;
    let mut threads = Threads::new(teardown);
    let mut records = records(&mut options, &events, &mut threads)?;
    let checkpointer = match records.checkpoints.take() {
        Some(c) => Some(Checkpointer::start_on(
            &threads.teardown.arbiter()?,
            c,
            events.clone(),
        )),
        None => None,
    };
    let hooks = crate::actors::hooks::start(
        options.workspace.primary(),
        &records.session_id,
        &options.settings,
        events.clone(),
    );
    let fs = file_system(&options, confined, threads.teardown);
    let id = &records.session_id;
    let policy = PolicyCell::new(PolicyState {
        mode: options.approval_mode,
        rules: saved_allow_rules(&options.settings),
        files: Arc::new(options.settings.loaded_policy.rules.clone()),
        interactive: options.interactive,
        before_plan: None,
    });
    let mode: Arc<dyn crate::tools::SessionMode> = policy.clone();
    let services = services(&options, fs, id, hooks.clone(), mode, &mut threads)?;
    let scheduler_arbiter = threads.teardown.arbiter()?;
    for warning in &options.settings.loaded_extensions.warnings {
        events.do_send(crate::protocol::UiEvent::Warning(warning.clone()));
    }
    let catalog = Arc::new(agent_catalog(&options, &events));
    let skills = Arc::new(skill_catalog(&options, &events));
    let registry = Arc::new(registry(
        &options,
        &scheduler_arbiter,
        threads.teardown,
        &catalog,
        &skills,
    )?);
    // The last step that may fail: the MCP servers start after it.
    let (tools, plan_tools, prompt) =
        super::offer::offered(&options, &registry, &skills, &services.plans_dir())?;
    let servers = &options.settings.mcp_servers;
    let mcp = (!servers.is_empty()).then(|| {
        let roots = options.workspace.roots().to_vec();
        crate::mcp::McpHub::start(servers, registry.clone(), roots, Some(events.clone()))
    });
    if let Some(hub) = &mcp {
        threads.teardown.mcp(hub.clone());
    }
    let scheduler = {
        let (reg, svc, ev, pol) = (
            registry.clone(),
            services.clone(),
            events.clone(),
            policy.clone(),
        );
        let approver = outlets.approvals.clone();
        Scheduler::start_in_arbiter(&scheduler_arbiter, move |_| {
            Scheduler::new(reg, svc, approver, ev, pol)
        })
    };
    let tool_facts = Arc::new(registry.facts().clone());
    let chat = chat_config(ChatParts {
        options: &mut options,
        services: &services,
        prompt,
        tools,
        plan_tools,
        history: records.history,
        recorder: records.recorder.clone(),
        checkpointer,
        approvals: outlets.approvals.clone(),
        mcp: mcp.clone(),
        tool_facts: tool_facts.clone(),
        agent_names: catalog.agents.iter().map(|a| a.name.clone()).collect(),
    });
    let agents = agents_on(&options.settings).then(|| {
        let parts = crate::actors::session::TreeParts {
            registry: registry.clone(),
            approvals: outlets.approvals,
            policy: policy.clone(),
            mcp: mcp.clone(),
            tool_facts,
            main_prompt: chat
                .memory
                .as_ref()
                .map(|m| (m.prompt.clone(), m.report.text.clone())),
            records: records.subagents.take(),
        };
        start_tree(
            &records.session_id,
            &options.settings,
            &events,
            parts,
            catalog,
            &services,
        )
    });
    Ok(Built {
        session_id: records.session_id,
        model_name: options.model_name,
        chat,
        scheduler,
        policy,
        registry,
        services,
        recorder: records.recorder,
        mcp,
        hooks,
        events,
        source,
        agents,
        mcp_wait: options
            .wait_for_mcp
            .then(|| Duration::from_millis(options.settings.mcp.startup_wait_ms)),
        call_progress: options.call_progress,
    })
}

/// What a session records into: its id, the history it resumes, its recorder and
/// its checkpoints (none without a session plan).
struct Records {
    session_id: String,
    history: Vec<Content>,
    recorder: Option<Addr<SessionRecorder>>,
    checkpoints: Option<Checkpoints>,
    /// Where the session's subagents record their conversations.
    subagents: Option<crate::actors::session::ChildRecords>,
}

fn records(
    options: &mut SessionOptions,
    events: &EventSink,
    threads: &mut Threads<'_>,
) -> Result<Records, SessionError> {
    let settings = options.settings.clone();
    let Some(plan) = options.plan.take() else {
        return Ok(Records {
            session_id: new_session_id(),
            history: Vec::new(),
            recorder: None,
            checkpoints: None,
            subagents: None,
        });
    };
    let checkpoints = settings.general.checkpointing.then(|| {
        Checkpoints::new(
            &crate::settings::troupe_home(),
            &plan.store.slug,
            options.workspace.primary(),
            &plan.store.project_dir,
        )
    });
    // gemini-cli's `chats/<session id>/<agent id>.jsonl`, beside the session's file.
    let subagents = match (settings.sessions.record, plan.file.parent()) {
        (true, Some(chats)) => Some(crate::actors::session::ChildRecords {
            dir: chats.join(&plan.session_id),
            project_hash: plan.store.project_hash.clone(),
            arbiter: threads.background()?,
            directories: options
                .workspace
                .roots()
                .iter()
                .map(|r| r.display().to_string())
                .collect(),
        }),
        _ => None,
    };
    let recorder = match settings.sessions.record {
        false => None,
        true => Some(SessionRecorder::start_on(
            &threads.background()?,
            RecorderSetup {
                file: plan.file,
                session_id: plan.session_id.clone(),
                project_hash: plan.store.project_hash.clone(),
                model: options.model_name.clone(),
                existing: plan.existing,
                repairs: plan.repairs,
                lock: Some(plan.lock),
                warnings: Some(events.clone()),
                subagent_dirs: None,
            },
        )),
    };
    Ok(Records {
        session_id: plan.session_id,
        history: plan.history,
        recorder,
        checkpoints,
        subagents,
    })
}

/// The FileSystem pool beneath the workspace's root descriptors, and the sweep of
/// the temps an earlier process left.
fn file_system(
    options: &SessionOptions,
    confined: Arc<Confined>,
    teardown: &mut Teardown,
) -> FsClient {
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
    let mailbox = FileSystem::start_confined(confined, options.settings.tools.fs_threads);
    teardown.fs(mailbox.clone());
    FsClient::new(mailbox).with_editor(options.editor_files.clone())
}

/// What every tool call of the session shares: the files, the settings, the model,
/// the Corrector, the background processes, the context files, the hooks.
fn services(
    options: &SessionOptions,
    fs: FsClient,
    session_id: &str,
    hooks: crate::protocol::hooks::HookClient,
    mode: Arc<dyn crate::tools::SessionMode>,
    threads: &mut Threads<'_>,
) -> Result<Arc<Services>, SessionError> {
    let settings = &options.settings;
    let corrector = match settings.edit.correction {
        false => None,
        true => {
            let (model, name, fs, edit) = (
                options.model.clone(),
                options.model_name.clone(),
                fs.clone(),
                settings.edit.clone(),
            );
            let arbiter = threads.background()?;
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
    threads.teardown.processes(processes.clone());
    Ok(Arc::new(Services {
        workspace: options.workspace.clone(),
        fs,
        settings: settings.clone(),
        model: options.model.clone(),
        model_name: options.model_name.clone(),
        session_id: session_id.to_string(),
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
            settings,
            &options.workspace,
        ))),
        hooks,
        author: "the main session".into(),
        ledger: Default::default(),
        agents: std::sync::OnceLock::new(),
        agent: None,
        mode,
    }))
}

/// The tools of the session: the built-in ones (`activate_skill` when there are
/// skills, as gemini-cli; and the test tools when asked), narrowed by `tools.core`
/// and `tools.exclude`, each on the Scheduler's arbiter or tool arbiters of their own.
fn registry(
    options: &SessionOptions,
    scheduler_arbiter: &ArbiterHandle,
    teardown: &mut Teardown,
    catalog: &AgentCatalog,
    skills: &Arc<Vec<crate::settings::skills::Skill>>,
) -> Result<ToolRegistry, SessionError> {
    let settings = &options.settings;
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
    if agents_on(settings) {
        registry.register(crate::tools::invoke_agent::InvokeAgent {
            catalog: catalog.summary(),
        });
    }
    if !skills.is_empty() {
        registry.register(crate::tools::activate_skill::ActivateSkill {
            skills: skills.clone(),
        });
    }
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
            registry.register(crate::tools::word_count::WordCount);
        }
        registry.register(crate::tools::synthetic::Synthetic);
    }
    let core = settings.tools.core.clone();
    let mut exclude = settings.tools.exclude.clone();
    // The enabled extensions' `excludeTools` (a `tool(args)` entry is a policy rule).
    exclude.extend(settings.loaded_extensions.exclude_tools());
    let subagents_only = [
        crate::tools::complete_task::COMPLETE_TASK,
        crate::tools::internal_docs::GET_INTERNAL_DOCS,
    ];
    registry.retain(move |name| {
        subagents_only.contains(&name)
            || ((core.is_empty() || core.iter().any(|c| c == name))
                && !exclude.iter().any(|e| e == name))
    });
    Ok(registry)
}

/// What the Chat's configuration is made of.
struct ChatParts<'a> {
    options: &'a mut SessionOptions,
    services: &'a Arc<Services>,
    prompt: SystemPrompt,
    tools: Vec<FunctionDeclaration>,
    /// The declarations offered in plan mode.
    plan_tools: Vec<FunctionDeclaration>,
    history: Vec<Content>,
    recorder: Option<Addr<SessionRecorder>>,
    checkpointer: Option<Addr<Checkpointer>>,
    approvals: Approvals,
    mcp: Option<Arc<crate::mcp::McpHub>>,
    tool_facts: Arc<crate::protocol::ToolFactsTable>,
    agent_names: Vec<String>,
}

/// The Chat's configuration: the model, the system prompt with the context files,
/// the tools offered, the history resumed, and where its turns are recorded.
fn chat_config(parts: ChatParts<'_>) -> ChatConfig {
    let ChatParts {
        options,
        services,
        prompt,
        tools,
        plan_tools,
        history,
        recorder,
        checkpointer,
        approvals,
        mcp,
        tool_facts,
        agent_names,
    } = parts;
    let settings = &options.settings;
    let tuning = ChatTuning::new(settings, options.model.provider(), &options.model_name);
    let loaded = services.context.load();
    let report = MemoryReport {
        files: loaded.paths(),
        text: loaded.text(),
    };
    ChatConfig {
        model: options.model.clone(),
        model_name: options.model_name.clone(),
        system_prompt: Some(prompt.render(&report.text)),
        tools: Arc::new(tools),
        max_turns: settings.model.max_turns,
        request_log: options.request_log.take(),
        tuning,
        memory: Some(ChatMemory {
            prompt,
            context: services.context.clone(),
            report,
        }),
        recorder: recorder.map(Addr::recipient),
        history,
        checkpointer: checkpointer.map(Addr::recipient),
        approver: Some(approvals),
        mcp,
        hooks: services.hooks.clone(),
        session_context: None,
        workspace_files: None,
        test_command: None,
        undo: settings
            .model
            .undo_failed_turn
            .then(|| crate::actors::chat::UndoFiles {
                fs: services.fs.clone(),
                workspace: services.workspace.clone(),
            }),
        outcome_fs: settings.model.check_outcome.then(|| services.fs.clone()),
        tool_facts,
        agent_names,
        plan_tools: Some(crate::actors::chat::PlanTools {
            prompt_section: super::offer::plan_prompt_section(
                &services.plans_dir(),
                services.mode.interactive(),
            ),
            mode: services.mode.clone(),
            tools: Arc::new(plan_tools),
        }),
    }
}
