//! The edit matcher (exact → flexible → regex → fuzzy): never panics, and what it
//! reports is true of what it returns.
//!
//! Input: one byte choosing the occurrences wanted, then `content`, `old_string` and
//! `new_string` separated by U+001F (lossy UTF-8).
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe::engine::edit::{calculate_replacement, compute_edit, EditRequest, Occurrences};

/// Whitespace any strategy may re-indent or trim: Rust's and JavaScript's together.
fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// Non-overlapping occurrences of `needle`, counted without `str::matches`.
fn count_plain(haystack: &str, needle: &str) -> usize {
    let (mut count, mut at) = (0, 0);
    while let Some(found) = haystack.get(at..).and_then(|rest| rest.find(needle)) {
        count += 1;
        at += found + needle.len();
    }
    count
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut pieces = text.splitn(3, '\u{1f}');
    let content = pieces.next().unwrap_or("").replace("\r\n", "\n");
    let old = pieces.next().unwrap_or("");
    let new = pieces.next().unwrap_or("");
    let want = match mode % 4 {
        0 => Occurrences::Exactly(1),
        1 => Occurrences::AtLeastOne,
        2 => Occurrences::Exactly(2),
        _ => Occurrences::Exactly(usize::from(mode / 4)),
    };

    let r = calculate_replacement(&content, old, new, want);
    assert_eq!(
        r.occurrences,
        r.ranges.len(),
        "occurrences and ranges disagree"
    );
    if r.occurrences == 0 {
        assert!(r.strategy.is_none(), "a strategy without a match");
        assert_eq!(r.new_content, content, "no match, yet the text changed");
    } else {
        assert!(r.strategy.is_some(), "a match without a strategy");
    }
    let lines = content.split('\n').count();
    for range in &r.ranges {
        assert!(
            1 <= range.start && range.start <= range.end && range.end <= lines,
            "range {range:?} outside the {lines} lines"
        );
    }
    if r.strategy.map(|s| s.as_str()) == Some("exact") {
        assert_eq!(
            r.occurrences,
            count_plain(&content, &r.final_old),
            "exact match count is wrong"
        );
    }
    let success = r.occurrences > 0 && want.accepts(r.occurrences);
    if success && (want.allows_many() || r.occurrences == 1) {
        // Every line of the replacement is in the result, whatever indentation the
        // strategy gave it.
        for line in r.final_new.split('\n') {
            let core = line.trim_matches(is_space);
            assert!(
                r.new_content.contains(core),
                "replacement line {core:?} missing from the result ({:?})",
                r.strategy
            );
        }
        // A file that ends with a newline keeps it (gemini-cli's restoreTrailingNewline;
        // a file without one loses only one newline the replacement adds).
        if content.ends_with('\n') {
            assert!(r.new_content.ends_with('\n'), "the final newline was lost");
        }
    }

    let request = EditRequest {
        file_path: "f.txt",
        old_string: old,
        new_string: new,
        want,
    };
    match compute_edit(Some(&content), &request, "/ws/f.txt") {
        Ok(plan) => {
            assert!(
                !old.is_empty(),
                "an empty old_string edited an existing file"
            );
            assert!(!plan.is_new_file);
            assert!(want.accepts(plan.occurrences), "accepted a wrong count");
            assert_eq!(plan.occurrences, r.occurrences);
            assert_eq!(plan.new_content, r.new_content);
        }
        Err(_) => {
            assert!(
                old.is_empty() || r.occurrences == 0 || !want.accepts(r.occurrences) || {
                    // An edit that changes nothing is refused too.
                    r.final_old == r.final_new || r.new_content == content
                },
                "refused an edit that matched as wanted"
            );
        }
    }
    // A missing file is created only from an empty old_string.
    if let Ok(plan) = compute_edit(None, &request, "/ws/f.txt") {
        assert!(old.is_empty() && plan.is_new_file);
    }
});
