//! The MCP client: every configured server is an [`McpServer`](server::McpServer)
//! actor, every tool it offers a dynamic entry of the tool registry; plus `troupe mcp`
//! and Troupe's own tools served over MCP.

pub mod bounded;
pub mod convert;
pub mod hub;
pub mod listing;
pub mod process;
pub mod prompts;
pub mod remote;
pub mod resource_tools;
pub mod server;
pub mod sse;
pub mod status;
pub mod tool;

pub use hub::McpHub;

/// The model-facing name of `SERVER/TOOL` (or `mcp:SERVER/TOOL`), for `troupe bench --mcp`.
pub fn bench_call_name(spec: &str) -> Result<String, String> {
    let spec = spec.strip_prefix("mcp:").unwrap_or(spec);
    match spec.split_once('/') {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
            Ok(convert::tool_name(server, tool))
        }
        _ => Err(format!("--mcp {spec}: expected SERVER/TOOL")),
    }
}
