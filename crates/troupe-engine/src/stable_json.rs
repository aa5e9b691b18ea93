//! The text a policy rule's `argsPattern` is matched against, as gemini-cli writes it
//! (`stableStringify`): JSON with every object's keys sorted, each top-level
//! `"key":value` pair between NUL characters (so a pattern can anchor on a whole
//! top-level argument), numbers as JavaScript prints them; and the patterns its
//! `commandPrefix` and `commandRegex` stand for.

use serde_json::Value;

/// The call's arguments as gemini-cli's `stableStringify` writes them.
///
/// ```
/// # use troupe_engine::stable_json::stable_stringify;
/// let args = serde_json::json!({"b": [1, {"d": 2.0, "c": "x"}], "a": "q\""});
/// assert_eq!(
///     stable_stringify(&args),
///     "{\0\"a\":\"q\\\"\"\0,\0\"b\":[1,{\"c\":\"x\",\"d\":2}]\0}"
/// );
/// ```
pub fn stable_stringify(args: &Value) -> String {
    let mut out = String::new();
    write_value(args, true, &mut out);
    out
}

fn write_value(value: &Value, top: bool, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, false, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            // JavaScript's default sort compares UTF-16 code units.
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if top {
                    out.push('\0');
                }
                out.push_str(&json_string(key));
                out.push(':');
                if let Some(v) = map.get(*key) {
                    write_value(v, false, out);
                }
                if top {
                    out.push('\0');
                }
            }
            out.push('}');
        }
    }
}

/// A number as `JSON.stringify` writes it: an integral float without `.0`.
fn js_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
        Some(f) if f.is_finite() => f.to_string(),
        _ => "null".to_string(),
    }
}

/// A string as `JSON.stringify` writes it (serde_json escapes the same characters).
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// gemini-cli's `escapeRegex`: a backslash before each of ``-[]{}()*+?.,\^$|#``,
/// whitespace and `"`.
pub fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "-[]{}()*+?.,\\^$|#\"".contains(c) || c.is_whitespace() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The pattern a `commandPrefix` stands for: `"command":"<prefix>` followed by
/// whitespace, the closing quote or an escaped quote (so `git` matches `git status`
/// and `git`, never `gitk`).
///
/// ```
/// # use troupe_engine::stable_json::command_prefix_pattern;
/// assert_eq!(command_prefix_pattern("git log"), r#"\"command\":\"git\ log(?:[\s"]|\\")"#);
/// ```
pub fn command_prefix_pattern(prefix: &str) -> String {
    let encoded = json_string(prefix);
    let open = &encoded[..encoded.len() - 1];
    format!(
        "{}(?:[\\s\"]|\\\\\")",
        escape_regex(&format!("\"command\":{open}"))
    )
}

/// The pattern a `commandRegex` stands for: `"command":"` then the regex.
pub fn command_regex_pattern(regex: &str) -> String {
    format!("\"command\":\"{regex}")
}

/// gemini-cli's `isSafeRegExp` heuristic against catastrophic backtracking: at most
/// 2048 characters and no quantified group that holds a quantifier (`(a+)+`). (Rust's
/// regex engine never backtracks; the check is kept so the same files load alike.)
pub fn is_safe_regex(pattern: &str) -> bool {
    if pattern.len() > 2048 {
        return false;
    }
    !nested_quantifier(pattern)
}

/// `/\([^)]*[*+?{].*\)[*+?{]/` without a regex: an opening parenthesis, a quantifier
/// before the next `)`, and later a `)` directly followed by a quantifier.
fn nested_quantifier(p: &str) -> bool {
    let b = p.as_bytes();
    let quant = |c: u8| matches!(c, b'*' | b'+' | b'?' | b'{');
    for (i, &c) in b.iter().enumerate() {
        if c != b'(' {
            continue;
        }
        let Some(q) = b[i + 1..]
            .iter()
            .take_while(|&&x| x != b')')
            .position(|&x| quant(x))
        else {
            continue;
        };
        let after = i + 1 + q + 1;
        if (after..b.len().saturating_sub(1)).any(|j| b[j] == b')' && quant(b[j + 1])) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_escapes_as_javascript() {
        let v = serde_json::json!({"n": 1.0, "m": 1.5, "s": "a\nb\u{1}", "z": null});
        assert_eq!(
            stable_stringify(&v),
            "{\0\"m\":1.5\0,\0\"n\":1\0,\0\"s\":\"a\\nb\\u0001\"\0,\0\"z\":null\0}"
        );
    }

    #[test]
    fn prefix_pattern_matches_whole_words() {
        let re = regex::Regex::new(&command_prefix_pattern("git")).unwrap();
        let args = |c: &str| stable_stringify(&serde_json::json!({"command": c}));
        assert!(re.is_match(&args("git status")));
        assert!(re.is_match(&args("git")));
        assert!(!re.is_match(&args("gitk")));
        assert!(!re.is_match(&args("echo git")));
    }

    #[test]
    fn nested_quantifiers_are_refused() {
        assert!(!is_safe_regex("(a+)+"));
        assert!(!is_safe_regex("x(.*)*"));
        assert!(is_safe_regex("\"command\":\"git (status|log)"));
        assert!(is_safe_regex("a+(b)c"));
    }
}
