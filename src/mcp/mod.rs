//! The MCP client: every configured server is an [`McpServer`](server::McpServer)
//! actor, every tool it offers a dynamic entry of the tool registry; plus `troupe mcp`
//! and Troupe's own tools served over MCP.

pub mod cli;
pub mod config;
pub mod convert;
pub mod hub;
pub mod remote;
pub mod serve;
pub mod server;
pub mod status;
pub mod tool;

pub use hub::McpHub;
