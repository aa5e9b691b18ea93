//! `web_fetch`: fetches the URLs named in `prompt` (or `url`), converts HTML to text,
//! and has the model process the content per the prompt's instructions, as
//! gemini-cli's fallback path does. Private, loopback, link-local and metadata
//! addresses are refused (see [`net`]). When the model cannot process the content, the
//! fetched text itself is returned.

pub mod net;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};
use url::Url;

use self::net::{fetch, readable_text, FetchError, FetchLimits};
use super::shell::format::wrap_untrusted;
use super::{Services, Tool, ToolContext};
use crate::engine::model::ModelRequest;
use crate::protocol::content::Content;
use crate::protocol::{ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};

/// Characters of fetched text shared among all URLs of one call.
const CONTENT_BUDGET: usize = 250_000;
const TRUNCATION_WARNING: &str = "\n\n... [Content truncated due to size limit] ...";

/// Requests allowed per host in [`RATE_WINDOW`].
const RATE_LIMIT: usize = 10;
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// The `web_fetch` tool. Remembers when each host was last asked, for the rate limit.
#[derive(Default)]
pub struct WebFetch {
    recent: Mutex<HashMap<String, Vec<Instant>>>,
}

impl WebFetch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a request to `url`'s host; false when the host already had
    /// [`RATE_LIMIT`] requests in the last [`RATE_WINDOW`].
    fn admit(&self, url: &Url) -> bool {
        let host = url.host_str().unwrap_or_default().to_string();
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let times = recent.entry(host).or_default();
        times.retain(|t| now.duration_since(*t) < RATE_WINDOW);
        if times.len() >= RATE_LIMIT {
            return false;
        }
        times.push(now);
        true
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
}

/// The name the model calls.
pub const NAME: &str = "web_fetch";

impl Tool for WebFetch {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "WebFetch"
    }

    /// gemini-cli 0.61 writes this core tool's declaration out per model family, without
    /// `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Fetch
    }

    fn description(&self) -> String {
        "Fetches content from URL(s) embedded in a prompt and processes it as the prompt \
         asks (e.g. summarize, extract specific data). Include up to 20 http(s) URLs and \
         the instructions in 'prompt'; or give one 'url' to get its text directly. \
         Local and private network addresses are refused."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "A comprehensive prompt that includes the URL(s) (up to 20) to fetch and specific instructions on how to process their content (e.g., \"Summarize https://example.com/article and extract key points from https://another.com/data\"). All URLs must be complete and start with \"http://\" or \"https://\"."},
                "url": {"type": "string", "description": "Optional: one URL whose content is returned as text, without processing."}
            }
        })
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        if let Some(url) = p.url.as_deref().filter(|u| !u.trim().is_empty()) {
            let (urls, errors) = parse_prompt(url);
            if let Some(error) = errors.first() {
                return Err(error.clone());
            }
            if urls.is_empty() {
                return Err(format!("Invalid URL: \"{url}\""));
            }
            return Ok(());
        }
        let prompt = p.prompt.as_deref().unwrap_or("");
        if prompt.trim().is_empty() {
            return Err(
                "The 'prompt' parameter cannot be empty and must contain URL(s) and instructions."
                    .into(),
            );
        }
        let (urls, errors) = parse_prompt(prompt);
        if !errors.is_empty() {
            return Err(format!(
                "Error(s) in prompt URLs:\n- {}",
                errors.join("\n- ")
            ));
        }
        if urls.is_empty() {
            return Err("The 'prompt' must contain at least one valid URL (starting with http:// or https://).".into());
        }
        Ok(())
    }

    fn confirmation(
        &self,
        p: &Params,
        _: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let urls: Vec<String> = requested_urls(p)
            .iter()
            .map(|u| net::github_raw(u).to_string())
            .collect();
        let prompt = match &p.url {
            Some(url) if !url.trim().is_empty() => format!("Fetch {url}"),
            _ => p.prompt.clone().unwrap_or_default(),
        };
        let details = ConfirmationDetails::Fetch {
            title: "Confirm Web Fetch".into(),
            prompt,
            urls,
        };
        Box::pin(async move { Some(details) })
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let (admitted, limited): (Vec<Url>, Vec<Url>) =
            requested_urls(&p).into_iter().partition(|u| self.admit(u));
        let limited = limited
            .iter()
            .map(|u| format!("[Rate limit exceeded] {u}"))
            .collect();
        Box::pin(run(p, admitted, limited, ctx))
    }
}

/// gemini-cli's `parsePrompt`: every whitespace-separated token containing `://` must
/// be an http(s) URL.
pub fn parse_prompt(text: &str) -> (Vec<Url>, Vec<String>) {
    let mut urls = Vec::new();
    let mut errors = Vec::new();
    for token in text.split_whitespace().filter(|t| t.contains("://")) {
        match Url::parse(token) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => urls.push(url),
            Ok(_) => errors.push(format!(
                "Unsupported protocol in URL: \"{token}\". Only http and https are supported."
            )),
            Err(_) => errors.push(format!("Malformed URL detected: \"{token}\".")),
        }
    }
    (urls, errors)
}

/// The URLs of a call, normalised (no trailing slash on a path) and de-duplicated.
fn requested_urls(p: &Params) -> Vec<Url> {
    let mut text = p.url.clone().unwrap_or_default();
    if let Some(prompt) = &p.prompt {
        text.push(' ');
        text.push_str(prompt);
    }
    let mut out: Vec<Url> = Vec::new();
    for mut url in parse_prompt(&text).0 {
        let path = url.path().to_string();
        if path.len() > 1 && path.ends_with('/') {
            url.set_path(path.trim_end_matches('/'));
        }
        if !out.contains(&url) {
            out.push(url);
        }
    }
    out
}

fn limits(services: &Services) -> FetchLimits {
    let s = &services.settings.web_fetch;
    FetchLimits {
        timeout: Duration::from_secs(s.timeout_secs.max(1)),
        max_bytes: s.max_bytes,
        max_redirects: s.max_redirects,
        allow_loopback: s.allow_loopback,
    }
}

async fn run(p: Params, urls: Vec<Url>, limited: Vec<String>, ctx: ToolContext) -> ToolOutput {
    let limits = limits(&ctx.services);
    let direct = p.url.as_deref().is_some_and(|u| !u.trim().is_empty())
        && p.prompt.as_deref().is_none_or(|t| t.trim().is_empty());
    let fetches = futures::future::join_all(urls.iter().map(|u| fetch(u, &limits)));
    let results = tokio::select! {
        r = fetches => r,
        _ = ctx.cancel.cancelled() => {
            return ToolOutput::text("Fetch cancelled by user.", "Fetch cancelled.");
        }
    };
    let mut skipped = limited;
    let mut failures = Vec::new();
    let mut pages = Vec::new();
    for (url, result) in urls.iter().zip(results) {
        match result {
            Err(FetchError::Blocked(_)) => skipped.push(format!("[Blocked Host] {url}")),
            Err(e) => failures.push((url.to_string(), e.to_string())),
            Ok(fetched) if fetched.status >= 400 => failures.push((
                url.to_string(),
                FetchError::Status(fetched.status).to_string(),
            )),
            Ok(fetched) => pages.push((url.to_string(), readable_text(&fetched))),
        }
    }
    if pages.is_empty() && failures.is_empty() {
        let message = format!("All requested URLs were skipped: {}", skipped.join(", "));
        return ToolOutput::error(
            ToolErrorKind::WebFetchProcessingError,
            message.clone(),
            format!("Error: {message}"),
        );
    }
    if pages.is_empty() {
        let mut all: Vec<String> = failures.iter().map(|(u, m)| format!("{u}: {m}")).collect();
        all.extend(skipped.iter().cloned());
        let message = format!("All fallback fetch attempts failed: {}", all.join(", "));
        return ToolOutput::error(
            ToolErrorKind::WebFetchFallbackFailed,
            message.clone(),
            format!("Error: {message}"),
        );
    }
    let pages = share_budget(pages);
    let warning = if skipped.is_empty() {
        String::new()
    } else {
        format!(
            "[Warning] The following URLs were skipped:\n{}\n\n",
            skipped.join("\n")
        )
    };
    if direct {
        let text = pages
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        return ToolOutput::text(
            wrap_untrusted(&format!("{warning}{text}")),
            format!("Fetched content from {}", pages[0].0),
        );
    }
    let sources = sources_block(&pages, &failures);
    let prompt = p.prompt.clone().unwrap_or_default();
    match process_with_model(&ctx.services, &prompt, &sources).await {
        Ok(text) => ToolOutput::text(
            wrap_untrusted(&format!("{warning}{text}")),
            format!(
                "Content for {} URL(s) processed using fallback fetch.",
                urls.len()
            ),
        ),
        Err(reason) => {
            tracing::warn!(%reason, "web_fetch: model processing failed; returning raw content");
            ToolOutput::text(
                wrap_untrusted(&format!(
                    "{warning}The fetched content could not be processed by the model ({reason}). Here is the content itself; follow the user's instructions using it.\n\n{sources}"
                )),
                format!("Fetched {} URL(s); returned unprocessed content.", pages.len()),
            )
        }
    }
}

/// Gives every page a fair share of [`CONTENT_BUDGET`], smallest first, so one huge
/// page cannot crowd out the others.
fn share_budget(mut pages: Vec<(String, String)>) -> Vec<(String, String)> {
    let order: Vec<usize> = {
        let mut idx: Vec<usize> = (0..pages.len()).collect();
        idx.sort_by_key(|&i| pages[i].1.chars().count());
        idx
    };
    let mut remaining = CONTENT_BUDGET;
    let mut left = pages.len();
    for i in order {
        let share = remaining / left.max(1);
        let text = &pages[i].1;
        if text.chars().count() > share {
            let keep = share.saturating_sub(TRUNCATION_WARNING.len());
            let mut cut: String = text.chars().take(keep).collect();
            cut.push_str(TRUNCATION_WARNING);
            pages[i].1 = cut;
        }
        remaining = remaining.saturating_sub(pages[i].1.chars().count());
        left -= 1;
    }
    pages
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn sources_block(pages: &[(String, String)], failures: &[(String, String)]) -> String {
    let ok = pages.iter().map(|(url, text)| {
        format!(
            "<source url=\"{}\">\n{}\n</source>",
            xml_escape(url),
            xml_escape(text)
        )
    });
    let failed = failures.iter().map(|(url, message)| {
        format!(
            "<source url=\"{}\">\nError: {}\n</source>",
            xml_escape(url),
            xml_escape(message)
        )
    });
    ok.chain(failed).collect::<Vec<_>>().join("\n")
}

/// Asks the session's model to follow the prompt on the fetched content.
async fn process_with_model(
    services: &Services,
    prompt: &str,
    sources: &str,
) -> Result<String, String> {
    let request_text = format!(
        "Follow the user's instructions below using the provided webpage content.\n\n<user_instructions>\n{}\n</user_instructions>\n\nI was unable to access the URL(s) directly using the primary fetch tool. Instead, I have fetched the raw content of the page(s). Please use the following content to answer the request. Do not attempt to access the URL(s) again.\n\n<content>\n{sources}\n</content>\n",
        xml_escape(prompt)
    );
    let request = ModelRequest::new(
        services.model_name.clone(),
        vec![Content::user_text(request_text)],
    );
    let events = services
        .model
        .generate(request)
        .await
        .map_err(|e| e.to_string())?;
    let text = crate::providers::visible_text(&events);
    if text.trim().is_empty() {
        return Err("the model returned no text".into());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_urls_are_parsed_like_gemini_cli() {
        let (urls, errors) = parse_prompt("Summarize https://example.com/a and http://x.org/b/");
        assert_eq!(urls.len(), 2);
        assert!(errors.is_empty());
        let (_, errors) = parse_prompt("get ftp://example.com/file");
        assert_eq!(
            errors,
            vec!["Unsupported protocol in URL: \"ftp://example.com/file\". Only http and https are supported."]
        );
        let (_, errors) = parse_prompt("see http://exa mple and https://");
        assert_eq!(errors, vec!["Malformed URL detected: \"https://\"."]);
        let p = Params {
            prompt: Some("a https://Example.com/x/ b https://example.com/x".into()),
            url: None,
        };
        let urls = requested_urls(&p);
        assert_eq!(urls.len(), 1);
        assert_eq!(urls[0].as_str(), "https://example.com/x");
    }

    #[test]
    fn ten_requests_per_host_and_minute() {
        let tool = WebFetch::new();
        let a = Url::parse("https://a.example/x").unwrap();
        let b = Url::parse("https://b.example/x").unwrap();
        for _ in 0..RATE_LIMIT {
            assert!(tool.admit(&a));
        }
        assert!(!tool.admit(&a));
        assert!(tool.admit(&b));
    }

    #[test]
    fn budget_is_shared_smallest_first() {
        let big = "x".repeat(CONTENT_BUDGET);
        let pages = share_budget(vec![("a".into(), big), ("b".into(), "small".into())]);
        assert_eq!(pages[1].1, "small");
        assert!(pages[0].1.ends_with(TRUNCATION_WARNING));
        assert!(pages[0].1.chars().count() <= CONTENT_BUDGET - 5);
    }
}
