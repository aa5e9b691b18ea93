//! One policy file's `[[rule]]` tables, checked as gemini-cli's schema checks them and
//! reported in its words (`formatPolicyError`); `[[safety_checker]]` tables are
//! accepted and not used.

use regex::Regex;
use toml::Value;

use crate::engine::policy_rules::{PolicyRule, RuleDecision, Tier, SHELL_TOOL};
use crate::engine::stable_json::{command_prefix_pattern, command_regex_pattern, is_safe_regex};
use crate::protocol::ApprovalMode;

/// gemini-cli's message for a file or rule that could not be used:
/// `[USER] Policy file error in f.toml:` then the message, details and suggestion.
pub(super) fn format_error(
    tier: Tier,
    file: &str,
    message: &str,
    details: Option<&str>,
    suggestion: Option<&str>,
) -> String {
    let mut out = format!(
        "[{}] Policy file error in {file}:\n  {message}",
        tier.name().to_uppercase()
    );
    if let Some(d) = details {
        out.push('\n');
        out.push_str(d);
    }
    if let Some(s) = suggestion {
        out.push_str("\n  Suggestion: ");
        out.push_str(s);
    }
    out
}

/// The rules of one file (`name` is its file name), and the errors of what was left
/// out. A file that is not TOML, or whose rules do not fit the schema, gives no rule.
pub(super) fn parse_file(text: &str, name: &str, tier: Tier) -> (Vec<PolicyRule>, Vec<String>) {
    let error = |message: &str, details: Option<&str>, suggestion: Option<&str>| {
        format_error(tier, name, message, details, suggestion)
    };
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            let details = e.to_string();
            return (
                Vec::new(),
                vec![error(
                    "TOML parsing failed",
                    Some(details.trim_end()),
                    Some("Check for syntax errors like missing quotes, brackets, or commas"),
                )],
            );
        }
    };
    let mut issues = Vec::new();
    let raw = match table.get("rule") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            issues.push(format!(
                "  - Field \"rule\": Expected array, received {}",
                kind(other)
            ));
            Vec::new()
        }
    };
    let mut specs = Vec::new();
    for (i, item) in raw.iter().enumerate() {
        match RuleSpec::read(item, i, &mut issues) {
            Some(spec) if issues.is_empty() => specs.push(spec),
            _ => {}
        }
    }
    if !issues.is_empty() {
        let details = format!("Invalid policy rule (rule #1):\n{}", issues.join("\n"));
        return (
            Vec::new(),
            vec![error(
                "Schema validation failed",
                Some(&details),
                Some("Ensure all required fields (decision, priority) are present with correct types"),
            )],
        );
    }
    let source = format!("{}: {name}", capitalised(tier.name()));
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        if let Some(problem) = spec.shell_syntax_problem(i) {
            errors.push(error("Invalid shell command syntax", Some(&problem), None));
        }
    }
    for (i, spec) in specs.iter().enumerate() {
        if spec.tool_names.iter().any(String::is_empty) {
            errors.push(error(
                "Invalid policy rule: toolName cannot be empty string",
                Some(&format!(
                    "Rule #{} contains an empty toolName string. Use \"*\" to match all tools.",
                    i + 1
                )),
                None,
            ));
        }
    }
    for spec in specs
        .iter()
        .filter(|s| !s.tool_names.iter().any(String::is_empty))
    {
        for pattern in spec.patterns() {
            let compiled = match &pattern {
                None => None,
                Some(p) => match compile(p) {
                    Ok(re) => Some(re),
                    Err((message, details, suggestion)) => {
                        errors.push(error(message, Some(&details), Some(suggestion)));
                        continue;
                    }
                },
            };
            for tool in &spec.tool_names {
                rules.push(spec.rule(tool, compiled.clone(), tier, &source));
            }
        }
    }
    (rules, errors)
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The pattern compiled, or gemini-cli's message, details and suggestion.
fn compile(pattern: &str) -> Result<Regex, (&'static str, String, &'static str)> {
    let re = Regex::new(pattern).map_err(|e| {
        (
            "Invalid regex pattern",
            format!("Pattern: {pattern}\nError: {e}"),
            "Check regex syntax for errors like unmatched brackets or invalid escape sequences",
        )
    })?;
    if !is_safe_regex(pattern) {
        return Err((
            "Unsafe regex pattern (potential ReDoS)",
            format!("Pattern: {pattern}"),
            "Avoid nested quantifiers or extremely long patterns",
        ));
    }
    Ok(re)
}

/// One `[[rule]]` table as written.
struct RuleSpec {
    tool_names: Vec<String>,
    tool_name_is_list: bool,
    mcp_name: Option<String>,
    args_pattern: Option<String>,
    command_prefix: Option<Vec<String>>,
    command_regex: Option<String>,
    decision: RuleDecision,
    priority: u32,
    modes: Vec<ApprovalMode>,
    interactive: Option<bool>,
    allow_redirection: bool,
    deny_message: Option<String>,
    tool_annotations: Vec<(String, serde_json::Value)>,
    subagent: Option<String>,
}

impl RuleSpec {
    /// Reads rule `i`, adding zod's issues (`  - Field "rule.0.decision": …`).
    fn read(item: &Value, i: usize, issues: &mut Vec<String>) -> Option<RuleSpec> {
        let mut issue = |field: &str, message: &str| {
            let path = if field.is_empty() {
                format!("rule.{i}")
            } else {
                format!("rule.{i}.{field}")
            };
            issues.push(format!("  - Field \"{path}\": {message}"));
        };
        let Some(t) = item.as_table() else {
            issue("", &format!("Expected object, received {}", kind(item)));
            return None;
        };
        let strings = |v: &Value| -> Option<Vec<String>> {
            match v {
                Value::String(s) => Some(vec![s.clone()]),
                Value::Array(a) => a.iter().map(|x| x.as_str().map(str::to_string)).collect(),
                _ => None,
            }
        };
        let tool_names = match t.get("toolName") {
            None => {
                issue("toolName", "Required");
                None
            }
            Some(v) => strings(v).or_else(|| {
                issue("toolName", "Invalid input");
                None
            }),
        };
        let mut string = |key: &str| match t.get(key) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                issue(key, &format!("Expected string, received {}", kind(v)));
                None
            }
        };
        let mcp_name = string("mcpName");
        let subagent = string("subagent");
        let args_pattern = string("argsPattern");
        let command_regex = string("commandRegex");
        let deny_message = string("denyMessage").or_else(|| string("deny_message"));
        let command_prefix = match t.get("commandPrefix") {
            None => None,
            Some(v) => strings(v).or_else(|| {
                issue("commandPrefix", "Invalid input");
                None
            }),
        };
        let decision = read_decision(t.get("decision"), &mut issue);
        let priority = read_priority(t.get("priority"), &mut issue);
        let modes = read_modes(t.get("modes"), &mut issue);
        let boolean = |key: &str| t.get(key).and_then(Value::as_bool);
        Some(RuleSpec {
            tool_name_is_list: matches!(t.get("toolName"), Some(Value::Array(_))),
            tool_names: tool_names?,
            mcp_name,
            args_pattern,
            command_prefix,
            command_regex,
            decision: decision?,
            priority: priority?,
            modes: modes?,
            interactive: boolean("interactive"),
            allow_redirection: boolean("allowRedirection")
                .or_else(|| boolean("allow_redirection"))
                .unwrap_or(false),
            deny_message,
            tool_annotations: annotations(t.get("toolAnnotations")),
            subagent,
        })
    }

    /// gemini-cli's check of `commandPrefix` / `commandRegex` (the rule still loads).
    fn shell_syntax_problem(&self, i: usize) -> Option<String> {
        let n = i + 1;
        if self.command_prefix.is_none() && self.command_regex.is_none() {
            return None;
        }
        if self.tool_name_is_list || self.tool_names.first().map(String::as_str) != Some(SHELL_TOOL)
        {
            let found = match self.tool_name_is_list {
                true => serde_json::to_string(&self.tool_names).unwrap_or_default(),
                false => serde_json::to_string(&self.tool_names[0]).unwrap_or_default(),
            };
            return Some(format!("Rule #{n}: commandPrefix and commandRegex can only be used with toolName = \"run_shell_command\"\n  Found: toolName = {found}\n  Fix: Set toolName = \"run_shell_command\" (not an array)"));
        }
        if self.args_pattern.is_some() {
            return Some(format!("Rule #{n}: cannot use both commandPrefix/commandRegex and argsPattern\n  These fields are mutually exclusive\n  Fix: Use either commandPrefix/commandRegex OR argsPattern, not both"));
        }
        if self.command_prefix.is_some() && self.command_regex.is_some() {
            return Some(format!("Rule #{n}: cannot use both commandPrefix and commandRegex\n  These fields are mutually exclusive\n  Fix: Use either commandPrefix OR commandRegex, not both"));
        }
        None
    }

    /// gemini-cli's `buildArgsPatterns`: one per prefix, else the regex, else the
    /// pattern (or none).
    fn patterns(&self) -> Vec<Option<String>> {
        if let Some(prefixes) = self.command_prefix.as_ref().filter(|p| !p.is_empty()) {
            return prefixes
                .iter()
                .map(|p| Some(command_prefix_pattern(p)))
                .collect();
        }
        if let Some(re) = self.command_regex.as_ref().filter(|r| !r.is_empty()) {
            return vec![Some(command_regex_pattern(re))];
        }
        vec![self.args_pattern.clone().filter(|p| !p.is_empty())]
    }

    fn rule(&self, tool: &str, pattern: Option<Regex>, tier: Tier, source: &str) -> PolicyRule {
        let name = match &self.mcp_name {
            Some(server) => qualified(server, tool),
            None => tool.to_string(),
        };
        let mut rule = PolicyRule::new(&name, self.decision, tier.priority(self.priority), source);
        rule.mcp_name = self.mcp_name.clone();
        rule.args_pattern = pattern;
        rule.modes = self.modes.clone();
        rule.interactive = self.interactive;
        rule.allow_redirection = self.allow_redirection;
        rule.deny_message = self.deny_message.clone();
        rule.tool_annotations = self.tool_annotations.clone();
        rule.subagent = self.subagent.clone();
        rule
    }
}

/// `toolAnnotations = { readOnlyHint = true }` as JSON values.
fn annotations(v: Option<&Value>) -> Vec<(String, serde_json::Value)> {
    let Some(Value::Table(t)) = v else {
        return Vec::new();
    };
    t.iter()
        .filter_map(|(k, v)| Some((k.clone(), serde_json::to_value(v).ok()?)))
        .collect()
}

/// gemini-cli's `formatMcpToolName`.
fn qualified(server: &str, tool: &str) -> String {
    match (server, tool) {
        ("*", "*") => "mcp_*".into(),
        ("*", t) => format!("mcp_*_{t}"),
        (s, "*") => format!("mcp_{s}_*"),
        (s, t) => format!("mcp_{s}_{t}"),
    }
}

fn read_decision(v: Option<&Value>, issue: &mut impl FnMut(&str, &str)) -> Option<RuleDecision> {
    match v {
        None => {
            issue("decision", "Required");
            None
        }
        Some(v) => {
            match v.as_str() {
                Some("allow") => Some(RuleDecision::Allow),
                Some("deny") => Some(RuleDecision::Deny),
                Some("ask_user") => Some(RuleDecision::AskUser),
                _ => {
                    issue("decision", &format!("Invalid enum value. Expected 'allow' | 'deny' | 'ask_user', received {}", received(v)));
                    None
                }
            }
        }
    }
}

fn read_priority(v: Option<&Value>, issue: &mut impl FnMut(&str, &str)) -> Option<u32> {
    match v {
        None => {
            issue("priority", "priority is required");
            None
        }
        Some(Value::Integer(p)) if *p < 0 => {
            issue("priority", "priority must be >= 0");
            None
        }
        Some(Value::Integer(p)) if *p > 999 => {
            issue("priority", "priority must be <= 999 to prevent tier overflow. Priorities >= 1000 would jump to the next tier.");
            None
        }
        Some(Value::Integer(p)) => u32::try_from(*p).ok(),
        Some(Value::Float(_)) => {
            issue("priority", "priority must be an integer");
            None
        }
        Some(_) => {
            issue("priority", "priority must be a number");
            None
        }
    }
}

fn read_modes(v: Option<&Value>, issue: &mut impl FnMut(&str, &str)) -> Option<Vec<ApprovalMode>> {
    let Some(v) = v else {
        return Some(Vec::new());
    };
    let Some(items) = v.as_array() else {
        issue("modes", &format!("Expected array, received {}", kind(v)));
        return None;
    };
    let mut modes = Vec::new();
    let mut ok = true;
    for (j, m) in items.iter().enumerate() {
        let mode = match m.as_str() {
            Some("default") => Some(ApprovalMode::Default),
            Some("autoEdit") => Some(ApprovalMode::AutoEdit),
            Some("yolo") => Some(ApprovalMode::Yolo),
            Some("plan") => Some(ApprovalMode::Plan),
            _ => None,
        };
        match mode {
            Some(mode) => modes.push(mode),
            None => {
                ok = false;
                issue(&format!("modes.{j}"), &format!("Invalid enum value. Expected 'default' | 'autoEdit' | 'yolo' | 'plan', received {}", received(m)));
            }
        }
    }
    ok.then_some(modes)
}

/// zod's name of a value's type.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Integer(_) | Value::Float(_) => "number",
        Value::Boolean(_) => "boolean",
        Value::Array(_) => "array",
        Value::Table(_) => "object",
        Value::Datetime(_) => "date",
    }
}

/// How zod shows a received enum value: `'text'`, or the value.
fn received(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}
