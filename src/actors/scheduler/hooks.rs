//! Where the Scheduler calls the hooks: BeforeTool (before the policy and the
//! confirmation), AfterTool (on the finished result) and Notification (when a
//! confirmation is about to be asked), and how their verdicts change a call.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{CallInfo, Inner};
use crate::actors::hooks::{Decision, HookEvent};
use crate::protocol::{
    ApprovalRequest, CallStatus, CompletedCall, ConfirmationDetails, ToolError, ToolErrorKind,
    UiEvent,
};
use crate::tools::registry::{Invocation, ToolHandle};

/// The note added to the output of a call whose arguments a hook replaced.
pub const MODIFIED_NOTE: &str =
    "\n\n[System] Tool input parameters were modified by a hook before execution.";

/// What BeforeTool decided for one call.
pub(super) enum BeforeTool {
    /// Go on (with arguments a hook may have replaced); `force_ask` asks the user even
    /// where the policy would allow.
    Run {
        invocation: Box<dyn Invocation>,
        force_ask: bool,
    },
    /// The call is answered already (blocked, stopped, or its new arguments invalid).
    Done(Arc<CompletedCall>),
}

impl Inner {
    pub(super) async fn before_tool(
        &self,
        tool: &Arc<dyn ToolHandle>,
        invocation: Box<dyn Invocation>,
        call: &mut CallInfo,
        cancel: &CancellationToken,
    ) -> BeforeTool {
        let hooks = &self.services.hooks;
        if !hooks.is_active() {
            return BeforeTool::Run {
                invocation,
                force_ask: false,
            };
        }
        let fields = json!({"tool_name": call.name, "tool_input": call.args});
        let verdict = hooks
            .fire(
                HookEvent::BeforeTool,
                Some(call.name.clone()),
                fields,
                cancel.clone(),
            )
            .await;
        if let Some(reason) = &verdict.stop {
            let message = format!("Agent execution stopped by hook: {reason}");
            self.emit(UiEvent::Warning(message.clone()));
            cancel.cancel();
            return BeforeTool::Done(self.failed(call, ToolErrorKind::PolicyViolation, message));
        }
        if verdict.decision == Decision::Deny {
            let message = format!("Tool execution blocked: {}", verdict.reason_text());
            return BeforeTool::Done(self.failed(call, ToolErrorKind::PolicyViolation, message));
        }
        let mut invocation = invocation;
        if let Some(new_args) = verdict.tool_input {
            match tool.prepare(&new_args, &self.services) {
                Ok(inv) => {
                    invocation = inv;
                    call.args = crate::protocol::content::CallArgs::new(new_args);
                    call.hook_modified = true;
                }
                Err(msg) => {
                    let message = format!("The arguments a hook gave are invalid: {msg}");
                    return BeforeTool::Done(self.failed(
                        call,
                        ToolErrorKind::InvalidToolParams,
                        message,
                    ));
                }
            }
        }
        BeforeTool::Run {
            invocation,
            force_ask: verdict.decision == Decision::Ask,
        }
    }

    /// AfterTool: `deny` replaces the result with `Tool result blocked: <reason>`;
    /// `additionalContext` is appended in a `<hook_context>`; a stop ends the turn.
    pub(super) async fn after_tool(
        &self,
        mut completed: CompletedCall,
        modified: bool,
        cancel: &CancellationToken,
    ) -> CompletedCall {
        if modified {
            append_to_response(&mut completed, MODIFIED_NOTE);
        }
        let hooks = &self.services.hooks;
        if !hooks.is_active() || completed.status == CallStatus::Cancelled {
            return completed;
        }
        let response = completed
            .response_parts
            .first()
            .and_then(|p| p.function_response.as_deref())
            .map(|fr| fr.response.clone())
            .unwrap_or(Value::Null);
        let llm = response
            .get("output")
            .or_else(|| response.get("error"))
            .cloned()
            .unwrap_or(Value::Null);
        let mut tool_response = json!({"llmContent": llm, "returnDisplay": completed.display});
        if let Some(err) = &completed.error {
            tool_response["error"] = json!({"message": err.message, "type": err.kind.as_str()});
        }
        let fields = json!({
            "tool_name": completed.name,
            "tool_input": completed.args,
            "tool_response": tool_response,
        });
        let verdict = hooks
            .fire(
                HookEvent::AfterTool,
                Some(completed.name.clone()),
                fields,
                cancel.clone(),
            )
            .await;
        if let Some(reason) = &verdict.stop {
            self.emit(UiEvent::Warning(format!(
                "Agent execution stopped by hook: {reason}"
            )));
            cancel.cancel();
        }
        if verdict.decision == Decision::Deny {
            let message = format!("Tool result blocked: {}", verdict.reason_text());
            completed.response_parts = crate::engine::responses::error_parts(
                &completed.name,
                &completed.call_id,
                &message,
            );
            completed.status = CallStatus::Error;
            completed.display = message.clone();
            completed.error = Some(ToolError {
                message,
                kind: ToolErrorKind::PolicyViolation,
            });
            return completed;
        }
        if let Some(context) = verdict.additional_context {
            append_to_response(
                &mut completed,
                &format!("\n\n<hook_context>{context}</hook_context>"),
            );
        }
        completed
    }

    /// Notification (`ToolPermission`) as a confirmation opens.
    pub(super) async fn notify_permission(&self, request: &ApprovalRequest) {
        let hooks = &self.services.hooks;
        if !hooks.is_active() || !self.services.settings.hooks.notifications {
            return;
        }
        let (title, what) = match &request.details {
            ConfirmationDetails::Edit { title, .. } => (title, "editing"),
            ConfirmationDetails::Exec { title, .. } => (title, "execution"),
            ConfirmationDetails::Fetch { title, .. }
            | ConfirmationDetails::Info { title, .. }
            | ConfirmationDetails::ExitPlanMode { title, .. }
            | ConfirmationDetails::AskUser { title, .. } => (title, "information"),
            ConfirmationDetails::Mcp { title, .. } => (title, "execution"),
        };
        let fields = json!({
            "notification_type": "ToolPermission",
            "message": format!("Tool {title} requires {what}"),
            "details": serde_json::to_value(&request.details).unwrap_or(Value::Null),
        });
        hooks
            .fire(
                HookEvent::Notification,
                None,
                fields,
                CancellationToken::new(),
            )
            .await;
    }
}

/// Appends `text` to the `output` (or `error`) string of a call's functionResponse.
fn append_to_response(completed: &mut CompletedCall, text: &str) {
    let Some(fr) = completed
        .response_parts
        .first_mut()
        .and_then(|p| p.function_response.as_mut().map(std::sync::Arc::make_mut))
    else {
        return;
    };
    let Some(obj) = fr.response.as_object_mut() else {
        return;
    };
    let key = if obj.contains_key("error") {
        "error"
    } else {
        "output"
    };
    let old = obj
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    obj.insert(key.into(), Value::String(format!("{old}{text}")));
}

/// The confirmation shown when a hook asks for one on a call that has none.
pub(super) fn forced_details(tool: &str, args: &Value) -> ConfirmationDetails {
    ConfirmationDetails::Info {
        title: format!("Confirm {tool}"),
        prompt: format!("A hook asked to confirm this call: {tool} {args}"),
    }
}
