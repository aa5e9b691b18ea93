//! `tools/list` that survives one bad tool: rmcp reads the list as typed and rejects
//! all of it when one tool's `inputSchema` is not an object; then the list is read
//! again as plain JSON and each tool is kept or skipped on its own, with the reason.

use rmcp::model::{ClientRequest, CustomRequest, Tool};
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde_json::Value;

/// A tool the server offered that is not registered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    pub name: String,
    pub reason: String,
}

/// The server's usable tools, and the ones skipped.
#[derive(Debug, Default)]
pub struct ToolListing {
    pub tools: Vec<Tool>,
    pub skipped: Vec<SkippedTool>,
}

/// Lists every tool (all pages); a tool whose schema is unusable is skipped, not fatal.
pub async fn list_tools(peer: &Peer<RoleClient>) -> Result<ToolListing, String> {
    let typed_error = match peer.list_all_tools().await {
        Ok(tools) => return Ok(checked(tools)),
        Err(e) => e.to_string(),
    };
    list_tools_raw(peer)
        .await
        .map_err(|raw| format!("tools/list failed: {typed_error} ({raw})"))
}

/// Tools rmcp accepted whose schema still is not an object schema (`type` other than
/// `"object"`): the model's API would reject every request that declares them.
fn checked(tools: Vec<Tool>) -> ToolListing {
    let mut listing = ToolListing::default();
    for tool in tools {
        let schema = Value::Object((*tool.input_schema).clone());
        match schema_problem(&schema) {
            Some(reason) => listing.skipped.push(SkippedTool {
                name: tool.name.to_string(),
                reason,
            }),
            None => listing.tools.push(tool),
        }
    }
    listing
}

async fn list_tools_raw(peer: &Peer<RoleClient>) -> Result<ToolListing, String> {
    let mut listing = ToolListing::default();
    let mut cursor: Option<String> = None;
    // A server that pages forever is cut off.
    for _ in 0..1000 {
        let params = cursor.as_ref().map(|c| serde_json::json!({ "cursor": c }));
        let result = peer
            .send_request(ClientRequest::CustomRequest(CustomRequest::new(
                "tools/list",
                params,
            )))
            .await
            .map_err(|e| e.to_string())?;
        let page = serde_json::to_value(&result).map_err(|e| e.to_string())?;
        let Some(tools) = page.get("tools").and_then(Value::as_array) else {
            return Err("the result has no `tools` array".into());
        };
        for raw in tools {
            let mut raw = raw.clone();
            // gemini-cli declares a tool with no schema as taking no arguments.
            if let Some(map) = raw.as_object_mut() {
                map.entry("inputSchema")
                    .or_insert_with(|| serde_json::json!({"type": "object", "properties": {}}));
            }
            let name = raw
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("(unnamed)")
                .to_string();
            let schema = raw.get("inputSchema").cloned().unwrap_or(Value::Null);
            if let Some(reason) = schema_problem(&schema) {
                listing.skipped.push(SkippedTool { name, reason });
                continue;
            }
            match serde_json::from_value::<Tool>(raw) {
                Ok(tool) => listing.tools.push(tool),
                Err(e) => listing.skipped.push(SkippedTool {
                    name,
                    reason: format!("its definition is not valid: {e}"),
                }),
            }
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        if cursor.is_none() {
            return Ok(listing);
        }
    }
    Ok(listing)
}

/// Why a tool's `inputSchema` cannot be declared to the model, if it cannot.
pub fn schema_problem(schema: &Value) -> Option<String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    match schema {
        Value::Object(map) => match map.get("type") {
            None => None,
            Some(Value::String(t)) if t == "object" => None,
            Some(other) => Some(format!("its inputSchema has type {other}, not \"object\"")),
        },
        other => Some(format!(
            "its inputSchema is not an object (it is {})",
            kind(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_problems_name_what_was_found() {
        assert_eq!(schema_problem(&json!({"type": "object"})), None);
        assert_eq!(schema_problem(&json!({"properties": {}})), None);
        assert_eq!(
            schema_problem(&json!("x")).as_deref(),
            Some("its inputSchema is not an object (it is a string)")
        );
        assert_eq!(
            schema_problem(&json!({"type": "array"})).as_deref(),
            Some("its inputSchema has type \"array\", not \"object\"")
        );
    }
}
