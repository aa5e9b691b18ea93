//! `write_todos`: the model's plan for a multi-step task, replaced whole on each call.
//! The current list goes to the front end in `ToolOutput.data` (`{"todos": [...]}`).

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{Services, Tool, ToolContext};
use crate::protocol::{ToolKind, ToolOutput};

const STATUSES: [&str; 5] = [
    "pending",
    "in_progress",
    "completed",
    "cancelled",
    "blocked",
];

/// The `write_todos` tool.
pub struct WriteTodos;

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub description: String,
    pub status: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub todos: Vec<Todo>,
}

/// The name the model calls.
pub const NAME: &str = "write_todos";

impl Tool for WriteTodos {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "WriteTodos"
    }

    /// gemini-cli 0.61 writes this core tool's declaration out per model family, without
    /// `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    /// A plan for the user: ACP shows it as thinking.
    fn acp_kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn description(&self) -> String {
        "Writes the list of subtasks for the current request, so you and the user can \
         follow progress. Use it for complex, multi-step work (not for tasks of one or \
         two steps). Each call replaces the whole list. Statuses: pending (not started), \
         in_progress (being worked on now; at most one at a time), completed (done and \
         verified), cancelled (no longer needed), blocked (cannot go on for now). Mark a \
         subtask in_progress before starting it and completed as soon as it is done; \
         update the list whenever the plan changes."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete list of todo items. This will replace the existing list.",
                    "items": {
                        "type": "object",
                        "description": "A single todo item.",
                        "properties": {
                            "description": {"type": "string", "description": "The description of the task."},
                            "status": {"type": "string", "enum": STATUSES, "description": "The current status of the task."}
                        },
                        "required": ["description", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        for todo in &p.todos {
            if todo.description.trim().is_empty() {
                return Err("Each todo must have a non-empty description string".into());
            }
            if !STATUSES.contains(&todo.status.as_str()) {
                return Err(format!(
                    "Each todo must have a valid status ({})",
                    STATUSES.join(", ")
                ));
            }
        }
        if p.todos.iter().filter(|t| t.status == "in_progress").count() > 1 {
            return Err(
                "Invalid parameters: Only one task can be \"in_progress\" at a time.".into(),
            );
        }
        Ok(())
    }

    fn execute(&self, p: Params, _: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let data = json!({ "todos": p.todos });
            if p.todos.is_empty() {
                let text = "Successfully cleared the todo list.";
                return ToolOutput::text(text, text).with_data(data);
            }
            let list = p
                .todos
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{}. [{}] {}", i + 1, t.status, t.description))
                .collect::<Vec<_>>()
                .join("\n");
            ToolOutput::text(
                format!("Successfully updated the todo list. The current list is now:\n{list}"),
                list,
            )
            .with_data(data)
        })
    }
}
