//! The agent tree of a session as its start sets it up: whether it offers
//! `invoke_agent`, the agents it can start (built-ins, files, overrides; what could
//! not be loaded is told as warnings), and the tree with the launcher of its calls.

use std::sync::Arc;

use super::SessionOptions;
use crate::actors::agents::{AgentCatalog, AgentTree};
use crate::protocol::EventSink;
use crate::tools::Services;

/// Whether the session offers `invoke_agent`.
pub(super) fn agents_on(settings: &crate::settings::Settings) -> bool {
    settings.agents.enabled && settings.agents.max_depth >= 1
}

/// The agents the session can start: the built-ins, the agent files (project ones only
/// in a trusted folder; files that cannot be used are told as warnings) and the
/// overrides.
pub(super) fn agent_catalog(options: &SessionOptions, events: &EventSink) -> AgentCatalog {
    if !agents_on(&options.settings) {
        return AgentCatalog::default();
    }
    let extension_dirs: Vec<std::path::PathBuf> = options
        .settings
        .loaded_extensions
        .active()
        .map(|e| e.dir("agents"))
        .collect();
    let workspace = options.workspace.primary();
    let mut loaded =
        crate::settings::agents::load(workspace, options.settings.trusted, &extension_dirs);
    let extensions = &options.settings.loaded_extensions;
    for agent in &mut loaded.agents {
        agent.prompt = extensions.hydrate_for(&agent.path, &agent.prompt, workspace);
    }
    for error in &loaded.errors {
        events.do_send(crate::protocol::UiEvent::Warning(format!(
            "Agent loading error: {error}"
        )));
    }
    if !loaded.untrusted.is_empty() {
        events.do_send(crate::protocol::UiEvent::Warning(format!(
            "Skipping {} project agent file(s): this folder is not trusted (`troupe trust` trusts it).",
            loaded.untrusted.len()
        )));
    }
    let (catalog, warnings) = AgentCatalog::new(&options.settings, &loaded);
    for warning in warnings {
        events.do_send(crate::protocol::UiEvent::Warning(warning));
    }
    catalog
}

/// The skills `activate_skill` offers: those found and not disabled (project ones only
/// in a trusted folder); gemini-cli's conflict warnings and the project skills an
/// untrusted folder leaves out are told as warnings.
pub(super) fn skill_catalog(
    options: &SessionOptions,
    events: &EventSink,
) -> Vec<crate::settings::skills::Skill> {
    let loaded = crate::settings::skills::load(options.workspace.primary(), &options.settings);
    for warning in &loaded.warnings {
        events.do_send(crate::protocol::UiEvent::Warning(warning.clone()));
    }
    if !loaded.untrusted.is_empty() {
        events.do_send(crate::protocol::UiEvent::Warning(
            crate::settings::skills::untrusted_warning(loaded.untrusted.len()),
        ));
    }
    loaded.enabled()
}

/// The tree of the session's subagents, and the launcher its `invoke_agent` calls use.
pub(super) fn start_tree(
    session_id: &str,
    settings: &crate::settings::Settings,
    events: &EventSink,
    parts: crate::actors::session::TreeParts,
    catalog: Arc<AgentCatalog>,
    services: &Services,
) -> Arc<AgentTree> {
    let tree = Arc::new(AgentTree::new(
        session_id.to_string(),
        &settings.agents,
        events.clone(),
    ));
    let launcher = crate::actors::agents::launcher::TreeLauncher::new(
        tree.clone(),
        catalog,
        parts,
        session_id,
    );
    let _ = services.agents.set(Arc::new(launcher));
    tree
}
