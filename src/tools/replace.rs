//! `replace` (display `Edit`): replaces `old_string` by `new_string` in a file with the
//! four-stage matcher, repairs a miss through the Corrector actor, shows the unified
//! diff for approval, and writes atomically only if the file still holds the bytes the
//! edit was computed from.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use lru::LruCache;
use serde::Deserialize;
use serde_json::{json, Value};

use super::file_edit::{self, edit_data, is_json_like, Existing, ReadFailure};
use super::{PolicyHint, Services, Tool, ToolContext, Touched};
use crate::engine::diff;
use crate::engine::edit::snapshot::{encode_text, FileSnapshot};
use crate::engine::edit::snippet::context_snippet_of;
use crate::engine::edit::{self, placeholders, EditError, EditPlan, EditRequest, Occurrences};
use crate::platform::filesystem::WriteExpect;
use crate::platform::path_correction::PathCorrectionError;
use crate::protocol::{ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};
use crate::tools::corrector::{CorrectEdit, Correction};

/// The `replace` tool. Remembers the file content each confirmation showed, so that
/// "modify with external editor" can turn the user's edited file into a whole-file edit.
pub struct Replace {
    shown: Arc<Mutex<LruCache<String, String>>>,
}

impl Default for Replace {
    fn default() -> Self {
        let entries = NonZeroUsize::new(32).unwrap_or(NonZeroUsize::MIN);
        Self {
            shown: Arc::new(Mutex::new(LruCache::new(entries))),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub file_path: String,
    #[serde(default)]
    pub instruction: Option<String>,
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub allow_multiple: Option<bool>,
    /// The seed documents' form: exactly this many occurrences.
    #[serde(default)]
    pub expected_replacements: Option<u64>,
    #[serde(default)]
    pub modified_by_user: bool,
    #[serde(default)]
    pub ai_proposed_content: Option<String>,
}

impl Params {
    fn want(&self) -> Occurrences {
        Occurrences::from_params(self.allow_multiple, self.expected_replacements)
    }
}

/// An edit ready to show and write.
struct Computed {
    path: PathBuf,
    /// `None` for a new file.
    snapshot: Option<FileSnapshot>,
    plan: EditPlan,
    correction: Option<(&'static str, Option<&'static str>)>,
}

impl Computed {
    fn original(&self) -> &str {
        self.snapshot.as_ref().map_or("", |s| s.text.as_str())
    }
}

fn error_output(e: EditError, correction: Option<&'static str>) -> ToolOutput {
    let out = ToolOutput::error(e.kind, e.raw, format!("Error: {}", e.display));
    match correction {
        Some(c) => out.with_data(edit_data(None, None, Some(c), None)),
        None => out,
    }
}

/// The file meant: an absolute path as given; a relative one corrected as gemini-cli
/// does (a unique file of the workspace whose path ends with it), else resolved against
/// the first root. Several candidates are an error that lists them.
async fn requested_path(p: &Params, ctx: &ToolContext) -> Result<std::path::PathBuf, ToolOutput> {
    let services = &ctx.services;
    if std::path::Path::new(&p.file_path).is_absolute() {
        return Ok(services.resolve_edit_path(&p.file_path));
    }
    let raw = p.file_path.clone();
    match services.fs.correct_path(raw).await {
        Ok(Ok(path)) => Ok(path),
        Ok(Err(PathCorrectionError::Ambiguous(msg))) => Err(ToolOutput::error(
            ToolErrorKind::InvalidToolParams,
            msg.clone(),
            format!("Error: {msg}"),
        )),
        Ok(Err(PathCorrectionError::NotFound(_))) | Err(_) => {
            Ok(services.resolve_edit_path(&p.file_path))
        }
    }
}

/// The edit as [`compute_plan`] makes it, refused when it would leave a file that
/// parses unparseable (an edit the user changed in the confirmation is theirs: not
/// checked).
async fn compute(p: &Params, ctx: &ToolContext) -> Result<Computed, ToolOutput> {
    let computed = compute_plan(p, ctx).await?;
    if !p.modified_by_user {
        let check = (
            "replace",
            "new_string",
            ToolErrorKind::EditPreparationFailure,
        );
        let before = computed.snapshot.as_ref().map(|s| s.text.as_str());
        let after = &computed.plan.new_content;
        file_edit::refuse_unparseable(&ctx.services, &computed.path, before, after, check).await?;
        let guard = ("replace", ToolErrorKind::EditPreparationFailure);
        crate::tools::kept_definitions::refuse_removed_definition(
            &ctx.services,
            &computed.path,
            before,
            after,
            guard,
        )
        .await?;
    }
    Ok(computed)
}

/// Reads the file and computes the edit, asking the Corrector when the strings miss.
async fn compute_plan(p: &Params, ctx: &ToolContext) -> Result<Computed, ToolOutput> {
    let (path, snapshot) = read_target(p, ctx).await?;
    let want = p.want();
    let request = EditRequest {
        file_path: &p.file_path,
        old_string: &p.old_string,
        new_string: &p.new_string,
        want,
    };
    let resolved = path.display().to_string();
    let first = edit::compute_edit(
        snapshot.as_ref().map(|s| s.text.as_str()),
        &request,
        &resolved,
    );
    let error = match first {
        Ok(plan) => {
            return Ok(Computed {
                path,
                snapshot,
                plan,
                correction: None,
            })
        }
        Err(e) => e,
    };
    let snapshot = snapshot.as_ref();
    corrected_plan(p, ctx, path, snapshot, request, &resolved, error).await
}

/// The file the edit is for and its content (`None`: it does not exist yet).
async fn read_target(
    p: &Params,
    ctx: &ToolContext,
) -> Result<(PathBuf, Option<FileSnapshot>), ToolOutput> {
    let services = &ctx.services;
    let requested = requested_path(p, ctx).await?;
    match file_edit::read_existing(services, requested).await {
        Ok(Existing::Text { path, snapshot }) => Ok((path, Some(snapshot))),
        Ok(Existing::Missing { path }) => Ok((path, None)),
        Err(ReadFailure::Fs(crate::platform::filesystem::FsError::Path(e))) => {
            Err(ToolOutput::error(
                ToolErrorKind::PathNotInWorkspace,
                e.to_string(),
                "Error: Path not in workspace.",
            ))
        }
        Err(ReadFailure::Fs(e)) => {
            let msg = e.to_string();
            Err(ToolOutput::error(
                ToolErrorKind::EditPreparationFailure,
                msg.clone(),
                format!("Error preparing edit: {msg}"),
            ))
        }
        Err(ReadFailure::NotText(path, why)) => {
            let msg = format!("{}: {why}", path.display());
            Err(ToolOutput::error(
                ToolErrorKind::EditPreparationFailure,
                msg.clone(),
                format!("Error preparing edit: {msg}"),
            ))
        }
    }
}

/// The edit as the Corrector repairs its missed strings, or the miss's error (marked
/// with what the correction came to) when it cannot be corrected.
async fn corrected_plan(
    p: &Params,
    ctx: &ToolContext,
    path: PathBuf,
    snapshot: Option<&FileSnapshot>,
    request: EditRequest<'_>,
    resolved: &str,
    error: EditError,
) -> Result<Computed, ToolOutput> {
    let services = &ctx.services;
    let (Some(corrector), Some(current)) = (&services.corrector, snapshot) else {
        return Err(error_output(error, None));
    };
    if !error.is_correctable() || is_json_like(&path) {
        return Err(error_output(error, None));
    }
    if services.settings.edit.use_model {
        ctx.waiting(crate::protocol::WaitingFor::Correction);
    }
    let asked = corrector
        .send(CorrectEdit {
            path: path.clone(),
            snapshot: current.clone(),
            old_string: p.old_string.clone(),
            new_string: p.new_string.clone(),
            instruction: p.instruction.clone(),
            want: request.want,
            error: error.raw.clone(),
            cancel: ctx.cancel.clone(),
        })
        .await;
    match asked {
        Ok(Correction::Fixed {
            old_string,
            new_string,
            snapshot: latest,
            method,
            ..
        }) => {
            let fixed = EditRequest {
                old_string: &old_string,
                new_string: &new_string,
                ..request
            };
            match edit::compute_edit(Some(&latest.text), &fixed, resolved) {
                Ok(plan) => Ok(Computed {
                    path,
                    snapshot: Some(latest),
                    plan,
                    correction: Some(("success", Some(method.as_str()))),
                }),
                Err(_) => Err(error_output(error, Some("failure"))),
            }
        }
        Ok(Correction::NoChangeRequired { explanation }) => Err(error_output(
            EditError {
                kind: ToolErrorKind::EditNoChangeLlmJudgement,
                raw: format!("A secondary check by an LLM determined that no changes were necessary to fulfill the instruction. Explanation: {explanation}. Original error with the parameters given: {}", error.raw),
                display: "No changes required. The file already meets the specified conditions.".into(),
            },
            Some("no_change"),
        )),
        Ok(Correction::Failed { reason }) => {
            tracing::debug!(%reason, "edit correction failed");
            Err(error_output(error, Some("failure")))
        }
        Err(e) => {
            tracing::warn!(error = %e, "corrector unavailable");
            Err(error_output(error, None))
        }
    }
}

/// The name the model calls.
pub const NAME: &str = "replace";

impl Tool for Replace {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Edit"
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

    /// Its errors ask for `allow_multiple` (a small model repeated a failing rename
    /// three times without it).
    fn compact_keeps(&self) -> &'static [&'static str] {
        &["allow_multiple"]
    }

    fn description(&self) -> String {
        "Replaces text within a file. By default exactly ONE occurrence of `old_string` must be found; set `allow_multiple` to true to replace every occurrence (or `expected_replacements` to the exact number expected). Give `old_string` as the exact literal text of the file with enough surrounding lines to identify the place uniquely, and `new_string` as the exact literal replacement; never escape them. An empty `old_string` creates a new file. Read the file first. The user may modify `new_string`; if so, the response says so.".to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The path to the file to modify."},
                "instruction": {"type": "string", "description": "A clear, self-contained instruction for the change: why it is needed, where it goes, what changes and the desired outcome."},
                "old_string": {"type": "string", "description": "The exact literal text to replace, unescaped, with enough context to match only the intended place."},
                "new_string": {"type": "string", "description": "The exact literal text to replace `old_string` with, unescaped. Do not use omission placeholders like '(rest of methods ...)'; provide exact literal code."},
                "allow_multiple": {"type": "boolean", "description": "If true, every occurrence of `old_string` is replaced. If false (default), exactly one occurrence must be found."},
                "expected_replacements": {"type": "integer", "minimum": 1, "description": "Optional: the exact number of occurrences to replace (older form of `allow_multiple`)."}
            },
            "required": ["file_path", "old_string", "new_string"]
        })
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        if p.file_path.trim().is_empty() {
            return Err("The 'file_path' parameter must be non-empty.".into());
        }
        if !placeholders::introduced(&p.old_string, &p.new_string).is_empty() {
            return Err("`new_string` contains an omission placeholder (for example 'rest of methods ...'). Provide exact literal replacement text.".into());
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
        let shown = self.shown.clone();
        Box::pin(async move {
            let computed = compute(&p, &ctx).await.ok()?;
            if let Ok(mut cache) = shown.lock() {
                cache.put(p.file_path.clone(), computed.original().to_string());
            }
            Some(file_edit::edit_confirmation(
                &ctx.services,
                "Confirm Edit:",
                &computed.path,
                computed.original(),
                &computed.plan.new_content,
            ))
        })
    }

    fn modified_args(&self, args: &Value, edited_content: &str) -> Option<Value> {
        let file_path = args.get("file_path")?.as_str()?;
        let original = self.shown.lock().ok()?.get(file_path)?.clone();
        let mut out = args.as_object()?.clone();
        let proposed = out.get("new_string").cloned().unwrap_or(Value::Null);
        out.insert("old_string".into(), json!(original));
        out.insert("new_string".into(), json!(edited_content));
        out.insert("modified_by_user".into(), json!(true));
        out.insert("ai_proposed_content".into(), proposed);
        out.remove("allow_multiple");
        out.remove("expected_replacements");
        Some(Value::Object(out))
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            if let Some(refused) = super::plan_mode::refused_now(&p.file_path, &ctx.services) {
                return refused;
            }
            let key = ctx.services.resolve_edit_path(&p.file_path);
            // No other agent's edit of the file between this one's read and write.
            let _editing = ctx.services.ledger.hold(&key).await;
            // Its share of the bytes edits may hold at once (see write_file).
            let _held = file_edit::reserve_edit_memory(
                &ctx.services,
                &p.file_path,
                p.old_string.len().max(p.new_string.len()),
            )
            .await;
            let computed = match compute(&p, &ctx).await {
                Ok(c) => c,
                Err(out) => return out,
            };
            if let Err(out) = ctx.check_approved(&computed.path, computed.original()) {
                return *out;
            }
            let paused = file_edit::pause_before_write().await;
            let services = ctx.services.clone();
            let out = write(p, ctx, computed, paused).await;
            if out.error.is_none() {
                // It applied to the current content: the author has seen what it wrote.
                services.ledger.note_write(&services.author, &key);
            }
            out
        })
    }
}

/// Writes the computed edit. `paused`: a test pause came between the read and now.
async fn write(p: Params, ctx: ToolContext, computed: Computed, paused: bool) -> ToolOutput {
    let Computed {
        path,
        snapshot,
        plan,
        correction,
    } = computed;
    // Read just now, unless a correction (a model call) or a pause came in between.
    let read_just_now = correction.is_none() && !paused;
    let (bytes, expect) = match &snapshot {
        Some(s) => (
            s.encode(&plan.new_content),
            match read_just_now {
                true => WriteExpect::ReadJustNow(s.hash),
                false => WriteExpect::Unchanged(Some(s.hash)),
            },
        ),
        // A new file keeps the line endings `new_string` was given with (gemini-cli
        // writes CRLF content as CRLF).
        None => (
            encode_text(&plan.new_content, p.new_string.contains("\r\n"), false),
            WriteExpect::Unchanged(None),
        ),
    };
    // Past this point the write is what happened, whatever a cancellation says.
    if ctx.cancel.is_cancelled() {
        return ToolOutput::text("Cancelled before writing.", "Cancelled before writing.");
    }
    ctx.commit();
    let expect = match (file_edit::pause_after_commit(&ctx.cancel).await, expect) {
        (true, WriteExpect::ReadJustNow(hash)) => WriteExpect::Unchanged(Some(hash)),
        (_, expect) => expect,
    };
    let written = ctx
        .services
        .fs
        .write_atomic(path.clone(), bytes, expect)
        .await;
    let (method, correction) = match correction {
        Some((c, m)) => (m, Some(c)),
        None => (None, None),
    };
    let strategy = plan.strategy.map(|s| s.as_str());
    let outcome = match written {
        Ok(outcome) => outcome,
        Err(e) => {
            let out = file_edit::write_error(e, |m| format!("Error executing edit: {m}"));
            return out.with_data(edit_data(strategy, None, correction, method));
        }
    };
    let real = outcome.real_path.display().to_string();
    let original = snapshot.as_ref().map_or("", |s| s.text.as_str());
    // One line diff serves the result's diff and its snippet.
    let lines = diff::line_diff(original, &plan.new_content);
    let d = diff::unified_of(&file_edit::file_name(&outcome.real_path), &lines);
    let snippet = context_snippet_of(original, lines.ops(), &plan.new_content, 5);
    let mut parts = vec![if plan.is_new_file {
        format!("Created new file: {real} with provided content.")
    } else {
        format!(
            "Successfully modified file: {real} ({} replacements).",
            plan.occurrences
        )
    }];
    parts.push(format!("Here is the updated code:\n{snippet}"));
    if let Some(feedback) = edit::fuzzy_feedback(&plan) {
        parts.push(feedback);
    }
    if p.modified_by_user {
        parts.push(format!(
            "The confirmation step modified the `new_string` content to be: {}.",
            p.new_string
        ));
    }
    let rel = ctx.services.workspace.display_relative(&outcome.real_path);
    let display = if plan.is_new_file {
        format!("Created {rel}")
    } else {
        format!("{} added, {} removed", d.lines_added, d.lines_removed)
    };
    let data = edit_data(strategy, Some(&d), correction, method);
    ToolOutput::text(parts.join(" "), display).with_data(file_edit::with_contents(
        data,
        &path,
        original,
        &plan.new_content,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_args_turn_the_edited_file_into_a_whole_file_edit() {
        let tool = Replace::default();
        let args = json!({"file_path": "a.py", "instruction": "i", "old_string": "x", "new_string": "y", "allow_multiple": true});
        assert_eq!(
            tool.modified_args(&args, "edited\n"),
            None,
            "nothing shown yet"
        );
        if let Ok(mut shown) = tool.shown.lock() {
            shown.put("a.py".into(), "x = 1\n".into());
        }
        let out = tool.modified_args(&args, "edited\n").unwrap();
        assert_eq!(
            out,
            json!({"file_path": "a.py", "instruction": "i", "old_string": "x = 1\n",
                   "new_string": "edited\n", "modified_by_user": true, "ai_proposed_content": "y"})
        );
    }
}
