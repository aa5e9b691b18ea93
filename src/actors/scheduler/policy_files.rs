//! The policy files' rules asked about one call of the Scheduler's (the matching is
//! `engine::policy_rules`'s; the rules are loaded by `settings::policy`).

use std::sync::Arc;

use super::approval::PolicyState;
use crate::engine::policy_rules::{PolicyCall, Verdict};
use crate::protocol::ToolKind;
use crate::tools::registry::ToolHandle;

/// The verdict of the policy files' rules on a call of `tool` with `args`; `None`
/// when no rule decides it. An MCP tool's server is the tool's, else the one its name
/// says (`mcp_<server>_…`, as gemini-cli reads it).
pub(super) fn policy_verdict(
    state: &PolicyState,
    tool: &Arc<dyn ToolHandle>,
    args: &serde_json::Value,
    aliases: &[&str],
    subagent: Option<&str>,
) -> Option<Verdict> {
    if state.files.is_empty() {
        return None;
    }
    let server = tool.mcp_server().or_else(|| {
        tool.name()
            .strip_prefix("mcp_")
            .and_then(|rest| rest.split_once('_'))
            .map(|(server, _)| server)
    });
    // An MCP tool's `readOnlyHint` (the server's annotation made its kind `Read`).
    let annotations = tool.mcp_server().map(|_| {
        let mut map = serde_json::Map::new();
        let read_only = tool.kind() == ToolKind::Read;
        map.insert("readOnlyHint".into(), serde_json::Value::Bool(read_only));
        map
    });
    state.files.check(&PolicyCall {
        name: tool.name(),
        server,
        args,
        mode: state.mode,
        interactive: state.interactive,
        annotations: annotations.as_ref(),
        subagent,
        aliases,
    })
}
