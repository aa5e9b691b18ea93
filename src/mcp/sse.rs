//! The HTTP+SSE client transport (MCP 2024-11-05), which rmcp no longer ships: a GET
//! opens an event stream whose first `endpoint` event names the URL to POST messages
//! to; the server's messages arrive as `message` events on the stream. Events are
//! parsed by `eventsource-stream`; each message goes out as its own POST, so many
//! calls are in flight at once.

use std::pin::Pin;

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, ACCEPT, CONTENT_TYPE};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;

/// What can go wrong on an SSE connection.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("GET {url} failed: {message}")]
    Connect { url: String, message: String },
    #[error("GET {url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("the event stream of {url} ended before its `endpoint` event")]
    NoEndpoint { url: String },
    #[error("the endpoint \"{endpoint}\" is not a URL: {message}")]
    BadEndpoint { endpoint: String, message: String },
    #[error("the endpoint {endpoint} is not on the server's origin {origin}")]
    ForeignEndpoint { endpoint: String, origin: String },
    #[error("POST {url} failed: {message}")]
    Post { url: String, message: String },
}

type Incoming = Pin<Box<dyn Stream<Item = ServerJsonRpcMessage> + Send>>;

/// One open SSE connection: the event stream and the URL messages are posted to.
pub struct SseClientTransport {
    http: reqwest::Client,
    endpoint: url::Url,
    headers: HeaderMap,
    incoming: Incoming,
}

impl SseClientTransport {
    /// Opens the event stream of `url` and waits for its `endpoint` event.
    pub async fn connect(url: &str, headers: HeaderMap) -> Result<Self, SseError> {
        let base = url::Url::parse(url).map_err(|e| SseError::Connect {
            url: url.into(),
            message: e.to_string(),
        })?;
        // No redirects: the headers (a token) go to the configured origin only.
        crate::platform::tls::install_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| SseError::Connect {
                url: url.into(),
                message: e.to_string(),
            })?;
        let response = http
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| SseError::Connect {
                url: url.into(),
                message: e.to_string(),
            })?;
        if !response.status().is_success() {
            return Err(SseError::Status {
                url: url.into(),
                status: response.status().as_u16(),
            });
        }
        let mut events = Box::pin(response.bytes_stream().eventsource());
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event == "endpoint" => break event.data,
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    return Err(SseError::Connect {
                        url: url.into(),
                        message: e.to_string(),
                    })
                }
                None => return Err(SseError::NoEndpoint { url: url.into() }),
            }
        };
        let endpoint = base
            .join(endpoint.trim())
            .map_err(|e| SseError::BadEndpoint {
                endpoint: endpoint.clone(),
                message: e.to_string(),
            })?;
        // The server may not send our headers (a token) anywhere else.
        if endpoint.origin() != base.origin() {
            return Err(SseError::ForeignEndpoint {
                endpoint: endpoint.to_string(),
                origin: base.origin().ascii_serialization(),
            });
        }
        let incoming = events.filter_map(|event| async move {
            match event {
                Ok(e) if e.event.is_empty() || e.event == "message" => {
                    match serde_json::from_str::<ServerJsonRpcMessage>(&e.data) {
                        Ok(message) => Some(message),
                        Err(error) => {
                            tracing::warn!(%error, "SSE message is not JSON-RPC; skipped");
                            None
                        }
                    }
                }
                Ok(_) => None,
                Err(error) => {
                    tracing::warn!(%error, "SSE stream error");
                    None
                }
            }
        });
        Ok(Self {
            http,
            endpoint,
            headers,
            incoming: Box::pin(incoming),
        })
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .json(&item);
        let url = self.endpoint.to_string();
        async move {
            let response = request.send().await.map_err(|e| SseError::Post {
                url: url.clone(),
                message: e.to_string(),
            })?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError::Post {
                    url,
                    message: format!("HTTP {}", response.status().as_u16()),
                })
            }
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.next()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
