//! `list_background_processes` and `read_background_output`: how the model follows the
//! commands it started with `run_shell_command(is_background: true)`.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::shell::background::ProcessStatus;
use super::{Tool, ToolContext};
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

/// Lines returned by `read_background_output` unless asked otherwise.
const DEFAULT_TAIL_LINES: usize = 100;

/// The `list_background_processes` tool.
pub struct ListBackgroundProcesses;

#[derive(Debug, Clone, Deserialize)]
pub struct NoParams {}

impl Tool for ListBackgroundProcesses {
    type Params = NoParams;

    fn name(&self) -> &'static str {
        "list_background_processes"
    }

    fn display_name(&self) -> &'static str {
        "List Background Processes"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    /// Reads processes, not files: ACP shows it as other.
    fn acp_kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn description(&self) -> String {
        "Lists the background shell processes started in this session, running or \
         finished, with their PIDs and exit status."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn execute(&self, _: NoParams, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let processes = ctx.services.processes.list();
        Box::pin(async move {
            if processes.is_empty() {
                let text = "No background processes found.";
                return ToolOutput::text(text, text);
            }
            let lines: Vec<String> = processes
                .iter()
                .map(|p| match &p.status {
                    ProcessStatus::Running => format!("- [PID {}] RUNNING: `{}`", p.pid, p.command),
                    ProcessStatus::Exited { code, signal } => {
                        let mut line = format!("- [PID {}] EXITED: `{}`", p.pid, p.command);
                        if let Some(code) = code {
                            line.push_str(&format!(" (Exit Code: {code})"));
                        }
                        if let Some(signal) = signal {
                            line.push_str(&format!(" (Signal: {signal})"));
                        }
                        line
                    }
                })
                .collect();
            let text = lines.join("\n");
            ToolOutput::text(text.clone(), text)
        })
    }
}

/// The `read_background_output` tool.
pub struct ReadBackgroundOutput;

#[derive(Debug, Clone, Deserialize)]
pub struct ReadParams {
    pub pid: i32,
    #[serde(default)]
    pub lines: Option<usize>,
}

impl Tool for ReadBackgroundOutput {
    type Params = ReadParams;

    fn name(&self) -> &'static str {
        "read_background_output"
    }

    fn display_name(&self) -> &'static str {
        "Read Background Output"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    /// Reads processes, not files: ACP shows it as other.
    fn acp_kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn description(&self) -> String {
        "Reads the latest output of a background shell process started in this session.".to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pid": {"type": "integer", "description": "The process ID (PID) of the background process to inspect."},
                "lines": {"type": "integer", "minimum": 1, "description": "Optional. Number of lines to read from the end of the output. Defaults to 100."}
            },
            "required": ["pid"]
        })
    }

    fn execute(&self, p: ReadParams, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let output = ctx.services.processes.output(p.pid);
        Box::pin(async move {
            let Some(text) = output else {
                return ToolOutput::error(
                    ToolErrorKind::ExecutionFailed,
                    format!(
                        "Access denied. Background process ID {} not found in this session's history.",
                        p.pid
                    ),
                    "Access denied.",
                );
            };
            if text.is_empty() {
                return ToolOutput::text("Log is empty.", "Log is empty.");
            }
            let llm = tail_lines(&text, p.lines.unwrap_or(DEFAULT_TAIL_LINES));
            ToolOutput::text(llm.clone(), llm)
        })
    }
}

/// The last `wanted` lines with gemini-cli's header.
fn tail_lines(text: &str, wanted: usize) -> String {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let start = lines.len().saturating_sub(wanted);
    let header = if wanted < lines.len() {
        format!("Showing last {wanted} of {} lines:\n", lines.len())
    } else {
        "Full Log Output:\n".to_string()
    };
    format!("{header}{}", lines[start..].join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_headers() {
        assert_eq!(
            tail_lines("line1\nline2\nline3\nline4\nline5", 2),
            "Showing last 2 of 5 lines:\nline4\nline5"
        );
        assert_eq!(tail_lines("a\nb\n", 100), "Full Log Output:\na\nb");
    }
}
