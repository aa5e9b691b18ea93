//! The approval policy: given the mode, what a tool does and the tool's own hint,
//! whether a call runs, asks, or is refused.

use crate::protocol::{AllowKey, ApprovalMode, ToolKind};

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
                "You are in Plan Mode with access to read-only tools. Execution of scripts (including those from skills) is blocked."
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

/// Whether an allow rule with key `rule_key` covers a call whose approval key is
/// `call_key`, matched the way the tool's keys mean (its facts' `allow_key`):
///
/// - [`AllowKey::CommandPrefix`] (`run_shell_command`): the same command, or a longer
///   one that starts with the rule's words (`git` covers `git status`, not `gitk`);
/// - [`AllowKey::Path`] (`write_file`, `replace`, any tool not built in): the same
///   path, or a path beneath the rule's as a directory, at a path-component boundary
///   (`/w/src` covers `/w/src/a.rs`; never `/w/src2`, `/w/srcx.rs` or `/w/src b`).
///
/// ```
/// # use troupe_engine::policy::key_covers;
/// # use troupe_protocol::AllowKey::{CommandPrefix, Path};
/// assert!(key_covers(Path, "/w/src", "/w/src/a.rs"));
/// assert!(!key_covers(Path, "/w/src/a", "/w/src/ab"));
/// assert!(!key_covers(Path, "/w/notes", "/w/notes secret.txt"));
/// assert!(key_covers(CommandPrefix, "git", "git status"));
/// ```
pub fn key_covers(keys: AllowKey, rule_key: &str, call_key: &str) -> bool {
    if call_key == rule_key {
        return true;
    }
    if keys == AllowKey::CommandPrefix {
        return call_key
            .strip_prefix(rule_key)
            .is_some_and(|rest| rest.starts_with(' '));
    }
    let dir = rule_key.trim_end_matches('/');
    !rule_key.is_empty()
        && call_key
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
}

/// An allow rule as written in `approval.allowed`: `tool` or `tool(key)`.
pub fn format_rule(tool: &str, key: Option<&str>) -> String {
    match key {
        Some(k) => format!("{tool}({k})"),
        None => tool.to_string(),
    }
}

/// Parses `tool`, `tool(key)` or `mcp_<server>_*` (every tool of one MCP server, the
/// rule "Allow all server tools" makes); `None` when the text is none of them. A tool
/// name has the characters of an MCP tool name (`[A-Za-z0-9_.:-]`); `*` ends a server
/// rule only, so no rule covers the built-in tools wholesale.
pub fn parse_rule(text: &str) -> Option<(String, Option<String>)> {
    let text = text.trim();
    let valid_name = |n: &str| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
    };
    if let Some(server) = text
        .strip_prefix("mcp_")
        .and_then(|rest| rest.strip_suffix("_*"))
    {
        return valid_name(server).then(|| (text.to_string(), None));
    }
    match text.split_once('(') {
        None => valid_name(text).then(|| (text.to_string(), None)),
        Some((tool, rest)) => {
            let key = rest.strip_suffix(')')?;
            (valid_name(tool) && !key.trim().is_empty())
                .then(|| (tool.to_string(), Some(key.to_string())))
        }
    }
}

/// Whether one of `rules` covers a call of `tool` with these approval keys: a rule
/// names the tool (or, as `mcp_<server>_*`, every tool of one MCP server), and its key,
/// when it has one, covers every key of the call, matched as `allow_key` (the tool's
/// facts) says.
pub fn rules_allow(
    rules: &[crate::protocol::AllowRule],
    tool: &str,
    allow_key: AllowKey,
    keys: &[String],
) -> bool {
    rules.iter().any(|r| {
        let named = match r.tool.strip_suffix('*') {
            Some(prefix) => tool.starts_with(prefix),
            None => r.tool == tool,
        };
        named
            && match &r.key {
                None => true,
                Some(k) => !keys.is_empty() && keys.iter().all(|key| key_covers(allow_key, k, key)),
            }
    })
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
        // Every tool of one MCP server; no other wildcard.
        assert_eq!(parse_rule(" mcp_ev_* "), Some(("mcp_ev_*".into(), None)));
        assert_eq!(
            parse_rule("mcp_my-srv.v2_*"),
            Some(("mcp_my-srv.v2_*".into(), None))
        );
        assert_eq!(
            parse_rule("mcp_fx_ns:echo"),
            Some(("mcp_fx_ns:echo".into(), None))
        );
        for bad in [
            "*",
            "mcp_*",
            "mcp__*",
            "read_*",
            "mcp_ev_*(x)",
            "mcp_e v_*",
            "mcp_ev*",
        ] {
            assert_eq!(parse_rule(bad), None, "{bad}");
        }
        let text = format_rule("replace", Some("/w/f.rs"));
        assert_eq!(
            parse_rule(&text),
            Some(("replace".into(), Some("/w/f.rs".into())))
        );
    }

    #[test]
    fn path_rules_match_whole_components_and_command_rules_whole_words() {
        // A path rule: the file itself, or what lies beneath it as a directory.
        assert!(key_covers(AllowKey::Path, "/w/src/a", "/w/src/a"));
        assert!(key_covers(AllowKey::Path, "/w/src", "/w/src/a/b.rs"));
        assert!(key_covers(AllowKey::Path, "/w/src/", "/w/src/a.rs"));
        assert!(!key_covers(AllowKey::Path, "/w/src/a", "/w/src/ab"));
        assert!(!key_covers(AllowKey::Path, "/w/src/a", "/w/src/a b"));
        assert!(!key_covers(AllowKey::Path, "/w/src/a", "/w/src/a.bak"));
        assert!(!key_covers(AllowKey::Path, "/w/src", "/w/src2/x"));
        assert!(!key_covers(AllowKey::Path, "/w/src/a.rs", "/w/src/a.rs/"));
        assert!(!key_covers(AllowKey::Path, "", "/w/x"));
        // A command rule: the command, or one that continues it with more words.
        assert!(key_covers(
            AllowKey::CommandPrefix,
            "git status",
            "git status"
        ));
        assert!(key_covers(AllowKey::CommandPrefix, "git", "git status"));
        assert!(!key_covers(AllowKey::CommandPrefix, "git", "gitk"));
        assert!(!key_covers(
            AllowKey::CommandPrefix,
            "/usr/bin/make",
            "/usr/bin/make2"
        ));
        assert!(key_covers(
            AllowKey::CommandPrefix,
            "/usr/bin/make",
            "/usr/bin/make all"
        ));
        assert!(!key_covers(AllowKey::CommandPrefix, "ls", "ls/x"));
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
