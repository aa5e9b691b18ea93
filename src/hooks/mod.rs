//! Hooks: user scripts run at points of a session (gemini-cli 0.61's hook system).
//!
//! Definitions come from Troupe's settings and gemini-cli's `hooks` JSON ([`config`]);
//! project hooks pass folder trust ([`trust`]); the [`Hooks`] actor picks the hooks
//! matching an event, runs them ([`runner`]) in parallel or in order, and merges their
//! answers ([`output`]) into one [`HookVerdict`] that the caller applies. A hook that
//! hangs, crashes or prints garbage never stops the session: its failure is shown to
//! the user, named, and the event goes on as if it had not run.

pub mod actor;
pub mod config;
pub mod migrate;
pub mod output;
pub mod runner;
pub mod trust;

use std::path::Path;

use actix::prelude::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use actor::{HookInfo, Hooks};
pub use output::{Decision, HookVerdict};

use crate::protocol::{RunHooks, UiEvent};

/// The points of a session where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    SessionStart,
    SessionEnd,
    BeforeAgent,
    AfterAgent,
    BeforeModel,
    AfterModel,
    BeforeToolSelection,
    BeforeTool,
    AfterTool,
    PreCompress,
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 11] = [
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::BeforeAgent,
        HookEvent::AfterAgent,
        HookEvent::BeforeModel,
        HookEvent::AfterModel,
        HookEvent::BeforeToolSelection,
        HookEvent::BeforeTool,
        HookEvent::AfterTool,
        HookEvent::PreCompress,
        HookEvent::Notification,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::BeforeAgent => "BeforeAgent",
            HookEvent::AfterAgent => "AfterAgent",
            HookEvent::BeforeModel => "BeforeModel",
            HookEvent::AfterModel => "AfterModel",
            HookEvent::BeforeToolSelection => "BeforeToolSelection",
            HookEvent::BeforeTool => "BeforeTool",
            HookEvent::AfterTool => "AfterTool",
            HookEvent::PreCompress => "PreCompress",
            HookEvent::Notification => "Notification",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Tool events match their matcher as a regex on the tool name.
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::BeforeTool | HookEvent::AfterTool)
    }

    /// These match their matcher exactly against the source / reason / trigger.
    pub fn matches_exactly(self) -> bool {
        matches!(
            self,
            HookEvent::SessionStart | HookEvent::SessionEnd | HookEvent::PreCompress
        )
    }
}

/// A cheap handle on the session's hooks; does nothing when none are configured.
#[derive(Clone, Default)]
pub struct HookClient {
    addr: Option<Addr<Hooks>>,
}

impl HookClient {
    /// No hooks: every call answers "allow" at once.
    pub fn none() -> Self {
        Self { addr: None }
    }

    pub fn addr(&self) -> Option<&Addr<Hooks>> {
        self.addr.as_ref()
    }

    pub fn is_active(&self) -> bool {
        self.addr.is_some()
    }

    /// Runs the hooks of `event` matching `target` with `fields` added to the common
    /// input; the merged answer (allow when nothing ran).
    pub async fn fire(
        &self,
        event: HookEvent,
        target: Option<String>,
        fields: Value,
        cancel: CancellationToken,
    ) -> HookVerdict {
        let Some(addr) = &self.addr else {
            return HookVerdict::default();
        };
        addr.send(RunHooks {
            event,
            target,
            fields,
            cancel,
        })
        .await
        .unwrap_or_default()
    }
}

/// Loads the hooks of a session in `workspace` and starts their actor (none when no
/// hook is configured). Untrusted project hooks are left out and said so; new trusted
/// project hooks are announced once.
pub fn start(
    workspace: &Path,
    session_id: &str,
    settings: &crate::settings::Settings,
    events: Recipient<UiEvent>,
) -> HookClient {
    let mut loaded = config::load(&config::HookSources::standard(workspace));
    // The merged settings win (a `-c hooks.enabled=false` flag, for instance).
    loaded.globally_disabled |= !settings.hooks.enabled;
    loaded
        .disabled
        .extend(settings.hooks.disabled.iter().cloned());
    for warning in &loaded.warnings {
        events.do_send(UiEvent::Warning(warning.clone()));
    }
    if loaded.globally_disabled {
        return HookClient::none();
    }
    // Folder trust (`settings.trusted`: the trust file, --skip-trust or
    // TROUPE_TRUST_WORKSPACE=1).
    let trusted = settings.trusted;
    let (defs, refused): (Vec<_>, Vec<_>) = loaded
        .defs
        .into_iter()
        .partition(|d| trust::project_hooks_allowed(d.origin, trusted));
    if !refused.is_empty() {
        let names: Vec<&str> = refused.iter().map(|d| d.name.as_str()).collect();
        events.do_send(UiEvent::Warning(format!(
            "Project hooks were not run because this folder is not trusted: {}",
            names.join(", ")
        )));
    }
    let fresh = trust::newly_seen(&defs, workspace, &trust::seen_file());
    if !fresh.is_empty() {
        events.do_send(UiEvent::Warning(format!(
            "WARNING: The following project-level hooks have been detected in this workspace: {}",
            fresh.join(", ")
        )));
    }
    if defs.is_empty() {
        return HookClient::none();
    }
    let env = runner::HookEnv {
        project_dir: workspace.to_path_buf(),
        cwd: workspace.to_path_buf(),
        session_id: session_id.to_string(),
        plans_dir: crate::settings::troupe_home().join("plans"),
    };
    let disabled = loaded.disabled;
    let addr = Hooks::new(defs, &disabled, env, events).start();
    HookClient { addr: Some(addr) }
}

/// SessionStart (`startup`, `resume` or `clear`); the verdict's `additionalContext`
/// is for the first prompt ([`with_session_context`]).
pub async fn session_start(hooks: &HookClient, source: &str) -> HookVerdict {
    hooks
        .fire(
            HookEvent::SessionStart,
            Some(source.to_string()),
            serde_json::json!({"source": source}),
            CancellationToken::new(),
        )
        .await
}

/// SessionEnd (`exit`, `clear`, `logout`, `prompt_input_exit` or `other`).
pub async fn session_end(hooks: &HookClient, reason: &str) {
    hooks
        .fire(
            HookEvent::SessionEnd,
            Some(reason.to_string()),
            serde_json::json!({"reason": reason}),
            CancellationToken::new(),
        )
        .await;
}

/// A headless prompt with SessionStart's context before it, as gemini-cli does.
pub fn with_session_context(prompt: String, context: Option<String>) -> String {
    match context {
        Some(c) => format!("<hook_context>{c}</hook_context>\n\n{prompt}"),
        None => prompt,
    }
}
