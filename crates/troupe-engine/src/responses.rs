//! How a tool's result becomes the functionResponse the model reads (gemini-cli's
//! `convertToFunctionResponse` and the error/cancel shapes of its scheduler).

use serde_json::{json, Value};

use crate::protocol::content::{FunctionResponse, Part};
use crate::protocol::LlmContent;

/// `[functionResponse {output}, sibling parts…]` for a successful call. Images and
/// PDFs are nested in the response for Gemini 3 models, siblings otherwise.
pub fn success_parts(name: &str, id: &str, content: LlmContent, model: &str) -> Vec<Part> {
    let (output, binary) = match content {
        // The text moves into the response: a file's content is not copied here.
        LlmContent::Text(text) => (Some(text), Vec::new()),
        LlmContent::Parts(parts) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
            let binary: Vec<Part> = parts
                .iter()
                .filter(|p| p.inline_data.is_some() || p.file_data.is_some())
                .cloned()
                .collect();
            let output = (!texts.is_empty()).then(|| texts.join("\n"));
            (output, binary)
        }
    };
    let response = match (output, binary.len()) {
        (Some(text), _) => {
            let mut map = serde_json::Map::with_capacity(1);
            map.insert("output".into(), Value::String(text));
            Value::Object(map)
        }
        (None, 0) => json!({}),
        (None, n) => json!({ "output": format!("Binary content provided ({n} item(s)).") }),
    };
    let nested = model.starts_with("gemini-3-");
    let mut fr = FunctionResponse {
        id: Some(id.to_string()),
        name: name.to_string(),
        response,
        parts: None,
    };
    if nested && !binary.is_empty() {
        fr.parts = Some(binary);
        return vec![Part::function_response(fr)];
    }
    let mut out = vec![Part::function_response(fr)];
    out.extend(binary);
    out
}

/// `{error: message}`.
pub fn error_parts(name: &str, id: &str, message: &str) -> Vec<Part> {
    vec![Part::function_response(FunctionResponse {
        id: Some(id.to_string()),
        name: name.to_string(),
        response: json!({ "error": message }),
        parts: None,
    })]
}

/// The parts answering one call, given to another call's id (an identical call of
/// the same model turn that shares the answer). Sibling parts are shared, not copied.
pub fn with_call_id(parts: &[Part], id: &str) -> Vec<Part> {
    parts
        .iter()
        .map(|part| {
            let mut part = part.clone();
            if let Some(fr) = part.function_response.as_mut() {
                std::sync::Arc::make_mut(fr).id = Some(id.to_string());
            }
            part
        })
        .collect()
}

/// Adds `note` to a functionResponse's `error` (after a blank line); a response
/// without one gets `note` as its `error`.
pub fn add_error_note(part: &mut Part, note: &str) {
    let Some(fr) = part.function_response.as_mut() else {
        return;
    };
    let response = &mut std::sync::Arc::make_mut(fr).response;
    let text = match response.get("error").and_then(Value::as_str) {
        Some(error) => format!("{error}\n\n{note}"),
        None => note.to_string(),
    };
    if let Some(map) = response.as_object_mut() {
        map.insert("error".into(), Value::String(text));
    }
}

/// Appends `note` to the `output` of a successful response part (no-op for others).
pub fn add_output_note(part: &mut Part, note: &str) {
    let Some(fr) = part.function_response.as_mut() else {
        return;
    };
    let response = &mut std::sync::Arc::make_mut(fr).response;
    let Some(output) = response.get("output").and_then(Value::as_str) else {
        return;
    };
    let text = format!("{output}\n\n{note}");
    if let Some(map) = response.as_object_mut() {
        map.insert("output".into(), Value::String(text));
    }
}

/// A call cancelled while it ran: its partial output, if any, and the cancel marker.
pub fn cancelled_parts(
    name: &str,
    id: &str,
    partial: Option<&LlmContent>,
    reason: &str,
) -> Vec<Part> {
    let marker = format!("[Operation Cancelled] {reason}");
    let mut response = serde_json::Map::new();
    if let Some(content) = partial {
        let parts = success_parts(name, id, content.clone(), "");
        if let Some(out) = parts
            .first()
            .and_then(|p| p.function_response.as_deref())
            .and_then(|fr| fr.response.get("output"))
            .cloned()
        {
            response.insert("output".into(), out);
        }
    }
    response.insert("error".into(), Value::String(marker));
    vec![Part::function_response(FunctionResponse {
        id: Some(id.to_string()),
        name: name.to_string(),
        response: Value::Object(response),
        parts: None,
    })]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_and_ids_of_shared_answers() {
        let mut parts = error_parts("read_file", "c1", "File not found");
        add_error_note(&mut parts[0], "try something else");
        let copy = with_call_id(&parts, "c2");
        let fr = |p: &[Part]| serde_json::to_value(&p[0]).unwrap()["functionResponse"].clone();
        assert_eq!(
            fr(&parts)["response"]["error"],
            "File not found\n\ntry something else"
        );
        assert_eq!(fr(&parts)["id"], "c1");
        assert_eq!(fr(&copy)["id"], "c2");
        assert_eq!(fr(&copy)["response"], fr(&parts)["response"]);
    }

    #[test]
    fn shapes() {
        let ok = success_parts(
            "read_file",
            "c1",
            LlmContent::Text("hi".into()),
            "gemini-2.5-pro",
        );
        assert_eq!(
            serde_json::to_value(&ok[0]).unwrap(),
            json!({"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "hi"}}})
        );
        let img = LlmContent::Parts(vec![Part::inline("image/png", "AAAA")]);
        let parts = success_parts("read_file", "c1", img.clone(), "gemini-2.5-pro");
        assert_eq!(parts.len(), 2);
        assert_eq!(
            parts[0].function_response.as_deref().unwrap().response["output"],
            "Binary content provided (1 item(s))."
        );
        let parts = success_parts("read_file", "c1", img, "gemini-3-pro-preview");
        assert_eq!(parts.len(), 1);
        let c = cancelled_parts(
            "x",
            "c",
            Some(&LlmContent::Text("partial".into())),
            "User cancelled tool execution.",
        );
        assert_eq!(
            c[0].function_response.as_deref().unwrap().response,
            json!({"output": "partial", "error": "[Operation Cancelled] User cancelled tool execution."})
        );
    }
}
