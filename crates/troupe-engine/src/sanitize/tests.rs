use super::*;
use proptest::prelude::*;

/// Characters that must never reach the terminal, per the module contract.
fn forbidden(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{8}'
            | '\u{b}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
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

fn assert_safe(out: &str) {
    if let Some(c) = out.chars().find(|&c| forbidden(c)) {
        panic!("forbidden char {c:?} in {out:?}");
    }
}

fn assert_safe_line(out: &str) {
    assert_safe(out);
    assert!(!out.contains('\n'), "newline in one_line output {out:?}");
}

#[test]
fn osc52_clipboard_attack_is_shown_not_run() {
    let attack = "touch P #\x1b]52;c;ZXZpbA==\x07\r\x1b[2K  $ ls -la";
    for out in [for_terminal(attack), one_line(attack)] {
        assert_safe(&out);
        assert!(out.contains("touch P"), "{out}");
        assert!(out.contains("\\e]52;"), "{out}");
        assert!(out.contains("^G"), "{out}");
        assert!(out.contains("^M"), "{out}");
        assert!(out.contains("\\e[2K"), "{out}");
        assert_eq!(out, "touch P #\\e]52;c;ZXZpbA==^G^M\\e[2K  $ ls -la");
    }
}

#[test]
fn osc0_title_setting_is_visible() {
    let out = for_terminal("\x1b]0;pwned\x07hello");
    assert_eq!(out, "\\e]0;pwned^Ghello");
    // ST-terminated variant (ESC \).
    let out = for_terminal("\x1b]0;pwned\x1b\\hello");
    assert_eq!(out, "\\e]0;pwned\\e\\hello");
}

#[test]
fn csi_cursor_moves_are_visible() {
    let out = for_terminal("ok\x1b[1A\x1b[2K\x1b[10;20Hfake prompt\x1b[?25l");
    assert_eq!(out, "ok\\e[1A\\e[2K\\e[10;20Hfake prompt\\e[?25l");
    assert_safe(&out);
}

#[test]
fn c1_controls_are_visible() {
    // 8-bit CSI and OSC, and the C1 string terminator.
    let out = for_terminal("a\u{9b}2Kb\u{9d}0;title\u{9c}c");
    assert_eq!(out, "a<U+009B>2Kb<U+009D>0;title<U+009C>c");
    assert_eq!(for_terminal("\u{80}\u{9f}"), "<U+0080><U+009F>");
    // Neighbours of the C1 range are ordinary text.
    assert_eq!(for_terminal("\u{a0}\u{a9}é"), "\u{a0}\u{a9}é");
}

#[test]
fn trojan_source_bidi_is_neutralised() {
    // The classic "commenting-out" example: RLO ... LRI ... PDI ... LRI.
    let src = "/*\u{202e} } \u{2066}if (isAdmin)\u{2069} \u{2066} begin admins only */";
    let out = for_terminal(src);
    assert_safe(&out);
    assert_eq!(
        out,
        "/*<U+202E> } <U+2066>if (isAdmin)<U+2069> <U+2066> begin admins only */"
    );
    let all = "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}";
    assert_eq!(
        for_terminal(all),
        "<U+202A><U+202B><U+202C><U+202D><U+202E><U+2066><U+2067><U+2068><U+2069>"
    );
}

#[test]
fn zero_width_and_separators_are_visible() {
    assert_eq!(
        for_terminal("a\u{200b}b\u{200d}c\u{200e}\u{200f}d\u{2028}e\u{2029}f\u{feff}g\u{61c}"),
        "a<U+200B>b<U+200D>c<U+200E><U+200F>d<U+2028>e<U+2029>f<U+FEFF>g<U+061C>"
    );
    // Neighbours that are not in the set pass through.
    let ok = "\u{200a}\u{2010}\u{2027}\u{202f}\u{205f}\u{2070}\u{fefe}\u{61b}";
    assert!(matches!(for_terminal(ok), Cow::Borrowed(_)));
}

/// Issue 42: every code point that draws nothing, or a blank where a letter is, is
/// shown: a word joiner or invisible operator inside a command, tag characters that
/// spell hidden text, Hangul fillers that pass for a blank.
#[test]
fn invisible_and_blank_letters_are_visible() {
    assert_eq!(
        one_line("rm\u{2060} -rf\u{2061}\u{2062}\u{2063}\u{2064} x"),
        "rm<U+2060> -rf<U+2061><U+2062><U+2063><U+2064> x"
    );
    // "hi" in tag characters, then CANCEL TAG.
    assert_eq!(
        for_terminal("ok\u{e0068}\u{e0069}\u{e007f}"),
        "ok<U+E0068><U+E0069><U+E007F>"
    );
    assert_eq!(
        for_terminal("\u{e0000}\u{e0001}\u{e0100}"),
        "<U+E0000><U+E0001><U+E0100>"
    );
    assert_eq!(
        one_line("a\u{3164}b\u{ffa0}c\u{115f}d\u{1160}e"),
        "a<U+3164>b<U+FFA0>c<U+115F>d<U+1160>e"
    );
    assert_eq!(
        for_terminal("c\u{ad}a\u{34f}t\u{2800}\u{180e}\u{17b4}\u{206a}\u{fff9}\u{1d173}"),
        "c<U+00AD>a<U+034F>t<U+2800><U+180E><U+17B4><U+206A><U+FFF9><U+1D173>"
    );
    // The bidi controls, all of them.
    assert_eq!(
        one_line("\u{200e}\u{200f}\u{61c}\u{202a}\u{202e}\u{2066}\u{2069}"),
        "<U+200E><U+200F><U+061C><U+202A><U+202E><U+2066><U+2069>"
    );
    // Emoji presentation and CJK text are kept.
    for kept in ["⚠\u{fe0f} 日本語 한국어 ひらがな 🦀", "\u{3000}\u{a0}"] {
        assert!(matches!(for_terminal(kept), Cow::Borrowed(_)), "{kept}");
    }
}

#[test]
fn c0_caret_notation_and_del() {
    assert_eq!(
        for_terminal("\0\x01\x08\x0b\x0c\r\x1c\x1f"),
        "^@^A^H^K^L^M^\\^_"
    );
    assert_eq!(for_terminal("x\x7fy"), "x^?y");
    assert_eq!(for_terminal("\x1b"), "\\e");
}

#[test]
fn newline_and_tab_handling() {
    assert!(matches!(for_terminal("a\n\tb\n"), Cow::Borrowed(_)));
    assert_eq!(one_line("a\n\tb\n"), "a\\n\tb\\n");
    assert_eq!(one_line("a\r\nb"), "a^M\\nb");
    assert!(matches!(one_line("tool\tname"), Cow::Borrowed(_)));
}

#[test]
fn fast_path_borrows() {
    for s in [
        "",
        "hello world",
        "naïve café — 日本語 🦀",
        "path/to/file.rs:12",
    ] {
        assert!(matches!(for_terminal(s), Cow::Borrowed(_)), "{s}");
        assert!(matches!(one_line(s), Cow::Borrowed(_)), "{s}");
    }
}

#[test]
fn clean_prefix_is_kept_when_escaping_later() {
    assert_eq!(for_terminal("日本語\x1b[0m🦀"), "日本語\\e[0m🦀");
}

#[test]
fn lead_byte_table_covers_every_escaped_char() {
    let mut buf = [0u8; 4];
    for c in (0..=0x10_FFFFu32).filter_map(char::from_u32) {
        if !c.is_ascii() && is_hidden_or_c1(c) {
            let lead = c.encode_utf8(&mut buf).as_bytes()[0];
            assert!(LEAD_BYTES.contains(&lead), "{c:?} lead byte {lead:#x}");
        }
        // The predicate and the test's own contract agree everywhere.
        let escaped = !matches!(c, '\n' | '\t') && (c.is_ascii_control() || is_hidden_or_c1(c));
        assert_eq!(escaped, forbidden(c), "{c:?}");
    }
}

/// Characters that stress the sanitiser: every escaped class plus neighbours.
fn nasty_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => any::<char>(),
        2 => (0u32..0x20).prop_map(|v| char::from_u32(v).unwrap_or('\0')),
        2 => (0x7fu32..0xa1).prop_map(|v| char::from_u32(v).unwrap_or('\0')),
        2 => prop::sample::select(vec![
            '\x1b', '\n', '\t', '\r', '\x07', '\u{61c}', '\u{200a}', '\u{200b}', '\u{200f}',
            '\u{2010}', '\u{2028}', '\u{2029}', '\u{202a}', '\u{202e}', '\u{202f}', '\u{2066}',
            '\u{2069}', '\u{206a}', '\u{feff}', '\u{2060}', '\u{2064}', '\u{3164}',
            '\u{ffa0}', '\u{115f}', '\u{e0041}', '\u{e007f}', '\u{fe0f}', '[', ']', ';', '\\',
        ]),
    ]
}

/// Printable characters that must be left alone.
fn printable_char() -> impl Strategy<Value = char> {
    any::<char>().prop_filter("printable", |&c| !forbidden(c) && c != '\x7f')
}

proptest! {
    #[test]
    fn prop_output_is_always_safe(s in prop::collection::vec(nasty_char(), 0..64)
        .prop_map(|v| v.into_iter().collect::<String>())) {
        let t = for_terminal(&s);
        assert_safe(&t);
        let l = one_line(&s);
        assert_safe_line(&l);
        // Sanitising is idempotent: safe output is never touched again.
        prop_assert!(matches!(for_terminal(&t), Cow::Borrowed(_)));
        prop_assert!(matches!(one_line(&l), Cow::Borrowed(_)));
    }

    #[test]
    fn prop_arbitrary_strings_are_safe(s in any::<String>()) {
        assert_safe(&for_terminal(&s));
        assert_safe_line(&one_line(&s));
    }

    #[test]
    fn prop_printable_text_round_trips(s in prop::collection::vec(printable_char(), 0..64)
        .prop_map(|v| v.into_iter().collect::<String>())) {
        let t = for_terminal(&s);
        prop_assert!(matches!(t, Cow::Borrowed(_)));
        prop_assert_eq!(t.as_ref(), s.as_str());
        let l = one_line(&s);
        if s.contains('\n') {
            prop_assert_eq!(l.as_ref(), s.replace('\n', "\\n"));
        } else {
            prop_assert!(matches!(l, Cow::Borrowed(_)));
            prop_assert_eq!(l.as_ref(), s.as_str());
        }
    }

    #[test]
    fn prop_printable_ascii_round_trips(s in "[ -~]*") {
        prop_assert!(matches!(for_terminal(&s), Cow::Borrowed(_)));
        prop_assert!(matches!(one_line(&s), Cow::Borrowed(_)));
    }
}
