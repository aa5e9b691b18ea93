//! Hooks: user scripts run at points of a session (gemini-cli 0.61's hook system).
//!
//! Definitions come from Troupe's settings and gemini-cli's `hooks` JSON ([`config`]);
//! project hooks pass folder trust ([`trust`]); the [`Hooks`] actor picks the hooks
//! matching an event, runs them ([`runner`]) in parallel or in order, and merges their
//! answers ([`output`]) into one [`HookVerdict`] that the caller applies. A hook that
//! hangs, crashes or prints garbage never stops the session: its failure is shown to
//! the user, named, and the event goes on as if it had not run.

pub mod actor;
pub mod output;
pub mod runner;

use std::path::Path;

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

pub use crate::protocol::hooks::{
    Decision, HookClient, HookEvent, HookInfo, HookRecipients, HookVerdict,
};
pub use actor::Hooks;

use crate::protocol::EventSink;
use crate::protocol::UiEvent;
use crate::settings::hook_trust as trust;
use crate::settings::hooks as config;

/// Loads the hooks of a session in `workspace` and starts their actor (none when no
/// hook is configured). Untrusted project hooks are left out and said so; new trusted
/// project hooks are announced once.
pub fn start(
    workspace: &Path,
    session_id: &str,
    settings: &crate::settings::Settings,
    events: EventSink,
) -> HookClient {
    let mut loaded = config::load(&config::HookSources::standard(workspace));
    config::add_extension_hooks(&settings.loaded_extensions, &mut loaded);
    // The merged settings win (a `-c hooks.enabled=false` flag, for instance).
    loaded.globally_disabled |= !settings.hooks.enabled;
    loaded
        .disabled
        .extend(settings.hooks.disabled.iter().cloned());
    if loaded.globally_disabled {
        for warning in &loaded.warnings {
            events.do_send(UiEvent::Warning(warning.clone()));
        }
        return HookClient::none();
    }
    // Folder trust (`settings.trusted`: the trust file, --skip-trust or
    // TROUPE_TRUST_WORKSPACE=1).
    let trusted = settings.trusted;
    let (defs, refused): (Vec<_>, Vec<_>) = loaded
        .defs
        .into_iter()
        .partition(|d| trust::project_hooks_allowed(d.origin, trusted));
    // First: a run in an untrusted folder must not miss that its guards are off.
    if !refused.is_empty() {
        let names: Vec<String> = refused.into_iter().map(|d| d.name).collect();
        let project_file = workspace.join(".troupe").join("config.toml");
        let warning = match &settings.trust_notice {
            Some(notice) => trust::changed_hooks_warning(&names, &settings.approval.mode, notice),
            None => trust::skipped_hooks_warning(
                &names,
                &settings.approval.mode,
                project_file.is_file().then_some(project_file.as_path()),
            ),
        };
        events.do_send(UiEvent::Warning(warning));
    }
    for warning in &loaded.warnings {
        events.do_send(UiEvent::Warning(warning.clone()));
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
        child_env: crate::platform::child_env::ChildEnvPolicy::from_settings(settings),
    };
    let disabled = loaded.disabled;
    let addr = Hooks::new(defs, &disabled, env, events).start();
    HookClient::new(HookRecipients {
        run: addr.clone().recipient(),
        list: addr.clone().recipient(),
        set_enabled: addr.recipient(),
    })
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
