//! gemini-cli's `unescapeStringForGeminiBug`: models sometimes send `\\n`, `\\t`, `\\"`
//! … where the file has a newline, a tab, a quote. The fast path of the Corrector uses
//! this before any model is asked.

use std::sync::OnceLock;

use regex::{Captures, Regex};

/// One or more backslashes before `n t r ' " \` \ ` or a newline, as gemini-cli's
/// `/\\+(n|t|r|'|"|`|\\|\n)/g`.
fn pattern() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r#"\\+(n|t|r|'|"|`|\\|\n)"#).ok())
        .as_ref()
}

/// Undoes over-escaping: `\\n` → newline, `\\t` → tab, `\\"` → `"`, … (greedy, so any
/// run of backslashes before such a character collapses).
pub fn unescape(input: &str) -> String {
    let Some(re) = pattern() else {
        return input.to_string();
    };
    re.replace_all(input, |caps: &Captures| {
        match caps.get(1).map_or("", |m| m.as_str()) {
            "n" => "\n".to_string(),
            "t" => "\t".to_string(),
            "r" => "\r".to_string(),
            "'" => "'".to_string(),
            "\"" => "\"".to_string(),
            "`" => "`".to_string(),
            "\\" => "\\".to_string(),
            "\n" => "\n".to_string(),
            _ => caps
                .get(0)
                .map_or(String::new(), |m| m.as_str().to_string()),
        }
    })
    .into_owned()
}

/// Whole-file content that is clearly over-escaped: it has no line break at all, yet
/// unescaping gives it several. (Content with real line breaks is left alone: a `\n`
/// inside a string literal of real code is not a bug.)
pub fn looks_over_escaped(content: &str) -> bool {
    !content.contains('\n') && unescape(content).matches('\n').count() >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_gemini_cli_examples() {
        assert_eq!(unescape("\\n"), "\n");
        assert_eq!(unescape("\\\\n"), "\n");
        assert_eq!(unescape("\\t"), "\t");
        assert_eq!(unescape("\\\\"), "\\");
        assert_eq!(unescape("\\`"), "`");
        assert_eq!(unescape("print(\\'a\\')"), "print('a')");
        assert_eq!(unescape("say \\\"hi\\\""), "say \"hi\"");
        assert_eq!(unescape("C:\\Folder"), "C:\\Folder");
        assert_eq!(unescape("path\\\\to"), "path\to");
        assert_eq!(unescape("a\\\nb"), "a\nb");
        assert_eq!(unescape("plain"), "plain");
    }

    #[test]
    fn over_escaped_content_is_recognised() {
        assert!(looks_over_escaped("def f():\\n    return 1\\n"));
        assert!(!looks_over_escaped("print('a\\nb')\nprint(2)\n"));
        assert!(!looks_over_escaped("x = 1"));
    }
}
