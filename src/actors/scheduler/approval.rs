//! Approval: the shared policy state (mode and allow rules) and how the Scheduler
//! decides, asks the approver, and remembers "allow for this session".

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use tokio_util::sync::CancellationToken;

use super::policy_files::policy_verdict;
use super::{CallInfo, Inner};
use crate::engine::policy::{decide, PolicyDecision};
use crate::engine::policy_rules::{PolicyRules, RuleDecision, ALWAYS_ALLOW_PRIORITY};
use crate::platform::sandbox::SandboxMode;
use crate::protocol::{
    AllowKey, ApprovalDecision, ApprovalMode, ApprovalRequest, CallStatus, CompletedCall,
    ConfirmationDetails, PolicySnapshot, ToolErrorKind, ToolKind, UiEvent,
};
use crate::tools::registry::{Invocation, ToolHandle};
use crate::tools::PolicyHint;

pub use crate::protocol::AllowRule;

/// The approval state shared by the Scheduler and the front ends.
#[derive(Debug, Default)]
pub struct PolicyState {
    pub mode: ApprovalMode,
    pub rules: Vec<AllowRule>,
    /// The policy files' rules (and those of `tools.allowed`, `mcp.allowed`), which
    /// decide before the mode ([`policy_verdict`]).
    pub files: Arc<PolicyRules>,
    /// Whether a person answers approvals (a policy rule's `interactive`).
    pub interactive: bool,
    /// The mode the session was in when it last entered plan mode (`None`: it started
    /// in plan mode, or never entered it): where a headless `exit_plan_mode` returns.
    pub before_plan: Option<ApprovalMode>,
}

impl PolicyState {
    /// Whether an allow rule covers a call of `tool` with these approval keys, which
    /// name what `allow_key` says (the tool's facts).
    pub fn allows(&self, tool: &str, allow_key: AllowKey, keys: &[String]) -> bool {
        crate::engine::policy::rules_allow(&self.rules, tool, allow_key, keys)
    }

    fn snapshot(&self) -> PolicySnapshot {
        PolicySnapshot {
            mode: self.mode,
            rules: self.rules.clone(),
        }
    }
}

/// The approval state, shared by the Scheduler's calls; every change is published
/// to the session's handle ([`PolicyCell::subscribe`]), which front ends read.
pub type SharedPolicy = Arc<PolicyCell>;

/// The approval state behind its lock, and the snapshot published after each change.
#[derive(Debug)]
pub struct PolicyCell {
    state: Mutex<PolicyState>,
    published: watch::Sender<PolicySnapshot>,
}

impl PolicyCell {
    /// A cell holding `state`.
    pub fn new(state: PolicyState) -> SharedPolicy {
        let (published, _) = watch::channel(state.snapshot());
        Arc::new(Self {
            state: Mutex::new(state),
            published,
        })
    }

    /// The state, locked; a change made through the guard is published when it drops.
    /// (A poisoned lock is taken over.)
    pub fn lock(&self) -> PolicyGuard<'_> {
        PolicyGuard {
            state: self.state.lock().unwrap_or_else(|p| p.into_inner()),
            published: &self.published,
            changed: false,
        }
    }

    /// The state as it stands.
    pub fn snapshot(&self) -> PolicySnapshot {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .snapshot()
    }

    /// The published snapshots, the current one first.
    pub fn subscribe(&self) -> watch::Receiver<PolicySnapshot> {
        self.published.subscribe()
    }
}

/// The locked approval state ([`PolicyCell::lock`]).
pub struct PolicyGuard<'a> {
    state: std::sync::MutexGuard<'a, PolicyState>,
    published: &'a watch::Sender<PolicySnapshot>,
    changed: bool,
}

impl std::ops::Deref for PolicyGuard<'_> {
    type Target = PolicyState;

    fn deref(&self) -> &PolicyState {
        &self.state
    }
}

impl std::ops::DerefMut for PolicyGuard<'_> {
    fn deref_mut(&mut self) -> &mut PolicyState {
        self.changed = true;
        &mut self.state
    }
}

impl Drop for PolicyGuard<'_> {
    fn drop(&mut self) {
        if self.changed {
            self.published.send_replace(self.state.snapshot());
        }
    }
}

/// What approval came to for one call.
pub(super) enum Approval {
    /// Run it; with the content hash of the file as the approved diff showed it, when
    /// the user approved an edit (what lands must be what was approved), and the time
    /// spent preparing the confirmation (an edit's correction calls included, the
    /// user's answer not), which counts in the call's duration; and the sandbox the
    /// call's commands must run in when the approval chose one (`ReadOnly` for a call
    /// that runs without asking only because its tool's hint says it is read-only).
    Run(
        Box<dyn Invocation>,
        Option<[u8; 32]>,
        std::time::Duration,
        Option<SandboxMode>,
    ),
    /// Run it with the user's answer (`ask_user`'s answers, `exit_plan_mode`'s
    /// verdict), and the time spent preparing the confirmation.
    Answered(Box<dyn Invocation>, serde_json::Value, std::time::Duration),
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
        let mut prepared = std::time::Duration::ZERO;
        loop {
            // A hint that needs the file system is settled on its pool, not here.
            if let Some(settling) = invocation.settle_hint() {
                settling.await;
            }
            let asked_by_rule;
            (invocation, asked_by_rule) =
                match self.decide_by_policy(tool, invocation, call, force_ask, prepared) {
                    Ok(to_ask) => to_ask,
                    Err(decided) => return decided,
                };
            // A hook or a policy rule asked to confirm: the call's own confirmation, or
            // else a plain one.
            let forced = (force_ask || asked_by_rule)
                .then(|| modified.as_ref().unwrap_or(call.args.as_ref()));
            let details = match self
                .confirmation(
                    tool,
                    invocation.as_ref(),
                    call,
                    cancel,
                    forced,
                    &mut prepared,
                )
                .await
            {
                Ok(Some(details)) => details,
                Ok(None) => return Approval::Run(invocation, None, prepared, None),
                Err(refused) => return Approval::Refused(refused),
            };
            let bound = approved_hash(&details);
            let server_rule = match &details {
                ConfirmationDetails::Mcp { server_rule, .. } => Some(server_rule.clone()),
                _ => None,
            };
            let Some(decision) = self
                .ask_user(tool, call, details, modified.as_ref(), cancel)
                .await
            else {
                return Approval::Refused(self.cancelled(call, "Operation cancelled by user"));
            };
            match decision {
                ApprovalDecision::ProceedOnce => {
                    return Approval::Run(invocation, bound, prepared, None)
                }
                ApprovalDecision::ProceedAlwaysServer => {
                    self.allow_server(server_rule);
                    return Approval::Run(invocation, bound, prepared, None);
                }
                ApprovalDecision::ProceedAlways | ApprovalDecision::ProceedAlwaysAndSave => {
                    let origin = if decision == ApprovalDecision::ProceedAlways {
                        "session"
                    } else {
                        "saved"
                    };
                    self.remember(tool.as_ref(), invocation.approval_keys(), origin);
                    return Approval::Run(invocation, bound, prepared, None);
                }
                ApprovalDecision::Modify { edited_content } => {
                    match self.modify(tool, call, &edited_content, &mut modified) {
                        Ok(Some(edited)) => {
                            invocation = edited;
                            call.modified_args = modified.clone();
                        }
                        Ok(None) => {}
                        Err(refused) => return Approval::Refused(refused),
                    }
                }
                ApprovalDecision::Answered { payload } => {
                    return Approval::Answered(invocation, payload, prepared)
                }
                ApprovalDecision::Deny { reason } => {
                    return Approval::Refused(self.failed(
                        call,
                        ToolErrorKind::PolicyViolation,
                        reason,
                    ))
                }
                ApprovalDecision::Cancel { feedback } => {
                    let reason = user_denied_reason(feedback);
                    return Approval::UserCancelled(self.cancelled(call, &reason));
                }
            }
        }
    }

    /// The policy's verdict on the call (a policy file's rule, its mode, its allow
    /// rules, the tool's own decision and hint): decided (`Err`: run or refused), or
    /// the invocation back when the user must be asked (with `true` when a policy
    /// rule asked, so a call without a confirmation of its own gets a plain one).
    fn decide_by_policy(
        &self,
        tool: &Arc<dyn ToolHandle>,
        invocation: Box<dyn Invocation>,
        call: &CallInfo,
        force_ask: bool,
        prepared: std::time::Duration,
    ) -> Result<(Box<dyn Invocation>, bool), Approval> {
        let protected = invocation.policy_hint() == Some(PolicyHint::Protected);
        let hint = invocation.policy_hint().map(|h| h == PolicyHint::Allow);
        let (mode, interactive, allowed, verdict) = {
            let state = self.policy.lock();
            let allowed = !protected
                && state.allows(
                    tool.name(),
                    tool.facts().allow_key,
                    invocation.approval_keys(),
                );
            let args = call.modified_args.as_ref().unwrap_or(call.args.as_ref());
            let aliases = self.registry.facts().legacy_names(tool.name());
            (
                state.mode,
                state.interactive,
                allowed,
                policy_verdict(&state, tool, args, &aliases, self.agent.as_deref()),
            )
        };
        if let Some(v) = verdict.filter(|v| !allowed || v.priority > ALWAYS_ALLOW_PRIORITY) {
            tracing::debug!(tool = tool.name(), source = %v.source, decision = v.decision.as_str(), "policy rule decides");
            return match v.decision {
                RuleDecision::Deny => Err(Approval::Refused(self.failed(
                    call,
                    ToolErrorKind::PolicyViolation,
                    v.refusal(),
                ))),
                RuleDecision::AskUser => Ok((invocation, true)),
                RuleDecision::Allow if force_ask || protected => Ok((invocation, false)),
                RuleDecision::Allow => Err(Approval::Run(invocation, None, prepared, None)),
            };
        }
        let own = invocation.decide(mode, interactive);
        let by_hint = own.is_none() && mode != ApprovalMode::Yolo && hint == Some(true);
        let decision = own.unwrap_or_else(|| decide(mode, tool.kind(), hint));
        match decision {
            PolicyDecision::Allow if !force_ask => {
                // Only the tool's read-only hint let it run unasked: it runs under
                // the read-only sandbox (the hint is given only when one exists).
                let sandbox = by_hint.then_some(SandboxMode::ReadOnly);
                Err(Approval::Run(invocation, None, prepared, sandbox))
            }
            PolicyDecision::Allow => Ok((invocation, false)),
            PolicyDecision::Deny(reason) => Err(Approval::Refused(self.failed(
                call,
                ToolErrorKind::PolicyViolation,
                match reason.is_empty() {
                    true => "Tool execution denied by policy.".to_string(),
                    false => format!("Tool execution denied by policy. {reason}"),
                },
            ))),
            PolicyDecision::Ask if allowed && !force_ask => {
                Err(Approval::Run(invocation, None, prepared, None))
            }
            PolicyDecision::Ask => Ok((invocation, false)),
        }
    }

    /// The confirmation to show (`None`: the tool has none, so the call runs), its
    /// preparation time added to `prepared`; `forced` (the arguments) when a hook
    /// asked to confirm, so a call with no confirmation of its own gets a plain one.
    /// A panic while building it fails the call (`Err`).
    async fn confirmation(
        &self,
        tool: &Arc<dyn ToolHandle>,
        invocation: &dyn Invocation,
        call: &CallInfo,
        cancel: &CancellationToken,
        forced: Option<&serde_json::Value>,
        prepared: &mut std::time::Duration,
    ) -> Result<Option<ConfirmationDetails>, Arc<CompletedCall>> {
        let ctx = self.context(&call.id, cancel.clone());
        let preparing = std::time::Instant::now();
        // A panic while building the confirmation fails this call only.
        let details = confirmation_guarded(invocation, &ctx).await;
        *prepared += preparing.elapsed();
        match details {
            Ok(Some(details)) => Ok(Some(details)),
            Ok(None) => Ok(forced.map(|args| super::hooks::forced_details(tool.name(), args))),
            Err(message) => Err(self.failed(
                call,
                ToolErrorKind::UnhandledException,
                format!(
                    "Internal error while building the confirmation: the tool panicked ({message})"
                ),
            )),
        }
    }

    /// Shows the confirmation and waits for the user's answer (`None`: the call was
    /// cancelled meanwhile; an approver that is gone cancels).
    async fn ask_user(
        &self,
        tool: &Arc<dyn ToolHandle>,
        call: &mut CallInfo,
        details: ConfirmationDetails,
        modified: Option<&serde_json::Value>,
        cancel: &CancellationToken,
    ) -> Option<ApprovalDecision> {
        self.status(call, CallStatus::AwaitingApproval);
        call.timeline.awaiting_approval = Some(std::time::Instant::now());
        let args = modified.unwrap_or(call.args.as_ref());
        let request = ApprovalRequest {
            call_id: call.id.clone(),
            tool_name: tool.name().to_string(),
            args: args.clone(),
            agent: None,
            details,
        };
        self.notify_permission(&request).await;
        tokio::select! {
            d = { self.events.flush(); self.approver.ask(request) } => Some(d.unwrap_or(ApprovalDecision::Cancel { feedback: None })),
            _ = cancel.cancelled() => None,
        }
    }

    /// The user edited the proposed change: the call as edited (`Ok(None)`: the edit
    /// changes nothing, the same confirmation is asked again), its arguments kept in
    /// `modified`; `Err` when the edited arguments are invalid.
    fn modify(
        &self,
        tool: &Arc<dyn ToolHandle>,
        call: &CallInfo,
        edited_content: &str,
        modified: &mut Option<serde_json::Value>,
    ) -> Result<Option<Box<dyn Invocation>>, Arc<CompletedCall>> {
        let args = modified.as_ref().unwrap_or(call.args.as_ref());
        let Some(new_args) = tool.modified_args(args, edited_content) else {
            return Ok(None);
        };
        match tool.prepare(&new_args, &self.services) {
            Ok(inv) => {
                *modified = Some(new_args);
                Ok(Some(inv))
            }
            Err(msg) => Err(self.failed(call, ToolErrorKind::InvalidToolParams, msg)),
        }
    }

    /// "Allow every tool of this MCP server for the session".
    fn allow_server(&self, server_rule: Option<String>) {
        if let Some(rule) = server_rule {
            let mut state = self.policy.lock();
            let rule = AllowRule {
                tool: rule,
                key: None,
                origin: "session".into(),
            };
            if !state.rules.contains(&rule) {
                state.rules.push(rule);
            }
        }
    }

    /// An approved edit found its file changed when it ran (nothing was written):
    /// the user is told and asked again, with the diff of what the file holds now.
    /// The arguments are the ones approved (the user's modification included).
    pub(super) async fn ask_again(
        &self,
        tool: &Arc<dyn ToolHandle>,
        call: &mut CallInfo,
        cancel: &CancellationToken,
    ) -> Result<(Box<dyn Invocation>, Option<[u8; 32]>), Arc<CompletedCall>> {
        tracing::info!(call_id = %call.id, "file changed since its edit was approved; asking again");
        self.emit(UiEvent::Notice(format!(
            "The file changed after you approved this {} call; here is the new diff.",
            tool.name()
        )));
        let args = call
            .modified_args
            .clone()
            .unwrap_or_else(|| call.args.as_ref().clone());
        let invocation = tool
            .prepare(&args, &self.services)
            .map_err(|msg| self.failed(call, ToolErrorKind::InvalidToolParams, msg))?;
        match self.approve(tool, invocation, call, cancel, false).await {
            Approval::Run(invocation, bound, _, _) => Ok((invocation, bound)),
            Approval::Answered(invocation, _, _) => Ok((invocation, None)),
            Approval::Refused(done) | Approval::UserCancelled(done) => Err(done),
        }
    }

    fn remember(&self, tool: &dyn ToolHandle, keys: &[String], origin: &str) {
        let mut state = self.policy.lock();
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

/// The reason a call the user denied is cancelled with (and what they said, if
/// anything).
fn user_denied_reason(feedback: Option<String>) -> String {
    match feedback {
        Some(f) if !f.trim().is_empty() => {
            format!("User denied execution. The user said: {}", f.trim())
        }
        _ => "User denied execution.".to_string(),
    }
}

/// The call's confirmation, a panic (while starting or running) turned into its text.
pub(super) async fn confirmation_guarded(
    invocation: &dyn Invocation,
    ctx: &crate::tools::ToolContext,
) -> Result<Option<crate::protocol::ConfirmationDetails>, String> {
    use futures::FutureExt;
    use std::panic::AssertUnwindSafe;
    let future = std::panic::catch_unwind(AssertUnwindSafe(|| invocation.confirmation(ctx)))
        .map_err(|p| super::panic_text(p.as_ref()))?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|p| super::panic_text(p.as_ref()))
}

/// The hash an approved edit is bound to: the file's content as the diff showed it.
pub(crate) fn approved_hash(details: &crate::protocol::ConfirmationDetails) -> Option<[u8; 32]> {
    match details {
        crate::protocol::ConfirmationDetails::Edit { original, .. } => Some(
            crate::platform::filesystem::content_hash(original.as_bytes()),
        ),
        _ => None,
    }
}
