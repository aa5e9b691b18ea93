//! A prompt that is a custom command or an MCP prompt, expanded as the REPL and `-p`
//! expand it ([`crate::frontends::slash`]). An editor cannot be asked about a custom
//! command's `!{…}` here, so one that needs approval refuses the prompt.

use tokio_util::sync::CancellationToken;

use crate::frontends::slash::{self, Expansion, SessionSide};

use super::session::AcpSession;

/// `Ok(None)` when `typed` is neither a custom command nor an MCP prompt.
pub async fn expand(session: &AcpSession, typed: &str) -> Result<Option<Expansion>, String> {
    if slash::split(typed).is_none() {
        return Ok(None);
    }
    let services = session.session.services();
    let (custom, problems) = slash::load_custom(services);
    for problem in problems {
        tracing::warn!(%problem, "custom command not loaded");
    }
    let side = SessionSide {
        services,
        policy: session.session.policy(),
        mcp: session.session.mcp(),
        cancel: CancellationToken::new(),
    };
    slash::expand_unattended(typed, &custom, &side).await
}
