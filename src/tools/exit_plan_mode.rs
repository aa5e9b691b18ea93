//! `exit_plan_mode {plan_filename}`: gemini-cli 0.61's request to approve a plan and
//! leave plan mode. The plan file must lie in the plans directory and hold something;
//! the user sees the plan and approves it (choosing how edits are then approved) or
//! rejects it with feedback. A non-interactive run approves it unasked and goes on in
//! the mode it had before plan mode (`default` when it started in plan mode) — not in
//! YOLO as gemini-cli does, so that two calls of the model cannot lift a headless run
//! out of the mode its user chose. Outside plan mode the call is refused. The answers
//! are gemini-cli's texts.

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::plan_mode::{access_denied, resolve_plan_path};
use super::{Decider, Services, Tool, ToolContext};
use crate::engine::policy::PolicyDecision;
use crate::protocol::{ApprovalMode, ConfirmationDetails, Offered, ToolKind, ToolOutput};

/// The name the model calls.
pub const NAME: &str = "exit_plan_mode";

/// gemini-cli's `denyMessage` for the call outside plan mode.
pub const NOT_IN_PLAN_MODE: &str =
    "You are not currently in Plan Mode. Use enter_plan_mode first to design a plan.";

/// The `exit_plan_mode` tool.
#[derive(Debug, Default)]
pub struct ExitPlanMode;

/// `exit_plan_mode`'s parameters.
#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    /// The plan's file name in the plans directory.
    pub plan_filename: String,
}

/// gemini-cli's decision (`plan.toml`, `yolo.toml`) for the call in `mode`.
fn decide(mode: ApprovalMode, interactive: bool) -> PolicyDecision {
    match mode {
        ApprovalMode::Plan if interactive => PolicyDecision::Ask,
        ApprovalMode::Plan => PolicyDecision::Allow,
        ApprovalMode::Yolo if interactive => PolicyDecision::Deny(String::new()),
        ApprovalMode::Yolo => PolicyDecision::Allow,
        _ => PolicyDecision::Deny(NOT_IN_PLAN_MODE.into()),
    }
}

/// gemini-cli's `getApprovalModeDescription`.
fn mode_description(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::AutoEdit => "Auto-Edit mode (edits will be applied automatically)",
        ApprovalMode::Default => "Default mode (edits will require confirmation)",
        ApprovalMode::Plan => "Plan mode (read-only planning)",
        ApprovalMode::Yolo => "YOLO mode (all tool calls auto-approved)",
    }
}

/// The user's verdict, from the confirmation's answer (gemini-cli's payload).
enum Verdict {
    Approved(ApprovalMode),
    Rejected(Option<String>),
}

/// The verdict of `answer` (`None`: approved unasked, by policy), in a session that
/// has a person answering (`interactive`) or not; `before_plan` is the mode the
/// session had before it entered plan mode.
fn verdict(
    answer: Option<&Value>,
    interactive: bool,
    before_plan: Option<ApprovalMode>,
) -> Verdict {
    let unasked = match interactive {
        true => ApprovalMode::Default,
        false => before_plan
            .filter(|m| *m != ApprovalMode::Plan)
            .unwrap_or(ApprovalMode::Default),
    };
    let Some(answer) = answer else {
        return Verdict::Approved(unasked);
    };
    if answer.get("approved").and_then(Value::as_bool) == Some(false) {
        let feedback = answer.get("feedback").and_then(Value::as_str);
        let feedback = feedback.map(str::trim).filter(|f| !f.is_empty());
        return Verdict::Rejected(feedback.map(str::to_string));
    }
    let mode = answer.get("approvalMode").and_then(Value::as_str);
    Verdict::Approved(
        mode.and_then(ApprovalMode::parse)
            .filter(|m| *m != ApprovalMode::Plan)
            .unwrap_or(ApprovalMode::Default),
    )
}

/// The plan file, checked as gemini-cli checks it before asking: in the plans
/// directory, there, and not empty. `Err`: gemini-cli's text for the model.
async fn read_plan(raw: &str, ctx: &ToolContext) -> Result<(PathBuf, String), String> {
    let services = &ctx.services;
    let plans = services.plans_dir();
    let path = resolve_plan_path(raw, &plans, services.workspace.primary())
        .map_err(|_| access_denied(raw, &plans))?;
    match services.fs.read(path.clone()).await {
        Ok(file) if file.bytes.iter().all(u8::is_ascii_whitespace) => Err(
            "Plan file is empty. You must write content to the plan file before requesting approval."
                .into(),
        ),
        Ok(file) => Ok((path, String::from_utf8_lossy(&file.bytes).into_owned())),
        Err(crate::platform::filesystem::FsError::NotFound(_)) => Err(format!(
            "Plan file does not exist: {raw}. You must create the plan file before requesting approval."
        )),
        Err(e) => Err(format!("Failed to read plan file: {e}")),
    }
}

impl Tool for ExitPlanMode {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Exit Plan Mode"
    }

    /// gemini-cli's `Kind.Plan`, which ACP labels `other`.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn offered(&self) -> Offered {
        Offered::InPlanMode
    }

    /// The approval mode is the main session's.
    fn main_session_only(&self) -> bool {
        true
    }

    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn run_once(&self) -> bool {
        false
    }

    fn description(&self) -> String {
        "Asks the user to approve the finished plan and leaves Plan Mode to carry it out. Agree on the approach with the user in the conversation first; no source file can be edited before this tool has been used.".into()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "required": ["plan_filename"],
            "properties": {
                "plan_filename": {"type": "string", "description": "The plan's file name in the plans directory (such as \"feature-x.md\"), not an absolute path."}
            }
        })
    }

    /// gemini-cli's `validateToolParamValues`.
    fn validate(&self, p: &Params, services: &Services) -> Result<(), String> {
        if p.plan_filename.trim().is_empty() {
            return Err("plan_filename is required.".into());
        }
        let plans = services.plans_dir();
        resolve_plan_path(&p.plan_filename, &plans, services.workspace.primary()).map(|_| ())
    }

    fn decider(&self, _p: &Params, _services: &Services) -> Option<Decider> {
        Some(Box::new(|mode, interactive| {
            Some(decide(mode, interactive))
        }))
    }

    /// The plan as its file holds it; none (the call runs and says what is wrong) when
    /// the file is missing or empty.
    fn confirmation(
        &self,
        p: &Params,
        ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let (raw, ctx) = (p.plan_filename.clone(), ctx.clone());
        Box::pin(async move {
            let (path, plan) = read_plan(&raw, &ctx).await.ok()?;
            Some(ConfirmationDetails::ExitPlanMode {
                title: "Plan Approval".into(),
                plan_path: path.display().to_string(),
                plan,
            })
        })
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let path = match read_plan(&p.plan_filename, &ctx).await {
                Ok((path, _)) => path.display().to_string(),
                Err(message) => return ToolOutput::text(message, "Error: Invalid plan"),
            };
            let interactive = ctx.services.mode.interactive();
            let before_plan = ctx.services.mode.mode_before_plan();
            match verdict(ctx.answer.as_ref(), interactive, before_plan) {
                Verdict::Approved(mode) => {
                    ctx.services.mode.set_approval_mode(mode);
                    ToolOutput::text(
                        format!(
                            "Plan approved. Switching to {}.\n\nThe approved implementation plan is stored at: {path}\nRead and follow the plan strictly during implementation.",
                            mode_description(mode)
                        ),
                        format!("Plan approved: {path}"),
                    )
                    .with_data(json!({"plan_approved": {"path": path, "mode": mode.as_str()}}))
                }
                Verdict::Rejected(Some(feedback)) => ToolOutput::text(
                    format!("Plan rejected. User feedback: {feedback}\n\nThe plan is stored at: {path}\nRevise the plan based on the feedback."),
                    format!("Feedback: {feedback}"),
                ),
                Verdict::Rejected(None) => ToolOutput::text(
                    format!("Plan rejected. No feedback provided.\n\nThe plan is stored at: {path}\nAsk the user for specific feedback on how to improve the plan."),
                    "Rejected (no feedback)",
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asked_in_plan_mode_unasked_headless_refused_outside_it() {
        use ApprovalMode::*;
        assert_eq!(decide(Plan, true), PolicyDecision::Ask);
        assert_eq!(decide(Plan, false), PolicyDecision::Allow);
        assert_eq!(
            decide(Default, true),
            PolicyDecision::Deny(NOT_IN_PLAN_MODE.into())
        );
        assert_eq!(decide(Yolo, true), PolicyDecision::Deny(String::new()));
    }

    #[test]
    fn verdicts_follow_gemini_cli_payloads() {
        // Headless: back to the mode before plan mode, never lifted to YOLO.
        use ApprovalMode::*;
        for (before, after) in [
            (None, Default),
            (Some(Default), Default),
            (Some(AutoEdit), AutoEdit),
            (Some(Yolo), Yolo),
        ] {
            assert!(matches!(verdict(None, false, before), Verdict::Approved(m) if m == after));
        }
        assert!(matches!(
            verdict(None, true, Some(Yolo)),
            Verdict::Approved(ApprovalMode::Default)
        ));
        let auto = json!({"approved": true, "approvalMode": "autoEdit"});
        assert!(matches!(
            verdict(Some(&auto), true, None),
            Verdict::Approved(ApprovalMode::AutoEdit)
        ));
        let no = json!({"approved": false, "feedback": "  more tests "});
        assert!(
            matches!(verdict(Some(&no), true, None), Verdict::Rejected(Some(f)) if f == "more tests")
        );
        let bare = json!({"approved": false, "feedback": " "});
        assert!(matches!(
            verdict(Some(&bare), true, None),
            Verdict::Rejected(None)
        ));
    }
}
