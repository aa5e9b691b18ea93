//! gemini-cli's `getDiffContextSnippet`: the changed lines of the new text with a few
//! lines of context, so the model sees the result without reading the file again.

use similar::DiffOp;

/// The changed regions of `new` with `context` lines around each, gaps shown as `...`,
/// from the line diff of the change (`ops` of `diff::line_diff(original, new)`, which
/// the caller also renders; unused when `original` is empty: a new file gives the
/// whole new text). Capped at [`crate::diff::MAX_DIFF_TEXT_BYTES`] (a line
/// says what was cut).
pub fn context_snippet_of(original: &str, ops: &[DiffOp], new: &str, context: usize) -> String {
    use crate::diff::{cap_str, cap_text, MAX_DIFF_TEXT_BYTES};
    if original.is_empty() {
        // A new file: the capped text itself, without a whole copy first.
        return cap_str(new, MAX_DIFF_TEXT_BYTES, "snippet");
    }
    cap_text(
        snippet_from_ops(ops, new, context),
        MAX_DIFF_TEXT_BYTES,
        "snippet",
    )
}

fn snippet_from_ops(ops: &[DiffOp], new: &str, context: usize) -> String {
    let new_lines = split_lines(new);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    for op in ops {
        match *op {
            DiffOp::Equal { len, .. } => at += len,
            DiffOp::Delete { .. } => ranges.push((at, at)),
            DiffOp::Insert { new_len, .. } => {
                ranges.push((at, at + new_len));
                at += new_len;
            }
            DiffOp::Replace { new_len, .. } => {
                ranges.push((at, at));
                ranges.push((at, at + new_len));
                at += new_len;
            }
        }
    }
    if ranges.is_empty() {
        return new.to_string();
    }
    let mut expanded: Vec<(usize, usize)> = ranges
        .into_iter()
        .map(|(s, e)| {
            (
                s.saturating_sub(context),
                (e + context).min(new_lines.len()),
            )
        })
        .collect();
    expanded.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in expanded {
        match merged.last_mut() {
            Some(cur) if s <= cur.1 => cur.1 = cur.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut parts: Vec<String> = Vec::new();
    let mut last_end = 0;
    for (s, e) in merged {
        if s > last_end {
            parts.push("...".into());
        }
        parts.push(new_lines[s..e].join("\n"));
        last_end = e;
    }
    if last_end < new_lines.len() {
        parts.push("...".into());
    }
    parts.join("\n")
}

/// `text.split(/\r?\n/)`.
fn split_lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The snippet as the edit tools build it: one line diff, then its ops.
    fn diff_context_snippet(original: &str, new: &str, context: usize) -> String {
        let diff = crate::diff::line_diff(original, new);
        context_snippet_of(original, diff.ops(), new, context)
    }

    #[test]
    fn a_big_new_file_gives_the_capped_text_with_every_left_out_line_counted() {
        let text: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let max = crate::diff::MAX_DIFF_TEXT_BYTES;
        let got = diff_context_snippet("", &text, 5);
        assert_eq!(got, crate::diff::cap_text(text.clone(), max, "snippet"));
        let kept = got.lines().count() - 1;
        assert!(got.ends_with(&format!("{} more lines not shown]\n", 100_000 - kept)));
    }

    #[test]
    fn new_file_is_shown_whole() {
        assert_eq!(diff_context_snippet("", "a\nb\n", 5), "a\nb\n");
    }

    #[test]
    fn change_in_the_middle_has_context_and_gaps() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l10\n", "ten\n");
        let snippet = diff_context_snippet(&old, &new, 2);
        assert_eq!(snippet, "...\nl8\nl9\nten\nl11\nl12\n...");
    }

    #[test]
    fn identical_text_is_returned_whole() {
        assert_eq!(diff_context_snippet("a\n", "a\n", 5), "a\n");
    }
}
