//! The Gemini Developer API: `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`
//! for the main chat, `:generateContent` for utility calls, authenticated with
//! `x-goog-api-key`. Chunks are parsed as they arrive.

use futures::future::BoxFuture;
use futures::StreamExt;
use serde_json::Value;

use super::http::{self, Timeouts};
use super::{ModelClient, ModelError, ModelStream};
use crate::engine::model::{gemini_chunk_events, ModelEvent, ModelRequest};

const PROVIDER: &str = "gemini";

/// The public endpoint, used unless `GOOGLE_GEMINI_BASE_URL` or `model.gemini.base_url`
/// says otherwise.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// Where and how to reach Gemini.
#[derive(Debug, Clone)]
pub struct GeminiConfig {
    pub base_url: String,
    pub api_key: String,
    pub timeouts: Timeouts,
}

/// A Gemini API client.
#[derive(Debug, Clone)]
pub struct GeminiClient {
    http: reqwest::Client,
    config: GeminiConfig,
}

impl GeminiClient {
    pub fn new(config: GeminiConfig) -> Result<Self, ModelError> {
        Ok(Self {
            http: http::client(PROVIDER, config.timeouts)?,
            config,
        })
    }

    fn url(&self, model: &str, method: &str) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        format!(
            "{}/v1beta/models/{model}:{method}",
            self.config.base_url.trim_end_matches('/')
        )
    }

    fn post(&self, url: String, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(url)
            .header("x-goog-api-key", &self.config.api_key)
            .json(body)
    }
}

/// The events of one chunk; an `{"error": …}` chunk is the server's error.
fn chunk_events(chunk: &Value) -> Result<Vec<ModelEvent>, ModelError> {
    if let Some(error) = chunk.get("error") {
        let (message, retry_after) = http::error_message(&chunk.to_string());
        let status = error
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(500);
        return Err(ModelError::Http {
            provider: PROVIDER.into(),
            status,
            message,
            retry_after,
        });
    }
    gemini_chunk_events(chunk).map_err(|message| ModelError::Malformed {
        provider: PROVIDER.into(),
        message,
    })
}

/// A body that should have been an event stream: an error object, a JSON array of
/// chunks (what the API sends without `alt=sse`), or something else (an error).
fn whole_body_events(body: &str) -> Result<Vec<ModelEvent>, ModelError> {
    let value: Value = serde_json::from_str(body).map_err(|e| ModelError::Malformed {
        provider: PROVIDER.into(),
        message: format!(
            "expected an event stream, got a body that is not JSON ({e}): {}",
            body.chars().take(200).collect::<String>()
        ),
    })?;
    let chunks = match value {
        Value::Array(chunks) => chunks,
        other => vec![other],
    };
    let mut events = Vec::new();
    for chunk in &chunks {
        events.extend(chunk_events(chunk)?);
    }
    Ok(events)
}

impl ModelClient for GeminiClient {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let request = request.with_chat_defaults();
        let builder = self.post(
            format!(
                "{}?alt=sse",
                self.url(&request.model, "streamGenerateContent")
            ),
            &request.gemini_body(),
        );
        let timeouts = self.config.timeouts;
        Box::pin(async_stream::try_stream! {
            let response = http::send(PROVIDER, builder, timeouts).await?;
            if !http::is_event_stream(&response) {
                let body = http::read_body(PROVIDER, response, timeouts).await?;
                for event in whole_body_events(&body)? {
                    yield event;
                }
                return;
            }
            let mut events = http::sse_data(PROVIDER, response, timeouts);
            while let Some(item) = events.next().await {
                let sse = item?;
                let chunk: Value = serde_json::from_str(&sse.data)
                    .map_err(|e| http::bad_event(PROVIDER, &sse, &e))?;
                for event in chunk_events(&chunk)? {
                    yield event;
                }
            }
        })
    }

    fn generate(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        let request = request.with_utility_defaults();
        let builder = self.post(
            self.url(&request.model, "generateContent"),
            &request.gemini_body(),
        );
        let timeouts = self.config.timeouts;
        Box::pin(async move {
            let response = http::send(PROVIDER, builder, timeouts).await?;
            let body = http::read_body(PROVIDER, response, timeouts).await?;
            whole_body_events(&body)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn error_chunk_keeps_code_and_message() {
        let err = chunk_events(
            &json!({"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "gemini answered HTTP 503: overloaded (UNAVAILABLE)"
        );
        assert!(err.is_retryable());
    }

    #[test]
    fn non_json_body_is_malformed() {
        let err = whole_body_events("<html>oops</html>").unwrap_err();
        assert!(!err.is_retryable());
        assert!(err.to_string().contains("not JSON"), "{err}");
    }
}
