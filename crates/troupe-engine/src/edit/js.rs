//! JavaScript string semantics the matcher depends on: `trim()`, `\s`, and the
//! line splitting gemini-cli uses, written once so every strategy agrees.

/// JavaScript's whitespace for `trim()` and `\s`: Unicode White_Space without U+0085,
/// plus U+FEFF.
pub fn is_js_space(c: char) -> bool {
    c == '\u{feff}' || (c != '\u{85}' && c.is_whitespace())
}

/// `String.prototype.trim`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// `String.prototype.trimStart`.
pub fn trim_start(s: &str) -> &str {
    s.trim_start_matches(is_js_space)
}

/// `String.prototype.trimEnd`.
pub fn trim_end(s: &str) -> &str {
    s.trim_end_matches(is_js_space)
}

/// `s.replace(/\s/g, '')`.
pub fn strip_space(s: &str) -> String {
    s.chars().filter(|&c| !is_js_space(c)).collect()
}

/// The leading `[ \t]*` of a line.
pub fn leading_indent(line: &str) -> &str {
    let end = line
        .find(|c: char| c != ' ' && c != '\t')
        .unwrap_or(line.len());
    &line[..end]
}

/// Lines with their `\n` kept, as gemini-cli's `text.match(/.*(?:\n|$)/g).slice(0, -1)`
/// except that a lone `\r` (or U+2028/U+2029) stays inside its line: JavaScript drops
/// the text before such a character, which would lose file content on write.
pub fn lines_with_ends(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    text.split_inclusive('\n').collect()
}

/// The JavaScript `\s` class, for regular expressions.
pub const JS_SPACE_CLASS: &str = r"[\t\n\x0B\x0C\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_follows_javascript() {
        assert_eq!(trim("\u{feff} a \n"), "a");
        assert_eq!(trim("\u{85}a"), "\u{85}a");
        assert_eq!(trim_end("a \t\n"), "a");
        assert_eq!(trim_start("\t a "), "a ");
    }

    #[test]
    fn lines_keep_their_newlines() {
        assert_eq!(lines_with_ends("a\nb"), vec!["a\n", "b"]);
        assert_eq!(lines_with_ends("a\nb\n"), vec!["a\n", "b\n"]);
        assert_eq!(lines_with_ends("a\rb\n"), vec!["a\rb\n"]);
        assert!(lines_with_ends("").is_empty());
    }

    #[test]
    fn indent_is_spaces_and_tabs_only() {
        assert_eq!(leading_indent("\t  x"), "\t  ");
        assert_eq!(leading_indent("   "), "   ");
        assert_eq!(leading_indent("\u{a0}x"), "");
    }
}
