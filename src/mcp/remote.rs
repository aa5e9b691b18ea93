//! Remote servers (`url` with `type = "http"` or `"sse"`).

use super::config::McpServerConfig;
use super::server::{Connected, TroupeClient};

/// Opens a remote server. Streamable HTTP and SSE are not built yet: the server is
/// reported as failed with this reason, and the session goes on.
pub async fn open_remote(
    config: &McpServerConfig,
    _client: TroupeClient,
) -> Result<Connected, String> {
    Err(format!(
        "MCP server '{}': remote transports ({}) are not supported yet; use a stdio `command`.",
        config.name,
        config.transport()
    ))
}
