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

/// An allow rule as written in `approval.allowed`: `tool` or `tool(key)`.
pub fn format_rule(tool: &str, key: Option<&str>) -> String {
    match key {
        Some(k) => format!("{tool}({k})"),
        None => tool.to_string(),
    }
}

/// Parses `tool` or `tool(key)`; `None` when the text is neither.
pub fn parse_rule(text: &str) -> Option<(String, Option<String>)> {
    let text = text.trim();
    let valid_name = |n: &str| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    };
    match text.split_once('(') {
        None => valid_name(text).then(|| (text.to_string(), None)),
        Some((tool, rest)) => {
            let key = rest.strip_suffix(')')?;
            (valid_name(tool) && !key.trim().is_empty())
                .then(|| (tool.to_string(), Some(key.to_string())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_strings_round_trip() {
        assert_eq!(
            parse_rule("run_shell_command(git status)"),
            Some(("run_shell_command".into(), Some("git status".into())))
        );
        assert_eq!(
            parse_rule("replace(/w/a (1).rs)"),
            Some(("replace".into(), Some("/w/a (1).rs".into())))
        );
        assert_eq!(parse_rule("web_fetch"), Some(("web_fetch".into(), None)));
        assert_eq!(parse_rule("bad name"), None);
        assert_eq!(parse_rule("tool()"), None);
        assert_eq!(parse_rule("tool(x"), None);
        let text = format_rule("replace", Some("/w/f.rs"));
        assert_eq!(
            parse_rule(&text),
            Some(("replace".into(), Some("/w/f.rs".into())))
        );
    }

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
