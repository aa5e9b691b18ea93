//! What the Chat actor does when loop detection fires: it asks the approver whether
//! the turn may go on (the REPL asks the user; the headless front refuses). Going on
//! turns loop detection off for the rest of the turn; otherwise the turn ends with
//! [`TurnOutcome::LoopDetected`] and the looping model turn is left out of the history,
//! so every function call in it stays answered.

use actix::prelude::*;

use super::Chat;
use crate::engine::loop_detection::LoopKind;
use crate::protocol::content::{Content, FunctionCall};
use crate::protocol::{ApprovalDecision, ApprovalRequest, ConfirmationDetails, TurnOutcome};

impl Chat {
    /// Loop detection fired. `calls`: the model turn whose tool calls made the loop
    /// (None for repeated text, whose answer was cut off).
    pub(super) fn on_loop(
        &mut self,
        kind: LoopKind,
        calls: Option<(Content, Vec<std::sync::Arc<FunctionCall>>)>,
        ctx: &mut Context<Self>,
    ) {
        let message = format!(
            "Loop detected: {}. The turn was stopped (model.loop_detection).",
            kind.describe()
        );
        tracing::warn!(%message, "loop detected");
        let Some(approver) = self.config.approver.clone() else {
            return self.finish(TurnOutcome::LoopDetected { message });
        };
        let request = ApprovalRequest {
            call_id: "loop-detection".into(),
            tool_name: "loop_detection".into(),
            args: serde_json::Value::Null,
            agent: None,
            details: ConfirmationDetails::Info {
                title: "Loop detected".into(),
                prompt: format!(
                    "{}. Let the model go on (loop detection off for the rest of this turn)?",
                    capitalized(&kind.describe())
                ),
            },
        };
        ctx.spawn(
            async move { approver.ask(request).await }
                .into_actor(self)
                .map(move |decision, act, ctx| {
                    let go_on = matches!(
                        decision,
                        Some(
                            ApprovalDecision::ProceedOnce
                                | ApprovalDecision::ProceedAlways
                                | ApprovalDecision::ProceedAlwaysAndSave
                        )
                    );
                    let Some(turn) = act.turn.as_mut() else {
                        return;
                    };
                    if !go_on || turn.cancel.is_cancelled() {
                        return act.finish(TurnOutcome::LoopDetected { message });
                    }
                    turn.loop_check = false;
                    turn.loops.reset();
                    match calls {
                        Some((content, calls)) => act.run_calls(content, calls, ctx),
                        None => act.request_model(ctx),
                    }
                }),
        );
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
