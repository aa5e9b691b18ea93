//! The status line printed under each answer (gemini-cli's footer): model, approval
//! mode, how much of the context window is left, and how many context files are
//! loaded. Also the `@{…}` file read of custom commands.

use futures::executor::block_on;

use crate::protocol::Memory;

use super::terminal::Palette;
use super::SessionLink;

/// `model · mode · N% context left · K context files`.
pub fn status_line(link: &SessionLink, p: Palette) -> String {
    let limit = link
        .services
        .settings
        .model
        .compression
        .token_limit(&link.model)
        .max(1);
    let used = link
        .stats
        .lock()
        .map(|s| s.settled().last_prompt_tokens)
        .unwrap_or(0);
    let left = 100u64.saturating_sub(used.saturating_mul(100) / limit);
    let files = block_on(link.chat.send(Memory { refresh: false }))
        .map(|r| r.files.len())
        .unwrap_or(0);
    let s = if files == 1 { "" } else { "s" };
    p.dim(&format!(
        "{} · {} · {left}% context left · {files} context file{s}",
        link.model,
        link.mode().as_str()
    ))
}

/// A workspace file's text for `@{path}`, through the FileSystem actor (confined).
pub fn read_workspace_file(link: &SessionLink, path: &str) -> Result<String, String> {
    let raw = path.to_string();
    let read = link.services.fs.run(move |ws| {
        let real = ws.check(&ws.resolve(&raw)).map_err(|e| e.to_string())?;
        std::fs::read(&real)
            .map_err(|e| e.to_string())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    });
    block_on(read).map_err(|e| e.to_string())?
}
