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

/// A referenced file's content cut to fit the context window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The head of the content, then a note to the model naming what was cut.
    pub text: String,
    /// What the user is told.
    pub warning: String,
}

/// Shares `budget` characters among contents of `sizes` characters: each gets what it
/// needs or an even share of what is left, the smallest first.
pub fn share_budget(sizes: &[usize], budget: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut shares = vec![0; sizes.len()];
    let mut left = budget;
    for (done, &i) in order.iter().enumerate() {
        let even = left / (sizes.len() - done);
        shares[i] = sizes[i].min(even);
        left -= shares[i];
    }
    shares
}

/// `content` of the reference `label`, cut to `max_chars` characters when it is
/// longer: whole lines from the top, then a note naming the file, the lines kept and
/// how to read the rest. `None` when it fits.
pub fn fit_reference(label: &str, content: &str, max_chars: usize) -> Option<Fitted> {
    let total_chars = content.chars().count();
    if total_chars <= max_chars {
        return None;
    }
    // Content the reader already cut (at 2,000 lines) comes after a header naming the
    // file's real length: the note replaces that header.
    let (content, total_lines) = match strip_truncation_header(content) {
        Some((body, total)) => (body, total),
        None => (content, content.lines().count()),
    };
    // Room for the note itself.
    let room = max_chars.saturating_sub(200);
    let (mut used, mut kept_lines, mut end) = (0usize, 0usize, 0usize);
    for line in content.split_inclusive('\n') {
        let n = line.chars().count();
        if used + n > room {
            break;
        }
        used += n;
        kept_lines += 1;
        end += line.len();
    }
    let (head, kept) = if kept_lines > 0 {
        (
            &content[..end],
            format!("lines 1-{kept_lines} of {}", group(total_lines)),
        )
    } else {
        // One line longer than the room: its first characters.
        let end = content
            .char_indices()
            .nth(room)
            .map_or(content.len(), |(i, _)| i);
        let kept = format!("the first {} characters of line 1", group(room));
        (&content[..end], kept)
    };
    Some(Fitted {
        text: format!(
            "{}\n[troupe: {label} was cut to fit the context window: {kept} kept; read the rest with read_file start_line={}]",
            head.trim_end(),
            kept_lines + 1
        ),
        warning: format!(
            "@{label} is too large for the model's context window ({} lines): only {kept} were sent.",
            group(total_lines)
        ),
    })
}

/// The body and total line count of content under `read_file`'s truncation header.
fn strip_truncation_header(content: &str) -> Option<(&str, usize)> {
    const HEAD: &str = "IMPORTANT: The file content has been truncated.";
    const BODY: &str = "--- FILE CONTENT (truncated) ---\n";
    if !content.starts_with(HEAD) {
        return None;
    }
    let (header, body) = content.split_once(BODY)?;
    let total = header
        .split_once(" of ")?
        .1
        .split_once(" total lines")?
        .0
        .parse()
        .ok()?;
    Some((body, total))
}

/// `9000` as `9,000`.
fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use PromptPiece::*;

    #[test]
    fn a_big_reference_keeps_its_head_and_names_the_cut() {
        let content: String = (1..=9000).map(|i| format!("line {i}\n")).collect();
        let fitted = fit_reference("big.py", &content, 2_000).expect("cut");
        assert!(fitted.text.starts_with("line 1\nline 2\n"));
        assert!(fitted.text.chars().count() <= 2_000);
        let kept = fitted
            .text
            .lines()
            .filter(|l| l.starts_with("line "))
            .count();
        assert!(fitted.text.ends_with(&format!(
            "[troupe: big.py was cut to fit the context window: lines 1-{kept} of 9,000 kept; read the rest with read_file start_line={}]",
            kept + 1
        )));
        assert!(fitted.warning.starts_with("@big.py is too large"));
        assert_eq!(fit_reference("small.py", "x\n", 2_000), None);
        let read = format!(
            "IMPORTANT: The file content has been truncated.\nStatus: Showing lines 1-2000 of 5001 total lines.\nAction: …\n\n--- FILE CONTENT (truncated) ---\n{content}"
        );
        let fitted = fit_reference("big.py", &read, 2_000).expect("cut");
        assert!(fitted.text.starts_with("line 1\n"));
        assert!(fitted.text.contains(" of 5,001 kept;"), "{}", fitted.text);
        let long = "x".repeat(5_000);
        let fitted = fit_reference("min.js", &long, 1_000).expect("cut");
        assert!(fitted.text.ends_with(
            "the first 800 characters of line 1 kept; read the rest with read_file start_line=1]"
        ));
    }

    #[test]
    fn the_budget_is_shared_smallest_first() {
        assert_eq!(
            share_budget(&[100, 5_000, 5_000], 3_000),
            vec![100, 1_450, 1_450]
        );
        assert_eq!(share_budget(&[10, 20], 3_000), vec![10, 20]);
    }

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
