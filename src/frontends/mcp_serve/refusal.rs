//! Why `troupe mcp serve` refused a call that needs approval, and what would really
//! allow it: the approval mode that lets it run unasked (`auto_edit` for an edit or a
//! fetch, from `default`), the allow rule that covers exactly this call
//! (`-c 'approval.allowed=["run_shell_command(git status)"]'`), or `--yolo`. An edit
//! of Troupe's or gemini-cli's own configuration (`.troupe/`, `.gemini/`) asks in every
//! mode but yolo, whatever the rules say: only `--yolo` is named for it.

use crate::engine::policy::format_rule;
use crate::protocol::{ApprovalMode, ApprovalRequest, ConfirmationDetails};

/// The refusal sent back as the call's error.
pub fn refusal(req: &ApprovalRequest, mode: ApprovalMode) -> String {
    let tool = req.tool_name.as_str();
    let head = format!(
        "Tool execution denied by policy. \"{tool}\" needs approval, which `troupe mcp serve` cannot ask for (approval mode \"{}\").",
        mode.as_str()
    );
    let protected = match &req.details {
        ConfirmationDetails::Edit { file_path, .. } => {
            crate::tools::protected::is_protected(std::path::Path::new(file_path))
        }
        _ => false,
    };
    if protected {
        return format!("{head} It edits Troupe's or gemini-cli's own configuration, which runs without asking only with --yolo (no approval mode or allow rule covers it): start the server with --yolo to allow it.");
    }
    let rules = rules_for(req);
    // JSON string escapes are TOML's too.
    let quoted: Vec<String> = rules
        .iter()
        .map(|r| serde_json::Value::from(r.as_str()).to_string())
        .collect();
    let rule_flag = format!("-c 'approval.allowed=[{}]'", quoted.join(", "));
    let by_mode = match &req.details {
        ConfirmationDetails::Edit { .. } | ConfirmationDetails::Fetch { .. }
            if mode == ApprovalMode::Default =>
        {
            Some("--approval-mode auto_edit (every edit and fetch runs unasked)")
        }
        _ => None,
    };
    let mut ways = Vec::new();
    if let Some(by_mode) = by_mode {
        ways.push(by_mode.to_string());
    }
    ways.push(format!(
        "{rule_flag} (this call only; or that rule in approval.allowed of the settings)"
    ));
    ways.push("--yolo (every call)".to_string());
    format!(
        "{head} To allow it, start the server with {}.",
        ways.join(", or ")
    )
}

/// The allow rules that cover exactly this call: the shell command's keys, the edited
/// file, or the whole tool.
fn rules_for(req: &ApprovalRequest) -> Vec<String> {
    let tool = req.tool_name.as_str();
    match &req.details {
        ConfirmationDetails::Exec { command, .. } => {
            crate::engine::shell_syntax::allow_list_keys(command)
                .iter()
                .map(|k| format_rule(tool, Some(k)))
                .collect()
        }
        ConfirmationDetails::Edit { file_path, .. } => vec![format_rule(tool, Some(file_path))],
        _ => vec![format_rule(tool, None)],
    }
}
