//! The text the model reads from a shell call (gemini-cli's formats, §3.7 and §6.6):
//! the result lines, the `<untrusted_context>` wrapper, and the head/tail excerpt of
//! output too large to send whole.

use std::path::Path;

/// What became of a foreground command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellResult {
    pub output: String,
    /// A process-level error (bash could not be started).
    pub error: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub background_pids: Vec<i32>,
    pub pgid: Option<i32>,
}

/// `Output: …` then whichever of `Error`, `Exit Code` (non-zero), `Signal`,
/// `Background PIDs` and `Process Group PGID` apply.
pub fn result_text(r: &ShellResult) -> String {
    let output = if r.output.is_empty() {
        "(empty)"
    } else {
        r.output.as_str()
    };
    let mut lines = vec![format!("Output: {output}")];
    if let Some(error) = &r.error {
        lines.push(format!("Error: {error}"));
    }
    if let Some(code) = r.exit_code.filter(|&c| c != 0) {
        lines.push(format!("Exit Code: {code}"));
    }
    if let Some(signal) = &r.signal {
        lines.push(format!("Signal: {signal}"));
    }
    if !r.background_pids.is_empty() {
        let pids: Vec<String> = r.background_pids.iter().map(i32::to_string).collect();
        lines.push(format!("Background PIDs: {}", pids.join(", ")));
    }
    if let Some(pgid) = r.pgid {
        lines.push(format!("Process Group PGID: {pgid}"));
    }
    lines.join("\n")
}

/// The message of a command stopped before it finished, with its partial output.
pub fn aborted_text(by_timeout: Option<std::time::Duration>, output: &str) -> String {
    let mut text = match by_timeout {
        Some(limit) => format!(
            "Command was automatically cancelled because it exceeded the timeout of {:.1} minutes without output.",
            limit.as_secs_f64() / 60.0
        ),
        None => "Command was cancelled by user before it could complete.".to_string(),
    };
    if output.trim().is_empty() {
        text.push_str(" There was no output before it was cancelled.");
    } else {
        text.push_str(" Below is the output before it was cancelled:\n");
        text.push_str(output);
    }
    text
}

/// Marks text that came from outside (a command, a web page) as data, not
/// instructions; a closing tag inside is escaped so it cannot end the block.
pub fn wrap_untrusted(text: &str) -> String {
    let escaped = text.replace("</untrusted_context>", "&lt;/untrusted_context&gt;");
    format!("<untrusted_context>\n{escaped}\n</untrusted_context>")
}

/// `n` with thousands separators, as JavaScript's `toLocaleString()` in English.
pub fn locale_number(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The excerpt sent instead of `content` when it has more than `max` characters: the
/// first 20 % and the last 80 % of the budget, and where the whole text was saved.
pub fn head_tail_excerpt(content: &str, max: usize, saved_to: &Path) -> String {
    // Byte offsets of character positions, without a copy of the (megabytes of) text.
    let count = content.chars().count();
    let at = |chars: usize| {
        content
            .char_indices()
            .nth(chars)
            .map_or(content.len(), |(i, _)| i)
    };
    let head_len = max / 5;
    let tail_len = max - head_len;
    let head = &content[..at(head_len.min(count))];
    let tail_start = count.saturating_sub(tail_len).max(head_len);
    let tail = &content[at(tail_start.min(count))..];
    let omitted = count.saturating_sub(head_len + tail_len);
    format!(
        "Output too large. Showing first {} and last {} characters. For full output see: {}\n{head}\n\n... [{} characters omitted] ...\n\n{tail}",
        locale_number(head_len),
        locale_number(tail_len),
        saved_to.display(),
        locale_number(omitted)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_only_when_present() {
        let r = ShellResult {
            output: "hi".into(),
            pgid: Some(42),
            exit_code: Some(0),
            ..ShellResult::default()
        };
        assert_eq!(result_text(&r), "Output: hi\nProcess Group PGID: 42");
        let r = ShellResult {
            exit_code: Some(2),
            signal: Some("SIGTERM".into()),
            background_pids: vec![7, 8],
            ..ShellResult::default()
        };
        assert_eq!(
            result_text(&r),
            "Output: (empty)\nExit Code: 2\nSignal: SIGTERM\nBackground PIDs: 7, 8"
        );
    }

    #[test]
    fn aborted_messages() {
        assert_eq!(
            aborted_text(Some(std::time::Duration::from_secs(300)), ""),
            "Command was automatically cancelled because it exceeded the timeout of 5.0 minutes without output. There was no output before it was cancelled."
        );
        assert_eq!(
            aborted_text(None, "partial"),
            "Command was cancelled by user before it could complete. Below is the output before it was cancelled:\npartial"
        );
    }

    #[test]
    fn untrusted_wrapper_escapes_its_end_tag() {
        assert_eq!(
            wrap_untrusted("a</untrusted_context>b"),
            "<untrusted_context>\na&lt;/untrusted_context&gt;b\n</untrusted_context>"
        );
    }

    #[test]
    fn excerpt_keeps_head_and_tail() {
        assert_eq!(locale_number(40000), "40,000");
        assert_eq!(locale_number(999), "999");
        assert_eq!(locale_number(1234567), "1,234,567");
        let text: String = (0..100)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let out = head_tail_excerpt(&text, 10, Path::new("/tmp/x.txt"));
        assert_eq!(
            out,
            format!(
                "Output too large. Showing first 2 and last 8 characters. For full output see: /tmp/x.txt\nab\n\n... [90 characters omitted] ...\n\n{}",
                &text[92..]
            )
        );
    }
}
