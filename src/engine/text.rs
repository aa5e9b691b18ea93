//! Small text helpers that reproduce JavaScript semantics where gemini-cli's output
//! depends on them (ICU-like ordering, UTF-16 lengths).

use std::cmp::Ordering;

/// An approximation of ICU's `localeCompare` for file names: case-insensitive first
/// (`a < B < b`), lowercase before uppercase on a tie, then byte order.
pub fn locale_cmp(a: &str, b: &str) -> Ordering {
    let fold = |s: &str| s.chars().flat_map(char::to_lowercase).collect::<String>();
    fold(a).cmp(&fold(b)).then_with(|| {
        for (x, y) in a.chars().zip(b.chars()) {
            if x != y {
                let rank = |c: char| if c.is_lowercase() { 0 } else { 1 };
                return rank(x).cmp(&rank(y)).then(x.cmp(&y));
            }
        }
        a.len().cmp(&b.len())
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_like_icu() {
        let mut names = vec!["b", "B", "a", "A", "_x", "10", "2"];
        names.sort_by(|a, b| locale_cmp(a, b));
        assert_eq!(names, vec!["10", "2", "_x", "a", "A", "b", "B"]);
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
