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

use super::{Tool, ToolContext};
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

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

    /// A test tool: its identical calls each run.
    fn run_once(&self) -> bool {
        false
    }

    /// ACP shows it as other.
    fn acp_kind(&self) -> ToolKind {
        ToolKind::Other
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
    /// `"validate"` panics while the call is validated (in `prepare`),
    /// `"confirmation"` asks for approval and panics while building the confirmation,
    /// `"fs_job"` panics inside a job on the FileSystem pool.
    #[serde(default)]
    pub panic_in: Option<String>,
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

    /// A test tool: its identical calls each run.
    fn run_once(&self) -> bool {
        false
    }

    /// ACP shows it as other.
    fn acp_kind(&self) -> ToolKind {
        ToolKind::Other
    }
    fn description(&self) -> String {
        "Test only: panics.".into()
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"message": {"type": "string"}, "in_future": {"type": "boolean"}, "panic": {"type": "boolean"}, "panic_in": {"type": "string"}}})
    }
    #[allow(clippy::panic)]
    fn validate(&self, p: &PanicParams, _: &super::Services) -> Result<(), String> {
        if p.panic_in.as_deref() == Some("validate") {
            panic!("panic while validating");
        }
        Ok(())
    }
    fn policy_hint(&self, p: &PanicParams) -> Option<super::PolicyHint> {
        (p.panic_in.as_deref() == Some("confirmation")).then_some(super::PolicyHint::Ask)
    }
    #[allow(clippy::panic)]
    fn confirmation(
        &self,
        p: &PanicParams,
        _ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<crate::protocol::ConfirmationDetails>> {
        if p.panic_in.as_deref() == Some("confirmation") {
            panic!("panic while building the confirmation");
        }
        Box::pin(async { None })
    }
    #[allow(clippy::panic)]
    fn execute(&self, p: PanicParams, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let message = p.message.unwrap_or_else(|| "test panic".into());
        if !p.panic {
            return Box::pin(async { ToolOutput::text("no panic this time", "ok") });
        }
        if p.panic_in.as_deref() == Some("fs_job") {
            return Box::pin(async move {
                // The job's answer channel is dropped by the panic: an error here.
                let answer = match ctx.services.fs.perform(PanicOnPool(message)).await {
                    Ok(()) => "the file system job returned".to_string(),
                    Err(e) => format!("the file system job failed: {e}"),
                };
                ToolOutput::text(answer.clone(), answer)
            });
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
    /// A file the call creates when it starts sleeping, so a test can wait for calls
    /// that run (not only for calls that were asked for).
    #[serde(default)]
    pub started_file: Option<String>,
    /// A file the call writes (empty) when it has slept, right before it answers, so a
    /// test can see which calls started after it finished.
    #[serde(default)]
    pub finished_file: Option<String>,
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

    /// A test tool: its identical calls each run.
    fn run_once(&self) -> bool {
        false
    }

    /// ACP shows it as other.
    fn acp_kind(&self) -> ToolKind {
        ToolKind::Other
    }
    fn description(&self) -> String {
        "Test only: sleeps.".into()
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"secs": {"type": "integer"},
            "started_file": {"type": "string"}, "finished_file": {"type": "string"}},
            "required": ["secs"]})
    }
    fn execute(&self, p: SleepParams, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            if let Some(file) = &p.started_file {
                if let Err(e) = tokio::fs::write(file, b"").await {
                    return ToolOutput::error(ToolErrorKind::Unknown, e.to_string(), "no marker");
                }
            }
            let out = tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(p.secs)) => ToolOutput::text("slept", "slept"),
                _ = ctx.cancel.cancelled() => ToolOutput::text("woken early", "cancelled"),
            };
            if let Some(file) = &p.finished_file {
                if let Err(e) = tokio::fs::write(file, b"").await {
                    return ToolOutput::error(ToolErrorKind::Unknown, e.to_string(), "no marker");
                }
            }
            out
        })
    }
}

/// Test hook: with `TROUPE_TEST_TOOLS=1`, the prompt `__troupe_test_panic_in_chat__`
/// makes the Chat actor panic when it starts the turn.
#[allow(clippy::panic)]
pub fn maybe_panic_in_chat(prompt: &str) {
    if prompt == "__troupe_test_panic_in_chat__" && crate::platform::test_hooks::enabled() {
        panic!("test panic in Chat");
    }
}

/// A FileSystem job that panics with `.0` (`panic_in: "fs_job"`).
struct PanicOnPool(String);

impl crate::platform::filesystem::FsWork for PanicOnPool {
    type Output = ();
    #[allow(clippy::panic)]
    fn perform(self, _: &crate::platform::filesystem::Confined) {
        panic!("{}", self.0)
    }
}
