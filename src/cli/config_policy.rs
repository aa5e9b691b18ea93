//! `troupe config`'s policy part: the policy files read, every rule in the order it is
//! tried, and what could not be loaded.

use serde_json::{json, Value};

use crate::engine::policy_rules::{PolicyRule, ALWAYS_ALLOW_PRIORITY};
use crate::settings::policy::LoadedPolicy;

/// How the rules combine with the rest of Troupe's approval policy, in one line.
const HOW: &str = "highest priority first; the first that matches decides before the approval mode; approval.allowed rules rank at 3.950";

/// The policy as `effective.policy` of `troupe config --json`.
pub(super) fn policy_json(policy: &LoadedPolicy) -> Value {
    let files: Vec<Value> = policy
        .files
        .iter()
        .map(|(tier, path)| json!({"tier": tier.name(), "path": path.display().to_string()}))
        .collect();
    let rules: Vec<Value> = policy.rules.rules().iter().map(rule_json).collect();
    json!({
        "files": files,
        "rules": rules,
        "errors": policy.errors,
        "allow_rules_priority": ALWAYS_ALLOW_PRIORITY,
        "order": HOW,
    })
}

fn rule_json(rule: &PolicyRule) -> Value {
    let modes: Vec<&str> = rule.modes.iter().map(|m| m.as_str()).collect();
    json!({
        "toolName": rule.tool_name,
        "mcpName": rule.mcp_name,
        "decision": rule.decision.as_str(),
        "priority": format!("{:.3}", rule.priority),
        "argsPattern": rule.args_pattern.as_ref().map(|r| r.as_str().to_string()),
        "modes": modes,
        "interactive": rule.interactive,
        "denyMessage": rule.deny_message,
        "source": rule.source,
    })
}

/// The `#   policy …` lines of `troupe config`'s listing.
pub(super) fn policy_text(policy: &Value) -> String {
    let list = |k: &str| policy[k].as_array().cloned().unwrap_or_default();
    let (files, rules, errors) = (list("files"), list("rules"), list("errors"));
    let mut out = format!("#   policy files: {}\n", files.len());
    for f in &files {
        out.push_str(&format!(
            "#     {} ({})\n",
            f["path"].as_str().unwrap_or(""),
            f["tier"].as_str().unwrap_or("")
        ));
    }
    out.push_str(&format!("#   policy rules: {} ({HOW})\n", rules.len()));
    for r in &rules {
        let mut what = r["toolName"].as_str().unwrap_or("").to_string();
        if let Some(p) = r["argsPattern"].as_str() {
            what.push_str(&format!(" argsPattern {p}"));
        }
        if let Some(modes) = r["modes"].as_array().filter(|m| !m.is_empty()) {
            let modes: Vec<&str> = modes.iter().filter_map(Value::as_str).collect();
            what.push_str(&format!(" modes {}", modes.join(",")));
        }
        if let Some(i) = r["interactive"].as_bool() {
            what.push_str(&format!(" interactive={i}"));
        }
        out.push_str(&format!(
            "#     {} {} {what}  ({})\n",
            r["priority"].as_str().unwrap_or(""),
            r["decision"].as_str().unwrap_or(""),
            r["source"].as_str().unwrap_or("")
        ));
    }
    for e in &errors {
        let text = e.as_str().unwrap_or("").replace('\n', "\n#       ");
        out.push_str(&format!("#   policy error: {text}\n"));
    }
    out
}
