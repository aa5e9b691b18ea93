//! `wait_for_previous`: the optional boolean by which the model asks that a call start
//! only after every earlier call of its answer has finished (gemini-cli 0.61's
//! parameter). gemini-cli adds it to the declarations its base tool class builds (the
//! tools without a model-specific declaration of their own: `update_topic`,
//! `complete_task`, the background-process tools, subagents, MCP tools) and honours it
//! on every call, declared or not; Troupe does the same ([`Tool::declares_wait_for_previous`](super::Tool::declares_wait_for_previous)).
//! The argument is taken out of a call's arguments before the tool's own validation, so
//! no tool rejects it; the Scheduler reads it from the call as the model made it.

use std::borrow::Cow;

use serde_json::{json, Value};

/// The parameter's name, as gemini-cli spells it.
pub const PARAM: &str = "wait_for_previous";

/// Whether the call asks to wait for every earlier call of its answer (`true` only;
/// `false`, absent or not a boolean: it runs with its neighbours, as in gemini-cli).
pub fn requested(args: &Value) -> bool {
    args.get(PARAM).and_then(Value::as_bool) == Some(true)
}

/// `schema` with the parameter added as the last property, when it is an object
/// schema whose `properties` (if any) is an object; any other schema as it is
/// (gemini-cli's rule for what it can extend).
pub fn declared(mut schema: Value) -> Value {
    let Some(map) = schema.as_object_mut() else {
        return schema;
    };
    if map.get("type").and_then(Value::as_str) != Some("object") {
        return schema;
    }
    let properties = map.entry("properties").or_insert_with(|| json!({}));
    if let Some(properties) = properties.as_object_mut() {
        properties.insert(
            PARAM.into(),
            json!({"type": "boolean", "description": "Set to true to wait for all previously requested tools in this turn to complete before this one starts. Set to false (or omit) to run in parallel."}),
        );
    }
    schema
}

/// The arguments without the parameter (copied only when it is there), for the
/// tool's own validation.
pub fn stripped(args: &Value) -> Cow<'_, Value> {
    match args.as_object() {
        Some(map) if map.contains_key(PARAM) => {
            let mut map = map.clone();
            map.remove(PARAM);
            Cow::Owned(Value::Object(map))
        }
        _ => Cow::Borrowed(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_last_to_object_schemas_only() {
        let s = declared(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        let keys: Vec<&String> = s["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", PARAM]);
        assert_eq!(s["properties"][PARAM]["type"], "boolean");
        let empty = declared(json!({"type": "object"}));
        assert_eq!(empty["properties"][PARAM]["type"], "boolean");
        let odd = json!({"type": "object", "properties": []});
        assert_eq!(declared(odd.clone()), odd);
        let string = json!({"type": "string"});
        assert_eq!(declared(string.clone()), string);
    }

    #[test]
    fn stripped_copies_only_when_present() {
        let plain = json!({"a": 1});
        assert!(matches!(stripped(&plain), Cow::Borrowed(_)));
        let with = json!({"a": 1, "wait_for_previous": true});
        assert_eq!(stripped(&with).into_owned(), plain);
        assert!(requested(&with));
        assert!(!requested(&json!({"wait_for_previous": "true"})));
    }
}
