//! How lists and injected text come out on screen: `/help` and `/tools` keep their
//! columns whatever the length of a name, and a diff's `@@` injected by a custom
//! command is not taken for an `@path` reference.

use super::term::Term;
use crate::common::*;

/// A user-level custom command (no folder trust needed) at `rel` under its directory.
fn user_command(s: &Scratch, rel: &str, toml: &str) {
    let path = s.home().join(".troupe/commands").join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, toml).unwrap();
}

/// The column (in characters) where `needle` starts on the line that holds it.
fn column_of(text: &str, needle: &str) -> usize {
    let line = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}:\n{text}"));
    line[..line.find(needle).unwrap()].chars().count()
}

#[test]
fn help_lines_up_descriptions_behind_the_longest_name() {
    let s = Scratch::new();
    // `/release:candidate:for:the:staging:cluster:now` is 46 characters.
    user_command(
        &s,
        "release/candidate/for/the/staging/cluster/now.toml",
        "description = \"Ship a candidate\"\nprompt = \"Ship it.\"\n",
    );
    let t = Term::start(&s, &[], &[], &[]);
    t.line("/help");
    let text = t.wait_for("Ship a candidate");
    assert_eq!(
        column_of(&text, "Ship a candidate"),
        column_of(&text, "show this help"),
        "{text}"
    );
    assert_eq!(
        column_of(&text, "show this help"),
        column_of(&text, "leave (also /exit, Ctrl+D)"),
        "{text}"
    );
}

#[test]
fn tools_line_up_kinds_behind_the_longest_name() {
    let s = Scratch::new();
    let t = Term::start(&s, &[], &[], &[]);
    t.line("/tools");
    let text = t.wait_for("test_sleep ");
    let kinds: Vec<usize> = text
        .lines()
        .skip_while(|l| !l.ends_with(" tools"))
        .skip(1)
        .take_while(|l| l.starts_with("  ") && l.contains(" ["))
        .map(|l| l[..l.find(" [").unwrap()].chars().count())
        .collect();
    assert!(kinds.len() > 10, "{text}");
    assert!(kinds.iter().all(|k| *k == kinds[0]), "{kinds:?}\n{text}");
    assert!(text.contains("list_background_processes "), "{text}");
}

#[test]
fn a_diff_injected_by_a_custom_command_is_not_read_as_references() {
    let s = Scratch::new();
    s.write("change.diff", "@@ -1 +1 @@\n-old line\n+new line\n");
    user_command(
        &s,
        "review.toml",
        "prompt = \"Review this change:\\n@{change.diff}\"\n",
    );
    let t = Term::start(&s, &[turn(vec![text("Reviewed.")])], &[], &[]);
    t.line("/review");
    let shown = t.wait_for("Reviewed.");
    assert!(
        !shown.contains("nothing in the workspace matches"),
        "{shown}"
    );
    assert!(!shown.contains("ℹ @"), "{shown}");
    let sent = s.requests()[0]["contents"].to_string();
    assert!(
        sent.contains("@@ -1 +1 @@\\n-old line\\n+new line"),
        "{sent}"
    );
}
