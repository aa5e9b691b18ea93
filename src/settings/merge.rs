//! How a layer's values go into the settings table: every key must exist in the
//! defaults and keep its type (after a few coercions), and its origin is remembered.

use std::collections::BTreeMap;

use toml::{Table, Value};

use super::{Origin, SettingsError};

/// A `-c`/environment value: TOML when it parses as a TOML value, else a plain string.
pub(super) fn parse_scalar(raw: &str) -> Value {
    let doc = format!("v = {raw}");
    match doc.parse::<Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(raw.into())),
        Err(_) => Value::String(raw.to_string()),
    }
}

pub(super) fn merge_layer(
    defaults: &Table,
    table: &mut Table,
    layer: &Table,
    prefix: &str,
    source: &str,
    origins: &mut BTreeMap<String, Origin>,
) -> Result<(), SettingsError> {
    for (k, v) in layer {
        let key = dotted_key(prefix, k);
        match v {
            Value::Table(sub) if lookup(defaults, &key).is_some_and(Value::is_table) => {
                merge_layer(defaults, table, sub, &key, source, origins)?;
            }
            _ => set_path(defaults, table, &key, v.clone(), source, origins)?,
        }
    }
    Ok(())
}

pub(super) fn set_path(
    defaults: &Table,
    table: &mut Table,
    key: &str,
    value: Value,
    source: &str,
    origins: &mut BTreeMap<String, Origin>,
) -> Result<(), SettingsError> {
    let Some(default) = lookup(defaults, key).filter(|d| !d.is_table()) else {
        return Err(unknown_key(defaults, key, source));
    };
    let value = coerce(default, value);
    if default.type_str() != value.type_str() {
        return Err(SettingsError::WrongType {
            key: key.to_string(),
            origin: source.to_string(),
            expected: article(default.type_str()),
            found: value.type_str().to_string(),
        });
    }
    let mut node = table;
    let parts: Vec<&str> = key.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        let next = node
            .entry(part.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        let Value::Table(t) = next else {
            return Err(unknown_key(defaults, key, source));
        };
        node = t;
    }
    node.insert(parts[parts.len() - 1].to_string(), value);
    origins.insert(key.to_string(), source.to_string());
    Ok(())
}

/// The error for `key`, which the defaults do not have, with the nearest known key.
fn unknown_key(defaults: &Table, key: &str, source: &str) -> SettingsError {
    let hint = nearest_key(defaults, key)
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default();
    SettingsError::UnknownKey {
        key: key.to_string(),
        origin: source.to_string(),
        hint,
    }
}

/// The known key nearest to a mistyped `key`: a few edits away (`model.maxturns`), or
/// the one known key with the same last part (`max_turns`).
pub(super) fn nearest_key(defaults: &Table, key: &str) -> Option<String> {
    let known = leaf_keys(defaults);
    let limit = (key.len() / 4).clamp(1, 3);
    let close = known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(k, key), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.clone());
    if close.is_some() {
        return close;
    }
    let last = key.rsplit('.').next().unwrap_or(key);
    let mut same_last = known
        .iter()
        .filter(|k| k.rsplit('.').next() == Some(last) && k.as_str() != key);
    match (same_last.next(), same_last.next()) {
        (Some(k), None) => Some(k.clone()),
        _ => None,
    }
}

/// A bare word given for a string setting stays a string; a string given for a
/// list setting becomes a comma-separated list.
fn coerce(default: &Value, value: Value) -> Value {
    match (default, value) {
        (Value::Array(_), Value::String(s)) => Value::Array(
            s.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| Value::String(p.to_string()))
                .collect(),
        ),
        (Value::String(_), v @ (Value::Integer(_) | Value::Float(_) | Value::Boolean(_))) => {
            Value::String(v.to_string())
        }
        (Value::Float(_), Value::Integer(i)) => Value::Float(i as f64),
        (_, v) => v,
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" => "an integer".into(),
        "array" => "an array".into(),
        other => format!("a {other}"),
    }
}

pub(super) fn lookup<'a>(table: &'a Table, key: &str) -> Option<&'a Value> {
    let mut parts = key.split('.');
    let mut value = table.get(parts.next()?)?;
    for part in parts {
        value = value.as_table()?.get(part)?;
    }
    Some(value)
}

/// `key` under the table at `prefix` (`a.b` and `c` give `a.b.c`; the top level has
/// an empty prefix).
fn dotted_key(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// Every leaf key of a table, as `a.b.c`.
pub fn leaf_keys(table: &Table) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(t: &Table, prefix: &str, out: &mut Vec<String>) {
        for (k, v) in t {
            let key = dotted_key(prefix, k);
            match v {
                Value::Table(sub) => walk(sub, &key, out),
                _ => out.push(key),
            }
        }
    }
    walk(table, "", &mut out);
    out
}
