//! Troupe's events and requests in ACP's wire shapes (v1), built as JSON and read into
//! the `agent-client-protocol` schema types, and ACP prompts turned into Troupe input.

use serde_json::{json, Value};

use base64::Engine as _;

use crate::engine::stats::SessionStats;
use crate::mcp::McpHub;
use crate::protocol::content::Part;
use crate::protocol::{ApprovalDecision, ConfirmationDetails, ToolFactsTable, TurnOutcome};

/// ACP's tool kind for a call of `name`: the tool's `acp_kind` fact (a legacy name as
/// the tool it runs), `fetch` for gemini-cli's web search (a session it recorded), and
/// `other` for every other name (an MCP server's tools).
pub fn tool_kind(name: &str, facts: &ToolFactsTable) -> &'static str {
    match facts.resolve(name) {
        Some(f) => f.acp_kind.as_str(),
        None if name == "google_web_search" => "fetch",
        None => "other",
    }
}

/// The title of a call as the client shows it: an MCP tool's as gemini-cli titles it
/// (its `command` argument when it has one, else `tool (server MCP Server)`), any
/// other tool's from [`tool_title`]. `mcp` knows the session's MCP tools.
pub fn call_title(name: &str, args: &Value, mcp: Option<&McpHub>) -> String {
    match mcp.and_then(|hub| hub.registry.dynamic().get(name)) {
        Some(tool) => match args.get("command").and_then(Value::as_str) {
            Some(command) => command.to_string(),
            None => tool.display_name().to_string(),
        },
        None => tool_title(name, args),
    }
}

/// A short title for a call: the tool and its main argument.
pub fn tool_title(name: &str, args: &Value) -> String {
    for key in ["file_path", "dir_path", "command", "pattern", "url", "path"] {
        if let Some(v) = args.get(key).and_then(Value::as_str) {
            return format!("{name} {v}");
        }
    }
    name.to_string()
}

/// The files a call touches, as ACP locations (absolute inside `root`).
pub fn locations(args: &Value, root: &std::path::Path) -> Value {
    let mut out = Vec::new();
    for key in ["file_path", "dir_path", "path"] {
        if let Some(p) = args.get(key).and_then(Value::as_str) {
            let path = std::path::Path::new(p);
            let abs = if path.is_absolute() {
                path.to_path_buf()
            } else {
                root.join(path)
            };
            out.push(json!({"path": abs.display().to_string()}));
        }
    }
    Value::Array(out)
}

/// A diff content block.
pub fn diff(path: &str, old: Option<&str>, new: &str) -> Value {
    json!({"type": "diff", "path": path, "oldText": old, "newText": new})
}

/// The diff of a `write_file` call from its arguments alone (the file as written).
pub fn write_file_diff(args: &Value) -> Value {
    let arg = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("");
    diff(arg("file_path"), None, arg("content"))
}

/// A text content block of a tool call.
pub fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// The content shown for a confirmation.
pub fn confirmation_content(details: &ConfirmationDetails) -> Value {
    match details {
        ConfirmationDetails::Edit {
            file_path,
            original,
            proposed,
            ..
        } => json!([diff(
            file_path,
            (!original.is_empty()).then_some(original.as_str()),
            proposed
        )]),
        ConfirmationDetails::Exec { command, .. } => json!([text_content(command)]),
        ConfirmationDetails::Fetch { prompt, .. } | ConfirmationDetails::Info { prompt, .. } => {
            json!([text_content(prompt)])
        }
        ConfirmationDetails::Mcp { title, .. } => json!([text_content(title)]),
        ConfirmationDetails::ExitPlanMode {
            plan_path, plan, ..
        } => {
            json!([text_content(&format!("Plan: {plan_path}\n\n{plan}"))])
        }
        ConfirmationDetails::AskUser { questions, .. } => {
            let text: Vec<String> = questions
                .iter()
                .map(|q| match q.options.is_empty() {
                    true => format!("[{}] {}", q.header, q.question),
                    false => {
                        let options: Vec<String> = q
                            .options
                            .iter()
                            .map(|o| format!("- {}: {}", o.label, o.description))
                            .collect();
                        format!("[{}] {}\n{}", q.header, q.question, options.join("\n"))
                    }
                })
                .collect();
            json!([text_content(&text.join("\n\n"))])
        }
    }
}

/// The one question of an `ask_user` call the client can answer by its options: a
/// single `choice` (one option picked) or `yesno` question; its answers as labels.
fn answerable(details: &ConfirmationDetails) -> Option<Vec<String>> {
    let ConfirmationDetails::AskUser { questions, .. } = details else {
        return None;
    };
    match questions.as_slice() {
        [q] if q.kind == "yesno" => Some(vec!["Yes".into(), "No".into()]),
        [q] if q.kind == "choice" && !q.multi_select && !q.options.is_empty() => {
            Some(q.options.iter().map(|o| o.label.clone()).collect())
        }
        _ => None,
    }
}

/// gemini-cli's permission options, plus "Always allow" saved to the user's config
/// (`proceed_always_and_save`, gemini-cli's `enablePermanentToolApproval` option,
/// always offered as the REPL's menu does). MCP tools get gemini-cli's per-tool and
/// per-server session options.
pub fn permission_options(details: &ConfirmationDetails, saved_to: &str) -> Value {
    let always_saved = json!({"optionId": "proceed_always_and_save", "name": format!("Always allow (saved to {saved_to})"), "kind": "allow_always"});
    let once = json!({"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"});
    let reject = json!({"optionId": "cancel", "name": "Reject", "kind": "reject_once"});
    if let Some(labels) = answerable(details) {
        let mut options: Vec<Value> = labels
            .iter()
            .enumerate()
            .map(|(i, label)| json!({"optionId": format!("answer_{i}"), "name": label, "kind": "allow_once"}))
            .collect();
        options.push(reject);
        return Value::Array(options);
    }
    if let ConfirmationDetails::AskUser { .. } | ConfirmationDetails::ExitPlanMode { .. } = details
    {
        // gemini-cli's options for these: Allow and Reject only.
        return json!([once, reject]);
    }
    if let ConfirmationDetails::Mcp { .. } = details {
        return json!([
            {"optionId": "proceed_always_server", "name": "Allow all server tools for this session", "kind": "allow_always"},
            {"optionId": "proceed_always_tool", "name": "Allow tool for this session", "kind": "allow_always"},
            always_saved,
            once,
            reject,
        ]);
    }
    json!([
        {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
        always_saved,
        once,
        reject,
    ])
}

/// The client's answer to the permission request of `details`: an `ask_user` option
/// picked is its answer, an approved plan is approved in the default mode (gemini-cli
/// asks ACP clients nothing more); anything else as [`decision`] reads it.
pub fn decision_for(details: &ConfirmationDetails, outcome: &Value) -> ApprovalDecision {
    let selected = outcome.pointer("/outcome/optionId").and_then(Value::as_str);
    let picked = selected
        .and_then(|id| id.strip_prefix("answer_"))
        .and_then(|i| i.parse::<usize>().ok());
    if let (Some(labels), Some(i)) = (answerable(details), picked) {
        if let Some(label) = labels.get(i) {
            return ApprovalDecision::Answered {
                payload: json!({"answers": {"0": label}}),
            };
        }
    }
    let decided = decision(outcome);
    match (details, &decided) {
        (ConfirmationDetails::ExitPlanMode { .. }, ApprovalDecision::ProceedOnce) => {
            ApprovalDecision::Answered {
                payload: json!({"approved": true, "approvalMode": "default"}),
            }
        }
        _ => decided,
    }
}

/// The client's answer to a permission request as a Troupe decision.
pub fn decision(outcome: &Value) -> ApprovalDecision {
    let selected = outcome.pointer("/outcome/optionId").and_then(Value::as_str);
    match (
        outcome.pointer("/outcome/outcome").and_then(Value::as_str),
        selected,
    ) {
        (Some("selected"), Some("proceed_once")) => ApprovalDecision::ProceedOnce,
        (Some("selected"), Some("proceed_always" | "proceed_always_tool")) => {
            ApprovalDecision::ProceedAlways
        }
        (Some("selected"), Some("proceed_always_server")) => ApprovalDecision::ProceedAlwaysServer,
        (Some("selected"), Some("proceed_always_and_save")) => {
            ApprovalDecision::ProceedAlwaysAndSave
        }
        _ => ApprovalDecision::Cancel { feedback: None },
    }
}

/// ACP's stop reason for a turn outcome; a failure is an error instead.
pub fn stop_reason(outcome: &TurnOutcome) -> Result<&'static str, String> {
    match outcome {
        TurnOutcome::Completed { .. } => Ok("end_turn"),
        TurnOutcome::Cancelled => Ok("cancelled"),
        TurnOutcome::MaxTurns { .. } => Ok("max_turn_requests"),
        TurnOutcome::Failed { message } | TurnOutcome::LoopDetected { message } => {
            Err(message.clone())
        }
    }
}

/// The `usage` of a `session/prompt` answer: the tokens of the turn's model requests
/// (the session's own, not its subagents'); `None` when no request counted any (a
/// slash command, or a server that reports no usage).
pub fn usage(stats: &SessionStats) -> Option<Value> {
    let total = stats
        .total_tokens
        .max(stats.prompt_tokens + stats.output_tokens);
    if total == 0 {
        return None;
    }
    let mut usage = json!({
        "totalTokens": total,
        "inputTokens": stats.prompt_tokens,
        "outputTokens": stats.output_tokens,
    });
    if stats.thought_tokens > 0 {
        usage["thoughtTokens"] = json!(stats.thought_tokens);
    }
    if stats.cached_tokens > 0 {
        usage["cachedReadTokens"] = json!(stats.cached_tokens);
    }
    Some(usage)
}

/// A prompt's content blocks as the text of one user input: text as is, resource
/// links as `@uri`, embedded resources as `@uri` plus their text (as gemini-cli).
pub fn prompt_text(blocks: &[Value]) -> String {
    let mut text = String::new();
    let mut referenced = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("resource_link") => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
                text.push_str(&format!("@{}", uri.trim_start_matches("file://")));
            }
            Some("resource") => {
                let res = &block["resource"];
                let uri = res.get("uri").and_then(Value::as_str).unwrap_or("");
                let uri = uri.trim_start_matches("file://");
                text.push_str(&format!("@{uri}"));
                if let Some(body) = res.get("text").and_then(Value::as_str) {
                    referenced.push(format!("Content from @{uri}:\n{body}"));
                }
            }
            // Inline media travel as their own parts (see [`prompt_media`]).
            Some("image" | "audio") => {}
            Some(other) => text.push_str(&format!("[{other} content is not supported]")),
            None => {}
        }
    }
    if !referenced.is_empty() {
        text.push_str("\n--- Content from referenced context ---\n");
        text.push_str(&referenced.join("\n"));
    }
    text
}

/// A prompt's `image` and `audio` blocks as inline-data parts for the model (as
/// gemini-cli: `{inlineData: {mimeType, data}}`); an `audio` block when the model
/// cannot take audio, or a block without data or mime type, is an error naming it.
pub fn prompt_media(blocks: &[Value], audio: bool) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "image" && kind != "audio" {
            continue;
        }
        if kind == "audio" && !audio {
            return Err(format!(
                "prompt block {i}: audio is not supported by this model provider (the agent does not advertise promptCapabilities.audio)"
            ));
        }
        let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("");
        let data = block.get("data").and_then(Value::as_str).unwrap_or("");
        if mime.is_empty() || data.is_empty() {
            return Err(format!(
                "prompt block {i}: an {kind} block needs both `mimeType` and base64 `data`"
            ));
        }
        if !mime.starts_with(&format!("{kind}/")) {
            return Err(format!(
                "prompt block {i}: mimeType `{mime}` is not an {kind} type"
            ));
        }
        if base64::engine::general_purpose::STANDARD
            .decode(data)
            .is_err()
        {
            return Err(format!("prompt block {i}: `data` is not valid base64"));
        }
        parts.push(Part::inline(mime, data));
    }
    Ok(parts)
}

/// The plan a `write_todos` call sets.
pub fn plan_entries(args: &Value) -> Value {
    let entries: Vec<Value> = args
        .get("todos")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let status = match t.get("status").and_then(Value::as_str) {
                Some("in_progress") => "in_progress",
                Some("completed") | Some("cancelled") => "completed",
                _ => "pending",
            };
            json!({
                "content": t.get("description").and_then(Value::as_str).unwrap_or(""),
                "priority": "medium",
                "status": status,
            })
        })
        .collect();
    Value::Array(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_the_turns_tokens_or_is_left_out() {
        assert_eq!(usage(&SessionStats::default()), None);
        let mut stats = SessionStats::default();
        stats.prompt_tokens = 200;
        stats.output_tokens = 20;
        stats.total_tokens = 220;
        stats.cached_tokens = 50;
        assert_eq!(
            usage(&stats),
            Some(
                json!({"totalTokens": 220, "inputTokens": 200, "outputTokens": 20, "cachedReadTokens": 50})
            )
        );
    }

    #[test]
    fn prompts_and_decisions() {
        let blocks = vec![
            json!({"type": "text", "text": "look at "}),
            json!({"type": "resource", "resource": {"uri": "file:///w/a.txt", "text": "AAA"}}),
        ];
        assert_eq!(
            prompt_text(&blocks),
            "look at @/w/a.txt\n--- Content from referenced context ---\nContent from @/w/a.txt:\nAAA"
        );
        assert_eq!(
            decision(&json!({"outcome": {"outcome": "selected", "optionId": "proceed_once"}})),
            ApprovalDecision::ProceedOnce
        );
        assert_eq!(
            decision(&json!({"outcome": {"outcome": "cancelled"}})),
            ApprovalDecision::Cancel { feedback: None }
        );
    }
}
