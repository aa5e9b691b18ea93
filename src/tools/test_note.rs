//! A tool of the test build (`TROUPE_TEST_TOOLS=1`) whose facts all differ from the
//! defaults, so the black-box tests see each front end follow a tool's facts rather
//! than its name: it counts as an edit for the approval policy, ACP labels it `move`,
//! its allow rules name command prefixes, and its identical calls each run. It writes
//! nothing: it answers with its key and how many calls of it the process has run.
//!
//! It is also the worked example of docs/extending.md: a tool is this one file, a `mod`
//! line in `src/tools/mod.rs` and one registration line.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Services, Tool, ToolContext};
use crate::protocol::{AllowKey, ConfirmationDetails, ToolKind, ToolOutput};

/// The name the model calls.
pub const NAME: &str = "test_note";

/// Notes a key (see the module's documentation).
pub struct TestNote;

/// `test_note`'s parameters.
#[derive(Debug, Clone, Deserialize)]
pub struct NoteParams {
    /// What is noted; also the call's approval key (a command-like text).
    pub key: String,
}

/// Calls of the tool this process has run.
static RUNS: AtomicU64 = AtomicU64::new(0);

impl Tool for TestNote {
    type Params = NoteParams;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "TestNote"
    }

    /// An edit for the policy: asked for in the default mode, run in auto_edit.
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn acp_kind(&self) -> ToolKind {
        ToolKind::Move
    }

    fn allow_key(&self) -> AllowKey {
        AllowKey::CommandPrefix
    }

    fn run_once(&self) -> bool {
        false
    }

    fn description(&self) -> String {
        "Test only: notes a key and answers with it and the number of the call.".into()
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"key": {"type": "string"}},
               "required": ["key"]})
    }

    fn approval_keys(&self, p: &NoteParams, _: &Services) -> Vec<String> {
        vec![p.key.clone()]
    }

    fn confirmation(
        &self,
        p: &NoteParams,
        _: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let details = ConfirmationDetails::Info {
            title: format!("Note {}", p.key),
            prompt: format!("Note `{}`?", p.key),
        };
        Box::pin(async move { Some(details) })
    }

    fn execute(&self, p: NoteParams, _: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let run = RUNS.fetch_add(1, Ordering::SeqCst) + 1;
        Box::pin(async move { ToolOutput::text(format!("noted {} (run {run})", p.key), "noted") })
    }
}
