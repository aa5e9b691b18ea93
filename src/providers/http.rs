//! HTTP plumbing shared by the network providers: one `reqwest` client with a connect
//! timeout, requests whose answer must start within the first-byte timeout, error
//! bodies turned into [`ModelError::Http`] (with the server's message and retry delay),
//! and server-sent events read incrementally with an idle timeout between chunks.
//!
//! Redirects: a request carries the API key (in a header) and the conversation (in the
//! body), and reqwest re-sends both on a 307/308 (it drops only `Authorization` and
//! cookies across origins, not `x-goog-api-key`). So the client follows a redirect only
//! within the origin of the request (same scheme, host and port, at most
//! [`MAX_REDIRECTS`] hops); a redirect to another origin is not followed, and becomes
//! [`ModelError::CrossOriginRedirect`] naming where it pointed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::stream::{self, BoxStream};
use futures::StreamExt;
use serde_json::Value;

use super::ModelError;

/// Timeouts of a network provider.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Establishing the TCP/TLS connection.
    pub connect: Duration,
    /// Waiting for the response headers and the first event of a stream (a local
    /// server sends nothing while it processes the prompt).
    pub first_byte: Duration,
    /// Between two chunks of a body once it has started.
    pub idle: Duration,
}

/// Redirects followed within one origin before giving up.
pub const MAX_REDIRECTS: usize = 5;

/// A client with the connect timeout set, following redirects only within the
/// request's origin.
pub fn client(provider: &str, timeouts: Timeouts) -> Result<reqwest::Client, ModelError> {
    crate::platform::tls::install_provider();
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .user_agent(concat!("troupe/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let follow = attempt
                .previous()
                .first()
                .is_some_and(|first| same_origin(first, attempt.url()))
                && attempt.previous().len() <= MAX_REDIRECTS;
            if follow {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .build()
        .map_err(|e| ModelError::Config(format!("cannot build the {provider} HTTP client: {e}")))
}

/// Same scheme, host and port (the default port of the scheme when none is written).
pub fn same_origin(a: &url::Url, b: &url::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// The error for a redirect that was not followed because it leaves the request's
/// origin (`None`: no usable `Location`, or one within the origin).
fn cross_origin(provider: &str, response: &reqwest::Response) -> Option<ModelError> {
    let location = response.headers().get(reqwest::header::LOCATION)?;
    let target = response
        .url()
        .join(&String::from_utf8_lossy(location.as_bytes()))
        .ok()?;
    if same_origin(response.url(), &target) {
        return None;
    }
    let host = crate::engine::sanitize::one_line(target.host_str().unwrap_or("")).into_owned();
    let origin = match target.port() {
        Some(port) => format!("{}://{host}:{port}", target.scheme()),
        None => format!("{}://{host}", target.scheme()),
    };
    Some(ModelError::CrossOriginRedirect {
        provider: provider.to_string(),
        origin,
    })
}

/// Sends a request. A status other than 2xx becomes [`ModelError::Http`].
pub async fn send(
    provider: &str,
    request: reqwest::RequestBuilder,
    timeouts: Timeouts,
) -> Result<reqwest::Response, ModelError> {
    let response = match tokio::time::timeout(timeouts.first_byte, request.send()).await {
        Err(_) => return Err(first_byte_error(provider, timeouts)),
        Ok(Err(e)) => return Err(network_error(provider, &e)),
        Ok(Ok(r)) => r,
    };
    if response.status().is_success() {
        return Ok(response);
    }
    if response.status().is_redirection() {
        if let Some(error) = cross_origin(provider, &response) {
            return Err(error);
        }
    }
    Err(http_error(provider, response, timeouts).await)
}

fn first_byte_error(provider: &str, timeouts: Timeouts) -> ModelError {
    ModelError::Network {
        provider: provider.to_string(),
        message: format!(
            "no answer within {} s (model.network.first_byte_timeout_secs)",
            timeouts.first_byte.as_secs()
        ),
    }
}

/// A transport error, with its chain of causes (reqwest's own message is terse). A
/// refused connection becomes [`ModelError::Refused`], naming the address.
pub fn network_error(provider: &str, error: &reqwest::Error) -> ModelError {
    if refused(error) {
        let address = error
            .url()
            .map(|u| {
                let host = u.host_str().unwrap_or("?");
                match u.port_or_known_default() {
                    Some(port) => format!("{host}:{port}"),
                    None => host.to_string(),
                }
            })
            .unwrap_or_else(|| "the server".into());
        return ModelError::Refused {
            provider: provider.to_string(),
            address,
        };
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    ModelError::Network {
        provider: provider.to_string(),
        message,
    }
}

/// Was the connection refused (nothing listens at the address)?
fn refused(error: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
        }
        source = cause.source();
    }
    false
}

/// Reads an error response: the status, the server's message and any retry delay it
/// asked for (a `Retry-After` header, or a Google `RetryInfo.retryDelay`).
async fn http_error(provider: &str, response: reqwest::Response, timeouts: Timeouts) -> ModelError {
    let status = response.status();
    let header_delay = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let body = match tokio::time::timeout(timeouts.idle, response.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    let (message, body_delay) = error_message(&body);
    let message = if message.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("no message")
            .to_string()
    } else {
        message
    };
    ModelError::Http {
        provider: provider.to_string(),
        status: status.as_u16(),
        message,
        retry_after: header_delay.or(body_delay),
    }
}

/// The message of an error body: Google's `{"error":{"message","status","details"}}`,
/// OpenAI's `{"error":{"message","type"}}`, `{"error":"…"}`, `{"message":"…"}`, or the
/// text itself (shortened). Also the `RetryInfo` delay when there is one.
pub fn error_message(body: &str) -> (String, Option<Duration>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (shorten(body.trim(), 500), None);
    };
    let error = value.get("error").unwrap_or(&value);
    let message = match error {
        Value::String(s) => s.clone(),
        _ => {
            let text = error
                .get("message")
                .or_else(|| error.get("detail"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            match error.get("status").and_then(Value::as_str) {
                Some(status) if !text.is_empty() => format!("{text} ({status})"),
                Some(status) => status.to_string(),
                None if text.is_empty() => shorten(body.trim(), 500),
                None => text,
            }
        }
    };
    (message, google_retry_delay(error))
}

/// `RetryInfo.retryDelay` (`"34s"`, `"0.5s"`) from a Google error's `details`.
fn google_retry_delay(error: &Value) -> Option<Duration> {
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .find_map(|d| {
            d.trim()
                .strip_suffix('s')?
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64)
        })
}

/// A `Retry-After` value: delay seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

/// The data of one server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseData {
    pub data: String,
    /// The body ended inside this event (no blank line closed it): the stream was cut.
    pub unterminated: bool,
}

/// Is this an event stream? Anything else is read whole by the caller.
pub fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Reads a body whole, within the first-byte timeout (a server that answers a
/// non-streamed request may send its headers before it has generated anything).
pub async fn read_body(
    provider: &str,
    response: reqwest::Response,
    timeouts: Timeouts,
) -> Result<String, ModelError> {
    match tokio::time::timeout(timeouts.first_byte, response.text()).await {
        Err(_) => Err(first_byte_error(provider, timeouts)),
        Ok(Err(e)) => Err(network_error(provider, &e)),
        Ok(Ok(text)) => Ok(text),
    }
}

fn idle_error(provider: &str, timeouts: Timeouts) -> ModelError {
    ModelError::Network {
        provider: provider.to_string(),
        message: format!(
            "the stream stalled: no data for {} s (model.network.idle_timeout_secs)",
            timeouts.idle.as_secs()
        ),
    }
}

/// The `data` of each event of an SSE body, as it arrives. Events without data
/// (comments, keep-alives) are skipped. An event left open when the body ends is still
/// delivered, marked `unterminated`, so the caller can tell a cut stream from a
/// malformed one.
pub fn sse_data(
    provider: &str,
    response: reqwest::Response,
    timeouts: Timeouts,
) -> BoxStream<'static, Result<SseData, ModelError>> {
    let provider = provider.to_string();
    let tail = Arc::new(Mutex::new(Vec::<u8>::with_capacity(4)));
    let ended = Arc::new(AtomicBool::new(false));
    let track = tail.clone();
    let body = response.bytes_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            if let Ok(mut t) = track.lock() {
                t.extend_from_slice(bytes);
                let keep = t.len().saturating_sub(4);
                t.drain(..keep);
            }
        }
        chunk
    });
    let end_flag = ended.clone();
    // A blank line after the body dispatches an event the server left open.
    let closing = stream::once(async move {
        end_flag.store(true, Ordering::SeqCst);
        Ok::<Bytes, reqwest::Error>(Bytes::from_static(b"\n\n"))
    });
    let mut events = Box::pin(body.chain(closing).eventsource());
    let stream = async_stream::stream! {
        let mut started = false;
        loop {
            let wait = if started { timeouts.idle } else { timeouts.first_byte };
            let next = match tokio::time::timeout(wait, events.next()).await {
                Err(_) if started => {
                    yield Err(idle_error(&provider, timeouts));
                    return;
                }
                Err(_) => {
                    yield Err(first_byte_error(&provider, timeouts));
                    return;
                }
                Ok(next) => next,
            };
            started = true;
            match next {
                None => return,
                Some(Err(e)) => {
                    let message = match e {
                        eventsource_stream::EventStreamError::Transport(t) => {
                            yield Err(network_error(&provider, &t));
                            return;
                        }
                        other => other.to_string(),
                    };
                    yield Err(ModelError::Malformed {
                        provider: provider.clone(),
                        message: format!("unreadable event stream: {message}"),
                    });
                    return;
                }
                Some(Ok(event)) => {
                    if event.data.is_empty() {
                        continue;
                    }
                    let unterminated = ended.load(Ordering::SeqCst)
                        && !tail.lock().map(|t| closes_event(&t)).unwrap_or(true);
                    yield Ok(SseData { data: event.data, unterminated });
                }
            }
        }
    };
    Box::pin(stream)
}

fn closes_event(tail: &[u8]) -> bool {
    tail.ends_with(b"\n\n") || tail.ends_with(b"\r\r") || tail.ends_with(b"\r\n\r\n")
}

/// The error for event data that is not the JSON expected: a cut stream when the
/// body ended inside it (retryable), else a malformed response.
pub fn bad_event(provider: &str, event: &SseData, error: &serde_json::Error) -> ModelError {
    if event.unterminated {
        return ModelError::InvalidStream {
            provider: provider.to_string(),
            kind: "STREAM_CUT".into(),
            message: format!(
                "the stream ended in the middle of an event: {}",
                shorten(&event.data, 200)
            ),
        };
    }
    ModelError::Malformed {
        provider: provider.to_string(),
        message: format!(
            "an event is not JSON ({error}): {}",
            shorten(&event.data, 200)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_error_body_gives_message_and_delay() {
        let body = r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED",
            "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34s"}]}}"#;
        let (message, delay) = error_message(body);
        assert_eq!(message, "Quota exceeded (RESOURCE_EXHAUSTED)");
        assert_eq!(delay, Some(Duration::from_secs(34)));
        let (message, delay) = error_message(r#"{"error":{"message":"bad model","type":"x"}}"#);
        assert_eq!((message.as_str(), delay), ("bad model", None));
        assert_eq!(error_message("<html>502</html>").0, "<html>502</html>");
    }

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
