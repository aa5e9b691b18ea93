//! Model providers behind one small trait. A provider turns a [`ModelRequest`] into a
//! stream of [`ModelEvent`]s; everything else has a default.

pub mod gemini;
pub mod http;
pub mod limiter;
pub mod openai;
pub mod record;
pub mod retry;
mod script_lines;
pub mod scripted;
pub mod select;

use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::Value;

use crate::engine::model::{ModelEvent, ModelRequest};

/// Why a model call failed. `is_retryable` is an exhaustive match so that a new kind
/// forces a decision.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    #[error("{provider} answered HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("connection to {provider} failed: {message}")]
    Network { provider: String, message: String },
    /// Nothing listens at the address: a few short retries at most.
    #[error(
        "connection to {provider} at {address} was refused: is the model server running there?"
    )]
    Refused { provider: String, address: String },
    #[error("{provider} sent an invalid stream ({kind}): {message}")]
    InvalidStream {
        provider: String,
        kind: String,
        message: String,
    },
    #[error("{provider} sent a malformed response: {message}")]
    Malformed { provider: String, message: String },
    /// The answer reached the output token limit in the middle of a call of `tool`
    /// (its arguments are cut): the same request would end the same way.
    #[error("{provider} sent an invalid stream (MAX_TOKENS_EXCEEDED): {message}")]
    CutCall {
        provider: String,
        tool: String,
        message: String,
    },
    #[error("scripted model: {0}")]
    Script(String),
    #[error("{0}")]
    Config(String),
    /// The endpoint answered with a redirect to another origin, which is not followed:
    /// the key and the conversation go only where the settings say.
    #[error("{provider}: the endpoint redirected to another origin ({origin}); Troupe does not follow it with your key and conversation")]
    CrossOriginRedirect { provider: String, origin: String },
    #[error("request cancelled")]
    Cancelled,
}

impl ModelError {
    /// Worth sending the same request again: rate limits (429), client-closed (499),
    /// server errors (5xx), transport failures and broken streams. Never a 400, and
    /// never a response the model's filters blocked (the same request is blocked again).
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Http { status, .. } => *status == 429 || *status == 499 || *status >= 500,
            ModelError::Network { .. } | ModelError::Refused { .. } => true,
            ModelError::InvalidStream { kind, .. } => !matches!(
                kind.as_str(),
                "SAFETY_BLOCKED" | "RECITATION_BLOCKED" | "OTHER_BLOCKED" | "MAX_TOKENS_EXCEEDED"
            ),
            ModelError::Malformed { .. } | ModelError::CutCall { .. } => false,
            ModelError::Script(_) => false,
            ModelError::Config(_) => false,
            ModelError::CrossOriginRedirect { .. } => false,
            ModelError::Cancelled => false,
        }
    }

    /// What to change when the error comes from the configuration rather than from the
    /// moment: a bad key (401/403) or a wrong address or model name (404).
    pub fn hint(&self) -> Option<&'static str> {
        let (provider, status) = match self {
            ModelError::Http {
                provider, status, ..
            } => (provider.as_str(), *status),
            ModelError::Refused { provider, .. } => {
                return Some(if provider == "gemini" {
                    "check GOOGLE_GEMINI_BASE_URL or model.gemini.base_url"
                } else {
                    "check OPENAI_BASE_URL or model.openai.base_url"
                })
            }
            _ => return None,
        };
        let gemini = provider == "gemini";
        match (status, gemini) {
            (401 | 403, true) => Some("check the key in GEMINI_API_KEY or model.gemini.api_key"),
            (401 | 403, false) => Some("check the key in OPENAI_API_KEY or model.openai.api_key"),
            (404, true) => Some(
                "check the model name (-m or model.name) and GOOGLE_GEMINI_BASE_URL or model.gemini.base_url",
            ),
            (404, false) => Some(
                "check the model name (-m or model.name) and OPENAI_BASE_URL or model.openai.base_url (it usually ends in /v1)",
            ),
            _ => None,
        }
    }

    /// Did the server refuse the request as larger than the model's context window?
    /// (llama.cpp: "the request exceeds the available context size"; OpenAI: "maximum
    /// context length"; Gemini: "exceeds the maximum number of tokens".)
    pub fn is_context_overflow(&self) -> bool {
        let ModelError::Http {
            status, message, ..
        } = self
        else {
            return false;
        };
        let m = message.to_lowercase();
        matches!(status, 400 | 413)
            && (m.contains("context") || m.contains("token"))
            && (m.contains("exceed") || m.contains("too long") || m.contains("maximum"))
    }

    /// Is this a refused connection (retried only a few times, quickly)?
    pub fn is_refused(&self) -> bool {
        matches!(self, ModelError::Refused { .. })
    }

    /// The delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// The model used when none is chosen and the provider has no say (Gemini, scripted).
pub const DEFAULT_GEMINI_MODEL: &str = "gemini-2.5-flash";

/// What a server says about itself at start-up ([`ModelClient::discover`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerFacts {
    /// The model to use: the one asked for, or the server's default when none was.
    pub model: String,
    /// The models the server lists, when it answered a listing.
    pub listed: Option<Vec<String>>,
    /// The server's context window in tokens, and where it said so (`/props n_ctx`).
    pub context_window: Option<(u64, String)>,
}

/// The stream of events of one model call.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A model the Chat actor (and the Corrector) can talk to.
pub trait ModelClient: Send + Sync + 'static {
    /// A short name for messages: `gemini`, `openai-compatible`, `scripted`.
    fn provider(&self) -> &str;

    /// Streams the main-chat answer to `request`.
    fn stream(&self, request: ModelRequest) -> ModelStream;

    /// The model to use when none was chosen (`-m`, `model.name`): Gemini's default
    /// model; an OpenAI-compatible server is asked (`GET /v1/models`).
    fn default_model(&self) -> BoxFuture<'static, Result<String, ModelError>> {
        Box::pin(async { Ok(DEFAULT_GEMINI_MODEL.to_string()) })
    }

    /// The model to use (`model`, or [`ModelClient::default_model`] when it is empty)
    /// and what the server says about itself: the models it lists and its context
    /// window (an OpenAI-compatible server is asked; other providers know nothing).
    fn discover(&self, model: &str) -> BoxFuture<'static, Result<ServerFacts, ModelError>> {
        let asked = model.trim().to_string();
        let default = asked.is_empty().then(|| self.default_model());
        Box::pin(async move {
            let model = match default {
                Some(default) => default.await?,
                None => asked,
            };
            Ok(ServerFacts {
                model,
                ..ServerFacts::default()
            })
        })
    }

    /// The models this provider offers (ACP's `availableModels`, `session/set_model`):
    /// an OpenAI-compatible server's `GET /v1/models`; by default the default model.
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        let default = self.default_model();
        Box::pin(async move { Ok(vec![default.await?]) })
    }

    /// A non-streamed utility call (edit correction, summaries, ...). By default the
    /// stream, collected.
    fn generate(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        let stream = self.stream(request);
        Box::pin(async move {
            let items: Vec<Result<ModelEvent, ModelError>> = stream.collect().await;
            items.into_iter().collect()
        })
    }

    /// One attempt of [`ModelClient::generate`], without the retries a wrapper adds:
    /// for callers that keep their own time budget and retry count (the Corrector).
    fn generate_once(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        self.generate(request)
    }
}

/// Asks for JSON and parses the answer: the text, with a surrounding ```json fence
/// stripped, must be one JSON value.
pub async fn generate_json(
    client: &dyn ModelClient,
    request: ModelRequest,
) -> Result<Value, ModelError> {
    let provider = client.provider().to_string();
    json_answer(provider, &client.generate(request).await?)
}

/// Like [`generate_json`], one attempt only ([`ModelClient::generate_once`]).
pub async fn generate_json_once(
    client: &dyn ModelClient,
    request: ModelRequest,
) -> Result<Value, ModelError> {
    let provider = client.provider().to_string();
    json_answer(provider, &client.generate_once(request).await?)
}

fn json_answer(provider: String, events: &[ModelEvent]) -> Result<Value, ModelError> {
    let text = visible_text(events);
    let trimmed = strip_json_fence(text.trim());
    serde_json::from_str(trimmed).map_err(|e| ModelError::Malformed {
        provider,
        message: format!("expected JSON, got {trimmed:?}: {e}"),
    })
}

/// The answer's text (thoughts excluded), concatenated.
pub fn visible_text(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn strip_json_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_fence_is_stripped() {
        assert_eq!(strip_json_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_json_fence("{\"a\":1}"), "{\"a\":1}");
    }
}
