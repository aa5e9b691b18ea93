//! `invoke_agent {agent_name, prompt}`: hands a task to a subagent — a session of its
//! own, with none of the caller's history — and answers with the subagent's report,
//! in gemini-cli 0.61's words (`Subagent '<name>' finished.` / `Termination Reason:` /
//! `Result:`). The tool only checks the call; the session's [`AgentLauncher`] (the
//! agents supervisor of the actors layer) queues, runs and ends the subagent.

use std::collections::HashSet;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Services, Tool, ToolContext};
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

/// The tool's name, as gemini-cli 0.61 declares it.
pub const INVOKE_AGENT: &str = "invoke_agent";

/// Starts subagents for the `invoke_agent` calls of one session (the main one, or a
/// subagent allowed to start its own).
pub trait AgentLauncher: Send + Sync + 'static {
    /// Whether an agent of this name can be started.
    fn knows(&self, agent_name: &str) -> bool;
    /// Runs `agent_name` on `prompt` to its end (queued first when the pool is full)
    /// and answers the call with its report; `ctx.cancel` ends it `ABORTED`.
    fn launch(
        &self,
        agent_name: String,
        prompt: String,
        ctx: ToolContext,
    ) -> BoxFuture<'static, ToolOutput>;
}

/// The subagent a session serves, as its tools see it.
#[derive(Debug, Clone)]
pub struct AgentSeat {
    /// Its id in the tree (`<name>-<n>`).
    pub agent_id: String,
    pub name: String,
    /// The argument of `complete_task` that carries its output (`result` for the
    /// generalist, `report` for the codebase investigator).
    pub output_name: String,
}

/// The tools a subagent may call: names, and MCP tools by prefix.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    pub names: HashSet<String>,
    /// `mcp_` for every MCP tool, `mcp_<server>_` for one server's.
    pub prefixes: Vec<String>,
}

impl ToolFilter {
    pub fn allows(&self, name: &str) -> bool {
        self.names.contains(name) || self.prefixes.iter().any(|p| name.starts_with(p))
    }
}

/// The `invoke_agent` tool, describing the agents that can be started.
pub struct InvokeAgent {
    /// `(name, description)` of every agent the session can start.
    pub catalog: Vec<(String, String)>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub agent_name: String,
    pub prompt: String,
}

impl Tool for InvokeAgent {
    type Params = Params;

    fn name(&self) -> &'static str {
        INVOKE_AGENT
    }

    fn display_name(&self) -> &'static str {
        "Invoke Subagent"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    /// Two identical delegations in one answer are two tasks.
    fn run_once(&self) -> bool {
        false
    }

    fn time_limit(&self, _session_limit: Duration) -> Duration {
        // A subagent keeps its own limits (`timeout_mins`, its grace turn); the call
        // waits for its report however long the queue before it was.
        Duration::from_secs(60 * 60 * 24 * 365)
    }

    fn description(&self) -> String {
        let mut text = String::from(
            "Hands a task to a subagent: a separate agent with its own context (it sees none of this conversation, only the prompt you give it) and its own tools, which works on the task and reports back. Several calls in one answer run at the same time. Use it for tasks that are self-contained, or to investigate in parallel.\n\nAvailable agents:",
        );
        for (name, description) in &self.catalog {
            text.push_str(&format!("\n- {name}: {description}"));
        }
        text
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "agent_name": {
                    "type": "string",
                    "description": "The name of the agent to start (one of the available agents)."
                },
                "prompt": {
                    "type": "string",
                    "description": "The whole task for the agent, complete in itself: it does not see this conversation, so include the context, what to find or change, and what its report must contain."
                }
            },
            "required": ["agent_name", "prompt"]
        })
    }

    fn validate(&self, p: &Params, services: &Services) -> Result<(), String> {
        let Some(launcher) = services.agents.get() else {
            return Err(match &services.agent {
                Some(_) => format!(
                    "Subagents cannot start subagents here (agents.max_depth = {}).",
                    services.settings.agents.max_depth
                ),
                None => "Subagents are off (agents.enabled = false).".to_string(),
            });
        };
        if !launcher.knows(&p.agent_name) {
            return Err(format!("Subagent '{}' not found.", p.agent_name));
        }
        Ok(())
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        match ctx.services.agents.get().cloned() {
            Some(launcher) => launcher.launch(p.agent_name, p.prompt, ctx),
            None => Box::pin(async {
                ToolOutput::error(
                    ToolErrorKind::ExecutionFailed,
                    "Subagents are not available in this session.",
                    "Subagents are not available in this session.",
                )
            }),
        }
    }
}
