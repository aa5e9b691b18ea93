//! OpenAI-compatible chat completions (`POST {base}/chat/completions`, streaming): Ollama,
//! vLLM, llama.cpp's server, or any `/v1` endpoint. `{base}` ends in `/v1`, as in
//! `OPENAI_BASE_URL`.

pub mod discovery;
pub mod wire;

use futures::future::BoxFuture;
use futures::StreamExt;
use serde_json::Value;

use super::http::{self, Timeouts};
use super::{ModelClient, ModelError, ModelStream, ServerFacts};
use crate::engine::model::{ModelEvent, ModelRequest};
use crate::providers::openai::wire::{chat_body, response_events, StreamDecoder, WireError};

const PROVIDER: &str = "openai-compatible";

/// The public endpoint, used unless `OPENAI_BASE_URL` or `model.openai.base_url` is set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Where and how to reach the server.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    pub base_url: String,
    /// Sent as a bearer token when not empty (local servers need none).
    pub api_key: String,
    pub timeouts: Timeouts,
}

/// A client of an OpenAI-compatible server.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    config: OpenAiConfig,
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        Ok(Self {
            http: http::client(PROVIDER, config.timeouts)?,
            config,
        })
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let builder = self.http.post(url).json(body);
        if self.config.api_key.is_empty() {
            builder
        } else {
            builder.bearer_auth(&self.config.api_key)
        }
    }

    /// `GET <base>/models`: its address, and the parsed listing it answers.
    fn get_models(&self) -> (String, BoxFuture<'static, Result<Value, ModelError>>) {
        let url = format!("{}/models", self.config.base_url.trim_end_matches('/'));
        let mut builder = self.http.get(&url);
        if !self.config.api_key.is_empty() {
            builder = builder.bearer_auth(&self.config.api_key);
        }
        let timeouts = self.config.timeouts;
        let listing = Box::pin(async move {
            let response = http::send(PROVIDER, builder, timeouts).await?;
            let body = http::read_body(PROVIDER, response, timeouts).await?;
            parse_json(&body)
        });
        (url, listing)
    }
}

fn wire_error(error: WireError) -> ModelError {
    match error {
        WireError::Server { code, message } => ModelError::Http {
            provider: PROVIDER.into(),
            status: code.unwrap_or(500),
            message,
            retry_after: None,
        },
        WireError::MalformedCall(message) => ModelError::InvalidStream {
            provider: PROVIDER.into(),
            kind: "MALFORMED_FUNCTION_CALL".into(),
            message,
        },
        WireError::CutAtLimit { tool, message } => ModelError::CutCall {
            provider: PROVIDER.into(),
            tool,
            message: format!("{message}; raise model.max_output_tokens or ask for less"),
        },
        WireError::Malformed(message) => ModelError::Malformed {
            provider: PROVIDER.into(),
            message,
        },
    }
}

/// Every model id of a `/v1/models` answer (either shape of [`first_model_id`]).
fn model_ids(body: &Value) -> Vec<String> {
    let data = body.get("data").and_then(Value::as_array);
    let ollama = body.get("models").and_then(Value::as_array);
    data.into_iter()
        .flatten()
        .filter_map(|m| m.get("id"))
        .chain(
            ollama
                .into_iter()
                .flatten()
                .filter_map(|m| m.get("model").or_else(|| m.get("name"))),
        )
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// The first model of a `/v1/models` answer (`{"data": [{"id": …}]}`; Ollama's
/// `{"models": [{"name"|"model": …}]}` too).
fn first_model_id(body: &Value) -> Option<String> {
    if let Some(id) = body
        .get("data")
        .and_then(Value::as_array)
        .and_then(|d| d.first())
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
    {
        return Some(id.to_string());
    }
    body.get("models")
        .and_then(Value::as_array)
        .and_then(|m| m.first())
        .and_then(|m| m.get("model").or_else(|| m.get("name")))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn parse_json(body: &str) -> Result<Value, ModelError> {
    serde_json::from_str(body).map_err(|e| ModelError::Malformed {
        provider: PROVIDER.into(),
        message: format!(
            "the body is not JSON ({e}): {}",
            body.chars().take(200).collect::<String>()
        ),
    })
}

impl ModelClient for OpenAiClient {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let builder = self.post(&chat_body(&request, true));
        let timeouts = self.config.timeouts;
        Box::pin(async_stream::try_stream! {
            let response = http::send(PROVIDER, builder, timeouts).await?;
            if !http::is_event_stream(&response) {
                // Some servers answer a streamed request with one JSON completion.
                let body = http::read_body(PROVIDER, response, timeouts).await?;
                for event in response_events(&parse_json(&body)?).map_err(wire_error)? {
                    yield event;
                }
                return;
            }
            let mut decoder = StreamDecoder::default();
            let mut events = http::sse_data(PROVIDER, response, timeouts);
            let mut done = false;
            while let Some(item) = events.next().await {
                let sse = item?;
                if sse.data.trim() == "[DONE]" {
                    done = true;
                    break;
                }
                let chunk: Value = serde_json::from_str(&sse.data)
                    .map_err(|e| http::bad_event(PROVIDER, &sse, &e))?;
                for event in decoder.push(&chunk).map_err(wire_error)? {
                    yield event;
                }
            }
            if !done && !decoder.has_finish_reason() {
                Err(ModelError::InvalidStream {
                    provider: PROVIDER.into(),
                    kind: "STREAM_CUT".into(),
                    message: "the stream ended before a finish_reason or [DONE]".into(),
                })?;
            }
            for event in decoder.finish().map_err(wire_error)? {
                yield event;
            }
        })
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        let (_, listing) = self.get_models();
        Box::pin(async move { Ok(model_ids(&listing.await?)) })
    }

    fn discover(&self, model: &str) -> BoxFuture<'static, Result<ServerFacts, ModelError>> {
        self.discover_server(model)
    }

    fn default_model(&self) -> BoxFuture<'static, Result<String, ModelError>> {
        let (url, listing) = self.get_models();
        Box::pin(async move {
            let asked = async {
                first_model_id(&listing.await?).ok_or_else(|| ModelError::Malformed {
                    provider: PROVIDER.into(),
                    message: "the server lists no model".into(),
                })
            };
            asked.await.map_err(|e| {
                ModelError::Config(format!(
                    "no model was chosen (-m or model.name) and {url} did not name one: {e}"
                ))
            })
        })
    }

    fn generate(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        let request = request.with_utility_defaults();
        let builder = self.post(&chat_body(&request, false));
        let timeouts = self.config.timeouts;
        Box::pin(async move {
            let response = http::send(PROVIDER, builder, timeouts).await?;
            let body = http::read_body(PROVIDER, response, timeouts).await?;
            response_events(&parse_json(&body)?).map_err(wire_error)
        })
    }
}
