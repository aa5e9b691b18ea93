//! Unified diffs of a file change (via `similar`): the patch text shown in a
//! confirmation and returned to front ends, line-numbered rows a REPL can colour, and
//! the lines added/removed.

use std::time::{Duration, Instant};

use similar::{ChangeTag, TextDiff};

/// Lines of context around each hunk, as gemini-cli's `DEFAULT_DIFF_OPTIONS`.
pub const CONTEXT_LINES: usize = 3;

/// The longest a line diff may search for a minimal answer; past it, `similar` gives a
/// correct but coarser diff.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// Above this many bytes (old and new together) no minimal diff is searched at all:
/// the common head and tail are kept and the middle is shown as replaced (linear).
pub const MAX_DIFF_INPUT_BYTES: usize = 2 * 1024 * 1024;

/// Above this many bytes a diff's text is cut, with a line saying so.
pub const MAX_DIFF_TEXT_BYTES: usize = 256 * 1024;

/// The line diff every diff of Troupe uses: bounded in time by [`DIFF_DEADLINE`] and,
/// for inputs above [`MAX_DIFF_INPUT_BYTES`], linear.
pub fn line_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, 'a, str> {
    let deadline = if old.len() + new.len() > MAX_DIFF_INPUT_BYTES {
        Instant::now()
    } else {
        Instant::now() + DIFF_DEADLINE
    };
    TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old, new)
}

/// The lines of `text` as a terminal draws them: each ends after a `\n` (the last
/// may have none). A lone `\r` is not a line end here (`similar`'s own line split
/// ends a line at one), so a view of these lines shows it where it is.
pub fn lf_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// [`line_diff`] of lines split by [`lf_lines`] (the caller keeps the lines).
pub fn lf_line_diff<'a, 'b>(old: &'b [&'a str], new: &'b [&'a str]) -> TextDiff<'a, 'a, 'b, str> {
    let bytes: usize = old.iter().chain(new).map(|l| l.len()).sum();
    let deadline = if bytes > MAX_DIFF_INPUT_BYTES {
        Instant::now()
    } else {
        Instant::now() + DIFF_DEADLINE
    };
    TextDiff::configure()
        .deadline(deadline)
        .diff_slices(old, new)
}

/// A diff line as a view shows it: without its line end (`\n` or `\r\n`), every
/// other `\r` drawn as the two characters `\r` (then [`crate::sanitize`] shows
/// what else needs showing).
pub fn visible_line(line: &str) -> String {
    let body = line
        .strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line);
    body.replace('\r', "\\r")
}

/// `text` cut to at most `max` bytes (at a line end when there is one), with a last
/// line saying how much was left out.
pub fn cap_text(text: String, max: usize, what: &str) -> String {
    if text.len() <= max {
        return text;
    }
    cap_str(&text, max, what)
}

/// [`cap_text`] of borrowed text: only what is kept is copied.
pub fn cap_str(text: &str, max: usize, what: &str) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    if let Some(nl) = text[..cut].rfind('\n') {
        cut = nl + 1;
    }
    let left_out = text[cut..].lines().count();
    format!(
        "{}... [{what} cut at {} KiB: {left_out} more lines not shown]\n",
        &text[..cut],
        max / 1024
    )
}

/// A unified diff and its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// `--- name\tCurrent` / `+++ name\tProposed` then the hunks.
    pub text: String,
    pub lines_added: usize,
    pub lines_removed: usize,
}

/// What one row of a rendered diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// `@@ -a,b +c,d @@`
    Hunk,
    Context,
    Added,
    Removed,
}

/// One row of a diff with its line numbers in the old and the new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffRow {
    pub kind: RowKind,
    pub old_line: Option<usize>,
    pub new_line: Option<usize>,
    /// The line without its newline (for a hunk row, the `@@ … @@` header).
    pub text: String,
}

/// The unified diff from `old` to `new` for the file `name`.
/// Bounded: see [`line_diff`] and [`MAX_DIFF_TEXT_BYTES`].
pub fn unified(name: &str, old: &str, new: &str) -> FileDiff {
    unified_of(name, &line_diff(old, new))
}

/// [`unified`] of a diff already computed (a caller that also wants the snippet of the
/// same change diffs once: on a rewrite of a large file the diff is most of the work).
pub fn unified_of<'a>(name: &str, diff: &'a TextDiff<'a, 'a, 'a, str>) -> FileDiff {
    let mut text = String::new();
    let mut unified = diff.unified_diff();
    unified
        .context_radius(CONTEXT_LINES)
        .header(&format!("{name}\tCurrent"), &format!("{name}\tProposed"));
    // Written hunk by hunk so a huge diff is never held whole.
    let mut header_done = false;
    let mut left_out = 0usize;
    for hunk in unified.iter_hunks() {
        if text.len() > MAX_DIFF_TEXT_BYTES {
            left_out += hunk.iter_changes().count();
            continue;
        }
        if !header_done {
            text.push_str(&format!("--- {name}\tCurrent\n+++ {name}\tProposed\n"));
            header_done = true;
        }
        text.push_str(&hunk.to_string());
    }
    let mut text = cap_text(text, MAX_DIFF_TEXT_BYTES, "diff");
    if left_out > 0 {
        text.push_str(&format!("... [{left_out} more diff lines not shown]\n"));
    }
    let (mut lines_added, mut lines_removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => lines_added += 1,
            ChangeTag::Delete => lines_removed += 1,
            ChangeTag::Equal => {}
        }
    }
    FileDiff {
        text,
        lines_added,
        lines_removed,
    }
}

/// The hunks of the diff from `old` to `new` as numbered rows (1-based line numbers;
/// lines end at `\n` only, [`lf_lines`]; a lone `\r` is shown as `\r`).
pub fn rows(old: &str, new: &str) -> Vec<DiffRow> {
    let (old_lines, new_lines) = (lf_lines(old), lf_lines(new));
    let diff = lf_line_diff(&old_lines, &new_lines);
    let mut out = Vec::new();
    for hunk in diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .iter_hunks()
    {
        out.push(DiffRow {
            kind: RowKind::Hunk,
            old_line: None,
            new_line: None,
            text: hunk.header().to_string(),
        });
        for change in hunk.iter_changes() {
            let kind = match change.tag() {
                ChangeTag::Equal => RowKind::Context,
                ChangeTag::Insert => RowKind::Added,
                ChangeTag::Delete => RowKind::Removed,
            };
            out.push(DiffRow {
                kind,
                old_line: change.old_index().map(|i| i + 1),
                new_line: change.new_index().map(|i| i + 1),
                text: visible_line(change.value()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_text_and_stats() {
        let d = unified("a.py", "one\ntwo\nthree\n", "one\n2\nthree\nfour\n");
        assert!(d
            .text
            .starts_with("--- a.py\tCurrent\n+++ a.py\tProposed\n@@ -1,3 +1,4 @@\n"));
        assert!(d.text.contains("-two\n+2\n"), "{}", d.text);
        assert_eq!((d.lines_added, d.lines_removed), (2, 1));
    }

    #[test]
    fn rows_carry_line_numbers() {
        let rows = rows("a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(rows[0].kind, RowKind::Hunk);
        let removed = rows.iter().find(|r| r.kind == RowKind::Removed).unwrap();
        assert_eq!(
            (removed.old_line, removed.new_line, removed.text.as_str()),
            (Some(2), None, "b")
        );
        let added = rows.iter().find(|r| r.kind == RowKind::Added).unwrap();
        assert_eq!((added.old_line, added.new_line), (None, Some(2)));
    }

    #[test]
    fn a_lone_carriage_return_is_no_line_break_in_rows() {
        let rows = rows("a\r\nb\n", "a\r\nb\rEVIL\n");
        let texts: Vec<(RowKind, &str)> = rows.iter().map(|r| (r.kind, r.text.as_str())).collect();
        assert_eq!(
            texts[1..],
            [
                (RowKind::Context, "a"),
                (RowKind::Removed, "b"),
                (RowKind::Added, "b\\rEVIL")
            ]
        );
        assert_eq!(lf_lines("x\ry\nz"), ["x\ry\n", "z"]);
        assert_eq!(visible_line("x\ry\r\n"), "x\\ry");
        assert_eq!(visible_line("end\r"), "end\\r");
    }

    #[test]
    fn new_file_diff_counts_every_line() {
        let d = unified("n.txt", "", "x\ny\n");
        assert_eq!((d.lines_added, d.lines_removed), (2, 0));
    }
}
