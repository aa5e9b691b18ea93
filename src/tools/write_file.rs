//! `write_file` (display `WriteFile`): writes a whole file, creating parent
//! directories, keeping the file's CRLF line endings, shown first as a unified diff, and
//! written atomically only if the file still holds what the diff was computed from.

use std::borrow::Cow;
use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::file_edit::{self, edit_data, is_json_like, Existing, ReadFailure};
use super::{PolicyHint, Services, Tool, ToolContext, Touched};
use crate::engine::diff;
use crate::engine::edit::snapshot::FileSnapshot;
use crate::engine::edit::snippet::context_snippet_of;
use crate::engine::edit::{placeholders, unescape};
use crate::platform::filesystem::{FsError, WriteExpect};
use crate::protocol::{ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};

/// The `write_file` tool.
pub struct WriteFile;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub file_path: String,
    pub content: String,
    #[serde(default)]
    pub modified_by_user: bool,
    #[serde(default)]
    pub ai_proposed_content: Option<String>,
    /// Add `content` to the end of the file (Troupe's; declared only when the model
    /// is asked to write a file in parts, see [`Tool::append_arg`]).
    #[serde(default)]
    pub append: bool,
}

/// A write ready to show and perform.
struct Planned {
    path: PathBuf,
    existing: Option<FileSnapshot>,
    /// The content as it will be written (before CRLF restoration).
    content: String,
    corrected: bool,
}

impl Planned {
    fn original(&self) -> &str {
        self.existing.as_ref().map_or("", |s| s.text.as_str())
    }

    /// The content LF-normalised for the diff (borrowed when it has no `\r\n`, so a
    /// big rewrite is not copied for its diff).
    fn proposed(&self) -> Cow<'_, str> {
        if self.content.contains("\r\n") {
            Cow::Owned(self.content.replace("\r\n", "\n"))
        } else {
            Cow::Borrowed(&self.content)
        }
    }
}

/// Reads the file and prepares `content` for it (taken, not copied: a call's content
/// may be megabytes).
async fn plan(
    file_path: &str,
    content: String,
    modified_by_user: bool,
    append: bool,
    ctx: &ToolContext,
) -> Result<Planned, ToolOutput> {
    let services = &ctx.services;
    let requested = services.resolve_edit_path(file_path);
    let (path, existing) = match file_edit::read_existing(services, requested).await {
        Ok(Existing::Text { path, snapshot }) => (path, Some(snapshot)),
        Ok(Existing::Missing { path }) => (path, None),
        Err(ReadFailure::Fs(FsError::Path(e))) => {
            return Err(ToolOutput::error(
                ToolErrorKind::PathNotInWorkspace,
                e.to_string(),
                "Error: Path not in workspace.",
            ))
        }
        Err(ReadFailure::Fs(FsError::IsDirectory(p))) => {
            let msg = format!("Path is a directory, not a file: {}", p.display());
            return Err(ToolOutput::error(
                ToolErrorKind::TargetIsDirectory,
                msg.clone(),
                msg,
            ));
        }
        Err(ReadFailure::Fs(e)) => {
            let msg = format!("Error checking existing file: {e}");
            return Err(ToolOutput::error(
                ToolErrorKind::FileWriteFailure,
                msg.clone(),
                msg,
            ));
        }
        Err(ReadFailure::NotText(path, why)) => {
            let msg = format!("Error checking existing file '{}': {why}", path.display());
            return Err(ToolOutput::error(
                ToolErrorKind::FileWriteFailure,
                msg.clone(),
                msg,
            ));
        }
    };
    let corrected = services.corrector.is_some()
        && !is_json_like(&path)
        && !modified_by_user
        && unescape::looks_over_escaped(&content);
    let content = if corrected {
        unescape::unescape(&content)
    } else {
        content
    };
    // A part of a file written in parts goes after what the file holds.
    let content = match (&existing, append) {
        (Some(snapshot), true) => format!("{}{content}", snapshot.text),
        _ => content,
    };
    let planned = Planned {
        path,
        existing,
        content,
        corrected,
    };
    // The parse check; the content the user changed in the confirmation is theirs,
    // and a file written in parts may not parse until its last part.
    if !modified_by_user && !append {
        let check = ("write_file", "content", ToolErrorKind::FileWriteFailure);
        let before = planned.existing.as_ref().map(|s| s.text.as_str());
        let after = planned.proposed();
        file_edit::refuse_unparseable(services, &planned.path, before, &after, check).await?;
        let guard = ("write_file", ToolErrorKind::FileWriteFailure);
        crate::tools::kept_definitions::refuse_removed_definition(
            services,
            &planned.path,
            before,
            &after,
            guard,
        )
        .await?;
    }
    Ok(planned)
}

/// The name the model calls.
pub const NAME: &str = "write_file";

impl Tool for WriteFile {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "WriteFile"
    }

    /// gemini-cli 0.61 writes this core tool's declaration out per model family, without
    /// `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn edited_file_arg(&self) -> Option<&'static str> {
        Some("file_path")
    }

    fn append_arg(&self) -> Option<&'static str> {
        Some("append")
    }

    fn description(&self) -> String {
        "Writes the complete content to a file, creating missing parent directories and overwriting an existing file. Best for new or small files; use 'replace' for targeted edits to large files. The user may modify `content` before it is saved; if so, the response says so.".to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The path to the file to write to."},
                "content": {"type": "string", "description": "The complete content to write. Do not use omission placeholders like '(rest of methods ...)' or '// ... rest of code'; provide the full file."}
            },
            "required": ["file_path", "content"]
        })
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        if p.file_path.trim().is_empty() {
            return Err("Missing or empty \"file_path\"".into());
        }
        if !placeholders::detect(&p.content).is_empty() {
            return Err("`content` contains an omission placeholder (for example 'rest of methods ...'). Provide complete file content.".into());
        }
        Ok(())
    }

    fn touched(&self, p: &Params, services: &Services) -> Touched {
        file_edit::writes(services, &p.file_path)
    }

    fn approval_keys(&self, p: &Params, services: &Services) -> Vec<String> {
        file_edit::approval_key(services, &p.file_path)
    }

    fn policy_hint_in(&self, p: &Params, services: &Services) -> Option<PolicyHint> {
        super::protected::edit_hint(services, &p.file_path)
    }

    /// Plan mode lets only plan files through ([`super::plan_mode::edit_decider`]).
    fn decider(&self, p: &Params, services: &Services) -> Option<super::Decider> {
        super::plan_mode::edit_decider(&p.file_path, services)
    }

    fn confirmation(
        &self,
        p: &Params,
        ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let (p, ctx) = (p.clone(), ctx.clone());
        Box::pin(async move {
            let planned = plan(&p.file_path, p.content, p.modified_by_user, p.append, &ctx)
                .await
                .ok()?;
            Some(file_edit::edit_confirmation(
                &ctx.services,
                "Confirm Write:",
                &planned.path,
                planned.original(),
                &planned.proposed(),
            ))
        })
    }

    fn modified_args(&self, args: &Value, edited_content: &str) -> Option<Value> {
        let mut out = args.as_object()?.clone();
        let proposed = out.get("content").cloned().unwrap_or(Value::Null);
        out.insert("content".into(), json!(edited_content));
        out.insert("modified_by_user".into(), json!(true));
        out.insert("ai_proposed_content".into(), proposed);
        Some(Value::Object(out))
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let Params {
                file_path,
                content,
                modified_by_user,
                append,
                ..
            } = p;
            if let Some(refused) = super::plan_mode::refused_now(&file_path, &ctx.services) {
                return refused;
            }
            let key = ctx.services.resolve_edit_path(&file_path);
            // No other agent's edit of the file between this one's read and write.
            let _editing = ctx.services.ledger.hold(&key).await;
            // The call's share of the bytes edits may hold at once, for as long as it
            // holds the old and new texts.
            let _held =
                file_edit::reserve_edit_memory(&ctx.services, &file_path, content.len()).await;
            let planned = match plan(&file_path, content, modified_by_user, append, &ctx).await {
                Ok(planned) => planned,
                Err(out) => return out,
            };
            if let Err(out) = ctx.check_approved(&planned.path, planned.original()) {
                return *out;
            }
            let services = ctx.services.clone();
            if planned.existing.is_some() {
                // A whole-file write from a copy older than another agent's change
                // would lose that change.
                if let Err(stale) = services.ledger.check_whole_write(&services.author, &key) {
                    return ToolOutput::error(
                        ToolErrorKind::FileChangedOnDisk,
                        stale.to_string(),
                        format!(
                            "Not written: {} changed it since it was read.",
                            stale.writer
                        ),
                    );
                }
            }
            let _ = file_edit::pause_before_write().await;
            let out = write(modified_by_user, ctx, planned).await;
            if out.error.is_none() {
                services.ledger.note_write(&services.author, &key);
            }
            out
        })
    }
}

async fn write(modified_by_user: bool, ctx: ToolContext, planned: Planned) -> ToolOutput {
    let correction = planned.corrected.then_some("success");
    let method = planned.corrected.then_some("unescape");
    let is_new = planned.existing.is_none();
    // What the result says is computed before the write, so the old and new texts can
    // go as soon as the bytes are handed over: the diff and the snippet are capped and
    // need neither afterwards.
    let (d, snippet, contents) = {
        let proposed = planned.proposed();
        // One line diff serves both (on a rewrite of a large file it is most of the work).
        let lines = diff::line_diff(planned.original(), &proposed);
        let d = diff::unified_of(&file_edit::file_name(&planned.path), &lines);
        let snippet = context_snippet_of(planned.original(), lines.ops(), &proposed, 5);
        // The texts themselves only for a small file (see `with_contents`).
        let contents = file_edit::with_contents(
            Value::Object(Default::default()),
            &planned.path,
            planned.original(),
            &proposed,
        );
        (d, snippet, contents)
    };
    let user_modified =
        modified_by_user.then(|| format!("User modified the `content` to be: {}", planned.content));
    let Planned {
        path,
        existing,
        content,
        ..
    } = planned;
    let (bytes, expect) = match existing {
        Some(s) if s.crlf || s.bom => (s.encode(&content), WriteExpect::Unchanged(Some(s.hash))),
        Some(s) => (content.into_bytes(), WriteExpect::Unchanged(Some(s.hash))),
        None => (content.into_bytes(), WriteExpect::Unchanged(None)),
    };
    // Past this point the write is what happened, whatever a cancellation says.
    if ctx.cancel.is_cancelled() {
        return ToolOutput::text("Cancelled before writing.", "Cancelled before writing.");
    }
    ctx.commit();
    let _ = file_edit::pause_after_commit(&ctx.cancel).await;
    let outcome = match ctx
        .services
        .fs
        .write_atomic(path.clone(), bytes, expect)
        .await
    {
        Ok(outcome) => outcome,
        Err(e) => {
            let path = path.display().to_string();
            return file_edit::write_error(e, |m| format!("Error writing to file '{path}': {m}"))
                .with_data(edit_data(None, None, correction, method));
        }
    };
    let real = outcome.real_path.display().to_string();
    let mut parts = vec![if is_new {
        format!("Successfully created and wrote to new file: {real}.")
    } else {
        format!("Successfully overwrote file: {real}.")
    }];
    parts.extend(user_modified);
    parts.push(format!("Here is the updated code:\n{snippet}"));
    let rel = ctx.services.workspace.display_relative(&outcome.real_path);
    let display = if is_new {
        format!("Created {rel}")
    } else {
        format!("{} added, {} removed", d.lines_added, d.lines_removed)
    };
    let mut data = edit_data(None, Some(&d), correction, method);
    if let (Value::Object(map), Value::Object(extra)) = (&mut data, contents) {
        map.extend(extra);
    }
    ToolOutput::text(parts.join(" "), display).with_data(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_args_carry_the_users_content_and_the_models() {
        let args = json!({"file_path": "a.txt", "content": "model text"});
        let out = WriteFile.modified_args(&args, "user text").unwrap();
        assert_eq!(
            out,
            json!({"file_path": "a.txt", "content": "user text", "modified_by_user": true,
                   "ai_proposed_content": "model text"})
        );
    }
}
