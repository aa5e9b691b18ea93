//! `session/set_model` (gemini-cli's method; the crate's stable v1 schema has no type
//! for it, so it is declared here with the crate's derive) and the `models` a session
//! offers in `session/new` / `session/load`; the same list as ACP v1's session config
//! option `model` (`configOptions`, switched by `session/set_config_option`), which
//! clients on the stable schema read instead (Harbor's ACP runner among them).

use agent_client_protocol::{JsonRpcRequest, JsonRpcResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::providers::ModelClient;

/// The Gemini models gemini-cli 0.61 offers (also what the scripted model answers as).
pub const GEMINI_MODELS: [&str; 3] = [
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
];

/// `session/set_model{sessionId, modelId}`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "session/set_model", response = SetSessionModelResponse)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionModelRequest {
    pub session_id: String,
    pub model_id: String,
}

/// The (empty) answer to `session/set_model`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonRpcResponse)]
pub struct SetSessionModelResponse {}

/// `session/new` with the raw parameters: its answer carries gemini-cli's `models`,
/// which the crate's stable `NewSessionResponse` has no field for.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "session/new", response = RawResponse)]
#[serde(transparent)]
pub struct NewSessionParams(pub Value);

/// `session/load` with the raw parameters (as [`NewSessionParams`]).
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "session/load", response = RawResponse)]
#[serde(transparent)]
pub struct LoadSessionParams(pub Value);

/// An answer given as JSON.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcResponse)]
#[serde(transparent)]
pub struct RawResponse(pub Value);

/// The models a session may switch to: the current one first, then the provider's
/// (an OpenAI-compatible server's list; Gemini's known models). `None` when the
/// provider could not be asked: any name is then accepted.
pub async fn available(model: &dyn ModelClient, current: &str) -> Option<Vec<String>> {
    let mut names = vec![current.to_string()];
    match model.provider() {
        "gemini" | "scripted" => names.extend(GEMINI_MODELS.iter().map(|m| m.to_string())),
        _ => match model.list_models().await {
            Ok(listed) => names.extend(listed),
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the provider's models");
                return None;
            }
        },
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| !n.is_empty() && seen.insert(n.clone()));
    Some(names)
}

/// gemini-cli's `models` of a session.
pub fn models_json(current: &str, available: &Option<Vec<String>>) -> Value {
    let list = available
        .clone()
        .unwrap_or_else(|| vec![current.to_string()]);
    json!({
        "currentModelId": current,
        "availableModels": list.iter().map(|m| json!({"modelId": m, "name": m})).collect::<Vec<_>>(),
    })
}

/// The id of the session config option that picks the model.
pub const MODEL_OPTION: &str = "model";

/// ACP's `configOptions` of a session: one `select` of the model, in category `model`.
pub fn config_options(current: &str, available: &Option<Vec<String>>) -> Value {
    let list = available
        .clone()
        .unwrap_or_else(|| vec![current.to_string()]);
    json!([{
        "id": MODEL_OPTION,
        "name": "Model",
        "description": "The model of the next request",
        "category": "model",
        "type": "select",
        "currentValue": current,
        "options": list.iter().map(|m| json!({"value": m, "name": m})).collect::<Vec<_>>(),
    }])
}

/// Checks a `session/set_model` choice against the session's list.
pub fn check(model_id: &str, available: &Option<Vec<String>>) -> Result<(), String> {
    let model_id = model_id.trim();
    if model_id.is_empty() {
        return Err("modelId is empty".into());
    }
    match available {
        Some(list) if !list.iter().any(|m| m == model_id) => Err(format!(
            "unknown model `{model_id}`; available: {}",
            list.join(", ")
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_models_are_refused_with_the_list() {
        let list = Some(vec!["a".to_string(), "b".to_string()]);
        assert!(check("b", &list).is_ok());
        let err = check("zz", &list).unwrap_err();
        assert!(
            err.contains("unknown model `zz`") && err.contains("a, b"),
            "{err}"
        );
        assert!(check("anything", &None).is_ok());
        assert!(check(" ", &None).is_err());
    }

    #[test]
    fn the_model_option_lists_the_models_and_marks_the_current_one() {
        let options = config_options("b", &Some(vec!["b".to_string(), "c".to_string()]));
        assert_eq!(options[0]["id"], "model");
        assert_eq!(options[0]["category"], "model");
        assert_eq!(options[0]["type"], "select");
        assert_eq!(options[0]["currentValue"], "b");
        assert_eq!(options[0]["options"][1], json!({"value": "c", "name": "c"}));
        // The provider could not list its models: the current one alone.
        assert_eq!(
            config_options("z", &None)[0]["options"],
            json!([{"value": "z", "name": "z"}])
        );
    }
}
