//! Compact tool declarations (`tools.compact_declarations`, the small profile): the
//! tool's description cut to its first sentence, the parameters' descriptions left out
//! (their names say what they are), and the optional parameters left out (the tool still accepts them; the model is just not
//! told). The full declarations of the core tools are ~2,700 tokens, more than a small
//! model's server processes in a minute on a CPU; compacted they are a fraction of it.

use serde_json::Value;

use crate::protocol::content::FunctionDeclaration;

/// The longest description kept, in characters.
const MAX_DESCRIPTION: usize = 120;

/// `decl` with short descriptions; names, types and required lists are unchanged. The
/// optional parameters in `keep` stay (the tool's facts' `compact_keeps`): the tool's
/// own errors tell the model to set them (`replace`: "set 'allow_multiple' to true"),
/// and a small model asked to rename a variable repeated the failing call three times
/// without it.
pub fn compact(decl: &FunctionDeclaration, keep: &[&str]) -> FunctionDeclaration {
    let mut parameters = decl.parameters_json_schema.clone();
    drop_optional(keep, &mut parameters);
    drop_descriptions(&mut parameters);
    FunctionDeclaration {
        name: decl.name.clone(),
        description: first_sentence(&decl.description),
        parameters_json_schema: parameters,
    }
}

/// `decl` with an optional boolean parameter `name` added (described by
/// `description`), unless it has one: a parameter the tool accepts but declares only
/// when it is needed (`write_file`'s `append`, when a file is written in parts).
pub fn with_flag(decl: &FunctionDeclaration, name: &str, description: &str) -> FunctionDeclaration {
    let mut out = decl.clone();
    if let Some(Value::Object(properties)) = out.parameters_json_schema.get_mut("properties") {
        properties
            .entry(name.to_string())
            .or_insert_with(|| serde_json::json!({"type": "boolean", "description": description}));
    }
    out
}

/// Removes the top-level properties not listed in `required` (but those in `keep`).
fn drop_optional(keep: &[&str], schema: &mut Value) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.retain(|name, _| required.contains(name) || keep.contains(&name.as_str()));
    }
}

/// Takes the parameters' descriptions out: their names say what they are
/// (`file_path`, `old_string`, `command`), the tool's sentence and the short system
/// prompt's rules say how to use them, and a small model's first request must stay
/// under about 1,000 tokens.
fn drop_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("description").is_some_and(Value::is_string) {
                map.remove("description");
            }
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    // The parameters by name: a parameter may be called `description`.
                    ("properties", Value::Object(properties)) => {
                        properties.values_mut().for_each(drop_descriptions)
                    }
                    (_, other) => drop_descriptions(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_descriptions),
        _ => {}
    }
}

/// The first sentence (to the first ". " or line break), at most [`MAX_DESCRIPTION`]
/// characters.
pub fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let end = [text.find(". ").map(|i| i + 1), text.find('\n')]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(text.len());
    let sentence = text[..end].trim();
    if sentence.chars().count() <= MAX_DESCRIPTION {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(MAX_DESCRIPTION - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_flag_is_added_once_as_an_optional_boolean() {
        let decl = FunctionDeclaration {
            name: "write_file".into(),
            description: "Writes.".into(),
            parameters_json_schema: serde_json::json!({"type": "object",
                "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}),
        };
        let with = super::with_flag(&decl, "append", "Add to the end.");
        let schema = &with.parameters_json_schema;
        assert_eq!(schema["properties"]["append"]["type"], "boolean");
        assert_eq!(schema["required"], serde_json::json!(["file_path"]));
        assert_eq!(super::with_flag(&with, "append", "other"), with);
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn an_optional_parameter_the_tool_asks_for_is_kept() {
        let decl = FunctionDeclaration {
            name: "replace".into(),
            description: "Replaces text.".into(),
            parameters_json_schema: json!({"type": "object", "required": ["file_path"],
                "properties": {"file_path": {"type": "string"},
                               "allow_multiple": {"type": "boolean"},
                               "expected_replacements": {"type": "integer"}}}),
        };
        // `replace`'s facts: its errors ask for `allow_multiple`.
        let small = compact(&decl, &["allow_multiple"]);
        let kept: Vec<&String> = small.parameters_json_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(kept, ["file_path", "allow_multiple"]);
    }

    #[test]
    fn the_tools_description_is_cut_to_its_first_sentence_and_parameters_lose_theirs() {
        let decl = FunctionDeclaration {
            name: "grep_search".into(),
            description: "Searches files. Long details follow.\nMore.".into(),
            parameters_json_schema: json!({"type": "object", "required": ["pattern", "description"],
                "properties": {"pattern": {"type": "string", "description": "A regex. Examples: a, b."},
                               "description": {"type": "string", "description": "A property named description.\nMore."},
                               "include": {"type": "string", "description": "Optional."}}}),
        };
        let small = compact(&decl, &[]);
        assert_eq!(small.description, "Searches files.");
        assert_eq!(
            small.parameters_json_schema,
            json!({"type": "object", "required": ["pattern", "description"],
                "properties": {"pattern": {"type": "string"},
                               "description": {"type": "string"}}})
        );
        assert_eq!(
            first_sentence(&"x".repeat(500)).chars().count(),
            MAX_DESCRIPTION
        );
    }
}
