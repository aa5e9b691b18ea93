//! gemini-cli's policy engine rules (`[[rule]]` of its policy TOML files, and the rules
//! its flags and settings stand for) and how one tool call is matched against them:
//! the rules in priority order, the first that matches decides. The shell tool's calls
//! are checked command by command as gemini-cli does: an `allow` holds only when every
//! command of the line is allowed, any denied command denies the line, and a
//! redirection turns an `allow` into a question unless the rule allows redirection.
//! Loading the files is `settings::policy`'s; this module does no I/O.

use regex::Regex;
use serde_json::Value;

use crate::protocol::ApprovalMode;
use crate::shell_syntax;
use crate::stable_json::stable_stringify;

/// The shell tool's name.
pub const SHELL_TOOL: &str = "run_shell_command";

/// The priority Troupe's own allow rules (`approval.allowed`, "Always allow") rank at:
/// gemini-cli's `ALWAYS_ALLOW_PRIORITY` (the workspace tier's 950).
pub const ALWAYS_ALLOW_PRIORITY: f64 = 3.95;

/// What a matching rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleDecision {
    /// `allow`: runs without asking.
    Allow,
    /// `deny`: refused.
    Deny,
    /// `ask_user`: the user is asked.
    AskUser,
}

impl RuleDecision {
    /// The name a policy file gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleDecision::Allow => "allow",
            RuleDecision::Deny => "deny",
            RuleDecision::AskUser => "ask_user",
        }
    }
}

/// A policy tier; a rule's priority is its tier plus its own priority / 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Built-in policies (Troupe's own approval logic stands for them).
    Default = 1,
    /// An extension's policies.
    Extension = 2,
    /// The workspace's policies.
    Workspace = 3,
    /// `~/.gemini/policies/`, `~/.troupe/policies/`, `--policy`, and flags/settings.
    User = 4,
    /// The system policy directory and `--admin-policy`.
    Admin = 5,
}

impl Tier {
    /// gemini-cli's tier name (`default`, `extension`, `workspace`, `user`, `admin`).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Default => "default",
            Tier::Extension => "extension",
            Tier::Workspace => "workspace",
            Tier::User => "user",
            Tier::Admin => "admin",
        }
    }

    /// The rule priority for a file priority (0..=999) in this tier.
    pub fn priority(self, own: u32) -> f64 {
        self as u32 as f64 + f64::from(own) / 1000.0
    }
}

/// One policy rule, its tool names expanded (one rule per name and per prefix).
#[derive(Debug, Clone)]
pub struct PolicyRule {
    /// A tool name, `*`, `mcp_*` or `mcp_<server>_*`, or `mcp_<server>_<tool>`.
    pub tool_name: String,
    /// The MCP server the call's tool must come from (`*`: any server).
    pub mcp_name: Option<String>,
    /// Matched against the call's arguments as [`stable_stringify`] writes them.
    pub args_pattern: Option<Regex>,
    /// What it decides.
    pub decision: RuleDecision,
    /// Its tier plus its priority / 1000; the highest matching rule decides.
    pub priority: f64,
    /// The approval modes it applies in (empty: all).
    pub modes: Vec<ApprovalMode>,
    /// Only in an interactive session (`true`) or only headless (`false`).
    pub interactive: Option<bool>,
    /// A shell command with a redirection stays allowed.
    pub allow_redirection: bool,
    /// Said after "Tool execution denied by policy." when it denies.
    pub deny_message: Option<String>,
    /// Where it came from: `User: my.toml`, `Settings (Tools Allowed)`, ….
    pub source: String,
    /// The annotations the tool must have, each with this value (`readOnlyHint`).
    pub tool_annotations: Vec<(String, Value)>,
    /// Only calls made by this subagent.
    pub subagent: Option<String>,
}

impl PolicyRule {
    /// A rule of `decision` for `tool_name` at `priority`, from `source`.
    pub fn new(tool_name: &str, decision: RuleDecision, priority: f64, source: &str) -> Self {
        PolicyRule {
            tool_name: tool_name.to_string(),
            mcp_name: None,
            args_pattern: None,
            decision,
            priority,
            modes: Vec::new(),
            interactive: None,
            allow_redirection: false,
            deny_message: None,
            source: source.to_string(),
            tool_annotations: Vec::new(),
            subagent: None,
        }
    }

    fn matches(&self, call: &PolicyCall<'_>, stringified: Option<&str>) -> bool {
        if !self.modes.is_empty() && !self.modes.contains(&call.mode) {
            return false;
        }
        if self.subagent.is_some() && self.subagent.as_deref() != call.subagent {
            return false;
        }
        let annotated = |(key, value): &(String, Value)| {
            call.annotations
                .and_then(|a| a.get(key))
                .is_some_and(|v| v == value)
        };
        if !self.tool_annotations.iter().all(annotated) {
            return false;
        }
        if let Some(mcp) = &self.mcp_name {
            match call.server {
                None => return false,
                Some(s) if mcp != "*" && s != mcp => return false,
                Some(_) => {}
            }
        }
        if !tool_name_matches(&self.tool_name, self.mcp_name.as_deref(), call) {
            return false;
        }
        if let Some(re) = &self.args_pattern {
            if !stringified.is_some_and(|s| re.is_match(s)) {
                return false;
            }
        }
        match self.interactive {
            Some(wanted) => wanted == call.interactive,
            None => true,
        }
    }
}

/// `mcp_<server>_<tool>`, or only the tool when `server` is `*`.
fn mcp_tool_name(server: &str, tool: &str) -> String {
    match (server, tool) {
        ("*", "*") => "mcp_*".to_string(),
        ("*", t) => format!("mcp_*_{t}"),
        (s, "*") => format!("mcp_{s}_*"),
        (s, t) => format!("mcp_{s}_{t}"),
    }
}

fn tool_name_matches(pattern: &str, mcp_name: Option<&str>, call: &PolicyCall<'_>) -> bool {
    if pattern == "*" {
        return true;
    }
    if pattern.contains('*') {
        if pattern == "mcp_*" {
            return call.server.is_some();
        }
        if let Some(server) = pattern
            .strip_prefix("mcp_")
            .and_then(|p| p.strip_suffix("_*"))
        {
            return call.server == Some(server) && call.name.starts_with(&format!("mcp_{server}_"));
        }
        return call.name == pattern;
    }
    if call.name == pattern {
        return true;
    }
    // A short name with mcpName, or a qualified name for a call named short.
    let Some(server) = call.server else {
        return false;
    };
    match mcp_name {
        Some(m) if !pattern.starts_with("mcp_") && call.name == mcp_tool_name(m, pattern) => true,
        _ => pattern.starts_with("mcp_") && pattern == mcp_tool_name(server, call.name),
    }
}

/// One call as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct PolicyCall<'a> {
    /// The tool's name as the model called it.
    pub name: &'a str,
    /// The MCP server of the tool, when it is one's.
    pub server: Option<&'a str>,
    /// The call's arguments.
    pub args: &'a Value,
    /// The session's approval mode.
    pub mode: ApprovalMode,
    /// Whether a person can be asked (not headless).
    pub interactive: bool,
    /// The tool's annotations (an MCP tool's `readOnlyHint`), if it has any.
    pub annotations: Option<&'a serde_json::Map<String, Value>>,
    /// The subagent making the call; `None` for the main session.
    pub subagent: Option<&'a str>,
    /// Other names of the tool (its legacy names), which rules may name too.
    pub aliases: &'a [&'a str],
}

/// The rules' verdict on one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// What to do.
    pub decision: RuleDecision,
    /// The priority of the rule that decided.
    pub priority: f64,
    /// The deciding rule's source.
    pub source: String,
    /// The deciding rule's deny message.
    pub deny_message: Option<String>,
}

impl Verdict {
    fn of(rule: &PolicyRule, decision: RuleDecision) -> Self {
        Verdict {
            decision,
            priority: rule.priority,
            source: rule.source.clone(),
            deny_message: rule.deny_message.clone(),
        }
    }

    /// gemini-cli's refusal: `Tool execution denied by policy.` and the rule's message.
    pub fn refusal(&self) -> String {
        match &self.deny_message {
            Some(m) => format!("Tool execution denied by policy. {m}"),
            None => "Tool execution denied by policy.".to_string(),
        }
    }
}

/// Every rule of a session, highest priority first.
#[derive(Debug, Clone, Default)]
pub struct PolicyRules {
    rules: Vec<PolicyRule>,
}

impl PolicyRules {
    /// The rules, sorted by priority (stable: among equals, the order given).
    pub fn new(mut rules: Vec<PolicyRule>) -> Self {
        rules.sort_by(|a, b| b.priority.total_cmp(&a.priority));
        PolicyRules { rules }
    }

    /// The rules in the order they are tried.
    pub fn rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The verdict of the highest-priority rule matching `call`; `None` when no rule
    /// matches, or when an `allow` does not hold for every command of a shell line
    /// (then the caller's own policy decides, as gemini-cli's lower tiers would).
    pub fn check(&self, call: &PolicyCall<'_>) -> Option<Verdict> {
        self.check_at(call, 0)
    }

    fn first_match(&self, call: &PolicyCall<'_>) -> Option<&PolicyRule> {
        let stringified = self
            .rules
            .iter()
            .any(|r| r.args_pattern.is_some())
            .then(|| stable_stringify(call.args));
        // The tool's legacy names, and a subagent's name for `invoke_agent` calls of
        // it, as gemini-cli tries them.
        let agent = match call.name {
            "invoke_agent" => call.args.get("agent_name").and_then(Value::as_str),
            _ => None,
        };
        let names: Vec<&str> = call.aliases.iter().copied().chain(agent).collect();
        self.rules.iter().find(|r| {
            r.matches(call, stringified.as_deref())
                || names
                    .iter()
                    .any(|&name| r.matches(&PolicyCall { name, ..*call }, stringified.as_deref()))
        })
    }

    fn check_at(&self, call: &PolicyCall<'_>, depth: usize) -> Option<Verdict> {
        let rule = self.first_match(call);
        let command = match call.name {
            SHELL_TOOL => call.args.get("command").and_then(Value::as_str),
            _ => None,
        };
        match (rule, command) {
            (Some(rule), Some(command)) if rule.decision != RuleDecision::Deny => {
                self.shell_verdict(call, command, rule, depth)
            }
            (Some(rule), _) => Some(Verdict::of(rule, rule.decision)),
            // No rule for the line: a command of it may still be denied or asked.
            (None, Some(command)) => {
                let line = shell_syntax::parse(command).filter(|l| !l.has_error)?;
                self.parts_verdict(call, command, &line, depth).0
            }
            (None, None) => None,
        }
    }

    /// An `allow` or `ask_user` of a shell line, checked command by command.
    fn shell_verdict(
        &self,
        call: &PolicyCall<'_>,
        command: &str,
        rule: &PolicyRule,
        depth: usize,
    ) -> Option<Verdict> {
        let line = match shell_syntax::parse(command) {
            Some(line) if !line.has_error => line,
            _ => {
                // A line that cannot be read: YOLO keeps an unrestricted allow,
                // refuses a restricted one; otherwise the user decides.
                let decision = match (call.mode, rule.decision) {
                    (ApprovalMode::Yolo, RuleDecision::Allow) if rule.args_pattern.is_some() => {
                        RuleDecision::Deny
                    }
                    (ApprovalMode::Yolo, d) => d,
                    _ => RuleDecision::AskUser,
                };
                return Some(Verdict::of(rule, decision));
            }
        };
        let mut verdict = Verdict::of(rule, rule.decision);
        let trusting = matches!(call.mode, ApprovalMode::AutoEdit | ApprovalMode::Yolo);
        if verdict.decision == RuleDecision::Allow
            && line.has_redirection
            && !rule.allow_redirection
            && !trusting
        {
            verdict.decision = RuleDecision::AskUser;
        }
        let (worst, undecided) = self.parts_verdict(call, command, &line, depth);
        match worst {
            Some(v) if v.decision == RuleDecision::Deny => Some(v),
            Some(v) if verdict.decision == RuleDecision::Allow => Some(v),
            // A command no rule allows: the line is not the rule's to allow.
            _ if undecided && verdict.decision == RuleDecision::Allow => None,
            _ => Some(verdict),
        }
    }

    /// The commands of a line (and the script of a `bash -c` wrapper) checked one by
    /// one: the first denied one's verdict, else the first asked one's; and whether a
    /// command matched no rule.
    fn parts_verdict(
        &self,
        call: &PolicyCall<'_>,
        command: &str,
        line: &shell_syntax::CommandLine,
        depth: usize,
    ) -> (Option<Verdict>, bool) {
        if depth > 2 {
            return (None, false);
        }
        let mut parts: Vec<String> = Vec::new();
        let stripped = shell_syntax::strip_shell_wrapper(command);
        if stripped != command {
            parts.push(stripped);
        }
        if line.commands.len() > 1 {
            parts.extend(line.commands.iter().map(|c| {
                std::iter::once(c.name.as_str())
                    .chain(c.args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ")
            }));
        }
        let (mut asked, mut undecided) = (None, false);
        for part in &parts {
            let args = serde_json::json!({ "command": part });
            let sub = PolicyCall {
                args: &args,
                ..*call
            };
            match self.check_at(&sub, depth + 1) {
                Some(v) if v.decision == RuleDecision::Deny => return (Some(v), undecided),
                Some(v) if v.decision == RuleDecision::AskUser => {
                    asked.get_or_insert(v);
                }
                Some(_) => {}
                None => undecided = true,
            }
        }
        (asked, undecided)
    }
}

#[cfg(test)]
#[path = "policy_rules_tests.rs"]
mod tests;
