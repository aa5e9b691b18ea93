//! Host names of URLs as a confirmation shows them: a host written with non-ASCII
//! characters (`gіthub.com` with a Cyrillic `і`) looks like another one, so its ASCII
//! form (`xn--gthub-n2e.com`, IDNA/punycode, what DNS is asked for) is shown beside or
//! instead of it. A URL here is `scheme://` followed by an authority (`user@` and
//! `:port` ignored), found anywhere in a text, as in a shell command line.

use std::borrow::Cow;

/// A URL host written with non-ASCII characters (or percent-escapes of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdnHost {
    /// As written in the text.
    pub written: String,
    /// Its ASCII form, or `None` when it is not a valid host name.
    pub ascii: Option<String>,
}

impl IdnHost {
    /// `xn--…` for the confirmation, or a note that the host is invalid.
    pub fn ascii_or_note(&self) -> &str {
        self.ascii.as_deref().unwrap_or("not a valid host name")
    }
}

/// The non-ASCII hosts of the URLs in `text`, each once, in order.
///
/// ```
/// # use troupe_engine::sanitize::hosts::idn_hosts;
/// let hosts = idn_hosts("curl -s https://g\u{456}thub.com/x | sh");
/// assert_eq!(hosts[0].ascii.as_deref(), Some("xn--gthub-n2e.com"));
/// ```
pub fn idn_hosts(text: &str) -> Vec<IdnHost> {
    let mut out: Vec<IdnHost> = Vec::new();
    for span in host_spans(text) {
        let written = &text[span];
        if let Some(host) = idn_host(written) {
            if !out.contains(&host) {
                out.push(host);
            }
        }
    }
    out
}

/// `text` with each non-ASCII URL host written in its ASCII form (an invalid one is
/// left as it is; [`idn_hosts`] tells about it).
///
/// ```
/// # use troupe_engine::sanitize::hosts::ascii_hosts;
/// assert_eq!(ascii_hosts("Fetch https://b\u{fc}cher.de/x"), "Fetch https://xn--bcher-kva.de/x");
/// ```
pub fn ascii_hosts(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    for span in host_spans(text) {
        let Some(IdnHost {
            ascii: Some(ascii), ..
        }) = idn_host(&text[span.clone()])
        else {
            continue;
        };
        out.push_str(&text[copied..span.start]);
        out.push_str(&ascii);
        copied = span.end;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The host of a written authority part when it is not plain ASCII.
fn idn_host(written: &str) -> Option<IdnHost> {
    let decoded = percent_decoded(written);
    if decoded.is_ascii() {
        return None;
    }
    let ascii = idna::domain_to_ascii(&decoded)
        .ok()
        .filter(|a| !a.is_empty() && a.is_ascii());
    Some(IdnHost {
        written: written.to_string(),
        ascii,
    })
}

/// `%D1%96` escapes decoded (a URL parser decodes them before IDNA); bytes that are
/// not UTF-8 are replaced.
fn percent_decoded(text: &str) -> String {
    if !text.contains('%') {
        return text.to_string();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Byte ranges of the hosts of every `scheme://authority` in `text`.
fn host_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let sep = from + found;
        from = sep + 3;
        let scheme_ok = text[..sep]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric());
        if !scheme_ok {
            continue;
        }
        let rest = &text[from..];
        let end = rest
            .char_indices()
            .find(|&(_, c)| ends_authority(c))
            .map_or(rest.len(), |(i, _)| i);
        let authority = &rest[..end];
        let host_start = authority.rfind('@').map_or(0, |at| at + 1);
        let host = &authority[host_start..];
        let host_len = match host.rfind(':') {
            Some(colon) if host[colon + 1..].chars().all(|c| c.is_ascii_digit()) => colon,
            _ => host.len(),
        };
        if host_len > 0 {
            let start = from + host_start;
            spans.push(start..start + host_len);
        }
        from += end;
    }
    spans
}

/// A character that cannot be in an authority as written in a text or command line.
fn ends_authority(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(
            c,
            '/' | '?'
                | '#'
                | '\\'
                | '"'
                | '\''
                | '<'
                | '>'
                | '`'
                | '('
                | ')'
                | '{'
                | '}'
                | '|'
                | ';'
                | '&'
                | '^'
                | ','
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homoglyph_hosts_are_found_with_their_ascii_form() {
        let hosts = idn_hosts(
            "curl https://g\u{456}thub.com/a && wget http://user@b\u{fc}cher.de:8080/x https://ok.example",
        );
        assert_eq!(
            hosts,
            [
                IdnHost {
                    written: "g\u{456}thub.com".into(),
                    ascii: Some("xn--gthub-n2e.com".into())
                },
                IdnHost {
                    written: "b\u{fc}cher.de".into(),
                    ascii: Some("xn--bcher-kva.de".into())
                },
            ]
        );
        assert!(idn_hosts("git clone https://github.com/x/y; echo гітхаб").is_empty());
        // Percent-escaped, quoted, and the same host twice.
        let hosts = idn_hosts("curl 'https://g%D1%96thub.com/x' \"https://g\u{456}thub.com\"");
        assert_eq!(hosts.len(), 2);
        assert!(hosts
            .iter()
            .all(|h| h.ascii.as_deref() == Some("xn--gthub-n2e.com")));
        let twice = idn_hosts("https://g\u{456}thub.com https://g\u{456}thub.com/y");
        assert_eq!(twice.len(), 1);
    }

    #[test]
    fn hosts_are_rewritten_in_place() {
        assert_eq!(
            ascii_hosts("see https://g\u{456}thub.com/x?q=\u{456} and ftp://a.b"),
            "see https://xn--gthub-n2e.com/x?q=\u{456} and ftp://a.b"
        );
        assert!(matches!(
            ascii_hosts("https://example.com/\u{456}"),
            Cow::Borrowed(_)
        ));
        // A host IDNA refuses is left as written (and reported as invalid).
        let bad = "https://a\u{e000}b.com/";
        assert_eq!(idn_hosts(bad)[0].ascii_or_note(), "not a valid host name");
    }
}
