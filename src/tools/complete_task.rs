//! `complete_task`: how a subagent ends its task, handing its declared output (the
//! generalist's `result`, the investigator's `report`) to its parent. Offered to
//! subagents only; the declaration each one sees is its agent's (the launcher builds
//! it), so the registered schema only asks for an object. A call that lacks the
//! agent's output is refused with what is missing, and the subagent may call again.

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{Services, Tool, ToolContext};
use crate::protocol::{ToolKind, ToolOutput};

/// The tool's name, as gemini-cli 0.61's subagents are given it.
pub const COMPLETE_TASK: &str = "complete_task";

/// The `complete_task` tool.
pub struct CompleteTask;

impl Tool for CompleteTask {
    type Params = Value;

    fn name(&self) -> &'static str {
        COMPLETE_TASK
    }

    fn display_name(&self) -> &'static str {
        "Complete Task"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn run_once(&self) -> bool {
        false
    }

    fn subagents_only(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Submits your final output to the agent that started you and ends your task; there is no other way to finish. Call it once, when the task is done.".into()
    }

    fn schema(&self) -> Value {
        json!({"type": "object"})
    }

    fn validate(&self, params: &Value, services: &Services) -> Result<(), String> {
        let Some(seat) = &services.agent else {
            return Err("complete_task is only for subagents.".into());
        };
        match params.get(&seat.output_name) {
            None => Err(format!(
                "Missing required argument '{}' for completion.",
                seat.output_name
            )),
            Some(Value::Null) => Err(format!(
                "Output validation failed: '{}' must not be null.",
                seat.output_name
            )),
            Some(_) => Ok(()),
        }
    }

    fn execute(&self, params: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let name = ctx
            .services
            .agent
            .as_ref()
            .map(|s| s.output_name.clone())
            .unwrap_or_default();
        Box::pin(async move {
            // gemini-cli's: a string as it is, anything else as indented JSON.
            let submitted = match params.get(&name) {
                Some(Value::String(text)) => text.clone(),
                Some(value) => serde_json::to_string_pretty(value).unwrap_or_default(),
                None => String::new(),
            };
            let mut out = ToolOutput::text(
                "Output submitted and task completed.",
                "Output submitted and task completed.",
            );
            out.data = Some(json!({ "taskCompleted": true, "submittedOutput": submitted }));
            out
        })
    }
}
