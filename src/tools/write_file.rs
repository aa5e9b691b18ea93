//! `write_file` (display `WriteFile`): writes a whole file, creating parent
//! directories, keeping the file's CRLF line endings, shown first as a unified diff, and
//! written atomically only if the file still holds what the diff was computed from.

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::file_edit::{self, edit_data, is_json_like, Existing, ReadFailure};
use super::{PolicyHint, Services, Tool, ToolContext, Touched};
use crate::actors::filesystem::{FsError, WriteExpect};
use crate::engine::diff;
use crate::engine::edit::snapshot::FileSnapshot;
use crate::engine::edit::snippet::diff_context_snippet;
use crate::engine::edit::{placeholders, unescape};
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
}

/// A write ready to show and perform.
struct Planned {
    path: PathBuf,
    existing: Option<FileSnapshot>,
    /// The content to write, LF-normalised for the diff.
    proposed: String,
    /// The content as it will be written (before CRLF restoration).
    content: String,
    corrected: bool,
}

impl Planned {
    fn original(&self) -> &str {
        self.existing.as_ref().map_or("", |s| s.text.as_str())
    }
}

async fn plan(p: &Params, ctx: &ToolContext) -> Result<Planned, ToolOutput> {
    let services = &ctx.services;
    let requested = services.workspace.resolve(&p.file_path);
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
        && !p.modified_by_user
        && unescape::looks_over_escaped(&p.content);
    let content = if corrected {
        unescape::unescape(&p.content)
    } else {
        p.content.clone()
    };
    Ok(Planned {
        path,
        existing,
        proposed: content.replace("\r\n", "\n"),
        content,
        corrected,
    })
}

impl Tool for WriteFile {
    type Params = Params;

    fn name(&self) -> &'static str {
        "write_file"
    }

    fn display_name(&self) -> &'static str {
        "WriteFile"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
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

    fn confirmation(
        &self,
        p: &Params,
        ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let (p, ctx) = (p.clone(), ctx.clone());
        Box::pin(async move {
            let planned = plan(&p, &ctx).await.ok()?;
            Some(file_edit::edit_confirmation(
                &ctx.services,
                "Confirm Write:",
                &planned.path,
                planned.original(),
                &planned.proposed,
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
            let planned = match plan(&p, &ctx).await {
                Ok(planned) => planned,
                Err(out) => return out,
            };
            if let Err(out) = ctx.check_approved(&planned.path, planned.original()) {
                return *out;
            }
            file_edit::pause_before_write().await;
            write(p, ctx, planned).await
        })
    }
}

async fn write(p: Params, ctx: ToolContext, planned: Planned) -> ToolOutput {
    let (bytes, expect) = match &planned.existing {
        Some(s) => (
            s.encode(&planned.content),
            WriteExpect::Unchanged(Some(s.hash)),
        ),
        None => (
            planned.content.clone().into_bytes(),
            WriteExpect::Unchanged(None),
        ),
    };
    let correction = planned.corrected.then_some("success");
    let method = planned.corrected.then_some("unescape");
    // Past this point the write is what happened, whatever a cancellation says.
    if ctx.cancel.is_cancelled() {
        return ToolOutput::text("Cancelled before writing.", "Cancelled before writing.");
    }
    ctx.commit();
    file_edit::pause_after_commit().await;
    let outcome = match ctx
        .services
        .fs
        .write_atomic(planned.path.clone(), bytes, expect)
        .await
    {
        Ok(outcome) => outcome,
        Err(e) => {
            let path = planned.path.display().to_string();
            return file_edit::write_error(e, |m| format!("Error writing to file '{path}': {m}"))
                .with_data(edit_data(None, None, correction, method));
        }
    };
    let real = outcome.real_path.display().to_string();
    let is_new = planned.existing.is_none();
    let d = diff::unified(
        &file_edit::file_name(&outcome.real_path),
        planned.original(),
        &planned.proposed,
    );
    let mut parts = vec![if is_new {
        format!("Successfully created and wrote to new file: {real}.")
    } else {
        format!("Successfully overwrote file: {real}.")
    }];
    if p.modified_by_user {
        parts.push(format!(
            "User modified the `content` to be: {}",
            planned.content
        ));
    }
    parts.push(format!(
        "Here is the updated code:\n{}",
        diff_context_snippet(planned.original(), &planned.proposed, 5)
    ));
    let rel = ctx.services.workspace.display_relative(&outcome.real_path);
    let display = if is_new {
        format!("Created {rel}")
    } else {
        format!("{} added, {} removed", d.lines_added, d.lines_removed)
    };
    ToolOutput::text(parts.join(" "), display).with_data(edit_data(
        None,
        Some(&d),
        correction,
        method,
    ))
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
