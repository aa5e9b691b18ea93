//! Approval: the shared policy state (mode and allow rules) and how the Scheduler
//! decides, asks the approver, and remembers "allow for this session".

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::{CallInfo, Inner};
use crate::engine::policy::{decide, PolicyDecision};
use crate::protocol::{
    ApprovalDecision, ApprovalMode, ApprovalRequest, CallStatus, CompletedCall, ToolErrorKind,
    ToolKind, UiEvent,
};
use crate::tools::registry::{Invocation, ToolHandle};
use crate::tools::PolicyHint;

/// Something the user allowed for the rest of the session (or saved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowRule {
    pub tool: String,
    /// A file, a command prefix, …; `None` allows the whole tool.
    pub key: Option<String>,
    /// `session` or the file it was saved to.
    pub origin: String,
}

/// The approval state shared by the Scheduler and the front ends.
#[derive(Debug, Default)]
pub struct PolicyState {
    pub mode: ApprovalMode,
    pub rules: Vec<AllowRule>,
}

impl PolicyState {
    fn allows(&self, tool: &str, keys: &[String]) -> bool {
        self.rules.iter().any(|r| {
            r.tool == tool
                && match &r.key {
                    None => true,
                    Some(k) => {
                        !keys.is_empty()
                            && keys
                                .iter()
                                .all(|key| key == k || key.starts_with(&format!("{k} ")))
                    }
                }
        })
    }
}

/// Shared handle on the approval state.
pub type SharedPolicy = Arc<Mutex<PolicyState>>;

/// What approval came to for one call.
pub(super) enum Approval {
    Run(Box<dyn Invocation>),
    Refused(Arc<CompletedCall>),
    UserCancelled(Arc<CompletedCall>),
}

impl Inner {
    pub(super) async fn approve(
        &self,
        tool: &Arc<dyn ToolHandle>,
        mut invocation: Box<dyn Invocation>,
        call: &mut CallInfo,
        cancel: &CancellationToken,
        force_ask: bool,
    ) -> Approval {
        // The arguments as the user modified them, if they did.
        let mut modified: Option<serde_json::Value> = None;
        loop {
            let protected = invocation.policy_hint() == Some(PolicyHint::Protected);
            let hint = invocation.policy_hint().map(|h| h == PolicyHint::Allow);
            let (mode, allowed) = match self.policy.lock() {
                Ok(state) => (
                    state.mode,
                    !protected && state.allows(tool.name(), invocation.approval_keys()),
                ),
                Err(_) => (ApprovalMode::Default, false),
            };
            match decide(mode, tool.kind(), hint) {
                PolicyDecision::Allow if !force_ask => return Approval::Run(invocation),
                PolicyDecision::Allow => {}
                PolicyDecision::Deny(reason) => {
                    return Approval::Refused(self.failed(
                        call,
                        ToolErrorKind::PolicyViolation,
                        format!("Tool execution denied by policy. {reason}"),
                    ))
                }
                PolicyDecision::Ask if allowed && !force_ask => return Approval::Run(invocation),
                PolicyDecision::Ask => {}
            }
            let ctx = self.context(&call.id, cancel.clone());
            let details = match invocation.confirmation(&ctx).await {
                Some(details) => details,
                None if force_ask => super::hooks::forced_details(
                    tool.name(),
                    modified.as_ref().unwrap_or(call.args.as_ref()),
                ),
                None => return Approval::Run(invocation),
            };
            self.status(call, CallStatus::AwaitingApproval);
            call.timeline.awaiting_approval = Some(std::time::Instant::now());
            let args = modified.as_ref().unwrap_or(call.args.as_ref());
            let request = ApprovalRequest {
                call_id: call.id.clone(),
                tool_name: tool.name().to_string(),
                args: args.clone(),
                details,
            };
            self.notify_permission(&request).await;
            let decision = tokio::select! {
                d = { self.events.flush(); self.approver.send(request) } => d.unwrap_or(ApprovalDecision::Cancel { feedback: None }),
                _ = cancel.cancelled() => return Approval::Refused(self.cancelled(call, "Operation cancelled by user")),
            };
            match decision {
                ApprovalDecision::ProceedOnce => return Approval::Run(invocation),
                ApprovalDecision::ProceedAlways | ApprovalDecision::ProceedAlwaysAndSave => {
                    let origin = if decision == ApprovalDecision::ProceedAlways {
                        "session"
                    } else {
                        "saved"
                    };
                    self.remember(tool.as_ref(), invocation.approval_keys(), origin);
                    return Approval::Run(invocation);
                }
                ApprovalDecision::Modify { edited_content } => {
                    let args = modified.as_ref().unwrap_or(call.args.as_ref());
                    let Some(new_args) = tool.modified_args(args, &edited_content) else {
                        continue;
                    };
                    match tool.prepare(&new_args, &self.services) {
                        Ok(inv) => {
                            invocation = inv;
                            modified = Some(new_args);
                        }
                        Err(msg) => {
                            return Approval::Refused(self.failed(
                                call,
                                ToolErrorKind::InvalidToolParams,
                                msg,
                            ))
                        }
                    }
                }
                ApprovalDecision::Deny { reason } => {
                    return Approval::Refused(self.failed(
                        call,
                        ToolErrorKind::PolicyViolation,
                        reason,
                    ))
                }
                ApprovalDecision::Cancel { feedback } => {
                    let reason = match feedback {
                        Some(f) if !f.trim().is_empty() => {
                            format!("User denied execution. The user said: {}", f.trim())
                        }
                        _ => "User denied execution.".to_string(),
                    };
                    return Approval::UserCancelled(self.cancelled(call, &reason));
                }
            }
        }
    }

    fn remember(&self, tool: &dyn ToolHandle, keys: &[String], origin: &str) {
        let Ok(mut state) = self.policy.lock() else {
            return;
        };
        if tool.kind() == ToolKind::Edit && state.mode == ApprovalMode::Default {
            state.mode = ApprovalMode::AutoEdit;
            self.emit(UiEvent::Notice("Edits will be applied without asking for the rest of this session (approval mode auto_edit).".into()));
        }
        let new_rules: Vec<AllowRule> = if keys.is_empty() {
            vec![AllowRule {
                tool: tool.name().into(),
                key: None,
                origin: origin.into(),
            }]
        } else {
            keys.iter()
                .map(|k| AllowRule {
                    tool: tool.name().into(),
                    key: Some(k.clone()),
                    origin: origin.into(),
                })
                .collect()
        };
        for rule in new_rules {
            if !state.rules.contains(&rule) {
                state.rules.push(rule);
            }
        }
    }
}
