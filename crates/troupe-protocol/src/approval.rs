//! What the user is asked to approve, how they answer, and the approval modes.

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the user is asked to approve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConfirmationDetails {
    /// A file change: the unified diff of this call, recomputed against the disk.
    Edit {
        title: String,
        file_path: String,
        diff: String,
        original: String,
        proposed: String,
        lines_added: usize,
        lines_removed: usize,
    },
    /// A shell command and where it runs.
    Exec {
        title: String,
        command: String,
        root_commands: Vec<String>,
        dir: String,
    },
    /// URLs to be fetched.
    Fetch {
        title: String,
        prompt: String,
        urls: Vec<String>,
    },
    /// Anything else: a title and a question.
    Info { title: String, prompt: String },
    /// A call of an MCP server's tool; `server_rule` is the allow rule covering all of
    /// the server's tools.
    Mcp {
        title: String,
        server: String,
        tool: String,
        server_rule: String,
    },
}

/// The user's (or the headless policy's) answer to a confirmation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ApprovalDecision {
    ProceedOnce,
    /// Allow this kind of call for the rest of the session.
    ProceedAlways,
    /// Allow it and save the rule to the user's config.
    ProceedAlwaysAndSave,
    /// Allow every tool of this call's MCP server for the rest of the session.
    ProceedAlwaysServer,
    /// The user edited the proposal; the call is rebuilt with this content and asked again.
    Modify {
        edited_content: String,
    },
    /// Refused by the user; `feedback` tells the model what to do instead.
    Cancel {
        feedback: Option<String>,
    },
    /// Refused by a policy (headless mode cannot ask); `reason` goes to the model.
    Deny {
        reason: String,
    },
}

/// Asks an approver (the REPL, or the headless policy) about one call.
#[derive(Debug, Clone, Message)]
#[rtype(result = "ApprovalDecision")]
pub struct ApprovalRequest {
    pub call_id: String,
    pub tool_name: String,
    pub args: Value,
    pub details: ConfirmationDetails,
    /// The subagent that asks, as `<agent id> (<name>)`; `None`: the main session.
    pub agent: Option<std::sync::Arc<str>>,
}

/// An approval mode: how much runs without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    Plan,
    #[default]
    Default,
    AutoEdit,
    Yolo,
}

impl ApprovalMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "plan" => Some(Self::Plan),
            "default" => Some(Self::Default),
            "auto_edit" | "autoEdit" | "auto-edit" => Some(Self::AutoEdit),
            "yolo" => Some(Self::Yolo),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Default => "default",
            Self::AutoEdit => "auto_edit",
            Self::Yolo => "yolo",
        }
    }
}
