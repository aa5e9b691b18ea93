//! The one sanitiser for text drawn on a terminal (`engine::sanitize`): whatever the
//! bytes, the result of `for_terminal` holds no C0 control but `\n` and `\t`, no DEL, no
//! C1 control, no bidi / zero-width / line-separator / invisible character; `one_line` holds no
//! line feed either. Both are idempotent (an already-safe text comes back borrowed and
//! unchanged), keep every line break (`for_terminal`) and leave a text with nothing to
//! escape as it is.
#![no_main]

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use troupe::engine::sanitize::{for_terminal, one_line};

/// Characters that must never reach the terminal: C0 controls other than '\n' and
/// '\t', DEL, C1 controls, bidi embeddings/overrides/isolates/marks, zero-width
/// characters, line/paragraph separators, the BOM and every other code point that
/// draws nothing or a blank where a letter is (word joiner and invisible operators,
/// Hangul fillers, tag characters, …).
fn forbidden(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{8}'
            | '\u{b}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);

    let out = for_terminal(&s);
    assert!(!out.chars().any(forbidden), "for_terminal: {out:?}");
    assert!(matches!(for_terminal(&out), Cow::Borrowed(_)));
    assert_eq!(
        out.matches('\n').count(),
        s.matches('\n').count(),
        "for_terminal keeps every line break: {s:?} -> {out:?}"
    );
    if !s.chars().any(forbidden) {
        assert!(
            matches!(out, Cow::Borrowed(_)) && out == s,
            "{s:?} -> {out:?}"
        );
    }

    let line = one_line(&s);
    assert!(
        !line.chars().any(|c| forbidden(c) || c == '\n'),
        "one_line: {line:?}"
    );
    assert!(matches!(one_line(&line), Cow::Borrowed(_)));
    if !s.chars().any(|c| forbidden(c) || c == '\n') {
        assert!(
            matches!(line, Cow::Borrowed(_)) && line == s,
            "{s:?} -> {line:?}"
        );
    }
});
