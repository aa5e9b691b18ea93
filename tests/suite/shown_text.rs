//! What a server says reaches the terminal through the one sanitiser: `troupe mcp list`
//! quotes the name of a tool it skipped with its escapes and line break shown, never
//! sent.

use crate::common::*;
use crate::suite::mcp::{configure, server};

#[test]
fn mcp_list_shows_a_tool_name_with_escapes_visibly() {
    let s = Scratch::new();
    configure(&s, &server("fx", &["--evil"], ""));
    let out = s.bare_command().args(["mcp", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("✓ fx: "), "{err}");
    assert!(
        err.contains(
            "    Skipped tool bad\\e]0;pwned-name^G\\nname: its inputSchema has type \"array\""
        ),
        "{err}"
    );
    let raw = String::from_utf8_lossy(&out.stderr);
    assert!(!raw.contains('\u{1b}') && !raw.contains('\u{7}'), "{raw:?}");
}
