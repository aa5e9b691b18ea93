//! `synthetic`: a tool that does nothing but take the time it is told to (`troupe bench
//! --latency`), to study scheduling under slow tools. Registered only in benchmark and
//! test sessions; it waits on a timer, never blocking its actor's thread.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Tool, ToolContext};
use crate::protocol::{ToolKind, ToolOutput};

/// The synthetic tool.
pub struct Synthetic;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    /// How long the call takes, in microseconds.
    pub micros: u64,
}

impl Tool for Synthetic {
    type Params = Params;

    fn name(&self) -> &'static str {
        "synthetic"
    }

    fn display_name(&self) -> &'static str {
        "Synthetic"
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
        "Benchmark only: waits `micros` microseconds and answers.".into()
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"micros": {"type": "integer", "minimum": 0}}, "required": ["micros"]})
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_micros(p.micros)) => {
                    ToolOutput::text(format!("waited {} µs", p.micros), "waited")
                }
                _ = ctx.cancel.cancelled() => ToolOutput::text("cancelled", "cancelled"),
            }
        })
    }
}
