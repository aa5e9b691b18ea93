//! Tools that exist only for Troupe's own black-box tests, registered when the
//! environment variable `TROUPE_TEST_TOOLS=1` is set: a barrier that only opens when
//! `parties` calls wait on it at the same time (proof of overlap without timing), a
//! tool that panics, one that sleeps until cancelled, and an edit that asks first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Services, Tool, ToolContext, Touched};
use crate::actors::filesystem::WriteExpect;
use crate::protocol::{ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};

/// Waits on a shared barrier.
pub struct TestBarrier;

#[derive(Debug, Clone, Deserialize)]
pub struct BarrierParams {
    pub group: String,
    pub parties: usize,
    #[serde(default = "default_wait")]
    pub timeout_secs: u64,
    /// Declares that the call writes this path (to exercise the conflict rule).
    #[serde(default)]
    pub writes: Option<String>,
}

fn default_wait() -> u64 {
    20
}

fn barriers() -> &'static Mutex<HashMap<String, Arc<tokio::sync::Barrier>>> {
    static B: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Barrier>>>> = OnceLock::new();
    B.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Tool for TestBarrier {
    type Params = BarrierParams;
    fn name(&self) -> &'static str {
        "test_barrier"
    }
    fn display_name(&self) -> &'static str {
        "TestBarrier"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn description(&self) -> String {
        "Test only: waits until `parties` calls of the same group wait together.".into()
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "group": {"type": "string"}, "parties": {"type": "integer", "minimum": 1},
            "timeout_secs": {"type": "integer", "minimum": 1}, "writes": {"type": "string"}},
            "required": ["group", "parties"]})
    }
    fn touched(&self, p: &BarrierParams, services: &super::Services) -> super::Touched {
        super::Touched {
            reads: vec![],
            writes: p
                .writes
                .iter()
                .map(|w| services.workspace.resolve(w))
                .collect(),
        }
    }
    fn execute(&self, p: BarrierParams, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let barrier = match barriers().lock() {
                Ok(mut map) => map
                    .entry(p.group.clone())
                    .or_insert_with(|| Arc::new(tokio::sync::Barrier::new(p.parties)))
                    .clone(),
                Err(_) => return ToolOutput::error(ToolErrorKind::Unknown, "poisoned", "poisoned"),
            };
            match tokio::time::timeout(Duration::from_secs(p.timeout_secs), barrier.wait()).await {
                Ok(_) => ToolOutput::text(format!("barrier {} passed", p.group), "passed"),
                Err(_) => ToolOutput::error(
                    ToolErrorKind::Timeout,
                    format!(
                        "barrier {} timed out: the calls did not run at the same time",
                        p.group
                    ),
                    "timed out",
                ),
            }
        })
    }
}

/// Panics, either before returning its future or while running it.
pub struct TestPanic;

#[derive(Debug, Clone, Deserialize)]
pub struct PanicParams {
    #[serde(default)]
    pub message: Option<String>,
    /// `false` answers normally (to show the tool still works after a panic).
    #[serde(default = "yes")]
    pub panic: bool,
    #[serde(default)]
    pub in_future: bool,
}

impl Tool for TestPanic {
    type Params = PanicParams;
    fn name(&self) -> &'static str {
        "test_panic"
    }
    fn display_name(&self) -> &'static str {
        "TestPanic"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn description(&self) -> String {
        "Test only: panics.".into()
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"message": {"type": "string"}, "in_future": {"type": "boolean"}, "panic": {"type": "boolean"}}})
    }
    #[allow(clippy::panic)]
    fn execute(&self, p: PanicParams, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let message = p.message.unwrap_or_else(|| "test panic".into());
        if !p.panic {
            return Box::pin(async { ToolOutput::text("no panic this time", "ok") });
        }
        if !p.in_future {
            panic!("{message}");
        }
        Box::pin(async move {
            tokio::task::yield_now().await;
            panic!("{message}");
        })
    }
}

fn yes() -> bool {
    true
}

/// Sleeps until cancelled or `secs` pass.
pub struct TestSleep;

#[derive(Debug, Clone, Deserialize)]
pub struct SleepParams {
    pub secs: u64,
}

impl Tool for TestSleep {
    type Params = SleepParams;
    fn name(&self) -> &'static str {
        "test_sleep"
    }
    fn display_name(&self) -> &'static str {
        "TestSleep"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn description(&self) -> String {
        "Test only: sleeps.".into()
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"secs": {"type": "integer"}}, "required": ["secs"]})
    }
    fn execute(&self, p: SleepParams, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(p.secs)) => ToolOutput::text("slept", "slept"),
                _ = ctx.cancel.cancelled() => ToolOutput::text("woken early", "cancelled"),
            }
        })
    }
}

/// A confirmation-requiring edit with `replace`'s parameters: replaces the first
/// occurrence of `old_string` in `file_path`, offering the unified diff for approval.
/// The REPL tests use it until the real `replace` tool is on the branch.
pub struct TestEdit;

#[derive(Debug, Clone, Deserialize)]
pub struct TestEditParams {
    pub file_path: String,
    pub old_string: String,
    pub new_string: String,
    /// The whole new file, set when the user edited the proposal in an editor.
    #[serde(default)]
    pub modified_content: Option<String>,
}

/// The file's text now and the text after the edit.
struct PlannedEdit {
    path: std::path::PathBuf,
    original: String,
    proposed: String,
    hash: [u8; 32],
}

async fn plan_edit(p: &TestEditParams, ctx: &ToolContext) -> Result<PlannedEdit, ToolOutput> {
    let path = ctx.services.workspace.resolve(&p.file_path);
    let read = ctx.services.fs.read(path.clone()).await.map_err(|e| {
        ToolOutput::error(ToolErrorKind::FileNotFound, e.to_string(), e.to_string())
    })?;
    let original = String::from_utf8_lossy(&read.bytes).into_owned();
    let proposed = match &p.modified_content {
        Some(text) => text.clone(),
        None if original.contains(&p.old_string) && !p.old_string.is_empty() => {
            original.replacen(&p.old_string, &p.new_string, 1)
        }
        None => {
            let message = format!(
                "Failed to edit, could not find the string to replace in {}.",
                path.display()
            );
            return Err(ToolOutput::error(
                ToolErrorKind::EditNoOccurrenceFound,
                message.clone(),
                message,
            ));
        }
    };
    Ok(PlannedEdit {
        path,
        hash: crate::actors::filesystem::content_hash(&read.bytes),
        original,
        proposed,
    })
}

/// Lines added and removed between two texts.
fn line_changes(original: &str, proposed: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(original, proposed);
    diff.iter_all_changes()
        .fold((0, 0), |(add, del), c| match c.tag() {
            similar::ChangeTag::Insert => (add + 1, del),
            similar::ChangeTag::Delete => (add, del + 1),
            similar::ChangeTag::Equal => (add, del),
        })
}

impl Tool for TestEdit {
    type Params = TestEditParams;
    fn name(&self) -> &'static str {
        "test_edit"
    }
    fn display_name(&self) -> &'static str {
        "TestEdit"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn description(&self) -> String {
        "Test only: replaces the first occurrence of old_string in a file.".into()
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "file_path": {"type": "string"}, "old_string": {"type": "string"},
            "new_string": {"type": "string"}, "modified_content": {"type": "string"}},
            "required": ["file_path", "old_string", "new_string"]})
    }
    fn touched(&self, p: &TestEditParams, services: &Services) -> Touched {
        Touched {
            reads: Vec::new(),
            writes: vec![services.workspace.resolve(&p.file_path)],
        }
    }
    fn approval_keys(&self, p: &TestEditParams, services: &Services) -> Vec<String> {
        vec![services
            .workspace
            .resolve(&p.file_path)
            .display()
            .to_string()]
    }
    fn confirmation(
        &self,
        p: &TestEditParams,
        ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let (p, ctx) = (p.clone(), ctx.clone());
        Box::pin(async move {
            let plan = plan_edit(&p, &ctx).await.ok()?;
            let name = plan
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let diff = similar::TextDiff::from_lines(&plan.original, &plan.proposed)
                .unified_diff()
                .context_radius(3)
                .header("Current", "Proposed")
                .to_string();
            let (lines_added, lines_removed) = line_changes(&plan.original, &plan.proposed);
            Some(ConfirmationDetails::Edit {
                title: format!("Confirm Edit: {name}"),
                file_path: plan.path.display().to_string(),
                diff: format!("Index: {name}\n===================================================================\n{diff}"),
                original: plan.original,
                proposed: plan.proposed,
                lines_added,
                lines_removed,
            })
        })
    }
    fn modified_args(&self, args: &Value, edited_content: &str) -> Option<Value> {
        let mut args = args.clone();
        args.as_object_mut()?.insert(
            "modified_content".into(),
            Value::String(edited_content.into()),
        );
        Some(args)
    }
    fn execute(&self, p: TestEditParams, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let plan = match plan_edit(&p, &ctx).await {
                Ok(plan) => plan,
                Err(out) => return out,
            };
            let (added, removed) = line_changes(&plan.original, &plan.proposed);
            let write = ctx
                .services
                .fs
                .write_atomic(
                    plan.path.clone(),
                    plan.proposed.into_bytes(),
                    WriteExpect::Unchanged(Some(plan.hash)),
                )
                .await;
            match write {
                Ok(_) => ToolOutput::text(
                    format!(
                        "Successfully modified file: {} (1 replacements).",
                        plan.path.display()
                    ),
                    format!("Edited {} (+{added} -{removed})", plan.path.display()),
                )
                .with_data(json!({"strategy": "exact",
                    "diff_stat": {"lines_added": added, "lines_removed": removed}})),
                Err(e) => ToolOutput::error(
                    ToolErrorKind::FileWriteFailure,
                    e.to_string(),
                    e.to_string(),
                ),
            }
        })
    }
}
