//! Hints that help a model fix a failed edit: where the region most like `old_string`
//! is and the call that reads it again when nothing matched, and every match when too
//! many did.

use super::{js, LineRange};

/// Lines of a region shown in a hint.
const SHOWN_LINES: usize = 8;
/// Characters of one shown line.
const SHOWN_WIDTH: usize = 200;
/// Search lines compared per window (longer searches are ranked on their start).
const COMPARED_LINES: usize = 8;
/// Lines before and after the closest region that the suggested read includes.
const READ_BEFORE: usize = 2;
const READ_AFTER: usize = 3;
/// Below this similarity the region is not worth showing.
const MIN_SIMILARITY: f64 = 0.3;

/// `  12 | text` lines for `range` of `content`.
fn numbered(lines: &[&str], range: LineRange) -> String {
    let last = range.end.min(range.start + SHOWN_LINES - 1);
    let mut out: Vec<String> = (range.start..=last)
        .filter_map(|n| lines.get(n - 1).map(|l| (n, l)))
        .map(|(n, l)| {
            let text = l.strip_suffix('\r').unwrap_or(l);
            let cut: String = text.chars().take(SHOWN_WIDTH).collect();
            let more = if cut.len() < text.len() { "…" } else { "" };
            format!("{n:>6} | {cut}{more}")
        })
        .collect();
    if last < range.end {
        out.push(format!("       | … ({} more lines)", range.end - last));
    }
    out.join("\n")
}

/// Similarity of two trimmed lines in [0, 1].
fn line_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        1.0
    } else if a.is_empty() || b.is_empty() {
        0.0
    } else {
        strsim::sorensen_dice(a, b)
    }
}

/// Where the text most like `old` is, and the `read_file` call that shows it again
/// (`file_path` as the model gave it), or `None` when the file is empty or nothing is
/// similar enough. The lines themselves are not shown: a small model took a region
/// shown here as licence to guess, and replaced a real function with an invented one;
/// reading the region again gives it the exact text to copy.
pub fn closest_region(content: &str, old: &str, file_path: &str) -> Option<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let trimmed: Vec<&str> = lines.iter().map(|l| js::trim(l)).collect();
    let mut search: Vec<&str> = old.split('\n').map(js::trim).collect();
    while search.len() > 1 && search.last().is_some_and(|l| l.is_empty()) {
        search.pop();
    }
    let n = search.len().max(1);
    if content.is_empty() {
        return None;
    }
    let compared = n.min(COMPARED_LINES);
    let window_count = trimmed.len().saturating_sub(n) + 1;
    // similarity[i][j] = line i of the file against search line j, computed lazily per row.
    let mut best: Option<(f64, usize)> = None;
    let mut cache: Vec<Option<Vec<f64>>> = vec![None; trimmed.len()];
    for start in 0..window_count {
        let mut total = 0.0;
        for j in 0..compared {
            let Some(i) = start.checked_add(j).filter(|i| *i < trimmed.len()) else {
                break;
            };
            let row = cache[i].get_or_insert_with(|| {
                search[..compared]
                    .iter()
                    .map(|s| line_similarity(trimmed[i], s))
                    .collect()
            });
            total += row[j];
        }
        let score = total / compared as f64;
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, start));
        }
        // Rows no window will use again are dropped to keep memory flat.
        if let Some(slot) = cache.get_mut(start) {
            *slot = None;
        }
    }
    let (score, start) = best?;
    if score < MIN_SIMILARITY {
        // Nothing to point at: gemini-cli's own message already says to read the file.
        return None;
    }
    let range = LineRange {
        start: start + 1,
        end: (start + n).min(lines.len()),
    };
    let read_from = range.start.saturating_sub(READ_BEFORE).max(1);
    let read_to = (range.end + READ_AFTER).min(lines.len()).max(read_from);
    let quoted = serde_json::Value::from(file_path).to_string();
    Some(format!(
        "The closest match is at {range} ({:.0}% similar after trimming whitespace). Read that region again with read_file(file_path: {quoted}, start_line: {read_from}, end_line: {read_to}) and copy old_string exactly from what it shows; do not guess the text.",
        score * 100.0,
    ))
}

/// Where each match is, with its first lines.
pub fn describe_matches(content: &str, ranges: &[LineRange]) -> String {
    let lines: Vec<&str> = content.split('\n').collect();
    let mut out = format!("old_string matches at {} places:", ranges.len());
    for range in ranges {
        let shown = LineRange {
            start: range.start,
            end: range.end.min(range.start + 2),
        };
        out.push_str(&format!("\n- {range}:\n{}", numbered(&lines, shown)));
    }
    out.push_str("\nAdd surrounding lines to old_string so that it matches only the place you mean, or set 'allow_multiple' to true to change all of them.");
    out
}
