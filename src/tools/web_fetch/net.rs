//! Fetching one URL safely: only http(s); the host resolved first and refused when any
//! of its addresses is loopback, private, link-local, a cloud metadata endpoint or
//! otherwise not public; the connection pinned to the addresses that were checked (so
//! a second DNS answer cannot swap them); redirects followed by hand, each target
//! checked again; a timeout and a size cap on the body.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, LOCATION};
use url::{Host, Url};

const USER_AGENT: &str = "Mozilla/5.0 (compatible; Troupe/0.1; coding agent)";

/// How fetching is limited.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    pub timeout: Duration,
    pub max_bytes: u64,
    pub max_redirects: u32,
    /// Tests only: loopback addresses are allowed.
    pub allow_loopback: bool,
}

/// Why a URL was not fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("Access to blocked or private host {0} is not allowed.")]
    Blocked(String),
    #[error("Redirect to blocked or private host {0} is not allowed.")]
    BlockedRedirect(String),
    #[error("Unsupported protocol in URL: \"{0}\". Only http and https are supported.")]
    Protocol(String),
    #[error("Cannot resolve host {host}: {message}")]
    Resolve { host: String, message: String },
    #[error("Request failed: {0}")]
    Request(String),
    #[error("Request failed with status code {0}")]
    Status(u16),
    #[error("Content exceeds size limit of {0} bytes")]
    TooLarge(u64),
    #[error("Too many redirects (more than {0})")]
    TooManyRedirects(u32),
    #[error("Invalid redirect location {0:?}")]
    BadRedirect(String),
}

/// A fetched response.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub url: Url,
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// Whether an address must never be fetched: any address of the IANA IPv4 and IPv6
/// Special-Purpose Address Registries (the `iprfc` crate's checked-in snapshot of both),
/// multicast, deprecated site-local, and any IPv6 form that embeds such an IPv4 address
/// (loopback only allowed when `allow_loopback`).
pub fn is_blocked_ip(ip: IpAddr, allow_loopback: bool) -> bool {
    match ip {
        IpAddr::V4(v4) => is_blocked_v4(v4, allow_loopback),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_blocked_v4(v4, allow_loopback);
            }
            if v6.is_loopback() {
                return !allow_loopback;
            }
            iprfc::RFC6890.contains(&ip)
                || v6.is_multicast()
                || (v6.segments()[0] & 0xffc0) == 0xfec0 // deprecated site-local fec0::/10
                || embedded_v4(v6).is_some_and(|v4| is_blocked_v4(v4, allow_loopback))
        }
    }
}

fn is_blocked_v4(ip: Ipv4Addr, allow_loopback: bool) -> bool {
    if ip.is_loopback() {
        return !allow_loopback;
    }
    iprfc::RFC6890.contains(&IpAddr::V4(ip)) || ip.is_multicast()
}

/// The IPv4 address inside an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 address.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let tail =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if s[..6] == [0, 0, 0, 0, 0, 0] && !(s[6] == 0 && s[7] <= 1) {
        return Some(tail(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(tail(s[1], s[2]));
    }
    None
}

/// Names that always mean this machine or a private network.
fn is_blocked_name(host: &str, allow_loopback: bool) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let loopback_name = host == "localhost" || host.ends_with(".localhost");
    if loopback_name {
        return !allow_loopback;
    }
    host.ends_with(".local") || host.ends_with(".internal") || host == "metadata"
}

/// Resolves the URL's host and checks every address; returns the addresses to use.
pub async fn resolve_checked(
    url: &Url,
    limits: &FetchLimits,
) -> Result<Vec<SocketAddr>, FetchError> {
    let blocked = || FetchError::Blocked(url.to_string());
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(Host::Domain(name)) => {
            if is_blocked_name(name, limits.allow_loopback) {
                return Err(blocked());
            }
            tokio::net::lookup_host((name, port))
                .await
                .map_err(|e| FetchError::Resolve {
                    host: name.to_string(),
                    message: e.to_string(),
                })?
                .collect()
        }
        None => return Err(blocked()),
    };
    if addrs.is_empty()
        || addrs
            .iter()
            .any(|a| is_blocked_ip(a.ip(), limits.allow_loopback))
    {
        return Err(blocked());
    }
    Ok(addrs)
}

/// GitHub `/blob/` pages are fetched from raw.githubusercontent.com instead.
pub fn github_raw(url: &Url) -> Url {
    if url.host_str() != Some("github.com") {
        return url.clone();
    }
    let segments: Vec<&str> = url.path().split('/').collect();
    // ["", owner, repo, "blob", rest...]
    if segments.len() > 4 && segments[3] == "blob" {
        let mut raw = url.clone();
        let path = format!(
            "/{}/{}/{}",
            segments[1],
            segments[2],
            segments[4..].join("/")
        );
        if raw.set_host(Some("raw.githubusercontent.com")).is_ok() {
            raw.set_path(&path);
            return raw;
        }
    }
    url.clone()
}

/// Fetches `url`, following redirects by hand with every hop checked.
pub async fn fetch(url: &Url, limits: &FetchLimits) -> Result<Fetched, FetchError> {
    let mut current = github_raw(url);
    for hop in 0..=limits.max_redirects {
        if !matches!(current.scheme(), "http" | "https") {
            return Err(FetchError::Protocol(current.to_string()));
        }
        let addrs = match resolve_checked(&current, limits).await {
            Err(FetchError::Blocked(u)) if hop > 0 => return Err(FetchError::BlockedRedirect(u)),
            other => other?,
        };
        // No proxy from the environment: the connection goes to the address checked
        // above (an explicit `web_fetch.proxy` is the user's own choice).
        crate::platform::tls::install_provider();
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(limits.timeout)
            .user_agent(USER_AGENT);
        if let Some(Host::Domain(name)) = current.host() {
            builder = builder.resolve_to_addrs(name, &addrs);
        }
        let client = builder
            .build()
            .map_err(|e| FetchError::Request(e.to_string()))?;
        let mut response = client
            .get(current.clone())
            .send()
            .await
            .map_err(|e| FetchError::Request(without_url(&e)))?;
        let status = response.status();
        if status.is_redirection() {
            let Some(location) = response.headers().get(LOCATION) else {
                return Err(FetchError::Status(status.as_u16()));
            };
            let location = location.to_str().unwrap_or_default().to_string();
            current = current
                .join(&location)
                .map_err(|_| FetchError::BadRedirect(location))?;
            continue;
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if response
            .content_length()
            .is_some_and(|len| len > limits.max_bytes)
        {
            return Err(FetchError::TooLarge(limits.max_bytes));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| FetchError::Request(without_url(&e)))?
        {
            if (body.len() + chunk.len()) as u64 > limits.max_bytes {
                return Err(FetchError::TooLarge(limits.max_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(Fetched {
            url: current,
            status: status.as_u16(),
            content_type,
            body,
        });
    }
    Err(FetchError::TooManyRedirects(limits.max_redirects))
}

fn without_url(e: &reqwest::Error) -> String {
    let mut message = e.to_string();
    if e.is_timeout() {
        message = "the request timed out".to_string();
    }
    message
}

/// The readable text of a response: HTML (or untyped content) rendered as plain text,
/// anything else decoded as UTF-8.
pub fn readable_text(fetched: &Fetched) -> String {
    let kind = fetched.content_type.to_ascii_lowercase();
    if kind.contains("text/html") || kind.is_empty() {
        return html_text(&fetched.body);
    }
    String::from_utf8_lossy(&fetched.body).into_owned()
}

/// HTML as readable text: no link footnotes, lines not wrapped.
pub fn html_text(html: &[u8]) -> String {
    html2text::config::plain_no_decorate()
        .link_footnotes(false)
        .string_from_read(html, 100_000)
        .unwrap_or_else(|_| String::from_utf8_lossy(html).into_owned())
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_blocked() {
        for blocked in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:c0a8:0101::1",
            "192.0.0.8",
            "192.31.196.1",
            "192.52.193.1",
            "192.88.99.1",
            "192.175.48.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "240.0.0.1",
            "100::1",
            "2001::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "2001:db8::1",
            "2620:4f:8000::1",
            "3fff::1",
            "5f00::1",
            "64:ff9b:1::1",
            "fec0::1",
            "ff02::1",
        ] {
            let ip: IpAddr = blocked.parse().unwrap();
            assert!(is_blocked_ip(ip, false), "{blocked}");
        }
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(!is_blocked_ip(ip, false), "{public}");
        }
    }

    #[test]
    fn the_loopback_switch_allows_only_loopback() {
        assert!(!is_blocked_ip("127.0.0.1".parse().unwrap(), true));
        assert!(!is_blocked_ip("::1".parse().unwrap(), true));
        assert!(is_blocked_ip("10.0.0.1".parse().unwrap(), true));
        assert!(is_blocked_ip("169.254.169.254".parse().unwrap(), true));
        assert!(!is_blocked_name("localhost", true));
        assert!(is_blocked_name("localhost", false));
        assert!(is_blocked_name("metadata.google.internal", true));
        assert!(is_blocked_name("printer.local", true));
    }

    #[test]
    fn github_blob_urls_become_raw() {
        let url = Url::parse("https://github.com/owner/repo/blob/main/src/lib.rs").unwrap();
        assert_eq!(
            github_raw(&url).as_str(),
            "https://raw.githubusercontent.com/owner/repo/main/src/lib.rs"
        );
        let other = Url::parse("https://github.com/owner/repo/issues/1").unwrap();
        assert_eq!(github_raw(&other), other);
    }

    #[test]
    fn html_becomes_readable_text() {
        let html = b"<html><head><title>T</title><style>p{color:red}</style><script>var x=1;</script></head><body><h1>Hello</h1><p>World of <a href=\"/x\">links</a>.</p></body></html>";
        let text = html_text(html);
        assert!(text.contains("Hello"), "{text}");
        assert!(text.contains("World of [links]."), "{text}");
        assert!(!text.contains("var x"), "{text}");
        assert!(!text.contains("color:red"), "{text}");
    }
}
