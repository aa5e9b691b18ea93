//! Remote servers: `url` with `type = "http"` (Streamable HTTP, rmcp's client over
//! reqwest), `type = "sse"` (the older HTTP+SSE transport, see [`super::sse`]), or no
//! type: Streamable HTTP first, then SSE when that fails for any reason other than
//! authentication (gemini-cli's fallback). `headers` go with every request, `$VAR` /
//! `${VAR}` expanded from Troupe's environment (never the model API keys). Streamable
//! HTTP keeps its connections alive ([`http_client`]).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use rmcp::ServiceExt;

use super::server::{Connected, TroupeClient};
use crate::settings::mcp::{expand, McpServerConfig};

/// Calls that may be in flight at once over one Streamable HTTP connection.
const MAX_CONCURRENT_POSTS: usize = 256;

/// Opens a remote server with the transport its config names and runs `initialize`.
pub async fn open_remote(
    config: &McpServerConfig,
    client: TroupeClient,
) -> Result<Connected, String> {
    let name = &config.name;
    let Some(url) = config.entry.url.as_deref() else {
        return Err(format!(
            "MCP server '{name}': Invalid configuration: missing url (for Streamable HTTP or SSE) and command (for stdio)."
        ));
    };
    let headers = expanded_headers(&config.entry.headers, &crate::settings::secrets::env_var)
        .map_err(|e| format!("MCP server '{name}': {e}"))?;
    match config.entry.transport.as_deref() {
        Some("http") => open_http(url, &headers, client)
            .await
            .map_err(|e| format!("MCP server '{name}' (Streamable HTTP {url}): {e}")),
        Some("sse") => open_sse(url, &headers, client)
            .await
            .map_err(|e| format!("MCP server '{name}' (SSE {url}): {e}")),
        None => match open_http(url, &headers, client.clone()).await {
            Ok(connected) => Ok(connected),
            Err(http) if is_auth_error(&http) => Err(format!(
                "MCP server '{name}' (Streamable HTTP {url}): {http}"
            )),
            Err(http) => {
                tracing::info!(server = %name, error = %http, "Streamable HTTP failed; trying SSE");
                open_sse(url, &headers, client).await.map_err(|sse| {
                    format!("MCP server '{name}' ({url}): Streamable HTTP failed: {http}; SSE failed: {sse}")
                })
            }
        },
        Some(other) => Err(format!(
            "MCP server '{name}': unknown type \"{other}\" for a url (use \"http\" or \"sse\")"
        )),
    }
}

/// The configured headers with `$VAR`/`${VAR}` expanded, checked as HTTP headers.
pub fn expanded_headers(
    headers: &BTreeMap<String, String>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (key, value) in headers {
        let name = HeaderName::from_bytes(key.trim().as_bytes())
            .map_err(|_| format!("header name \"{key}\" is not a valid HTTP header name"))?;
        let value = HeaderValue::from_str(expand(value, lookup).trim()).map_err(|_| {
            format!("the value of header \"{key}\" is not a valid HTTP header value")
        })?;
        map.insert(name, value);
    }
    Ok(map)
}

fn is_auth_error(error: &str) -> bool {
    let lower = error.to_ascii_lowercase();
    ["401", "403", "unauthorized", "forbidden", "auth required"]
        .iter()
        .any(|needle| lower.contains(needle))
}

async fn open_http(
    url: &str,
    headers: &HeaderMap,
    client: TroupeClient,
) -> Result<Connected, String> {
    let custom: HashMap<HeaderName, HeaderValue> = headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let transport = StreamableHttpClientTransport::with_client(
        http_client()?,
        StreamableHttpClientTransportConfig::with_uri(url)
            .custom_headers(custom)
            .max_concurrent_requests(MAX_CONCURRENT_POSTS),
    );
    let service = client
        .serve(transport)
        .await
        .map_err(|e| without_type_names(&e.to_string()))?;
    Ok(connected(service))
}

/// The HTTP client of Streamable HTTP servers: unlike rmcp's default client, which
/// keeps no idle connection (so every request opened a new one), it keeps connections
/// alive and reuses them (rmcp reads each answer's stream to its end, so a connection
/// goes back to the pool clean). Redirects: same-origin 307 and 308 only, as rmcp's,
/// since they keep the method and body, and a redirect elsewhere would hand the
/// session id and the configured headers to another host.
pub fn http_client() -> Result<reqwest::Client, String> {
    crate::platform::tls::install_provider();
    reqwest::Client::builder()
        .pool_idle_timeout(std::time::Duration::from_secs(60))
        .tcp_nodelay(true)
        .redirect(same_origin_redirects())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// How many redirects one request may follow.
const MAX_REDIRECTS: usize = 10;

fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// rmcp's transport errors name the transport's Rust type
/// (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: …`): keep the rest.
fn without_type_names(error: &str) -> String {
    match (error.find("Transport ["), error.find("] error: ")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &error[..start], &error[end + "] error: ".len()..])
        }
        _ => error.to_string(),
    }
}

async fn open_sse(
    url: &str,
    headers: &HeaderMap,
    client: TroupeClient,
) -> Result<Connected, String> {
    let transport = super::sse::SseClientTransport::connect(url, headers.clone())
        .await
        .map_err(|e| e.to_string())?;
    let service = client.serve(transport).await.map_err(|e| e.to_string())?;
    Ok(connected(service))
}

fn connected(service: rmcp::service::RunningService<rmcp::RoleClient, TroupeClient>) -> Connected {
    let instructions = service
        .peer()
        .peer_info()
        .and_then(|i| i.instructions.clone());
    Connected {
        service,
        child: None,
        stderr: Arc::new(Mutex::new(VecDeque::new())),
        instructions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_expand_variables_but_never_model_keys() {
        let mut headers = BTreeMap::new();
        headers.insert("Authorization".to_string(), "Bearer ${TOKEN}".to_string());
        headers.insert("X-Key".to_string(), "$GEMINI_API_KEY".to_string());
        let lookup = |name: &str| match name {
            "TOKEN" => Some("t0k".to_string()),
            "GEMINI_API_KEY" => Some("secret".to_string()),
            _ => None,
        };
        let map = expanded_headers(&headers, &lookup).unwrap();
        assert_eq!(map["authorization"], "Bearer t0k");
        assert_eq!(map["x-key"], "");
    }

    #[test]
    fn transport_type_names_are_left_out_of_errors() {
        assert_eq!(
            without_type_names("Send message error Transport [a::B<c::D>] error: HTTP 401, when x"),
            "Send message error HTTP 401, when x"
        );
        assert_eq!(without_type_names("plain"), "plain");
    }

    #[test]
    fn bad_header_names_are_refused_with_the_name() {
        let mut headers = BTreeMap::new();
        headers.insert("Bad Name".to_string(), "v".to_string());
        let error = expanded_headers(&headers, &|_| None).unwrap_err();
        assert!(error.contains("\"Bad Name\""), "{error}");
    }
}
