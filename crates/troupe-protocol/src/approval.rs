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
    /// `exit_plan_mode`: the plan to approve, read from its file (`plan_path`).
    ExitPlanMode {
        title: String,
        plan_path: String,
        plan: String,
    },
    /// `ask_user`: the model's questions; the answer is [`ApprovalDecision::Answered`]
    /// with `{"answers": {"<index>": "<answer>"}}`.
    AskUser {
        title: String,
        questions: Vec<Question>,
    },
    /// A call of an MCP server's tool; `server_rule` is the allow rule covering all of
    /// the server's tools.
    Mcp {
        title: String,
        server: String,
        tool: String,
        server_rule: String,
    },
}

/// One question of an `ask_user` call, as gemini-cli's `ask_user` declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The question itself.
    pub question: String,
    /// A short label for it ("Auth", "Library").
    #[serde(default)]
    pub header: String,
    /// `choice` (the default), `text` or `yesno`.
    #[serde(default = "Question::default_type", rename = "type")]
    pub kind: String,
    /// The choices of a `choice` question.
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    /// A `choice` question whose answer may be several of its options.
    #[serde(default, rename = "multiSelect")]
    pub multi_select: bool,
    /// A hint shown where a free answer is typed.
    #[serde(default)]
    pub placeholder: Option<String>,
}

impl Question {
    fn default_type() -> String {
        "choice".into()
    }
}

/// One choice of a [`Question`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// What is shown and, when chosen, answered.
    pub label: String,
    /// What choosing it means.
    #[serde(default)]
    pub description: String,
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
    /// An answer that is more than yes or no, handed to the tool as it is (gemini-cli's
    /// confirmation payloads): `ask_user`'s `{"answers": {...}}`, `exit_plan_mode`'s
    /// `{"approved": bool, "approvalMode"?: mode, "feedback"?: text}`.
    Answered {
        payload: Value,
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
