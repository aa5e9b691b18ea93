//! `@path` references in a prompt, split as gemini-cli's `parseAllAtCommands` does: an
//! `@` not preceded by a backslash, then a path of non-separator characters (a quoted
//! part, a backslash escape, or a `.` that is not the last character before a space or
//! the end). Unlike gemini-cli, `@@` (a diff's `@@ -1,3 +1,4 @@`) is never a
//! reference. Pure text; reading the files is the front end's business.

/// A piece of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptPiece {
    Text(String),
    /// A reference, without its `@`, escapes removed.
    AtPath(String),
}

/// Characters that end a path (besides whitespace).
fn ends_path(c: char) -> bool {
    c.is_whitespace() || ",;!?()[]{}".contains(c)
}

/// Splits `query` into text and `@path` pieces; blank text pieces are dropped.
pub fn parse(query: &str) -> Vec<PromptPiece> {
    let chars: Vec<char> = query.chars().collect();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let escaped = i > 0 && chars[i - 1] == '\\';
        if c != '@' || escaped {
            text.push(c);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'@') {
            // `@@` (a diff's hunk header, a decorator) is text, however many there are.
            while chars.get(i) == Some(&'@') {
                text.push('@');
                i += 1;
            }
            continue;
        }
        let (len, path) = path_at(&chars[i + 1..]);
        if len == 0 {
            text.push(c);
            i += 1;
            continue;
        }
        if !text.trim().is_empty() {
            pieces.push(PromptPiece::Text(std::mem::take(&mut text)));
        }
        text.clear();
        pieces.push(PromptPiece::AtPath(path));
        i += 1 + len;
    }
    if !text.trim().is_empty() {
        pieces.push(PromptPiece::Text(text));
    }
    pieces
}

/// The length (in chars) of the path starting at `rest`, and the path unescaped.
fn path_at(rest: &[char]) -> (usize, String) {
    let mut i = 0;
    let mut path = String::new();
    while i < rest.len() {
        let c = rest[i];
        if c == '"' {
            match rest[i + 1..].iter().position(|&q| q == '"') {
                Some(end) => {
                    path.extend(&rest[i + 1..i + 1 + end]);
                    i += end + 2;
                    continue;
                }
                None => break,
            }
        }
        if c == '\\' {
            match rest.get(i + 1) {
                Some(&next) => {
                    path.push(next);
                    i += 2;
                    continue;
                }
                None => break,
            }
        }
        if c == '.' {
            match rest.get(i + 1) {
                Some(next) if !next.is_whitespace() => {}
                _ => break,
            }
        } else if ends_path(c) {
            break;
        }
        path.push(c);
        i += 1;
    }
    (i, path)
}

/// Whether a reference is a glob pattern rather than a path.
pub fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// The partial `@path` being typed at the end of `head` (for completion): its start
/// (the byte after `@`) and the text typed so far.
pub fn typing_at(head: &str) -> Option<(usize, &str)> {
    let start = head.rfind('@')?;
    let before_ok = start == 0 || head[..start].ends_with(char::is_whitespace);
    let typed = &head[start + 1..];
    (before_ok && !typed.contains(char::is_whitespace)).then_some((start + 1, typed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use PromptPiece::*;

    #[test]
    fn splits_like_gemini_cli() {
        assert_eq!(
            parse("explain @src/main.rs, then @docs please."),
            vec![
                Text("explain ".into()),
                AtPath("src/main.rs".into()),
                Text(", then ".into()),
                AtPath("docs".into()),
                Text(" please.".into())
            ]
        );
        assert_eq!(
            parse("look at @a.txt."),
            vec![
                Text("look at ".into()),
                AtPath("a.txt".into()),
                Text(".".into())
            ]
        );
        assert_eq!(parse(r"@my\ file.txt"), vec![AtPath("my file.txt".into())]);
        assert_eq!(
            parse(r"mail me\@example.com"),
            vec![Text(r"mail me\@example.com".into())]
        );
        assert_eq!(parse("a lone @ here"), vec![Text("a lone @ here".into())]);
        assert_eq!(parse("@src/*.rs"), vec![AtPath("src/*.rs".into())]);
        assert!(is_glob("src/*.rs") && !is_glob("src/a.rs"));
    }

    #[test]
    fn a_diff_hunk_header_is_no_reference() {
        assert_eq!(
            parse("@@ -1,3 +1,4 @@ fn main\n see @a.txt @@@"),
            vec![
                Text("@@ -1,3 +1,4 @@ fn main\n see ".into()),
                AtPath("a.txt".into()),
                Text(" @@@".into())
            ]
        );
    }

    #[test]
    fn finds_the_reference_being_typed() {
        assert_eq!(typing_at("read @sr"), Some((6, "sr")));
        assert_eq!(typing_at("@"), Some((1, "")));
        assert_eq!(typing_at("me@x"), None);
        assert_eq!(typing_at("@a b"), None);
    }
}
