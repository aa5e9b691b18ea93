//! `save_memory`: appends a fact, as one line, under `## Troupe Added Memories` in the
//! global context file (`~/.troupe/AGENTS.md` unless configured), creating it if
//! needed. Later sessions read it as part of their system prompt. In default mode the
//! user sees the diff first.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};
use similar::TextDiff;

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

impl Tool for SaveMemory {
    type Params = Params;

    fn name(&self) -> &'static str {
        "save_memory"
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
            let diff = TextDiff::from_lines(&original, &proposed);
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
            match save(&file, &fact).await {
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

/// Reads, adds the fact and writes atomically (temp file + rename in the same
/// directory), creating the directory if needed.
async fn save(file: &Path, fact: &str) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let original = read_or_empty(file).await?;
    let updated = add_fact(&original, fact);
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = file.with_file_name(format!(".{name}.{:08x}.tmp", fastrand::u32(..)));
    tokio::fs::write(&temp, updated.as_bytes()).await?;
    if let Err(e) = tokio::fs::rename(&temp, file).await {
        let _ = tokio::fs::remove_file(&temp).await;
        return Err(e);
    }
    Ok(())
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
