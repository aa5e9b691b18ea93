//! What an OpenAI-compatible server says about itself at start-up: the models it lists
//! (`GET <base>/models`) and its context window: llama.cpp's `GET /props` (`n_ctx`, or
//! `default_generation_settings.n_ctx`), vLLM's `max_model_len` in the listing, or
//! Ollama's `POST /api/show` (`num_ctx` in `parameters`, else
//! `model_info["<arch>.context_length"]`).
//!
//! The listing and `/props` are asked at once; `/api/show` only when neither named a
//! window and the listing looks like Ollama's. A probe that fails (404, not JSON, no
//! answer within [`PROBE_TIMEOUT`]) tells nothing; only the listing of a run that named
//! no model is needed, and its failure is an error.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{first_model_id, model_ids, parse_json, OpenAiClient, DEFAULT_BASE_URL, PROVIDER};
use crate::providers::http;
use crate::providers::{ModelError, ServerFacts};

/// How long a probe the run can do without may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

type Json = BoxFuture<'static, Result<Value, ModelError>>;

impl OpenAiClient {
    /// The server's root: the base URL without its trailing `/v1`.
    fn root_url(&self) -> String {
        let base = self.config.base_url.trim_end_matches('/');
        base.strip_suffix("/v1").unwrap_or(base).to_string()
    }

    fn with_key(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if self.config.api_key.is_empty() {
            builder
        } else {
            builder.bearer_auth(&self.config.api_key)
        }
    }

    fn json_of(&self, builder: reqwest::RequestBuilder) -> Json {
        let timeouts = self.config.timeouts;
        Box::pin(async move {
            let response = http::send(PROVIDER, builder, timeouts).await?;
            let body = http::read_body(PROVIDER, response, timeouts).await?;
            parse_json(&body)
        })
    }

    /// See the module documentation.
    pub(super) fn discover_server(
        &self,
        model: &str,
    ) -> BoxFuture<'static, Result<ServerFacts, ModelError>> {
        let asked = model.trim().to_string();
        let public = self.config.base_url.trim_end_matches('/') == DEFAULT_BASE_URL;
        if public && !asked.is_empty() {
            // The public API refuses a model it does not serve, and its windows are large.
            return Box::pin(async move {
                Ok(ServerFacts {
                    model: asked,
                    ..ServerFacts::default()
                })
            });
        }
        let (url, listing) = self.get_models();
        let root = self.root_url();
        let props =
            (!public).then(|| self.json_of(self.with_key(self.http.get(format!("{root}/props")))));
        let show = self.with_key(self.http.post(format!("{root}/api/show")));
        let client = self.clone();
        Box::pin(async move {
            let listing = async {
                match asked.is_empty() {
                    true => Some(listing.await),
                    false => probe(listing).await.map(Ok),
                }
            };
            let props = async {
                match props {
                    Some(props) => probe(props).await,
                    None => None,
                }
            };
            let (listing, props) = futures::join!(listing, props);
            let model = match asked.is_empty() {
                false => asked,
                true => {
                    let named = match &listing {
                        Some(Ok(body)) => {
                            first_model_id(body).ok_or_else(|| ModelError::Malformed {
                                provider: PROVIDER.into(),
                                message: "the server lists no model".into(),
                            })
                        }
                        Some(Err(e)) => Err(e.clone()),
                        None => Err(ModelError::Malformed {
                            provider: PROVIDER.into(),
                            message: "no answer".into(),
                        }),
                    };
                    named.map_err(|e| {
                        ModelError::Config(format!(
                            "no model was chosen (-m or model.name) and {url} did not name one: {e}"
                        ))
                    })?
                }
            };
            let listing = listing.and_then(Result::ok);
            let mut window = props
                .as_ref()
                .and_then(props_window)
                .map(|n| (n, "/props n_ctx".to_string()))
                .or_else(|| {
                    let body = listing.as_ref()?;
                    Some((max_model_len(body, &model)?, "max_model_len".to_string()))
                });
            if window.is_none()
                && !public
                && props.is_none()
                && listing
                    .as_ref()
                    .is_some_and(|l| looks_like_ollama(l, &model))
            {
                let asked = client.json_of(show.json(&json!({"model": model})));
                window = probe(asked)
                    .await
                    .as_ref()
                    .and_then(ollama_window)
                    .map(|(n, key)| (n, format!("/api/show {key}")));
            }
            let listed = listing.as_ref().map(|body| {
                let mut ids = model_ids(body);
                let mut seen = std::collections::HashSet::new();
                ids.retain(|id| seen.insert(id.clone()));
                ids
            });
            Ok(ServerFacts {
                model,
                listed,
                context_window: window,
            })
        })
    }
}

/// The answer of a probe, or `None` when it failed or took longer than
/// [`PROBE_TIMEOUT`].
async fn probe(request: Json) -> Option<Value> {
    match tokio::time::timeout(PROBE_TIMEOUT, request).await {
        Ok(Ok(value)) => Some(value),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "server probe failed");
            None
        }
        Err(_) => {
            tracing::debug!("server probe timed out");
            None
        }
    }
}

/// A window in tokens: a positive whole number.
fn tokens(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64).filter(|n| *n > 0)
}

/// llama.cpp's `/props`: the slot's `default_generation_settings.n_ctx`, else `n_ctx`.
fn props_window(props: &Value) -> Option<u64> {
    tokens(props.pointer("/default_generation_settings/n_ctx"))
        .or_else(|| tokens(props.get("n_ctx")))
}

/// vLLM's `max_model_len` of `model`'s entry (or of the only entry).
fn max_model_len(listing: &Value, model: &str) -> Option<u64> {
    let data = listing.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    tokens(entry.get("max_model_len"))
}

/// Ollama's listing: its ids carry a tag (`qwen2.5-coder:1.5b`) and its entries are
/// `owned_by` their namespace (`library`).
fn looks_like_ollama(listing: &Value, model: &str) -> bool {
    model.contains(':')
        || listing
            .get("data")
            .and_then(Value::as_array)
            .is_some_and(|d| {
                d.iter().any(|m| {
                    m.get("owned_by").and_then(Value::as_str) == Some("library")
                        || m.get("id")
                            .and_then(Value::as_str)
                            .is_some_and(|id| id.contains(':'))
                })
            })
}

/// Ollama's `/api/show`: `num_ctx` in `parameters` (the window the model runs with),
/// else `model_info["<arch>.context_length"]`; with the key it came from.
fn ollama_window(show: &Value) -> Option<(u64, String)> {
    let configured = show
        .get("parameters")
        .and_then(Value::as_str)
        .into_iter()
        .flat_map(str::lines)
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse::<u64>().ok())
                .flatten()
                .filter(|n| *n > 0)
        });
    if let Some(n) = configured {
        return Some((n, "num_ctx".into()));
    }
    let info = show.get("model_info")?.as_object()?;
    let arch = info.get("general.architecture").and_then(Value::as_str);
    let key = arch
        .map(|a| format!("{a}.context_length"))
        .filter(|k| info.contains_key(k))
        .or_else(|| {
            info.keys()
                .find(|k| k.ends_with(".context_length"))
                .cloned()
        })?;
    tokens(info.get(&key)).map(|n| (n, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_read_from_each_server_shape() {
        let llama = json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1});
        assert_eq!(props_window(&llama), Some(8192));
        assert_eq!(props_window(&json!({"n_ctx": 4096})), Some(4096));
        assert_eq!(props_window(&json!({"n_ctx": 0})), None);
        let vllm = json!({"data": [{"id": "a", "max_model_len": 32768}, {"id": "b", "max_model_len": 4096}]});
        assert_eq!(max_model_len(&vllm, "b"), Some(4096));
        assert_eq!(max_model_len(&vllm, "c"), None);
        let ollama = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx                        16384",
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}});
        assert_eq!(ollama_window(&ollama), Some((16384, "num_ctx".into())));
        let trained =
            json!({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}});
        assert_eq!(
            ollama_window(&trained),
            Some((32768, "qwen2.context_length".into()))
        );
        let listing = json!({"data": [{"id": "qwen2.5-coder:1.5b", "owned_by": "library"}]});
        assert!(looks_like_ollama(&listing, "x"));
        assert!(!looks_like_ollama(
            &json!({"data": [{"id": "m", "owned_by": "llamacpp"}]}),
            "m"
        ));
    }
}
