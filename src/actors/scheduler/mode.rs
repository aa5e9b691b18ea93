//! The approval mode's one switch: `Op::SetApprovalMode` (the Scheduler's
//! `SetPolicyMode`) and the plan-mode tools (through [`crate::tools::SessionMode`])
//! both change it here, and the change is published to the session's handle.

use super::approval::PolicyCell;
use crate::protocol::ApprovalMode;

impl PolicyCell {
    /// Switches the approval mode: how `Op::SetApprovalMode` (the Scheduler's
    /// `SetPolicyMode`) and the plan-mode tools ([`crate::tools::SessionMode`]) change it.
    pub fn set_mode(&self, mode: ApprovalMode) {
        let mut state = self.lock();
        if state.mode != mode {
            if mode == ApprovalMode::Plan {
                state.before_plan = Some(state.mode);
            }
            state.mode = mode;
        }
    }
}

impl crate::tools::SessionMode for PolicyCell {
    fn approval_mode(&self) -> ApprovalMode {
        self.lock().mode
    }

    fn interactive(&self) -> bool {
        self.lock().interactive
    }

    fn set_approval_mode(&self, mode: ApprovalMode) {
        self.set_mode(mode);
    }

    fn mode_before_plan(&self) -> Option<ApprovalMode> {
        self.lock().before_plan
    }
}
