//! One sanitiser for every text a terminal UI draws that came from a model,
//! tool, MCP server, hook or file.
//!
//! Untrusted text may carry terminal escape sequences (OSC 52 clipboard
//! writes, OSC 0 title changes, CSI cursor moves that overwrite what the user
//! already saw), C1 controls that some terminals treat like ESC sequences, and
//! Unicode bidi / zero-width characters that make the text *read* differently
//! from what it *is* ("Trojan Source"). Nothing here is interpreted: every
//! such character is replaced by a short, visible spelling of itself.
//!
//! | input                                   | shown as      |
//! |-----------------------------------------|---------------|
//! | ESC (0x1b)                              | `\e`          |
//! | other C0 control except `\n`, `\t`      | `^@` .. `^_` (CR → `^M`, BEL → `^G`) |
//! | DEL (0x7f)                              | `^?`          |
//! | C1 control U+0080–U+009F                | `<U+009B>`    |
//! | bidi embeddings/overrides/isolates/marks, zero-width chars, U+2028/U+2029, U+FEFF | `<U+202E>` |
//! | other invisible or blank-rendering code points: soft hyphen, word joiner and the invisible operators U+2060–U+206F, Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), tag characters U+E0000–U+E007F (and the rest of U+E0000–U+E0FFF), braille blank U+2800, … | `<U+E0041>` |
//!
//! Variation selectors U+FE00–U+FE0F are kept: they pick the emoji or text form of
//! the character before them (`⚠️`) and hide nothing on their own. Spaces (U+00A0,
//! U+2000–U+200A, U+3000) are kept too: they show as the blanks they are.
//!
//! Both functions borrow their input unchanged when nothing needs escaping;
//! the check is a single byte scan that only decodes a character at the few
//! UTF-8 lead bytes that can start an escaped one.
//!
//! The output is meant for display, not for round-tripping: a literal `\e` or
//! `^M` already present in the input is left as it is, so the mapping is not
//! injective.

use std::borrow::Cow;
use std::fmt::Write as _;

pub mod hosts;

/// Which characters are kept as they are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Multi-line text: `\n` and `\t` are kept.
    Terminal,
    /// Single-line label: `\t` kept, `\n` shown as the two characters `\n`.
    OneLine,
}

/// UTF-8 lead bytes of every non-ASCII character that [`is_hidden_or_c1`]
/// matches: `0xC2` (C1 controls U+0080–U+009F, U+00AD), `0xCD` (U+034F), `0xD8`
/// (U+061C), `0xE1` (U+115F, U+1160, U+17B4, U+17B5, U+180B–U+180F), `0xE2`
/// (U+200B–U+200F, U+2028–U+202E, U+2060–U+206F, U+2800), `0xE3` (U+3164), `0xEF`
/// (U+FEFF, U+FFA0, U+FFF0–U+FFFB), `0xF0` (U+1BCA0–U+1BCA3, U+1D173–U+1D17A) and
/// `0xF3` (U+E0000–U+E0FFF). A unit test checks this list against the predicate over
/// all of Unicode.
const LEAD_BYTES: [u8; 9] = [0xC2, 0xCD, 0xD8, 0xE1, 0xE2, 0xE3, 0xEF, 0xF0, 0xF3];

/// Caret-notation letters for C0 controls 0x00..=0x1f (`^@` .. `^_`).
const CARET: &[u8; 32] = b"@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_";

/// Makes `text` safe to print to a terminal, keeping line breaks and tabs.
///
/// The result contains no ESC, no C1 control, no C0 control other than `\n`
/// and `\t`, no DEL, and none of the bidi / zero-width / line-separator
/// characters that reorder or hide text; each of those is shown visibly
/// instead (see the [module docs](self)). Returns [`Cow::Borrowed`] when the
/// input needs no change.
///
/// ```
/// # use troupe_engine::sanitize::for_terminal;
/// assert_eq!(for_terminal("a\x1b[2Kb\r"), "a\\e[2Kb^M");
/// assert!(matches!(for_terminal("plain"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    sanitize(text, Mode::Terminal)
}

/// Like [`for_terminal`], for single-line labels (tool names, file paths,
/// command lines in a confirmation prompt): a line feed is shown as the two
/// characters `\` `n`, so the result never contains `'\n'`. Tabs are kept.
///
/// ```
/// # use troupe_engine::sanitize::one_line;
/// assert_eq!(one_line("rm -rf x\necho ok"), "rm -rf x\\necho ok");
/// ```
pub fn one_line(text: &str) -> Cow<'_, str> {
    sanitize(text, Mode::OneLine)
}

fn sanitize(text: &str, mode: Mode) -> Cow<'_, str> {
    let Some(first) = first_unsafe(text, mode) else {
        return Cow::Borrowed(text);
    };
    let (clean, rest) = text.split_at(first);
    // Each escaped char grows by a few bytes; leave some headroom.
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(clean);
    for c in rest.chars() {
        push_sanitized(&mut out, c, mode);
    }
    Cow::Owned(out)
}

/// Byte offset of the first character that must be escaped, if any.
fn first_unsafe(text: &str, mode: Mode) -> Option<usize> {
    text.bytes().enumerate().find_map(|(i, b)| {
        let hit = match b {
            b'\n' => mode == Mode::OneLine,
            b'\t' => false,
            0x00..=0x1f | 0x7f => true,
            _ if LEAD_BYTES.contains(&b) => text
                .get(i..)
                .and_then(|s| s.chars().next())
                .is_some_and(is_hidden_or_c1),
            _ => false,
        };
        hit.then_some(i)
    })
}

/// True for C1 controls and for the Unicode characters that reorder text or draw
/// nothing (or a blank) where a character is.
fn is_hidden_or_c1(c: char) -> bool {
    matches!(
        c,
        // C1 controls, including CSI U+009B, OSC U+009D, ST U+009C.
        '\u{80}'..='\u{9f}'
        // SOFT HYPHEN, COMBINING GRAPHEME JOINER.
        | '\u{ad}'
        | '\u{34f}'
        // ARABIC LETTER MARK: a bidi mark like LRM/RLM.
        | '\u{61c}'
        // HANGUL CHOSEONG / JUNGSEONG FILLER.
        | '\u{115f}'..='\u{1160}'
        // KHMER VOWEL INHERENT AQ / AA.
        | '\u{17b4}'..='\u{17b5}'
        // MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR.
        | '\u{180b}'..='\u{180f}'
        // ZWSP, ZWNJ, ZWJ, LRM, RLM.
        | '\u{200b}'..='\u{200f}'
        // LINE SEPARATOR, PARAGRAPH SEPARATOR, LRE, RLE, PDF, LRO, RLO.
        | '\u{2028}'..='\u{202e}'
        // WORD JOINER, the invisible operators, LRI, RLI, FSI, PDI and the
        // deprecated format characters.
        | '\u{2060}'..='\u{206f}'
        // BRAILLE PATTERN BLANK.
        | '\u{2800}'
        // HANGUL FILLER.
        | '\u{3164}'
        // ZERO WIDTH NO-BREAK SPACE / BOM.
        | '\u{feff}'
        // HALFWIDTH HANGUL FILLER.
        | '\u{ffa0}'
        // Unassigned specials and the interlinear annotation controls.
        | '\u{fff0}'..='\u{fffb}'
        // SHORTHAND FORMAT controls, MUSICAL SYMBOL format controls.
        | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}'
        // TAG characters (U+E0000–U+E007F), variation selectors supplement and
        // the rest of the ignorable plane-14 block.
        | '\u{e0000}'..='\u{e0fff}'
    )
}

fn push_sanitized(out: &mut String, c: char, mode: Mode) {
    match c {
        '\n' if mode == Mode::OneLine => out.push_str("\\n"),
        '\n' | '\t' => out.push(c),
        '\x1b' => out.push_str("\\e"),
        '\0'..='\x1f' => {
            out.push('^');
            let letter = CARET.get(u32::from(c) as usize).copied().unwrap_or(b'?');
            out.push(char::from(letter));
        }
        '\x7f' => out.push_str("^?"),
        c if is_hidden_or_c1(c) => {
            // Writing to a String cannot fail.
            let _ = write!(out, "<U+{:04X}>", u32::from(c));
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests;
