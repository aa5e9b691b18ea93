//! A small JSON-Schema checker for tool parameters. It covers the keywords Troupe's
//! tool schemas use and words its errors as Ajv does (`params must have required
//! property 'file_path'`, `params/start_line must be >= 1`), because those messages are
//! what a model trained on gemini-cli expects to read back.

use serde_json::Value;

/// Checks `value` against `schema`; the first violation is returned as Ajv would word it.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    if !value.is_object() {
        return Err("Value of params must be an object".to_string());
    }
    check(schema, value, "params")
}

fn check(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    if let Some(expected) = schema.get("type").and_then(Value::as_str) {
        if !has_type(value, expected) {
            return Err(format!("{at} must be {expected}"));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            return Err(format!("{at} must be equal to one of the allowed values"));
        }
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) {
        if n < min {
            return Err(format!("{at} must be >= {}", number_text(min)));
        }
    }
    if let (Some(max), Some(n)) = (
        schema.get("maximum").and_then(Value::as_f64),
        value.as_f64(),
    ) {
        if n > max {
            return Err(format!("{at} must be <= {}", number_text(max)));
        }
    }
    if let Some(map) = value.as_object() {
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    return Err(format!("{at} must have required property '{key}'"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
            let known = |k: &String| properties.is_some_and(|p| p.contains_key(k));
            if map.keys().any(|k| !known(k)) {
                return Err(format!("{at} must NOT have additional properties"));
            }
        }
        if let Some(properties) = properties {
            for (key, sub) in properties {
                if let Some(v) = map.get(key) {
                    check(sub, v, &format!("{at}/{key}"))?;
                }
            }
        }
    }
    if let Some(items) = value.as_array() {
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if (items.len() as u64) < min {
                return Err(format!("{at} must NOT have fewer than {min} items"));
            }
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(item_schema, item, &format!("{at}/{i}"))?;
            }
        }
    }
    if let (Some(min), Some(s)) = (
        schema.get("minLength").and_then(Value::as_u64),
        value.as_str(),
    ) {
        if (s.chars().count() as u64) < min {
            let unit = if min == 1 { "character" } else { "characters" };
            return Err(format!("{at} must NOT have fewer than {min} {unit}"));
        }
    }
    Ok(())
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "object" => value.is_object(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "null" => value.is_null(),
        _ => true,
    }
}

fn number_text(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "start_line": {"type": "integer", "minimum": 1},
                "todos": {"type": "array", "items": {"type": "object", "properties": {
                    "status": {"type": "string", "enum": ["pending", "completed"]}}}}
            },
            "required": ["file_path"]
        })
    }

    #[test]
    fn words_errors_like_ajv() {
        let s = schema();
        assert_eq!(
            validate(&s, &json!({})).unwrap_err(),
            "params must have required property 'file_path'"
        );
        assert_eq!(
            validate(&s, &json!({"file_path": "a", "start_line": 0})).unwrap_err(),
            "params/start_line must be >= 1"
        );
        assert_eq!(
            validate(&s, &json!({"file_path": 3})).unwrap_err(),
            "params/file_path must be string"
        );
        assert_eq!(
            validate(&s, &json!({"file_path": "a", "todos": [{"status": "x"}]})).unwrap_err(),
            "params/todos/0/status must be equal to one of the allowed values"
        );
        assert_eq!(
            validate(&s, &json!([1])).unwrap_err(),
            "Value of params must be an object"
        );
        assert!(validate(&s, &json!({"file_path": "a", "start_line": 3})).is_ok());
    }
}
