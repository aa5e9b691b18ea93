//! Running one approved call: waiting for the calls it conflicts with, sending it to
//! its tool's actor (and asking again when an approved edit found its file changed),
//! and turning the outcome into the call's answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::conflicts::DoneSignal;
use super::{budget, CallInfo, Inner};
use crate::engine::responses::{cancelled_parts, error_parts, success_parts};
use crate::protocol::{CallStatus, CompletedCall, LlmContent, ToolError, ToolErrorKind};
use crate::tools::invoke::HostOutcome;
use crate::tools::registry::{Invocation, ToolHandle};
use crate::tools::ToolContext;

/// An approved call: what runs, and the time its confirmation took to prepare.
pub(super) struct Approved {
    pub(super) invocation: Box<dyn Invocation>,
    /// The content hash the approved diff was computed from (edits the user approved).
    pub(super) original_hash: Option<[u8; 32]>,
    pub(super) prepared: Duration,
    /// The sandbox the approval chose for the call's commands (`None`: `sandbox.mode`).
    pub(super) sandbox: Option<crate::platform::sandbox::SandboxMode>,
    /// The user's answer handed to the tool ([`ToolContext::answer`]).
    pub(super) answer: Option<serde_json::Value>,
}

/// What one approved call needs to run. It reaches the call's task boxed: an `async
/// fn` keeps its arguments apart from its locals, so unboxed they would take the room
/// of a second copy for as long as the call is in flight.
pub(super) struct Execution {
    pub(super) call: CallInfo,
    pub(super) tool: Arc<dyn ToolHandle>,
    pub(super) approved: Approved,
    pub(super) deps: Vec<DoneSignal>,
    pub(super) cancel: CancellationToken,
    /// Tells the conflict tracker the call is done (calls waiting for it go on).
    pub(super) done: tokio::sync::oneshot::Sender<()>,
}

impl Inner {
    pub(super) fn context(&self, call_id: &str, cancel: CancellationToken) -> ToolContext {
        ToolContext::new(
            self.services.clone(),
            call_id.to_string(),
            cancel,
            Some(self.events.recipient().clone()),
        )
    }

    pub(super) async fn execute(self: Arc<Self>, execution: Box<Execution>) -> Arc<CompletedCall> {
        let Execution {
            call,
            tool,
            approved,
            deps,
            cancel,
            done,
        } = *execution;
        let Approved {
            invocation,
            original_hash,
            prepared,
            sandbox,
            answer,
        } = approved;
        let mut call = call;
        // Boxed: only a call that waits for another needs this state.
        if !deps.is_empty() {
            Box::pin(async {
                tokio::select! {
                    _ = futures::future::join_all(deps) => {}
                    _ = cancel.cancelled() => {}
                }
            })
            .await;
        }
        if cancel.is_cancelled() {
            let _ = done.send(());
            return self.cancelled(&call, "Operation cancelled");
        }
        // The rare steps (an approved edit asked again, AfterTool hooks) run boxed:
        // inline, their state would be reserved in every call's task while it is in
        // flight.
        let (mut invocation, mut approved, mut asked_again) = (invocation, original_hash, false);
        let (outcome, started) = loop {
            self.status(&call, CallStatus::Executing);
            let started = Instant::now();
            call.timeline.executing = Some(started);
            call.timeline.actor = Some(invocation.actor_label());
            let ctx = self
                .context(&call.id, cancel.clone())
                .with_approved_original(approved)
                .with_sandbox(sandbox)
                .with_answer(answer.clone());
            let outcome = invocation.execute(ctx).await;
            // The edit's file changed while the user was asked: nothing was written; ask
            // once more, with the diff of what the file holds now. (The tool's own read
            // is the check: no read of its own here, which through an editor is a
            // request to the client.)
            if approved.is_none() || asked_again || !changed_after_approval(&outcome) {
                break (outcome, started);
            }
            asked_again = true;
            match Box::pin(self.ask_again(&tool, &mut call, &cancel)).await {
                Ok((again, bound)) => (invocation, approved) = (again, bound),
                Err(completed) => {
                    let _ = done.send(());
                    return completed;
                }
            }
        };
        // Preparing the confirmation (an edit's correction calls) is part of the call.
        let duration = started.elapsed() + prepared;
        let outcome = match outcome {
            // Boxed: only an oversized result needs the state of cutting and saving it.
            HostOutcome::Finished(mut out)
                if out.error.is_none() && budget::over_budget(&out.llm_content, &self.services) =>
            {
                out.llm_content = Box::pin(budget::fit_result(
                    out.llm_content,
                    &call.name,
                    &call.id,
                    &self.services,
                ))
                .await;
                HostOutcome::Finished(out)
            }
            other => other,
        };
        let _ = done.send(());
        let hook_modified = call.hook_modified;
        let completed = self.completed_call(call, tool.as_ref(), outcome, duration);
        let completed = match hook_modified || self.services.hooks.is_active() {
            true => Box::pin(self.after_tool(completed, hook_modified, &cancel)).await,
            false => completed,
        };
        self.finish(completed)
    }

    /// The call's answer from what its tool's actor came back with.
    fn completed_call(
        &self,
        call: CallInfo,
        tool: &dyn ToolHandle,
        outcome: HostOutcome,
        duration: Duration,
    ) -> CompletedCall {
        let model = self.services.model_name.as_str();
        let (status, parts, display, error, data) = match outcome {
            HostOutcome::Finished(out) => match out.error {
                Some(err) => (
                    CallStatus::Error,
                    error_parts(&call.name, &call.id, &err.message),
                    out.display,
                    Some(err),
                    out.data,
                ),
                None => (
                    CallStatus::Success,
                    success_parts(&call.name, &call.id, out.llm_content, model),
                    out.display,
                    None,
                    out.data,
                ),
            },
            HostOutcome::Cancelled(partial) => {
                cancelled_outcome(&call, partial.as_ref().map(|o| &o.llm_content))
            }
            HostOutcome::Panicked(msg) => host_failure(
                &call,
                ToolErrorKind::UnhandledException,
                format!("Tool \"{}\" crashed: {msg}", tool.name()),
            ),
            HostOutcome::TimedOut(limit) => host_failure(
                &call,
                ToolErrorKind::Timeout,
                format!(
                    "Tool \"{}\" did not finish within {} s and was stopped.",
                    tool.name(),
                    limit.as_secs()
                ),
            ),
            HostOutcome::Unavailable(msg) => host_failure(
                &call,
                ToolErrorKind::UnhandledException,
                format!("Tool \"{}\" is unavailable: {msg}", tool.name()),
            ),
        };
        CompletedCall {
            call_id: call.id,
            name: call.name,
            args: call.args,
            status,
            response_parts: parts,
            display,
            error,
            duration,
            data,
            timeline: call.timeline,
        }
    }
}

/// Whether an approved edit refused to write because its file no longer held what the
/// approved diff was computed from ([`ToolContext::check_approved`]).
fn changed_after_approval(outcome: &HostOutcome) -> bool {
    matches!(outcome, HostOutcome::Finished(out)
        if out.error.is_some() && out.data.as_ref().is_some_and(crate::tools::is_changed_after_approval))
}

/// A call cancelled while it ran (with what it had done so far, if anything), as the
/// parts of its [`CompletedCall`].
fn cancelled_outcome(call: &CallInfo, partial: Option<&LlmContent>) -> Outcome {
    let reason = if partial.is_some() {
        "User cancelled tool execution."
    } else {
        "Operation cancelled by user"
    };
    let parts = cancelled_parts(&call.name, &call.id, partial, reason);
    let message = format!("[Operation Cancelled] {reason}");
    (
        CallStatus::Cancelled,
        parts,
        reason.to_string(),
        Some(ToolError {
            message,
            kind: ToolErrorKind::Cancelled,
        }),
        None,
    )
}

/// A call the host could not complete (panic, timeout, unreachable actor), as the
/// parts of its [`CompletedCall`].
fn host_failure(call: &CallInfo, kind: ToolErrorKind, message: String) -> Outcome {
    (
        CallStatus::Error,
        error_parts(&call.name, &call.id, &message),
        message.clone(),
        Some(ToolError { message, kind }),
        None,
    )
}

/// Status, response parts, display, error and data of a finished call.
type Outcome = (
    CallStatus,
    Vec<crate::protocol::content::Part>,
    String,
    Option<ToolError>,
    Option<serde_json::Value>,
);
