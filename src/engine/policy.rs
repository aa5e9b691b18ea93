//! The approval policy: given the mode, what a tool does and the tool's own hint,
//! whether a call runs, asks, or is refused.

use crate::protocol::{ApprovalMode, ToolKind};

/// The policy's answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    Allow,
    Ask,
    Deny(String),
}

/// A tool's hint: `Some(true)` = safe to run without asking, `Some(false)` = always ask.
pub fn decide(mode: ApprovalMode, kind: ToolKind, hint_allow: Option<bool>) -> PolicyDecision {
    if mode == ApprovalMode::Yolo {
        return PolicyDecision::Allow;
    }
    let harmless = matches!(
        kind,
        ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Other
    );
    if mode == ApprovalMode::Plan {
        return if harmless && hint_allow != Some(false) {
            PolicyDecision::Allow
        } else {
            PolicyDecision::Deny(
                "You are in Plan Mode with access to read-only tools. Execution of scripts and changes to files are blocked."
                    .to_string(),
            )
        };
    }
    match hint_allow {
        Some(true) => return PolicyDecision::Allow,
        Some(false) => return PolicyDecision::Ask,
        None => {}
    }
    match kind {
        ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Other => {
            PolicyDecision::Allow
        }
        ToolKind::Edit | ToolKind::Fetch if mode == ApprovalMode::AutoEdit => PolicyDecision::Allow,
        _ => PolicyDecision::Ask,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        use ApprovalMode::*;
        assert_eq!(decide(Default, ToolKind::Read, None), PolicyDecision::Allow);
        assert_eq!(decide(Default, ToolKind::Edit, None), PolicyDecision::Ask);
        assert_eq!(
            decide(AutoEdit, ToolKind::Edit, None),
            PolicyDecision::Allow
        );
        assert_eq!(
            decide(AutoEdit, ToolKind::Execute, None),
            PolicyDecision::Ask
        );
        assert_eq!(
            decide(Default, ToolKind::Execute, Some(true)),
            PolicyDecision::Allow
        );
        assert_eq!(
            decide(Yolo, ToolKind::Execute, Some(false)),
            PolicyDecision::Allow
        );
        assert!(matches!(
            decide(Plan, ToolKind::Edit, None),
            PolicyDecision::Deny(_)
        ));
        assert_eq!(decide(Plan, ToolKind::Search, None), PolicyDecision::Allow);
    }
}
