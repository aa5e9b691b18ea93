//! `authenticate` with an API key, as gemini-cli's `gemini-api-key` method: the key
//! comes in `_meta["api-key"]` and is kept in this process's memory for the sessions
//! of the connection only. It is never written to disk, never logged (it has no
//! `Debug`), and never put in the environment, so no child process sees it; models
//! of later `session/new` / `session/load` read it through an environment overlay.

use std::sync::Mutex;

use serde_json::{json, Value};

/// An authentication method Troupe offers: its id, the provider's key variable, and
/// the key variable of the other provider (hidden once this one is chosen, so that
/// `model.provider = "auto"` picks the provider the client authenticated with).
struct Method {
    id: &'static str,
    name: &'static str,
    variable: &'static str,
    other: &'static str,
}

const METHODS: [Method; 2] = [
    Method {
        id: "gemini-api-key",
        name: "Gemini API key",
        variable: "GEMINI_API_KEY",
        other: "OPENAI_API_KEY",
    },
    Method {
        id: "openai-api-key",
        name: "OpenAI-compatible API key",
        variable: "OPENAI_API_KEY",
        other: "GEMINI_API_KEY",
    },
];

/// Why `authenticate` failed (a JSON-RPC error for the client).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error(
        "unknown authentication method `{0}`; Troupe offers gemini-api-key and openai-api-key"
    )]
    UnknownMethod(String),
    #[error("no API key: send it as `_meta[\"api-key\"]` with method {method}, or set {variable} before starting troupe --acp")]
    NoKey {
        method: &'static str,
        variable: &'static str,
    },
}

/// The key chosen by `authenticate`.
struct Chosen {
    method: usize,
    /// `None`: the method's key comes from the environment or settings as usual.
    key: Option<String>,
}

/// The credentials of one ACP connection, in memory only.
#[derive(Default)]
pub struct Credentials {
    chosen: Mutex<Option<Chosen>>,
}

/// The `authMethods` of `initialize`.
pub fn methods() -> Value {
    Value::Array(
        METHODS
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "name": m.name,
                    "description": format!("Send the key as _meta[\"api-key\"], or leave it out to use {}", m.variable),
                })
            })
            .collect(),
    )
}

impl Credentials {
    /// `authenticate{methodId, _meta?{"api-key"}}`.
    pub fn authenticate(&self, request: &Value) -> Result<(), AuthError> {
        let id = request["methodId"].as_str().unwrap_or("");
        let (index, method) = METHODS
            .iter()
            .enumerate()
            .find(|(_, m)| m.id == id)
            .ok_or_else(|| AuthError::UnknownMethod(id.to_string()))?;
        let key = request
            .pointer("/_meta/api-key")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_string);
        if key.is_none() && crate::providers::select::process_env(method.variable).is_none() {
            return Err(AuthError::NoKey {
                method: method.id,
                variable: method.variable,
            });
        }
        if let Ok(mut chosen) = self.chosen.lock() {
            *chosen = Some(Chosen { method: index, key });
        }
        tracing::info!(method = method.id, "authenticated");
        Ok(())
    }

    /// An environment variable as the model selection sees it: the authenticated
    /// key over the process's own.
    pub fn env(&self, name: &str) -> Option<String> {
        if let Ok(chosen) = self.chosen.lock() {
            if let Some(c) = chosen.as_ref() {
                let method = &METHODS[c.method];
                if name == method.variable {
                    if let Some(key) = &c.key {
                        return Some(key.clone());
                    }
                } else if name == method.other {
                    return None;
                }
            }
        }
        crate::providers::select::process_env(name)
    }
}
