//! A tool call as a key (loop detection, duplicate calls in one model turn): its tool
//! and its arguments compared as JSON values, without turning them into text.

use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::protocol::content::FunctionCall;

/// A call as a key: its tool and its arguments, compared as JSON values (object keys
/// in any order, since an object is a map; numbers and strings exactly). It borrows
/// the call: making one, hashing it and comparing two allocate nothing.
#[derive(Debug, Clone, Copy)]
pub struct CallKey<'a> {
    pub name: &'a str,
    pub args: &'a Value,
}

impl<'a> CallKey<'a> {
    pub fn of(call: &'a FunctionCall) -> Self {
        Self {
            name: &call.name,
            args: &call.args,
        }
    }

    /// A 64-bit fingerprint of the call, for what is kept across model turns (where
    /// borrowing the call is not possible). Two different calls share one with odds of
    /// 2^-64; the cost of that is a wrong note or count, never a call left unrun.
    pub fn fingerprint(self) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut hasher);
        hasher.finish()
    }
}

impl PartialEq for CallKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        // `Value`'s equality compares objects as maps (serde_json's `Map` with
        // `preserve_order` is an `IndexMap`, whose equality ignores order).
        self.name == other.name && self.args == other.args
    }
}

impl Eq for CallKey<'_> {}

impl Hash for CallKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        hash_value(self.args, state);
    }
}

/// Hashes a JSON value so that equal values (objects with their keys in any order)
/// hash alike: an object's entries are hashed each on their own and summed. Unlike
/// `Value`'s own `Hash`, this sorts nothing and allocates nothing.
fn hash_value<H: Hasher>(value: &Value, state: &mut H) {
    match value {
        Value::Null => state.write_u8(0),
        Value::Bool(b) => {
            state.write_u8(1);
            b.hash(state);
        }
        Value::Number(n) => {
            state.write_u8(2);
            n.hash(state);
        }
        Value::String(text) => {
            state.write_u8(3);
            text.hash(state);
        }
        Value::Array(items) => {
            state.write_u8(4);
            state.write_usize(items.len());
            for item in items {
                hash_value(item, state);
            }
        }
        Value::Object(map) => {
            let sum = map.iter().fold(0u64, |sum, (key, item)| {
                let mut entry = std::collections::hash_map::DefaultHasher::new();
                key.hash(&mut entry);
                hash_value(item, &mut entry);
                sum.wrapping_add(entry.finish())
            });
            state.write_u8(5);
            state.write_usize(map.len());
            state.write_u64(sum);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Keys in another order, at any depth, make the same call (equal, same
    /// fingerprint); any other difference makes another call.
    #[test]
    fn a_call_key_ignores_key_order_and_nothing_else() {
        let base = json!({"a": {"x": 1, "y": [1, "t"]}, "b": null, "c": true});
        let reordered = json!({"c": true, "b": null, "a": {"y": [1, "t"], "x": 1}});
        let key = |args| CallKey { name: "f", args };
        assert_eq!(key(&base), key(&reordered));
        assert_eq!(key(&base).fingerprint(), key(&reordered).fingerprint());
        let others = [
            json!({"a": {"x": 1.0, "y": [1, "t"]}, "b": null, "c": true}),
            json!({"a": {"x": "1", "y": [1, "t"]}, "b": null, "c": true}),
            json!({"a": {"x": 1, "y": ["t", 1]}, "b": null, "c": true}),
            json!({"a": {"x": 1, "y": [1, "t"]}, "b": null}),
            json!({"a": {"x": 1, "y": [1, "t"]}, "b": true, "c": null}),
            json!({"a": {"x": 1, "y": [1, "t"]}, "b": null, "c": true, "d": 0}),
        ];
        for other in &others {
            assert_ne!(key(&base), key(other), "{other}");
            assert_ne!(
                key(&base).fingerprint(),
                key(other).fingerprint(),
                "{other}"
            );
        }
        let renamed = CallKey {
            name: "g",
            args: &base,
        };
        assert_ne!(key(&base).fingerprint(), renamed.fingerprint());
    }
}
