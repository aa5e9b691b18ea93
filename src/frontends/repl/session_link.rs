//! What the REPL thread holds of the running session ([`SessionLink`]): the Chat's
//! address, the approval policy and its saved rules, the services and the tools.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use actix::prelude::*;

use super::bridge::SharedStats;
use super::saved_rules::{save_allowed, saved_rule_texts, SaveError};
use super::session_commands;
use super::start::Ending;
use crate::actors::chat::Chat;
use crate::actors::scheduler::SharedPolicy;
use crate::protocol::ApprovalMode;

/// A tool as `/tools` lists it.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    pub name: String,
    pub kind: String,
    pub description: String,
}

/// What the REPL thread holds of the running session.
pub struct SessionLink {
    pub chat: Addr<Chat>,
    pub policy: SharedPolicy,
    pub stats: SharedStats,
    pub tools: Vec<ToolInfo>,
    pub session_id: String,
    pub model: String,
    pub workspace: PathBuf,
    /// The user's config file, where "Always allow" saves rules.
    pub user_config: PathBuf,
    /// The saved rules as last written (or loaded).
    pub(super) persisted: Mutex<Vec<String>>,
    /// The session's services (the FileSystem actor for `@path`, settings, ...).
    pub services: Arc<crate::tools::Services>,
    /// Sessions: the store, the recorder and checkpoints (see `session_commands`).
    pub sessions: session_commands::SessionParts,
    /// The MCP servers (`/mcp`); `None` when none is configured.
    pub mcp: Option<Arc<crate::mcp::McpHub>>,
    /// The session's hooks (`/hooks`).
    pub hooks: crate::protocol::hooks::HookClient,
    /// Ends the session ([`SessionLink::shutdown`]); `None` once it has.
    pub(super) ending: Mutex<Option<Ending>>,
}

impl SessionLink {
    pub fn mode(&self) -> ApprovalMode {
        self.policy.lock().mode
    }

    pub fn set_mode(&self, mode: ApprovalMode) {
        self.policy.lock().mode = mode;
    }

    /// The config path with the home directory shown as `~`.
    pub fn user_config_label(&self) -> String {
        let home = crate::settings::home_dir();
        match self.user_config.strip_prefix(&home) {
            Ok(rest) if home != std::path::Path::new("/") => format!("~/{}", rest.display()),
            _ => self.user_config.display().to_string(),
        }
    }

    /// Removes allow rule `n` (1-based); saved rules are removed from the config too.
    pub fn revoke(&self, n: usize) -> Option<Result<String, SaveError>> {
        let removed = {
            let mut state = self.policy.lock();
            if n == 0 || n > state.rules.len() {
                return None;
            }
            state.rules.remove(n - 1)
        };
        let text = crate::engine::policy::format_rule(&removed.tool, removed.key.as_deref());
        Some(match self.sync_saved() {
            Some(Err(e)) => Err(e),
            _ => Ok(text),
        })
    }

    /// Writes the saved rules to the user's config when they changed.
    pub fn sync_saved(&self) -> Option<Result<(), SaveError>> {
        let current = saved_rule_texts(&self.policy.lock().rules);
        let mut persisted = self.persisted.lock().ok()?;
        if *persisted == current {
            return None;
        }
        let result = save_allowed(&self.user_config, &current);
        if result.is_ok() {
            *persisted = current;
        }
        Some(result)
    }
}
