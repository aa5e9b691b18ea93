//! The messages of session recording: what the Chat actor tells the session recorder,
//! and the requests that seed, switch, flush or checkpoint a session.

use actix::prelude::*;
use serde_json::Value;

use crate::content::{FunctionCall, Part, Usage};
use crate::CompletedCall;

/// What the Chat actor tells the session recorder as the conversation grows; the
/// recorder turns each into gemini-cli 0.61 session records.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum SessionEvent {
    /// A user turn (a prompt); `display` is what the user typed when the model got
    /// something else (`@path` content, an expanded command, added context).
    User {
        parts: Vec<Part>,
        display: Option<String>,
    },
    /// A model turn, with the calls it makes (ids assigned), before they run.
    Model {
        content: crate::content::Content,
        usage: Option<Usage>,
    },
    /// Calls of the last model turn that finished, in call order, following those
    /// already sent; `done` when they are the last of the round. The round's record is
    /// written as its calls come, so a round of 100,000 calls is never held to be
    /// written at its end.
    ToolResults {
        calls: Vec<std::sync::Arc<CompletedCall>>,
        done: bool,
    },
    /// The last user input was rolled back (its model call failed for good).
    RolledBack,
    /// The whole history was replaced (`/clear`, compression, `/chat resume`, …).
    Replaced(Vec<crate::content::Content>),
}

/// Answers once every record sent before it is written.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct FlushRecords;

/// Starts the Chat from this history without recording it (the session file already
/// holds it: a session picked with `/resume`); refused ([`crate::OpError::Busy`])
/// while a turn runs.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), crate::OpError>")]
pub struct SeedHistory(pub Vec<crate::content::Content>);

/// Points the recorder at another session's file (`/resume` in the REPL); the old
/// session's lock is released, the new one's held.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SwitchSession {
    pub file: std::path::PathBuf,
    pub session_id: String,
    pub existing: bool,
    pub repairs: Vec<Value>,
    pub lock: std::fs::File,
}

/// Snapshots the workspace before edit calls run (`general.checkpointing`), with the
/// conversation up to those calls. Answers when the snapshot is taken (or failed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct TakeCheckpoint {
    pub history: Vec<crate::content::Content>,
    /// The edit calls that name their file (none: nothing to snapshot).
    pub edits: Vec<CheckpointEdit>,
}

/// An edit call and the file it edits (the argument its tool's facts name).
#[derive(Debug, Clone)]
pub struct CheckpointEdit {
    pub call: FunctionCall,
    pub path: String,
}
