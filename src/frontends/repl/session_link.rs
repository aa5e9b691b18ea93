//! What the REPL thread holds of the running session ([`SessionLink`]): the session's
//! handle, the arbiter its async work runs on, and the REPL's own state (statistics,
//! the saved allow rules as last written, the sessions on disk).

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use actix::prelude::*;

use super::bridge::SharedStats;
use super::saved_rules::{saved_rule_texts, update_allowed, SaveError};
use super::session_commands;
use super::start::Ending;
use crate::actors::session::SessionHandle;
use crate::protocol::{ApprovalMode, Op, OpError, OpReply, ToolSummary};

/// A tool as `/tools` lists it.
pub type ToolInfo = ToolSummary;

/// What the REPL thread holds of the running session.
pub struct SessionLink {
    /// The session: ops in, events out (read by the event pump, `bridge.rs`).
    pub handle: Arc<SessionHandle>,
    /// The arbiter the session runs on, where the REPL thread's async work (an `@path`
    /// read, a `!` command) runs while the REPL thread waits for its answer.
    pub(super) actors: ArbiterHandle,
    pub stats: SharedStats,
    /// The session's file edits, for `/diff` and `/undo`.
    pub edits: super::edits::EditLog,
    pub tools: Vec<ToolInfo>,
    pub session_id: String,
    pub model: String,
    pub workspace: PathBuf,
    /// The user's config file, where "Always allow" saves rules.
    pub user_config: PathBuf,
    /// The saved rules as last written (or loaded).
    pub(super) persisted: Mutex<Vec<String>>,
    /// Sessions: the store and checkpoints (see `session_commands`).
    pub sessions: session_commands::SessionParts,
    /// The line editor is in vi mode (`/vim`; shown in the status line).
    pub(super) vim: std::sync::atomic::AtomicBool,
    /// Ends the session ([`SessionLink::shutdown`]); `None` once it has.
    pub(super) ending: Mutex<Option<Ending>>,
}

impl SessionLink {
    pub fn mode(&self) -> ApprovalMode {
        self.handle.approval_mode()
    }

    /// Whether the line editor is in vi mode.
    pub fn vim(&self) -> bool {
        self.vim.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(super) fn set_vim(&self, on: bool) {
        self.vim.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Switches the approval mode and waits until the session took it.
    pub fn set_mode(&self, mode: ApprovalMode) {
        if let Err(e) = self.request(Op::SetApprovalMode(mode)) {
            tracing::warn!("approval mode not set: {e}");
        }
    }

    /// Submits `op` and waits on this thread (never an arbiter) for its answer.
    pub fn request(&self, op: Op) -> Result<OpReply, OpError> {
        self.handle.request_blocking(op)
    }

    /// Runs `work` on the session's arbiter and waits on this thread for its result;
    /// `None` when the arbiter has stopped (the session is over).
    pub fn on_actors<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = self.actors.spawn(async move {
            let _ = tx.send(work.await);
        });
        if !spawned {
            return None;
        }
        rx.blocking_recv().ok()
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
        let removed = match self.request(Op::RevokeRule(n)) {
            Ok(OpReply::Rule(rule)) => rule,
            Ok(_) | Err(OpError::NoSuchRule(_)) => return None,
            Err(e) => {
                tracing::warn!("allow rule not revoked: {e}");
                return None;
            }
        };
        let text = crate::engine::policy::format_rule(&removed.tool, removed.key.as_deref());
        Some(match self.sync_saved() {
            Some(Err(e)) => Err(e),
            _ => Ok(text),
        })
    }

    /// Writes the saved rules to the user's config when they changed.
    pub fn sync_saved(&self) -> Option<Result<(), SaveError>> {
        let current = saved_rule_texts(&self.handle.policy().rules);
        let mut persisted = self.persisted.lock().ok()?;
        if *persisted == current {
            return None;
        }
        let result = update_allowed(&self.user_config, &persisted, &current);
        if result.is_ok() {
            *persisted = current;
        }
        Some(result)
    }
}
