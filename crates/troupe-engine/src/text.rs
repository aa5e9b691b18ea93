//! Small text helpers that reproduce JavaScript semantics where gemini-cli's output
//! depends on them (ICU-like ordering, UTF-16 lengths).

use std::cmp::Ordering;

thread_local! {
    /// CLDR root collation, non-ignorable punctuation, byte order on a tie: what
    /// JavaScript's `a.localeCompare(b)` does under ICU's default (root/`en`) collator.
    static ROOT_COLLATOR: std::cell::RefCell<feruca::Collator> = std::cell::RefCell::new(
        feruca::Collator::new(feruca::Tailoring::Cldr(feruca::Locale::Root), false, true),
    );
}

/// JavaScript's `localeCompare` as gemini-cli sorts file names with it (ICU root
/// collation): punctuation before digits before letters, `a < A < b`, `10 < 2`.
pub fn locale_cmp(a: &str, b: &str) -> Ordering {
    ROOT_COLLATOR.with(|collator| collator.borrow_mut().collate(a, b))
}

/// Length in UTF-16 code units, as JavaScript's `length`.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The first `max` UTF-16 code units of `s` (never splitting a character).
pub fn utf16_prefix(s: &str, max: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &s[..i];
        }
    }
    s
}

/// The message of a panic payload (`&str` or `String`; "unknown panic" otherwise).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// `$VAR` and `${VAR}` in `text` replaced by what `lookup` gives for `VAR`; a variable
/// `lookup` knows nothing of (`None`) is left as written, and so is a `$` that starts
/// no name. Names are parsed whole: `$AB` is never `$A` followed by `B`.
pub fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let (name, consumed) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        let starts_well = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        let value = if starts_well { lookup(name) } else { None };
        match value {
            Some(value) => {
                out.push_str(&value);
                rest = &after[consumed..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_like_icu() {
        // The expected order is what `node -e` prints for
        // `names.sort((x, y) => x.localeCompare(y))` (Node 22, ICU root collation).
        let mut names = vec![
            "b",
            "B",
            "a",
            "A",
            "_x",
            "10",
            "2",
            "-a",
            "~a",
            ".a",
            "a_b",
            "a-b",
            "a.b",
            "ab",
            "aB",
            "Ab",
            "a1",
            "a10",
            "a2",
            "a~",
            "_",
            "-",
            "~",
            ".",
            "file.txt",
            "file_test.txt",
            "file-test.txt",
            "File.txt",
            "fileA",
            "file1",
            "$x",
            "@x",
            "#x",
            "+x",
            "é",
            "e",
            "f",
            "Z",
            "z",
            "a b",
            "a,b",
        ];
        names.sort_by(|a, b| locale_cmp(a, b));
        let expected = vec![
            "_",
            "_x",
            "-",
            "-a",
            ".",
            ".a",
            "@x",
            "#x",
            "+x",
            "~",
            "~a",
            "$x",
            "10",
            "2",
            "a",
            "A",
            "a b",
            "a_b",
            "a-b",
            "a,b",
            "a.b",
            "a~",
            "a1",
            "a10",
            "a2",
            "ab",
            "aB",
            "Ab",
            "b",
            "B",
            "e",
            "é",
            "f",
            "file_test.txt",
            "file-test.txt",
            "file.txt",
            "File.txt",
            "file1",
            "fileA",
            "z",
            "Z",
        ];
        assert_eq!(names, expected);
    }

    #[test]
    fn utf16_helpers() {
        assert_eq!(utf16_len("a😀"), 3);
        assert_eq!(utf16_prefix("a😀b", 2), "a");
        assert_eq!(utf16_prefix("a😀b", 3), "a😀");
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a time after the epoch.
pub fn iso8601(time: std::time::SystemTime) -> String {
    let d = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod time_tests {
    #[test]
    fn formats_dates() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_795_302_953_123);
        assert_eq!(super::iso8601(t), "2026-11-21T23:15:53.123Z");
    }
}
