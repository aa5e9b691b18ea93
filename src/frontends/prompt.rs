//! What a headless prompt (`-p`) becomes before the Chat gets it: a custom command or
//! an MCP prompt is expanded as the REPL expands it ([`crate::frontends::slash`]), then
//! its `@path` references are read. The Chat is told what the user typed (session
//! titles, `TurnStarted`) apart from what the model gets.

use tokio_util::sync::CancellationToken;

use crate::actors::session::SessionHandle;
use crate::engine::sanitize::for_terminal;
use crate::frontends::slash::{self, Expansion, SessionSide};
use crate::protocol::content::Part;
use crate::protocol::Op;

/// A prompt ready for the session.
#[derive(Debug)]
pub enum Prepared {
    /// Start a turn with this.
    Turn(Op),
    /// Answer with this text without the model (`/<prompt> help`).
    Reply(String),
}

/// Expands `typed` (slash commands, then `@` references). `quiet`: nothing on stderr
/// (notes are logged instead). An error says why nothing can be sent.
pub async fn prepare(
    typed: String,
    session: &SessionHandle,
    cancel: CancellationToken,
    quiet: bool,
) -> Result<Prepared, String> {
    let tell = |line: &str| {
        tracing::info!(%line, "prompt");
        if !quiet {
            eprintln!("troupe: {}", for_terminal(line));
        }
    };
    let custom = match slash::split(&typed) {
        Some(_) => {
            let (custom, problems) = slash::load_custom(session.services());
            for problem in problems {
                tell(&format!("custom command not loaded: {problem}"));
            }
            custom
        }
        None => Vec::new(),
    };
    let side = SessionSide {
        services: session.services(),
        policy: session.policy(),
        mcp: session.mcp(),
        cancel: cancel.clone(),
    };
    let model_text = match slash::expand_unattended(&typed, &custom, &side).await? {
        None => typed.clone(),
        Some(Expansion::Reply(lines)) => return Ok(Prepared::Reply(lines.join("\n"))),
        Some(Expansion::Prompt { text, notes }) => {
            for note in notes {
                tell(&note);
            }
            text
        }
    };
    let budget = crate::actors::at_command::char_budget(session.services());
    let expanded =
        crate::actors::at_command::expand(&model_text, session.files(), cancel, budget).await;
    let parts = match expanded {
        Ok(Some(expanded)) => {
            for note in &expanded.notes {
                tracing::info!(%note, "@ references");
            }
            for warning in &expanded.warnings {
                tracing::warn!(%warning, "@ references");
                tell(warning);
            }
            expanded.parts
        }
        Ok(None) => vec![Part::text(model_text)],
        Err(e) => {
            return Err(format!(
                "Exiting due to an error processing the @ command: {e}"
            ))
        }
    };
    Ok(Prepared::Turn(Op::UserTurn { text: typed, parts }))
}
