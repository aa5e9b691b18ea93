//! `save_memory`: appends a fact, as one line, under `## Troupe Added Memories` in the
//! global context file (`~/.troupe/AGENTS.md` unless configured), creating it if
//! needed. Later sessions read it as part of their system prompt. In default mode the
//! user sees the diff first.

use std::path::{Path, PathBuf};

use crate::platform::filesystem::atomic_write::write_owned_path;
use crate::platform::filesystem::{content_hash, Confined, FsError, FsWork, WriteExpect};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{PolicyHint, Services, Tool, ToolContext};
use crate::protocol::{ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};

/// The section the facts go under.
pub const MEMORY_HEADER: &str = "## Troupe Added Memories";

/// The `save_memory` tool.
pub struct SaveMemory;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub fact: String,
}

/// The name the model calls.
pub const NAME: &str = "save_memory";

impl Tool for SaveMemory {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "SaveMemory"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn description(&self) -> String {
        "Saves a specific fact to long-term memory, so that it is known in every future \
         session. Use it when the user asks you to remember something, or states a \
         lasting preference or fact about themselves or their work. Keep it to one short, \
         self-contained sentence. Do not use it for details of the current conversation."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "fact": {"type": "string", "description": "The specific fact or piece of information to remember. Should be a clear, self-contained statement."}
            },
            "required": ["fact"],
            "additionalProperties": false
        })
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        if sanitize_fact(&p.fact).is_empty() {
            return Err("Parameter \"fact\" must be a non-empty string.".into());
        }
        Ok(())
    }

    /// Writing the user's memory always asks, unless in YOLO mode.
    fn policy_hint(&self, _: &Params) -> Option<PolicyHint> {
        Some(PolicyHint::Ask)
    }

    fn confirmation(
        &self,
        p: &Params,
        ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let file = memory_file(&ctx.services);
        let fact = sanitize_fact(&p.fact);
        Box::pin(async move {
            let original = read_or_empty(&file).await.ok()?;
            let proposed = add_fact(&original, &fact);
            let shown = tilde_path(&file);
            let diff = crate::engine::diff::line_diff(&original, &proposed);
            let (mut added, mut removed) = (0, 0);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    similar::ChangeTag::Insert => added += 1,
                    similar::ChangeTag::Delete => removed += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            let unified = diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("Current: {shown}"), &format!("Proposed: {shown}"))
                .to_string();
            Some(ConfirmationDetails::Edit {
                title: format!("Confirm Memory Save: {shown}"),
                file_path: file.display().to_string(),
                diff: unified,
                original,
                proposed,
                lines_added: added,
                lines_removed: removed,
            })
        })
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let file = memory_file(&ctx.services);
        let fact = sanitize_fact(&p.fact);
        Box::pin(async move {
            if ctx.cancel.is_cancelled() {
                return ToolOutput::text("Cancelled before saving.", "Cancelled before saving.");
            }
            // The user approved adding the fact to the file as the diff showed it: a file
            // changed since is shown again (the Scheduler asks once more).
            if ctx.approved_original.is_some() {
                let now = read_or_empty(&file).await.unwrap_or_default();
                if let Err(out) = ctx.check_approved(&file, &now) {
                    return *out;
                }
            }
            ctx.commit();
            match save(&ctx.services, &file, &fact).await {
                Ok(()) => {
                    let message = format!("Okay, I've remembered that: \"{fact}\"");
                    ToolOutput::text(
                        json!({"success": true, "message": message}).to_string(),
                        message,
                    )
                    .with_data(json!({"memory_file": file.display().to_string()}))
                }
                Err(e) => {
                    let message = format!("Failed to save memory. Detail: {e}");
                    ToolOutput::error(
                        ToolErrorKind::MemoryToolExecutionError,
                        message.clone(),
                        format!("Error saving memory: {e}"),
                    )
                }
            }
        })
    }
}

/// The file facts are saved to: `context.memory_file`, else the first context file
/// name in the global directory.
pub fn memory_file(services: &Services) -> PathBuf {
    let configured = &services.settings.context.memory_file;
    if !configured.is_empty() {
        return PathBuf::from(configured);
    }
    let config = services.context.config();
    let name = config
        .file_names
        .first()
        .map(String::as_str)
        .unwrap_or("AGENTS.md");
    config.global_dir.join(name)
}

fn tilde_path(path: &Path) -> String {
    let home = crate::settings::home_dir();
    match path.strip_prefix(&home) {
        Ok(rest) if home != Path::new("/") => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// One line: newlines become spaces, leading list dashes go, `<` and `>` become spaces.
pub fn sanitize_fact(fact: &str) -> String {
    let one_line: String = fact
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    let mut text = one_line.trim();
    loop {
        let stripped = text.trim_start_matches('-');
        if stripped.len() == text.len() {
            break;
        }
        text = stripped.trim_start();
    }
    text.trim()
        .chars()
        .map(|c| if c == '<' || c == '>' { ' ' } else { c })
        .collect()
}

/// The memory file's text with `fact` added as the last item of the memories section
/// (the section is created at the end when missing).
pub fn add_fact(content: &str, fact: &str) -> String {
    let item = format!("- {fact}");
    let Some(start) = content.find(MEMORY_HEADER) else {
        let sep = if content.is_empty() || content.ends_with("\n\n") {
            ""
        } else if content.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        return format!("{content}{sep}{MEMORY_HEADER}\n{item}\n");
    };
    let body_start = start + MEMORY_HEADER.len();
    let end = content[body_start..]
        .find("\n## ")
        .map_or(content.len(), |i| body_start + i);
    let before = &content[..start];
    let section = &content[start..end];
    let after = &content[end..];
    let before = before.trim_end();
    let joint = if before.is_empty() { "" } else { "\n" };
    let updated = format!(
        "{before}{joint}{}\n{after}",
        format!("{}\n{item}", section.trim_end()).trim_start(),
    );
    format!("{}\n", updated.trim_end())
}

async fn read_or_empty(path: &Path) -> std::io::Result<String> {
    match tokio::fs::read_to_string(path).await {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
}

/// Reads, adds the fact and writes with the one atomic write every writer uses
/// (on the FileSystem pool). Saves of one process are serialised, and a file changed
/// by another process between the read and the write is read again: two facts saved
/// at once both land.
async fn save(services: &Services, file: &Path, fact: &str) -> Result<(), String> {
    let save = SaveFact {
        file: file.to_path_buf(),
        fact: fact.to_string(),
    };
    services
        .fs
        .perform(save)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// One fact to add to the memory file (Troupe's own, outside the workspace), on the
/// FileSystem pool: [`save_blocking`].
struct SaveFact {
    file: std::path::PathBuf,
    fact: String,
}

impl FsWork for SaveFact {
    type Output = Result<(), FsError>;
    fn perform(self, _: &Confined) -> Self::Output {
        save_blocking(&self.file, &self.fact)
    }
}

fn save_blocking(file: &Path, fact: &str) -> Result<(), FsError> {
    static SAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = SAVING.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..8 {
        let original = match std::fs::read(file) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(FsError::from_io(file, e)),
        };
        let text = original
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let updated = add_fact(&text, fact);
        let expect = WriteExpect::Unchanged(original.as_deref().map(content_hash));
        match write_owned_path(file, updated.as_bytes(), &expect) {
            Ok(_) => return Ok(()),
            Err(FsError::ChangedOnDisk(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(FsError::ChangedOnDisk(file.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_one_clean_line() {
        assert_eq!(
            sanitize_fact("  - - likes <tabs>\nand tea "),
            "likes  tabs  and tea"
        );
        assert_eq!(sanitize_fact("-- "), "");
    }

    #[test]
    fn facts_go_under_the_section() {
        assert_eq!(add_fact("", "a"), "## Troupe Added Memories\n- a\n");
        assert_eq!(
            add_fact("# Mine", "a"),
            "# Mine\n\n## Troupe Added Memories\n- a\n"
        );
        assert_eq!(
            add_fact("# Mine\n", "a"),
            "# Mine\n\n## Troupe Added Memories\n- a\n"
        );
        let once = add_fact(
            "# Mine\n\n## Troupe Added Memories\n- a\n\n## Other\nx\n",
            "b",
        );
        assert_eq!(
            once,
            "# Mine\n## Troupe Added Memories\n- a\n- b\n\n## Other\nx\n"
        );
        assert_eq!(
            add_fact("## Troupe Added Memories\n- a\n", "b"),
            "## Troupe Added Memories\n- a\n- b\n"
        );
    }
}
