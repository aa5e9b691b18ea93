//! gemini-cli's MCP conventions: tool names (`mcp_<server>_<tool>`, sanitised and
//! shortened), the declared schema, and a `CallToolResult` turned into what the model
//! and the user see.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{json, Value};

use crate::protocol::content::Part;
use crate::protocol::{LlmContent, ToolErrorKind, ToolOutput};

/// `mcp_<server>_<tool>` with every character outside `[A-Za-z0-9_.:-]` replaced by
/// `_`; over 63 characters, the first 30 + `...` + the last 30.
pub fn tool_name(server: &str, tool: &str) -> String {
    let raw = format!("mcp_{server}_{tool}");
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() > 63 {
        format!("{}...{}", &clean[..30], &clean[clean.len() - 30..])
    } else {
        clean
    }
}

/// The schema declared to the model: the server's `inputSchema` verbatim, with
/// `type: [T, "null"]` rewritten to `type: T, nullable: true`, plus `wait_for_previous`.
/// A schema that is not an object becomes an empty object schema.
pub fn declared_schema(input: &Value) -> Value {
    let mut schema = match input {
        Value::Object(_) => input.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    rewrite_nullable(&mut schema);
    // Added as gemini-cli's base tool class adds it (MCP tools are built on it).
    crate::tools::wait_for_previous::declared(schema)
}

fn rewrite_nullable(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type") {
                let non_null: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                if non_null.len() == 1 && types.len() == 2 {
                    map.insert("type".into(), non_null[0].clone());
                    map.insert("nullable".into(), Value::Bool(true));
                }
            }
            for (_, child) in map.iter_mut() {
                rewrite_nullable(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_nullable),
        _ => {}
    }
}

/// Text from a server, marked as untrusted for the model; an inner closing tag is
/// escaped so the text cannot end the block early.
pub fn untrusted(text: &str) -> String {
    let inner = text.replace("</untrusted_context>", "&lt;/untrusted_context&gt;");
    format!("<untrusted_context>\n{inner}\n</untrusted_context>")
}

/// The most content items one result may hold (each becomes a part of the request).
pub const MAX_CONTENT_ITEMS: usize = 10_000;

/// A finished `tools/call` as the tool's output. `tool` is the server's own name of the
/// tool, `args` the arguments sent.
pub fn result_to_output(tool: &str, args: &Value, result: &CallToolResult) -> ToolOutput {
    if result.is_error == Some(true) {
        let call = json!({"name": tool, "args": args});
        let response = json!([{"functionResponse": {"name": tool, "response": result}}]);
        return ToolOutput::error(
            ToolErrorKind::ExecutionFailed,
            format!("MCP tool '{tool}' reported tool error for function call: {call} with response: {response}"),
            format!("Error: MCP tool '{tool}' reported an error."),
        );
    }
    if result.content.len() > MAX_CONTENT_ITEMS {
        return ToolOutput::error(
            ToolErrorKind::ExecutionFailed,
            format!(
                "MCP tool '{tool}' returned {} content items, over the bound of {MAX_CONTENT_ITEMS}; the result was refused.",
                result.content.len()
            ),
            format!("Error: MCP tool '{tool}' returned too many content items."),
        );
    }
    let mut parts: Vec<Part> = Vec::new();
    let mut display: Vec<String> = Vec::new();
    for block in &result.content {
        convert_block(tool, block, &mut parts, &mut display);
    }
    let has_text = parts.iter().any(|p| p.text.is_some());
    match &result.structured_content {
        // Beyond gemini-cli (which drops it): structured content reaches the model
        // when there is no text to carry the answer.
        Some(structured) if !has_text => {
            let text = structured.to_string();
            parts.push(Part::text(untrusted(&text)));
            display.push(text);
        }
        _ => {}
    }
    if parts.is_empty() {
        return ToolOutput::error(
            ToolErrorKind::ExecutionFailed,
            format!(
                "[Error: Could not parse tool response] MCP tool '{tool}' returned no content."
            ),
            format!("Error: MCP tool '{tool}' returned no content."),
        );
    }
    ToolOutput {
        llm_content: LlmContent::Parts(parts),
        display: display.join("\n"),
        error: None,
        data: None,
    }
}

fn convert_block(
    tool: &str,
    block: &ContentBlock,
    parts: &mut Vec<Part>,
    display: &mut Vec<String>,
) {
    match block {
        ContentBlock::Text(t) => {
            parts.push(Part::text(untrusted(&t.text)));
            display.push(t.text.clone());
        }
        ContentBlock::Image(i) => {
            parts.push(Part::text(format!(
                "[Tool '{tool}' provided the following image data with mime-type: {}]",
                i.mime_type
            )));
            parts.push(Part::inline(i.mime_type.clone(), i.data.clone()));
            display.push(format!("[Image: {}]", i.mime_type));
        }
        ContentBlock::Audio(a) => {
            parts.push(Part::text(format!(
                "[Tool '{tool}' provided the following audio data with mime-type: {}]",
                a.mime_type
            )));
            parts.push(Part::inline(a.mime_type.clone(), a.data.clone()));
            display.push(format!("[Audio: {}]", a.mime_type));
        }
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { text, .. } => {
                parts.push(Part::text(untrusted(text)));
                display.push(text.clone());
            }
            ResourceContents::BlobResourceContents {
                blob, mime_type, ..
            } => {
                let mime = mime_type
                    .clone()
                    .unwrap_or_else(|| "application/octet-stream".into());
                parts.push(Part::text(format!(
                    "[Tool '{tool}' provided the following embedded resource with mime-type: {mime}]"
                )));
                parts.push(Part::inline(mime.clone(), blob.clone()));
                display.push(format!("[Embedded Resource: {mime}]"));
            }
            #[allow(unreachable_patterns)]
            _ => display.push("[Unknown content type: resource]".into()),
        },
        ContentBlock::ResourceLink(l) => {
            let label = l.title.clone().unwrap_or_else(|| l.name.clone());
            parts.push(Part::text(format!("Resource Link: {label} at {}", l.uri)));
            display.push(format!("[Link to {label}: {}]", l.uri));
        }
        #[allow(unreachable_patterns)]
        _ => display.push("[Unknown content type]".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_shortened() {
        assert_eq!(tool_name("everything", "get-sum"), "mcp_everything_get-sum");
        assert_eq!(tool_name("my server", "a/b"), "mcp_my_server_a_b");
        let long = tool_name("s", &"x".repeat(80));
        assert_eq!(long.len(), 63);
        assert!(long.starts_with("mcp_s_") && long.contains("..."));
    }

    #[test]
    fn nullable_types_are_rewritten() {
        let s = declared_schema(
            &json!({"type": "object", "properties": {"n": {"type": ["string", "null"]}}}),
        );
        assert_eq!(
            s["properties"]["n"],
            json!({"type": "string", "nullable": true})
        );
        assert_eq!(s["properties"]["wait_for_previous"]["type"], "boolean");
        assert_eq!(declared_schema(&json!("odd"))["type"], "object");
    }

    #[test]
    fn untrusted_text_cannot_close_its_block() {
        assert_eq!(
            untrusted("a</untrusted_context>b"),
            "<untrusted_context>\na&lt;/untrusted_context&gt;b\n</untrusted_context>"
        );
    }
}
