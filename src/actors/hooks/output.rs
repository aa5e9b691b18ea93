//! What a hook said: its stdout (or stderr) read as JSON or plain text with gemini-cli
//! 0.61's exit-code rules, and several hooks' answers merged into one verdict.

use serde_json::{Map, Value};

pub use crate::protocol::hooks::{Decision, HookVerdict};

/// One hook's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookOutput {
    /// `continue: false`: the agent stops, with this reason.
    pub stop: Option<String>,
    pub decision: Decision,
    pub reason: Option<String>,
    pub system_message: Option<String>,
    /// `hookSpecificOutput` (plus the top-level fields it may hold).
    pub specific: Map<String, Value>,
}

/// How many characters of a hook's text are kept in messages to the user and model.
pub const MAX_TEXT_CHARS: usize = 4000;

fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_TEXT_CHARS).collect();
    format!("{kept}… [hook output truncated]")
}

/// Reads a finished hook's output: `stdout.trim()`, or `stderr.trim()` when stdout is
/// empty. A JSON object is used as is whatever the exit code; other text becomes
/// allow + systemMessage (exit 0), allow + "Warning: …" (exit 1), or deny (other).
pub fn parse(stdout: &str, stderr: &str, exit_code: i32) -> HookOutput {
    let text = match stdout.trim() {
        "" => stderr.trim(),
        t => t,
    };
    if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text) {
        return from_json(obj);
    }
    let text = clip(text);
    match exit_code {
        0 => HookOutput {
            system_message: (!text.is_empty()).then_some(text),
            ..HookOutput::default()
        },
        1 => HookOutput {
            system_message: Some(format!("Warning: {text}")),
            ..HookOutput::default()
        },
        _ => HookOutput {
            decision: Decision::Deny,
            reason: Some(text),
            ..HookOutput::default()
        },
    }
}

fn from_json(obj: Map<String, Value>) -> HookOutput {
    let str_field = |k: &str| obj.get(k).and_then(Value::as_str).map(clip);
    let decision = match obj.get("decision").and_then(Value::as_str) {
        Some("deny" | "block") => Decision::Deny,
        Some("ask") => Decision::Ask,
        _ => Decision::Allow,
    };
    let stop = (obj.get("continue") == Some(&Value::Bool(false))).then(|| {
        str_field("stopReason")
            .or_else(|| str_field("reason"))
            .unwrap_or_default()
    });
    let mut specific = obj
        .get("hookSpecificOutput")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(text) = specific.get("additionalContext").and_then(Value::as_str) {
        let clipped = clip(text);
        specific.insert("additionalContext".into(), Value::String(clipped));
    }
    HookOutput {
        stop,
        decision,
        reason: str_field("reason"),
        system_message: str_field("systemMessage"),
        specific,
    }
}

/// Escapes what could close a `<hook_context>` tag early.
pub fn escape_context(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;")
}

/// Merges answers in hook order: any stop stops; deny beats ask beats allow; texts are
/// joined with `\n`; for the structured outputs the last hook that set one wins.
pub fn merge(outputs: &[HookOutput]) -> HookVerdict {
    let mut verdict = HookVerdict::default();
    let mut reasons: Vec<(Decision, String)> = Vec::new();
    let mut contexts = Vec::new();
    for out in outputs {
        if let Some(stop) = &out.stop {
            verdict.stop = Some(match verdict.stop.take() {
                Some(prev) if !prev.is_empty() => format!("{prev}\n{stop}"),
                _ => stop.clone(),
            });
        }
        verdict.decision = verdict.decision.max(out.decision);
        if let Some(r) = &out.reason {
            reasons.push((out.decision, r.clone()));
        }
        if let Some(m) = &out.system_message {
            verdict.system_messages.push(m.clone());
        }
        if let Some(c) = out
            .specific
            .get("additionalContext")
            .and_then(Value::as_str)
        {
            contexts.push(escape_context(c));
        }
        if let Some(v) = out.specific.get("tool_input").filter(|v| v.is_object()) {
            verdict.tool_input = Some(v.clone());
        }
        if let Some(v) = out.specific.get("llm_response").filter(|v| v.is_object()) {
            verdict.llm_response = Some(v.clone());
        }
        if let Some(v) = out.specific.get("llm_request").filter(|v| v.is_object()) {
            verdict.llm_request = Some(v.clone());
        }
        if let Some(v) = out.specific.get("toolConfig").filter(|v| v.is_object()) {
            verdict.tool_config = Some(v.clone());
        }
        if out.specific.get("clearContext") == Some(&Value::Bool(true)) {
            verdict.clear_context = true;
        }
    }
    let strongest: Vec<String> = reasons
        .into_iter()
        .filter(|(d, _)| *d == verdict.decision)
        .map(|(_, r)| r)
        .collect();
    verdict.reason = (!strongest.is_empty()).then(|| strongest.join("\n"));
    verdict.additional_context = (!contexts.is_empty()).then(|| contexts.join("\n"));
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_streams() {
        assert_eq!(parse("", "", 0), HookOutput::default());
        assert_eq!(parse("hi\n", "", 0).system_message.as_deref(), Some("hi"));
        assert_eq!(
            parse("", "careful", 1).system_message.as_deref(),
            Some("Warning: careful")
        );
        let deny = parse("", "no writes allowed", 2);
        assert_eq!(deny.decision, Decision::Deny);
        assert_eq!(deny.reason.as_deref(), Some("no writes allowed"));
        let json = parse(r#"{"decision":"block","reason":"r"}"#, "", 7);
        assert_eq!(json.decision, Decision::Deny);
        assert_eq!(
            parse(r#"{"continue":false,"stopReason":"s"}"#, "", 0)
                .stop
                .as_deref(),
            Some("s")
        );
        let garbage = parse("\u{1}{not json", "", 3);
        assert_eq!(garbage.decision, Decision::Deny);
        let huge = "x".repeat(MAX_TEXT_CHARS * 3);
        assert!(parse(&huge, "", 0).system_message.unwrap().len() < MAX_TEXT_CHARS + 100);
    }

    #[test]
    fn merging_prefers_deny_and_joins_texts() {
        let a = parse(
            r#"{"decision":"ask","reason":"a","hookSpecificOutput":{"additionalContext":"<x>"}}"#,
            "",
            0,
        );
        let b = parse(
            r#"{"decision":"deny","reason":"b","hookSpecificOutput":{"additionalContext":"y"}}"#,
            "",
            0,
        );
        let v = merge(&[a, b]);
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.reason.as_deref(), Some("b"));
        assert_eq!(v.additional_context.as_deref(), Some("&lt;x&gt;\ny"));
    }
}
