//! `troupe config`'s listing: every effective value with where it came from — the
//! defaults, the user file, the project file, a `TROUPE_*` variable, a `-c` flag, a
//! run flag (`--model`, `--yolo`, …) — and, for the settings whose empty value means
//! "read this variable" (the providers' URLs and keys), the variable that gave it.
//! API keys are shown as `set` or `not set`, never their value.

use toml::Value;

use super::{leaf_keys, lookup, LoadedSettings};

/// Settings that, left empty, are read from a variable of the environment by the model
/// providers (`providers::select`): the setting wins when it is set.
pub const PROVIDER_ENV_FALLBACKS: [(&str, &str); 4] = [
    ("model.gemini.api_key", "GEMINI_API_KEY"),
    ("model.gemini.base_url", "GOOGLE_GEMINI_BASE_URL"),
    ("model.openai.api_key", "OPENAI_API_KEY"),
    ("model.openai.base_url", "OPENAI_BASE_URL"),
];

/// The variable a provider reads when `key` is left empty.
pub fn env_fallback(key: &str) -> Option<&'static str> {
    PROVIDER_ENV_FALLBACKS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, var)| *var)
}

fn is_secret_key(key: &str) -> bool {
    key.ends_with("api_key")
}

impl LoadedSettings {
    /// `key = value  # origin`, one line per leaf, for `troupe config`, with the
    /// provider variables of the process environment.
    pub fn describe(&self) -> String {
        self.describe_with(&crate::settings::secrets::env_var)
    }

    /// [`LoadedSettings::describe`] with the environment explicit (empty counts as
    /// unset).
    pub fn describe_with(&self, env: &dyn Fn(&str) -> Option<String>) -> String {
        self.entries_with(env)
            .iter()
            .map(|e| format!("{} = {}  # {}\n", e.key, e.shown, e.origin))
            .collect()
    }

    /// Every effective setting with where it came from (`troupe config`'s lines), the
    /// provider variables read from `env`.
    pub fn entries_with(&self, env: &dyn Fn(&str) -> Option<String>) -> Vec<Entry> {
        leaf_keys(&self.table)
            .into_iter()
            .map(|key| self.entry(key, env))
            .collect()
    }

    fn entry(&self, key: String, env: &dyn Fn(&str) -> Option<String>) -> Entry {
        let value = lookup(&self.table, &key).cloned();
        let origin = self
            .origins
            .get(&key)
            .map(String::as_str)
            .unwrap_or("default");
        // A `-c` flag's value stays out of a key's origin.
        let origin = match origin.split_once('=') {
            Some((flag, _)) if is_secret_key(&key) => flag.to_string(),
            _ => match self.layer_files.iter().find(|(file, _)| file == origin) {
                Some((file, what)) => format!("{what} {file}"),
                None => origin.to_string(),
            },
        };
        let empty = matches!(&value, Some(Value::String(s)) if s.is_empty());
        let from_env = env_fallback(&key)
            .filter(|_| empty)
            .and_then(|var| env(var).filter(|v| !v.is_empty()).map(|v| (var, v)));
        let (value, origin) = match from_env {
            Some((var, v)) => (
                Some(Value::String(v)),
                format!("environment variable {var}"),
            ),
            None => (value, origin),
        };
        let (shown, value) = match value {
            Some(Value::String(s)) if is_secret_key(&key) => {
                let word = if s.is_empty() { "not set" } else { "set" };
                (word.to_string(), Some(Value::String(word.to_string())))
            }
            Some(other) => (other.to_string(), Some(other)),
            None => (String::new(), None),
        };
        Entry {
            key,
            shown,
            value,
            origin,
        }
    }
}

/// One line of `troupe config`.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The dotted key (`model.name`).
    pub key: String,
    /// The value as TOML (an API key as `set` or `not set`).
    pub shown: String,
    /// The value (an API key as the string `set` or `not set`).
    pub value: Option<Value>,
    /// Where it came from (`default`, `user settings FILE`, `flag --model`, …).
    pub origin: String,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn provider_variables_fill_empty_settings_and_keys_stay_secret() {
        let none = Path::new("/nonexistent");
        let loaded = crate::settings::load_with(
            none,
            none,
            &[],
            &["model.gemini.base_url=http://set.example".into()],
        )
        .unwrap();
        let env = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
            "OPENAI_API_KEY" => Some("sk-hidden".to_string()),
            "GOOGLE_GEMINI_BASE_URL" => Some("http://env.example".to_string()),
            _ => None,
        };
        let text = loaded.describe_with(&env);
        assert!(text.contains(
            "model.openai.base_url = \"http://127.0.0.1:9/v1\"  # environment variable OPENAI_BASE_URL\n"
        ), "{text}");
        assert!(
            text.contains("model.openai.api_key = set  # environment variable OPENAI_API_KEY\n"),
            "{text}"
        );
        assert!(
            text.contains("model.gemini.api_key = not set  # default\n"),
            "{text}"
        );
        // The setting wins over its variable, as the provider reads them.
        assert!(text.contains("model.gemini.base_url = \"http://set.example\"  # flag -c"));
        assert!(!text.contains("sk-hidden"), "{text}");
    }
}
