//! What a tool call hands back: the result the model reads, the error kinds, and the
//! kind of work a tool does.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::Part;

/// What kind of work a tool does; decides the default approval policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    Other,
}

impl ToolKind {
    /// Read, search and fetch never change anything local.
    pub fn is_read_only(self) -> bool {
        matches!(self, ToolKind::Read | ToolKind::Search | ToolKind::Fetch)
    }

    /// The wire name (`read`, `edit`, …; ACP's tool kinds are the same names).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Delete => "delete",
            ToolKind::Move => "move",
            ToolKind::Search => "search",
            ToolKind::Execute => "execute",
            ToolKind::Think => "think",
            ToolKind::Fetch => "fetch",
            ToolKind::Other => "other",
        }
    }
}

/// gemini-cli's `ToolErrorType`; the wire strings are the serde names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    PolicyViolation,
    InvalidToolParams,
    Unknown,
    UnhandledException,
    ToolNotRegistered,
    ExecutionFailed,
    FileNotFound,
    FileWriteFailure,
    ReadContentFailure,
    AttemptToCreateExistingFile,
    FileTooLarge,
    PermissionDenied,
    NoSpaceLeft,
    TargetIsDirectory,
    PathNotInWorkspace,
    SearchPathNotFound,
    SearchPathNotADirectory,
    EditPreparationFailure,
    EditNoOccurrenceFound,
    EditExpectedOccurrenceMismatch,
    EditNoChange,
    EditNoChangeLlmJudgement,
    FileChangedOnDisk,
    GlobExecutionError,
    GrepExecutionError,
    LsExecutionError,
    PathIsNotADirectory,
    MemoryToolExecutionError,
    ReadManyFilesSearchError,
    ShellExecuteError,
    WebFetchNoUrlInPrompt,
    WebFetchFallbackFailed,
    WebFetchProcessingError,
    Timeout,
    Cancelled,
    McpResourceNotFound,
    McpToolError,
}

impl ToolErrorKind {
    pub fn as_str(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// A failed tool call, as the model will read it: `{"error": message}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolError {
    pub message: String,
    pub kind: ToolErrorKind,
}

/// What a tool hands back to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmContent {
    Text(String),
    Parts(Vec<Part>),
}

/// The result of one tool execution. The call failed iff `error` is set.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub llm_content: LlmContent,
    /// A short human-readable summary for the front end (`returnDisplay`).
    pub display: String,
    pub error: Option<ToolError>,
    /// Structured extras for front ends and stats (diff stats, edit strategy, ...).
    pub data: Option<Value>,
}

impl ToolOutput {
    pub fn text(llm: impl Into<String>, display: impl Into<String>) -> Self {
        Self {
            llm_content: LlmContent::Text(llm.into()),
            display: display.into(),
            error: None,
            data: None,
        }
    }

    /// An error result: the model sees `message`, the user sees `display`.
    pub fn error(
        kind: ToolErrorKind,
        message: impl Into<String>,
        display: impl Into<String>,
    ) -> Self {
        let message = message.into();
        Self {
            llm_content: LlmContent::Text(message.clone()),
            display: display.into(),
            error: Some(ToolError { message, kind }),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }
}
