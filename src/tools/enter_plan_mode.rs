//! `enter_plan_mode {reason?}`: gemini-cli 0.61's switch into plan mode from the model.
//! A person is asked first (an interactive session); a non-interactive run switches
//! without asking; in plan mode already, or in YOLO mode with a person there, the call
//! is refused with gemini-cli's policy texts. The switch goes through the session's
//! one way of changing the approval mode ([`super::SessionMode`]). It is declared only
//! outside plan mode, as gemini-cli declares it.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Decider, Services, Tool, ToolContext};
use crate::engine::policy::PolicyDecision;
use crate::platform::filesystem::{Confined, FsWork};
use crate::protocol::{ApprovalMode, ConfirmationDetails, Offered, ToolKind, ToolOutput};

/// The name the model calls.
pub const NAME: &str = "enter_plan_mode";

/// gemini-cli's `denyMessage` for the call in plan mode.
pub const ALREADY_IN_PLAN_MODE: &str = "You are already in Plan Mode.";

/// Makes the plans directory (inside the project temp directory, a root of the
/// confined file system), as gemini-cli makes it when plan mode is entered.
struct MakePlansDir(std::path::PathBuf);

impl FsWork for MakePlansDir {
    type Output = Result<(), String>;
    fn perform(self, confined: &Confined) -> Self::Output {
        let at = confined
            .locate_lexically(&self.0)
            .ok_or_else(|| format!("{} is outside the workspace's roots", self.0.display()))?;
        confined
            .open_or_create_dir(&at)
            .map(drop)
            .map_err(|e| format!("{}: {e}", self.0.display()))
    }
}

/// The `enter_plan_mode` tool.
#[derive(Debug, Default)]
pub struct EnterPlanMode;

/// `enter_plan_mode`'s parameters.
#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    /// Why the model wants to plan first.
    #[serde(default)]
    pub reason: Option<String>,
}

/// gemini-cli's decision (`plan.toml`, `yolo.toml`) for the call in `mode`.
fn decide(mode: ApprovalMode, interactive: bool) -> PolicyDecision {
    match mode {
        ApprovalMode::Plan => PolicyDecision::Deny(ALREADY_IN_PLAN_MODE.into()),
        ApprovalMode::Yolo if interactive => PolicyDecision::Deny(String::new()),
        _ if interactive => PolicyDecision::Ask,
        _ => PolicyDecision::Allow,
    }
}

impl Tool for EnterPlanMode {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Enter Plan Mode"
    }

    /// gemini-cli's `Kind.Plan`, which ACP labels `other`.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn offered(&self) -> Offered {
        Offered::OutsidePlanMode
    }

    /// The approval mode is the main session's.
    fn main_session_only(&self) -> bool {
        true
    }

    /// Written out per model family in gemini-cli, without `wait_for_previous`.
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn run_once(&self) -> bool {
        false
    }

    fn description(&self) -> String {
        "Enters Plan Mode to research and design a complex change with read-only tools.".into()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "Why plan first."}
            }
        })
    }

    fn decider(&self, _p: &Params, _services: &Services) -> Option<Decider> {
        Some(Box::new(|mode, interactive| {
            Some(decide(mode, interactive))
        }))
    }

    fn confirmation(
        &self,
        p: &Params,
        _ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let reason = p.reason.clone().filter(|r| !r.trim().is_empty());
        Box::pin(async move {
            let mut prompt = "The agent asks to switch to plan mode: until you approve its plan it may only read, search and write the plan itself.".to_string();
            if let Some(reason) = reason {
                prompt.push_str(&format!("\nReason: {reason}"));
            }
            Some(ConfirmationDetails::Info {
                title: "Enter Plan Mode".into(),
                prompt,
            })
        })
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        ctx.services.mode.set_approval_mode(ApprovalMode::Plan);
        let display = match p.reason.as_deref().filter(|r| !r.is_empty()) {
            Some(reason) => format!("Switching to Plan mode: {reason}"),
            None => "Switching to Plan mode".to_string(),
        };
        Box::pin(async move {
            // A failure is only logged: the first plan written makes the directory.
            let plans = ctx.services.plans_dir();
            match ctx.services.fs.perform(MakePlansDir(plans)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "plans directory not made"),
                Err(e) => tracing::debug!(error = %e, "plans directory not made"),
            }
            ToolOutput::text("Switching to Plan mode.", display)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_a_person_switches_unasked_headless_and_refuses_in_plan_mode() {
        use ApprovalMode::*;
        assert_eq!(decide(Default, true), PolicyDecision::Ask);
        assert_eq!(decide(AutoEdit, true), PolicyDecision::Ask);
        assert_eq!(decide(Default, false), PolicyDecision::Allow);
        assert_eq!(decide(Yolo, false), PolicyDecision::Allow);
        assert_eq!(decide(Yolo, true), PolicyDecision::Deny(String::new()));
        assert_eq!(
            decide(Plan, false),
            PolicyDecision::Deny("You are already in Plan Mode.".into())
        );
    }
}
