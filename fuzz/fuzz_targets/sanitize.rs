//! The one sanitiser for text drawn on a terminal (`engine::sanitize`): whatever the
//! bytes, the result of `for_terminal` holds no C0 control but `\n` and `\t`, no DEL, no
//! C1 control, no bidi / zero-width / line-separator character; `one_line` holds no
//! line feed either. Both are idempotent (an already-safe text comes back borrowed and
//! unchanged), keep every line break (`for_terminal`) and leave a text with nothing to
//! escape as it is.
#![no_main]

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use troupe::engine::sanitize::{for_terminal, one_line};

/// Characters that must never reach the terminal: C0 controls other than '\n' and
/// '\t', DEL, C1 controls, bidi embeddings/overrides/isolates/marks, zero-width
/// characters, line/paragraph separators and the BOM.
fn forbidden(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{8}'
            | '\u{b}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
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
