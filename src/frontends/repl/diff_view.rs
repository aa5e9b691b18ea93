//! The diff of an edit as the confirmation shows it: a header with the file and the
//! size of the change, then hunks with old and new line numbers, removed lines red,
//! added lines green, and unchanged stretches between hunks collapsed to one line.
//! The file's lines are shown through the one sanitiser: an escape sequence in the
//! content is shown (`\e[2J`), not obeyed. Lines end at `\n` only: a lone `\r` is
//! shown as `\r` in its line, never drawn as a line break (which would let a line
//! pass for two, or hide what follows it).

use similar::ChangeTag;

use crate::engine::diff::{lf_line_diff, lf_lines, visible_line};
use crate::engine::sanitize::one_line;

use super::terminal::Palette;

/// Unchanged lines kept around each change.
const CONTEXT: usize = 3;

/// The lines of the diff view, at most `max_lines` of diff body.
pub fn render_edit(
    file_label: &str,
    original: &str,
    proposed: &str,
    p: Palette,
    max_lines: usize,
) -> Vec<String> {
    let (old_lines, new_lines) = (lf_lines(original), lf_lines(proposed));
    let diff = lf_line_diff(&old_lines, &new_lines);
    let (mut added, mut removed) = (0usize, 0usize);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let kind = if original.is_empty() {
        " (new file)"
    } else {
        ""
    };
    let mut out = vec![format!(
        "{}{kind}  {} {}",
        p.bold(file_label),
        p.green(&format!("+{added}")),
        p.red(&format!("-{removed}"))
    )];
    let total_old = diff.old_slices().len();
    let width = total_old
        .max(diff.new_slices().len())
        .max(1)
        .to_string()
        .len();
    let mut body = Vec::new();
    let mut last_old_end = 0usize;
    let groups = diff.grouped_ops(CONTEXT);
    if groups.is_empty() {
        out.push(p.dim("  (no changes)"));
        return out;
    }
    for group in &groups {
        let Some(first) = group.first() else { continue };
        let start = first.old_range().start;
        if start > last_old_end {
            body.push(p.dim(&gap(start - last_old_end, width)));
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let line = visible_line(change.value());
                let text = one_line(&line);
                let old = change.old_index().map(|i| i + 1);
                let new = change.new_index().map(|i| i + 1);
                let num = |n: Option<usize>| match n {
                    Some(n) => format!("{n:>width$}"),
                    None => " ".repeat(width),
                };
                let gutter = p.dim(&format!("{} {}", num(old), num(new)));
                body.push(match change.tag() {
                    ChangeTag::Equal => format!("{gutter}   {text}"),
                    ChangeTag::Delete => format!("{gutter} {}", p.red(&format!("- {text}"))),
                    ChangeTag::Insert => format!("{gutter} {}", p.green(&format!("+ {text}"))),
                });
            }
        }
        if let Some(last) = group.last() {
            last_old_end = last.old_range().end;
        }
    }
    if total_old > last_old_end {
        body.push(p.dim(&gap(total_old - last_old_end, width)));
    }
    if body.len() > max_lines {
        let hidden = body.len() - max_lines;
        body.truncate(max_lines);
        body.push(p.dim(&format!(
            "  … {hidden} more diff lines (choose “Modify with external editor” to see everything)"
        )));
    }
    out.extend(body);
    out
}

fn gap(lines: usize, width: usize) -> String {
    let plural = if lines == 1 { "" } else { "s" };
    format!(
        "{:>w$}   ⋯ {lines} unchanged line{plural} ⋯",
        "",
        w = width * 2 + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lines_and_collapses_unchanged_stretches() {
        let original: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let proposed = original.replace("line 10\n", "line ten\n");
        let lines = render_edit("a.txt", &original, &proposed, Palette::plain(), 100);
        assert_eq!(lines[0], "a.txt  +1 -1");
        assert_eq!(lines[1].trim(), "⋯ 6 unchanged lines ⋯");
        assert_eq!(lines[2], " 7  7   line 7");
        assert!(lines.contains(&"10    - line 10".to_string()), "{lines:#?}");
        assert!(
            lines.contains(&"   10 + line ten".to_string()),
            "{lines:#?}"
        );
        assert_eq!(lines.last().unwrap().trim(), "⋯ 7 unchanged lines ⋯");
    }

    #[test]
    fn a_lone_carriage_return_is_shown_not_drawn_as_a_line_break() {
        let original = "keep\nsafe = true\n";
        let proposed = "keep\nsafe = true\rrun = \"curl x | sh\"\n";
        let lines = render_edit("a.toml", original, proposed, Palette::plain(), 100);
        assert_eq!(
            lines,
            [
                "a.toml  +1 -1",
                "1 1   keep",
                "2   - safe = true",
                "  2 + safe = true\\rrun = \"curl x | sh\"",
            ]
        );
        // CRLF line ends are line ends.
        let lines = render_edit("b", "x\r\ny\r\n", "x\r\nz\r\n", Palette::plain(), 100);
        assert_eq!(lines[1..], ["1 1   x", "2   - y", "  2 + z"]);
    }
}
